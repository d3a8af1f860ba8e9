// Checks that a spec's bounds and its profile mean something on the GPUs they are for, beyond
// what the loader's types say. Each returns the spec's line-numbered error (exit code 2 in the
// CLI, InvalidSpec in a cluster). Kept apart from plan.cc, which calls them.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "common/spec.h"
#include "kernels/test.h"
#include "perfgate/v1alpha1/validation.pb.h"

namespace perfgate::worker {

// Every threshold of `test` (written at `path`, e.g. spec.tests[0]) can bind. A rate (a metric
// in GB/s or TFLOP/s: never negative) with a ">=" bound at or below 0, or a ">" bound below 0,
// passes whatever is measured; with a "<=" / "<" bound below 0 it can never pass. A fraction of
// a reference (the part's physical peak) must lie in (0, 1].
Status CheckThresholdsBind(const v1alpha1::TestSpec& test,
                           const std::vector<kernels::MetricInfo>& metrics, const std::string& path,
                           const spec::SourceMap& where);

// A profile named in the spec is for the GPUs it would certify: each of `gpu_names` (CUDA
// device names, or nvidia.com/gpu.product labels) is one of the profile's spec.gpuModels. A
// profile without gpuModels fits any GPU. The error points at spec.profile in `where`.
Status CheckProfileFitsGpus(const v1alpha1::PerfProfile& profile,
                            const std::vector<std::string>& gpu_names,
                            const spec::SourceMap& where);

}  // namespace perfgate::worker
