// The six collectives as data: how a nominal size becomes element counts, how algbw becomes
// busbw, what each rank's result must hold, how the collective runs on NCCL and on the CPU
// stand-in, and how sizes name metrics. Standard types only, shared by the NCCL implementation
// (nccl_communicator.cu), the CPU stand-in and the tests.
//
// Sizes and bandwidths follow nccl-tests (doc/PERFORMANCE.md in NVIDIA/nccl-tests):
//   S = the operation's size in bytes as nccl-tests counts it (per collective, below)
//   algbw = S / t                         (GB/s, 1 GB = 1e9 bytes)
//   busbw = algbw * factor(n)             (n = ranks in the communicator)
//     all_reduce      2(n-1)/n    S = count * 4 (the whole array on each rank)
//     all_gather      (n-1)/n     S = recvcount * 4 = sendcount * n * 4 (the gathered array)
//     reduce_scatter  (n-1)/n     S = sendcount * 4 = recvcount * n * 4 (the array reduced)
//     alltoall        (n-1)/n     S = count * 4 (each rank's whole send buffer)
//     broadcast       1           S = count * 4
//     sendrecv        1           S = count * 4 (what each rank sends to its next)
// With one rank the factors of the first four are 0: busbw says nothing there, so it is not
// reported and algbw stands alone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels::nccl {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kSendRecv };

struct CallShape;
struct RankBuffers;
class NcclCalls;
class HostExchange;

// Where element j of rank r's result comes from, as data that host and device code read alike
// (pattern.h evaluates it; c = the call's nccl_count, n ranks, input(p, i) = rank p's input):
//   kSum           the sum over all ranks p of input(p, base + j)
//   kBlockOwner    input(j / c, base + j % c): the result is n blocks of c, block p from rank p
//   kRoot          input(0, base + j)
//   kPreviousRank  input(r - 1 mod n, base + j)
// with base = r * c when `from_rank_slot` (each rank receives its own part of the others'
// arrays), else 0.
struct ResultPattern {
  enum class From : std::uint8_t { kSum, kBlockOwner, kRoot, kPreviousRank };
  From from = From::kSum;
  bool from_rank_slot = false;
  // In place, NCCL takes the input from the rank's slot (offset r * c) of the receive buffer
  // (all_gather), and writes the result to that slot (reduce_scatter); otherwise both sit at 0.
  bool in_place_input_in_rank_slot = false;
  bool in_place_result_in_rank_slot = false;
};

// One collective, as nccl-tests' struct testColl: its own file (all_reduce.cc, ...) fills this
// beside its formula, so adding a collective is that file plus a line in kCollectives.
struct CollectiveRules {
  // Fills send_count, recv_count, nccl_count and bytes for `count` elements (at least one) on
  // `n` ranks, `per_rank` = count / n (at least one) where the array is split between ranks.
  void (*shape)(std::int64_t count, std::int64_t per_rank, std::int64_t n, CallShape* shape);
  // busbw / algbw on `n` ranks (n >= 1).
  double (*bus_factor)(double n);
  // What every rank's result must hold, checked on the host and on the GPU (pattern.h).
  ResultPattern result;
  // Enqueues the collective on one rank through NCCL (inside the communicator's group call).
  Status (*run_nccl)(NcclCalls& nccl, const RankBuffers& buffers);
  // Runs it on one rank in host memory, from exchanges with the other ranks: what the CPU
  // stand-in for NCCL (kernels/fixtures/cpu_loopback.h) does instead of the NCCL call. Blocking.
  Status (*run_on_host)(HostExchange& host, const RankBuffers& buffers);
};

extern const CollectiveRules kAllReduceRules;      // all_reduce.cc
extern const CollectiveRules kAllGatherRules;      // all_gather.cc
extern const CollectiveRules kReduceScatterRules;  // reduce_scatter.cc
extern const CollectiveRules kAllToAllRules;       // alltoall.cc
extern const CollectiveRules kBroadcastRules;      // broadcast.cc
extern const CollectiveRules kSendRecvRules;       // sendrecv.cc

struct CollectiveInfo {
  Collective op;
  std::string_view name;             // "all_reduce", as NCCL and nccl-tests spell it
  std::string_view test_type;        // "nccl-all-reduce"
  std::string_view bus_factor_text;  // "2(n-1)/n"
  bool in_place_supported;           // NCCL defines an in-place form
  const CollectiveRules* rules;      // its file's rules
};

inline constexpr std::array<CollectiveInfo, 6> kCollectives = {{
    {Collective::kAllReduce, "all_reduce", "nccl-all-reduce", "2(n-1)/n", true, &kAllReduceRules},
    {Collective::kAllGather, "all_gather", "nccl-all-gather", "(n-1)/n", true, &kAllGatherRules},
    {Collective::kReduceScatter, "reduce_scatter", "nccl-reduce-scatter", "(n-1)/n", true,
     &kReduceScatterRules},
    {Collective::kAllToAll, "alltoall", "nccl-alltoall", "(n-1)/n", false, &kAllToAllRules},
    {Collective::kBroadcast, "broadcast", "nccl-broadcast", "1", true, &kBroadcastRules},
    {Collective::kSendRecv, "sendrecv", "nccl-sendrecv", "1", false, &kSendRecvRules},
}};

const CollectiveInfo& Info(Collective op);
std::optional<Collective> CollectiveByName(std::string_view name);  // "all_reduce"

// Every element is a 32-bit unsigned integer: 4 bytes like nccl-tests' default float, and its
// sum wraps modulo 2^32, so every expected result is exact at any world size.
inline constexpr std::int64_t kElementBytes = 4;

// One call of a collective on one rank, in elements of kElementBytes.
struct CallShape {
  Collective op = Collective::kAllReduce;
  int world_size = 1;
  std::int64_t send_count = 0;  // elements in each rank's send buffer
  std::int64_t recv_count = 0;  // elements in each rank's receive buffer
  // The count argument NCCL takes: all_gather's sendcount, reduce_scatter's recvcount,
  // alltoall's per-peer count, the whole count for the rest.
  std::int64_t nccl_count = 0;
  std::int64_t bytes = 0;  // S above, for algbw
};

// One call as the harness makes it: its shape, its form and its data.
struct Call {
  CallShape shape;
  bool in_place = false;
  std::uint32_t seed = 0;  // pattern.h: changes per call so stale data cannot pass
};

// One rank's part of one call, as a collective's run_nccl and run_on_host see it: elements of
// kElementBytes in the rank's own buffers (device memory for NCCL, host memory for the stand-in).
struct RankBuffers {
  const std::uint32_t* input = nullptr;  // NCCL's sendbuff (in place: inside the receive buffer)
  std::uint32_t* output = nullptr;       // NCCL's recvbuff (in place reduce_scatter: r's slot)
  std::size_t count = 0;                 // CallShape::nccl_count
  int rank = 0;                          // global rank
  int world_size = 1;
};

// NCCL's calls on one rank's communicator and stream, in standard types (nccl_communicator.cu
// implements them). Each only enqueues work; an error names the NCCL function and NCCL's text.
class NcclCalls {
 public:
  virtual ~NcclCalls() = default;
  virtual Status AllReduceSum(const std::uint32_t* send, std::uint32_t* recv,
                              std::size_t count) = 0;
  virtual Status AllGather(const std::uint32_t* send, std::uint32_t* recv,
                           std::size_t send_count) = 0;
  virtual Status ReduceScatterSum(const std::uint32_t* send, std::uint32_t* recv,
                                  std::size_t recv_count) = 0;
  // Whether the loaded NCCL has ncclAlltoAll (2.28 and later).
  virtual bool HasAlltoAll() const = 0;
  // `count` elements to and from each peer. Unimplemented without ncclAlltoAll.
  virtual Status AlltoAll(const std::uint32_t* send, std::uint32_t* recv, std::size_t count) = 0;
  virtual Status Broadcast(const std::uint32_t* send, std::uint32_t* recv, std::size_t count,
                           int root) = 0;
  virtual Status Send(const std::uint32_t* send, std::size_t count, int peer) = 0;
  virtual Status Recv(std::uint32_t* recv, std::size_t count, int peer) = 0;
};

// One peer's part of a host exchange: elements to send to it and room for elements from it.
struct PeerTransfer {
  int peer = -1;
  const std::uint32_t* send = nullptr;
  std::size_t send_count = 0;
  std::uint32_t* recv = nullptr;
  std::size_t recv_count = 0;
};

// What a collective's run_on_host may do: move elements between ranks, nothing else (the CPU
// stand-in implements it over TCP). Not thread-safe: one call at a time.
class HostExchange {
 public:
  virtual ~HostExchange() = default;
  // Sends and receives every transfer at once; returns when all are complete. At most one
  // transfer per peer. Blocking, under the call's watchdog.
  virtual Status Exchange(std::vector<PeerTransfer>& transfers) = 0;
  // Room for `elements` elements, kept between calls (its contents are not cleared).
  virtual std::uint32_t* Scratch(std::size_t elements) = 0;
};

// Building blocks for run_on_host. Every other rank p is sent input + p * stride (count
// elements), p's contribution to this rank is received, and then:
//   SumWithPeers       output[j] = (input + rank * stride)[j] + the received values;
//   GatherFromPeers    p's contribution lands at output + p * count, and this rank's own
//                      input + rank * stride is copied to output + rank * count.
// stride = 0 sends every rank the whole input (all_reduce, all_gather), stride = count sends
// each rank its own block (reduce_scatter, alltoall).
Status SumWithPeers(HostExchange& host, const RankBuffers& b, std::size_t stride);
Status GatherFromPeers(HostExchange& host, const RankBuffers& b, std::size_t stride);

// The shape nccl-tests would run for a nominal size of `bytes` on `world_size` ranks: counts
// are rounded down to whole elements and, where the array is split between ranks, to a
// multiple of the world size (at least one element per rank). Pure.
CallShape ShapeFor(Collective op, std::int64_t bytes, int world_size);

// busbw / algbw for `world_size` ranks (0 for the n-1 collectives on one rank). Pure.
double BusBandwidthFactor(Collective op, int world_size);

// Whether busbw is worth reporting: the factor is 0 on one rank for the n-1 collectives, and
// on one rank broadcast/sendrecv move nothing between GPUs, so busbw needs two ranks or more.
bool BusBandwidthMeaningful(int world_size);

// GB/s of `bytes` in `seconds` (1 GB = 1e9 bytes).
double AlgBandwidthGBps(std::int64_t bytes, double seconds);

// The sweep minBytes, minBytes*factor, ... below maxBytes, then maxBytes itself (thresholds
// usually name the largest size, so it is measured even when the steps miss it).
// InvalidArgument for min < 1, max < min or factor < 2.
Result<std::vector<std::int64_t>> SweepSizes(std::int64_t min_bytes, std::int64_t max_bytes,
                                             std::int64_t factor);

// "8B", "4KiB", "64MiB", "8GiB": the largest binary unit that divides the size, for metric
// names like busBandwidthGBps@8GiB.
std::string SizeLabel(std::int64_t bytes);

// Metric names per size.
std::string AlgBandwidthMetric(std::int64_t bytes, bool in_place);  // algBandwidthGBps@8GiB
std::string BusBandwidthMetric(std::int64_t bytes, bool in_place);  // busBandwidthGBps@8GiB
std::string TimeMetric(std::int64_t bytes);                         // timeMicroseconds@8B

}  // namespace perfgate::kernels::nccl
