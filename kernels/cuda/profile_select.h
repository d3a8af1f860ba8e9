// Which built-in PerfProfile fits a GPU, when the spec names none. Pure; the worker calls it
// with the CUDA device name and the profiles' (name, spec.gpuModels) pairs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels {

struct ProfileCandidate {
  std::string name;  // metadata.name, e.g. h200-sxm-141gb
  // spec.gpuModels: case-insensitive substrings of the device name. An entry starting with
  // '!' excludes: {"H200", "!NVL"} matches "NVIDIA H200" but not "NVIDIA H200 NVL".
  std::vector<std::string> gpu_models;
};

// The profile whose longest positive pattern matches `gpu_name` (the most specific one) and
// none of whose '!' patterns do. NotFound (naming the device and the profiles) when none
// matches; InvalidArgument when two profiles tie, since guessing between them could certify
// against the wrong bounds.
Result<std::string> SelectProfileName(std::string_view gpu_name,
                                      const std::vector<ProfileCandidate>& profiles);

}  // namespace perfgate::kernels
