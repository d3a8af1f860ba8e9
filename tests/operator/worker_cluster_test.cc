// The worker's cluster-mode object: what the operator and `kubectl get pres` read.
#include "worker/cluster.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace perfgate::worker
