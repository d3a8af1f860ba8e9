// nccl-broadcast: every rank ends with rank 0's array.
//   S     = count * 4 bytes
//   algbw = S / t
//   busbw = algbw * 1           (all data leaves the root over its one link; nccl-tests
//                                doc/PERFORMANCE.md)
// Expected result: input(0, i). In place: sendbuff == recvbuff.
// With one rank busbw is not reported (it needs two ranks or more); algbw stands alone.
// The sweep, iterations, verification and gang handling are the shared harness's
// (kernels/nccl/harness.h).
#include "kernels/nccl/harness.h"
#include "kernels/tests.h"

namespace perfgate::kernels {

std::unique_ptr<Test> MakeNcclBroadcastTest() {
  return nccl::MakeCollectiveTest(nccl::Collective::kBroadcast, nccl::NcclFactory());
}

}  // namespace perfgate::kernels
