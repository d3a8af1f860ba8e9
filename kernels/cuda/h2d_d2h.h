// Device side of h2d-d2h (kernels/h2d_d2h.cc): copies between pinned host memory and one GPU on
// its copy engines. Standard types only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "common/result.h"

namespace perfgate::kernels::cuda {

enum class CopyDirection { kHostToDevice, kDeviceToHost, kBoth };

class HostCopier {
 public:
  virtual ~HostCopier() = default;
  // Enqueues `iterations` copies of `bytes` (kBoth: that many each way, on two streams at once),
  // calls `while_running` (may be empty) while they are in flight, and returns the wall seconds
  // on the GPU's timeline from the first copy's start to the last one's end. Blocking.
  virtual Result<double> Time(CopyDirection direction, std::int64_t bytes, int iterations,
                              const std::function<void()>& while_running) = 0;
  // Sends a pattern to the device and back through the same buffers and compares it; DataLoss
  // on any difference. Blocking.
  virtual Status VerifyRoundTrip(std::int64_t bytes) = 0;
};

// Allocates two pinned host buffers and two device buffers of `max_bytes` each. The pinned
// pages land on the NUMA node of the calling thread (pin the thread first). Blocking.
Result<std::unique_ptr<HostCopier>> CreateHostCopier(int device, std::int64_t max_bytes);

}  // namespace perfgate::kernels::cuda
