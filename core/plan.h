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
  // The figure of a `baseline: NAME` threshold before its fraction: the baseline's value for
  // the GPUs here, the plan's profile version, the test (display name), metric and statistic.
  // Unset: such thresholds are invalid input.
  std::function<Result<double>(const std::string& baseline, const std::string& profile_version,
                               const std::string& test, const std::string& metric,
                               const std::string& statistic)>
      baseline_value;
};

// Builds the plan and checks that every statistical threshold can be decided within its
// test's maxRepeats at the node's error budget (a node of gpusPerNode GPUs, of the GPUs
// here when that is 0, else of kAssumedGpus): a threshold that cannot is invalid input
// naming the test, the threshold and the samples it needs.
Result<Plan> BuildPlan(const spec::Loaded<v1alpha1::PerfValidation>& loaded,
                       const PlanOptions& options);

// The GPUs a node is assumed to have when neither the spec nor the machine says: an HGX node.
inline constexpr int kAssumedGpus = 8;

// Thresholds of a test decided under an error budget (not min/max point checks).
int StatisticalThresholds(const PlannedTest& test);
// The node's statistical checks (the error budget's divisor) when per-GPU tests run on
// `gpus` GPUs.
int NodeChecks(const Plan& plan, int gpus);

// The price of a plan before anything runs: per test, how soon each threshold can be decided
// at best (PASS and FAIL), how many samples a healthy node typically takes (figures
// kHealthyMargin clear of their bounds at kHealthyCv), and the node's wall time from each
// test's declared per-sample cost (tests run one after another; a per-GPU test runs on all
// GPUs at once).
inline constexpr double kHealthyMargin = 0.10;
inline constexpr double kHealthyCv = 0.03;
struct ThresholdPrice {
  std::string text;  // "median triadBandwidthGBps >= 3840"
  bool statistical = false;
  verdict::Reach reach;
  int typical_samples = 0;  // INT_MAX: not within the cap
};
struct TestPrice {
  std::string name;
  std::string targets;  // "8 GPUs at once", "host", "all 8 GPUs"
  verdict::Sampling sampling;
  double sample_seconds = 0;
  int typical_samples = 0;     // the most any threshold typically needs, at least minRepeats
  double typical_seconds = 0;  // warm-up plus typical samples, within maxSeconds
  double worst_seconds = 0;    // warm-up plus maxRepeats, within maxSeconds
  std::vector<ThresholdPrice> thresholds;
};
struct PlanPrice {
  int gpus = 0;
  int checks = 0;
  std::vector<TestPrice> tests;
  double typical_seconds = 0;
  double worst_seconds = 0;
};
PlanPrice PricePlan(const Plan& plan, int gpus);
// The price as a table for people.
std::string FormatPlanPrice(const Plan& plan, const PlanPrice& price);

// Converts a user-written parameter value (JSON from the spec's Struct) to the declared type;
// error text is the problem without the location.
Result<kernels::ParamValue> ConvertParam(const kernels::ParamInfo& info,
                                         const google::protobuf::Value& value);

// Every PerfProfile document in `dirs` (*.yaml).
Result<std::vector<spec::Loaded<v1alpha1::PerfProfile>>> LoadProfiles(
    const std::vector<std::string>& dirs);

}  // namespace perfgate::worker
