// A node's identity across operator restarts (docs/lifecycle.md, "New and changed nodes"): a
// driver label that changed while the operator was down, and a last result whose driver is not
// the one the node's labels say when the operator starts, each get the node tested again.
#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

const std::string kWatchIdentity =
    "  watchNodes:\n"
    "    identityChange: true\n";

// Labels `node` with the driver GPU Feature Discovery would write for `version` (a.b.c).
void LabelDriver(const kubesim::KubeSim& sim, const std::string& node, const std::string& major,
                 const std::string& minor, const std::string& rev) {
  auto r =
      Kubectl(sim, {"label", "node", node, "--overwrite", "nvidia.com/cuda.driver.major=" + major,
                    "nvidia.com/cuda.driver.minor=" + minor, "nvidia.com/cuda.driver.rev=" + rev});
  ASSERT_EQ(r.exitCode, 0) << r.err;
}

TEST_F(E2E, ADriverLabelChangedWhileTheOperatorWasDownIsValidatedAgain) {
  for (const char* n : {"node-0", "node-1", "node-2", "node-3"})
    LabelDriver(*sim_, n, "550", "54", "15");
  Apply(SyntheticSpec("restarted", "", "    onFailure: none\n", kWatchIdentity));
  ASSERT_TRUE(WaitComplete("restarted"));
  ASSERT_EQ(Validation("restarted")["status"]["nodeIdentities"].value("node-2", ""),
            "driver=550.54.15 product=NVIDIA-H200 count=8");
  const std::string old = ResultOf(Results("restarted"), "node-2");
  ASSERT_FALSE(old.empty());

  // The operator is down while node-2's driver is upgraded; it starts again afterwards.
  op_.Kill(SIGTERM);
  LabelDriver(*sim_, "node-2", "560", "35", "03");
  op_.Start(*sim_);

  ASSERT_TRUE(Eventually(
      [&] {
        const Json v = Validation("restarted");
        return v["status"].value("nodeIdentities", Json::object()).value("node-2", "") ==
                   "driver=560.35.03 product=NVIDIA-H200 count=8" &&
               !v["status"].value("completionTime", "").empty();
      },
      90))
      << Validation("restarted").dump(2);
  const Json v = Validation("restarted");
  EXPECT_EQ(v["status"]["retests"].value("node-2", 0), 1) << v.dump(2);
  EXPECT_EQ(v["status"].value("passedNodes", ""), "4/4");
  const std::string now = ResultOf(Results("restarted"), "node-2");
  EXPECT_FALSE(now.empty());
  EXPECT_NE(now, old);
  EXPECT_EQ(v["status"].value("retests", Json::object()).size(), 1u) << v.dump(2);
}

TEST_F(E2E, ALastResultOnAnotherDriverThanTheLabelsIsValidatedAgainAtStartup) {
  for (const char* n : {"node-0", "node-1", "node-2", "node-3"})
    LabelDriver(*sim_, n, "550", "54", "15");
  Apply(SyntheticSpec("stale", "", "    onFailure: none\n", kWatchIdentity));
  ASSERT_TRUE(WaitComplete("stale"));
  const std::string old = ResultOf(Results("stale"), "node-1");
  ASSERT_FALSE(old.empty());

  // While the operator is down, node-1's result turns out to come from driver 535.104.05 (as
  // a worker on the old driver writes it; kube-sim has no GPU, so no driver of its own), while
  // its labels say 550.54.15.
  op_.Kill(SIGTERM);
  auto r = Kubectl(*sim_, {"patch", "perfresult", old, "-n", kNs, "--type=merge", "-p",
                           R"({"spec":{"report":{"identity":{"driverVersion":"535.104.05"}}}})"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  op_.Start(*sim_);

  ASSERT_TRUE(Eventually(
      [&] {
        const Json v = Validation("stale");
        return v["status"].value("retests", Json::object()).value("node-1", 0) == 1 &&
               !v["status"].value("completionTime", "").empty();
      },
      90))
      << Validation("stale").dump(2);
  const Json v = Validation("stale");
  EXPECT_EQ(v["status"].value("passedNodes", ""), "4/4");
  EXPECT_EQ(v["status"]["identityRetests"].value("node-1", ""),
            "driver=550.54.15 product=NVIDIA-H200 count=8")
      << v.dump(2);
  EXPECT_NE(ResultOf(Results("stale"), "node-1"), old);
  auto events = Kubectl(*sim_, {"get", "events", "-n", "default", "--field-selector",
                                "reason=NodeChanged", "-o", "jsonpath={.items[*].message}"});
  EXPECT_NE(events.out.find("node-1 changed: its last result " + old + " ran on driver 535.104.05"),
            std::string::npos)
      << events.out;
  // The other nodes agree with their labels: kept.
  EXPECT_EQ(v["status"].value("retests", Json::object()).size(), 1u) << v.dump(2);
}

}  // namespace
}  // namespace perfgate::e2e
