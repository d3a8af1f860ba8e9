// cuBLASLt is opened when a GEMM first needs it (kernels/cuda/cublaslt_loader.cc): a worker
// process that runs no GEMM does not pay the library's start-up, and one that does calls the
// real library. Runs without a GPU: the version and status strings need no device.
#include <fstream>
#include <string>

#include <cublasLt.h>
#include <gtest/gtest.h>

namespace {

bool CublasLtIsMapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libcublasLt.so") != std::string::npos) return true;
  }
  return false;
}

TEST(CublasLtLoader, TheLibraryIsOpenedOnFirstUseNotAtStart) {
  EXPECT_FALSE(CublasLtIsMapped());
  // The header's version: the library opened is the one the code was compiled against.
  EXPECT_EQ(cublasLtGetVersion() / 10000, static_cast<size_t>(CUBLAS_VER_MAJOR));
  EXPECT_TRUE(CublasLtIsMapped());
}

TEST(CublasLtLoader, CallsReachTheLibrary) {
  // The library's own words for a status, not the loader's "could not be loaded".
  const std::string text = cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(text, "the requested functionality is not supported");
  cublasLtMatmulPreference_t pref = nullptr;
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
  EXPECT_NE(pref, nullptr);
  EXPECT_EQ(cublasLtMatmulPreferenceDestroy(pref), CUBLAS_STATUS_SUCCESS);
}

}  // namespace
