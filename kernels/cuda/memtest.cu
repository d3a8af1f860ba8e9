// memtest's device kernels: a grid-stride write of the pattern, then a grid-stride verify that
// counts mismatching words with one atomic per mismatch and keeps the first ones in a small
// device list; March C-'s elements one kernel each, from the definitions the host tests run. The
// pattern is a function of the index (memtest_patterns.h), so nothing but the region itself is
// read.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/device.h"
#include "kernels/cuda/launch_gate.cuh"
#include "kernels/cuda/memtest.h"

namespace perfgate::kernels::cuda {
namespace {

using memtest::MarchElement;
using memtest::Pattern;
using memtest::PatternWord;

// Records one wrong word: counted, and kept while there is room in the list.
__device__ inline void RecordError(std::uint64_t index, std::uint64_t expected, std::uint64_t found,
                                   unsigned long long* errors,  // NOLINT
                                   MemWordError* listed, int max_listed) {
  const unsigned long long slot = atomicAdd(errors, 1ULL);   // NOLINT
  if (slot < static_cast<unsigned long long>(max_listed)) {  // NOLINT
    listed[slot] = MemWordError{index * sizeof(std::uint64_t), expected, found};
  }
}

// The region as MarchVisit's memory. volatile: every read goes to memory, never to a value the
// compiler kept from a write.
struct DeviceWords {
  volatile std::uint64_t* words;
  __device__ std::uint64_t Read(std::uint64_t i) const { return words[i]; }
  __device__ void Write(std::uint64_t i, std::uint64_t v) const { words[i] = v; }
};

// One March C- element over the region (memtest_patterns.h). Each thread visits its words of
// the grid-stride loop in the element's order (⇓: from the top of the region down), so a
// thread's own words are in order; across threads of one kernel the order is not defined.
__global__ void MarchElementKernel(std::uint64_t* words, std::uint64_t n, MarchElement element,
                                   unsigned long long* errors,  // NOLINT
                                   MemWordError* listed, int max_listed) {
  DeviceWords memory{words};
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t p = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; p < n;
       p += stride) {
    const std::uint64_t i = memtest::MarchIndex(element.order, p, n);
    std::uint64_t expected = 0;
    std::uint64_t found = 0;
    if (memtest::MarchVisit(element, memory, i, &expected, &found)) {
      RecordError(i, expected, found, errors, listed, max_listed);
    }
  }
}

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
    if (found != expected) RecordError(i, expected, found, errors, listed, max_listed);
  }
}

class CudaMemTester final : public MemTester {
 public:
  CudaMemTester(int device, DeviceBuffer region, DeviceBuffer counters, int grid, Stream stream,
                Event start, Event stop, LaunchGate gate)
      : device_(device),
        region_(std::move(region)),
        counters_(std::move(counters)),
        grid_(grid),
        stream_(std::move(stream)),
        start_(std::move(start)),
        stop_(std::move(stop)),
        gate_(std::move(gate)) {}

  Result<MemStepResult> RunStep(Pattern pattern, int step, std::uint64_t seed, int max_listed,
                                double hold_seconds) override {
    PG_CUDA(cudaSetDevice(device_));
    max_listed = std::clamp(max_listed, 0, kMaxListed);
    const std::uint64_t n = region_.bytes() / sizeof(std::uint64_t);
    auto* errors = counters_.as<unsigned long long>();  // NOLINT
    auto* listed = reinterpret_cast<MemWordError*>(counters_.as<char>() + 64);
    auto* words = region_.as<std::uint64_t>();
    cudaStream_t s = stream_.get();
    PG_CUDA(cudaMemsetAsync(errors, 0, sizeof(*errors), s));
    const bool march = pattern == Pattern::kMarchCMinus;
    if (march && (step < 0 || step >= memtest::kMarchCMinusElements)) {
      return InvalidArgument("memtest: March C- has no element " + std::to_string(step));
    }
    // Each kernel is timed alone behind the launch gate; the wait between them is not timed.
    double seconds = 0;
    if (!march) {
      // Blocks until the write is done everywhere.
      ASSIGN_OR_RETURN(seconds,
                       TimeBehindGate(gate_, s, start_, stop_, "memtest write", [&]() -> Status {
                         WritePattern<<<grid_, kBlock, 0, s>>>(words, n, pattern, step, seed);
                         return CudaStatus(cudaGetLastError(), "memtest write kernel");
                       }));
    }
    if (hold_seconds > 0) {
      PG_CUDA(cudaStreamSynchronize(s));
      std::this_thread::sleep_for(std::chrono::duration<double>(hold_seconds));
    }
    ASSIGN_OR_RETURN(const double read_seconds,
                     TimeBehindGate(gate_, s, start_, stop_, "memtest read", [&]() -> Status {
                       if (march) {
                         MarchElementKernel<<<grid_, kBlock, 0, s>>>(
                             words, n, memtest::kMarchCMinus[step], errors, listed, max_listed);
                       } else {
                         VerifyPattern<<<grid_, kBlock, 0, s>>>(words, n, pattern, step, seed,
                                                                errors, listed, max_listed);
                       }
                       return CudaStatus(cudaGetLastError(), "memtest read kernel");
                     }));
    seconds += read_seconds;
    PG_CUDA(cudaGetLastError());
    MemStepResult out;
    unsigned long long count = 0;  // NOLINT
    PG_CUDA(cudaMemcpyAsync(&count, errors, sizeof(count), cudaMemcpyDeviceToHost, s));
    PG_CUDA(cudaStreamSynchronize(s));
    out.errors = count;
    const auto keep = static_cast<std::size_t>(std::min<unsigned long long>(
        count, static_cast<unsigned long long>(max_listed)));  // NOLINT
    out.listed.resize(keep);
    if (keep > 0) {
      PG_CUDA(cudaMemcpyAsync(out.listed.data(), listed, keep * sizeof(MemWordError),
                              cudaMemcpyDeviceToHost, s));
      PG_CUDA(cudaStreamSynchronize(s));
    }
    out.seconds = seconds;
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
  Stream stream_;
  Event start_, stop_;
  LaunchGate gate_;
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
      ASSIGN_OR_RETURN(Stream stream, Stream::Create());
      ASSIGN_OR_RETURN(Event start, Event::Create());
      ASSIGN_OR_RETURN(Event stop, Event::Create());
      ASSIGN_OR_RETURN(LaunchGate gate, LaunchGate::Create());
      return std::unique_ptr<MemTester>(std::make_unique<CudaMemTester>(
          device, std::move(region).value(), std::move(counters), sms * 8, std::move(stream),
          std::move(start), std::move(stop), std::move(gate)));
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
