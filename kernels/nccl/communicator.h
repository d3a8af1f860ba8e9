// One interface over the communicators that run the collectives: NCCL on the node's GPUs
// (nccl_communicator.h) and the CPU stand-in for tests (cpu_loopback.h). A communicator owns
// its buffers, so the harness never touches device memory: it asks for a call to be prepared
// (inputs from pattern.h), timed, and checked.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "kernels/nccl/collective.h"

namespace perfgate::kernels::nccl {

class Communicator {
 public:
  virtual ~Communicator() = default;
  // Ranks in the whole communicator (all pods). Thread-safe.
  virtual int world_size() const = 0;
  // The global ranks this process drives, one per local device. Thread-safe.
  virtual std::vector<int> ranks() const = 0;
  // Allocates (or grows) every local rank's send and receive buffers to hold `elements`
  // elements each. Blocking.
  virtual Status Reserve(std::int64_t elements) = 0;
  // Writes every local rank's inputs for `call` (pattern.h) and clears where the result goes.
  // Blocking.
  virtual Status Fill(const Call& call) = 0;
  // Runs `call` `iterations` times back to back on every local rank (one group call per
  // iteration across local ranks) and returns the seconds from the first call to the last
  // completion: on NCCL, GPU time between events recorded on each local rank's stream around
  // the calls (the slowest local rank's); on the CPU stand-in, the host clock around them. All
  // ranks of the world must make the same calls in the same order. Blocking; past the timeout the
  // watchdog aborts the communicator and this returns DeadlineExceeded with the reason (the
  // communicator is unusable afterwards).
  virtual Result<double> Run(const Call& call, int iterations) = 0;
  // Elements of the local ranks' results that differ from pattern.h's expectation, after
  // Fill(call) and one Run(call, 1). Blocking.
  virtual Result<std::int64_t> CountWrong(const Call& call) = 0;
  // Facts for the report: implementation, version, transport, ... Thread-safe.
  virtual std::map<std::string, std::string> Details() const = 0;
  // Whether the transport NCCL chose between nodes is plain TCP sockets (never true for one
  // node). Thread-safe; meaningful after the first Run().
  virtual bool InterNodeSockets() const = 0;
};

// What a communicator needs to start: the gang's shape from gang.h and the test's deadlines.
struct CommunicatorOptions {
  std::vector<int> devices;  // CUDA ordinals (NCCL) or empty (CPU stand-in: one rank)
  int world_size = 1;
  std::vector<int> ranks;     // global ranks, one per device (one for the CPU stand-in)
  std::string rank0_address;  // host:port ("" for a single process: NCCL makes its own id)
  double init_timeout_seconds = 600;
  double call_timeout_seconds = 300;
};

}  // namespace perfgate::kernels::nccl
