// The memtest patterns as pure functions of a word's index, shared by the device kernels
// (memtest.cu) and the host (kernels/memtest.cc, its unit tests): what a word must hold is
// computed, never stored, so verification needs no second copy of the memory. 64-bit words.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define PG_HOST_DEVICE __host__ __device__
#else
#define PG_HOST_DEVICE
#endif

namespace perfgate::kernels::memtest {

enum class Pattern : int {
  kWalkingOnes = 0,       // one set bit per word, shifted by index and step: every data line
  kWalkingZeros = 1,      // one clear bit per word
  kMovingInversions = 2,  // 0x55.. then its inverse, each verified before it is overwritten
  kRandom = 3,            // splitmix64 of (seed, index), then its inverse
};

// Steps (write, then verify) that make one pass of the pattern.
PG_HOST_DEVICE inline int PatternSteps(Pattern p) {
  switch (p) {
    case Pattern::kWalkingOnes:
    case Pattern::kWalkingZeros:
      return 64;
    case Pattern::kMovingInversions:
      return 4;  // p, ~p, p, ~p: each bit goes 0->1 and 1->0 twice
    case Pattern::kRandom:
      return 2;  // r, ~r
  }
  return 0;
}

PG_HOST_DEVICE inline std::uint64_t SplitMix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27U)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31U);
}

// The value word `index` holds after step `step` of pattern `p`.
PG_HOST_DEVICE inline std::uint64_t PatternWord(Pattern p, int step, std::uint64_t index,
                                                std::uint64_t seed) {
  switch (p) {
    case Pattern::kWalkingOnes:
      return 1ULL << ((index + static_cast<std::uint64_t>(step)) & 63U);
    case Pattern::kWalkingZeros:
      return ~(1ULL << ((index + static_cast<std::uint64_t>(step)) & 63U));
    case Pattern::kMovingInversions:
      return (step & 1) == 0 ? 0x5555555555555555ULL : 0xAAAAAAAAAAAAAAAAULL;
    case Pattern::kRandom: {
      const std::uint64_t r = SplitMix64(seed * 0x2545F4914F6CDD1DULL + index);
      return (step & 1) == 0 ? r : ~r;
    }
  }
  return 0;
}

}  // namespace perfgate::kernels::memtest
