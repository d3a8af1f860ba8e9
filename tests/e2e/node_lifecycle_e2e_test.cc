// New and changed nodes end to end (docs/lifecycle.md, "New and changed nodes" and "Node
// pools"): a node that joins kube-sim after the validation completed is tested automatically
// and loses its provisioning taint on PASS; a node whose driver label changes is tested again.
#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

constexpr const char* kProvisioning = "perfgate.io/provisioning";

const std::string kWatchNewNodes =
    "  watchNodes:\n"
    "    newNodes: true\n"
    "    identityChange: true\n"
    "  provisioningTaint:\n"
    "    key: perfgate.io/provisioning\n";

bool HasProvisioningTaint(const Json& node) {
  for (const auto& t : node.value("spec", Json::object()).value("taints", Json::array())) {
    if (t.value("key", "") == kProvisioning) return true;
  }
  return false;
}

TEST_F(E2E, NodeJoiningAfterCompletionIsValidatedAndUntaintedOnPass) {
  Apply(SyntheticSpec("pool", "", "    onFailure: taint\n", kWatchNewNodes));
  ASSERT_TRUE(WaitComplete("pool"));
  ASSERT_EQ(Validation("pool")["status"].value("passedNodes", ""), "4/4");

  kubesim::NodeSpec node;
  node.name = "node-4";
  node.taints =
      Json::array({{{"key", kProvisioning}, {"value", "true"}, {"effect", "NoSchedule"}}});
  ASSERT_TRUE(sim_->AddNode(node).ok());

  // Tested on its own, the run completed again with it in its counts.
  ASSERT_TRUE(Eventually(
      [&] { return Validation("pool")["status"].value("passedNodes", "") == "5/5"; }, 90));
  const Json v = Validation("pool");
  EXPECT_EQ(v["status"].value("verdict", ""), "Passed") << v.dump(2);
  EXPECT_EQ(Results("pool").size(), 5u);
  const Json n = Node("node-4");
  EXPECT_EQ(VerdictLabel(n), "passed") << n.dump(2);
  EXPECT_FALSE(HasProvisioningTaint(n)) << n.dump(2);
  EXPECT_FALSE(n["metadata"]
                   .value("annotations", Json::object())
                   .contains("perfgate.io/provisioning-failed"));
}

TEST_F(E2E, NodeWhoseDriverChangesIsValidatedAgain) {
  Apply(SyntheticSpec("drivers", "", "    onFailure: taint\n", kWatchNewNodes));
  ASSERT_TRUE(WaitComplete("drivers"));
  const std::string before = Validation("drivers")["status"]["nodeIdentities"].value("node-2", "");
  ASSERT_FALSE(before.empty());
  std::set<std::string> first;
  for (const auto& r : Results("drivers")) first.insert(r["metadata"].value("name", ""));
  ASSERT_EQ(first.size(), 4u);

  auto r =
      Kubectl(*sim_, {"label", "node", "node-2", "--overwrite", "nvidia.com/cuda.driver.major=560",
                      "nvidia.com/cuda.driver.minor=35", "nvidia.com/cuda.driver.rev=03"});
  ASSERT_EQ(r.exitCode, 0) << r.err;

  // node-2 has a new result (its old one is gone); the other nodes keep theirs.
  ASSERT_TRUE(Eventually(
      [&] {
        const Json v = Validation("drivers");
        return v["status"].value("nodeIdentities", Json::object()).value("node-2", "") ==
                   "driver=560.35.03 product=NVIDIA-H200 count=8" &&
               !v["status"].value("completionTime", "").empty();
      },
      90));
  std::set<std::string> now;
  for (const auto& res : Results("drivers")) now.insert(res["metadata"].value("name", ""));
  EXPECT_EQ(now.size(), 4u);
  int kept = 0;
  for (const auto& name : now) kept += first.contains(name) ? 1 : 0;
  EXPECT_EQ(kept, 3);
  const Json v = Validation("drivers");
  EXPECT_EQ(v["status"]["retests"].value("node-2", 0), 1) << v.dump(2);
  EXPECT_EQ(v["status"].value("passedNodes", ""), "4/4");
}

}  // namespace
}  // namespace perfgate::e2e
