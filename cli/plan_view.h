// `perfgate plan`: what a validation would run on which nodes and what it would cost, resolved
// exactly as the operator resolves it (core/resolve.h) against the cluster's nodes and
// PerfProfiles as read. The times are estimates from the plan's price (core/plan.h
// PricePlan): a healthy node's typical samples times each test's declared per-sample time, and
// the worst case at every test's maxRepeats or maxSeconds. Pure: the objects are passed in.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/spec.h"
#include "core/resolve.h"

namespace perfgate::planview {

using Json = nlohmann::json;

struct PlannedNode {
  std::string name;
  std::string model;  // "" when its GPU model cannot be read
  int gpus = 0;       // allocatable nvidia.com/gpu
};

struct View {
  std::string validation;
  std::vector<PlannedNode> nodes;  // the nodes it selects, sorted
  std::string gpu_models;          // each model with its nodes and how it was read
  int parallelism = 0;             // nodes at once (all of them for a gang)
  op::ResolvedPlan resolved;       // profile, tests, thresholds, price per node
  double typical_seconds = 0;      // every node done, `parallelism` at a time
  double worst_seconds = 0;
};

// The plan of `loaded` over `nodes` (the cluster's Node objects by name) with `profiles`; the
// operator's own message when it would refuse the spec (kInvalidArgument, kNotFound).
Result<View> Build(const spec::Loaded<v1alpha1::PerfValidation>& loaded,
                   const std::map<std::string, Json>& nodes, const op::ClusterProfiles& profiles,
                   bool fixtures);

// kubectl-style output: "" (tables), "wide" (every threshold and node), "json", "yaml".
Json ToJson(const View& view);
std::string Format(const View& view, const std::string& output);

// "45s", "6m10s", "2h05m".
std::string FormatSeconds(double seconds);

}  // namespace perfgate::planview
