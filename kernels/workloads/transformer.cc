#include "kernels/workloads/transformer.h"

#include <algorithm>
#include <string>

namespace perfgate::kernels::workloads {

std::int64_t InFeatures(const LayerMatmul& mm, const TransformerShape& shape) {
  const std::int64_t f = mm.in_factor * shape.hidden;
  return mm.in_split ? f / std::max<std::int64_t>(1, shape.tensor_parallel) : f;
}

std::int64_t OutFeatures(const LayerMatmul& mm, const TransformerShape& shape) {
  const std::int64_t f = mm.out_factor * shape.hidden;
  return mm.out_split ? f / std::max<std::int64_t>(1, shape.tensor_parallel) : f;
}

TrainingMatmuls TrainingStepMatmuls(const TransformerShape& shape) {
  TrainingMatmuls out;
  const std::int64_t tokens = shape.tokens();
  for (int layer = 0; layer < shape.layers; ++layer) {
    const std::string prefix = "layer" + std::to_string(layer) + ".";
    for (const LayerMatmul& mm : kLayerMatmuls) {
      out.forward.push_back({prefix + std::string(mm.name) + ".forward", OutFeatures(mm, shape),
                             tokens, InFeatures(mm, shape), false});
    }
  }
  for (int layer = shape.layers - 1; layer >= 0; --layer) {
    const std::string prefix = "layer" + std::to_string(layer) + ".";
    for (auto it = kLayerMatmuls.rbegin(); it != kLayerMatmuls.rend(); ++it) {
      const std::int64_t in = InFeatures(*it, shape);
      const std::int64_t features_out = OutFeatures(*it, shape);
      const std::string name = prefix + std::string(it->name);
      out.backward.push_back({name + ".dgrad", in, tokens, features_out, false});
      out.backward.push_back({name + ".wgrad", in, features_out, tokens, true});
    }
  }
  return out;
}

double MatmulFlops(const std::vector<MatmulShape>& matmuls) {
  double flops = 0;
  for (const MatmulShape& s : matmuls) {
    flops += 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  }
  return flops;
}

double MatmulBytes(const std::vector<MatmulShape>& matmuls, int element_bytes) {
  double elements = 0;
  for (const MatmulShape& s : matmuls) {
    elements += static_cast<double>(s.k) * static_cast<double>(s.m) +
                static_cast<double>(s.k) * static_cast<double>(s.n) +
                static_cast<double>(s.m) * static_cast<double>(s.n);
  }
  return elements * element_bytes;
}

std::int64_t GradientElements(const TransformerShape& shape) {
  std::int64_t per_layer = 0;
  for (const LayerMatmul& mm : kLayerMatmuls)
    per_layer += InFeatures(mm, shape) * OutFeatures(mm, shape);
  return per_layer * shape.layers;
}

Buckets PlanBuckets(const std::vector<MatmulShape>& backward, std::int64_t bucket_elements) {
  Buckets b;
  b.ready_after.resize(backward.size());
  bucket_elements = std::max<std::int64_t>(1, bucket_elements);
  std::int64_t total = 0;
  for (const MatmulShape& s : backward) {
    if (s.weight_gradient) total += s.m * s.n;
  }
  for (std::int64_t begin = 0; begin < total; begin += bucket_elements) {
    b.begin.push_back(begin);
    b.count.push_back(std::min(bucket_elements, total - begin));
  }
  std::int64_t written = 0;
  std::size_t next = 0;
  for (std::size_t i = 0; i < backward.size(); ++i) {
    if (!backward[i].weight_gradient) continue;
    written += backward[i].m * backward[i].n;
    while (next < b.begin.size() && b.begin[next] + b.count[next] <= written) {
      b.ready_after[i].push_back(static_cast<int>(next));
      ++next;
    }
  }
  return b;
}

model::Workload TrainingWorkload(const TrainingMatmuls& matmuls, std::int64_t gradient_elements,
                                 int element_bytes, int ranks) {
  model::Workload w;
  w.phases.push_back({"forward", MatmulFlops(matmuls.forward),
                      MatmulBytes(matmuls.forward, element_bytes), false});
  w.phases.push_back({"backward", MatmulFlops(matmuls.backward),
                      MatmulBytes(matmuls.backward, element_bytes), true});
  w.allreduce_bytes = static_cast<double>(gradient_elements) * element_bytes;
  w.ranks = ranks;
  return w;
}

double DecodeWeightBytes(const DecodeShape& shape, int element_bytes) {
  const auto h = static_cast<double>(shape.hidden);
  return 12.0 * h * h * shape.layers * element_bytes;
}

double DecodeKvBytes(const DecodeShape& shape, int element_bytes) {
  return 2.0 * static_cast<double>(shape.hidden) * static_cast<double>(shape.kv_tokens) *
         static_cast<double>(shape.batch) * shape.layers * element_bytes;
}

double DecodeFlops(const DecodeShape& shape) {
  const auto h = static_cast<double>(shape.hidden);
  const auto b = static_cast<double>(shape.batch);
  return shape.layers *
         (2.0 * b * 12.0 * h * h + 4.0 * b * static_cast<double>(shape.kv_tokens) * h);
}

model::Workload DecodeWorkload(const DecodeShape& shape, int element_bytes) {
  const auto h = static_cast<double>(shape.hidden);
  const auto b = static_cast<double>(shape.batch);
  model::Workload w;
  w.phases.push_back({"weights", shape.layers * 2.0 * b * 12.0 * h * h,
                      DecodeWeightBytes(shape, element_bytes), false});
  w.phases.push_back({"kvCache", shape.layers * 4.0 * b * static_cast<double>(shape.kv_tokens) * h,
                      DecodeKvBytes(shape, element_bytes), false});
  return w;
}

}  // namespace perfgate::kernels::workloads
