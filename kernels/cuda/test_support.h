// Small helpers shared by the GPU tests' host files (kernels/{hbm_stream,gemm,...}.cc).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/test.h"

namespace perfgate::kernels::gpu {

// IntParam, DoubleParam, ChoiceParam, BoolParam: kernels/test.h.

inline MetricInfo Metric(std::string name, std::string unit, bool higher_is_better,
                         std::string description) {
  return {std::move(name), std::move(unit), higher_is_better, std::move(description)};
}

// The CUDA ordinal of a per-GPU target, once CUDA says it is usable: Unavailable("no CUDA
// device: ...") otherwise (also for a target naming no device, so the text is CUDA's).
inline Result<int> SingleGpu(const Target& target) {
  const int ordinal = target.devices.empty() ? 0 : target.devices.front();
  RETURN_IF_ERROR(cuda::RequireCudaDevice(ordinal));
  if (target.devices.size() != 1) {
    return InvalidArgument("a per-GPU test needs exactly one device, target " + target.Name() +
                           " has " + std::to_string(target.devices.size()));
  }
  return ordinal;
}

inline std::string FormatFixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

}  // namespace perfgate::kernels::gpu
