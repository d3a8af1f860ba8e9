// The identity block of a report for one GPU: CUDA facts joined with NVML's (by PCI bus id;
// CUDA ordinals are not NVML indices). Standard types, for the worker to copy into
// perfgate.v1alpha1.GpuIdentity.
#pragma once

#include <string>

#include "common/result.h"
#include "kernels/cuda/device.h"
#include "kernels/nvml/nvml.h"

namespace perfgate::kernels {

struct GpuIdentityInfo {
  int index = 0;  // CUDA ordinal
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  std::string vbios;               // "" when NVML is unavailable
  std::string serial;              // the board's serial; "" when NVML is unavailable or has none
  std::string compute_capability;  // "9.0"
  int sm_count = 0;
  double memory_gib = 0;
  double sm_clock_mhz = 0;       // max SM clock (NVML), else CUDA's peak attribute
  double memory_clock_mhz = 0;   // max memory clock (NVML), else CUDA's peak attribute
  double power_limit_w = 0;      // 0 when unknown
  std::string ecc_mode;          // "enabled" | "disabled" | "unknown"
  std::string mig_mode;          // "enabled" | "disabled" | "unknown"
  std::string persistence_mode;  // "enabled" | "disabled" | "unknown"
  std::string driver_version;    // "" when NVML is unavailable
  // Why NVML facts are missing ("NVML unavailable: ..."), "" when they are all there.
  std::string nvml_note;
};

// Unavailable("no CUDA device: ...") without a device; NVML missing only leaves its fields
// "unknown" (and says why in nvml_note). Blocking (tens of ms); thread-safe.
Result<GpuIdentityInfo> ReadGpuIdentity(int ordinal);

// The join itself, for tests with a fake NVML: `nvml` may be null (then `nvml_error` says why).
GpuIdentityInfo JoinGpuIdentity(const cuda::CudaDeviceFacts& facts, const nvml::Nvml* nvml,
                                const std::string& nvml_error);

}  // namespace perfgate::kernels
