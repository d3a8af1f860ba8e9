// From a loaded PerfValidation (and its profile) to a checked, complete plan: every test
// known, every parameter declared and typed with defaults filled in, every threshold on a
// metric the test produces, sampling merged (test > spec > profile level > defaults).
// Every error names the file, line and field (exit code 2 in the CLI).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/spec.h"
#include "common/verdict.h"
#include "kernels/test.h"
#include "perfgate/v1alpha1/validation.pb.h"

namespace perfgate::worker {

struct PlannedTest {
  std::string name;
  std::string type;
  const kernels::Test* test = nullptr;
  kernels::Params params;
  std::vector<kernels::MetricInfo> metrics;
  bool optional = false;
  std::vector<v1alpha1::Threshold> threshold_specs;  // as written, for the report
  std::vector<verdict::Threshold> thresholds;        // resolved bounds
  verdict::Sampling sampling;
};

struct Plan {
  std::string validation;  // metadata.name
  std::string profile;
  std::string profile_version;
  std::string profile_note;  // "picked h200-sxm-141gb for NVIDIA H200" ...
  int gpus_per_node = 0;
  v1alpha1::Policy policy;
  std::vector<PlannedTest> tests;
};

// The built-in defaults of spec.sampling.
verdict::Sampling DefaultSampling();

struct PlanOptions {
  // Folders searched for <profile>.yaml, in order.
  std::vector<std::string> profile_dirs;
  // Allow fixture tests (synthetic samples): only the test suites set this.
  bool enable_fixtures = false;
  // Names of the GPUs here, for picking a profile when the spec names "auto" or nothing
  // and has no inline tests. Unavailable status when there are none.
  std::function<Result<std::vector<std::string>>()> gpu_names;
  // When set, named profiles come from here instead of profile_dirs (the operator reads the
  // cluster's PerfProfile objects). kNotFound when there is no such profile.
  std::function<Result<spec::Loaded<v1alpha1::PerfProfile>>(const std::string& name)>
      profile_lookup;
  // When set, the profiles to pick from by GPU model come from here instead of profile_dirs
  // (the operator: the cluster's PerfProfile objects).
  std::function<Result<std::vector<spec::Loaded<v1alpha1::PerfProfile>>>()> profile_list;
};

Result<Plan> BuildPlan(const spec::Loaded<v1alpha1::PerfValidation>& loaded,
                       const PlanOptions& options);

// Converts a user-written parameter value (JSON from the spec's Struct) to the declared type;
// error text is the problem without the location.
Result<kernels::ParamValue> ConvertParam(const kernels::ParamInfo& info,
                                         const google::protobuf::Value& value);

// Every PerfProfile document in `dirs` (*.yaml).
Result<std::vector<spec::Loaded<v1alpha1::PerfProfile>>> LoadProfiles(
    const std::vector<std::string>& dirs);

}  // namespace perfgate::worker
