// The launch gate (launch_gate.cuh): a one-thread kernel that spins on a flag in mapped host
// memory until the host sets it, or until its timeout.
#include "kernels/cuda/launch_gate.cuh"

#include <chrono>
#include <thread>
#include <utility>

#include "kernels/cuda/device.h"

namespace perfgate::kernels::cuda {
namespace {

// Device time in nanoseconds (the global timer every SM shares).
__device__ inline unsigned long long GlobalNanoseconds() {
  unsigned long long t;  // NOLINT(google-runtime-int): PTX register type
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Holds its stream until the host sets gate[0]. After timeout_ns it lets go and sets gate[1].
__global__ void GateKernel(volatile int* gate, unsigned long long timeout_ns) {
  const unsigned long long start = GlobalNanoseconds();
  while (gate[0] == 0) {
    if (GlobalNanoseconds() - start > timeout_ns) {
      gate[1] = 1;
      return;
    }
    __nanosleep(1000);
  }
}

}  // namespace

Result<LaunchGate> LaunchGate::Create(unsigned long long timeout_ns) {
  LaunchGate gate;
  ASSIGN_OR_RETURN(gate.flags_, MappedBuffer::Allocate(2 * sizeof(int)));
  gate.timeout_ns_ = timeout_ns;
  volatile int* flags = gate.flags_.as<int>();
  flags[0] = 1;  // open until held
  flags[1] = 0;
  return Result<LaunchGate>(std::move(gate));
}

Status LaunchGate::Hold(cudaStream_t stream) {
  volatile int* flags = flags_.as<int>();
  if (flags[0] != 0) {  // the first stream of this window: close the gate
    flags[1] = 0;
    __atomic_store_n(const_cast<int*>(&flags[0]), 0, __ATOMIC_RELEASE);
    backlog_ = 0;
  }
  // The device's view of the flags (the same address under unified addressing; asked per
  // device all the same).
  void* device_flags = nullptr;
  PG_CUDA(cudaHostGetDevicePointer(&device_flags, flags_.get(), 0));
  GateKernel<<<1, 1, 0, stream>>>(static_cast<volatile int*>(device_flags), timeout_ns_);
  const Status launched = CudaStatus(cudaGetLastError(), "gate kernel launch");
  if (!launched.ok()) Open();
  return launched;
}

void LaunchGate::Open() {
  volatile int* flags = flags_.as<int>();
  __atomic_store_n(const_cast<int*>(&flags[0]), 1, __ATOMIC_RELEASE);
}

Result<LaunchGateProbe> ProbeLaunchGate(int ordinal, double wait_seconds, std::int64_t timeout_ns) {
  RETURN_IF_ERROR(RequireCudaDevice(ordinal));
  PG_CUDA(cudaSetDevice(ordinal));
  ASSIGN_OR_RETURN(LaunchGate gate,
                   LaunchGate::Create(static_cast<unsigned long long>(timeout_ns)));
  ASSIGN_OR_RETURN(Stream stream, Stream::Create());
  ASSIGN_OR_RETURN(Event behind, Event::Create());
  RETURN_IF_ERROR(gate.Hold(stream.get()));
  const cudaError_t recorded = cudaEventRecord(behind.get(), stream.get());
  std::this_thread::sleep_for(std::chrono::duration<double>(wait_seconds));
  const cudaError_t query = cudaEventQuery(behind.get());
  gate.Open();
  PG_CUDA(recorded);
  PG_CUDA(cudaStreamSynchronize(stream.get()));
  if (query != cudaSuccess && query != cudaErrorNotReady) PG_CUDA(query);
  LaunchGateProbe probe;
  probe.held = query == cudaErrorNotReady;
  probe.timed_out = !gate.CheckOpenedInTime("probe").ok();
  return probe;
}

Status LaunchGate::CheckOpenedInTime(const std::string& what) const {
  const volatile int* flags = flags_.as<int>();
  if (flags[1] == 0) return Status::Ok();
  return Internal(what +
                  ": the launch gate timed out before the host had queued the timed work (host "
                  "thread stalled, or CUDA_LAUNCH_BLOCKING set?); the timing would include "
                  "launch latency");
}

}  // namespace perfgate::kernels::cuda
