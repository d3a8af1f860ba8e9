// The inputs of decode-step, as patterns of small dyadic numbers (multiples of 1/16 and 1/8,
// exact in bf16 and fp16) from each element's index: the host replays them to compute the
// exact outputs the device must produce. Usable from host and device code.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define PG_HOST_DEVICE __host__ __device__
#else
#define PG_HOST_DEVICE
#endif

namespace perfgate::kernels::workloads::pattern {

// Weights in {-4..4} / 16, activations and queries in {-3..3} / 8, keys {-2..2} / 8, values
// {-3..3} / 8. Index: the element's position in its own matrix.
PG_HOST_DEVICE inline float Weight(std::int64_t i) {
  return static_cast<float>((i * 7 + 3) % 9 - 4) / 16.0f;
}
PG_HOST_DEVICE inline float Activation(std::int64_t i) {
  return static_cast<float>((i * 5 + 1) % 7 - 3) / 8.0f;
}
PG_HOST_DEVICE inline float Key(std::int64_t i) {
  return static_cast<float>((i * 3 + 2) % 5 - 2) / 8.0f;
}
PG_HOST_DEVICE inline float Value(std::int64_t i) {
  return static_cast<float>((i * 11 + 5) % 7 - 3) / 8.0f;
}

}  // namespace perfgate::kernels::workloads::pattern
