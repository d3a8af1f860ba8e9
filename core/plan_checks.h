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

// Every threshold of `test` (written at `path`, e.g. spec.tests[0]) can bind: the values its
// metric can reach (kernels::ReachableRange: a rate or a count is never negative, a bool is 0
// or 1, a test may declare tighter ends) fall on both sides of the bound. A ">=" 0 on a rate
// passes whatever is measured, a "<=" 0 on a count that is always 0 as well, a "<" 0 on a
// count fails whatever is measured: each is refused. A fraction of a reference (the part's
// physical peak) must lie in (0, 1].
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
