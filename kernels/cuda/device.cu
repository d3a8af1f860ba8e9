#include <cuda_runtime.h>

#include <cstdio>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/device.h"

namespace perfgate::kernels::cuda {

bool BuiltWithCuda() { return true; }

namespace {
std::string FormatVersion(int v) {  // CUDA encodes 13.0 as 13000
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
}  // namespace

Result<int> CudaDeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it so later calls report their own errors
    return Unavailable(std::string("no CUDA device: ") + cudaGetErrorString(error));
  }
  if (count == 0) return Unavailable("no CUDA device: cudaGetDeviceCount found 0 devices");
  return count;
}

std::string CudaRuntimeVersion() {
  int v = 0;
  return cudaRuntimeGetVersion(&v) == cudaSuccess && v > 0 ? FormatVersion(v) : "";
}

std::string CudaDriverVersion() {
  int v = 0;
  return cudaDriverGetVersion(&v) == cudaSuccess && v > 0 ? FormatVersion(v) : "";
}

Status RequireCudaDevice(int ordinal) {
  ASSIGN_OR_RETURN(const int count, CudaDeviceCount());
  if (ordinal < 0 || ordinal >= count) {
    return Unavailable("no CUDA device: ordinal " + std::to_string(ordinal) + " not present (" +
                       std::to_string(count) + " devices)");
  }
  const cudaError_t set = cudaSetDevice(ordinal);
  if (set != cudaSuccess) {
    return Unavailable("no CUDA device: cudaSetDevice(" + std::to_string(ordinal) +
                       "): " + cudaGetErrorString(set));
  }
  return Status::Ok();
}

Result<CudaDeviceFacts> QueryCudaDevice(int ordinal) {
  RETURN_IF_ERROR(RequireCudaDevice(ordinal));
  cudaDeviceProp prop{};
  PG_CUDA(cudaGetDeviceProperties(&prop, ordinal));
  CudaDeviceFacts f;
  f.ordinal = ordinal;
  f.name = prop.name;
  f.uuid = FormatGpuUuid(reinterpret_cast<const unsigned char*>(prop.uuid.bytes));
  char bus_id[32] = {};
  PG_CUDA(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), ordinal));
  f.pci_bus_id = bus_id;
  f.cc_major = prop.major;
  f.cc_minor = prop.minor;
  f.sm_count = prop.multiProcessorCount;
  f.total_memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  f.l2_cache_bytes = prop.l2CacheSize;
  f.memory_bus_width_bits = prop.memoryBusWidth;
  // CUDA 13 dropped clockRate/memoryClockRate from cudaDeviceProp; the attributes remain (kHz).
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, ordinal) == cudaSuccess) {
    f.sm_clock_mhz = khz / 1e3;
  }
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, ordinal) == cudaSuccess) {
    f.memory_clock_mhz = khz / 1e3;
  }
  int ecc = 0;
  if (cudaDeviceGetAttribute(&ecc, cudaDevAttrEccEnabled, ordinal) == cudaSuccess) {
    f.ecc_enabled = ecc != 0;
  }
  (void)cudaGetLastError();
  return f;
}

}  // namespace perfgate::kernels::cuda
