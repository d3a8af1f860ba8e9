// The six collectives as data: how a nominal size becomes element counts, how algbw becomes
// busbw, and how sizes name metrics. Pure functions of standard types, shared by the NCCL
// implementation, the CPU stand-in and the tests.
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
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels::nccl {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kSendRecv };

struct CallShape;

// One collective's host-side rules, as nccl-tests' struct testColl: each collective's own file
// (all_reduce.cc, ...) defines them beside its formula and its test.
struct CollectiveRules {
  // Fills send_count, recv_count, nccl_count and bytes for `count` elements (at least one) on
  // `n` ranks, `per_rank` = count / n (at least one) where the array is split between ranks.
  void (*shape)(std::int64_t count, std::int64_t per_rank, std::int64_t n, CallShape* shape);
  // busbw / algbw on `n` ranks (n >= 1).
  double (*bus_factor)(double n);
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
  bool reduces;                      // sums (all_reduce, reduce_scatter)
  bool in_place_supported;           // NCCL defines an in-place form
  const CollectiveRules* rules;      // its file's rules
};

inline constexpr std::array<CollectiveInfo, 6> kCollectives = {{
    {Collective::kAllReduce, "all_reduce", "nccl-all-reduce", "2(n-1)/n", true, true,
     &kAllReduceRules},
    {Collective::kAllGather, "all_gather", "nccl-all-gather", "(n-1)/n", false, true,
     &kAllGatherRules},
    {Collective::kReduceScatter, "reduce_scatter", "nccl-reduce-scatter", "(n-1)/n", true, true,
     &kReduceScatterRules},
    {Collective::kAllToAll, "alltoall", "nccl-alltoall", "(n-1)/n", false, false, &kAllToAllRules},
    {Collective::kBroadcast, "broadcast", "nccl-broadcast", "1", false, true, &kBroadcastRules},
    {Collective::kSendRecv, "sendrecv", "nccl-sendrecv", "1", false, false, &kSendRecvRules},
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
