// The consistency screen's digest of an output, shared by the device kernels
// (consistency.cu), the host (kernels/consistency.cc) and its unit tests: an output is cut into
// chunks of kDigestChunkElements elements; a chunk's digest is the sum, modulo 2^64, of a
// 64-bit mix of each element's index and bits. Integer addition is exact and associative, so
// the digest is the same whatever order the threads add in, and any change of any bit of any
// element changes it (but for a 2^-64 chance). The output's digest mixes its chunks' digests in
// order; the chunk digests are kept so that two outputs that differ can be compared chunk by
// chunk and only the first differing chunk copied back.
#pragma once

#include <cstdint>

#include "kernels/cuda/memtest_patterns.h"  // PG_HOST_DEVICE, SplitMix64

namespace perfgate::kernels::consistency {

inline constexpr std::int64_t kDigestChunkElements = 4096;

// One element's share of its chunk's digest: `bits` is the element's bit pattern (a float's
// 32 bits in the low half).
PG_HOST_DEVICE inline std::uint64_t ElementDigest(std::uint64_t index, std::uint64_t bits) {
  return memtest::SplitMix64(memtest::SplitMix64(index) ^ bits);
}

// Chunks of an output of `elements` elements (the last may be short).
PG_HOST_DEVICE inline std::int64_t DigestChunks(std::int64_t elements) {
  return (elements + kDigestChunkElements - 1) / kDigestChunkElements;
}

// The output's digest from its chunks' digests, in order.
PG_HOST_DEVICE inline std::uint64_t CombineChunkDigests(const std::uint64_t* chunks,
                                                        std::int64_t count) {
  std::uint64_t digest = 0xcbf29ce484222325ULL ^ static_cast<std::uint64_t>(count);
  for (std::int64_t i = 0; i < count; ++i) digest = memtest::SplitMix64(digest ^ chunks[i]);
  return digest;
}

}  // namespace perfgate::kernels::consistency
