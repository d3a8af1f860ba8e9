// nccl-broadcast: every rank ends with rank 0's array.
//   S     = count * 4 bytes
//   algbw = S / t
//   busbw = algbw * 1           (all data leaves the root over its one link; nccl-tests
//                                doc/PERFORMANCE.md)
// Expected result: input(0, i). In place: sendbuff == recvbuff.
// With one rank busbw is not reported (it needs two ranks or more); algbw stands alone.
// Its rules below; the sweep, iterations, verification and gang handling are the shared
// harness's (kernels/nccl/harness.h). The expected values are in pattern.h (device code too).
#include "kernels/nccl/harness.h"
#include "kernels/test_factories.h"

namespace perfgate::kernels {
namespace nccl {

// S, the counts NCCL is called with, and the busbw factor above.
const CollectiveRules kBroadcastRules = {
    [](std::int64_t count, std::int64_t /*per_rank*/, std::int64_t /*n*/, CallShape* s) {
      s->send_count = s->recv_count = s->nccl_count = count;
      s->bytes = count * kElementBytes;
    },
    [](double /*n*/) { return 1.0; },
};

}  // namespace nccl

std::unique_ptr<Test> MakeNcclBroadcastTest() {
  return nccl::MakeCollectiveTest(nccl::Collective::kBroadcast, nccl::NcclFactory());
}

}  // namespace perfgate::kernels
