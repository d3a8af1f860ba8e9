#include <cuda_runtime.h>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/device.h"
#include "kernels/cuda/formulas.h"
#include "kernels/cuda/launch_gate.cuh"
#include "kernels/cuda/p2p.h"

namespace perfgate::kernels::cuda {
namespace {

__device__ inline std::uint64_t PatternWord(std::uint64_t index, std::uint64_t salt) {
  return Mix64(index ^ (salt << 48));
}

__global__ void FillPatternKernel(std::uint64_t* out, std::int64_t words, std::uint64_t salt) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    out[i] = PatternWord(static_cast<std::uint64_t>(i), salt);
  }
}

__global__ void CountWrongKernel(const std::uint64_t* data, std::int64_t words, std::uint64_t salt,
                                 unsigned long long* wrong) {  // NOLINT
  unsigned long long local = 0;                                // NOLINT
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    if (data[i] != PatternWord(static_cast<std::uint64_t>(i), salt)) ++local;
  }
  if (local != 0) atomicAdd(wrong, local);
}

struct PerDevice {
  int ordinal = 0;
  DeviceBuffer src, dst, counter;
  Stream stream;
  Event start, stop;
};

class PeerCopierImpl final : public PeerCopier {
 public:
  Status Init(const std::vector<int>& devices, std::int64_t bytes) {
    if (bytes < 8) return InvalidArgument("p2p copy size must be at least 8 bytes");
    bytes_ = bytes;
    ASSIGN_OR_RETURN(gate_, LaunchGate::Create());
    devices_.resize(devices.size());
    for (std::size_t i = 0; i < devices.size(); ++i) {
      PerDevice& d = devices_[i];
      d.ordinal = devices[i];
      RETURN_IF_ERROR(RequireCudaDevice(d.ordinal));
      ASSIGN_OR_RETURN(d.src, DeviceBuffer::Allocate(static_cast<std::size_t>(bytes)));
      ASSIGN_OR_RETURN(d.dst, DeviceBuffer::Allocate(static_cast<std::size_t>(bytes)));
      ASSIGN_OR_RETURN(d.counter, DeviceBuffer::Allocate(sizeof(unsigned long long)));  // NOLINT
      ASSIGN_OR_RETURN(d.stream, Stream::Create());
      ASSIGN_OR_RETURN(d.start, Event::Create());
      ASSIGN_OR_RETURN(d.stop, Event::Create());
      FillPatternKernel<<<1024, 256, 0, d.stream.get()>>>(d.src.as<std::uint64_t>(), Words(),
                                                          Salt(i));
      PG_CUDA(cudaGetLastError());
      PG_CUDA(cudaStreamSynchronize(d.stream.get()));
    }
    can_.assign(devices.size() * devices.size(), false);
    for (std::size_t i = 0; i < devices.size(); ++i) {
      for (std::size_t j = 0; j < devices.size(); ++j) {
        int can = 0;
        if (i != j) {
          PG_CUDA(cudaDeviceCanAccessPeer(&can, devices_[i].ordinal, devices_[j].ordinal));
        }
        can_[i * devices.size() + j] = can != 0;
      }
    }
    return Status::Ok();
  }

  int size() const override { return static_cast<int>(devices_.size()); }
  bool CanAccessPeer(int src, int dst) const override {
    return can_[static_cast<std::size_t>(src) * devices_.size() + static_cast<std::size_t>(dst)];
  }

  Result<double> Time(int src, int dst, bool peer, int iterations) override {
    if (src == dst || src < 0 || dst < 0 || src >= size() || dst >= size()) {
      return InvalidArgument("p2p pair out of range");
    }
    RETURN_IF_ERROR(SetPeerAccess(src, dst, peer && CanAccessPeer(src, dst)));
    RETURN_IF_ERROR(SetPeerAccess(dst, src, peer && CanAccessPeer(dst, src)));
    PerDevice& s = devices_[static_cast<std::size_t>(src)];
    PerDevice& d = devices_[static_cast<std::size_t>(dst)];
    // Clear the destination on its own device (the source may have no access to it), so
    // Verify cannot pass on an earlier copy's data.
    PG_CUDA(cudaSetDevice(d.ordinal));
    PG_CUDA(cudaMemsetAsync(d.dst.get(), 0, d.dst.bytes(), d.stream.get()));
    PG_CUDA(cudaStreamSynchronize(d.stream.get()));
    PG_CUDA(cudaSetDevice(s.ordinal));
    // Behind the launch gate: the window opens once the copies are queued.
    return TimeBehindGate(gate_, s.stream.get(), s.start, s.stop, "p2p", [&]() -> Status {
      for (int i = 0; i < iterations; ++i) {
        PG_CUDA(cudaMemcpyPeerAsync(d.dst.get(), d.ordinal, s.src.get(), s.ordinal,
                                    static_cast<std::size_t>(bytes_), s.stream.get()));
        gate_.Queued();
      }
      return Status::Ok();
    });
  }

  Status Verify(int src, int dst) override {
    PerDevice& d = devices_[static_cast<std::size_t>(dst)];
    PG_CUDA(cudaSetDevice(d.ordinal));
    PG_CUDA(cudaMemsetAsync(d.counter.get(), 0, d.counter.bytes(), d.stream.get()));
    CountWrongKernel<<<1024, 256, 0, d.stream.get()>>>(
        d.dst.as<std::uint64_t>(), Words(), Salt(static_cast<std::size_t>(src)),
        d.counter.as<unsigned long long>());  // NOLINT
    PG_CUDA(cudaGetLastError());
    unsigned long long wrong = 0;  // NOLINT
    PG_CUDA(cudaMemcpyAsync(&wrong, d.counter.get(), sizeof(wrong), cudaMemcpyDeviceToHost,
                            d.stream.get()));
    PG_CUDA(cudaStreamSynchronize(d.stream.get()));
    if (wrong == 0) return Status::Ok();
    return DataLoss("copy gpu" + std::to_string(devices_[static_cast<std::size_t>(src)].ordinal) +
                    " -> gpu" + std::to_string(d.ordinal) + ": " + std::to_string(wrong) + " of " +
                    std::to_string(Words()) + " 8-byte words wrong");
  }

 private:
  std::int64_t Words() const { return bytes_ / 8; }
  static std::uint64_t Salt(std::size_t position) { return 0x70 + position; }

  // Peer access is per (context, peer) and persists: switch it only when it must change.
  Status SetPeerAccess(int from, int to, bool enable) {
    const std::size_t key =
        static_cast<std::size_t>(from) * devices_.size() + static_cast<std::size_t>(to);
    if (enabled_.size() != can_.size()) enabled_.assign(can_.size(), false);
    if (enabled_[key] == enable) return Status::Ok();
    PG_CUDA(cudaSetDevice(devices_[static_cast<std::size_t>(from)].ordinal));
    const int peer = devices_[static_cast<std::size_t>(to)].ordinal;
    if (enable) {
      const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
        PG_CUDA(e);
      }
    } else {
      const cudaError_t e = cudaDeviceDisablePeerAccess(peer);
      if (e != cudaSuccess && e != cudaErrorPeerAccessNotEnabled) {
        PG_CUDA(e);
      }
    }
    (void)cudaGetLastError();
    enabled_[key] = enable;
    return Status::Ok();
  }

  std::int64_t bytes_ = 0;
  LaunchGate gate_;
  std::vector<PerDevice> devices_;
  std::vector<bool> can_;
  std::vector<bool> enabled_;
};

}  // namespace

Result<std::unique_ptr<PeerCopier>> CreatePeerCopier(const std::vector<int>& devices,
                                                     std::int64_t bytes) {
  auto impl = std::make_unique<PeerCopierImpl>();
  RETURN_IF_ERROR(impl->Init(devices, bytes));
  return std::unique_ptr<PeerCopier>(std::move(impl));
}

}  // namespace perfgate::kernels::cuda
