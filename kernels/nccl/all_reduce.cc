// nccl-all-reduce: every rank ends with the element-wise sum of all ranks' arrays.
//   S     = count * 4 bytes (the whole array, held by every rank)
//   algbw = S / t
//   busbw = algbw * 2(n-1)/n    (n-1 additions and n assignments per element: 2(n-1) transfers
//                                spread over n links; nccl-tests doc/PERFORMANCE.md)
// Expected result: sum over ranks p of input(p, i) = A*n(n-1)/2 + n*H(i) (kernels/nccl/pattern.h).
// In place: sendbuff == recvbuff.
// With one rank busbw is not reported (it needs two ranks or more); algbw stands alone.
// Its rules below; the sweep, iterations, verification and gang handling are the shared
// harness's (kernels/nccl/harness.h); pattern.h evaluates the expected result (device code too).
#include "kernels/nccl/harness.h"
#include "kernels/test_factories.h"

namespace perfgate::kernels {
namespace nccl {

// S, the counts NCCL is called with, the busbw factor above, the expected result, the NCCL
// call and the same on the CPU stand-in.
const CollectiveRules kAllReduceRules = {
    [](std::int64_t count, std::int64_t /*per_rank*/, std::int64_t /*n*/, CallShape* s) {
      s->send_count = s->recv_count = s->nccl_count = count;
      s->bytes = count * kElementBytes;
    },
    [](double n) { return 2.0 * (n - 1) / n; },
    // Every rank's result: the sum over ranks, element by element.
    {.from = ResultPattern::From::kSum},
    [](NcclCalls& nccl, const RankBuffers& b) {
      return nccl.AllReduceSum(b.input, b.output, b.count);
    },
    // Every rank sends its whole array to every other and sums what it receives.
    [](HostExchange& host, const RankBuffers& b) { return SumWithPeers(host, b, 0); },
};

}  // namespace nccl

std::unique_ptr<Test> MakeNcclAllReduceTest() {
  return nccl::MakeCollectiveTest(nccl::Collective::kAllReduce, nccl::NcclFactory());
}

}  // namespace perfgate::kernels
