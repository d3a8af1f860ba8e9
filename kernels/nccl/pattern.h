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

// The plain-data view of a call that the device code needs (CallShape less what it does not).
struct PatternCall {
  Collective op;
  int world_size;
  int rank;
  std::int64_t nccl_count;
  std::uint32_t seed;
};

// What rank `call.rank` must hold at element `j` of its result after the call. The result is
// the receive buffer (out of place) or, in place, the region NCCL writes: all of the buffer,
// except reduce_scatter, whose result sits at offset rank * recvcount of the send buffer.
// Broadcast's root is rank 0; sendrecv receives from rank - 1 (mod n) and sends to rank + 1.
PG_HOST_DEVICE inline std::uint32_t ExpectedValue(const PatternCall& call, std::uint64_t j) {
  const std::uint64_t c = static_cast<std::uint64_t>(call.nccl_count);
  const int n = call.world_size;
  switch (call.op) {
    case Collective::kAllReduce:
      return SumOverRanks(n, j, call.seed);
    case Collective::kAllGather:
      return InputValue(static_cast<int>(j / c), j % c, call.seed);
    case Collective::kReduceScatter:
      return SumOverRanks(n, static_cast<std::uint64_t>(call.rank) * c + j, call.seed);
    case Collective::kAllToAll:
      return InputValue(static_cast<int>(j / c), static_cast<std::uint64_t>(call.rank) * c + j % c,
                        call.seed);
    case Collective::kBroadcast:
      return InputValue(0, j, call.seed);
    case Collective::kSendRecv:
      return InputValue((call.rank + n - 1) % n, j, call.seed);
  }
  return 0;
}

// Where rank `rank`'s input goes, in elements from the start of the buffer that is filled:
// 0, except in-place all_gather, whose input is the rank's slot of the receive buffer.
PG_HOST_DEVICE inline std::int64_t InputOffset(const PatternCall& call, bool in_place) {
  if (in_place && call.op == Collective::kAllGather) return call.rank * call.nccl_count;
  return 0;
}

// Where the result starts in the buffer it lands in (see ExpectedValue).
PG_HOST_DEVICE inline std::int64_t ResultOffset(const PatternCall& call, bool in_place) {
  if (in_place && call.op == Collective::kReduceScatter) return call.rank * call.nccl_count;
  return 0;
}

}  // namespace perfgate::kernels::nccl
