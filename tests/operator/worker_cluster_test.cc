// The worker's cluster-mode object: what the operator and `kubectl get pres` read.
#include "worker/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <vector>

#include "common/termination.h"
#include "tests/kube/fakes.h"

namespace perfgate::worker {
namespace {

v1alpha1::Report TwoTests() {
  v1alpha1::Report r;
  r.set_verdict(v1alpha1::FAIL);
  auto* ok = r.add_tests();
  ok->set_name("hbm");
  ok->set_verdict(v1alpha1::PASS);
  auto* th = ok->add_thresholds();
  th->mutable_threshold()->set_metric("triadBandwidthGBps");
  th->set_bound(4000);
  th->set_observed(4500);
  th->set_verdict(v1alpha1::PASS);
  auto* bad = r.add_tests();
  bad->set_name("gemm");
  bad->set_verdict(v1alpha1::FAIL);
  auto* th2 = bad->add_thresholds();
  th2->mutable_threshold()->set_metric("tflops");
  th2->mutable_threshold()->set_statistic("median");
  th2->mutable_threshold()->set_op(">=");
  th2->set_bound(700);
  th2->set_observed(512.25);
  th2->set_verdict(v1alpha1::FAIL);
  return r;
}

TEST(WorkerCluster, WorstFigureNamesTheFailingTestFigureAndBound) {
  EXPECT_EQ(WorstFigure(TwoTests()), "gemm tflops median 512.2 (>= 700.0)");
}

TEST(WorkerCluster, PassingReportShowsTheClosestToItsBound) {
  v1alpha1::Report r = TwoTests();
  r.mutable_tests(1)->set_verdict(v1alpha1::PASS);
  r.mutable_tests(1)->mutable_thresholds(0)->set_verdict(v1alpha1::PASS);
  r.mutable_tests(1)->mutable_thresholds(0)->set_observed(710);
  EXPECT_EQ(WorstFigure(r), "gemm tflops median 710.0 (>= 700.0)");
}

TEST(WorkerCluster, PerfResultIsLabelledAndOwnedByItsValidation) {
  ClusterTarget t{"v-g1-node-0", "perfgate-system", "node-0", "g1", "v", "uid-1"};
  auto text = PerfResultJson(t, TwoTests());
  ASSERT_TRUE(text.ok()) << text.status().message();
  auto j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["kind"], "PerfResult");
  EXPECT_EQ(j["metadata"]["labels"]["perfgate.io/node"], "node-0");
  EXPECT_EQ(j["metadata"]["labels"]["perfgate.io/run"], "g1");
  EXPECT_EQ(j["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(j["metadata"]["ownerReferences"][0]["kind"], "PerfValidation");
  EXPECT_EQ(j["spec"]["report"]["verdict"], "FAIL");
  EXPECT_EQ(j["spec"]["nodeName"], "node-0");
}

// The worker's PerfResult write against a fake clock: an API server answering 500 for 20 s
// is waited out with growing, jittered waits; what cannot succeed by retrying is not retried.
class ResultWriteRetry : public ::testing::Test {
 protected:
  using ms = std::chrono::milliseconds;
  kube::testing::FakeClock clock_;
  std::vector<std::chrono::steady_clock::time_point> attempts_;

  // The waits between attempts, as the clock saw them.
  std::vector<ms> Waits() const {
    std::vector<ms> out;
    for (auto d : clock_.sleeps()) out.push_back(std::chrono::duration_cast<ms>(d));
    return out;
  }

  // Answers `failure` until `outage` has passed since the first attempt, then `then`.
  Status Write(Status failure, ms outage, Status then, ms timeout) {
    const auto start = clock_.Now();
    auto attempt = [&]() -> Status {
      attempts_.push_back(clock_.Now());
      return clock_.Now() - start < outage ? failure : then;
    };
    return RetryResultWrite(attempt, timeout, WriteBackoff{}, clock_, /*jitter_seed=*/42);
  }
};

TEST_F(ResultWriteRetry, TwentySecondsOf500AreWaitedOut) {
  Status st = Write(Unavailable("POST /apis/perfgate.io/v1alpha1/namespaces/x/perfresults: 500"),
                    std::chrono::seconds(20), Status::Ok(), std::chrono::minutes(5));
  ASSERT_TRUE(st.ok()) << st.ToString();
  const std::vector<ms> waits = Waits();
  ASSERT_GE(waits.size(), 4u);
  // Exponential with jitter: each wait in the upper half of 0.5 s, 1 s, 2 s, ... capped at 16 s.
  ms step{500};
  for (ms w : waits) {
    EXPECT_GE(w, step / 2);
    EXPECT_LE(w, step);
    step = std::min(step * 2, ms(16000));
  }
  // Written soon after the outage ended: within one (capped) wait.
  EXPECT_LT(attempts_.back() - attempts_.front(), std::chrono::seconds(20 + 16));
}

TEST_F(ResultWriteRetry, AlreadyExistsIsSuccessAfterALostAnswer) {
  // The first POST was stored but its answer lost (500); the retry finds the object.
  Status st = Write(Unavailable("500"), ms(1), Status(Code::kAlreadyExists, "409 AlreadyExists"),
                    std::chrono::minutes(5));
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(attempts_.size(), 2u);
}

TEST_F(ResultWriteRetry, RefusalsAreNotRetried) {
  for (Code code :
       {Code::kPermissionDenied, Code::kInvalidArgument, Code::kNotFound, Code::kUnauthenticated}) {
    attempts_.clear();
    Status st = Write(Status(code, "403 Forbidden"), std::chrono::hours(1), Status::Ok(),
                      std::chrono::minutes(5));
    EXPECT_EQ(st.code(), code);
    EXPECT_EQ(attempts_.size(), 1u);
  }
  EXPECT_TRUE(RetryableWriteError(Status(Code::kResourceExhausted, "429")));
  EXPECT_TRUE(RetryableWriteError(Status(Code::kDeadlineExceeded, "timeout")));
}

TEST_F(ResultWriteRetry, GivesUpAtTheDeadlineWithTheLastError) {
  Status st = Write(Unavailable("POST ...: 503 ServiceUnavailable"), std::chrono::hours(1),
                    Status::Ok(), std::chrono::seconds(60));
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_THAT(st.message(), ::testing::HasSubstr("503 ServiceUnavailable"));
  EXPECT_THAT(st.message(), ::testing::HasSubstr("gave up after"));
  // The last wait is cut to end at the deadline, and no attempt is made past it.
  EXPECT_EQ(attempts_.back() - attempts_.front(), std::chrono::seconds(60));
}

TEST(WorkerCluster, TerminationResultCarriesTheVerdictAndWhyTheWriteFailed) {
  ClusterTarget t{"v-g1-node-0", "perfgate-system", "node-0", "g1", "v", "uid-1"};
  const std::string message = TerminationResult(t, TwoTests(), "cannot write the PerfResult: 500");
  EXPECT_LE(message.size(), termination::kMaxMessageBytes);
  auto decoded = termination::Decode(message);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->node_name, "node-0");
  EXPECT_EQ(decoded->run, "g1");
  EXPECT_EQ(decoded->validation, "v");
  EXPECT_EQ(decoded->report.verdict(), v1alpha1::FAIL);
  EXPECT_EQ(decoded->worst, "gemm tflops median 512.2 (>= 700.0)");
  EXPECT_EQ(decoded->note, "cannot write the PerfResult: 500");
}

}  // namespace
}  // namespace perfgate::worker
