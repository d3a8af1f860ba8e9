// nccl-alltoall: rank r sends part p of its array to rank p and receives rank p's part r.
//   S     = count * n * 4 bytes (each rank's whole send buffer; count is NCCL's per-peer count)
//   algbw = S / t
//   busbw = algbw * (n-1)/n     (n-1 of the n parts leave the rank; nccl-tests
//                                doc/PERFORMANCE.md, "AlltoAll")
// Expected result: element p*c + k of rank r holds input(p, r*c + k). NCCL defines no in-place
// alltoall: out of place only.
// With one rank busbw is not reported (it needs two ranks or more); algbw stands alone.
// Its rules below; the sweep, iterations, verification and gang handling are the shared
// harness's (kernels/nccl/harness.h); pattern.h evaluates the expected result (device code too).
#include "kernels/nccl/harness.h"
#include "kernels/test_factories.h"

namespace perfgate::kernels {
namespace nccl {

// S, the counts NCCL is called with, the busbw factor above, the expected result, the NCCL
// call and the same on the CPU stand-in.
const CollectiveRules kAllToAllRules = {
    [](std::int64_t /*count*/, std::int64_t per_rank, std::int64_t n, CallShape* s) {
      s->nccl_count = per_rank;
      s->send_count = s->recv_count = per_rank * n;
      s->bytes = s->send_count * kElementBytes;
    },
    [](double n) { return (n - 1) / n; },
    // Block p of rank r's result is block r of rank p's input.
    {.from = ResultPattern::From::kBlockOwner, .from_rank_slot = true},
    [](NcclCalls& nccl, const RankBuffers& b) -> Status {
      if (nccl.HasAlltoAll()) return nccl.AlltoAll(b.input, b.output, b.count);
      // ncclAlltoAll is new in NCCL 2.28; before it, do what it does: one send and one receive
      // per peer in the group.
      for (int p = 0; p < b.world_size; ++p) {
        const auto at = static_cast<std::size_t>(p) * b.count;
        RETURN_IF_ERROR(nccl.Send(b.input + at, b.count, p));
        RETURN_IF_ERROR(nccl.Recv(b.output + at, b.count, p));
      }
      return Status::Ok();
    },
    // Every rank sends block p of its input to rank p, which puts it in its block r.
    [](HostExchange& host, const RankBuffers& b) { return GatherFromPeers(host, b, b.count); },
};

}  // namespace nccl

std::unique_ptr<Test> MakeNcclAllToAllTest() {
  return nccl::MakeCollectiveTest(nccl::Collective::kAllToAll, nccl::NcclFactory());
}

}  // namespace perfgate::kernels
