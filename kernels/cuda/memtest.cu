// memtest's device kernels: a grid-stride write of the pattern, then a grid-stride verify that
// counts mismatching words with one atomic per mismatch and keeps the first ones in a small
// device list. The pattern is a function of the index (memtest_patterns.h), so nothing but the
// region itself is read.
#include <algorithm>
#include <memory>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/device.h"
#include "kernels/cuda/memtest.h"

namespace perfgate::kernels::cuda {
namespace {

using memtest::Pattern;
using memtest::PatternWord;

__global__ void WritePattern(std::uint64_t* words, std::uint64_t n, Pattern p, int step,
                             std::uint64_t seed) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    words[i] = PatternWord(p, step, i, seed);
  }
}

__global__ void VerifyPattern(const std::uint64_t* words, std::uint64_t n, Pattern p, int step,
                              std::uint64_t seed, unsigned long long* errors,  // NOLINT
                              MemWordError* listed, int max_listed) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    // volatile: read the memory, not a value the compiler kept from the write kernel.
    const std::uint64_t found = *static_cast<const volatile std::uint64_t*>(words + i);
    const std::uint64_t expected = PatternWord(p, step, i, seed);
    if (found != expected) {
      const unsigned long long slot = atomicAdd(errors, 1ULL);   // NOLINT
      if (slot < static_cast<unsigned long long>(max_listed)) {  // NOLINT
        listed[slot] = MemWordError{i * sizeof(std::uint64_t), expected, found};
      }
    }
  }
}

class CudaMemTester final : public MemTester {
 public:
  CudaMemTester(int device, DeviceBuffer region, DeviceBuffer counters, int grid)
      : device_(device), region_(std::move(region)), counters_(std::move(counters)), grid_(grid) {}

  Result<MemStepResult> RunStep(Pattern pattern, int step, std::uint64_t seed,
                                int max_listed) override {
    PG_CUDA(cudaSetDevice(device_));
    max_listed = std::clamp(max_listed, 0, kMaxListed);
    const std::uint64_t n = region_.bytes() / sizeof(std::uint64_t);
    auto* errors = counters_.as<unsigned long long>();  // NOLINT
    auto* listed = reinterpret_cast<MemWordError*>(counters_.as<char>() + 64);
    PG_CUDA(cudaMemset(errors, 0, sizeof(*errors)));
    cudaEvent_t start = nullptr;
    cudaEvent_t stop = nullptr;
    PG_CUDA(cudaEventCreate(&start));
    PG_CUDA(cudaEventCreate(&stop));
    cudaEventRecord(start);
    WritePattern<<<grid_, kBlock>>>(region_.as<std::uint64_t>(), n, pattern, step, seed);
    VerifyPattern<<<grid_, kBlock>>>(region_.as<std::uint64_t>(), n, pattern, step, seed, errors,
                                     listed, max_listed);
    cudaEventRecord(stop);
    const cudaError_t rc = cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    PG_CUDA(rc);
    PG_CUDA(cudaGetLastError());
    MemStepResult out;
    unsigned long long count = 0;  // NOLINT
    PG_CUDA(cudaMemcpy(&count, errors, sizeof(count), cudaMemcpyDeviceToHost));
    out.errors = count;
    const auto keep = static_cast<std::size_t>(std::min<unsigned long long>(
        count, static_cast<unsigned long long>(max_listed)));  // NOLINT
    out.listed.resize(keep);
    if (keep > 0) {
      PG_CUDA(cudaMemcpy(out.listed.data(), listed, keep * sizeof(MemWordError),
                         cudaMemcpyDeviceToHost));
    }
    out.seconds = ms / 1e3;
    return out;
  }

  std::int64_t Bytes() const override { return static_cast<std::int64_t>(region_.bytes()); }

  static constexpr int kBlock = 256;
  static constexpr int kMaxListed = 1024;

 private:
  int device_;
  DeviceBuffer region_;
  DeviceBuffer counters_;
  int grid_;
};

}  // namespace

Result<std::unique_ptr<MemTester>> CreateMemTester(int device, double fraction,
                                                   std::int64_t max_bytes) {
  RETURN_IF_ERROR(RequireCudaDevice(device));
  ASSIGN_OR_RETURN(DeviceBuffer counters,
                   DeviceBuffer::Allocate(64 + CudaMemTester::kMaxListed * sizeof(MemWordError)));
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  PG_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  auto bytes = static_cast<std::int64_t>(static_cast<double>(free_bytes) * fraction);
  if (max_bytes > 0) bytes = std::min(bytes, max_bytes);
  bytes -= bytes % 4096;
  // Free memory moves (other contexts, the allocator's own reserve): step down until it fits.
  for (int attempt = 0; attempt < 20 && bytes >= 4096; ++attempt) {
    auto region = DeviceBuffer::Allocate(static_cast<std::size_t>(bytes));
    if (region.ok()) {
      int sms = 0;
      PG_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
      return std::unique_ptr<MemTester>(std::make_unique<CudaMemTester>(
          device, std::move(region).value(), std::move(counters), sms * 8));
    }
    cudaGetLastError();  // clear the allocation failure
    bytes = static_cast<std::int64_t>(static_cast<double>(bytes) * 0.95);
    bytes -= bytes % 4096;
  }
  return Status{Code::kResourceExhausted, "memtest: could not allocate " + std::to_string(bytes) +
                                              " bytes of device memory (free " +
                                              std::to_string(free_bytes) + ")"};
}

}  // namespace perfgate::kernels::cuda
