// cuBLASLt GEMM for gemm and burn. Layout "TN" (A transposed, both operands k-major), the one
// layout every dtype supports, fp8 included: C[i,j] = sum_l A[l + i*k] * B[l + j*k], C column-
// major m x n. Inputs are N(0,1) from a counter-based generator: constant or zero inputs let
// the tensor cores toggle fewer bits and run faster than real data.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/device.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch_gate.cuh"
#include "kernels/cuda/lt_handles.cuh"

namespace perfgate::kernels::cuda {
namespace {

__device__ inline float NormalAt(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t bits = Mix64(seed ^ Mix64(index));
  // Two 24-bit uniforms in (0, 1] and [0, 1): Box-Muller.
  const float u1 = (static_cast<float>(bits >> 40) + 1.0f) * (1.0f / 16777216.0f);
  const float u2 = static_cast<float>((bits >> 16) & 0xffffff) * (1.0f / 16777216.0f);
  return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

__device__ inline void Store(__nv_bfloat16* p, float v) { *p = __float2bfloat16(v); }
__device__ inline void Store(__half* p, float v) { *p = __float2half(v); }
__device__ inline void Store(__nv_fp8_e4m3* p, float v) { *p = __nv_fp8_e4m3(v); }
__device__ inline void Store(float* p, float v) { *p = v; }
__device__ inline void Store(double* p, float v) { *p = v; }

__device__ inline double Load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ inline double Load(const __half* p) { return __half2float(*p); }
__device__ inline double Load(const __nv_fp8_e4m3* p) { return static_cast<float>(*p); }
__device__ inline double Load(const float* p) { return *p; }
__device__ inline double Load(const double* p) { return *p; }

template <typename T>
__global__ void FillNormalKernel(T* out, std::int64_t count, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    Store(out + i, NormalAt(seed, static_cast<std::uint64_t>(i)));
  }
}

template <typename In, typename Out>
__global__ void ReferenceKernel(const In* a, const In* b, const Out* d, std::int64_t m,
                                std::int64_t k, const std::int64_t* rows, const std::int64_t* cols,
                                int count, double* values, double* references) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= count) return;
  const std::int64_t i = rows[s];
  const std::int64_t j = cols[s];
  double sum = 0;
  for (std::int64_t l = 0; l < k; ++l) sum += Load(a + l + i * k) * Load(b + l + j * k);
  references[s] = sum;
  values[s] = Load(d + i + j * m);
}

__device__ inline bool Differs(double x, double r, double rel_tol) {
  return !(fabs(x - r) <= rel_tol * fmax(fabs(r), 1.0));  // NaN compares false: counted
}

// Compares every output buffer with the reference in one pass over memory: each 16-byte
// vector of the reference is read once for all buffers (one kernel per buffer read it once
// per buffer), and the loads are 16 bytes wide; the elements past the last whole vector one
// at a time. cudaMalloc aligns every buffer to 256 bytes.
template <typename Out>
__global__ void CountDiffAllKernel(const Out* const* outs, int buffers, const Out* reference,
                                   std::int64_t count, double rel_tol,
                                   unsigned long long* wrong) {  // NOLINT
  constexpr int kPerVector = static_cast<int>(sizeof(uint4) / sizeof(Out));
  const std::int64_t vectors = count / kPerVector;
  const std::int64_t first = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  unsigned long long local = 0;  // NOLINT
  for (std::int64_t i = vectors * kPerVector + first; i < count; i += stride) {
    for (int b = 0; b < buffers; ++b)
      local += Differs(Load(outs[b] + i), Load(reference + i), rel_tol);
  }
  for (std::int64_t v = first; v < vectors; v += stride) {
    const uint4 ref_bits = reinterpret_cast<const uint4*>(reference)[v];
    const Out* r = reinterpret_cast<const Out*>(&ref_bits);
    for (int b = 0; b < buffers; ++b) {
      const uint4 out_bits = reinterpret_cast<const uint4*>(outs[b])[v];
      const Out* x = reinterpret_cast<const Out*>(&out_bits);
      for (int e = 0; e < kPerVector; ++e) local += Differs(Load(x + e), Load(r + e), rel_tol);
    }
  }
  if (local != 0) atomicAdd(wrong, local);
}

struct LtTypes {
  cudaDataType_t in;
  cudaDataType_t out;
  cublasComputeType_t compute;
  cudaDataType_t scale;
};

LtTypes TypesFor(gpu::GemmDtype dtype) {
  switch (dtype) {
    case gpu::GemmDtype::kBf16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case gpu::GemmDtype::kFp16:
      return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case gpu::GemmDtype::kFp8E4m3:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case gpu::GemmDtype::kTf32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F};
    case gpu::GemmDtype::kFp64:
      return {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F};
  }
  return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
}

// Calls fn(In*, Out*) with the dtype's element types.
template <typename Fn>
void WithTypes(gpu::GemmDtype dtype, Fn&& fn) {
  switch (dtype) {
    case gpu::GemmDtype::kBf16:
      fn(static_cast<__nv_bfloat16*>(nullptr), static_cast<__nv_bfloat16*>(nullptr));
      break;
    case gpu::GemmDtype::kFp16:
      fn(static_cast<__half*>(nullptr), static_cast<__half*>(nullptr));
      break;
    case gpu::GemmDtype::kFp8E4m3:
      fn(static_cast<__nv_fp8_e4m3*>(nullptr), static_cast<__nv_bfloat16*>(nullptr));
      break;
    case gpu::GemmDtype::kTf32:
      fn(static_cast<float*>(nullptr), static_cast<float*>(nullptr));
      break;
    case gpu::GemmDtype::kFp64:
      fn(static_cast<double*>(nullptr), static_cast<double*>(nullptr));
      break;
  }
}

class GemmRunnerImpl final : public GemmRunner {
 public:
  Status Init(const GemmConfig& config) {
    config_ = config;
    RETURN_IF_ERROR(CheckDevice());
    RETURN_IF_ERROR(AllocateAndFill());
    return PickAlgorithm();
  }

  Result<double> Time(int iterations) override {
    PG_CUDA(cudaSetDevice(config_.device));
    // Behind the launch gate: the window opens once the matmuls are queued.
    return TimeBehindGate(gate_, stream_.get(), start_, stop_, "gemm",
                          [&] { return QueueMatmuls(iterations); });
  }

  Result<GemmSample> Sample(int count) override {
    PG_CUDA(cudaSetDevice(config_.device));
    count = std::max(count, 1);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(count));
    std::vector<std::int64_t> cols(static_cast<std::size_t>(count));
    for (int s = 0; s < count; ++s) {
      const std::uint64_t r = Mix64(config_.seed * 1000003ULL + static_cast<std::uint64_t>(s));
      rows[s] = static_cast<std::int64_t>(r % static_cast<std::uint64_t>(config_.m));
      cols[s] = static_cast<std::int64_t>((r >> 32) % static_cast<std::uint64_t>(config_.n));
    }
    // Edges are where tiling bugs show: always look at the last row and column.
    rows[0] = config_.m - 1;
    if (count > 1) cols[1] = config_.n - 1;
    ASSIGN_OR_RETURN(DeviceBuffer d_rows, DeviceBuffer::Allocate(sizeof(std::int64_t) * count));
    ASSIGN_OR_RETURN(DeviceBuffer d_cols, DeviceBuffer::Allocate(sizeof(std::int64_t) * count));
    ASSIGN_OR_RETURN(DeviceBuffer d_out, DeviceBuffer::Allocate(sizeof(double) * 2 * count));
    // Ordered before the reference kernel on the same stream (rows and cols outlive the
    // synchronisation below).
    PG_CUDA(cudaMemcpyAsync(d_rows.get(), rows.data(), sizeof(std::int64_t) * count,
                            cudaMemcpyHostToDevice, stream_.get()));
    PG_CUDA(cudaMemcpyAsync(d_cols.get(), cols.data(), sizeof(std::int64_t) * count,
                            cudaMemcpyHostToDevice, stream_.get()));
    WithTypes(config_.dtype, [&](auto* in, auto* out) {
      using In = std::remove_pointer_t<decltype(in)>;
      using Out = std::remove_pointer_t<decltype(out)>;
      ReferenceKernel<In, Out><<<(count + 127) / 128, 128, 0, stream_.get()>>>(
          a_.as<In>(), b_.as<In>(), outputs_[0].as<Out>(), config_.m, config_.k,
          d_rows.as<std::int64_t>(), d_cols.as<std::int64_t>(), count, d_out.as<double>(),
          d_out.as<double>() + count);
    });
    PG_CUDA(cudaGetLastError());
    std::vector<double> host(2 * static_cast<std::size_t>(count));
    PG_CUDA(cudaMemcpyAsync(host.data(), d_out.get(), sizeof(double) * host.size(),
                            cudaMemcpyDeviceToHost, stream_.get()));
    PG_CUDA(cudaStreamSynchronize(stream_.get()));
    GemmSample sample;
    sample.values.assign(host.begin(), host.begin() + count);
    sample.references.assign(host.begin() + count, host.end());
    return sample;
  }

  Status Snapshot() override {
    PG_CUDA(cudaSetDevice(config_.device));
    if (snapshot_.get() == nullptr) {
      ASSIGN_OR_RETURN(snapshot_, DeviceBuffer::Allocate(outputs_[0].bytes()));
    }
    PG_CUDA(cudaMemcpyAsync(snapshot_.get(), outputs_[0].get(), outputs_[0].bytes(),
                            cudaMemcpyDeviceToDevice, stream_.get()));
    PG_CUDA(cudaStreamSynchronize(stream_.get()));
    return Status::Ok();
  }

  Result<std::int64_t> CountDifferences(double rel_tol) override {
    PG_CUDA(cudaSetDevice(config_.device));
    if (snapshot_.get() == nullptr) return FailedPrecondition("CountDifferences before Snapshot");
    PG_CUDA(cudaMemsetAsync(counter_.get(), 0, counter_.bytes(), stream_.get()));
    RETURN_IF_ERROR(QueueCompare(rel_tol));
    return ReadCounter();
  }

  Result<CheckedPasses> RunCheckedPasses(int passes, double rel_tol) override {
    PG_CUDA(cudaSetDevice(config_.device));
    if (snapshot_.get() == nullptr) return FailedPrecondition("RunCheckedPasses before Snapshot");
    passes = std::max(passes, 1);
    // Per pass: [start] matmuls [matmuls done] compare; the last compare ends at `end`.
    const std::size_t needed = 2 * static_cast<std::size_t>(passes) + 1;
    while (pass_events_.size() < needed) {
      ASSIGN_OR_RETURN(Event e, Event::Create());
      pass_events_.push_back(std::move(e));
    }
    cudaStream_t s = stream_.get();
    PG_CUDA(cudaMemsetAsync(counter_.get(), 0, counter_.bytes(), s));
    // Behind the launch gate: the passes start once queued (or on a backlog of
    // LaunchGate::kMaxBacklog operations while the host queues the rest).
    RETURN_IF_ERROR(gate_.Hold(s));
    const Status queued = [&]() -> Status {
      for (int p = 0; p < passes; ++p) {
        PG_CUDA(cudaEventRecord(pass_events_[2 * p].get(), s));
        RETURN_IF_ERROR(QueueMatmuls(config_.output_buffers));
        PG_CUDA(cudaEventRecord(pass_events_[2 * p + 1].get(), s));
        RETURN_IF_ERROR(QueueCompare(rel_tol));
        gate_.Queued(3);
      }
      PG_CUDA(cudaEventRecord(pass_events_[needed - 1].get(), s));
      return Status::Ok();
    }();
    gate_.Open();
    if (!queued.ok()) {
      (void)cudaStreamSynchronize(s);
      return queued;
    }
    ASSIGN_OR_RETURN(const std::int64_t wrong, ReadCounter());
    RETURN_IF_ERROR(gate_.CheckOpenedInTime("burn"));
    CheckedPasses out;
    out.wrong = wrong;
    out.matmuls = static_cast<std::int64_t>(passes) * config_.output_buffers;
    for (int p = 0; p < passes; ++p) {
      float ms = 0;
      PG_CUDA(cudaEventElapsedTime(&ms, pass_events_[2 * p].get(), pass_events_[2 * p + 1].get()));
      out.matmul_seconds += static_cast<double>(ms) / 1e3;
    }
    float total_ms = 0;
    PG_CUDA(cudaEventElapsedTime(&total_ms, pass_events_[0].get(), pass_events_[needed - 1].get()));
    out.total_seconds = static_cast<double>(total_ms) / 1e3;
    return out;
  }

  std::string Description() const override {
    int id = 0;
    int tile = 0;
    int split_k = 0;
    int stages = 0;
    std::size_t written = 0;
    (void)cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id),
                                               &written);
    (void)cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                               sizeof(tile), &written);
    (void)cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split_k,
                                               sizeof(split_k), &written);
    (void)cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                               sizeof(stages), &written);
    return "cuBLASLt " + std::to_string(cublasLtGetVersion()) + ", TN, algo " + std::to_string(id) +
           " tile " + std::to_string(tile) + " splitK " + std::to_string(split_k) + " stages " +
           std::to_string(stages) + " (fastest of " + std::to_string(tried_) +
           " heuristic candidates), workspace " + gpu::FormatBytes(config_.workspace_bytes);
  }

 private:
  // The device is there and has the dtype's compute capability; the shape is sound.
  Status CheckDevice() {
    const GemmConfig& config = config_;
    RETURN_IF_ERROR(RequireCudaDevice(config.device));
    const auto info = std::find_if(gpu::GemmDtypes().begin(), gpu::GemmDtypes().end(),
                                   [&](const auto& d) { return d.dtype == config.dtype; });
    info_ = *info;
    int major = 0;
    int minor = 0;
    PG_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, config.device));
    PG_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, config.device));
    if (!gpu::GemmDtypeSupported(info_, major, minor)) {
      return FailedPrecondition(std::string(info_.name) + " needs compute capability " +
                                std::to_string(info_.min_cc / 10) + "." +
                                std::to_string(info_.min_cc % 10) + ", device has " +
                                std::to_string(major) + "." + std::to_string(minor));
    }
    if (config.m <= 0 || config.n <= 0 || config.k <= 0 || config.output_buffers < 1) {
      return InvalidArgument("gemm shape and output_buffers must be positive");
    }
    return Status::Ok();
  }

  // A, B (filled from the seed), the output buffers, the workspace and the events, all on
  // stream_.
  Status AllocateAndFill() {
    const GemmConfig& config = config_;
    const std::int64_t a_count = config.k * config.m;
    const std::int64_t b_count = config.k * config.n;
    const std::int64_t c_count = config.m * config.n;
    // Every copy, memset and kernel of this runner goes on stream_: cudaMemset and cudaMemcpy
    // would go on the legacy stream, which the non-blocking stream_ does not wait for.
    ASSIGN_OR_RETURN(stream_, Stream::Create());
    ASSIGN_OR_RETURN(a_, DeviceBuffer::Allocate(a_count * info_.input_bytes));
    ASSIGN_OR_RETURN(b_, DeviceBuffer::Allocate(b_count * info_.input_bytes));
    for (int i = 0; i < config.output_buffers; ++i) {
      ASSIGN_OR_RETURN(DeviceBuffer d, DeviceBuffer::Allocate(c_count * info_.output_bytes));
      PG_CUDA(cudaMemsetAsync(d.get(), 0, d.bytes(), stream_.get()));
      outputs_.push_back(std::move(d));
    }
    ASSIGN_OR_RETURN(workspace_, DeviceBuffer::Allocate(config.workspace_bytes));
    ASSIGN_OR_RETURN(counter_, DeviceBuffer::Allocate(sizeof(unsigned long long)));  // NOLINT
    {
      std::vector<const void*> pointers;
      for (const DeviceBuffer& d : outputs_) pointers.push_back(d.get());
      ASSIGN_OR_RETURN(output_table_, DeviceBuffer::Allocate(sizeof(void*) * pointers.size()));
      PG_CUDA(cudaMemcpyAsync(output_table_.get(), pointers.data(), sizeof(void*) * pointers.size(),
                              cudaMemcpyHostToDevice, stream_.get()));
      PG_CUDA(cudaStreamSynchronize(stream_.get()));  // `pointers` goes out of scope
      int sms = 0;
      PG_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, config.device));
      compare_grid_ = std::max(1, sms) * 4;
    }
    ASSIGN_OR_RETURN(start_, Event::Create());
    ASSIGN_OR_RETURN(stop_, Event::Create());
    ASSIGN_OR_RETURN(gate_, LaunchGate::Create());

    // Different seeds for A and B: A == B would make C symmetric-ish and easy to fake.
    WithTypes(config.dtype, [&](auto* in, auto*) {
      using In = std::remove_pointer_t<decltype(in)>;
      FillNormalKernel<In>
          <<<1024, 256, 0, stream_.get()>>>(a_.as<In>(), a_count, Mix64(config.seed));
      FillNormalKernel<In>
          <<<1024, 256, 0, stream_.get()>>>(b_.as<In>(), b_count, Mix64(config.seed + 1));
    });
    PG_CUDA(cudaGetLastError());
    PG_CUDA(cudaStreamSynchronize(stream_.get()));

    return Status::Ok();
  }

  // cuBLASLt's descriptors for the shape, and the fastest of its candidate algorithms, timed
  // on this device.
  Status PickAlgorithm() {
    const GemmConfig& config = config_;
    const LtTypes t = TypesFor(config.dtype);
    PG_LT(cublasLtCreate(lt_.out()));
    RETURN_IF_ERROR(DescribeTnMatmul(t.compute, t.scale, t.in, t.out, config.m, config.n, config.k,
                                     &op_, &a_desc_, &b_desc_, &c_desc_));

    LtPreference preference;
    PG_LT(cublasLtMatmulPreferenceCreate(preference.out()));
    const std::uint64_t workspace = static_cast<std::uint64_t>(config.workspace_bytes);
    PG_LT(cublasLtMatmulPreferenceSetAttribute(
        preference.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
    if (config.deterministic) {
      const std::uint32_t mask =
          CUBLASLT_REDUCTION_SCHEME_MASK & ~CUBLASLT_REDUCTION_SCHEME_INPLACE;
      PG_LT(cublasLtMatmulPreferenceSetAttribute(
          preference.get(), CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof(mask)));
    }
    const int wanted = std::clamp(config.algo_candidates, 1, 32);
    std::vector<cublasLtMatmulHeuristicResult_t> results(wanted);
    int returned = 0;
    PG_LT(cublasLtMatmulAlgoGetHeuristic(lt_.get(), op_.get(), a_desc_.get(), b_desc_.get(),
                                         c_desc_.get(), c_desc_.get(), preference.get(), wanted,
                                         results.data(), &returned));
    if (returned <= 0) {
      return FailedPrecondition("cuBLASLt has no algorithm for " + std::string(info_.name) + " " +
                                std::to_string(config.m) + "x" + std::to_string(config.n) + "x" +
                                std::to_string(config.k));
    }
    // Heuristics rank by a model; timing the top few on the real device finds the fastest.
    double best = std::numeric_limits<double>::infinity();
    for (int i = 0; i < returned; ++i) {
      if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
      algo_ = results[i].algo;
      if (!Time(1).ok()) continue;  // warm-up; an algorithm that fails here is skipped
      auto seconds = Time(3);
      if (seconds.ok() && *seconds < best) {
        best = *seconds;
        best_index_ = i;
      }
    }
    if (best_index_ < 0) return Internal("every cuBLASLt candidate algorithm failed to run");
    algo_ = results[best_index_].algo;
    tried_ = returned;
    // The next Time() writes buffer 0 with the chosen algorithm: Sample() and Snapshot() read
    // buffer 0, and must not see a candidate's output.
    next_output_ = 0;
    return Status::Ok();
  }

  // Queues `iterations` matmuls on stream_, into the output buffers in turn. Non-blocking.
  Status QueueMatmuls(int iterations) {
    static constexpr float kAlpha32 = 1.0f;
    static constexpr float kBeta32 = 0.0f;
    static constexpr double kAlpha64 = 1.0;
    static constexpr double kBeta64 = 0.0;
    const bool fp64 = config_.dtype == gpu::GemmDtype::kFp64;
    const void* alpha = fp64 ? static_cast<const void*>(&kAlpha64) : &kAlpha32;
    const void* beta = fp64 ? static_cast<const void*>(&kBeta64) : &kBeta32;
    for (int it = 0; it < iterations; ++it) {
      void* d = outputs_[static_cast<std::size_t>(next_output_)].get();
      next_output_ = (next_output_ + 1) % config_.output_buffers;
      PG_LT(cublasLtMatmul(lt_.get(), op_.get(), alpha, a_.get(), a_desc_.get(), b_.get(),
                           b_desc_.get(), beta, d, c_desc_.get(), d, c_desc_.get(), &algo_,
                           workspace_.get(), workspace_.bytes(), stream_.get()));
      gate_.Queued(2);  // cuBLASLt may add a split-K reduction kernel
    }
    return Status::Ok();
  }

  // Queues one comparison of every output buffer with the snapshot, adding to counter_.
  Status QueueCompare(double rel_tol) {
    WithTypes(config_.dtype, [&](auto*, auto* out) {
      using Out = std::remove_pointer_t<decltype(out)>;
      CountDiffAllKernel<Out><<<compare_grid_, 256, 0, stream_.get()>>>(
          output_table_.as<const Out*>(), config_.output_buffers, snapshot_.as<Out>(),
          config_.m * config_.n, rel_tol, counter_.as<unsigned long long>());  // NOLINT
    });
    PG_CUDA(cudaGetLastError());
    return Status::Ok();
  }

  // Reads counter_ once the stream has drained. Blocking.
  Result<std::int64_t> ReadCounter() {
    unsigned long long wrong = 0;  // NOLINT
    PG_CUDA(cudaMemcpyAsync(&wrong, counter_.get(), sizeof(wrong), cudaMemcpyDeviceToHost,
                            stream_.get()));
    PG_CUDA(cudaStreamSynchronize(stream_.get()));
    return static_cast<std::int64_t>(wrong);
  }

  GemmConfig config_;
  gpu::GemmDtypeInfo info_{};
  DeviceBuffer a_, b_, workspace_, counter_, snapshot_, output_table_;
  std::vector<DeviceBuffer> outputs_;
  int compare_grid_ = 0;
  std::vector<Event> pass_events_;
  int next_output_ = 0;
  Stream stream_;
  Event start_, stop_;
  LaunchGate gate_;
  LtContext lt_;
  LtMatmulDesc op_;
  LtLayout a_desc_, b_desc_, c_desc_;
  cublasLtMatmulAlgo_t algo_{};
  int best_index_ = -1;
  int tried_ = 0;
};

}  // namespace

Result<std::unique_ptr<GemmRunner>> CreateGemmRunner(const GemmConfig& config) {
  auto impl = std::make_unique<GemmRunnerImpl>();
  RETURN_IF_ERROR(impl->Init(config));
  return std::unique_ptr<GemmRunner>(std::move(impl));
}

}  // namespace perfgate::kernels::cuda
