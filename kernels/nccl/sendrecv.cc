// nccl-sendrecv: every rank sends its array to rank r+1 and receives rank r-1's (mod n), all at
// once, in one group of ncclSend/ncclRecv.
//   S     = count * 4 bytes (what each rank sends)
//   algbw = S / t
//   busbw = algbw * 1           (point to point: nccl-tests' sendrecv reports busbw equal to
//                                algbw)
// Expected result: input(r-1 mod n, i). Out of place only (NCCL has no in-place send/recv).
// With one rank busbw is not reported (it needs two ranks or more); algbw stands alone.
// Its rules below; the sweep, iterations, verification and gang handling are the shared
// harness's (kernels/nccl/harness.h). The expected values are in pattern.h (device code too).
#include "kernels/nccl/harness.h"
#include "kernels/test_factories.h"

namespace perfgate::kernels {
namespace nccl {

// S, the counts NCCL is called with, and the busbw factor above.
const CollectiveRules kSendRecvRules = {
    [](std::int64_t count, std::int64_t /*per_rank*/, std::int64_t /*n*/, CallShape* s) {
      s->send_count = s->recv_count = s->nccl_count = count;
      s->bytes = count * kElementBytes;
    },
    [](double /*n*/) { return 1.0; },
};

}  // namespace nccl

std::unique_ptr<Test> MakeNcclSendRecvTest() {
  return nccl::MakeCollectiveTest(nccl::Collective::kSendRecv, nccl::NcclFactory());
}

}  // namespace perfgate::kernels
