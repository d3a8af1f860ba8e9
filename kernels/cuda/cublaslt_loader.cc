// cuBLASLt, loaded when the first GEMM needs it rather than when the worker starts.
//
// libcublasLt's static initialisers take about 0.4 s of CPU at every process start, whether or
// not the process runs a GEMM: every worker pod, every `perfgate-worker list`, every per-rail
// child process paid it. The definitions below carry the names and types that cublasLt.h
// declares (the compiler checks them against it), so the GEMM code calls them unchanged; on the
// first call the library is opened with dlopen and each call goes to its own function. The
// binary does not link libcublasLt. Where the library cannot be opened, every call returns
// CUBLAS_STATUS_NOT_INITIALIZED and cublasLtGetStatusString says which library is missing and
// why, so a GEMM test errors with that reason instead of the worker failing to start.
#include <dlfcn.h>

#include <cstring>
#include <string>

#include <cublasLt.h>

namespace {

struct Library {
  void* handle = nullptr;
  std::string error;  // why it could not be opened
};

const Library& CublasLt() {
  static const Library lib = [] {
    Library l;
    const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    l.handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (l.handle == nullptr) {
      const char* why = dlerror();
      l.error = "cuBLASLt could not be loaded (" + soname + "): " + (why != nullptr ? why : "?");
    }
    return l;
  }();
  return lib;
}

// The library's `name`, as a pointer of type Fn; null when the library or the name is missing.
template <typename Fn>
Fn Find(const char* name) {
  const Library& lib = CublasLt();
  void* symbol = lib.handle != nullptr ? dlsym(lib.handle, name) : nullptr;
  Fn fn = nullptr;
  static_assert(sizeof fn == sizeof symbol);
  std::memcpy(&fn, &symbol, sizeof fn);  // POSIX: a function's address, held as void*
  return fn;
}

}  // namespace

// A cublasStatus_t function: forwarded, or CUBLAS_STATUS_NOT_INITIALIZED without the library.
#define PERFGATE_LT_FORWARD(name, params, args)                     \
  cublasStatus_t name params {                                      \
    static const auto fn = Find<decltype(&(name))>(#name);          \
    return fn != nullptr ? fn args : CUBLAS_STATUS_NOT_INITIALIZED; \
  }

PERFGATE_LT_FORWARD(cublasLtCreate, (cublasLtHandle_t * handle), (handle))
PERFGATE_LT_FORWARD(cublasLtDestroy, (cublasLtHandle_t handle), (handle))
PERFGATE_LT_FORWARD(cublasLtMatmulDescCreate,
                    (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute,
                     cudaDataType_t scale),
                    (desc, compute, scale))
PERFGATE_LT_FORWARD(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
PERFGATE_LT_FORWARD(cublasLtMatmulDescSetAttribute,
                    (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                     const void* buf, size_t size),
                    (desc, attr, buf, size))
PERFGATE_LT_FORWARD(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref))
PERFGATE_LT_FORWARD(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
PERFGATE_LT_FORWARD(cublasLtMatmulPreferenceSetAttribute,
                    (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                     const void* buf, size_t size),
                    (pref, attr, buf, size))
PERFGATE_LT_FORWARD(cublasLtMatrixLayoutCreate,
                    (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows,
                     uint64_t cols, int64_t ld),
                    (layout, type, rows, cols, ld))
PERFGATE_LT_FORWARD(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
PERFGATE_LT_FORWARD(cublasLtMatmulAlgoConfigGetAttribute,
                    (const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr,
                     void* buf, size_t size, size_t* written),
                    (algo, attr, buf, size, written))
// The two below keep cublasLt.h's parameter names, which its declarations spell out.
PERFGATE_LT_FORWARD(cublasLtMatmulAlgoGetHeuristic,
                    (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                     cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                     cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                     cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                     cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount),
                    (lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference,
                     requestedAlgoCount, heuristicResultsArray, returnAlgoCount))
PERFGATE_LT_FORWARD(cublasLtMatmul,
                    (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                     const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                     cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                     cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                     const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceSizeInBytes,
                     cudaStream_t stream),
                    (lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc,
                     algo, workspace, workspaceSizeInBytes, stream))

#undef PERFGATE_LT_FORWARD

size_t cublasLtGetVersion() {
  static const auto fn = Find<decltype(&cublasLtGetVersion)>("cublasLtGetVersion");
  return fn != nullptr ? fn() : 0;
}

const char* cublasLtGetStatusString(cublasStatus_t status) {
  static const auto fn = Find<decltype(&cublasLtGetStatusString)>("cublasLtGetStatusString");
  if (fn != nullptr) return fn(status);
  const std::string& error = CublasLt().error;
  return error.empty() ? "cuBLASLt lacks cublasLtGetStatusString" : error.c_str();
}
