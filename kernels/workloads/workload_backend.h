// Device side of the workload tests (sequence_search.cc, training_step.cc, decode_step.cc):
// what each needs from CUDA, cuBLASLt and NCCL, in standard types. Implemented in the .cu files
// here, or in workloads_nocuda.cc when built without CUDA (every entry point then says
// "no CUDA device: built without CUDA").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "kernels/cuda/formulas.h"
#include "kernels/workloads/alignment.h"

namespace perfgate::kernels::workloads {

// ---- sequence-search --------------------------------------------------------------------------
// The longest query the GPU scorer takes: each thread keeps a column of H and E per query
// residue in local memory.
inline constexpr int kMaxQueryLength = 1024;

class SwAligner {
 public:
  virtual ~SwAligner() = default;
  // Aligns every query against every target once (one thread per target, one grid row per
  // query) and returns the GPU seconds. Blocking; one thread at a time.
  virtual Result<double> Run() = 0;
  // The scores of the last Run(), query-major: scores[q * targets + t], targets in the order
  // given to CreateSwAligner. Blocking.
  virtual Result<std::vector<int>> Scores() = 0;
  // "grid 157 x 8 blocks of 128 threads, 40 registers/thread, 8 KiB local memory/thread".
  virtual std::string Description() const = 0;
};

// Copies the sequences to `device`. InvalidArgument for a query longer than kMaxQueryLength;
// Unavailable("no CUDA device: ...") without a device. Blocking.
Result<std::unique_ptr<SwAligner>> CreateSwAligner(int device, const align::SequenceSet& queries,
                                                   const align::SequenceSet& targets,
                                                   const align::Scoring& scoring);

// ---- training-step ---------------------------------------------------------------------------
// One matmul C (m x n) = A^T B with A k x m and B k x n (cuBLASLt, layout TN).
struct MatmulShape {
  std::string name;  // "qkv.forward", "mlpDown.wgrad"
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  // A weight-gradient matmul writes its output into the gradient buffer (at the next free
  // offset, in the order the backward pass runs), where the all-reduce picks it up.
  bool weight_gradient = false;
};

struct TrainingStepConfig {
  std::vector<int> devices;  // one data-parallel rank per device
  gpu::GemmDtype dtype = gpu::GemmDtype::kBf16;
  std::vector<MatmulShape> forward;   // in order
  std::vector<MatmulShape> backward;  // in order (last layer first)
  std::int64_t bucket_bytes = 25LL << 20;
  std::uint64_t seed = 1;
};

// Seconds of one call: the slowest rank's, each rank timed with CUDA events on its streams.
class TrainingStepRunner {
 public:
  virtual ~TrainingStepRunner() = default;
  // Forward then backward on each rank's compute stream; each gradient bucket's all-reduce is
  // queued on the rank's communication stream as soon as the backward matmuls have filled it
  // (an event orders it), so it runs under the remaining backward matmuls. The step ends when
  // both streams have drained. Blocking.
  virtual Result<double> Step() = 0;
  // The same matmuls with no communication. Blocking.
  virtual Result<double> ComputeOnly() = 0;
  // The same all-reduces, bucket by bucket, with no matmuls. Blocking.
  virtual Result<double> CommOnly() = 0;
  // Gradient buffer values at `indices` (elements), per rank: result[rank][i]. Blocking.
  virtual Result<std::vector<std::vector<double>>> ReadGradients(
      const std::vector<std::int64_t>& indices) = 0;
  virtual std::int64_t gradient_elements() const = 0;
  virtual int buckets() const = 0;
  virtual std::string Description() const = 0;
};

// Creates one NCCL communicator per device (ncclCommInitAll), the streams, and random N(0,1)
// inputs (a different seed per rank, as data-parallel ranks see different data). Unavailable
// without a device; FailedPrecondition when cuBLASLt has no algorithm for a shape. Blocking.
Result<std::unique_ptr<TrainingStepRunner>> CreateTrainingStepRunner(
    const TrainingStepConfig& config);

// ---- decode-step ----------------------------------------------------------------------------
struct DecodeStepConfig {
  int device = 0;
  gpu::GemmDtype dtype = gpu::GemmDtype::kBf16;
  std::int64_t hidden = 4096;
  int layers = 8;
  std::int64_t batch = 16;
  std::int64_t kv_tokens = 4096;  // cached tokens per sequence
  int head_dim = 128;
};

// Sampled outputs of the last step and their exact values (the inputs are patterns of small
// dyadic numbers that the host replays; decode_pattern.h).
struct DecodeCheck {
  std::vector<double> values;
  std::vector<double> references;
};

class DecodeStepRunner {
 public:
  virtual ~DecodeStepRunner() = default;
  // One decode step: per layer, the batch's activations through the four weight matrices
  // (QKV, attention-out, MLP up, MLP down; cuBLASLt with n = batch) and one pass of every
  // sequence's queries over its K and V cache. Returns GPU seconds. Blocking.
  virtual Result<double> Step() = 0;
  // `count` outputs of the last layer's QKV matmul and of its attention pass, with their exact
  // values. Blocking.
  virtual Result<DecodeCheck> Check(int count) = 0;
  virtual std::string Description() const = 0;
};

Result<std::unique_ptr<DecodeStepRunner>> CreateDecodeStepRunner(const DecodeStepConfig& config);

}  // namespace perfgate::kernels::workloads
