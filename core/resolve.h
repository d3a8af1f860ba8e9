// Plan resolution: a validation's spec, checked exactly as the worker will read it (BuildPlan),
// against the selected nodes' GPU models and the cluster's PerfProfiles as observed, resolved
// into the plan document its workers run. Pure: the profiles are passed in. The operator
// resolves each validation with it, and `perfgate plan` shows what the operator would do.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/spec.h"
#include "core/json_fields.h"
#include "core/plan.h"
#include "core/selection.h"
#include "store/store.h"

namespace perfgate::op {

// The PerfProfile objects read from the cluster, by name.
struct ClusterProfiles {
  std::map<std::string, Json> by_name;
  bool listed = false;  // every profile was listed (not only the one the spec names)
};

// What of the cluster's profiles resolving `spec` reads: the profile it names, or the list
// (`profile: auto`, or neither a profile nor tests).
struct ProfilesNeeded {
  std::string named;
  bool list = false;
};
ProfilesNeeded ProfilesToRead(const v1alpha1::PerfValidationSpec& spec);

struct ResolvedPlan {
  std::string text;  // a PerfValidation document as JSON, tests inline
  std::string profile;
  std::string profile_version;
  // The plan runs NCCL tests across nodes and the spec asks for gangs: its sampling is fixed.
  bool gang = false;
  // The plan as its workers will read it (the text, planned again) and its price on a node of
  // `gpus` GPUs (spec.gpusPerNode, else the most any selected node has, else an HGX node's 8).
  worker::Plan built;
  int gpus = 0;
  worker::PlanPrice price;
};

// What the results store gave for the baselines the spec's (and its profiles') thresholds name,
// by name, read once per run; a name that could not be read is in `baseline_errors` with why
// (kNotFound: the store has no baseline of that name).
struct StoreBaselines {
  std::map<std::string, store::Baseline> baselines;
  std::map<std::string, Status> baseline_errors;
};

// The PerfBaseline objects the thresholds name, read from the cluster by name (a name without
// an object is absent).
struct ClusterBaselines {
  std::map<std::string, Json> by_name;
};

// Validates the spec as the worker will (BuildPlan), checks a named profile against each
// selected node's GPU model, checks gpusPerNode against the selected nodes, and inlines the
// profile. `baseline: NAME` thresholds take their figure for the selected nodes' GPU model from
// the PerfBaseline NAME in `baselines`, else from `store`'s baseline NAME, and are written into
// the plan as reference and fraction; a name in neither is refused. kInvalidArgument and
// kNotFound mean an invalid spec (the message says why); other codes mean "try again".
Result<ResolvedPlan> ResolvePlan(const spec::Loaded<v1alpha1::PerfValidation>& loaded,
                                 const ClusterProfiles& profiles, bool fixtures,
                                 const std::vector<std::string>& selected,
                                 const std::map<std::string, Json>& nodes,
                                 const SelectedModels& models,
                                 const StoreBaselines* store = nullptr,
                                 const ClusterBaselines* baselines = nullptr);

// The parsed document of a validation object, exactly as `kubectl apply` gave it to the loader
// (errors name the line of this JSON rendering).
Result<spec::Loaded<v1alpha1::PerfValidation>> ParseValidationObject(const Json& obj);

// The baseline names the thresholds of `spec` and of `profiles` name.
std::set<std::string> BaselinesNamed(const v1alpha1::PerfValidationSpec& spec,
                                     const ClusterProfiles& profiles);

}  // namespace perfgate::op
