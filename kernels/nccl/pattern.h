// The inputs every rank writes and the outputs every rank must then hold, as closed forms of
// (rank, index, seed): the same functions run on the host (CPU stand-in, tests) and on the GPU
// (fill and verify kernels), so a 8 GiB result is checked without copying it anywhere.
//
//   input(r, i)  = A * r + H(i, seed)            (uint32, arithmetic modulo 2^32)
//   sum over the n ranks of input(p, i) = A * n(n-1)/2 + n * H(i, seed)   (exact, wraps)
// H is a hash of the index, so a block moved to the wrong offset does not match; A * r makes
// every rank's data different, so data from the wrong rank does not match either; the seed
// changes per call, so data left from an earlier call does not match.
#pragma once

#include <cstdint>

#include "kernels/nccl/collective.h"

#if defined(__CUDACC__)
#define PG_HOST_DEVICE __host__ __device__
#else
#define PG_HOST_DEVICE
#endif

namespace perfgate::kernels::nccl {

inline constexpr std::uint32_t kRankStride = 0x9e3779b9U;  // odd: r -> A*r is a bijection

PG_HOST_DEVICE inline std::uint32_t IndexHash(std::uint64_t index, std::uint32_t seed) {
  std::uint64_t x = index + 0x9e3779b97f4a7c15ULL * (static_cast<std::uint64_t>(seed) + 1);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<std::uint32_t>(x ^ (x >> 31));
}

PG_HOST_DEVICE inline std::uint32_t InputValue(int rank, std::uint64_t index, std::uint32_t seed) {
  return kRankStride * static_cast<std::uint32_t>(rank) + IndexHash(index, seed);
}

PG_HOST_DEVICE inline std::uint32_t SumOverRanks(int world_size, std::uint64_t index,
                                                 std::uint32_t seed) {
  const std::uint64_t n = static_cast<std::uint64_t>(world_size);
  const std::uint32_t rank_sum = static_cast<std::uint32_t>(n * (n - 1) / 2);
  return kRankStride * rank_sum + static_cast<std::uint32_t>(n) * IndexHash(index, seed);
}

// The plain-data view of a call that the device code needs (CallShape less what it does not,
// plus the collective's ResultPattern from its rules).
struct PatternCall {
  ResultPattern result;
  int world_size;
  int rank;
  std::int64_t nccl_count;
  std::uint32_t seed;
};

// What rank `call.rank` must hold at element `j` of its result after the call (the collective's
// ResultPattern, collective.h). The result is the receive buffer (out of place) or, in place,
// the region NCCL writes: all of the buffer, except where the result sits in the rank's slot
// (ResultOffset).
PG_HOST_DEVICE inline std::uint32_t ExpectedValue(const PatternCall& call, std::uint64_t j) {
  const std::uint64_t c = static_cast<std::uint64_t>(call.nccl_count);
  const int n = call.world_size;
  const std::uint64_t base =
      call.result.from_rank_slot ? static_cast<std::uint64_t>(call.rank) * c : 0;
  switch (call.result.from) {
    case ResultPattern::From::kSum:
      return SumOverRanks(n, base + j, call.seed);
    case ResultPattern::From::kBlockOwner:
      return InputValue(static_cast<int>(j / c), base + j % c, call.seed);
    case ResultPattern::From::kRoot:
      return InputValue(0, base + j, call.seed);
    case ResultPattern::From::kPreviousRank:
      return InputValue((call.rank + n - 1) % n, base + j, call.seed);
  }
  return 0;
}

// Where rank `rank`'s input goes, in elements from the start of the buffer that is filled:
// 0, except in place where the input sits in the rank's slot of the receive buffer.
PG_HOST_DEVICE inline std::int64_t InputOffset(const PatternCall& call, bool in_place) {
  if (in_place && call.result.in_place_input_in_rank_slot) return call.rank * call.nccl_count;
  return 0;
}

// Where the result starts in the buffer it lands in (see ExpectedValue).
PG_HOST_DEVICE inline std::int64_t ResultOffset(const PatternCall& call, bool in_place) {
  if (in_place && call.result.in_place_result_in_rank_slot) return call.rank * call.nccl_count;
  return 0;
}

// Host side, shared by both communicators: where one rank's input and result sit for `call`.
struct CallPlacement {
  PatternCall pattern;
  std::int64_t input_offset = 0;   // from the receive buffer (in place) or the send buffer
  std::int64_t input_count = 0;    // elements of input the rank writes
  std::int64_t result_offset = 0;  // from the receive buffer
  std::int64_t result_count = 0;   // elements of result to check
};

inline CallPlacement PlaceCall(const Call& call, int world_size, int rank) {
  CallPlacement at;
  at.pattern = {Info(call.shape.op).rules->result, world_size, rank, call.shape.nccl_count,
                call.seed};
  at.input_offset = InputOffset(at.pattern, call.in_place);
  at.result_offset = ResultOffset(at.pattern, call.in_place);
  // An input or a result in the rank's slot is that slot: nccl_count elements.
  at.input_count = call.in_place && at.pattern.result.in_place_input_in_rank_slot
                       ? call.shape.nccl_count
                       : call.shape.send_count;
  at.result_count = call.in_place && at.pattern.result.in_place_result_in_rank_slot
                        ? call.shape.nccl_count
                        : call.shape.recv_count;
  return at;
}

// The buffers a collective's run_nccl / run_on_host get on one rank: the input in `send` (in
// place: in `recv`, at the input offset), the output in `recv` at the result offset.
inline RankBuffers BuffersFor(const Call& call, const CallPlacement& at, std::uint32_t* send,
                              std::uint32_t* recv) {
  RankBuffers b;
  b.input = call.in_place ? recv + at.input_offset : send;
  b.output = recv + at.result_offset;
  b.count = static_cast<std::size_t>(call.shape.nccl_count);
  b.rank = at.pattern.rank;
  b.world_size = at.pattern.world_size;
  return b;
}

}  // namespace perfgate::kernels::nccl
