// nccl-all-gather: every rank ends with all ranks' arrays, rank p's at offset p * sendcount.
//   S     = sendcount * n * 4 bytes (the gathered array)
//   algbw = S / t
//   busbw = algbw * (n-1)/n     (each rank receives the n-1 parts it lacks; nccl-tests
//                                doc/PERFORMANCE.md)
// Expected result: element p*c + k holds input(p, k). In place: sendbuff == recvbuff + rank * c.
// With one rank busbw is not reported (it needs two ranks or more); algbw stands alone.
// Its rules below; the sweep, iterations, verification and gang handling are the shared
// harness's (kernels/nccl/harness.h); pattern.h evaluates the expected result (device code too).
#include "kernels/nccl/harness.h"
#include "kernels/test_factories.h"

namespace perfgate::kernels {
namespace nccl {

// S, the counts NCCL is called with, the busbw factor above, the expected result, the NCCL
// call and the same on the CPU stand-in.
const CollectiveRules kAllGatherRules = {
    [](std::int64_t /*count*/, std::int64_t per_rank, std::int64_t n, CallShape* s) {
      s->send_count = s->nccl_count = per_rank;
      s->recv_count = per_rank * n;
      s->bytes = s->recv_count * kElementBytes;
    },
    [](double n) { return (n - 1) / n; },
    // Block p of every rank's result is rank p's input; in place the input is the rank's block.
    {.from = ResultPattern::From::kBlockOwner, .in_place_input_in_rank_slot = true},
    [](NcclCalls& nccl, const RankBuffers& b) {
      return nccl.AllGather(b.input, b.output, b.count);
    },
    // Every rank sends its whole input to every other, which puts it in that rank's block.
    [](HostExchange& host, const RankBuffers& b) { return GatherFromPeers(host, b, 0); },
};

}  // namespace nccl

std::unique_ptr<Test> MakeNcclAllGatherTest() {
  return nccl::MakeCollectiveTest(nccl::Collective::kAllGather, nccl::NcclFactory());
}

}  // namespace perfgate::kernels
