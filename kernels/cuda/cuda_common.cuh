// Private to kernels/cuda/*.cu: CUDA error to Status, and the move-only RAII owners of every
// CUDA resource (destructors never throw and ignore errors: after a sticky error the context is
// gone anyway, and a destructor has no one to report to).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "common/result.h"

namespace perfgate::kernels::cuda {

inline Status CudaStatus(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::Ok();
  std::string message =
      std::string(what) + ": " + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")";
  // Out of memory is a capacity problem of this run, not a broken GPU.
  if (error == cudaErrorMemoryAllocation) return {Code::kResourceExhausted, message};
  return Internal(std::move(message));
}

#define PG_CUDA(expr) RETURN_IF_ERROR(::perfgate::kernels::cuda::CudaStatus((expr), #expr))

// CUDA memory owned by one object; `Traits` says how it is allocated and freed.
template <typename Traits>
class CudaMemory {
 public:
  CudaMemory() = default;
  static Result<CudaMemory> Allocate(std::size_t bytes) {
    void* p = nullptr;
    RETURN_IF_ERROR(CudaStatus(Traits::Alloc(&p, bytes == 0 ? 1 : bytes), Traits::kWhat));
    return CudaMemory(p, bytes);
  }
  CudaMemory(CudaMemory&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  CudaMemory& operator=(CudaMemory&& o) noexcept {
    if (this != &o) {
      Release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  CudaMemory(const CudaMemory&) = delete;
  CudaMemory& operator=(const CudaMemory&) = delete;
  ~CudaMemory() { Release(); }

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  CudaMemory(void* p, std::size_t bytes) : ptr_(p), bytes_(bytes) {}
  void Release() noexcept {
    if (ptr_ != nullptr) Traits::Free(ptr_);
    ptr_ = nullptr;
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

struct DeviceMemoryTraits {
  static constexpr const char* kWhat = "cudaMalloc";
  static cudaError_t Alloc(void** p, std::size_t bytes) { return cudaMalloc(p, bytes); }
  static void Free(void* p) noexcept { (void)cudaFree(p); }
};

// Page-locked host memory (cudaHostAlloc): placed on the NUMA node of the thread that
// allocates it, since pages are touched at pinning time.
struct PinnedMemoryTraits {
  static constexpr const char* kWhat = "cudaHostAlloc";
  static cudaError_t Alloc(void** p, std::size_t bytes) {
    return cudaHostAlloc(p, bytes, cudaHostAllocPortable);
  }
  static void Free(void* p) noexcept { (void)cudaFreeHost(p); }
};

// Page-locked host memory the device can read and write (cudaHostAllocMapped): flags a kernel
// polls while the host writes them.
struct MappedMemoryTraits {
  static constexpr const char* kWhat = "cudaHostAlloc(cudaHostAllocMapped)";
  static cudaError_t Alloc(void** p, std::size_t bytes) {
    return cudaHostAlloc(p, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  }
  static void Free(void* p) noexcept { (void)cudaFreeHost(p); }
};

// Device memory of one device.
using DeviceBuffer = CudaMemory<DeviceMemoryTraits>;
using PinnedBuffer = CudaMemory<PinnedMemoryTraits>;
using MappedBuffer = CudaMemory<MappedMemoryTraits>;

class Stream {
 public:
  Stream() = default;
  static Result<Stream> Create() {
    cudaStream_t s = nullptr;
    PG_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return Stream(s);
  }
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    if (this != &o) {
      Release();
      s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { Release(); }
  cudaStream_t get() const { return s_; }

 private:
  explicit Stream(cudaStream_t s) : s_(s) {}
  void Release() noexcept {
    if (s_ != nullptr) (void)cudaStreamDestroy(s_);
    s_ = nullptr;
  }
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() = default;
  static Result<Event> Create() {
    cudaEvent_t e = nullptr;
    PG_CUDA(cudaEventCreate(&e));
    return Event(e);
  }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    if (this != &o) {
      Release();
      e_ = std::exchange(o.e_, nullptr);
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { Release(); }
  cudaEvent_t get() const { return e_; }

 private:
  explicit Event(cudaEvent_t e) : e_(e) {}
  void Release() noexcept {
    if (e_ != nullptr) (void)cudaEventDestroy(e_);
    e_ = nullptr;
  }
  cudaEvent_t e_ = nullptr;
};

// Seconds between two recorded events (blocks until `stop` completes).
inline Result<double> ElapsedSeconds(const Event& start, const Event& stop) {
  PG_CUDA(cudaEventSynchronize(stop.get()));
  float ms = 0;
  PG_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return static_cast<double>(ms) / 1e3;
}

// A counter-based generator (splitmix64 finaliser): the same (seed, index) gives the same
// value on any device and on the host, so data can be regenerated instead of stored.
__host__ __device__ inline std::uint64_t Mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace perfgate::kernels::cuda
