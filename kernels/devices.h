// GPU discovery through the CUDA runtime, behind standard types.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels {

struct GpuDevice {
  int ordinal = 0;  // CUDA ordinal (not the NVML index: join the two on uuid / pci_bus_id)
  std::string name;
  std::string uuid;        // "GPU-xxxxxxxx-..."
  std::string pci_bus_id;  // "0000:18:00.0"
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  double memory_gib = 0;
  double sm_clock_mhz = 0;
  double memory_clock_mhz = 0;
};

// The GPUs this process can use. Unavailable("no CUDA device: <cudaGetErrorString>") when
// there are none (no driver, no device, built without CUDA).
Result<std::vector<GpuDevice>> ListCudaDevices();

// "13.0" (runtime) and the driver's CUDA version, or "" when unknown.
std::string CudaRuntimeVersion();
std::string CudaDriverVersion();

}  // namespace perfgate::kernels
