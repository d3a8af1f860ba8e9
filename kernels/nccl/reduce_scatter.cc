// nccl-reduce-scatter: rank r ends with the sum over ranks of part r of every rank's array.
//   S     = recvcount * n * 4 bytes (the array reduced)
//   algbw = S / t
//   busbw = algbw * (n-1)/n     (nccl-tests doc/PERFORMANCE.md)
// Expected result: element j of rank r = sum over p of input(p, r*c + j). In place: recvbuff ==
// sendbuff + rank * recvcount.
// With one rank busbw is not reported (it needs two ranks or more); algbw stands alone.
// Its rules below; the sweep, iterations, verification and gang handling are the shared
// harness's (kernels/nccl/harness.h); pattern.h evaluates the expected result (device code too).
#include "kernels/nccl/harness.h"
#include "kernels/test_factories.h"

namespace perfgate::kernels {
namespace nccl {

// S, the counts NCCL is called with, the busbw factor above, the expected result, the NCCL
// call and the same on the CPU stand-in.
const CollectiveRules kReduceScatterRules = {
    [](std::int64_t /*count*/, std::int64_t per_rank, std::int64_t n, CallShape* s) {
      s->recv_count = s->nccl_count = per_rank;
      s->send_count = per_rank * n;
      s->bytes = s->send_count * kElementBytes;
    },
    [](double n) { return (n - 1) / n; },
    // Rank r's result: the sum over ranks of block r; in place it lands in block r.
    {.from = ResultPattern::From::kSum,
     .from_rank_slot = true,
     .in_place_result_in_rank_slot = true},
    [](NcclCalls& nccl, const RankBuffers& b) {
      return nccl.ReduceScatterSum(b.input, b.output, b.count);
    },
    // Every rank sends block p to rank p and sums the blocks it receives with its own.
    [](HostExchange& host, const RankBuffers& b) { return SumWithPeers(host, b, b.count); },
};

}  // namespace nccl

std::unique_ptr<Test> MakeNcclReduceScatterTest() {
  return nccl::MakeCollectiveTest(nccl::Collective::kReduceScatter, nccl::NcclFactory());
}

}  // namespace perfgate::kernels
