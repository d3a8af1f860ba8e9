// memtest's host-side logic, apart from CUDA so unit tests run it: the pattern names, the
// report of the errors found (bounded, each with its address, expected and found words, and
// the bits that flipped), a host MemTester over simulated memory with faults to inject, and
// the test with its device factory injected.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/memtest.h"
#include "kernels/test.h"

namespace perfgate::kernels::memtest {

// "walking-ones", "walking-zeros", "march-c-", "random".
const char* PatternName(Pattern p);
std::optional<Pattern> ParsePattern(const std::string& name);

// Errors of one sample, over every pattern and step run.
struct ErrorReport {
  std::uint64_t errors = 0;
  // The first errors seen, at most `max_listed`, each once by address, in address order.
  std::vector<cuda::MemWordError> listed;
  std::uint64_t flipped_bits = 0;                 // OR of expected ^ found over the listed errors
  std::vector<std::string> patterns_with_errors;  // "walking-ones step 3: 2 errors"
  std::size_t max_listed = 16;

  void Add(Pattern p, int step, const cuda::MemStepResult& result);
  // "3 memory errors (walking-ones step 3: 2 errors; random step 0: 1 errors); flipped bits
  // 0x10; at 0x1000 expected 0x... found 0x...; ..." with at most max_listed addresses.
  std::string Text() const;
};

// Faults a simulated memory (MakeHostMemTester) holds, as memory-test literature models them.
// A cell stuck at 0 or 1: `mask` bits of `word` always hold `value`'s bits.
struct StuckBits {
  std::uint64_t word = 0;
  std::uint64_t mask = 0;
  std::uint64_t value = 0;  // the stuck bits' value
};
// A transition fault: `mask` bits of `word` cannot go 0 -> 1 (`rising`) or 1 -> 0.
struct TransitionFault {
  std::uint64_t word = 0;
  std::uint64_t mask = 0;
  bool rising = true;
};
// An idempotent coupling fault: a write that takes any `aggressor_mask` bit of word
// `aggressor` 0 -> 1 (`rising`) or 1 -> 0 forces the `victim_mask` bits of word `victim` to
// `victim_value`'s bits.
struct CouplingFault {
  std::uint64_t aggressor = 0;
  std::uint64_t aggressor_mask = 0;
  bool rising = true;
  std::uint64_t victim = 0;
  std::uint64_t victim_mask = 0;
  std::uint64_t victim_value = 0;
};
struct MemFaults {
  std::vector<StuckBits> stuck;
  std::vector<TransitionFault> transition;
  std::vector<CouplingFault> coupling;
};

// A MemTester over simulated host memory with `faults`, for unit tests. March C- runs through
// the same MarchVisit as the device kernel, each element strictly in its address order.
std::unique_ptr<cuda::MemTester> MakeHostMemTester(std::int64_t bytes, MemFaults faults);
std::unique_ptr<cuda::MemTester> MakeHostMemTester(std::int64_t bytes,
                                                   std::vector<StuckBits> stuck);

using MemTesterFactory = std::function<Result<std::unique_ptr<cuda::MemTester>>(
    int device, double fraction, std::int64_t max_bytes)>;

// The memtest Test over `factory` (the real one creates device memory). `require_device` runs
// RequireCudaDevice first (off in unit tests).
std::unique_ptr<Test> MakeMemtestTestWith(MemTesterFactory factory, bool require_device);

}  // namespace perfgate::kernels::memtest
