#include "kernels/devices.h"

namespace perfgate::kernels {

Result<std::vector<GpuDevice>> ListCudaDevices() {
  ASSIGN_OR_RETURN(const int count, cuda::CudaDeviceCount());
  std::vector<GpuDevice> out;
  for (int i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(GpuDevice d, cuda::QueryCudaDevice(i));
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace perfgate::kernels
