// The memtest patterns as pure functions of a word's index, and March C-'s elements, shared by
// the device kernels (memtest.cu) and the host (kernels/memtest.cc, its unit tests): what a
// word must hold is computed, never stored, so verification needs no second copy of the
// memory. 64-bit words.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define PG_HOST_DEVICE __host__ __device__
#else
#define PG_HOST_DEVICE
#endif

namespace perfgate::kernels::memtest {

enum class Pattern : int {
  kWalkingOnes = 0,   // one set bit per word, shifted by index and step: every data line
  kWalkingZeros = 1,  // one clear bit per word
  kMarchCMinus = 2,   // March C- (the march elements below), over whole words of 0s and 1s
  kRandom = 3,        // splitmix64 of (seed, index), then its inverse
};

// March C-: {⇕(w0); ⇑(r0,w1); ⇑(r1,w0); ⇓(r0,w1); ⇓(r1,w0); ⇕(r0)}. Each element visits every
// word in its order and, at each word, does its operations in turn; "0" is a word of zeros and
// "1" a word of ones. It finds every stuck-at, transition and (inter-word) coupling fault.
// One definition for the host's simulated memory (memtest_logic.h) and the device kernel
// (memtest.cu): each runs MarchVisit over its own memory.
enum class MarchOrder : int { kAny, kUp, kDown };
struct MarchOp {
  bool read = false;  // read and compare, else write
  bool ones = false;  // the value: all ones, else all zeros
};
struct MarchElement {
  MarchOrder order = MarchOrder::kAny;
  int count = 0;  // operations used of `ops`
  MarchOp ops[2] = {};
};
inline constexpr int kMarchCMinusElements = 6;
inline constexpr MarchElement kMarchCMinus[kMarchCMinusElements] = {
    {MarchOrder::kAny, 1, {{false, false}, {}}},             // ⇕(w0)
    {MarchOrder::kUp, 2, {{true, false}, {false, true}}},    // ⇑(r0,w1)
    {MarchOrder::kUp, 2, {{true, true}, {false, false}}},    // ⇑(r1,w0)
    {MarchOrder::kDown, 2, {{true, false}, {false, true}}},  // ⇓(r0,w1)
    {MarchOrder::kDown, 2, {{true, true}, {false, false}}},  // ⇓(r1,w0)
    {MarchOrder::kAny, 1, {{true, false}, {}}},              // ⇕(r0)
};

PG_HOST_DEVICE inline std::uint64_t MarchWord(bool ones) { return ones ? ~0ULL : 0ULL; }

// The word index visited `position`-th of `n` by an element in `order` (kAny goes up).
PG_HOST_DEVICE inline std::uint64_t MarchIndex(MarchOrder order, std::uint64_t position,
                                               std::uint64_t n) {
  return order == MarchOrder::kDown ? n - 1 - position : position;
}

// One element's operations on word `index` of `memory` (Read(i) and Write(i, v)). Returns
// whether a read found something else than it expected, with what (`expected`, `found`).
// Every element reads a word at most once, so this is at most one error per word per element.
template <typename Memory>
PG_HOST_DEVICE inline bool MarchVisit(const MarchElement& e, Memory& memory, std::uint64_t index,
                                      std::uint64_t* expected, std::uint64_t* found) {
  bool wrong = false;
  for (int k = 0; k < e.count; ++k) {
    const MarchOp op = e.ops[k];
    if (op.read) {
      const std::uint64_t value = memory.Read(index);
      if (value != MarchWord(op.ones) && !wrong) {
        wrong = true;
        *expected = MarchWord(op.ones);
        *found = value;
      }
    } else {
      memory.Write(index, MarchWord(op.ones));
    }
  }
  return wrong;
}

// Steps that make one pass of the pattern: write then verify, or one march element each.
PG_HOST_DEVICE inline int PatternSteps(Pattern p) {
  switch (p) {
    case Pattern::kWalkingOnes:
    case Pattern::kWalkingZeros:
      return 64;
    case Pattern::kMarchCMinus:
      return kMarchCMinusElements;  // one step per march element
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

// The value word `index` holds after step `step` of pattern `p`. The write-then-verify patterns
// write it and read it back; March C- runs its elements (MarchVisit) instead.
PG_HOST_DEVICE inline std::uint64_t PatternWord(Pattern p, int step, std::uint64_t index,
                                                std::uint64_t seed) {
  switch (p) {
    case Pattern::kWalkingOnes:
      return 1ULL << ((index + static_cast<std::uint64_t>(step)) & 63U);
    case Pattern::kWalkingZeros:
      return ~(1ULL << ((index + static_cast<std::uint64_t>(step)) & 63U));
    case Pattern::kMarchCMinus:  // what step `step` leaves in every word
      return MarchWord(step == 1 || step == 3);
    case Pattern::kRandom: {
      const std::uint64_t r = SplitMix64(seed * 0x2545F4914F6CDD1DULL + index);
      return (step & 1) == 0 ? r : ~r;
    }
  }
  return 0;
}

// The step of pattern `p` whose reads wait out the retention delay after the last write before
// them: the first verify of a write-then-verify pattern, March C-'s first read element (after
// ⇕(w0) has written the whole region).
PG_HOST_DEVICE inline int RetentionStep(Pattern p) { return p == Pattern::kMarchCMinus ? 1 : 0; }

}  // namespace perfgate::kernels::memtest
