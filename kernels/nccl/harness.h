// The one harness behind the six NCCL tests (kernels/nccl/all_reduce.cc and its five siblings): a
// size sweep, warm-up and timed iterations per size, out-of-place and in-place, algbw/busbw as
// nccl-tests defines them (collective.h), every result checked against pattern.h, and the checks a
// gang needs (socket fallback between nodes is a failure). The communicator comes from a factory,
// so the same harness runs on NCCL and on the CPU stand-in.
#pragma once

#include <functional>
#include <memory>

#include "kernels/nccl/communicator.h"
#include "kernels/nccl/gang.h"
#include "kernels/test.h"

namespace perfgate::kernels::nccl {

struct CommunicatorRequest {
  Target target;
  double init_timeout_seconds = 600;
  double call_timeout_seconds = 300;
  // This node's GPUs only, even in a gang (parameter acrossNodes: false).
  bool within_node = false;
  // The run's parameters, for a factory that reads its own; valid during the call only.
  const Params* params = nullptr;
};

// Makes the communicator a run uses. Blocking (completes the rendezvous).
using CommunicatorFactory =
    std::function<Result<std::unique_ptr<Communicator>>(const CommunicatorRequest& request)>;

// NCCL on the target's GPUs, joined into the gang described by the environment (gang.h).
CommunicatorFactory NcclFactory();

// The gang a request joins: the pod's (from the environment), or none for a test that stays
// within its node (acrossNodes: false).
Result<GangConfig> GangOf(const CommunicatorRequest& request);

// The test for one collective: type nccl-<collective>, scope all GPUs, the sweep's parameters.
std::unique_ptr<Test> MakeCollectiveTest(Collective op, CommunicatorFactory factory);

// A test whose collective is its string parameter `collective` (a kCollectives name). `info`
// gives type, description, scope, the fixture flag and every parameter (SweepParams() and
// `collective` among them); the metrics are the harness's.
std::unique_ptr<Test> MakeCollectiveChoiceTest(TestInfo info, CommunicatorFactory factory);

// The sweep's parameters (minBytes .. timeoutSeconds), as every collective test declares them.
std::vector<ParamInfo> SweepParams();

}  // namespace perfgate::kernels::nccl
