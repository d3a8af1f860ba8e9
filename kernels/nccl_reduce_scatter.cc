// nccl-reduce-scatter: rank r ends with the sum over ranks of part r of every rank's array.
//   S     = recvcount * n * 4 bytes (the array reduced)
//   algbw = S / t
//   busbw = algbw * (n-1)/n     (nccl-tests doc/PERFORMANCE.md)
// Expected result: element j of rank r = sum over p of input(p, r*c + j). In place: recvbuff ==
// sendbuff + rank * recvcount.
// With one rank busbw is not reported (it needs two ranks or more); algbw stands alone.
// The sweep, iterations, verification and gang handling are the shared harness's
// (kernels/nccl/harness.h).
#include "kernels/nccl/harness.h"
#include "kernels/tests.h"

namespace perfgate::kernels {

std::unique_ptr<Test> MakeNcclReduceScatterTest() {
  return nccl::MakeCollectiveTest(nccl::Collective::kReduceScatter, nccl::NcclFactory());
}

}  // namespace perfgate::kernels
