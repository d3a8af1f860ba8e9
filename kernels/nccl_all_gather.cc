// nccl-all-gather: every rank ends with all ranks' arrays, rank p's at offset p * sendcount.
//   S     = sendcount * n * 4 bytes (the gathered array)
//   algbw = S / t
//   busbw = algbw * (n-1)/n     (each rank receives the n-1 parts it lacks; nccl-tests
//                                doc/PERFORMANCE.md)
// Expected result: element p*c + k holds input(p, k). In place: sendbuff == recvbuff + rank * c.
// With one rank busbw is not reported (it needs two ranks or more); algbw stands alone.
// The sweep, iterations, verification and gang handling are the shared harness's
// (kernels/nccl/harness.h).
#include "kernels/nccl/harness.h"
#include "kernels/tests.h"

namespace perfgate::kernels {

std::unique_ptr<Test> MakeNcclAllGatherTest() {
  return nccl::MakeCollectiveTest(nccl::Collective::kAllGather, nccl::NcclFactory());
}

}  // namespace perfgate::kernels
