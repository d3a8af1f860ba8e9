// Device side of hbm-stream (kernels/hbm_stream.cc): BabelStream's five ops over three device
// arrays of doubles. Standard types only.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels::cuda {

struct HbmStreamConfig {
  int device = 0;
  std::int64_t elements = 0;  // per array; each array is elements * 8 bytes
  int block_size = 1024;      // threads per block
  int blocks_per_sm = 0;      // 0: as many as fit on an SM; more than fit is capped (one wave)
};

// How one kernel is launched, from the compiled kernel's attributes on this device.
struct HbmStreamLaunch {
  std::string kernel;  // "copy", "scale", "add", "triad", "dot", "init"
  int grid = 0;        // blocks
  int block = 0;       // threads per block
  int registers = 0;   // per thread (cudaFuncGetAttributes)
  // Blocks that fit on an SM (cudaOccupancyMaxActiveBlocksPerMultiprocessor).
  int resident_per_sm = 0;
  int sm_count = 0;
};

struct HbmStreamTimings {
  // Kernel seconds per op (kStreamOps order), summed over the rounds run.
  std::array<double, 5> seconds{};
  double last_dot = 0;
};

class HbmStream {
 public:
  virtual ~HbmStream() = default;
  // Sets a, b, c to their initial values (untimed). Blocking.
  virtual Status Reset() = 0;
  // Runs `rounds` rounds of copy, scale, add, triad, dot in that order; each kernel is timed
  // alone with CUDA events. Every timed launch is queued behind a gate kernel before the gate
  // opens, so each event pair brackets work already waiting on the GPU and no host launch
  // latency is counted. Blocking; one thread at a time.
  virtual Result<HbmStreamTimings> RunRounds(int rounds) = 0;
  // Reads a, b and c at `indices` (gathered on the device). Blocking.
  virtual Status ReadBack(const std::vector<std::int64_t>& indices, std::vector<double>* a,
                          std::vector<double>* b, std::vector<double>* c) = 0;
  // Overwrites one element of array 'a', 'b' or 'c' (tests plant wrong values with it), ordered
  // on the kernels' stream. Blocking.
  virtual Status WriteElement(char array, std::int64_t index, double value) = 0;
  // The launch of each kernel (copy, scale, add, triad, dot, init).
  virtual std::vector<HbmStreamLaunch> Launches() const = 0;
  // "grid 132 x 1024 threads (1 block/SM fits: 40 registers/thread), ...".
  virtual std::string LaunchDescription() const = 0;
};

// Allocates and initialises the arrays on `config.device`. Unavailable("no CUDA device: ...")
// without a device; ResourceExhausted when the arrays do not fit. Blocking.
Result<std::unique_ptr<HbmStream>> CreateHbmStream(const HbmStreamConfig& config);

}  // namespace perfgate::kernels::cuda
