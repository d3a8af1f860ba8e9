// The operator's /metrics page in the Prometheus text format (0.0.4). Pure: main.cc hands in a
// snapshot of the counters and the informers' objects.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace perfgate::op {

struct MetricsSnapshot {
  uint64_t reconciles = 0;
  uint64_t reconcileErrors = 0;
  uint64_t podsCreated = 0;
  uint64_t resultsWrittenByOperator = 0;
  size_t queueDepth = 0;
  bool leading = false;
  std::vector<nlohmann::json> validations;  // PerfValidation objects
  std::vector<nlohmann::json> nodes;        // Node objects
  // One series per labelled node (perfgate_node_verdict). Off by default: a fleet of
  // thousands of nodes would make thousands of series (--metrics-per-node).
  bool perNode = false;
};

std::string RenderMetrics(const MetricsSnapshot& s);

// A label value as the text format quotes it: \ " and newline escaped.
std::string EscapeLabelValue(const std::string& s);

}  // namespace perfgate::op
