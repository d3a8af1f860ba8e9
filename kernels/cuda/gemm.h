// Device side of gemm and burn (kernels/gemm.cc, kernels/burn.cc): one cuBLASLt matmul shape and
// dtype with random normal inputs, timed, sampled against a double-precision device reference,
// and (for burn) compared with its own first result. Standard types only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "kernels/cuda/formulas.h"

namespace perfgate::kernels::cuda {

struct GemmConfig {
  int device = 0;
  gpu::GemmDtype dtype = gpu::GemmDtype::kBf16;
  std::int64_t m = 8192;
  std::int64_t n = 8192;
  std::int64_t k = 8192;
  // Heuristic candidates tried at set-up; the fastest is kept.
  int algo_candidates = 4;
  // Output matrices written in turn (burn fills several, like gpu-burn, then compares them all).
  int output_buffers = 1;
  std::uint64_t seed = 1;
  std::int64_t workspace_bytes = 32LL << 20;
  // Excludes split-K in-place reduction (atomics): burn needs bit-identical repeats.
  bool deterministic = false;
};

// Sampled outputs and their references, as doubles.
struct GemmSample {
  std::vector<double> values;
  std::vector<double> references;
};

// What RunCheckedPasses did: GPU seconds of the matmuls alone and of everything it queued
// (matmuls and comparisons back to back), so matmul_seconds / total_seconds is burn's duty cycle.
struct CheckedPasses {
  double matmul_seconds = 0;
  double total_seconds = 0;
  std::int64_t matmuls = 0;
  std::int64_t wrong = 0;  // output elements that differed from the snapshot
};

class GemmRunner {
 public:
  virtual ~GemmRunner() = default;
  // Runs `iterations` matmuls back to back (outputs in turn) and returns their GPU seconds.
  // Blocking; one thread at a time.
  virtual Result<double> Time(int iterations) = 0;
  // `count` outputs of buffer 0 at pseudo-random positions (the last row and column included)
  // and their exact values from the same stored inputs, computed in double on the device.
  virtual Result<GemmSample> Sample(int count) = 0;
  // Keeps output buffer 0 as the reference for CountDifferences. Blocking.
  virtual Status Snapshot() = 0;
  // Outputs, over every output buffer, that differ from the snapshot by more than
  // rel_tol * max(|snapshot|, 1), NaN included. Blocking.
  virtual Result<std::int64_t> CountDifferences(double rel_tol) = 0;
  // `passes` times: a matmul into every output buffer, then one comparison of them all with
  // the snapshot (as CountDifferences), queued back to back with no host wait in between.
  // Blocking once, at the end; one thread at a time.
  virtual Result<CheckedPasses> RunCheckedPasses(int passes, double rel_tol) = 0;
  // "cuBLASLt 130000, algo 66 tile 20 splitK 1 stages 35, workspace 32 MiB (fastest of 4)".
  virtual std::string Description() const = 0;
};

// Unavailable("no CUDA device: ...") without a device; FailedPrecondition when the dtype needs a
// newer GPU (fp8 before cc 8.9) or cuBLASLt offers no algorithm for the shape. Blocking.
Result<std::unique_ptr<GemmRunner>> CreateGemmRunner(const GemmConfig& config);

}  // namespace perfgate::kernels::cuda
