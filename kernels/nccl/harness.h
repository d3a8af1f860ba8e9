// The one harness behind the six NCCL tests (kernels/nccl_*.cc): a size sweep, warm-up and
// timed iterations per size, out-of-place and in-place, algbw/busbw as nccl-tests defines them
// (collective.h), every result checked against pattern.h, and the checks a gang needs (socket
// fallback between nodes is a failure). The communicator comes from a factory, so the same
// harness runs on NCCL and on the CPU stand-in.
#pragma once

#include <functional>
#include <memory>

#include "kernels/nccl/communicator.h"
#include "kernels/test.h"

namespace perfgate::kernels::nccl {

struct CommunicatorRequest {
  Target target;
  double init_timeout_seconds = 600;
  double call_timeout_seconds = 300;
  // This node's GPUs only, even in a gang (parameter acrossNodes: false).
  bool within_node = false;
};

// Makes the communicator a run uses. Blocking (completes the rendezvous).
using CommunicatorFactory =
    std::function<Result<std::unique_ptr<Communicator>>(const CommunicatorRequest& request)>;

// NCCL on the target's GPUs, joined into the gang described by the environment (gang.h).
CommunicatorFactory NcclFactory();
// The CPU stand-in, one rank per process, joined into the gang described by the environment.
CommunicatorFactory CpuLoopbackFactory();

// The test for one collective. `type` and `description` as listed by `perfgate-worker list`;
// `fixture` marks the CPU stand-in's test type (refused unless --enable-fixtures).
std::unique_ptr<Test> MakeCollectiveTest(Collective op, CommunicatorFactory factory);

// The CPU stand-in as a worker test: type nccl-cpu-loopback, parameter `collective`, scope
// host, fixture (the worker refuses it unless started with --enable-fixtures). A factory may
// be given for tests; by default the gang comes from the environment.
std::unique_ptr<Test> MakeCpuLoopbackTest(CommunicatorFactory factory = CpuLoopbackFactory());

}  // namespace perfgate::kernels::nccl
