// The matmuls of a transformer layer, as data, and what the training-step and decode-step
// tests derive from them: FLOPs, gradient bytes, the gradient buckets, bytes a decode step
// reads. Pure functions, unit tested on the host; docs/kernels.md writes the table out.
//
// Per layer, per GPU of a tensor-parallel group of t (Megatron's split: QKV and MLP-up by
// columns, attention-out and MLP-down by rows), h = hidden, tokens T = sequence x microBatch:
//   matmul     in      out     forward FLOPs    weights
//   qkv        h       3h/t    2 T h 3h/t       3h^2/t
//   attnOut    h/t     h       2 T h h/t        h^2/t
//   mlpUp      h       4h/t    2 T h 4h/t       4h^2/t
//   mlpDown    4h/t    h       2 T 4h h/t       4h^2/t
//   layer                      24 T h^2 / t     12 h^2 / t
// Backward runs two matmuls per forward one, each with the forward's FLOPs: the input
// gradient dX = dY W^T and the weight gradient dW = X^T dY, so a training step is 3x the
// forward: 72 T h^2 / t per layer. The attention core (QK^T, softmax, AV) is left out: it
// is not a weight matmul and its cost depends on the attention kernel, not the GEMM library.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/workloads/workload_backend.h"
#include "kernels/workloads/workload_model.h"

namespace perfgate::kernels::workloads {

struct LayerMatmul {
  std::string_view name;
  int in_factor;   // input features = in_factor * h (/ t when in_split)
  bool in_split;   // divided by the tensor-parallel degree
  int out_factor;  // output features = out_factor * h (/ t when out_split)
  bool out_split;
};

inline constexpr std::array<LayerMatmul, 4> kLayerMatmuls = {{
    {"qkv", 1, false, 3, true},
    {"attnOut", 1, true, 1, false},
    {"mlpUp", 1, false, 4, true},
    {"mlpDown", 4, true, 1, false},
}};

struct TransformerShape {
  std::int64_t hidden = 4096;
  std::int64_t sequence = 4096;
  std::int64_t micro_batch = 1;
  std::int64_t tensor_parallel = 1;
  int layers = 1;
  std::int64_t tokens() const { return sequence * micro_batch; }
};

std::int64_t InFeatures(const LayerMatmul& mm, const TransformerShape& shape);
std::int64_t OutFeatures(const LayerMatmul& mm, const TransformerShape& shape);

// Forward matmuls (layer 0 first) and backward (last layer first, mlpDown first; per matmul
// the input gradient, then the weight gradient), as cuBLASLt shapes C (m x n) = A^T B:
//   forward  m = out, n = T, k = in
//   dgrad    m = in,  n = T, k = out
//   wgrad    m = in,  n = out, k = T   (the weight gradient, in x out)
struct TrainingMatmuls {
  std::vector<MatmulShape> forward;
  std::vector<MatmulShape> backward;
};
TrainingMatmuls TrainingStepMatmuls(const TransformerShape& shape);

// 2 m n k summed over the matmuls: 24 T h^2 / t per layer forward, 72 T h^2 / t in all.
double MatmulFlops(const std::vector<MatmulShape>& matmuls);
// HBM bytes a matmul moves at least once: its inputs read and output written.
double MatmulBytes(const std::vector<MatmulShape>& matmuls, int element_bytes);
// Weight elements per GPU: 12 h^2 / t per layer (the gradient all-reduced each step).
std::int64_t GradientElements(const TransformerShape& shape);

// Gradient buckets: consecutive ranges of the gradient buffer, `bucket_elements` each (the last
// one shorter), in the order the backward pass fills it. ready_after[i] lists the buckets
// whose last element the i-th backward matmul writes: their all-reduce can start then.
struct Buckets {
  std::vector<std::int64_t> begin;  // element offset of each bucket
  std::vector<std::int64_t> count;  // elements of each bucket
  std::vector<std::vector<int>> ready_after;
};
Buckets PlanBuckets(const std::vector<MatmulShape>& backward, std::int64_t bucket_elements);

// The speed-of-light model's view of one training step: a forward phase, a backward phase
// that communication may overlap, the gradient all-reduce over `ranks`.
model::Workload TrainingWorkload(const TrainingMatmuls& matmuls, std::int64_t gradient_elements,
                                 int element_bytes, int ranks);

// ---- decode-step -----------------------------------------------------------------------------
// One decode step of `batch` sequences through `layers` layers (no tensor parallelism): every
// weight read once (12 h^2 per layer), and each sequence's K and V cache (2 h per cached token
// per layer) read once.
struct DecodeShape {
  std::int64_t hidden = 4096;
  int layers = 8;
  std::int64_t batch = 16;
  std::int64_t kv_tokens = 4096;
};
double DecodeWeightBytes(const DecodeShape& shape, int element_bytes);
double DecodeKvBytes(const DecodeShape& shape, int element_bytes);
// 2 x batch x 12 h^2 per layer (matmuls) + 4 x batch x kvTokens x h per layer (scores and
// weighted values).
double DecodeFlops(const DecodeShape& shape);
model::Workload DecodeWorkload(const DecodeShape& shape, int element_bytes);

}  // namespace perfgate::kernels::workloads
