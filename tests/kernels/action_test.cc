// The recommended action (common/action.h): every failure class the tests and health checks
// produce maps to a step, a report's step is its worst finding, repeated failures climb the
// ladder, and docs/diagnostics.md lists every class.
#include "common/action.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "kernels/registry.h"

namespace perfgate {
namespace {

using action::Step;

// Every count and flag any test reports: a bound on it that fails names a fault, so each has a
// class of its own (a figure such as a bandwidth falls to "retest" on purpose).
TEST(Action, EveryCountAndFlagOfEveryTestHasAClass) {
  int checked = 0;
  for (const kernels::Test* test : kernels::AllTests(/*include_fixtures=*/false)) {
    for (const auto& m : test->Info().metrics) {
      if (m.unit != "count" && m.unit != "bool") continue;
      ++checked;
      EXPECT_TRUE(action::MetricClass(m.name).has_value())
          << test->Info().type << " reports " << m.name
          << " (a count or flag) and common/action.cc does not say what its failure calls for";
    }
  }
  EXPECT_GT(checked, 30) << "the registry's health, memtest, burn, config and port counts";
}

v1alpha1::TestResult Failed(const std::string& test, const std::string& device,
                            const std::string& metric) {
  v1alpha1::TestResult t;
  t.set_name(test);
  t.set_type(test);
  t.set_device(device);
  t.set_verdict(v1alpha1::FAIL);
  auto* th = t.add_thresholds();
  th->mutable_threshold()->set_metric(metric);
  th->set_verdict(v1alpha1::FAIL);
  return t;
}

v1alpha1::Report Report(v1alpha1::Verdict verdict, std::vector<v1alpha1::TestResult> tests) {
  v1alpha1::Report r;
  r.set_verdict(verdict);
  for (auto& t : tests) *r.add_tests() = std::move(t);
  return r;
}

TEST(Action, APassNeedsNothing) {
  v1alpha1::TestResult ok;
  ok.set_verdict(v1alpha1::PASS);
  const auto a = action::Recommend(Report(v1alpha1::PASS, {ok}));
  EXPECT_EQ(a.step(), "none");
  EXPECT_TRUE(a.evidence().empty());
}

TEST(Action, TheWorstFindingDecidesAndNamesItsDevice) {
  const auto a = action::Recommend(
      Report(v1alpha1::FAIL, {Failed("hbm-stream", "gpu1", "triadBandwidthGBps"),
                              Failed("health", "gpu3", "rowRemapFailure"),
                              Failed("health", "gpu5", "pcieLinkWidthDegraded")}));
  EXPECT_EQ(a.step(), "rma");
  ASSERT_EQ(a.devices_size(), 1);
  EXPECT_EQ(a.devices(0), "gpu3");
  ASSERT_EQ(a.evidence_size(), 3);
  EXPECT_EQ(a.evidence(0).rfind("health [gpu3]: rowRemapFailure: rma (", 0), 0u) << a.evidence(0);
  EXPECT_NE(a.evidence(1).find("pcieLinkWidthDegraded: reseat"), std::string::npos);
  EXPECT_NE(a.evidence(2).find("triadBandwidthGBps: retest"), std::string::npos);
}

TEST(Action, TheXidsInTheDetailsDecideAnXidFailure) {
  auto fell_off = Failed("health", "gpu2", "xidEventCount");
  (*fell_off.mutable_details())["xidEvents"] = "79";
  auto a = action::Recommend(Report(v1alpha1::FAIL, {fell_off}));
  EXPECT_EQ(a.step(), "reset-gpu");
  ASSERT_EQ(a.evidence_size(), 1);
  EXPECT_NE(a.evidence(0).find("XID 79: reset-gpu (the GPU fell off the bus"), std::string::npos)
      << a.evidence(0);

  auto remap = Failed("health", "gpu2", "kernelLogXidCount");
  (*remap.mutable_details())["kernelLogXids"] = "48, 64";
  a = action::Recommend(Report(v1alpha1::FAIL, {remap}));
  EXPECT_EQ(a.step(), "rma");
  EXPECT_EQ(a.evidence_size(), 2);

  auto nvlink = Failed("health", "gpu0", "xidEventCount");
  (*nvlink.mutable_details())["xidEvents"] = "74";
  EXPECT_EQ(action::Recommend(Report(v1alpha1::FAIL, {nvlink})).step(), "reseat");
}

TEST(Action, AGpuThatComputesOtherAnswersThanItsPeersIsReturned) {
  v1alpha1::TestResult sdc;
  sdc.set_name("consistency");
  sdc.set_type("consistency");
  sdc.set_device("gpus0-7");
  (*sdc.mutable_details())["digest.gemm-bf16"] = "9f2c0d11aa03b7e4";
  (*sdc.mutable_details())["digest.gemm-bf16.gpu3"] = "9f2c0d11aa03b7e5";
  sdc.set_verdict(v1alpha1::FAIL);
  sdc.set_reason("silent data corruption suspected: gpu3 differs from 7 GPUs in gemm-bf16");
  const auto a = action::Recommend(Report(v1alpha1::FAIL, {sdc}));
  EXPECT_EQ(a.step(), "rma");
  ASSERT_EQ(a.devices_size(), 1);
  EXPECT_EQ(a.devices(0), "gpu3");
}

TEST(Action, AnErrorOrAnInconclusiveTestIsRetested) {
  v1alpha1::TestResult err;
  err.set_name("gemm");
  err.set_device("gpu0");
  err.set_verdict(v1alpha1::ERROR);
  err.set_reason("cuBLAS: CUBLAS_STATUS_NOT_INITIALIZED");
  auto a = action::Recommend(Report(v1alpha1::ERROR, {err}));
  EXPECT_EQ(a.step(), "retest");
  ASSERT_EQ(a.evidence_size(), 1);
  EXPECT_NE(a.evidence(0).find("CUBLAS_STATUS_NOT_INITIALIZED"), std::string::npos);

  // No tests at all: the run's reason is the evidence.
  v1alpha1::Report none;
  none.set_verdict(v1alpha1::ERROR);
  none.set_reason("worker crashed");
  a = action::Recommend(none);
  EXPECT_EQ(a.step(), "retest");
  EXPECT_NE(a.evidence(0).find("worker crashed"), std::string::npos);
}

TEST(Action, RepeatedFailuresClimbTheLadderButNeverToRma) {
  EXPECT_EQ(action::Escalate(Step::kRetest, 0, true), Step::kRetest);
  EXPECT_EQ(action::Escalate(Step::kRetest, 1, true), Step::kResetGpu);
  EXPECT_EQ(action::Escalate(Step::kRetest, 2, true), Step::kRebootNode);
  EXPECT_EQ(action::Escalate(Step::kRetest, 3, true), Step::kReseat);
  EXPECT_EQ(action::Escalate(Step::kRetest, 30, true), Step::kReseat);
  // A host figure: no GPU to reset.
  EXPECT_EQ(action::Escalate(Step::kRetest, 1, false), Step::kRebootNode);
  EXPECT_EQ(action::Escalate(Step::kRma, 5, true), Step::kRma);
  EXPECT_EQ(action::Escalate(Step::kNone, 5, true), Step::kNone);
}

TEST(Action, StepNamesRoundTrip) {
  for (Step s : {Step::kNone, Step::kRetest, Step::kResetGpu, Step::kRebootNode, Step::kReseat,
                 Step::kRma}) {
    EXPECT_EQ(action::ParseStep(action::StepName(s)), s);
  }
  EXPECT_FALSE(action::ParseStep("replace").has_value());
}

// The user's table: every class with its step and reason, as the code has it.
TEST(Action, TheDocsTableListsEveryClass) {
  std::ifstream in(std::string(PERFGATE_SOURCE_DIR) + "/docs/diagnostics.md");
  ASSERT_TRUE(in) << "docs/diagnostics.md";
  std::stringstream doc;
  doc << in.rdbuf();
  for (const auto& c : action::ClassTable()) {
    const std::string row =
        "| " + c.what + " | " + std::string(action::StepName(c.step)) + " | " + c.why + " |";
    EXPECT_NE(doc.str().find(row), std::string::npos) << "docs/diagnostics.md lacks the row\n"
                                                      << row;
  }
}

}  // namespace
}  // namespace perfgate
