// Plan building: the semantic checks a user meets (unknown test, bad parameter, negative
// repeats, a threshold on a metric the test does not produce), defaults, and profiles.
#include "core/plan.h"
#include "tests/worker/plan_of.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace perfgate::worker {
namespace {

using ::testing::HasSubstr;

void ExpectError(const std::string& spec_body, const std::string& expected,
                 PlanOptions options = {}) {
  auto plan = PlanOf(spec_body, options);
  ASSERT_FALSE(plan.ok()) << "accepted:\n" << spec_body;
  EXPECT_EQ(plan.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr(expected));
}

TEST(Plan, UnknownTestTypeListsTheKnownOnes) {
  ExpectError("  tests:\n    - type: hbm-strem\n",
              "s.yaml:7: spec.tests[0].type: unknown test type \"hbm-strem\": known types: "
              "host-stream, hbm-stream");
}

TEST(Plan, NegativeRepeatsAreRefused) {
  ExpectError("  sampling:\n    minRepeats: -1\n  tests:\n    - type: host-stream\n",
              "s.yaml:7: spec.sampling.minRepeats: must be 1 or more");
  ExpectError("  tests:\n    - type: host-stream\n      sampling:\n        warmup: -2\n",
              "s.yaml:9: spec.tests[0].sampling.warmup: must be 0 or more");
}

TEST(Plan, MaxBelowMinIsRefused) {
  ExpectError(
      "  sampling:\n    minRepeats: 10\n    maxRepeats: 3\n  tests:\n    - type: host-stream\n",
      "maxRepeats (3) is less than minRepeats (10)");
}

TEST(Plan, ThresholdOnAMetricTheTestDoesNotProduce) {
  ExpectError(
      "  tests:\n    - type: host-stream\n      thresholds:\n        - metric: tflops\n"
      "          value: 1\n",
      "s.yaml:9: spec.tests[0].thresholds[0].metric: test type host-stream does not produce "
      "metric \"tflops\" (it produces: copyBandwidthGBps, scaleBandwidthGBps");
}

TEST(Plan, ThresholdNeedsExactlyOneKindOfBound) {
  ExpectError(
      "  tests:\n    - type: host-stream\n      thresholds:\n        - metric: addBandwidthGBps\n",
      "spec.tests[0].thresholds[0]: give either value, or reference and fraction");
  ExpectError(
      "  tests:\n    - type: host-stream\n      thresholds:\n        - metric: addBandwidthGBps\n"
      "          reference: 100\n",
      "spec.tests[0].thresholds[0].fraction: a relative bound needs both reference and fraction");
}

TEST(Plan, BadStatisticAndOpNameTheChoices) {
  ExpectError(
      "  tests:\n    - type: host-stream\n      thresholds:\n        - metric: addBandwidthGBps\n"
      "          statistic: average\n          value: 1\n",
      "s.yaml:10: spec.tests[0].thresholds[0].statistic: unsupported value \"average\"");
  ExpectError(
      "  tests:\n    - type: host-stream\n      thresholds:\n        - metric: addBandwidthGBps\n"
      "          op: \"=>\"\n          value: 1\n",
      "spec.tests[0].thresholds[0].op: unsupported value \"=>\": supported values: >=, >, <=, <");
}

// A mean under an upper bound has no false-PASS promise to keep (docs/methodology.md): one rare
// slow sample lifts it whatever the run drew, so the plan names the statistics that have one.
TEST(Plan, AMeanUnderAnUpperBoundIsRefused) {
  ExpectError(
      "  tests:\n    - type: host-stream\n      thresholds:\n        - metric: addBandwidthGBps\n"
      "          statistic: mean\n          op: \"<=\"\n          value: 1\n",
      "s.yaml:10: spec.tests[0].thresholds[0].statistic: mean with <= cannot keep its false-PASS "
      "promise: one rare slow sample of any size lifts a mean, and no number of samples rules "
      "that out; bound the median or p95 instead");
}

TEST(Plan, ParametersAreDeclaredTypedAndInRange) {
  ExpectError("  tests:\n    - type: host-stream\n      parameters:\n        size: 3\n",
              "s.yaml:9: spec.tests[0].parameters.size: unknown parameter \"size\" for test type "
              "host-stream (parameters: arrayBytes, threads)");
  ExpectError("  tests:\n    - type: host-stream\n      parameters:\n        threads: two\n",
              "spec.tests[0].parameters.threads: expected an integer, got the string \"two\"");
  ExpectError("  tests:\n    - type: host-stream\n      parameters:\n        threads: 1.5\n",
              "spec.tests[0].parameters.threads: expected an integer, got the number 1.5");
  ExpectError("  tests:\n    - type: host-stream\n      parameters:\n        threads: -4\n",
              "spec.tests[0].parameters.threads: value -4 is out of range [0, 4096]");
}

TEST(Plan, EnumsNameTheirChoices) {
  ExpectError("  level: slow\n  tests:\n    - type: host-stream\n",
              "s.yaml:6: spec.level: unsupported value \"slow\": supported values: quick, full");
  ExpectError("  policy:\n    onFailure: drain\n  tests:\n    - type: host-stream\n",
              "spec.policy.onFailure: unsupported value \"drain\"");
  ExpectError("  sampling:\n    confidence: 95\n  tests:\n    - type: host-stream\n",
              "spec.sampling.confidence: must be between 0 and 1");
}

// spec.gang is checked where every spec is, so `kubectl apply` of a spec the local run accepted
// is not refused later by the operator, and the reverse.
TEST(Plan, GangOptionsAreChecked) {
  const std::string tests = "  tests:\n    - type: host-stream\n";
  ExpectError(
      "  gang: {shape: ring}\n" + tests,
      "s.yaml:6: spec.gang.shape: unsupported value \"ring\": supported values: all, pairs");
  ExpectError("  gang: {shape: all, narrow: bisect}\n" + tests,
              "spec.gang.narrow: unsupported value \"bisect\": supported values: pairs, none");
  ExpectError("  gang: {shape: all, port: 70000}\n" + tests,
              "spec.gang.port: must be 0 (29500) or a TCP port up to 65535");
  ExpectError("  gang:\n    shape: all\n    network: {socketIfname: \"eth0, eth1\"}\n" + tests,
              "spec.gang.network.socketIfname: \"eth0, eth1\" has white space");
  ExpectError("  gang:\n    shape: all\n    network:\n      resources: {efa: 1}\n" + tests,
              "spec.gang.network.resources.efa: not an extended resource name");
  ExpectError(
      "  gang:\n    shape: all\n    network:\n      resources: {nvidia.com/gpu: 8}\n" + tests,
      "spec.gang.network.resources.nvidia.com/gpu: GPUs are set by spec.gpusPerNode");
  ExpectError("  gang:\n    shape: all\n    network:\n      resources: {rdma/hca: 0}\n" + tests,
              "spec.gang.network.resources.rdma/hca: must be 1 or more");
  ExpectError("  gang:\n    shape: all\n    network:\n      env: {LD_PRELOAD: /x.so}\n" + tests,
              "spec.gang.network.env.LD_PRELOAD: only NCCL_*, FI_* and UCX_* variables");
  ExpectError("  gang:\n    shape: all\n    network:\n      env: {NCCL_COMM_ID: \"a:1\"}\n" + tests,
              "spec.gang.network.env.NCCL_COMM_ID: set by the operator");
  ExpectError(
      "  gang:\n    shape: all\n    network:\n      ibHca: mlx5_0\n"
      "      env: {NCCL_IB_HCA: mlx5_1}\n" +
          tests,
      "spec.gang.network.env.NCCL_IB_HCA: also set by spec.gang.network.ibHca");
  ExpectError("  gang: {shape: all, shmSize: lots}\n" + tests,
              "spec.gang.shmSize: \"lots\" is not a quantity such as 16Gi");
  ExpectError("  gang:\n    shape: all\n    network:\n      podAnnotations: {\"a b\": x}\n" + tests,
              "spec.gang.network.podAnnotations.a b: not an annotation key");
  auto plan = PlanOf(
      "  gang:\n    shape: pairs\n    narrow: none\n    shmSize: 16Gi\n    network:\n"
      "      socketIfname: ^lo,docker\n"
      "      podAnnotations: {networking.gke.io/interfaces: \"[]\", k8s.v1.cni.cncf.io/networks: "
      "ib}\n"
      "      ibHca: =mlx5_0:1\n      hostNetwork: true\n"
      "      resources: {rdma/rdma_shared_device_a: 1, vpc.amazonaws.com/efa: 32}\n"
      "      env: {NCCL_IB_GID_INDEX: \"3\", FI_PROVIDER: efa}\n" +
      tests);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
}

// Every PerfValidation in examples/ is a plan the worker and the operator accept as written
// (the kube-sim gitops test checks them against the CRDs; this checks what the CRDs cannot,
// e.g. that a threshold's metric is one the test produces at a size of its sweep).
TEST(Plan, EveryExampleBuilds) {
  const std::filesystem::path root = PERFGATE_SOURCE_DIR;
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root / "examples")) {
    if (entry.path().extension() != ".yaml") continue;
    auto loaded = spec::LoadValidation(entry.path().string());
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    PlanOptions options;
    options.profile_dirs = {(root / "profiles").string()};
    auto plan = BuildPlan(*loaded, options);
    EXPECT_TRUE(plan.ok()) << entry.path() << ": " << plan.status().ToString();
    checked++;
  }
  EXPECT_GE(checked, 3);
}

TEST(Plan, FixturesAreRefusedUnlessEnabled) {
  ExpectError("  tests:\n    - type: synthetic\n",
              "test type \"synthetic\" is a test fixture (invented samples); the worker refuses "
              "it unless started with --enable-fixtures");
  PlanOptions options;
  options.enable_fixtures = true;
  auto plan = PlanOf("  tests:\n    - type: synthetic\n", options);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
}

TEST(Plan, DuplicateNamesAreRefused) {
  ExpectError("  tests:\n    - type: host-stream\n    - type: host-stream\n",
              "spec.tests[1].name: duplicate test name \"host-stream\"");
}

TEST(Plan, EmptySpecIsRefused) {
  ExpectError("  level: quick\n", "spec.profile: no profile named and no GPU to pick one by");
}

TEST(Plan, FillsDefaultsAndMergesSampling) {
  auto plan = PlanOf(
      "  sampling:\n    maxRepeats: 20\n  tests:\n    - type: host-stream\n      name: hs\n"
      "      sampling:\n        minRepeats: 7\n      thresholds:\n"
      "        - metric: triadBandwidthGBps\n          reference: 200\n          fraction: 0.5\n");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->tests.size(), 1u);
  const PlannedTest& t = plan->tests[0];
  EXPECT_EQ(t.name, "hs");
  EXPECT_EQ(t.params.Int("arrayBytes"), 0);  // default
  EXPECT_EQ(t.sampling.min_repeats, 7);      // test override
  EXPECT_EQ(t.sampling.max_repeats, 20);     // spec
  EXPECT_EQ(t.sampling.warmup, DefaultSampling().warmup);
  ASSERT_EQ(t.thresholds.size(), 1u);
  EXPECT_DOUBLE_EQ(t.thresholds[0].bound, 100);
  EXPECT_EQ(t.thresholds[0].statistic, verdict::Statistic::kMedian);  // default statistic
  EXPECT_EQ(t.thresholds[0].op, verdict::Op::kGe);                    // default op
  EXPECT_EQ(t.threshold_specs[0].statistic(), "median");
}

class PlanProfiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("perfgate-profiles-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "x100.yaml") << R"(apiVersion: perfgate.io/v1alpha1
kind: PerfProfile
metadata:
  name: x100
spec:
  version: "3"
  gpuModels: ["X100"]
  quick:
    sampling:
      maxRepeats: 11
    tests:
      - type: host-stream
        thresholds:
          - metric: triadBandwidthGBps
            value: 1
  full:
    tests:
      - type: host-stream
        parameters:
          nope: 1
)";
    std::ofstream(dir_ / "x100-big.yaml") << R"(apiVersion: perfgate.io/v1alpha1
kind: PerfProfile
metadata:
  name: x100-big
spec:
  version: "1"
  gpuModels: ["X100 BIG"]
  quick:
    tests:
      - type: host-stream
)";
    options_.profile_dirs = {dir_.string()};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  PlanOptions options_;
};

TEST_F(PlanProfiles, NamedProfileGivesItsTestsAndVersion) {
  auto plan = PlanOf("  profile: x100\n", options_);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->profile, "x100");
  EXPECT_EQ(plan->profile_version, "3");
  ASSERT_EQ(plan->tests.size(), 1u);
  EXPECT_EQ(plan->tests[0].sampling.max_repeats, 11);
  EXPECT_DOUBLE_EQ(plan->tests[0].thresholds[0].bound, 1);
}

TEST_F(PlanProfiles, InlineTestOverridesTheProfilesTestOfTheSameName) {
  auto plan = PlanOf(
      "  profile: x100\n  tests:\n    - type: host-stream\n      thresholds:\n"
      "        - metric: addBandwidthGBps\n          value: 5\n",
      options_);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->tests.size(), 1u);
  EXPECT_EQ(plan->tests[0].thresholds[0].metric, "addBandwidthGBps");
}

TEST_F(PlanProfiles, ErrorsInAProfilePointIntoTheProfileFile) {
  auto plan = PlanOf("  profile: x100\n  level: full\n", options_);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(),
              HasSubstr("x100.yaml:20: spec.full.tests[0].parameters.nope"));
}

TEST_F(PlanProfiles, MissingProfileNamesTheFoldersSearched) {
  ExpectError("  profile: z900\n", "spec.profile: profile \"z900\" not found in " + dir_.string(),
              options_);
}

TEST_F(PlanProfiles, AutoPicksTheMostSpecificProfileForTheGpu) {
  options_.gpu_names = []() -> Result<std::vector<std::string>> {
    return std::vector<std::string>{"NVIDIA X100 BIG 141GB"};
  };
  auto plan = PlanOf("  profile: auto\n", options_);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->profile, "x100-big");
  EXPECT_THAT(plan->profile_note, HasSubstr("picked profile x100-big for GPU NVIDIA X100 BIG"));
}

TEST_F(PlanProfiles, AutoWithoutAGpuSaysWhy) {
  options_.gpu_names = []() -> Result<std::vector<std::string>> {
    return Status(Code::kUnavailable, "no CUDA device: no CUDA-capable device is detected");
  };
  ExpectError("  profile: auto\n",
              "spec.profile: cannot pick a profile by GPU model: no CUDA device: no CUDA-capable",
              options_);
}

}  // namespace
}  // namespace perfgate::worker
