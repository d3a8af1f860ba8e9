// Which built-in PerfProfile fits a GPU, when the spec names none, and whether a named one does.
// Pure; the worker calls it with the CUDA device names ("NVIDIA H100 80GB HBM3"), the operator
// with GPU Feature Discovery's nvidia.com/gpu.product labels ("NVIDIA-H100-80GB-HBM3", with
// "-SHARED" under time-slicing, "-MIG-1g.10gb" for a MIG slice), against the profiles'
// (name, spec.gpuModels) pairs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels {

struct ProfileCandidate {
  std::string name;  // metadata.name, e.g. h200-sxm-141gb
  // spec.gpuModels. Each entry is a run of whole words of the GPU's name, case-insensitive,
  // where spaces, '-' and '_' all separate words (so a CUDA name and its GFD label read the
  // same): "H200" matches "NVIDIA H200" and "NVIDIA-H200" but not "NVIDIA GH200 480GB". An
  // entry starting with '!' excludes: {"H200", "!NVL"} does not match "NVIDIA H200 NVL".
  std::vector<std::string> gpu_models;
};

// Whether `gpu_name` is one of `profile`'s models. A MIG slice ("...-MIG-1g.10gb") is never a
// whole-GPU model: it matches only an entry that itself names MIG.
bool ProfileMatchesGpu(std::string_view gpu_name, const ProfileCandidate& profile);

// The profile whose longest matching entry matches `gpu_name` (the most specific one).
// NotFound (naming the device and each profile with its models) when none matches;
// InvalidArgument when two profiles tie, since guessing between them could certify against
// the wrong bounds.
Result<std::string> SelectProfileName(std::string_view gpu_name,
                                      const std::vector<ProfileCandidate>& profiles);

// "a100-sxm-80gb (A100-SXM4-80GB), h200-sxm-141gb (H200, !NVL)": for messages.
std::string DescribeProfiles(const std::vector<ProfileCandidate>& profiles);

}  // namespace perfgate::kernels
