// The fleet summary `kubectl perfgate summary` prints: every GPU node with its latest result,
// counts by GPU model and verdict, the nodes that did not pass and why, the figures that lag
// their peers, and the nodes never validated or validated too long ago.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fleet.h"

namespace perfgate::summary {

// One GPU node and its latest result.
struct NodeLine {
  std::string node;
  std::string model;       // from the latest result, else the node's labels; words apart by spaces
  std::string verdict;     // PASS, FAIL, INCONCLUSIVE, ERROR; "" when never validated
  std::string validation;  // of the latest result
  std::string run;
  std::string why;  // the result's worst figure or reason
  // The recommended action (common/action.h): the node's perfgate.io/action label, escalated
  // by the operator when the node keeps failing, else the latest result's.
  std::string action;
  std::string last_validated;  // RFC 3339 completion time of the latest result
  bool stale = false;          // the latest result is older than the staleness limit
};

// A node of a rolling validation (spec.rolling): when that validation last validated it and
// when it falls due, from the validation's status.rolling.
struct RollingLine {
  std::string node;
  std::string validation;
  std::string last_validated;  // RFC 3339; "" when never
  std::string next_due;        // RFC 3339
  std::string last_verdict;    // PASS, FAIL, ...; "" when never
  bool overdue = false;        // past its due time and not validated again yet
};

struct FleetSummary {
  std::vector<NodeLine> nodes;  // by name
  // Model -> verdict word ("PASS", ..., "NEVER", "STALE") -> nodes.
  std::map<std::string, std::map<std::string, int>> by_model;
  std::vector<fleet::Lagging> lagging;  // among the latest results
  std::vector<RollingLine> rolling;     // by validation, then node
  // Every validation read says the operator keeps no results (condition Recorded False, reason
  // StoreOff: --store=off): no history, no regression check.
  bool results_not_kept = false;
};

// Whether `validations` (PerfValidation objects) say the operator keeps no results: at least one,
// and each with condition Recorded False for reason StoreOff.
bool ResultsNotKept(const std::vector<nlohmann::json>& validations);

// `nodes`: Node objects (the GPU nodes: allocatable nvidia.com/gpu above zero, or a perfgate
// verdict label); `results`: PerfResults of any validations and runs. A node's latest result is
// the one that completed last.
FleetSummary Summarize(const std::vector<nlohmann::json>& nodes,
                       const std::vector<fleet::NodeReport>& results,
                       std::chrono::system_clock::time_point now, std::chrono::hours stale_after);

// The nodes of the rolling validations among `validations` (PerfValidation objects), overdue
// as of `now`.
std::vector<RollingLine> RollingNodes(const std::vector<nlohmann::json>& validations,
                                      std::chrono::system_clock::time_point now);

// The note the table output ends with when results are not kept ("" when they may be).
std::string Notice(const FleetSummary& s);

// kubectl-style output: "" (the tables), "wide" (more columns), "json", "yaml".
std::string Format(const FleetSummary& s, const std::string& output);

}  // namespace perfgate::summary
