// nccl-sendrecv: every rank sends its array to rank r+1 and receives rank r-1's (mod n), all at
// once, in one group of ncclSend/ncclRecv.
//   S     = count * 4 bytes (what each rank sends)
//   algbw = S / t
//   busbw = algbw * 1           (point to point: nccl-tests' sendrecv reports busbw equal to
//                                algbw)
// Expected result: input(r-1 mod n, i). Out of place only (NCCL has no in-place send/recv).
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
const CollectiveRules kSendRecvRules = {
    [](std::int64_t count, std::int64_t /*per_rank*/, std::int64_t /*n*/, CallShape* s) {
      s->send_count = s->recv_count = s->nccl_count = count;
      s->bytes = count * kElementBytes;
    },
    [](double /*n*/) { return 1.0; },
    // Every rank's result: the previous rank's input.
    {.from = ResultPattern::From::kPreviousRank},
    [](NcclCalls& nccl, const RankBuffers& b) -> Status {
      const int n = b.world_size;
      RETURN_IF_ERROR(nccl.Send(b.input, b.count, (b.rank + 1) % n));
      return nccl.Recv(b.output, b.count, (b.rank + n - 1) % n);
    },
    // Every rank sends its input to the next rank and receives the previous rank's.
    [](HostExchange& host, const RankBuffers& b) -> Status {
      const int n = b.world_size;
      if (n == 1) {
        std::memmove(b.output, b.input, b.count * sizeof(std::uint32_t));
        return Status::Ok();
      }
      const int next = (b.rank + 1) % n;
      const int prev = (b.rank + n - 1) % n;
      PeerTransfer to;
      to.peer = next;
      to.send = b.input;
      to.send_count = b.count;
      PeerTransfer from;
      from.peer = prev;
      from.recv = b.output;
      from.recv_count = b.count;
      std::vector<PeerTransfer> transfers = {to, from};
      if (next == prev) {  // two ranks: one connection carries both directions
        to.recv = from.recv;
        to.recv_count = from.recv_count;
        transfers = {to};
      }
      return host.Exchange(transfers);
    },
};

}  // namespace nccl

std::unique_ptr<Test> MakeNcclSendRecvTest() {
  return nccl::MakeCollectiveTest(nccl::Collective::kSendRecv, nccl::NcclFactory());
}

}  // namespace perfgate::kernels
