// CUDA device facts and the "is there a device" check every GPU test starts with. Standard
// types only; implemented in device.cu (or nocuda.cc when built without CUDA).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace perfgate::kernels::cuda {

struct CudaDeviceFacts {
  int ordinal = 0;
  std::string name;
  std::string uuid;        // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML prints it
  std::string pci_bus_id;  // "0000:18:00.0"
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::int64_t total_memory_bytes = 0;
  std::int64_t l2_cache_bytes = 0;
  int memory_bus_width_bits = 0;
  double sm_clock_mhz = 0;      // peak, from cudaDevAttrClockRate
  double memory_clock_mhz = 0;  // peak, from cudaDevAttrMemoryClockRate
  bool ecc_enabled = false;
};

// True when this binary was built with CUDA (PERFGATE_CUDA=ON).
bool BuiltWithCuda();

// OK when `ordinal` names a usable device. Otherwise Unavailable("no CUDA device: <CUDA's
// text>"), e.g. "no CUDA device: CUDA driver version is insufficient for CUDA runtime version"
// or "no CUDA device: ordinal 3 not present (2 devices)". Selects the device for the calling
// thread on success. Blocking; thread-safe.
Status RequireCudaDevice(int ordinal);

// Facts about one device (RequireCudaDevice first). Blocking; thread-safe.
Result<CudaDeviceFacts> QueryCudaDevice(int ordinal);

// Number of usable devices, or Unavailable("no CUDA device: <CUDA's text>"). Blocking.
Result<int> CudaDeviceCount();

// "13.0": the CUDA runtime this binary uses and the newest the driver supports ("" unknown).
std::string CudaRuntimeVersion();
std::string CudaDriverVersion();

// UUID bytes as "GPU-8-4-4-4-12" hex (NVML's spelling, for joining the two).
std::string FormatGpuUuid(const unsigned char bytes[16]);

// What the launch gate every timing window opens behind (launch_gate.cuh) did on `ordinal`:
// closed on a stream with an event queued behind it, the host waited `wait_seconds`, then
// opened it. Blocking.
struct LaunchGateProbe {
  bool held = false;       // the event had not completed when the host opened the gate
  bool timed_out = false;  // the gate let go by itself first (CheckOpenedInTime failed)
};
Result<LaunchGateProbe> ProbeLaunchGate(int ordinal, double wait_seconds, std::int64_t timeout_ns);

}  // namespace perfgate::kernels::cuda
