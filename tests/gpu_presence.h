// Whether this machine has a CUDA device: the one question a test may skip on. A skip keyed on
// the result under test ("skip when the run succeeded", "skip unless the output says no
// device") reads a regression as SKIPPED; keyed on the device, a case asserts the no-device
// behaviour on a machine without one and the device behaviour on a machine with one.
// (The PostgreSQL end-to-end tests skip on the server's presence, by the same rule.)
#pragma once

#include <gtest/gtest.h>

#include "common/result.h"
#include "kernels/cuda/device.h"

namespace perfgate::gpu_presence {

// OK when CUDA device `ordinal` is usable here (and selected for the calling thread), else
// CUDA's text: "no CUDA device: ...". Blocking.
inline Status CudaDevice(int ordinal = 0) { return kernels::cuda::RequireCudaDevice(ordinal); }

inline bool HasCudaDevice(int ordinal = 0) { return CudaDevice(ordinal).ok(); }

}  // namespace perfgate::gpu_presence

// The case needs CUDA device `ordinal` (0: any device): skipped without it, with CUDA's text.
#define SKIP_WITHOUT_CUDA_DEVICE(ordinal)                                               \
  do {                                                                                  \
    const ::perfgate::Status presence_ = ::perfgate::gpu_presence::CudaDevice(ordinal); \
    if (!presence_.ok()) GTEST_SKIP() << presence_.message();                           \
  } while (false)

// The case asserts the behaviour without a device: skipped where there is one.
#define SKIP_WITH_CUDA_DEVICE()                                                             \
  do {                                                                                      \
    if (::perfgate::gpu_presence::HasCudaDevice()) {                                        \
      GTEST_SKIP() << "a CUDA device is present: this case checks the machine without one"; \
    }                                                                                       \
  } while (false)
