// Private to the .cu files (kernels/cuda/, kernels/workloads/): the launch gate that makes a
// timing window measure the GPU's work and not the host's launches. A gate kernel holds the
// stream(s) while the host queues the timed work behind it (start event, work, stop event) and
// opens once the work is queued, so the start event fires on a GPU that has all of the work
// (or a long backlog of it) waiting, never on a GPU idling between the host's launches.
//
//   LaunchGate& gate = ...;                 // one per runner, from LaunchGate::Create()
//   RETURN_IF_ERROR(gate.Hold(stream));     // on every stream the window covers
//   record start; queue work, calling gate.Queued(n) per n operations; record stop
//   gate.Open();                            // whatever happened while queueing
//   wait for stop; RETURN_IF_ERROR(gate.CheckOpenedInTime("gemm"));
//
// TimeBehindGate does all of that for one stream.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "kernels/cuda/cuda_common.cuh"

namespace perfgate::kernels::cuda {

class LaunchGate {
 public:
  // Operations (launches, copies, event records) queued behind a closed gate before it opens
  // by itself: far below the depth of a stream's launch queue, so the host never blocks on a
  // full queue while the gate holds the GPU. Work longer than this starts on a backlog of this
  // many operations while the host queues the rest.
  static constexpr int kMaxBacklog = 192;
  // The gate lets go by itself after this long (a lost flag must not hang the worker); the
  // window is then reported as untimed (CheckOpenedInTime).
  static constexpr unsigned long long kDefaultTimeoutNs = 2'000'000'000ULL;

  LaunchGate() = default;
  static Result<LaunchGate> Create(unsigned long long timeout_ns = kDefaultTimeoutNs);

  // Queues the closed gate on `stream` (of the current device). Everything queued on the
  // stream afterwards waits until Open. Several streams, on several devices, may be held by
  // one gate: one Open releases them all.
  Status Hold(cudaStream_t stream);
  // Notes `operations` more queued behind the gate; at kMaxBacklog the gate opens.
  void Queued(int operations = 1) {
    backlog_ += operations;
    if (backlog_ >= kMaxBacklog) Open();
  }
  // Opens the gate (again is harmless). Call it whatever happened while queueing: the held
  // streams must drain.
  void Open();
  // Once the work behind the gate has completed: Internal when the gate let go by itself
  // before the host opened it, so the window would include the host's launches.
  Status CheckOpenedInTime(const std::string& what) const;

 private:
  MappedBuffer flags_;  // [0] open, [1] timed out: host memory the gate kernel polls
  unsigned long long timeout_ns_ = kDefaultTimeoutNs;
  int backlog_ = 0;
};

// GPU seconds of the work `queue()` puts on `stream`, between `start` and `stop` recorded
// behind a closed gate. `queue` calls gate.Queued per operation it queues. Blocking.
template <typename QueueWork>
Result<double> TimeBehindGate(LaunchGate& gate, cudaStream_t stream, const Event& start,
                              const Event& stop, const std::string& what, QueueWork&& queue) {
  RETURN_IF_ERROR(gate.Hold(stream));
  const Status queued = [&]() -> Status {
    PG_CUDA(cudaEventRecord(start.get(), stream));
    RETURN_IF_ERROR(std::forward<QueueWork>(queue)());
    PG_CUDA(cudaEventRecord(stop.get(), stream));
    return Status::Ok();
  }();
  gate.Open();
  if (!queued.ok()) {
    (void)cudaStreamSynchronize(stream);
    return queued;
  }
  ASSIGN_OR_RETURN(const double seconds, ElapsedSeconds(start, stop));
  RETURN_IF_ERROR(gate.CheckOpenedInTime(what));
  return seconds;
}

}  // namespace perfgate::kernels::cuda
