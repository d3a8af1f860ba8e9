// The consistency screen's device kernels: inputs from a counter-based generator (the same
// values on every GPU), plain GEMM kernels whose every output element is summed in a fixed
// order by one thread (fp64, fp32: SIMT fused multiply-adds) or by one warp's tensor-core tile
// (fp16, bf16 inputs, fp32 accumulation: WMMA, k in order), a reduction with a fixed tree, a
// map of transcendental functions (the accurate library forms and the SFU's fast ones), and
// the chunk digests of every output (consistency_digest.h). Nothing depends on the GPU's SM
// count, clocks or timing (no split-K, no atomics on floating point, no algorithm chosen by
// timing), so every healthy GPU of one model and build computes the same bits. The
// computations of one screen are timed together behind the launch gate.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda/consistency.h"
#include "kernels/cuda/consistency_digest.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/device.h"
#include "kernels/cuda/launch_gate.cuh"

namespace perfgate::kernels::cuda {
namespace {

using consistency::DigestChunks;
using consistency::ElementDigest;
using consistency::kDigestChunkElements;

constexpr int kBlock = 256;
constexpr int kTile = 16;                   // SIMT GEMM tile, and the WMMA tile
constexpr std::int64_t kReduceSpan = 4096;  // inputs per reduction output

// Uniform in [-1, 1), 53 bits, from (seed, index).
__device__ inline double UniformAt(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t bits = Mix64(seed ^ Mix64(index));
  return static_cast<double>(bits >> 11U) * (2.0 / 9007199254740992.0) - 1.0;
}

__device__ inline void StoreAs(double* p, double v) { *p = v; }
__device__ inline void StoreAs(float* p, double v) { *p = static_cast<float>(v); }
__device__ inline void StoreAs(__half* p, double v) { *p = __float2half_rn(static_cast<float>(v)); }
__device__ inline void StoreAs(__nv_bfloat16* p, double v) {
  *p = __float2bfloat16_rn(static_cast<float>(v));
}

template <typename T>
__global__ void FillUniform(T* out, std::int64_t count, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    StoreAs(out + i, UniformAt(seed, static_cast<std::uint64_t>(i)));
  }
}

__device__ inline float Fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ inline double Fma(double a, double b, double c) { return fma(a, b, c); }

// C = A B, row-major n x n (n a multiple of kTile): one thread per element of C, its k terms
// fused-multiply-added in order through kTile x kTile shared tiles.
template <typename T>
__global__ void SimtGemm(const T* a, const T* b, T* c, int n) {
  __shared__ T as[kTile][kTile];
  __shared__ T bs[kTile][kTile];
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * kTile + threadIdx.y;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kTile + threadIdx.x;
  T acc = 0;
  for (int t = 0; t < n; t += kTile) {
    as[threadIdx.y][threadIdx.x] = a[row * n + t + threadIdx.x];
    bs[threadIdx.y][threadIdx.x] = b[(t + static_cast<std::int64_t>(threadIdx.y)) * n + col];
    __syncthreads();
    for (int l = 0; l < kTile; ++l) acc = Fma(as[threadIdx.y][l], bs[l][threadIdx.x], acc);
    __syncthreads();
  }
  c[row * n + col] = acc;
}

// C = A B on the tensor cores: one warp per 16 x 16 tile of C, fp32 accumulation over k in
// 16-wide steps, in order.
template <typename T>
__global__ void TensorCoreGemm(const T* a, const T* b, float* c, int n) {
  using namespace nvcuda;  // NOLINT(google-build-using-namespace): wmma's own spelling
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * kTile;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kTile;
  wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, T, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, T, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int t = 0; t < n; t += kTile) {
    wmma::load_matrix_sync(fa, a + row * n + t, n);
    wmma::load_matrix_sync(fb, b + static_cast<std::int64_t>(t) * n + col, n);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + row * n + col, acc, n, wmma::mem_row_major);
}

// out[b] = the sum of x[b * kReduceSpan, (b + 1) * kReduceSpan): each thread adds its inputs
// in order, then a fixed halving tree over the block.
__global__ void ReduceSpans(const float* x, float* out) {
  __shared__ float partial[kBlock];
  const float* span = x + static_cast<std::int64_t>(blockIdx.x) * kReduceSpan;
  float acc = 0;
  for (int i = threadIdx.x; i < kReduceSpan; i += kBlock) acc += span[i];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int width = kBlock / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

// x in [-1, 1): every argument in its function's domain.
__global__ void Transcendental(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float v = x[i];
    float r = sinf(3.1f * v) + cosf(2.3f * v) * expf(v) + logf(1.5f + v) + tanhf(2.0f * v) +
              powf(1.25f + v, 1.5f) + erff(v);
    r += __sinf(v) * __expf(v) + __logf(2.0f + v) + rsqrtf(2.0f + v);
    y[i] = r;
  }
}

__device__ inline std::uint64_t Bits(float v) { return __float_as_uint(v); }
__device__ inline std::uint64_t Bits(double v) {
  return static_cast<std::uint64_t>(__double_as_longlong(v));
}

// chunks[b] = the digest of elements [b * kDigestChunkElements, ...) of `out`: a sum modulo
// 2^64, the same in any order of addition.
template <typename T>
__global__ void DigestKernel(const T* out, std::int64_t elements, std::uint64_t* chunks) {
  __shared__ unsigned long long partial[kBlock];  // NOLINT(google-runtime-int)
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kDigestChunkElements;
  const std::int64_t end = min(first + kDigestChunkElements, elements);
  std::uint64_t acc = 0;
  for (std::int64_t i = first + threadIdx.x; i < end; i += kBlock) {
    acc += ElementDigest(static_cast<std::uint64_t>(i), Bits(out[i]));
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int width = kBlock / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) chunks[blockIdx.x] = partial[0];
}

std::size_t ElementBytes(ElementType type) { return type == ElementType::kF64 ? 8 : 4; }

// One computation's output on one GPU, and its chunk digests.
struct Output {
  DeviceBuffer data;
  DeviceBuffer chunks;
  std::int64_t chunk_count = 0;
};

// The screen on one GPU: its inputs (made once), its outputs (kept until the next run).
class DeviceScreen {
 public:
  static Result<std::unique_ptr<DeviceScreen>> Create(
      int device, const ConsistencyConfig& config, const std::vector<Computation>& computations) {
    PG_CUDA(cudaSetDevice(device));
    auto screen = std::unique_ptr<DeviceScreen>(new DeviceScreen());
    screen->device_ = device;
    screen->config_ = config;
    screen->computations_ = computations;
    ASSIGN_OR_RETURN(screen->stream_, Stream::Create());
    ASSIGN_OR_RETURN(screen->start_, Event::Create());
    ASSIGN_OR_RETURN(screen->stop_, Event::Create());
    ASSIGN_OR_RETURN(screen->gate_, LaunchGate::Create());
    const std::int64_t n = config.gemm_size;
    cudaStream_t s = screen->stream_.get();
    // The inputs: A and B for each GEMM type (the same values, rounded to the type), and the
    // vector the reduction and the map read.
    for (const std::string& dtype : config.gemm_dtypes) {
      const std::size_t bytes = static_cast<std::size_t>(n * n) * (dtype == "fp64"   ? 8
                                                                   : dtype == "fp32" ? 4
                                                                                     : 2);
      ASSIGN_OR_RETURN(DeviceBuffer a, DeviceBuffer::Allocate(bytes));
      ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(bytes));
      const std::uint64_t seed_a = Mix64(config.seed * 2);
      const std::uint64_t seed_b = Mix64(config.seed * 2 + 1);
      if (dtype == "fp64") {
        FillUniform<<<1024, kBlock, 0, s>>>(a.as<double>(), n * n, seed_a);
        FillUniform<<<1024, kBlock, 0, s>>>(b.as<double>(), n * n, seed_b);
      } else if (dtype == "fp32") {
        FillUniform<<<1024, kBlock, 0, s>>>(a.as<float>(), n * n, seed_a);
        FillUniform<<<1024, kBlock, 0, s>>>(b.as<float>(), n * n, seed_b);
      } else if (dtype == "fp16") {
        FillUniform<<<1024, kBlock, 0, s>>>(a.as<__half>(), n * n, seed_a);
        FillUniform<<<1024, kBlock, 0, s>>>(b.as<__half>(), n * n, seed_b);
      } else if (dtype == "bf16") {
        FillUniform<<<1024, kBlock, 0, s>>>(a.as<__nv_bfloat16>(), n * n, seed_a);
        FillUniform<<<1024, kBlock, 0, s>>>(b.as<__nv_bfloat16>(), n * n, seed_b);
      } else {
        return InvalidArgument("consistency: unknown GEMM type " + dtype);
      }
      PG_CUDA(cudaGetLastError());
      screen->gemm_inputs_.push_back({std::move(a), std::move(b)});
    }
    ASSIGN_OR_RETURN(
        screen->vector_,
        DeviceBuffer::Allocate(static_cast<std::size_t>(config.vector_elements * sizeof(float))));
    FillUniform<<<1024, kBlock, 0, s>>>(screen->vector_.as<float>(), config.vector_elements,
                                        Mix64(config.seed * 2 + 7));
    PG_CUDA(cudaGetLastError());
    for (const Computation& c : computations) {
      Output out;
      ASSIGN_OR_RETURN(out.data, DeviceBuffer::Allocate(static_cast<std::size_t>(c.Elements()) *
                                                        ElementBytes(c.type)));
      out.chunk_count = DigestChunks(c.Elements());
      ASSIGN_OR_RETURN(out.chunks, DeviceBuffer::Allocate(static_cast<std::size_t>(
                                       out.chunk_count * sizeof(std::uint64_t))));
      screen->outputs_.push_back(std::move(out));
    }
    PG_CUDA(cudaStreamSynchronize(s));
    return Result<std::unique_ptr<DeviceScreen>>(std::move(screen));
  }

  Result<GpuDigests> Run() {
    PG_CUDA(cudaSetDevice(device_));
    cudaStream_t s = stream_.get();
    GpuDigests digests;
    ASSIGN_OR_RETURN(digests.seconds, TimeBehindGate(gate_, s, start_, stop_, "consistency",
                                                     [&]() -> Status { return Queue(s); }));
    for (const Output& out : outputs_) {
      std::vector<std::uint64_t> chunks(static_cast<std::size_t>(out.chunk_count));
      PG_CUDA(cudaMemcpyAsync(chunks.data(), out.chunks.get(),
                              chunks.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, s));
      digests.chunks.push_back(std::move(chunks));
    }
    PG_CUDA(cudaStreamSynchronize(s));
    return digests;
  }

  Result<std::vector<std::uint64_t>> Read(int computation, std::int64_t first, std::int64_t count) {
    if (computation < 0 || computation >= static_cast<int>(outputs_.size())) {
      return InvalidArgument("consistency: no computation " + std::to_string(computation));
    }
    const Computation& c = computations_[computation];
    if (first < 0 || count < 0 || first + count > c.Elements()) {
      return InvalidArgument("consistency: elements " + std::to_string(first) + "+" +
                             std::to_string(count) + " outside " + c.name + "'s " +
                             std::to_string(c.Elements()));
    }
    PG_CUDA(cudaSetDevice(device_));
    const std::size_t size = ElementBytes(c.type);
    std::vector<unsigned char> raw(static_cast<std::size_t>(count) * size);
    PG_CUDA(cudaMemcpy(raw.data(), outputs_[computation].data.as<unsigned char>() + first * size,
                       raw.size(), cudaMemcpyDeviceToHost));
    std::vector<std::uint64_t> bits(static_cast<std::size_t>(count), 0);
    for (std::size_t i = 0; i < bits.size(); ++i) {
      if (size == 8) {
        std::memcpy(&bits[i], raw.data() + i * 8, 8);
      } else {
        std::uint32_t word = 0;
        std::memcpy(&word, raw.data() + i * 4, 4);
        bits[i] = word;
      }
    }
    return bits;
  }

 private:
  DeviceScreen() = default;

  // Every computation and its digest, in order, on stream `s` behind the closed gate.
  Status Queue(cudaStream_t s) {
    const int n = static_cast<int>(config_.gemm_size);
    const dim3 tiles(n / kTile, n / kTile);
    for (std::size_t g = 0; g < config_.gemm_dtypes.size(); ++g) {
      const std::string& dtype = config_.gemm_dtypes[g];
      const DeviceBuffer& a = gemm_inputs_[g].first;
      const DeviceBuffer& b = gemm_inputs_[g].second;
      void* c = outputs_[g].data.get();
      if (dtype == "fp64") {
        SimtGemm<<<tiles, dim3(kTile, kTile), 0, s>>>(a.as<double>(), b.as<double>(),
                                                      static_cast<double*>(c), n);
      } else if (dtype == "fp32") {
        SimtGemm<<<tiles, dim3(kTile, kTile), 0, s>>>(a.as<float>(), b.as<float>(),
                                                      static_cast<float*>(c), n);
      } else if (dtype == "fp16") {
        TensorCoreGemm<<<tiles, 32, 0, s>>>(a.as<__half>(), b.as<__half>(), static_cast<float*>(c),
                                            n);
      } else {
        TensorCoreGemm<<<tiles, 32, 0, s>>>(a.as<__nv_bfloat16>(), b.as<__nv_bfloat16>(),
                                            static_cast<float*>(c), n);
      }
      gate_.Queued();
    }
    const std::size_t reduce = config_.gemm_dtypes.size();
    ReduceSpans<<<static_cast<unsigned>(config_.vector_elements / kReduceSpan), kBlock, 0, s>>>(
        vector_.as<float>(), outputs_[reduce].data.as<float>());
    gate_.Queued();
    Transcendental<<<1024, kBlock, 0, s>>>(
        vector_.as<float>(), outputs_[reduce + 1].data.as<float>(), config_.vector_elements);
    gate_.Queued();
    for (std::size_t i = 0; i < outputs_.size(); ++i) {
      const Output& out = outputs_[i];
      const auto grid = static_cast<unsigned>(out.chunk_count);
      const std::int64_t elements = computations_[i].Elements();
      if (computations_[i].type == ElementType::kF64) {
        DigestKernel<<<grid, kBlock, 0, s>>>(out.data.as<double>(), elements,
                                             out.chunks.as<std::uint64_t>());
      } else {
        DigestKernel<<<grid, kBlock, 0, s>>>(out.data.as<float>(), elements,
                                             out.chunks.as<std::uint64_t>());
      }
      gate_.Queued();
    }
    return CudaStatus(cudaGetLastError(), "consistency kernels");
  }

  int device_ = 0;
  ConsistencyConfig config_;
  std::vector<Computation> computations_;
  Stream stream_;
  Event start_, stop_;
  LaunchGate gate_;
  std::vector<std::pair<DeviceBuffer, DeviceBuffer>> gemm_inputs_;
  DeviceBuffer vector_;
  std::vector<Output> outputs_;
};

class CudaConsistencyRunner final : public ConsistencyRunner {
 public:
  CudaConsistencyRunner(std::vector<std::unique_ptr<DeviceScreen>> screens,
                        std::vector<Computation> computations)
      : screens_(std::move(screens)), computations_(std::move(computations)) {}

  int size() const override { return static_cast<int>(screens_.size()); }
  const std::vector<Computation>& Computations() const override { return computations_; }

  // One host thread per GPU: the GPUs compute at once.
  Result<std::vector<GpuDigests>> Run() override {
    std::vector<Result<GpuDigests>> results(screens_.size(), Internal("consistency: not run"));
    std::vector<std::thread> threads;
    threads.reserve(screens_.size());
    for (std::size_t i = 0; i < screens_.size(); ++i) {
      threads.emplace_back([this, i, &results] { (void)(results[i] = screens_[i]->Run()); });
    }
    for (std::thread& t : threads) t.join();
    std::vector<GpuDigests> out;
    for (auto& r : results) {
      if (!r.ok()) return r.status();
      out.push_back(std::move(r).value());
    }
    return out;
  }

  Result<std::vector<std::uint64_t>> ReadElements(int gpu, int computation, std::int64_t first,
                                                  std::int64_t count) override {
    if (gpu < 0 || gpu >= size()) {
      return InvalidArgument("consistency: no GPU at position " + std::to_string(gpu));
    }
    return screens_[gpu]->Read(computation, first, count);
  }

 private:
  std::vector<std::unique_ptr<DeviceScreen>> screens_;
  std::vector<Computation> computations_;
};

}  // namespace

Result<std::unique_ptr<ConsistencyRunner>> CreateConsistencyRunner(
    const ConsistencyConfig& config) {
  if (config.gemm_size <= 0 || config.gemm_size % 64 != 0) {
    return InvalidArgument("consistency: gemmSize must be a positive multiple of 64, not " +
                           std::to_string(config.gemm_size));
  }
  if (config.vector_elements <= 0 || config.vector_elements % kReduceSpan != 0) {
    return InvalidArgument("consistency: vectorElements must be a positive multiple of " +
                           std::to_string(kReduceSpan) + ", not " +
                           std::to_string(config.vector_elements));
  }
  const bool tensor_cores =
      std::any_of(config.gemm_dtypes.begin(), config.gemm_dtypes.end(),
                  [](const std::string& d) { return d == "fp16" || d == "bf16"; });
  const std::vector<Computation> computations = ConsistencyComputations(config);
  std::vector<std::unique_ptr<DeviceScreen>> screens;
  for (int device : config.devices) {
    RETURN_IF_ERROR(RequireCudaDevice(device));
    ASSIGN_OR_RETURN(const CudaDeviceFacts facts, QueryCudaDevice(device));
    if (tensor_cores && facts.cc_major < 8) {
      return FailedPrecondition(
          "consistency: fp16 and bf16 tensor-core GEMMs need compute "
          "capability 8.0 or newer; " +
          facts.name + " is " + std::to_string(facts.cc_major) + "." +
          std::to_string(facts.cc_minor));
    }
    ASSIGN_OR_RETURN(auto screen, DeviceScreen::Create(device, config, computations));
    screens.push_back(std::move(screen));
  }
  return std::unique_ptr<ConsistencyRunner>(
      std::make_unique<CudaConsistencyRunner>(std::move(screens), computations));
}

}  // namespace perfgate::kernels::cuda
