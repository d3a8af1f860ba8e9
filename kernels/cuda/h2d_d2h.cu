#include <cuda_runtime.h>

#include <cstring>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/device.h"
#include "kernels/cuda/formulas.h"
#include "kernels/cuda/h2d_d2h.h"
#include "kernels/cuda/launch_gate.cuh"

namespace perfgate::kernels::cuda {
namespace {

class HostCopierImpl final : public HostCopier {
 public:
  Status Init(int device, std::int64_t max_bytes) {
    device_ = device;
    RETURN_IF_ERROR(RequireCudaDevice(device));
    if (max_bytes <= 0) return InvalidArgument("copy size must be positive");
    const auto bytes = static_cast<std::size_t>(max_bytes);
    ASSIGN_OR_RETURN(host_src_, PinnedBuffer::Allocate(bytes));
    ASSIGN_OR_RETURN(host_dst_, PinnedBuffer::Allocate(bytes));
    ASSIGN_OR_RETURN(dev_a_, DeviceBuffer::Allocate(bytes));
    ASSIGN_OR_RETURN(dev_b_, DeviceBuffer::Allocate(bytes));
    // Touch everything once so no first-use cost lands in a timed copy.
    std::memset(host_src_.get(), 0x5a, bytes);
    std::memset(host_dst_.get(), 0, bytes);
    PG_CUDA(cudaMemset(dev_a_.get(), 0, bytes));
    PG_CUDA(cudaMemset(dev_b_.get(), 0, bytes));
    ASSIGN_OR_RETURN(up_, Stream::Create());
    ASSIGN_OR_RETURN(down_, Stream::Create());
    ASSIGN_OR_RETURN(start_, Event::Create());
    ASSIGN_OR_RETURN(stop_, Event::Create());
    ASSIGN_OR_RETURN(down_done_, Event::Create());
    ASSIGN_OR_RETURN(gate_, LaunchGate::Create());
    PG_CUDA(cudaDeviceSynchronize());
    return Status::Ok();
  }

  Result<double> Time(CopyDirection direction, std::int64_t bytes, int iterations,
                      const std::function<void()>& while_running) override {
    PG_CUDA(cudaSetDevice(device_));
    if (bytes <= 0 || static_cast<std::size_t>(bytes) > host_src_.bytes()) {
      return InvalidArgument("copy size out of range");
    }
    const auto n = static_cast<std::size_t>(bytes);
    const bool up = direction != CopyDirection::kDeviceToHost;
    const bool down = direction != CopyDirection::kHostToDevice;
    // Both directions start together: the down stream waits on the start event, and the up
    // stream waits for the down stream's last copy before the stop event. The window opens
    // behind the launch gate, once every copy is queued.
    RETURN_IF_ERROR(gate_.Hold(up_.get()));
    Status queued = [&]() -> Status {
      PG_CUDA(cudaEventRecord(start_.get(), up_.get()));
      PG_CUDA(cudaStreamWaitEvent(down_.get(), start_.get(), 0));
      for (int i = 0; i < iterations; ++i) {
        if (up) {
          PG_CUDA(
              cudaMemcpyAsync(dev_a_.get(), host_src_.get(), n, cudaMemcpyHostToDevice, up_.get()));
        }
        if (down) {
          PG_CUDA(cudaMemcpyAsync(host_dst_.get(), dev_b_.get(), n, cudaMemcpyDeviceToHost,
                                  down_.get()));
        }
        gate_.Queued(2);
      }
      PG_CUDA(cudaEventRecord(down_done_.get(), down_.get()));
      PG_CUDA(cudaStreamWaitEvent(up_.get(), down_done_.get(), 0));
      PG_CUDA(cudaEventRecord(stop_.get(), up_.get()));
      return Status::Ok();
    }();
    gate_.Open();
    if (!queued.ok()) {
      (void)cudaDeviceSynchronize();
      return queued;
    }
    if (while_running) while_running();
    ASSIGN_OR_RETURN(const double seconds, ElapsedSeconds(start_, stop_));
    RETURN_IF_ERROR(gate_.CheckOpenedInTime("h2d-d2h"));
    return seconds;
  }

  Status VerifyRoundTrip(std::int64_t bytes) override {
    PG_CUDA(cudaSetDevice(device_));
    const auto n = static_cast<std::size_t>(bytes);
    if (bytes <= 0 || n > host_src_.bytes()) return InvalidArgument("copy size out of range");
    const std::size_t words = n / sizeof(std::uint64_t);
    auto* src = host_src_.as<std::uint64_t>();
    for (std::size_t i = 0; i < words; ++i) src[i] = Mix64(i ^ (++salt_ << 40));
    std::memset(host_dst_.get(), 0, n);
    PG_CUDA(cudaMemcpyAsync(dev_a_.get(), host_src_.get(), n, cudaMemcpyHostToDevice, up_.get()));
    PG_CUDA(cudaMemcpyAsync(dev_b_.get(), dev_a_.get(), n, cudaMemcpyDeviceToDevice, up_.get()));
    PG_CUDA(cudaMemcpyAsync(host_dst_.get(), dev_b_.get(), n, cudaMemcpyDeviceToHost, up_.get()));
    PG_CUDA(cudaStreamSynchronize(up_.get()));
    if (std::memcmp(host_src_.get(), host_dst_.get(), n) == 0) return Status::Ok();
    const auto* dst = host_dst_.as<std::uint64_t>();
    std::int64_t wrong = 0;
    std::size_t first = 0;
    for (std::size_t i = 0; i < words; ++i) {
      if (src[i] != dst[i] && wrong++ == 0) first = i;
    }
    return DataLoss("host->device->host round trip of " + gpu::FormatBytes(bytes) + ": " +
                    std::to_string(wrong) + " of " + std::to_string(words) +
                    " 8-byte words differ, first at byte " + std::to_string(first * 8));
  }

 private:
  int device_ = 0;
  std::uint64_t salt_ = 0;
  PinnedBuffer host_src_, host_dst_;
  DeviceBuffer dev_a_, dev_b_;
  Stream up_, down_;
  Event start_, stop_, down_done_;
  LaunchGate gate_;
};

}  // namespace

Result<std::unique_ptr<HostCopier>> CreateHostCopier(int device, std::int64_t max_bytes) {
  auto impl = std::make_unique<HostCopierImpl>();
  RETURN_IF_ERROR(impl->Init(device, max_bytes));
  return std::unique_ptr<HostCopier>(std::move(impl));
}

}  // namespace perfgate::kernels::cuda
