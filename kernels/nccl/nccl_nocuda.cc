// NCCL when the build has no CUDA (PERFGATE_CUDA=OFF): every NCCL test reports that there is no
// device, as on a machine without a driver.
#include "kernels/nccl/nccl_communicator.h"

namespace perfgate::kernels::nccl {

Result<std::unique_ptr<Communicator>> CreateNcclCommunicator(const CommunicatorOptions& /*options*/,
                                                             const std::string& /*debug_log*/) {
  return Unavailable("no CUDA device: built without CUDA (PERFGATE_CUDA=OFF)");
}

std::string NcclLibraryVersion() { return ""; }

bool BuiltWithNccl() { return false; }

}  // namespace perfgate::kernels::nccl
