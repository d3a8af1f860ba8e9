// nccl-all-reduce: every rank ends with the element-wise sum of all ranks' arrays.
//   S     = count * 4 bytes (the whole array, held by every rank)
//   algbw = S / t
//   busbw = algbw * 2(n-1)/n    (n-1 additions and n assignments per element: 2(n-1) transfers
//                                spread over n links; nccl-tests doc/PERFORMANCE.md)
// Expected result: sum over ranks p of input(p, i) = A*n(n-1)/2 + n*H(i) (kernels/nccl/pattern.h).
// In place: sendbuff == recvbuff.
// With one rank busbw is not reported (it needs two ranks or more); algbw stands alone.
// The sweep, iterations, verification and gang handling are the shared harness's
// (kernels/nccl/harness.h).
#include "kernels/nccl/harness.h"
#include "kernels/tests.h"

namespace perfgate::kernels {

std::unique_ptr<Test> MakeNcclAllReduceTest() {
  return nccl::MakeCollectiveTest(nccl::Collective::kAllReduce, nccl::NcclFactory());
}

}  // namespace perfgate::kernels
