// The device side of decode-step: per layer, the batch's activations through the four weight
// matrices (cuBLASLt, n = batch: matrix-vector products in batches, bound by reading the
// weights) and one attention pass over each sequence's K and V cache: per head, each cached
// token's key scored against the query and the values summed with those scores (softmax's
// normalisation is left out: the bytes read, which set a decode step's time, are the same).
// Inputs are patterns (decode_pattern.h) so the host can compute the exact outputs.
#include <algorithm>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/device.h"
#include "kernels/cuda/launch_gate.cuh"
#include "kernels/workloads/decode_pattern.h"
#include "kernels/workloads/lt_matmul.cuh"
#include "kernels/workloads/transformer.h"
#include "kernels/workloads/workload_backend.h"

namespace perfgate::kernels::workloads {
namespace {

using cuda::DeviceBuffer;
using cuda::Event;
using cuda::Stream;

constexpr std::size_t kWorkspaceBytes = 32u << 20;
constexpr int kAttentionWarps = 8;

enum class Fill { kWeight, kActivation, kKey, kValue };

// Fills `count` elements, the pattern restarting every `period` elements (one matrix each).
template <typename T>
__global__ void FillPatternKernel(T* out, std::int64_t count, std::int64_t period, Fill fill) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t local = i % period;
    float v = 0;
    switch (fill) {
      case Fill::kWeight:
        v = pattern::Weight(local);
        break;
      case Fill::kActivation:
        v = pattern::Activation(local);
        break;
      case Fill::kKey:
        v = pattern::Key(local);
        break;
      case Fill::kValue:
        v = pattern::Value(local);
        break;
    }
    StoreValue(out + i, v);
  }
}

// One block per (head, sequence, token split), kAttentionWarps warps; a warp takes every
// kAttentionWarps-th token of the split, each lane 4 of the head's 128 dimensions (8-byte
// loads, a warp reads a key's 256 bytes at once). out (float, zeroed) gathers the splits.
template <typename T>
__global__ void __launch_bounds__(kAttentionWarps * 32)
    AttentionKernel(const T* query, const T* keys, const T* values, std::int64_t hidden,
                    std::int64_t kv_tokens, std::int64_t tokens_per_split, float* out) {
  const int head = blockIdx.x;
  const std::int64_t seq = blockIdx.y;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const std::int64_t dim = static_cast<std::int64_t>(head) * 128 + lane * 4;
  float q[4];
  for (int d = 0; d < 4; ++d) q[d] = LoadValue(query + seq * hidden + dim + d);
  float acc[4] = {0, 0, 0, 0};
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.z) * tokens_per_split;
  const std::int64_t last = min(kv_tokens, first + tokens_per_split);
  for (std::int64_t t = first + warp; t < last; t += kAttentionWarps) {
    const std::int64_t row = (seq * kv_tokens + t) * hidden + dim;
    const uint2 k_bits = *reinterpret_cast<const uint2*>(keys + row);
    const uint2 v_bits = *reinterpret_cast<const uint2*>(values + row);
    const T* k = reinterpret_cast<const T*>(&k_bits);
    const T* v = reinterpret_cast<const T*>(&v_bits);
    float score = 0;
    for (int d = 0; d < 4; ++d) score += q[d] * LoadValue(k + d);
    for (int offset = 16; offset > 0; offset /= 2) {
      score += __shfl_xor_sync(0xffffffffu, score, offset);
    }
    for (int d = 0; d < 4; ++d) acc[d] += score * LoadValue(v + d);
  }
  __shared__ float partial[kAttentionWarps][128];
  for (int d = 0; d < 4; ++d) partial[warp][lane * 4 + d] = acc[d];
  __syncthreads();
  if (threadIdx.x < 128) {
    float sum = 0;
    for (int w = 0; w < kAttentionWarps; ++w) sum += partial[w][threadIdx.x];
    atomicAdd(out + seq * hidden + static_cast<std::int64_t>(head) * 128 + threadIdx.x, sum);
  }
}

struct Matrix {
  std::int64_t in = 0;
  std::int64_t out = 0;
  std::int64_t offset = 0;  // elements into a layer's weights
  LtPlan plan;
  DeviceBuffer output;  // out x batch
};

class DecodeStepRunnerImpl final : public DecodeStepRunner {
 public:
  Status Init(const DecodeStepConfig& config) {
    config_ = config;
    const std::int64_t h = config.hidden;
    if (h % 128 != 0) return InvalidArgument("decode-step: hidden must be a multiple of 128");
    PG_CUDA(cudaSetDevice(config.device));
    ASSIGN_OR_RETURN(stream_, Stream::Create());
    ASSIGN_OR_RETURN(start_, Event::Create());
    ASSIGN_OR_RETURN(stop_, Event::Create());
    ASSIGN_OR_RETURN(gate_, cuda::LaunchGate::Create());
    PG_LT(cublasLtCreate(lt_.out()));
    TransformerShape shape;
    shape.hidden = h;
    std::int64_t offset = 0;
    std::int64_t max_in = 0;
    for (const LayerMatmul& mm : kLayerMatmuls) {
      matrices_.emplace_back();
      Matrix& m = matrices_.back();
      m.in = InFeatures(mm, shape);
      m.out = OutFeatures(mm, shape);
      m.offset = offset;
      offset += m.in * m.out;
      max_in = std::max(max_in, m.in);
      RETURN_IF_ERROR(
          m.plan.Init(lt_.get(), config.dtype, m.out, config.batch, m.in, kWorkspaceBytes));
      ASSIGN_OR_RETURN(m.output, DeviceBuffer::Allocate(m.out * config.batch * 2));
    }
    layer_weights_ = offset;
    const std::int64_t kv = config.batch * config.kv_tokens * h;
    kv_per_layer_ = kv;
    ASSIGN_OR_RETURN(weights_, DeviceBuffer::Allocate(layer_weights_ * config.layers * 2));
    ASSIGN_OR_RETURN(keys_, DeviceBuffer::Allocate(kv * config.layers * 2));
    ASSIGN_OR_RETURN(values_, DeviceBuffer::Allocate(kv * config.layers * 2));
    ASSIGN_OR_RETURN(activations_, DeviceBuffer::Allocate(max_in * config.batch * 2));
    ASSIGN_OR_RETURN(query_, DeviceBuffer::Allocate(h * config.batch * 2));
    ASSIGN_OR_RETURN(attention_, DeviceBuffer::Allocate(h * config.batch * sizeof(float)));
    ASSIGN_OR_RETURN(workspace_, DeviceBuffer::Allocate(kWorkspaceBytes));
    int sms = 0;
    PG_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, config.device));
    // Enough token splits for about four blocks per SM.
    const std::int64_t blocks = (h / 128) * config.batch;
    splits_ = static_cast<int>(std::clamp<std::int64_t>(
        (4 * sms + blocks - 1) / blocks, 1, std::max<std::int64_t>(1, config.kv_tokens / 64)));
    tokens_per_split_ = (config.kv_tokens + splits_ - 1) / splits_;
    WithElementType(config.dtype, [&](auto* type) {
      using T = std::remove_pointer_t<decltype(type)>;
      cudaStream_t s = stream_.get();
      for (const Matrix& m : matrices_) {
        for (int l = 0; l < config.layers; ++l) {
          FillPatternKernel<T>
              <<<1024, 256, 0, s>>>(weights_.as<T>() + l * layer_weights_ + m.offset, m.in * m.out,
                                    m.in * m.out, Fill::kWeight);
        }
      }
      FillPatternKernel<T><<<1024, 256, 0, s>>>(activations_.as<T>(), max_in * config.batch,
                                                max_in * config.batch, Fill::kActivation);
      FillPatternKernel<T><<<1024, 256, 0, s>>>(query_.as<T>(), h * config.batch, h * config.batch,
                                                Fill::kActivation);
      FillPatternKernel<T><<<1024, 256, 0, s>>>(keys_.as<T>(), kv * config.layers, kv, Fill::kKey);
      FillPatternKernel<T>
          <<<1024, 256, 0, s>>>(values_.as<T>(), kv * config.layers, kv, Fill::kValue);
    });
    PG_CUDA(cudaGetLastError());
    PG_CUDA(cudaStreamSynchronize(stream_.get()));
    return Status::Ok();
  }

  // Behind the launch gate: the window opens once the step is queued (or, for many layers, on
  // a backlog of LaunchGate::kMaxBacklog operations).
  Result<double> Step() override {
    PG_CUDA(cudaSetDevice(config_.device));
    cudaStream_t s = stream_.get();
    return cuda::TimeBehindGate(gate_, s, start_, stop_, "decode-step", [&]() -> Status {
      for (int l = 0; l < config_.layers; ++l) {
        const char* layer = static_cast<const char*>(weights_.get()) + l * layer_weights_ * 2;
        for (const Matrix& m : matrices_) {
          RETURN_IF_ERROR(m.plan.Run(layer + m.offset * 2, activations_.get(), m.output.get(),
                                     workspace_.get(), kWorkspaceBytes, s));
          gate_.Queued(2);  // cuBLASLt may add a split-K reduction kernel
        }
        PG_CUDA(cudaMemsetAsync(attention_.get(), 0, attention_.bytes(), s));
        const dim3 grid(static_cast<unsigned>(config_.hidden / 128),
                        static_cast<unsigned>(config_.batch), static_cast<unsigned>(splits_));
        WithElementType(config_.dtype, [&](auto* type) {
          using T = std::remove_pointer_t<decltype(type)>;
          AttentionKernel<T><<<grid, kAttentionWarps * 32, 0, s>>>(
              query_.as<T>(), keys_.as<T>() + l * kv_per_layer_,
              values_.as<T>() + l * kv_per_layer_, config_.hidden, config_.kv_tokens,
              tokens_per_split_, attention_.as<float>());
        });
        PG_CUDA(cudaGetLastError());
        gate_.Queued(2);
      }
      return Status::Ok();
    });
  }

  Result<DecodeCheck> Check(int count) override {
    PG_CUDA(cudaSetDevice(config_.device));
    const std::int64_t h = config_.hidden;
    const Matrix& qkv = matrices_.front();
    const std::int64_t qkv_outputs = qkv.out * config_.batch;
    std::vector<double> qkv_host(static_cast<std::size_t>(qkv_outputs));
    std::vector<float> attention_host(static_cast<std::size_t>(h * config_.batch));
    {
      ASSIGN_OR_RETURN(DeviceBuffer indices,
                       DeviceBuffer::Allocate(sizeof(std::int64_t) * qkv_outputs));
      ASSIGN_OR_RETURN(DeviceBuffer values, DeviceBuffer::Allocate(sizeof(double) * qkv_outputs));
      std::vector<std::int64_t> all(static_cast<std::size_t>(qkv_outputs));
      for (std::int64_t i = 0; i < qkv_outputs; ++i) all[static_cast<std::size_t>(i)] = i;
      PG_CUDA(cudaMemcpyAsync(indices.get(), all.data(), sizeof(std::int64_t) * all.size(),
                              cudaMemcpyHostToDevice, stream_.get()));
      WithElementType(config_.dtype, [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        GatherKernel<T>
            <<<static_cast<unsigned>((qkv_outputs + 127) / 128), 128, 0, stream_.get()>>>(
                qkv.output.as<T>(), indices.as<std::int64_t>(), static_cast<int>(qkv_outputs),
                values.as<double>());
      });
      PG_CUDA(cudaGetLastError());
      PG_CUDA(cudaMemcpyAsync(qkv_host.data(), values.get(), sizeof(double) * qkv_host.size(),
                              cudaMemcpyDeviceToHost, stream_.get()));
      PG_CUDA(cudaMemcpyAsync(attention_host.data(), attention_.get(),
                              sizeof(float) * attention_host.size(), cudaMemcpyDeviceToHost,
                              stream_.get()));
      PG_CUDA(cudaStreamSynchronize(stream_.get()));
    }
    DecodeCheck check;
    count = std::max(count, 2);
    for (int s = 0; s < count; ++s) {
      // Alternate: a QKV output, then an attention output, spread over each range.
      const std::uint64_t r = cuda::Mix64(static_cast<std::uint64_t>(s) + 17);
      if (s % 2 == 0) {
        const std::int64_t index =
            s == 0 ? qkv_outputs - 1 : static_cast<std::int64_t>(r % qkv_outputs);
        const std::int64_t i = index % qkv.out;
        const std::int64_t j = index / qkv.out;
        double sum = 0;
        for (std::int64_t l = 0; l < qkv.in; ++l) {
          sum += static_cast<double>(pattern::Weight(l + i * qkv.in)) *
                 pattern::Activation(l + j * qkv.in);
        }
        check.values.push_back(qkv_host[static_cast<std::size_t>(index)]);
        check.references.push_back(sum);
      } else {
        const std::int64_t index =
            s == 1 ? h * config_.batch - 1 : static_cast<std::int64_t>(r % (h * config_.batch));
        const std::int64_t seq = index / h;
        const std::int64_t head = (index % h) / 128;
        double sum = 0;
        for (std::int64_t t = 0; t < config_.kv_tokens; ++t) {
          const std::int64_t row = (seq * config_.kv_tokens + t) * h;
          double score = 0;
          for (std::int64_t d = 0; d < 128; ++d) {
            score += static_cast<double>(pattern::Activation(seq * h + head * 128 + d)) *
                     pattern::Key(row + head * 128 + d);
          }
          sum += score * pattern::Value(row + index % h);
        }
        check.values.push_back(attention_host[static_cast<std::size_t>(index)]);
        check.references.push_back(sum);
      }
    }
    return check;
  }

  std::string Description() const override {
    return "4 cuBLASLt matmuls (TN, n = batch " + std::to_string(config_.batch) +
           ") and one attention pass per layer; attention grid " +
           std::to_string(config_.hidden / 128) + " heads x " + std::to_string(config_.batch) +
           " sequences x " + std::to_string(splits_) + " token splits, " +
           std::to_string(kAttentionWarps) + " warps per block";
  }

 private:
  DecodeStepConfig config_;
  Stream stream_;
  Event start_, stop_;
  cuda::LaunchGate gate_;
  LtContext lt_;
  std::vector<Matrix> matrices_;
  std::int64_t layer_weights_ = 0;
  std::int64_t kv_per_layer_ = 0;
  int splits_ = 1;
  std::int64_t tokens_per_split_ = 0;
  DeviceBuffer weights_, keys_, values_, activations_, query_, attention_, workspace_;
};

}  // namespace

Result<std::unique_ptr<DecodeStepRunner>> CreateDecodeStepRunner(const DecodeStepConfig& config) {
  RETURN_IF_ERROR(cuda::RequireCudaDevice(config.device));
  auto impl = std::make_unique<DecodeStepRunnerImpl>();
  RETURN_IF_ERROR(impl->Init(config));
  return std::unique_ptr<DecodeStepRunner>(std::move(impl));
}

}  // namespace perfgate::kernels::workloads
