// The verdict a worker leaves in its container's termination message: what the operator reads
// back must be the verdict the worker measured, within the kubelet's 4096 bytes.
#include "common/termination.h"

#include <gtest/gtest.h>

#include <string>

namespace perfgate::termination {
namespace {

v1alpha1::TestResult* AddTest(v1alpha1::Report* r, const std::string& name,
                              const std::string& device, v1alpha1::Verdict verdict, double observed,
                              double bound, const std::string& reason = "") {
  auto* t = r->add_tests();
  t->set_name(name);
  t->set_device(device);
  t->set_verdict(verdict);
  t->set_reason(reason);
  auto* th = t->add_thresholds();
  th->mutable_threshold()->set_metric("bandwidthGBps");
  th->mutable_threshold()->set_statistic("median");
  th->mutable_threshold()->set_op(">=");
  th->set_bound(bound);
  th->set_observed(observed);
  th->set_verdict(verdict);
  return t;
}

NodeResult Failing() {
  NodeResult n;
  n.validation = "gpu-accept";
  n.node_name = "node-0";
  n.run = "g3";
  n.worst = "hbm bandwidthGBps median 3500.5 (>= 4000.0)";
  n.note = "cannot write the PerfResult: POST /apis/perfgate.io/v1alpha1/...: 500 InternalError";
  v1alpha1::Report& r = n.report;
  r.set_validation("gpu-accept");
  r.set_verdict(v1alpha1::FAIL);
  r.set_reason("1 of 3 tests failed");
  r.set_completiontime("2026-12-01T19:00:00Z");
  r.set_passed(2);
  r.set_failed(1);
  AddTest(&r, "p2p", "host", v1alpha1::PASS, 700, 600);
  AddTest(&r, "hbm", "gpu3", v1alpha1::FAIL, 3500.5, 4000, "median 3500.5 < 4000");
  AddTest(&r, "gemm", "gpu0", v1alpha1::PASS, 710.25, 700);
  return n;
}

TEST(TerminationMessage, RoundTripKeepsVerdictNodeAndEachTestsFigure) {
  const NodeResult in = Failing();
  const std::string message = Encode(in);
  EXPECT_LE(message.size(), kMaxMessageBytes);
  // What `kubectl describe pod` shows first.
  EXPECT_EQ(message.substr(0, message.find('\n')), "perfgate result v1: FAIL on node-0");

  auto out = Decode(message);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->validation, "gpu-accept");
  EXPECT_EQ(out->node_name, "node-0");
  EXPECT_EQ(out->run, "g3");
  EXPECT_EQ(out->worst, in.worst);
  EXPECT_EQ(out->note, in.note);
  EXPECT_EQ(out->omitted_tests, 0);
  const v1alpha1::Report& r = out->report;
  EXPECT_EQ(r.verdict(), v1alpha1::FAIL);
  EXPECT_EQ(r.validation(), "gpu-accept");
  EXPECT_EQ(r.reason(), "1 of 3 tests failed");
  EXPECT_EQ(r.completiontime(), "2026-12-01T19:00:00Z");
  EXPECT_EQ(r.passed(), 2);
  EXPECT_EQ(r.failed(), 1);
  ASSERT_EQ(r.tests_size(), 3);  // in the report's order
  EXPECT_EQ(r.tests(0).name(), "p2p");
  EXPECT_EQ(r.tests(1).name(), "hbm");
  EXPECT_EQ(r.tests(1).device(), "gpu3");
  EXPECT_EQ(r.tests(1).verdict(), v1alpha1::FAIL);
  EXPECT_EQ(r.tests(1).reason(), "median 3500.5 < 4000");
  ASSERT_EQ(r.tests(1).thresholds_size(), 1);
  const auto& th = r.tests(1).thresholds(0);
  EXPECT_EQ(th.threshold().metric(), "bandwidthGBps");
  EXPECT_EQ(th.threshold().statistic(), "median");
  EXPECT_EQ(th.threshold().op(), ">=");
  EXPECT_DOUBLE_EQ(th.observed(), 3500.5);
  EXPECT_DOUBLE_EQ(th.bound(), 4000);
  EXPECT_EQ(th.verdict(), v1alpha1::FAIL);
  EXPECT_EQ(r.tests(2).verdict(), v1alpha1::PASS);
  EXPECT_DOUBLE_EQ(r.tests(2).thresholds(0).observed(), 710.25);
}

// 8 GPUs x 60 tests with long reasons cannot fit: the verdict and every failing test survive,
// the passing ones that do not fit are counted, and the message still decodes.
TEST(TerminationMessage, ABigReportIsCutTo4096BytesKeepingTheVerdictAndFailures) {
  NodeResult n = Failing();
  n.report.clear_tests();
  const std::string long_reason(400, 'x');
  int total = 0;
  for (int gpu = 0; gpu < 8; ++gpu) {
    for (int k = 0; k < 60; ++k, ++total) {
      const bool fails = gpu == 7 && k == 59;  // the very last test: kept all the same
      AddTest(&n.report, "test-" + std::to_string(k), "gpu" + std::to_string(gpu),
              fails ? v1alpha1::FAIL : v1alpha1::PASS, fails ? 1.5 : 900, 1000,
              fails ? long_reason : "");
    }
  }
  const std::string message = Encode(n);
  EXPECT_LE(message.size(), kMaxMessageBytes);
  EXPECT_GT(message.size(), kMaxMessageBytes - 200) << "the room is used";

  auto out = Decode(message);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->report.verdict(), v1alpha1::FAIL);
  EXPECT_EQ(out->node_name, "node-0");
  EXPECT_GT(out->omitted_tests, 0);
  EXPECT_EQ(out->report.tests_size() + out->omitted_tests, total);
  const auto& last = out->report.tests(out->report.tests_size() - 1);
  EXPECT_EQ(last.name(), "test-59");
  EXPECT_EQ(last.device(), "gpu7");
  EXPECT_EQ(last.verdict(), v1alpha1::FAIL);
  EXPECT_DOUBLE_EQ(last.thresholds(0).observed(), 1.5);
  EXPECT_LT(last.reason().size(), long_reason.size());  // cut, with "..."
  EXPECT_EQ(last.reason().substr(last.reason().size() - 3), "...");
}

TEST(TerminationMessage, LongNamesAndMultibyteTextsStillDecodeInASmallBudget) {
  NodeResult n = Failing();
  n.validation = std::string(253, 'v');
  n.node_name = std::string(253, 'n');
  std::string accents;
  for (int i = 0; i < 400; ++i) accents += "\xc3\xa9";  // é, two bytes each
  n.worst = accents;
  n.report.set_reason(accents);
  n.note = accents;
  for (size_t budget : {size_t{512}, size_t{1024}, kMaxMessageBytes}) {
    const std::string message = Encode(n, budget);
    EXPECT_LE(message.size(), budget);
    auto out = Decode(message);
    ASSERT_TRUE(out.ok()) << budget << ": " << out.status().ToString() << "\n" << message;
    EXPECT_EQ(out->report.verdict(), v1alpha1::FAIL) << budget;
    // Cut texts end on a whole character: no replacement characters, only é and "...".
    for (const std::string& s : {out->worst, out->report.reason(), out->note}) {
      EXPECT_EQ(s.find("\xef\xbf\xbd"), std::string::npos) << budget;
    }
  }
}

TEST(TerminationMessage, PlainMessagesAndDamagedResultsAreToldApart) {
  auto plain = Decode("cannot load the plan: /etc/perfgate/plan.yaml: no such file");
  EXPECT_EQ(plain.status().code(), Code::kNotFound);
  EXPECT_EQ(Decode("").status().code(), Code::kNotFound);
  const std::string message = Encode(Failing());
  auto damaged = Decode(message.substr(0, message.size() / 2));
  EXPECT_EQ(damaged.status().code(), Code::kInvalidArgument);
  auto no_verdict = Decode(std::string(kHeader) + ": ? on x\n{\"node\":\"x\"}");
  EXPECT_EQ(no_verdict.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace perfgate::termination
