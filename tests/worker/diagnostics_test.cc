// Capture on failure as the person on call reads it: a failing test's bundle names the failure,
// carries the power/clock/throttle timeline sampled while it ran and an NVML dump with hints
// that point at the fault, says why a part is missing instead of inventing it, and stays within
// its bounds. NVML and the GPUs are stubs; no device is needed.
#include "worker/diagnostics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "worker/cluster.h"
#include "worker/runner.h"

namespace perfgate::worker {
namespace {

using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;
namespace nvml = kernels::nvml;

// A GPU test whose samples come in around `mean`, each taking a few milliseconds.
class SlowFake : public kernels::Test {
 public:
  explicit SlowFake(double mean) : mean_(mean) {
    info_.type = "fake";
    info_.scope = kernels::Scope::kGpu;
    info_.metrics = {{"bandwidthGBps", "GB/s", true, ""}};
  }
  const kernels::TestInfo& Info() const override { return info_; }
  double SampleSeconds(const kernels::Params&, int) const override { return 0.005; }
  Result<std::unique_ptr<kernels::TestRun>> Prepare(const kernels::Params&,
                                                    const kernels::Target&) const override {
    struct Run : kernels::TestRun {
      double mean;
      int i = 0;
      Result<kernels::Sample> RunSample() override {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return kernels::Sample{{"bandwidthGBps", mean * (1 + 0.001 * (i++ % 3))}};
      }
    };
    auto run = std::make_unique<Run>();
    run->mean = mean_;
    return std::unique_ptr<kernels::TestRun>(std::move(run));
  }

 private:
  kernels::TestInfo info_;
  double mean_;
};

// "stream" on two GPUs, bound 150 GB/s: the fake's 100 GB/s fails it.
v1alpha1::Report RunFailingTest(TimelineRecorder* timeline) {
  static const SlowFake test(100);
  PlannedTest t;
  t.name = "stream";
  t.type = "fake";
  t.test = &test;
  t.metrics = test.Info().metrics;
  v1alpha1::Threshold spec;
  spec.set_metric("bandwidthGBps");
  spec.set_statistic("median");
  spec.set_op(">=");
  spec.set_value(150);
  t.threshold_specs.push_back(spec);
  t.thresholds.push_back({"bandwidthGBps", verdict::Statistic::kMedian, verdict::Op::kGe, 150});
  t.sampling.warmup = 1;
  t.sampling.min_repeats = 8;
  t.sampling.max_repeats = 8;
  t.sampling.fixed = true;
  t.sampling.max_seconds = 1e9;
  Plan plan;
  plan.validation = "v";
  plan.tests.push_back(t);
  RunOptions o;
  o.identity = [](v1alpha1::Identity* id) { id->set_hostname("node-3"); };
  o.list_gpus = []() -> Result<std::vector<kernels::GpuDevice>> {
    std::vector<kernels::GpuDevice> v(2);
    v[1].ordinal = 1;
    return v;
  };
  o.timeline = timeline;
  return RunPlan(plan, o);
}

// GPU 1 holds 1410 MHz at 84 C in a hardware slowdown; GPU 0 runs at 1980 MHz, 60 C.
Result<nvml::Telemetry> RecordedTelemetry(int ordinal) {
  nvml::Telemetry t;
  t.sm_clock_mhz = ordinal == 1 ? 1410 : 1980;
  t.temperature_c = ordinal == 1 ? 84 : 60;
  t.power_w = ordinal == 1 ? 690 : 540;
  t.clocks_event_reasons =
      ordinal == 1 ? nvml::kClocksEventHwSlowdown | nvml::kClocksEventSwPowerCap : 0;
  return t;
}

std::string File(const Bundle& b, const std::string& name) {
  for (const auto& f : b.files) {
    if (f.name == name) return f.content;
  }
  return "";
}

const v1alpha1::DiagnosisPart* Part(const Bundle& b, const std::string& name) {
  for (const auto& p : b.summary.parts()) {
    if (p.name() == name) return &p;
  }
  return nullptr;
}

TEST(Diagnostics, CapturesOnlyAFailureAndOnlyWhenTheSpecAllows) {
  v1alpha1::Report report;
  report.add_tests()->set_verdict(v1alpha1::PASS);
  v1alpha1::Diagnostics on_failure;  // the default
  EXPECT_FALSE(ShouldCapture(on_failure, report));
  report.add_tests()->set_verdict(v1alpha1::FAIL);
  EXPECT_TRUE(ShouldCapture(on_failure, report));
  v1alpha1::Diagnostics never;
  never.set_capture("Never");
  EXPECT_FALSE(ShouldCapture(never, report));
}

// A node whose GPUs ran "gemm" with these TFLOPS medians, all passing a 500 bound, except where
// `fail` says; GPUs named by `models` (default: all the same H100).
v1alpha1::Report GemmOnGpus(const std::vector<double>& tflops, std::vector<std::string> models = {},
                            int fail = -1) {
  v1alpha1::Report report;
  for (std::size_t i = 0; i < tflops.size(); ++i) {
    auto* gpu = report.mutable_identity()->add_gpus();
    gpu->set_index(static_cast<int>(i));
    gpu->set_name(i < models.size() ? models[i] : "NVIDIA H100 80GB HBM3");
    auto* t = report.add_tests();
    t->set_name("gemm");
    t->set_type("gemm");
    t->set_device("gpu" + std::to_string(i));
    t->set_verdict(static_cast<int>(i) == fail ? v1alpha1::FAIL : v1alpha1::PASS);
    auto* th = t->add_thresholds();
    th->mutable_threshold()->set_metric("tflops");
    th->mutable_threshold()->set_statistic("median");
    th->mutable_threshold()->set_op(">=");
    th->set_observed(tflops[i]);
    th->set_bound(500);
    th->set_verdict(t->verdict());
  }
  return report;
}

TEST(Diagnostics, AGpuLaggingItsSiblingsTriggersTheCaptureAndIsNamed) {
  // gpu3 passes its bound but runs 9% below the node's other seven.
  const v1alpha1::Report report = GemmOnGpus({673, 671, 675, 612, 674, 670, 676, 672});
  const auto lagging = LaggingDevices(report);
  ASSERT_EQ(lagging.size(), 1u);
  EXPECT_EQ(lagging[0].device, "gpu3");
  EXPECT_EQ(lagging[0].what,
            "gemm [gpu3]: tflops median 612 is 9.0% below its 8 GPUs' median 672.5");
  v1alpha1::Diagnostics on_failure;
  EXPECT_TRUE(ShouldCapture(on_failure, report));
  v1alpha1::Diagnostics never;
  never.set_capture("Never");
  EXPECT_FALSE(ShouldCapture(never, report));

  DiagnosisInputs in;
  in.report = &report;
  const Bundle bundle = AssembleBundle(in);
  ASSERT_EQ(bundle.summary.lagging_size(), 1);
  EXPECT_EQ(bundle.summary.lagging(0), lagging[0].what);
  EXPECT_EQ(bundle.summary.failures_size(), 0);
  // The lagging GPU's test is in the bundle whole, and none of its healthy siblings.
  const Json failures = Json::parse(File(bundle, "failures.json"));
  ASSERT_EQ(failures["tests"].size(), 1u) << failures.dump();
  EXPECT_EQ(failures["tests"][0]["device"], "gpu3");
}

TEST(Diagnostics, NoLagAmongHealthyGpusTooFewGpusOrAFailureAlready) {
  // Eight healthy GPUs within 0.9% of each other.
  EXPECT_THAT(LaggingDevices(GemmOnGpus({673, 671, 675, 669, 674, 670, 676, 672})),
              ::testing::IsEmpty());
  EXPECT_FALSE(
      ShouldCapture(v1alpha1::Diagnostics{}, GemmOnGpus({673, 671, 675, 669, 674, 670, 676, 672})));
  // Four GPUs give no reliable spread, however far one is.
  EXPECT_THAT(LaggingDevices(GemmOnGpus({673, 671, 560, 672})), ::testing::IsEmpty());
  // Eight GPUs of two models are two groups of four.
  const std::string h100 = "NVIDIA H100 80GB HBM3";
  const std::string h200 = "NVIDIA H200";
  EXPECT_THAT(LaggingDevices(GemmOnGpus({673, 671, 612, 672, 900, 905, 902, 901},
                                        {h100, h100, h100, h100, h200, h200, h200, h200})),
              ::testing::IsEmpty());
  // A GPU that fails is a failure, not a lag.
  const v1alpha1::Report failing = GemmOnGpus({673, 671, 675, 412, 674, 670, 676, 672}, {}, 3);
  EXPECT_THAT(LaggingDevices(failing), ::testing::IsEmpty());
  EXPECT_TRUE(ShouldCapture(v1alpha1::Diagnostics{}, failing));
}

TEST(Diagnostics, AFailingGpuTestCarriesItsTimelineAndHintsNamingTheThrottledGpu) {
  TimelineRecorder timeline(RecordedTelemetry, 0.005);
  v1alpha1::Report report = RunFailingTest(&timeline);
  ASSERT_EQ(report.verdict(), v1alpha1::FAIL);

  DiagnosisInputs in;
  in.report = &report;
  in.spec_text = "spec:\n  tests: [stream]\n";
  in.timelines = timeline.Timelines();
  in.nvml = Status(Code::kUnavailable, "NVML unavailable: libnvidia-ml.so.1: cannot open");
  const Bundle b = AssembleBundle(in);

  EXPECT_THAT(b.summary.failures(), Contains(HasSubstr("stream [gpu0]")));
  EXPECT_THAT(b.summary.failures(), Contains(HasSubstr("stream [gpu1]")));
  EXPECT_THAT(b.summary.hints(),
              Contains(AllOf(HasSubstr("stream gpu1"), HasSubstr("hardware slowdown"))));
  EXPECT_THAT(b.summary.hints(),
              Contains(AllOf(HasSubstr("stream gpu1"), HasSubstr("84 C"), HasSubstr("1410 MHz"))));
  for (const auto& h : b.summary.hints()) {
    EXPECT_THAT(h, Not(AllOf(HasSubstr("gpu0"), HasSubstr("slowdown")))) << h;
  }
  const Json tl = Json::parse(File(b, "timeline.json"));
  ASSERT_TRUE(tl["stream"]["gpus"].contains("gpu1")) << tl.dump();
  const Json& first = tl["stream"]["gpus"]["gpu1"][0];
  EXPECT_EQ(first["smClockMHz"], 1410);
  EXPECT_EQ(first["powerW"], 690);
  EXPECT_THAT(first["clocksEventReasons"].dump(), HasSubstr("HwSlowdown"));
  EXPECT_EQ(tl["stream"]["gpus"]["gpu0"][0]["temperatureC"], 60);

  // The failing tests whole, with their samples; the spec; what is absent and why.
  const Json failures = Json::parse(File(b, "failures.json"));
  EXPECT_EQ(failures["tests"].size(), 2U);
  EXPECT_EQ(failures["tests"][0]["metrics"][0]["samples"].size(), 8U);
  EXPECT_EQ(File(b, "spec.yaml"), in.spec_text);
  ASSERT_NE(Part(b, "nvml.json"), nullptr);
  EXPECT_THAT(Part(b, "nvml.json")->note(), HasSubstr("NVML unavailable"));
  EXPECT_EQ(File(b, "nvml.json"), "");
  EXPECT_EQ(Part(b, "nccl-topology.xml")->note(), "no NCCL test ran");
  EXPECT_THAT(Part(b, "profile.nsys-rep")->note(), HasSubstr("skipped"));
  std::size_t total = 0;
  for (const auto& f : b.files) total += f.content.size();
  EXPECT_EQ(b.summary.bytes(), static_cast<int>(total));
}

TEST(Diagnostics, WithoutNvmlTheTimelineSaysSoInsteadOfInventingReadings) {
  TimelineRecorder timeline(
      [](int) -> Result<nvml::Telemetry> {
        return Status(Code::kUnavailable, "NVML unavailable: libnvidia-ml.so.1: cannot open");
      },
      0.005);
  v1alpha1::Report report = RunFailingTest(&timeline);
  DiagnosisInputs in;
  in.report = &report;
  in.timelines = timeline.Timelines();
  const Bundle b = AssembleBundle(in);
  const Json tl = Json::parse(File(b, "timeline.json"));
  EXPECT_THAT(tl["stream"]["note"].get<std::string>(), HasSubstr("NVML unavailable"));
  EXPECT_FALSE(tl["stream"].contains("gpus"));
  EXPECT_THAT(b.summary.hints(),
              Contains(HasSubstr("stream: no timeline (gpu0: NVML unavailable")));
}

TEST(Diagnostics, ALongTestKeepsItsWholeSpanWithinThePointBound) {
  TimelineRecorder timeline(RecordedTelemetry, 0.001, /*max_points=*/8);
  timeline.Begin("soak", {0});
  // Until the points have been thinned twice (the step is 4 ms), at most 10 s on a busy machine.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (timeline.Timelines().at("soak").interval_seconds < 0.004 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  timeline.End();
  const auto t = timeline.Timelines().at("soak");
  const auto& points = t.points.at(0);
  EXPECT_GE(t.interval_seconds, 0.004);  // coarser than asked: points were thinned
  EXPECT_LT(points.size(), 8U);
  EXPECT_GE(points.size(), 2U);
  // The start is kept, and the points still reach past the first thinning's span.
  EXPECT_LT(points.front().seconds, 0.001);
  EXPECT_GE(points.back().seconds, 0.004);
}

TEST(Diagnostics, TheBundleIsCutToItsBoundsAndSaysWhatWasCut) {
  v1alpha1::Report report;
  auto* failing = report.add_tests();
  failing->set_name("gemm");
  failing->set_device("gpu2");
  failing->set_verdict(v1alpha1::FAIL);
  failing->set_reason("tflops median 610 (>= 700)");
  DiagnosisInputs in;
  in.report = &report;
  NvmlDump dump;
  dump.json = std::string(3 * 1024 * 1024, 'x');
  in.nvml = dump;
  in.nccl_topology = std::string(100 * 1024, 't');
  in.spec_text = std::string(50 * 1024, 's');
  const Bundle b = AssembleBundle(in, /*part_bytes=*/64 * 1024, /*total_bytes=*/150 * 1024);

  std::size_t total = 0;
  for (const auto& f : b.files) {
    EXPECT_LE(f.content.size(), 64U * 1024) << f.name;
    total += f.content.size();
  }
  EXPECT_LE(total, 150U * 1024);
  const auto* nvml_part = Part(b, "nvml.json");
  ASSERT_NE(nvml_part, nullptr);
  EXPECT_TRUE(nvml_part->truncated());
  EXPECT_THAT(nvml_part->note(), HasSubstr("cut from 3.0 MiB"));
  EXPECT_THAT(File(b, "nvml.json"), HasSubstr("... cut:"));
  // The spec comes last and finds the bound spent.
  const auto* spec = Part(b, "spec.yaml");
  ASSERT_NE(spec, nullptr);
  EXPECT_TRUE(spec->truncated());
  EXPECT_THAT(spec->note(), AnyOf(HasSubstr("left out"), HasSubstr("cut from")));
  EXPECT_THAT(b.summary.failures(), Contains("gemm [gpu2]: tflops median 610 (>= 700)"));
}

// --- NVML dump from recorded answers ---------------------------------------------------------

nvml::nvmlDevice_t Handle(unsigned i) { return reinterpret_cast<nvml::nvmlDevice_t>(i + 1); }
unsigned Index(nvml::nvmlDevice_t d) {
  return static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(d)) - 1;
}

nvml::NvmlFunctions TwoGpus() {
  nvml::NvmlFunctions f;
  f.Init = [] { return nvml::kSuccess; };
  f.ErrorString = [](nvml::nvmlReturn_t) { return "recorded"; };
  f.SystemGetDriverVersion = [](char* buf, unsigned n) {
    std::strncpy(buf, "570.124.06", n);
    return nvml::kSuccess;
  };
  f.DeviceGetCount = [](unsigned* n) {
    *n = 2;
    return nvml::kSuccess;
  };
  f.DeviceGetHandleByIndex = [](unsigned i, nvml::nvmlDevice_t* d) {
    *d = Handle(i);
    return nvml::kSuccess;
  };
  f.DeviceGetName = [](nvml::nvmlDevice_t, char* buf, unsigned n) {
    std::strncpy(buf, "NVIDIA H200", n);
    return nvml::kSuccess;
  };
  f.DeviceGetPciInfo = [](nvml::nvmlDevice_t d, nvml::nvmlPciInfo_t* pci) {
    std::snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", 0x18 + Index(d));
    return nvml::kSuccess;
  };
  f.DeviceGetPowerManagementLimit = [](nvml::nvmlDevice_t, unsigned* mw) {
    *mw = 700000;
    return nvml::kSuccess;
  };
  f.DeviceGetPowerUsage = [](nvml::nvmlDevice_t d, unsigned* mw) {
    *mw = Index(d) == 1 ? 695000 : 410000;
    return nvml::kSuccess;
  };
  // GPU 1's PCIe link resent 12 TLPs.
  f.DeviceGetPcieReplayCounter = [](nvml::nvmlDevice_t d, unsigned* v) {
    *v = Index(d) == 1 ? 12 : 0;
    return nvml::kSuccess;
  };
  return f;
}

TEST(Diagnostics, TheNvmlDumpListsEveryGpuAndHintsAtTheOneWithPcieReplays) {
  auto lib = nvml::Nvml::FromTable(TwoGpus());
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  const NvmlDump dump = DumpNvml(**lib);
  const Json j = Json::parse(dump.json);
  EXPECT_EQ(j["driverVersion"], "570.124.06");
  ASSERT_EQ(j["gpus"].size(), 2U);
  EXPECT_EQ(j["gpus"][0]["name"], "NVIDIA H200");
  EXPECT_EQ(j["gpus"][1]["pciBusId"], "0000:19:00.0");
  EXPECT_EQ(j["gpus"][1]["powerLimitW"], 700);
  EXPECT_EQ(j["gpus"][1]["telemetry"]["powerW"], 695);
  EXPECT_EQ(j["gpus"][1]["health"]["pcieReplayCount"], 12);
  ASSERT_EQ(dump.hints.size(), 1U);
  EXPECT_THAT(dump.hints[0],
              AllOf(HasSubstr("gpu1 (0000:19:00.0)"), HasSubstr("pcieReplayCount 12")));
}

// --- Where the bundle goes -------------------------------------------------------------------

TEST(Diagnostics, TheBundleConfigMapIsOwnedByItsResultAndLabelledForThePlugin) {
  ClusterTarget target;
  target.result_name = "pval-acceptance-g1-node-3";
  target.name_space = "perfgate-system";
  target.node_name = "node-3";
  target.run = "g1";
  target.validation_name = "acceptance";
  target.validation_uid = "v-uid";
  auto text =
      DiagnosisConfigMapJson(target, {{"summary.json", "{}"}, {"nvml.json", "[]"}}, "result-uid");
  ASSERT_TRUE(text.ok());
  const Json cm = Json::parse(*text);
  EXPECT_EQ(cm["metadata"]["name"], "pval-acceptance-g1-node-3-diagnosis");
  EXPECT_EQ(cm["metadata"]["labels"]["perfgate.io/diagnosis"], "true");
  EXPECT_EQ(cm["metadata"]["labels"]["perfgate.io/node"], "node-3");
  EXPECT_EQ(cm["metadata"]["labels"]["perfgate.io/run"], "g1");
  EXPECT_EQ(cm["metadata"]["ownerReferences"][0]["kind"], "PerfResult");
  EXPECT_EQ(cm["metadata"]["ownerReferences"][0]["uid"], "result-uid");
  EXPECT_EQ(cm["data"]["nvml.json"], "[]");
  // A result that already existed (a retried pod): owned by the validation instead.
  const Json by_validation = Json::parse(*DiagnosisConfigMapJson(target, {}, ""));
  EXPECT_EQ(by_validation["metadata"]["ownerReferences"][0]["kind"], "PerfValidation");
}

TEST(Diagnostics, WritesTheBundleAndItsSummaryIntoTheFolder) {
  const std::string dir = ::testing::TempDir() + "/diagnostics-bundle";
  std::filesystem::remove_all(dir);
  Bundle b;
  b.files.push_back({"timeline.json", "{}"});
  b.summary.add_failures("stream [gpu0]: slow");
  ASSERT_TRUE(WriteBundle(b, dir + "/node-3").ok());
  std::ifstream summary(dir + "/node-3/summary.json");
  const Json j = Json::parse(summary);
  EXPECT_EQ(j["failures"][0], "stream [gpu0]: slow");
  EXPECT_TRUE(std::filesystem::exists(dir + "/node-3/timeline.json"));
}

TEST(Diagnostics, NsysProfilesTheFailingTestAloneAndIsFoundOnThePath) {
  const std::string dir = ::testing::TempDir() + "/diagnostics-path";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_EQ(FindOnPath("nsys", "/nonexistent:" + dir), "");
  { std::ofstream(dir + "/nsys") << "#!/bin/sh\n"; }
  std::filesystem::permissions(dir + "/nsys", std::filesystem::perms::owner_all);
  EXPECT_EQ(FindOnPath("nsys", "/nonexistent:" + dir), dir + "/nsys");
  const auto cmd = NsysCommand(dir + "/nsys", "/usr/bin/perfgate-worker", "/etc/perfgate/plan.yaml",
                               "gemm", "/var/lib/perfgate/diagnostics/r/profile", false);
  const std::string line = ::testing::PrintToString(cmd);
  EXPECT_THAT(line, AllOf(HasSubstr("\"profile\""), HasSubstr("\"--only\", \"gemm\""),
                          HasSubstr("\"--no-store\""),
                          HasSubstr("\"/var/lib/perfgate/diagnostics/r/profile\"")));
}

}  // namespace
}  // namespace perfgate::worker
