// A cache behind the API is no scheduling timeout: a worker pod bound while the operator's
// watches stall (a dropped watch backing off, a relist failing through API errors) still looks
// unscheduled in its cache past the scheduling timeout (3 s in these tests). The operator asks
// the API before it gives the node ERROR and deletes the pod, so the node keeps its measured
// verdict.
#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

// The synthetic test on node-0 alone, each sample taking `sample_seconds`.
std::string OnNode0(const std::string& name, const std::string& sample_seconds) {
  std::string y = SyntheticSpec(name, "", "    onFailure: taint\n", "", sample_seconds);
  const std::string selector = "  nodeSelector:\n    nvidia.com/gpu.present: \"true\"\n";
  y.replace(y.find(selector), selector.size(), "  nodes: [node-0]\n");
  return y;
}

}  // namespace

TEST_F(E2E, PodBoundWhileTheCacheIsBehindIsNoSchedulingTimeout) {
  // The scheduler is slow: the operator's cache sees the pod created, unbound.
  sim_->PauseScheduler(true);
  Apply(OnNode0("stale-cache", "1"));
  ASSERT_TRUE(Eventually([&] { return Pods("stale-cache").size() == 1; }, 30));
  const std::string uid = Pods("stale-cache")[0]["metadata"].value("uid", "");
  std::this_thread::sleep_for(std::chrono::seconds(1));  // its watch delivers the pod

  // Then the watches stall and the scheduler binds the pod: the API shows it running, the
  // operator's cache still shows it unbound, past the 3 s scheduling timeout.
  sim_->HoldWatches(true);
  sim_->PauseScheduler(false);
  ASSERT_TRUE(Eventually(
      [&] {
        auto pods = Pods("stale-cache");
        return pods.size() == 1 && pods[0]["status"].value("phase", "") == "Running";
      },
      30));
  std::this_thread::sleep_for(std::chrono::seconds(4));
  // The worker still samples (6 samples of 1 s); its pod was neither deleted nor replaced.
  auto pods = Pods("stale-cache");
  EXPECT_EQ(pods.size(), 1u);
  if (!pods.empty()) {
    EXPECT_EQ(pods[0]["metadata"].value("uid", ""), uid);
    EXPECT_FALSE(pods[0]["metadata"].contains("deletionTimestamp"));
  }
  sim_->HoldWatches(false);

  ASSERT_TRUE(WaitComplete("stale-cache"));
  auto results = Results("stale-cache");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0]["spec"]["report"].value("verdict", ""), "PASS")
      << results[0]["spec"]["report"].value("reason", "");
  EXPECT_EQ(results[0]["spec"].value("writtenBy", "worker"), "worker");
  int creates = 0;
  for (const auto& r : sim_->Requests()) {
    if (r.verb == "create" && r.resource == "pods" && r.code == 201) creates++;
  }
  EXPECT_EQ(creates, 1);
}

// A pod the scheduler really cannot place is still an ERROR after the timeout, confirmed
// through the API (its PodScheduled condition in the reason), and the pod is deleted.
TEST_F(E2E, PodUnschedulableInTheApiStillTimesOut) {
  sim_->PauseScheduler(true);
  Apply(OnNode0("unbound", "0"));
  ASSERT_TRUE(WaitComplete("unbound", 60));
  auto results = Results("unbound");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0]["spec"]["report"].value("verdict", ""), "ERROR");
  EXPECT_EQ(results[0]["spec"]["report"].value("reason", "").rfind("worker pod not scheduled", 0),
            0u)
      << results[0]["spec"]["report"].value("reason", "");
  EXPECT_TRUE(Eventually([&] { return Pods("unbound").empty(); }, 30));
  sim_->PauseScheduler(false);
}

}  // namespace perfgate::e2e
