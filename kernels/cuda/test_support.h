// Small helpers shared by the GPU tests' host files (kernels/{hbm_stream,gemm,...}.cc).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/test.h"

namespace perfgate::kernels::gpu {

inline ParamInfo IntParam(std::string name, std::int64_t default_value, std::string unit,
                          std::string description, double min, double max) {
  ParamInfo p;
  p.name = std::move(name);
  p.type = ParamType::kInt;
  p.default_value = std::to_string(default_value);
  p.unit = std::move(unit);
  p.description = std::move(description);
  p.min = min;
  p.max = max;
  return p;
}

inline ParamInfo DoubleParam(std::string name, std::string default_value, std::string unit,
                             std::string description, double min, double max) {
  ParamInfo p;
  p.name = std::move(name);
  p.type = ParamType::kDouble;
  p.default_value = std::move(default_value);
  p.unit = std::move(unit);
  p.description = std::move(description);
  p.min = min;
  p.max = max;
  return p;
}

inline ParamInfo ChoiceParam(std::string name, ParamType type, std::string default_value,
                             std::string description, std::vector<std::string> choices) {
  ParamInfo p;
  p.name = std::move(name);
  p.type = type;
  p.default_value = std::move(default_value);
  p.description = std::move(description);
  p.choices = std::move(choices);
  return p;
}

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
