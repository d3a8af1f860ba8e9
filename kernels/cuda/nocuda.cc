// The narrow CUDA headers when the build has no CUDA (PERFGATE_CUDA=OFF, the operator image):
// every entry point reports that there is no device, so GPU tests give the same
// "no CUDA device: ..." result as on a machine without a driver.
#include <cstdio>

#include "kernels/cuda/consistency.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/h2d_d2h.h"
#include "kernels/cuda/hbm_stream.h"
#include "kernels/cuda/memtest.h"
#include "kernels/cuda/p2p.h"

namespace perfgate::kernels::cuda {
namespace {
Status NoCuda() { return Unavailable("no CUDA device: built without CUDA (PERFGATE_CUDA=OFF)"); }
}  // namespace

bool BuiltWithCuda() { return false; }

Result<int> CudaDeviceCount() { return NoCuda(); }
std::string CudaRuntimeVersion() { return ""; }
std::string CudaDriverVersion() { return ""; }

Status RequireCudaDevice(int /*ordinal*/) { return NoCuda(); }
Result<LaunchGateProbe> ProbeLaunchGate(int /*ordinal*/, double /*wait_seconds*/,
                                        std::int64_t /*timeout_ns*/) {
  return NoCuda();
}
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
Result<std::unique_ptr<MemTester>> CreateMemTester(int /*device*/, double /*fraction*/,
                                                   std::int64_t /*max_bytes*/) {
  return NoCuda();
}
Result<std::unique_ptr<PeerCopier>> CreatePeerCopier(const std::vector<int>& /*devices*/,
                                                     std::int64_t /*bytes*/) {
  return NoCuda();
}
Result<std::unique_ptr<ConsistencyRunner>> CreateConsistencyRunner(
    const ConsistencyConfig& /*config*/) {
  return NoCuda();
}

}  // namespace perfgate::kernels::cuda
