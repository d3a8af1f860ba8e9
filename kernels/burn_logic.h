// burn's windows over a GemmRunner, apart from the device set-up in kernels/burn.cc, so unit
// tests drive them with a runner whose passes they script: each window's wrong elements are
// counted in computeErrorCount and named in Details.
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/cuda/formulas.h"
#include "kernels/cuda/gemm.h"
#include "kernels/test.h"

namespace perfgate::kernels::burn {

// One burn sample per RunSample(): `window_seconds` of checked passes on `runner` (its
// snapshot already taken), without NVML telemetry.
std::unique_ptr<TestRun> MakeBurnRun(std::unique_ptr<cuda::GemmRunner> runner,
                                     const gpu::GemmDtypeInfo& dtype, std::int64_t m,
                                     std::int64_t n, std::int64_t k, double window_seconds);

}  // namespace perfgate::kernels::burn
