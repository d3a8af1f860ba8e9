// GPU discovery for the runner and the identity block, behind standard types.
#pragma once

#include <vector>

#include "common/result.h"
#include "kernels/cuda/device.h"

namespace perfgate::kernels {

// CUDA ordinal, name, UUID, PCI bus id, compute capability, SMs, memory, clocks.
using GpuDevice = cuda::CudaDeviceFacts;

// The GPUs this process can use. Unavailable("no CUDA device: <cudaGetErrorString>") when
// there are none (no driver, no device, built without CUDA). Blocking.
Result<std::vector<GpuDevice>> ListCudaDevices();

}  // namespace perfgate::kernels
