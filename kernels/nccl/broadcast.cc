// nccl-broadcast: every rank ends with rank 0's array.
//   S     = count * 4 bytes
//   algbw = S / t
//   busbw = algbw * 1           (all data leaves the root over its one link; nccl-tests
//                                doc/PERFORMANCE.md)
// Expected result: input(0, i). In place: sendbuff == recvbuff.
// With one rank busbw is not reported (it needs two ranks or more); algbw stands alone.
// Its rules below; the sweep, iterations, verification and gang handling are the shared
// harness's (kernels/nccl/harness.h); pattern.h evaluates the expected result (device code too).
#include <cstring>
#include <vector>

#include "kernels/nccl/harness.h"
#include "kernels/test_factories.h"

namespace perfgate::kernels {
namespace nccl {

// S, the counts NCCL is called with, the busbw factor above, the expected result, the NCCL
// call and the same on the CPU stand-in.
const CollectiveRules kBroadcastRules = {
    [](std::int64_t count, std::int64_t /*per_rank*/, std::int64_t /*n*/, CallShape* s) {
      s->send_count = s->recv_count = s->nccl_count = count;
      s->bytes = count * kElementBytes;
    },
    [](double /*n*/) { return 1.0; },
    // Every rank's result: the root's (rank 0's) input.
    {.from = ResultPattern::From::kRoot},
    [](NcclCalls& nccl, const RankBuffers& b) {
      return nccl.Broadcast(b.input, b.output, b.count, /*root=*/0);
    },
    // The root sends its input to every other rank and keeps a copy.
    [](HostExchange& host, const RankBuffers& b) -> Status {
      std::vector<PeerTransfer> transfers;
      for (int p = 0; p < b.world_size; ++p) {
        if (p == b.rank || (b.rank != 0 && p != 0)) continue;
        PeerTransfer t;
        t.peer = p;
        if (b.rank == 0) {
          t.send = b.input;
          t.send_count = b.count;
        } else {
          t.recv = b.output;
          t.recv_count = b.count;
        }
        transfers.push_back(t);
      }
      RETURN_IF_ERROR(host.Exchange(transfers));
      if (b.rank == 0) std::memmove(b.output, b.input, b.count * sizeof(std::uint32_t));
      return Status::Ok();
    },
};

}  // namespace nccl

std::unique_ptr<Test> MakeNcclBroadcastTest() {
  return nccl::MakeCollectiveTest(nccl::Collective::kBroadcast, nccl::NcclFactory());
}

}  // namespace perfgate::kernels
