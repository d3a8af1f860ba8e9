// nccl-sendrecv: every rank sends its array to rank r+1 and receives rank r-1's (mod n), all at
// once, in one group of ncclSend/ncclRecv.
//   S     = count * 4 bytes (what each rank sends)
//   algbw = S / t
//   busbw = algbw * 1           (point to point: nccl-tests' sendrecv reports busbw equal to
//                                algbw)
// Expected result: input(r-1 mod n, i). Out of place only (NCCL has no in-place send/recv).
// With one rank busbw is not reported (it needs two ranks or more); algbw stands alone.
// The sweep, iterations, verification and gang handling are the shared harness's
// (kernels/nccl/harness.h).
#include "kernels/nccl/harness.h"
#include "kernels/tests.h"

namespace perfgate::kernels {

std::unique_ptr<Test> MakeNcclSendRecvTest() {
  return nccl::MakeCollectiveTest(nccl::Collective::kSendRecv, nccl::NcclFactory());
}

}  // namespace perfgate::kernels
