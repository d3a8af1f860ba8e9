// Device side of memtest (kernels/memtest.cc): fills most of a GPU's free memory with a
// pattern (or runs March C- over it) and checks every word, counting mismatches and keeping the
// first few. Standard types
// only; memtest.cu on CUDA, nocuda.cc without.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/result.h"
#include "kernels/cuda/memtest_patterns.h"

namespace perfgate::kernels::cuda {

struct MemWordError {
  std::uint64_t offset_bytes = 0;  // from the start of the tested region
  std::uint64_t expected = 0;
  std::uint64_t found = 0;
};

struct MemStepResult {
  std::uint64_t errors = 0;          // every mismatching word
  std::vector<MemWordError> listed;  // the first max_listed of them (in no set order)
  double seconds = 0;                // write + verify, GPU time
};

class MemTester {
 public:
  virtual ~MemTester() = default;
  // One step of `pattern` over the whole region. Write-then-verify patterns write step
  // `step`, wait `hold_seconds` once the write has finished everywhere, then read every word
  // back and compare. March C- waits `hold_seconds`, then runs element `step`
  // (memtest_patterns.h), which reads what the elements before it wrote: run its steps in
  // order. `seconds` is the GPU time of the kernels, without the wait. Blocking; one thread at
  // a time.
  virtual Result<MemStepResult> RunStep(memtest::Pattern pattern, int step, std::uint64_t seed,
                                        int max_listed, double hold_seconds) = 0;
  virtual std::int64_t Bytes() const = 0;  // size of the tested region
};

// Allocates `fraction` of the device's free memory (capped at max_bytes when > 0, rounded down
// to whole words), retrying 5% smaller while the allocation fails. Unavailable("no CUDA
// device: ...") without a device. Blocking.
Result<std::unique_ptr<MemTester>> CreateMemTester(int device, double fraction,
                                                   std::int64_t max_bytes);

}  // namespace perfgate::kernels::cuda
