// The operator's /metrics page in the Prometheus text format (0.0.4). Pure: main.cc hands in a
// snapshot of the counters and the informers' objects. docs/reports.md lists every series with
// its labels and how many there can be: per validation, per verdict, and behind --metrics-per-node
// per node x device x test x metric (a node's latest result), never per sample or run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace perfgate::op {

struct MetricsSnapshot {
  uint64_t reconciles = 0;
  uint64_t reconcile_errors = 0;
  uint64_t pods_created = 0;
  uint64_t results_written_by_operator = 0;
  size_t queue_depth = 0;
  bool leading = false;
  // Whether completed results are recorded in a results store (--store other than off).
  bool store_enabled = false;
  std::vector<nlohmann::json> validations;  // PerfValidation objects
  std::vector<nlohmann::json> nodes;        // Node objects
  // PerfResult objects as the cache keeps them (StripResult with figures), read only with
  // perNode.
  std::vector<nlohmann::json> results;
  // Per-node series: each labelled node's verdict, and of its latest result the figures with
  // their bounds, the test verdicts per device, the figures lagging their peers, when it was
  // validated. Off by default: a fleet of thousands of nodes would make thousands of series per
  // threshold (--metrics-per-node).
  bool per_node = false;
};

std::string RenderMetrics(const MetricsSnapshot& s);

// A label value as the text format quotes it: \ " and newline escaped.
std::string EscapeLabelValue(const std::string& s);

}  // namespace perfgate::op
