// Private to kernels/workloads/*.cu: one cuBLASLt matmul plan (layout TN, C = A^T B, the
// layout every dtype supports; see kernels/cuda/gemm.cu) for the 16-bit dtypes the workloads
// use, and fills/gathers of 16-bit buffers.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/formulas.h"
#include "kernels/cuda/lt_handles.cuh"

namespace perfgate::kernels::workloads {

using cuda::LtContext;
using LtDesc = cuda::LtMatmulDesc;
using cuda::LtLayout;
using LtPref = cuda::LtPreference;

inline cudaDataType_t DataType(gpu::GemmDtype dtype) {
  return dtype == gpu::GemmDtype::kFp16 ? CUDA_R_16F : CUDA_R_16BF;
}

// C (m x n, column-major) = A^T B with A k x m and B k x n, fp32 accumulation.
class LtPlan {
 public:
  Status Init(cublasLtHandle_t lt, gpu::GemmDtype dtype, std::int64_t m, std::int64_t n,
              std::int64_t k, std::size_t workspace_bytes) {
    lt_ = lt;
    const cudaDataType_t t = DataType(dtype);
    RETURN_IF_ERROR(
        cuda::DescribeTnMatmul(CUBLAS_COMPUTE_32F, CUDA_R_32F, t, t, m, n, k, &op_, &a_, &b_, &c_));
    LtPref preference;
    PG_LT(cublasLtMatmulPreferenceCreate(preference.out()));
    const std::uint64_t workspace = workspace_bytes;
    PG_LT(cublasLtMatmulPreferenceSetAttribute(
        preference.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    PG_LT(cublasLtMatmulAlgoGetHeuristic(lt, op_.get(), a_.get(), b_.get(), c_.get(), c_.get(),
                                         preference.get(), 1, &result, &returned));
    if (returned <= 0) {
      return FailedPrecondition("cuBLASLt has no algorithm for " + std::to_string(m) + "x" +
                                std::to_string(n) + "x" + std::to_string(k));
    }
    algo_ = result.algo;
    return Status::Ok();
  }

  // Queues the matmul on `stream`. Non-blocking.
  Status Run(const void* a, const void* b, void* c, void* workspace, std::size_t workspace_bytes,
             cudaStream_t stream) const {
    static constexpr float kAlpha = 1.0f;
    static constexpr float kBeta = 0.0f;
    PG_LT(cublasLtMatmul(lt_, op_.get(), &kAlpha, a, a_.get(), b, b_.get(), &kBeta, c, c_.get(), c,
                         c_.get(), &algo_, workspace, workspace_bytes, stream));
    return Status::Ok();
  }

 private:
  cublasLtHandle_t lt_ = nullptr;
  LtDesc op_;
  LtLayout a_, b_, c_;
  cublasLtMatmulAlgo_t algo_{};
};

__device__ inline void StoreValue(__nv_bfloat16* p, float v) { *p = __float2bfloat16(v); }
__device__ inline void StoreValue(__half* p, float v) { *p = __float2half(v); }
__device__ inline float LoadValue(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ inline float LoadValue(const __half* p) { return __half2float(*p); }

// out[i] = uniform in [-1, 1) from (seed, i): random data, so the tensor cores toggle the bits
// real data toggles.
template <typename T>
__global__ void FillUniformKernel(T* out, std::int64_t count, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t bits = cuda::Mix64(seed ^ cuda::Mix64(static_cast<std::uint64_t>(i)));
    StoreValue(out + i, static_cast<float>(bits >> 40) * (2.0f / 16777216.0f) - 1.0f);
  }
}

template <typename T>
__global__ void GatherKernel(const T* in, const std::int64_t* indices, int count, double* out) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s < count) out[s] = LoadValue(in + indices[s]);
}

// Calls f with a T* of the dtype's element type (nullptr; for template deduction).
template <typename F>
void WithElementType(gpu::GemmDtype dtype, F&& f) {
  if (dtype == gpu::GemmDtype::kFp16) {
    f(static_cast<__half*>(nullptr));
  } else {
    f(static_cast<__nv_bfloat16*>(nullptr));
  }
}

}  // namespace perfgate::kernels::workloads
