// A node's verdict in a container's termination message: the way a measured PASS or FAIL
// reaches the operator when the worker cannot write its PerfResult (the API server down
// longer than the worker's retries). The kubelet copies at most 4096 bytes of the file at
// the container's terminationMessagePath into status.containerStatuses[].state.terminated
// .message, so the encoding is compact and degrades by leaving tests out, never the verdict.
//
// Format: a readable first line, then one line of JSON:
//   perfgate result v1: FAIL on node-0
//   {"val":"gpu-accept","node":"node-0","run":"g1","v":"FAIL","why":"...","w":"gemm tflops
//    median 512.2 (>= 700.0)","at":"2026-...Z","c":[7,1,0,0,0],"t":[{"n":"gemm","d":"gpu0",
//    "v":"FAIL","m":["tflops","median",">=",512.25,700],"r":"..."}],"omit":0}
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.h"
#include "perfgate/v1alpha1/report.pb.h"

namespace perfgate::termination {

// What the kubelet keeps of a termination message file (bytes).
inline constexpr size_t kMaxMessageBytes = 4096;

// The first line of every encoded result; anything else is a plain message.
inline constexpr std::string_view kHeader = "perfgate result v1";

// A node's result as the termination message carries it.
struct NodeResult {
  std::string validation;
  std::string node_name;
  std::string run;
  // The PerfResult's spec.worst: the figure closest to failing, "" when none.
  std::string worst;
  // Why the worker could not write its PerfResult (the last API error), "" when it could.
  std::string note;
  // On encoding, the worker's full report. On decoding, a compact one: validation, verdict,
  // reason, completionTime, the per-verdict counts, and per test its name, device, verdict,
  // reason and the one threshold that decided it (metric, statistic, op, observed, bound).
  v1alpha1::Report report;
  // Decoded only: how many tests were left out to fit the message.
  int omitted_tests = 0;
};

// The message for `result`, at most `maxBytes` long (at least 512). The verdict, node, run,
// validation and counts always fit; tests are kept most severe first (FAIL, ERROR,
// INCONCLUSIVE, then the rest), each with its deciding figure when there is room, and the
// number left out is recorded. Texts are cut on UTF-8 character boundaries. Non-blocking.
std::string Encode(const NodeResult& result, size_t maxBytes = kMaxMessageBytes);

// The result in `message` (a terminated container's state.terminated.message). kNotFound when
// the message is not an encoded result (a plain error message or a log tail); kInvalidArgument
// when it is one but does not parse. Non-blocking.
Result<NodeResult> Decode(std::string_view message);

}  // namespace perfgate::termination
