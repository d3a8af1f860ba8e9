// cuBLASLt errors as values and move-only owners of its handles and descriptors, shared by the
// GEMM test (gemm.cu) and the workload tests (kernels/workloads/). CUDA sources only.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <string>
#include <utility>

#include "common/result.h"

namespace perfgate::kernels::cuda {

// Ok on CUBLAS_STATUS_SUCCESS, else Internal naming the call and cuBLASLt's status string.
inline Status LtStatus(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Internal(std::string(what) + ": " + cublasLtGetStatusString(status));
}
#define PG_LT(expr) RETURN_IF_ERROR(::perfgate::kernels::cuda::LtStatus((expr), #expr))

// Owns one cuBLASLt object (`Destroy` frees it); never throws.
template <typename T, cublasStatus_t (*Destroy)(T)>
class LtHandle {
 public:
  LtHandle() = default;
  LtHandle(LtHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  LtHandle& operator=(LtHandle&& o) noexcept {
    if (this != &o) {
      Release();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  ~LtHandle() { Release(); }
  T get() const { return h_; }
  // Frees what it held and returns the slot a cuBLASLt create call fills.
  T* out() {
    Release();
    return &h_;
  }

 private:
  void Release() noexcept {
    if (h_ != nullptr) (void)Destroy(h_);
    h_ = nullptr;
  }
  T h_ = nullptr;
};
using LtContext = LtHandle<cublasLtHandle_t, cublasLtDestroy>;
using LtMatmulDesc = LtHandle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using LtLayout = LtHandle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using LtPreference = LtHandle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

// The one matmul shape the tests run, C (m x n, column-major) = A^T B with A k x m and B k x n
// (layout TN, which every dtype supports): its descriptor (`compute`, `scale`) and the layouts
// of A and B (`in`) and C (`out`).
inline Status DescribeTnMatmul(cublasComputeType_t compute, cudaDataType_t scale, cudaDataType_t in,
                               cudaDataType_t out, std::int64_t m, std::int64_t n, std::int64_t k,
                               LtMatmulDesc* op, LtLayout* a, LtLayout* b, LtLayout* c) {
  PG_LT(cublasLtMatmulDescCreate(op->out(), compute, scale));
  const cublasOperation_t trans_a = CUBLAS_OP_T;
  const cublasOperation_t trans_b = CUBLAS_OP_N;
  PG_LT(cublasLtMatmulDescSetAttribute(op->get(), CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                       sizeof(trans_a)));
  PG_LT(cublasLtMatmulDescSetAttribute(op->get(), CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                       sizeof(trans_b)));
  PG_LT(cublasLtMatrixLayoutCreate(a->out(), in, k, m, k));
  PG_LT(cublasLtMatrixLayoutCreate(b->out(), in, k, n, k));
  PG_LT(cublasLtMatrixLayoutCreate(c->out(), out, m, n, m));
  return Status::Ok();
}

}  // namespace perfgate::kernels::cuda
