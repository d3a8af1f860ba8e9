// The narrow CUDA headers when the build has no CUDA (PERFGATE_CUDA=OFF, the operator image):
// every entry point reports that there is no device, so GPU tests give the same
// "no CUDA device: ..." result as on a machine without a driver.
#include <cstdio>

#include "kernels/cuda/device.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/h2d_d2h.h"
#include "kernels/cuda/hbm_stream.h"
#include "kernels/cuda/p2p.h"

namespace perfgate::kernels::cuda {
namespace {
Status NoCuda() { return Unavailable("no CUDA device: built without CUDA (PERFGATE_CUDA=OFF)"); }
}  // namespace

bool BuiltWithCuda() { return false; }

std::string FormatGpuUuid(const unsigned char bytes[16]) {
  char out[48];
  std::snprintf(
      out, sizeof(out), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
      bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
      bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]);
  return out;
}

Status RequireCudaDevice(int /*ordinal*/) { return NoCuda(); }
Result<CudaDeviceFacts> QueryCudaDevice(int /*ordinal*/) { return NoCuda(); }
Result<std::unique_ptr<HbmStream>> CreateHbmStream(const HbmStreamConfig& /*config*/) {
  return NoCuda();
}
Result<std::unique_ptr<GemmRunner>> CreateGemmRunner(const GemmConfig& /*config*/) {
  return NoCuda();
}
Result<std::unique_ptr<HostCopier>> CreateHostCopier(int /*device*/, std::int64_t /*bytes*/) {
  return NoCuda();
}
Result<std::unique_ptr<PeerCopier>> CreatePeerCopier(const std::vector<int>& /*devices*/,
                                                     std::int64_t /*bytes*/) {
  return NoCuda();
}

}  // namespace perfgate::kernels::cuda
