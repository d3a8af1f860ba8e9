#include "kernels/devices.h"

#ifdef PERFGATE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <cstdio>

namespace perfgate::kernels {

#ifdef PERFGATE_HAVE_CUDA

namespace {
std::string FormatVersion(int v) {
  // CUDA encodes 13.0 as 13000.
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
}  // namespace

Result<std::vector<GpuDevice>> ListCudaDevices() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    return Status(Code::kUnavailable, std::string("no CUDA device: ") + cudaGetErrorString(err));
  }
  if (count == 0) {
    return Status(Code::kUnavailable, "no CUDA device: cudaGetDeviceCount returned 0 devices");
  }
  std::vector<GpuDevice> out;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    err = cudaGetDeviceProperties(&prop, i);
    if (err != cudaSuccess) {
      return Status(Code::kUnavailable, "CUDA device " + std::to_string(i) + ": " +
                                            cudaGetErrorString(err));
    }
    GpuDevice d;
    d.ordinal = i;
    d.name = prop.name;
    char uuid[64];
    const auto* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
    std::snprintf(uuid, sizeof uuid,
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                  u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                  u[14], u[15]);
    d.uuid = uuid;
    char bus[32];
    std::snprintf(bus, sizeof bus, "%08x:%02x:%02x.0", static_cast<unsigned>(prop.pciDomainID),
                  static_cast<unsigned>(prop.pciBusID), static_cast<unsigned>(prop.pciDeviceID));
    d.pci_bus_id = bus;
    d.cc_major = prop.major;
    d.cc_minor = prop.minor;
    d.sm_count = prop.multiProcessorCount;
    d.memory_gib = static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
    int khz = 0;
    // CUDA 13 dropped clockRate/memoryClockRate from cudaDeviceProp; ask attributes (kHz).
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, i) == cudaSuccess) {
      d.sm_clock_mhz = khz / 1000.0;
    }
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, i) == cudaSuccess) {
      d.memory_clock_mhz = khz / 1000.0;
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::string CudaRuntimeVersion() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess || v == 0) return "";
  return FormatVersion(v);
}

std::string CudaDriverVersion() {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess || v == 0) return "";
  return FormatVersion(v);
}

#else  // !PERFGATE_HAVE_CUDA

Result<std::vector<GpuDevice>> ListCudaDevices() {
  return Status(Code::kUnavailable,
                "no CUDA device: this perfgate-worker was built without CUDA (PERFGATE_CUDA=OFF)");
}
std::string CudaRuntimeVersion() { return ""; }
std::string CudaDriverVersion() { return ""; }

#endif

}  // namespace perfgate::kernels
