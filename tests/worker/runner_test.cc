// The runner as a user sees its outcome: verdicts per test and device, reasons, the overall
// verdict and exit code — with fake tests and fake GPUs, so no device is needed.
#include "worker/runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <sstream>

namespace perfgate::worker {
namespace {

using ::testing::HasSubstr;
using v1alpha1::Report;

// A test whose samples come from a function; scope and preparation are configurable.
class FakeTest : public kernels::Test {
 public:
  FakeTest(kernels::Scope scope, std::function<Result<kernels::Sample>(int device, int i)> sample,
           Status prepare_error = Status::Ok(), std::map<std::string, std::string> details = {})
      : sample_(std::move(sample)),
        prepare_error_(std::move(prepare_error)),
        details_(std::move(details)) {
    info_.type = "fake";
    info_.scope = scope;
    info_.metrics = {{"bandwidthGBps", "GB/s", true, ""}};
  }
  const kernels::TestInfo& Info() const override { return info_; }
  double SampleSeconds(const kernels::Params& /*params*/, int /*gpus*/) const override {
    return 0.001;
  }
  Result<std::unique_ptr<kernels::TestRun>> Prepare(const kernels::Params&,
                                                    const kernels::Target& target) const override {
    if (!prepare_error_.ok()) return prepare_error_;
    struct Run : kernels::TestRun {
      const FakeTest* test;
      int device;
      int i = 0;
      Result<kernels::Sample> RunSample() override { return test->sample_(device, i++); }
      std::map<std::string, std::string> Details() const override { return test->details_; }
    };
    auto run = std::make_unique<Run>();
    run->test = this;
    run->device = target.devices.empty() ? -1 : target.devices.front();
    return std::unique_ptr<kernels::TestRun>(std::move(run));
  }

 private:
  kernels::TestInfo info_;
  std::function<Result<kernels::Sample>(int, int)> sample_;
  Status prepare_error_;
  std::map<std::string, std::string> details_;
};

// Deterministic noise around `mean` (a fixed zig-zag of +-cv).
std::function<Result<kernels::Sample>(int, int)> Around(double mean, double cv = 0.01) {
  return [=](int, int i) -> Result<kernels::Sample> {
    static const double kPattern[] = {0.3, -0.8, 1.0, -0.2, 0.6, -1.0, 0.1, 0.9, -0.5, -0.4};
    return kernels::Sample{{"bandwidthGBps", mean * (1 + cv * kPattern[i % 10])}};
  };
}

PlannedTest Planned(const FakeTest& test, double bound, bool optional = false) {
  PlannedTest t;
  t.name = "fake";
  t.type = "fake";
  t.test = &test;
  t.optional = optional;
  t.metrics = test.Info().metrics;
  if (bound > 0) {
    v1alpha1::Threshold spec;
    spec.set_metric("bandwidthGBps");
    spec.set_statistic("median");
    spec.set_op(">=");
    spec.set_value(bound);
    t.threshold_specs.push_back(spec);
    t.thresholds.push_back({"bandwidthGBps", verdict::Statistic::kMedian, verdict::Op::kGe, bound});
  }
  t.sampling.warmup = 1;
  t.sampling.min_repeats = 5;
  t.sampling.max_repeats = 30;
  t.sampling.max_seconds = 1e9;
  return t;
}

RunOptions Options(int gpus) {
  RunOptions o;
  o.identity = [](v1alpha1::Identity* id) { id->set_hostname("test-host"); };
  o.list_gpus = [gpus]() -> Result<std::vector<kernels::GpuDevice>> {
    if (gpus == 0) {
      return Status(Code::kUnavailable, "no CUDA device: no CUDA-capable device is detected");
    }
    std::vector<kernels::GpuDevice> v(gpus);
    for (int i = 0; i < gpus; ++i) v[i].ordinal = i;
    return v;
  };
  return o;
}

Report RunOne(PlannedTest t, const RunOptions& o, int gpus_per_node = 0,
              v1alpha1::Policy policy = {}) {
  Plan plan;
  plan.validation = "v";
  plan.gpus_per_node = gpus_per_node;
  plan.policy = policy;
  plan.tests.push_back(std::move(t));
  return RunPlan(plan, o);
}

TEST(Runner, FarAboveTheBoundPassesEarly) {
  FakeTest test(kernels::Scope::kHost, Around(100));
  Report r = RunOne(Planned(test, 50), Options(0));
  ASSERT_EQ(r.tests_size(), 1);
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::PASS) << r.tests(0).reason();
  EXPECT_EQ(r.tests(0).stopreason(), "decided");
  EXPECT_LT(r.tests(0).samples(), 30);
  EXPECT_GE(r.tests(0).samples(), 5);
  EXPECT_EQ(r.tests(0).device(), "host");
  EXPECT_EQ(r.verdict(), v1alpha1::PASS);
  EXPECT_EQ(ExitCode(r), 0);
  EXPECT_EQ(r.identity().hostname(), "test-host");
  ASSERT_EQ(r.tests(0).metrics_size(), 1);
  EXPECT_NEAR(r.tests(0).metrics(0).summary().median(), 100, 1.5);
}

TEST(Runner, FarBelowTheBoundFailsNamingMetricAndFigure) {
  FakeTest test(kernels::Scope::kHost, Around(40));
  Report r = RunOne(Planned(test, 50), Options(0));
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::FAIL);
  EXPECT_THAT(r.tests(0).reason(), HasSubstr("bandwidthGBps"));
  EXPECT_THAT(r.reason(), HasSubstr("fake [host]"));
  EXPECT_EQ(r.verdict(), v1alpha1::FAIL);
  EXPECT_EQ(ExitCode(r), 1);
}

TEST(Runner, OnTheBoundRunsToTheCapAndSaysInconclusive) {
  FakeTest test(kernels::Scope::kHost, Around(50, 0.05));
  Report r = RunOne(Planned(test, 50), Options(0));
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::INCONCLUSIVE);
  EXPECT_EQ(r.tests(0).samples(), 30);
  EXPECT_EQ(r.tests(0).stopreason(), "maxRepeats");
  EXPECT_EQ(ExitCode(r), 3);
  v1alpha1::Policy allow;
  allow.set_allowinconclusive(true);
  EXPECT_EQ(RunOne(Planned(test, 50), Options(0), 0, allow).verdict(), v1alpha1::PASS);
}

// A clock on which every look at the time costs a second.
class TickingClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::time_point(std::chrono::seconds(++looks_));
  }
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::time_point(std::chrono::seconds(looks_));
  }
  bool SleepFor(std::chrono::nanoseconds, const Cancellation*) override { return true; }

 private:
  mutable int64_t looks_ = 0;
};

TEST(Runner, StopsAtMaxSeconds) {
  FakeTest test(kernels::Scope::kHost, Around(50, 0.05));
  RunOptions o = Options(0);
  o.clock = std::make_shared<TickingClock>();  // every look costs a second
  PlannedTest p = Planned(test, 50);
  p.sampling.max_seconds = 8;
  Report r = RunOne(p, o);
  EXPECT_EQ(r.tests(0).stopreason(), "maxSeconds");
  EXPECT_LT(r.tests(0).samples(), 10);
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::INCONCLUSIVE);
}

TEST(Runner, RequiredGpuTestWithoutGpuIsErrorWithCudaText) {
  FakeTest test(kernels::Scope::kGpu, Around(100));
  Report r = RunOne(Planned(test, 50), Options(0));
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::ERROR);
  EXPECT_THAT(r.tests(0).reason(), HasSubstr("no CUDA device: no CUDA-capable device is detected"));
  EXPECT_EQ(ExitCode(r), 3);
}

TEST(Runner, OptionalGpuTestWithoutGpuIsSkippedButNothingMeasuredNeverPasses) {
  FakeTest test(kernels::Scope::kGpu, Around(100));
  Report r = RunOne(Planned(test, 50, /*optional=*/true), Options(0));
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::SKIPPED);
  EXPECT_THAT(r.tests(0).reason(), HasSubstr("optional and cannot run here: no CUDA device"));
  EXPECT_EQ(r.verdict(), v1alpha1::ERROR);
  EXPECT_THAT(r.reason(), HasSubstr("nothing was measured"));
}

TEST(Runner, SkipsPassUnlessThePolicyFailsThem) {
  FakeTest host(kernels::Scope::kHost, Around(100));
  FakeTest gpu(kernels::Scope::kGpu, Around(100));
  Plan plan;
  plan.tests = {Planned(host, 50), Planned(gpu, 50, true)};
  plan.tests[1].name = "gpu";
  EXPECT_EQ(RunPlan(plan, Options(0)).verdict(), v1alpha1::PASS);
  plan.policy.set_failonskipped(true);
  Report r = RunPlan(plan, Options(0));
  EXPECT_EQ(r.verdict(), v1alpha1::FAIL);
  EXPECT_THAT(r.reason(), HasSubstr("policy.failOnSkipped"));
}

TEST(Runner, MissingExpectedGpusIsError) {
  FakeTest test(kernels::Scope::kGpu, Around(100));
  Report r = RunOne(Planned(test, 50), Options(2), /*gpus_per_node=*/8);
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::ERROR);
  EXPECT_THAT(r.tests(0).reason(), HasSubstr("expected 8 GPUs, found 2"));
}

TEST(Runner, PerGpuTestRunsOnEveryGpuAtOnceAndNeedsAllOfThem) {
  // Device 2 is slow; all four run concurrently (each waits until all have started).
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  std::atomic<bool> concurrent{true};
  FakeTest test(kernels::Scope::kGpu, [&](int device, int i) -> Result<kernels::Sample> {
    if (i == 0) {
      std::unique_lock<std::mutex> lock(mu);
      ++started;
      cv.notify_all();
      if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return started == 4; })) {
        concurrent = false;
      }
    }
    return kernels::Sample{{"bandwidthGBps", device == 2 ? 30.0 + 0.1 * (i % 3) : 100.0 + (i % 3)}};
  });
  Report r = RunOne(Planned(test, 50), Options(4));
  EXPECT_TRUE(concurrent);
  ASSERT_EQ(r.tests_size(), 4);
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(r.tests(d).device(), "gpu" + std::to_string(d));
    EXPECT_EQ(r.tests(d).verdict(), d == 2 ? v1alpha1::FAIL : v1alpha1::PASS);
  }
  EXPECT_EQ(r.verdict(), v1alpha1::FAIL);
  EXPECT_THAT(r.reason(), HasSubstr("[gpu2]"));
  EXPECT_EQ(r.passed(), 3);
  EXPECT_EQ(r.failed(), 1);
}

TEST(Runner, WrongResultIsFailNotAFastResult) {
  FakeTest test(kernels::Scope::kHost, [](int, int i) -> Result<kernels::Sample> {
    if (i == 3) return Status(Code::kDataLoss, "element 7 is 2.0, expected 1.0");
    return kernels::Sample{{"bandwidthGBps", 100.0}};
  });
  Report r = RunOne(Planned(test, 50), Options(0));
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::FAIL);
  EXPECT_THAT(r.tests(0).reason(), HasSubstr("element 7 is 2.0, expected 1.0"));
}

// What the run recorded before its sample went wrong (a screen's digests, the errors it named)
// stays in the result, for the report and for comparing nodes.
TEST(Runner, AWrongResultKeepsTheRunsDetails) {
  FakeTest test(kernels::Scope::kHost,
                [](int, int) -> Result<kernels::Sample> {
                  return Status(Code::kDataLoss, "gpu3 differs from the majority");
                },
                Status::Ok(), {{"digest.gemm-bf16", "0x0123456789abcdef"}});
  Report r = RunOne(Planned(test, 50), Options(0));
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::FAIL);
  EXPECT_EQ(r.tests(0).details().at("digest.gemm-bf16"), "0x0123456789abcdef");
}

TEST(Runner, PrepareErrorsMapToVerdicts) {
  FakeTest na(kernels::Scope::kHost, Around(1), FailedPrecondition("needs two GPUs, found 1"));
  Report r = RunOne(Planned(na, 50), Options(0));
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::SKIPPED);
  EXPECT_THAT(r.tests(0).reason(), HasSubstr("not applicable: needs two GPUs"));

  FakeTest broken(kernels::Scope::kHost, Around(1),
                  Internal("cuBLAS: CUBLAS_STATUS_NOT_SUPPORTED"));
  r = RunOne(Planned(broken, 50, /*optional=*/true), Options(0));
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::ERROR);  // optional skips only "cannot run here"
  EXPECT_THAT(r.tests(0).reason(), HasSubstr("CUBLAS_STATUS_NOT_SUPPORTED"));
}

// Health on a one-GPU VM in a sandbox: NVLink cannot apply (SKIPPED, the others decide the
// test), a refused reading is ERROR with NVML's words, never a FAIL and never a PASS.
PlannedTest WithMaxZero(PlannedTest t, const std::string& metric) {
  v1alpha1::Threshold spec;
  spec.set_metric(metric);
  spec.set_statistic("max");
  spec.set_op("<=");
  spec.set_value(0);
  t.threshold_specs.push_back(spec);
  t.thresholds.push_back({metric, verdict::Statistic::kMax, verdict::Op::kLe, 0});
  return t;
}

TEST(Runner, MetricThatCannotApplyIsSkippedAndTheOthersDecide) {
  FakeTest test(kernels::Scope::kHost, Around(100), Status::Ok(),
                {{"notApplicable.nvlinkInactiveLinkCount", "NVML shows one GPU"}});
  Report r = RunOne(WithMaxZero(Planned(test, 50), "nvlinkInactiveLinkCount"), Options(0));
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::PASS) << r.tests(0).reason();
  ASSERT_EQ(r.tests(0).thresholds_size(), 2);
  EXPECT_EQ(r.tests(0).thresholds(1).verdict(), v1alpha1::SKIPPED);
  EXPECT_THAT(r.tests(0).thresholds(1).reason(),
              HasSubstr("nvlinkInactiveLinkCount does not apply here: NVML shows one GPU"));

  // Nothing else to decide: the test is SKIPPED, never PASS.
  PlannedTest only = Planned(test, 0);
  Report alone = RunOne(WithMaxZero(std::move(only), "nvlinkInactiveLinkCount"), Options(0));
  EXPECT_EQ(alone.tests(0).verdict(), v1alpha1::SKIPPED);
  EXPECT_THAT(alone.tests(0).reason(), HasSubstr("NVML shows one GPU"));
}

TEST(Runner, RefusedReadingIsErrorWithItsReasonNotFailNotPass) {
  FakeTest test(kernels::Scope::kHost, Around(100), Status::Ok(),
                {{"notMeasured.eccUncorrectedVolatileCount",
                  "NVML refused the reading: NVML_ERROR_NO_PERMISSION"}});
  Report r = RunOne(WithMaxZero(Planned(test, 50), "eccUncorrectedVolatileCount"), Options(0));
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::ERROR);
  EXPECT_THAT(r.tests(0).reason(), HasSubstr("eccUncorrectedVolatileCount could not be measured"));
  EXPECT_THAT(r.tests(0).reason(), HasSubstr("NVML_ERROR_NO_PERMISSION"));
}

TEST(Runner, FixedMethodTakesExactlyMaxRepeats) {
  FakeTest test(kernels::Scope::kHost, Around(100));
  PlannedTest p = Planned(test, 50);
  p.sampling.fixed = true;
  p.sampling.max_repeats = 12;
  Report r = RunOne(p, Options(0));
  EXPECT_EQ(r.tests(0).samples(), 12);
  EXPECT_EQ(r.tests(0).stopreason(), "fixed");
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::PASS);
}

// A test that counts errors (memtest, burn, config): the count is a figure like the others,
// and the bound on it FAILs the test with the figure and what was counted, named.
PlannedTest Counting(const FakeTest& test) {
  PlannedTest t = WithMaxZero(Planned(test, 50), "errorCount");
  t.metrics.push_back({"errorCount", "count", false, ""});
  return t;
}

std::function<Result<kernels::Sample>(int, int)> ErrorsAt(int sample, double errors) {
  return [=](int, int i) -> Result<kernels::Sample> {
    return kernels::Sample{{"bandwidthGBps", 100.0}, {"errorCount", i == sample ? errors : 0.0}};
  };
}

TEST(Runner, ACountAboveItsBoundFailsWithTheFigureAndWhatWasCounted) {
  FakeTest test(kernels::Scope::kHost, ErrorsAt(4, 2), Status::Ok(),
                {{"counted.errorCount", "2 words read back wrong: at 0x320, at 0x328"}});
  PlannedTest p = Counting(test);
  p.sampling.fixed = true;
  p.sampling.max_repeats = 12;
  Report r = RunOne(p, Options(0));
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::FAIL);
  EXPECT_THAT(r.tests(0).reason(), HasSubstr("max errorCount 2"));
  EXPECT_THAT(r.tests(0).reason(), HasSubstr(": 2 words read back wrong: at 0x320, at 0x328"));
  EXPECT_EQ(r.verdict(), v1alpha1::FAIL);
  // The fourth measured sample (the first was warm-up) fails the bound for good: no later
  // sample can lower a max, so the fixed plan stops there.
  EXPECT_EQ(r.tests(0).samples(), 4);
  EXPECT_EQ(r.tests(0).stopreason(), "decided");
  ASSERT_EQ(r.tests(0).metrics_size(), 2);
  EXPECT_EQ(r.tests(0).metrics(1).name(), "errorCount");
  EXPECT_EQ(r.tests(0).metrics(1).summary().max(), 2);
}

TEST(Runner, ACleanCountPassesItsBound) {
  FakeTest test(kernels::Scope::kHost, ErrorsAt(-1, 0));
  Report r = RunOne(Counting(test), Options(0));
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::PASS) << r.tests(0).reason();
  EXPECT_EQ(r.tests(0).thresholds(1).observed(), 0);
}

TEST(Runner, AnErrorCountedInWarmUpIsNotLeftOut) {
  FakeTest test(kernels::Scope::kHost, ErrorsAt(0, 1), Status::Ok(),
                {{"counted.errorCount", "window 1: 1 of 4096 output elements differ"}});
  Report r = RunOne(Counting(test), Options(0));
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::FAIL);
  EXPECT_THAT(r.tests(0).reason(), HasSubstr("max errorCount 1"));
  EXPECT_THAT(r.tests(0).reason(), HasSubstr("in warm-up"));
  EXPECT_THAT(r.tests(0).reason(), HasSubstr("window 1: 1 of 4096 output elements differ"));
  EXPECT_EQ(r.tests(0).warmupsamples(), 1);
  EXPECT_EQ(r.tests(0).samples(), 0);
  EXPECT_EQ(r.tests(0).stopreason(), "decided");
  // The figures' bound was never measured: not decided, and no ERROR either.
  EXPECT_EQ(r.tests(0).thresholds(0).verdict(), v1alpha1::INCONCLUSIVE);
  EXPECT_EQ(r.verdict(), v1alpha1::FAIL);
}

TEST(Runner, KeepsOnlyACappedSetOfRawSamples) {
  FakeTest test(kernels::Scope::kHost, Around(50, 0.05));
  RunOptions o = Options(0);
  o.sample_cap = 4;
  Report r = RunOne(Planned(test, 50), o);
  EXPECT_EQ(r.tests(0).metrics(0).samples_size(), 4);
  EXPECT_EQ(r.tests(0).metrics(0).summary().n(), 30);
}

// In a log: one plain line as each test starts and one as it ends, a line for each GPU that
// did not pass, and no per-sample noise or terminal control characters.
TEST(RunnerProgress, PlainInALogOneLinePerTestStartAndEnd) {
  FakeTest host(kernels::Scope::kHost, Around(100));
  FakeTest gpus(kernels::Scope::kGpu, [](int device, int i) -> Result<kernels::Sample> {
    return kernels::Sample{{"bandwidthGBps", (device == 2 ? 40.0 : 100.0) * (1 + 0.01 * (i % 3))}};
  });
  Plan plan;
  plan.validation = "v";
  plan.tests.push_back(Planned(host, 50));
  plan.tests.push_back(Planned(gpus, 50));
  plan.tests[1].name = "fake-gpu";
  std::ostringstream log;
  RunOptions o = Options(4);
  o.progress = &log;
  RunPlan(plan, o);
  const std::string text = log.str();
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_EQ(text.find('\033'), std::string::npos) << text;
  EXPECT_EQ(text.find("sample 1"), std::string::npos) << text;
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << text;
  EXPECT_THAT(lines[0], HasSubstr("[1/2] fake: started on the host (warm-up 1, then 5..30"));
  EXPECT_THAT(lines[1], HasSubstr("[1/2] fake: PASS in "));
  EXPECT_THAT(lines[2], HasSubstr("[2/2] fake-gpu: started on 4 GPUs"));
  EXPECT_THAT(lines[3], HasSubstr("fake-gpu [gpu2]: FAIL after"));
  EXPECT_THAT(lines[4], HasSubstr("[2/2] fake-gpu: FAIL: 1 FAIL, 3 PASS in "));
}

// On a terminal: a status line rewritten in place (carriage return, erase line) with each
// target's sample, cut to the terminal's width, then the test's end line in its place.
TEST(RunnerProgress, OnATerminalOneLineRewrittenInPlace) {
  FakeTest gpus(kernels::Scope::kGpu, Around(100));
  std::ostringstream term;
  RunOptions o = Options(2);
  o.progress = &term;
  o.progress_columns = 60;
  RunOne(Planned(gpus, 50), o);
  const std::string text = term.str();
  EXPECT_NE(text.find("\r\033[K[1/1] fake: gpu0 "), std::string::npos) << text;
  EXPECT_NE(text.find("sample 5 "), std::string::npos) << text;
  // Only the end stays on its own line.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("\r\033[K[1/1] fake: PASS on all 2 in "), std::string::npos) << text;
  // No status line is wider than the terminal.
  for (std::size_t at = text.find('\r'); at != std::string::npos; at = text.find('\r', at + 1)) {
    const std::size_t end = std::min(text.find('\r', at + 1), text.find('\n', at + 1));
    const std::string line = text.substr(at, end - at);
    EXPECT_LT(line.size() - 4, 60u) << line;  // less the \r\033[K
  }
}

}  // namespace
}  // namespace perfgate::worker
