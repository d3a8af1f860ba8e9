// What NVML says about one GPU's identity and settings, read in one place for the worker's
// GPU identity (identity.h), the config test (config/config_check.h) and the diagnostics
// bundle's NVML dump. A reading NVML does not give (an older driver without the call, a GPU
// that does not support it, a failed call) stays unset; a GPU without MIG is "MIG disabled"
// (NVML answers NOT_SUPPORTED), not unknown.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "kernels/nvml/nvml.h"

namespace perfgate::kernels::nvml {

struct GpuAttributes {
  std::optional<std::string> name;        // "NVIDIA H200"
  std::optional<std::string> uuid;        // "GPU-8c5e..."
  std::optional<std::string> pci_bus_id;  // normalised: "0000:1b:00.0"
  std::optional<std::string> vbios;
  std::optional<std::string> serial;  // the board's serial number
  std::optional<bool> persistence_mode;
  std::optional<bool> ecc_enabled;  // the current mode
  std::optional<bool> mig_enabled;  // the current mode
  std::optional<unsigned> max_sm_clock_mhz;
  std::optional<unsigned> max_memory_clock_mhz;
  std::optional<unsigned> app_clock_sm_mhz;          // the application clock target
  std::optional<unsigned> app_clock_sm_default_mhz;  // its default
  std::optional<unsigned> power_limit_mw;
  std::optional<unsigned> power_default_limit_mw;
};

GpuAttributes ReadAttributes(const Nvml& nvml, nvmlDevice_t device);

// The devices NVML enumerates, by index. Errors name the NVML call and its error
// ("nvmlDeviceGetCount: NVML_ERROR_...").
Result<unsigned> DeviceCount(const Nvml& nvml);
Result<nvmlDevice_t> DeviceAt(const Nvml& nvml, unsigned index);

// The CUDA version the driver supports, as NVML encodes it (12080 for 12.8); unset when unknown.
std::optional<int> CudaDriverVersion(const Nvml& nvml);

}  // namespace perfgate::kernels::nvml
