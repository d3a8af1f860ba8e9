// A local run's memory as a user sees it: the second run says how its figures compare with the
// first, a slower machine is flagged, `--no-store` records nothing, and a threshold relative to
// a baseline built from earlier runs decides as its figure says.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/plan.h"
#include "tests/store/sample_results.h"
#include "worker/history.h"

namespace perfgate::worker {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// --- The comparison itself ------------------------------------------------------------------

TEST(CompareWithHistory, AMachineEightPercentSlowerIsFlaggedWorse) {
  store::testing::SampleShape slow;
  slow.scale = 0.92;
  slow.samples = 12;
  store::testing::SampleShape usual;
  usual.samples = 12;
  const auto now = store::testing::SampleResult("n", "v", "r3", 3000, slow).report;
  std::vector<store::MetricRecord> before;
  for (const char* run : {"r1", "r2"}) {
    const auto earlier = store::testing::SampleResult("n", "v", run, 1000, usual).report;
    for (const auto& t : earlier.tests()) {
      for (const auto& m : t.metrics()) {
        store::MetricRecord r;
        r.key.run = run;
        r.test = t.name();
        r.device = t.device();
        r.metric = m.name();
        r.summary = m.summary();
        r.samples.assign(m.samples().begin(), m.samples().end());
        before.push_back(r);
      }
    }
  }
  const auto rows = CompareWithHistory(now, before, 0.95, 0.03);
  ASSERT_EQ(rows.size(), 8u);  // 2 host metrics + 2 GPUs x 3; the skipped test has none
  for (const auto& r : rows) {
    EXPECT_NEAR(r.ratio.estimate, 0.92, 1e-9) << r.metric;
    EXPECT_LT(r.ratio.interval.high, 0.97) << r.metric;
    EXPECT_EQ(r.flag, -1) << r.metric;
    EXPECT_EQ(r.runs_before, 2);
  }
  const std::string text = FormatComparison(rows, 2, "v", 0.95, 0.03);
  EXPECT_THAT(text, HasSubstr("compared with the previous 2 runs of v on this machine"));
  EXPECT_THAT(text, HasSubstr("WORSE   host-stream [host] triadBandwidthGBps: 0.920 of before"));
  EXPECT_THAT(text, HasSubstr("beyond the 3% margin"));

  // A lower-is-better metric that rose 8% is worse; one that stayed at zero has no ratio.
  {
    auto latency = now;
    auto* m = latency.mutable_tests(0)->mutable_metrics(0);
    m->set_higherisbetter(false);
    for (auto& v : *m->mutable_samples()) v = v / 0.92 * 1.08;
    auto* zeros = latency.mutable_tests(0)->mutable_metrics(1);
    for (auto& v : *zeros->mutable_samples()) v = 0;
    auto before_zero = before;
    for (auto& r : before_zero) {
      if (r.metric == "copyBandwidthGBps") std::fill(r.samples.begin(), r.samples.end(), 0.0);
    }
    const auto lat = CompareWithHistory(latency, before_zero, 0.95, 0.03);
    ASSERT_EQ(lat.size(), 7u);
    EXPECT_EQ(lat[0].metric, "triadBandwidthGBps");
    EXPECT_NEAR(lat[0].ratio.estimate, 1.08, 1e-9);
    EXPECT_EQ(lat[0].flag, -1);
  }

  // Within the margin: 2% slower is reported, not flagged.
  store::testing::SampleShape close = slow;
  close.scale = 0.98;
  const auto near = store::testing::SampleResult("n", "v", "r4", 4000, close).report;
  for (const auto& r : CompareWithHistory(near, before, 0.95, 0.03)) EXPECT_EQ(r.flag, 0);
}

// --- Thresholds relative to a baseline, as the plan resolves them -------------------------

Result<Plan> PlanWithThreshold(const std::string& threshold, const PlanOptions& options) {
  auto loaded = spec::ParseValidation(
      "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nmetadata: {name: t}\nspec:\n"
      "  tests:\n    - type: host-stream\n      name: stream\n      thresholds:\n        - " +
          threshold + "\n",
      "s.yaml");
  if (!loaded.ok()) return loaded.status();
  return BuildPlan(*loaded, options);
}

TEST(BaselineThreshold, TheBoundIsTheFractionOfTheBaselinesFigureForThatTestMetricAndStatistic) {
  PlanOptions options;
  std::vector<std::string> asked;
  options.baseline_value = [&](const std::string& baseline, const std::string& profile_version,
                               const std::string& test, const std::string& metric,
                               const std::string& statistic) -> Result<double> {
    asked.push_back(baseline + "|" + profile_version + "|" + test + "|" + metric + "|" + statistic);
    return 200.0;
  };
  auto plan = PlanWithThreshold(
      "{metric: triadBandwidthGBps, statistic: mean, baseline: june, fraction: 0.9}", options);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->tests[0].thresholds.size(), 1u);
  EXPECT_DOUBLE_EQ(plan->tests[0].thresholds[0].bound, 180);
  EXPECT_EQ(plan->tests[0].threshold_specs[0].baseline(), "june");
  EXPECT_THAT(asked, ::testing::ElementsAre("june||stream|triadBandwidthGBps|mean"));
}

TEST(BaselineThreshold, MistakesAreInvalidInputNamingTheField) {
  PlanOptions options;
  options.baseline_value = [](const std::string& baseline, const std::string&, const std::string&,
                              const std::string&, const std::string&) -> Result<double> {
    return NotFound("no baseline \"" + baseline + "\" in the store");
  };
  struct Case {
    std::string threshold, expected;
  };
  for (const Case& c : std::vector<Case>{
           {"{metric: triadBandwidthGBps, baseline: june}",
            "spec.tests[0].thresholds[0].fraction: a baseline bound needs a fraction"},
           {"{metric: triadBandwidthGBps, baseline: june, reference: 10, fraction: 0.9}",
            "spec.tests[0].thresholds[0].reference: give reference or baseline, not both"},
           {"{metric: triadBandwidthGBps, baseline: june, fraction: 0.9, value: 3}",
            "give either value, or reference and fraction, or baseline and fraction"},
           {"{metric: triadBandwidthGBps, baseline: june, fraction: 0.9}",
            "spec.tests[0].thresholds[0].baseline: no baseline \"june\" in the store"},
       }) {
    auto plan = PlanWithThreshold(c.threshold, options);
    ASSERT_FALSE(plan.ok()) << c.threshold;
    EXPECT_EQ(plan.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(plan.status().message(), HasSubstr(c.expected)) << c.threshold;
  }
  // Where no store is at hand (no lookup), a baseline threshold is refused, not guessed.
  auto none = PlanWithThreshold("{metric: triadBandwidthGBps, baseline: june, fraction: 0.9}", {});
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("baselines live in the results store"));
}

// --- The worker ----------------------------------------------------------------------------

struct Outcome {
  int exit_code;
  std::string output;
};

class LocalHistory : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("perfgate-history-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Outcome Perfgate(const std::string& args) {
    const std::string cmd =
        "XDG_DATA_HOME=" + dir_.string() + " " + PERFGATE_BIN + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    std::array<char, 4096> buf;
    while (std::size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
    const int status = pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
  }
  // A synthetic test whose figures centre on `mean` GB/s.
  std::string Spec(double mean, int seed, const std::string& threshold) {
    const fs::path p = dir_ / ("spec-" + std::to_string(seed) + ".yaml");
    std::ofstream(p) << "apiVersion: perfgate.io/v1alpha1\n"
                        "kind: PerfValidation\n"
                        "metadata: {name: history}\n"
                        "spec:\n"
                        "  sampling: {warmup: 0, minRepeats: 12, maxRepeats: 12, method: fixed}\n"
                        "  tests:\n"
                        "    - type: synthetic\n"
                        "      parameters: {mean: "
                     << mean << ", cv: 0.005, seed: " << seed
                     << "}\n"
                        "      thresholds:\n"
                        "        - "
                     << threshold << "\n";
    return p.string();
  }
  fs::path dir_;
};

constexpr const char* kFloor = "{metric: bandwidthGBps, value: 10}";

TEST_F(LocalHistory, TheSecondRunComparesWithTheFirstAndFlagsASlowerMachine) {
  Outcome first = Perfgate("run --enable-fixtures --quiet " + Spec(100, 1, kFloor));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_THAT(first.output, HasSubstr("the first run of history on this machine"));
  EXPECT_TRUE(fs::exists(dir_ / "perfgate" / "results.db")) << first.output;

  Outcome same = Perfgate("run --enable-fixtures --quiet " + Spec(100, 2, kFloor));
  ASSERT_EQ(same.exit_code, 0) << same.output;
  EXPECT_THAT(same.output, HasSubstr("compared with the previous run of history on this machine"));
  EXPECT_THAT(same.output, HasSubstr("synthetic  host    bandwidthGBps"));
  EXPECT_THAT(same.output, Not(HasSubstr("WORSE")));

  // 8% slower, still far above its bound: it passes, and the comparison says so.
  Outcome slow = Perfgate("run --enable-fixtures --quiet " + Spec(92, 3, kFloor));
  EXPECT_EQ(slow.exit_code, 0) << slow.output;
  EXPECT_THAT(slow.output, HasSubstr("verdict: PASS"));
  EXPECT_THAT(slow.output, HasSubstr("compared with the previous 2 runs"));
  EXPECT_THAT(slow.output, HasSubstr("WORSE   synthetic [host] bandwidthGBps: 0.9"));
}

TEST_F(LocalHistory, NoStoreRecordsNothingAndAnotherStoreIsUsedWhenNamed) {
  Outcome off = Perfgate("run --enable-fixtures --quiet --no-store " + Spec(100, 1, kFloor));
  ASSERT_EQ(off.exit_code, 0) << off.output;
  EXPECT_THAT(off.output, Not(HasSubstr("recorded in")));
  EXPECT_FALSE(fs::exists(dir_ / "perfgate" / "results.db"));

  const std::string url = "sqlite://" + (dir_ / "elsewhere.db").string();
  Outcome named =
      Perfgate("run --enable-fixtures --quiet --store " + url + " " + Spec(100, 2, kFloor));
  ASSERT_EQ(named.exit_code, 0) << named.output;
  EXPECT_THAT(named.output, HasSubstr("recorded in " + url));
  EXPECT_TRUE(fs::exists(dir_ / "elsewhere.db"));
  EXPECT_FALSE(fs::exists(dir_ / "perfgate" / "results.db"));
}

TEST_F(LocalHistory, ARunTheStoreCannotTakeWaitsAndIsComparedWithOnceItCan) {
  // A store capped below what its tables need: full from the start.
  const std::string db = (dir_ / "small.db").string();
  Outcome full = Perfgate("run --enable-fixtures --quiet --store sqlite://" + db +
                          "?max_size_mb=0.02 " + Spec(100, 1, kFloor));
  EXPECT_EQ(full.exit_code, 0) << full.output;  // the run itself is not failed
  EXPECT_THAT(full.output, HasSubstr("verdict: PASS"));
  EXPECT_THAT(full.output, HasSubstr("warning: this run waits in " + db + ".spool"));
  EXPECT_THAT(full.output, HasSubstr("full"));

  Outcome roomy =
      Perfgate("run --enable-fixtures --quiet --store sqlite://" + db + " " + Spec(100, 2, kFloor));
  EXPECT_EQ(roomy.exit_code, 0) << roomy.output;
  EXPECT_THAT(roomy.output, HasSubstr("compared with the previous run of history"));
  EXPECT_THAT(roomy.output, Not(HasSubstr("warning")));
  EXPECT_TRUE(fs::is_empty(db + ".spool"));
}

TEST_F(LocalHistory, AThresholdRelativeToABaselineDecidesByTheBaselinesFigure) {
  for (int seed = 1; seed <= 3; ++seed) {
    ASSERT_EQ(Perfgate("run --enable-fixtures --quiet " + Spec(100, seed, kFloor)).exit_code, 0);
  }
  Outcome created = Perfgate("baseline create golden --from validation=history");
  ASSERT_EQ(created.exit_code, 0) << created.output;
  EXPECT_THAT(created.output, HasSubstr("baseline golden"));
  EXPECT_THAT(created.output, HasSubstr("synthetic  bandwidthGBps  median"));
  Outcome shown = Perfgate("baseline show golden");
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_THAT(shown.output, HasSubstr("bandwidthGBps  median"));
  EXPECT_EQ(Perfgate("baseline create golden --from validation=history").exit_code, 2);

  const std::string rel = "{metric: bandwidthGBps, baseline: golden, fraction: 0.97}";
  // At the baseline's level: PASS. 8% below it: FAIL against 0.97 x the baseline.
  Outcome pass = Perfgate("run --enable-fixtures --quiet --no-store " + Spec(100, 7, rel));
  EXPECT_EQ(pass.exit_code, 0) << pass.output;
  // 0.97 x the baseline's median of about 100.
  EXPECT_THAT(pass.output, ::testing::ContainsRegex(">= 9[67]\\.[0-9]+ +12 +PASS"));
  Outcome fail = Perfgate("run --enable-fixtures --quiet --no-store " + Spec(92, 8, rel));
  EXPECT_EQ(fail.exit_code, 1) << fail.output;
  EXPECT_THAT(fail.output, HasSubstr("verdict: FAIL"));

  // A baseline that does not exist is invalid input naming the field.
  Outcome missing =
      Perfgate("run --enable-fixtures --quiet --no-store " +
               Spec(100, 9, "{metric: bandwidthGBps, baseline: nope, fraction: 0.9}"));
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_THAT(missing.output,
              HasSubstr("spec.tests[0].thresholds[0].baseline: no baseline \"nope\""));
}

TEST_F(LocalHistory, ABaselineIsWrittenAsAPerfBaselineObjectForKubectl) {
  for (int seed = 1; seed <= 2; ++seed) {
    ASSERT_EQ(Perfgate("run --enable-fixtures --quiet " + Spec(100, seed, kFloor)).exit_code, 0);
  }
  Outcome yaml = Perfgate(
      "baseline create golden --from validation=history,since=2020-01-01T00:00:00Z -o yaml");
  ASSERT_EQ(yaml.exit_code, 0) << yaml.output;
  for (const char* line :
       {"apiVersion: perfgate.io/v1alpha1", "kind: PerfBaseline", "  name: golden",
        "source: --from validation=history,since=2020-01-01T00:00:00Z (PASS results)",
        "    validation: history", "    since: ", "metric: bandwidthGBps", "statistic: median",
        "test: synthetic", "baseline golden created in sqlite://"}) {
    EXPECT_THAT(yaml.output, HasSubstr(line)) << yaml.output;
  }
  EXPECT_THAT(yaml.output, Not(HasSubstr("anyVerdict")));
  Outcome json = Perfgate("baseline show golden -o json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_THAT(json.output, HasSubstr("\"kind\": \"PerfBaseline\""));
  EXPECT_THAT(json.output, HasSubstr("\"validation\": \"history\""));
  EXPECT_THAT(json.output, HasSubstr("\"count\": 2"));
  EXPECT_EQ(Perfgate("baseline list -o yaml").exit_code, 2);
  EXPECT_EQ(Perfgate("baseline show golden -o table").exit_code, 2);
}

}  // namespace
}  // namespace perfgate::worker
