// Nodes that keep failing, in kube-sim with a results store: a node failing 2 of its last 3
// validations (scheduled runs, hours apart on the operator's --clock-start clock) is labelled
// perfgate.io/repeated-failure, named in status.repeatedFailures and the RepeatedFailures
// condition, announced by a RepeatedFailure event and counted on /metrics; passing again
// until the policy no longer holds clears all of it.

#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

bool Flagged(const Json& node) {
  return node["metadata"]
             .value("labels", Json::object())
             .value("perfgate.io/repeated-failure", "") == "true";
}

TEST_F(E2E, ANodeFailingKOfItsLastNValidationsIsFlaggedUntilItPassesAgain) {
  const std::string url = "sqlite://" + sim_->workDir() + "/store/results.db";
  const std::vector<std::string> store = {"--store=" + url, "--cluster-name=e2e",
                                          "--store-retry-seconds=1"};
  op_.Kill(SIGTERM);
  std::vector<std::string> flags = store;
  flags.push_back("--clock-start=2020-01-06T09:59:40Z");
  op_.Start(*sim_, flags);
  // node-0 measures 50 against a bound of 90: FAIL. 2 FAILs of the last 3 flag a node.
  const std::string policy =
      "    onFailure: none\n"
      "    repeatedFailureThreshold: 2\n"
      "    repeatedFailureWindow: 3\n";
  const std::string schedule = "  schedule: \"0 * * * *\"\n";
  Apply(SyntheticSpec("fleet", "node-0=50", policy, schedule));
  auto history_done = [&](size_t runs) {
    const Json h = Validation("fleet")["status"].value("history", Json::array());
    return h.size() == runs && !h[runs - 1].value("completionTime", "").empty();
  };
  // The run at creation (node-0's first FAIL: 1 of 1, not yet flagged), then the 10:00 run.
  ASSERT_TRUE(Eventually([&] { return history_done(2); }, 90)) << Validation("fleet").dump(2);
  ASSERT_TRUE(Eventually([&] { return Flagged(Node("node-0")); }, 30)) << Node("node-0").dump(2);
  for (const char* n : {"node-1", "node-2", "node-3"}) EXPECT_FALSE(Flagged(Node(n))) << n;
  Json v = Validation("fleet");
  const Json flagged = v["status"].value("repeatedFailures", Json::array());
  ASSERT_EQ(flagged.size(), 1u) << v.dump(2);
  EXPECT_EQ(flagged[0].value("node", ""), "node-0");
  EXPECT_EQ(flagged[0].value("failures", 0), 2);
  EXPECT_EQ(flagged[0].value("validations", 0), 2);
  Json c = Condition(v, "RepeatedFailures");
  EXPECT_EQ(c.value("status", ""), "True") << v.dump(2);
  EXPECT_NE(c.value("message", "").find("node-0 failed 2 of its last 2"), std::string::npos)
      << c.dump();
  auto events = Kubectl(*sim_, {"get", "events", "-n", "default", "--field-selector",
                                "reason=RepeatedFailure", "-o", "jsonpath={.items[*].message}"});
  EXPECT_NE(events.out.find("node-0 failed 2 of its last 2 validations"), std::string::npos)
      << events.out;
  ASSERT_TRUE(Eventually(
      [&] {
        return Metrics(op_).find("perfgate_node_repeated_failure{node=\"node-0\"") !=
               std::string::npos;
      },
      20))
      << Metrics(op_);
  // The recommended action climbed: a host figure below its bound is "retest" the first time;
  // after one earlier FAIL in a row it is a reboot (no GPU to reset).
  Json n0 = Node("node-0");
  EXPECT_EQ(n0["metadata"]["labels"].value("perfgate.io/action", ""), "reboot-node") << n0.dump(2);
  const std::string evidence =
      n0["metadata"]["annotations"].value("perfgate.io/action-evidence", "");
  EXPECT_NE(evidence.find("escalated from retest after 1 earlier FAIL in a row"), std::string::npos)
      << evidence;
  EXPECT_NE(evidence.find("synthetic [host]: bandwidthGBps: retest"), std::string::npos)
      << evidence;
  const Json failing = v["status"].value("failingNodes", Json::array());
  ASSERT_EQ(failing.size(), 1u) << v.dump(2);
  EXPECT_EQ(failing[0].value("action", ""), "reboot-node") << v.dump(2);
  for (const char* n : {"node-1", "node-2", "node-3"}) {
    EXPECT_EQ(Node(n)["metadata"]["labels"].value("perfgate.io/action", ""), "none") << n;
  }
  ASSERT_TRUE(Eventually(
      [&] {
        return Metrics(op_).find(
                   "perfgate_node_recommended_action{node=\"node-0\",action=\"reboot-node\"} 1") !=
               std::string::npos;
      },
      20))
      << Metrics(op_);

  // node-0 repaired: its next validation passes, but 2 of its last 3 are still FAILs.
  Apply(SyntheticSpec("fleet", "", policy, schedule));
  ASSERT_TRUE(Eventually([&] { return history_done(3); }, 90)) << Validation("fleet").dump(2);
  v = Validation("fleet");
  EXPECT_EQ(v["status"]["history"][2].value("verdict", ""), "Passed") << v.dump(2);
  EXPECT_TRUE(Flagged(Node("node-0")));
  n0 = Node("node-0");
  EXPECT_EQ(n0["metadata"]["labels"].value("perfgate.io/action", ""), "none") << n0.dump(2);
  EXPECT_FALSE(n0["metadata"]["annotations"].contains("perfgate.io/action-evidence")) << n0.dump(2);
  EXPECT_EQ(Condition(v, "RepeatedFailures").value("status", ""), "True") << v.dump(2);

  // The 11:00 run passes too: 1 FAIL of the last 3, below the policy's 2. Cleared.
  op_.Kill(SIGTERM);
  flags = store;
  flags.push_back("--clock-start=2020-01-06T10:59:55Z");
  op_.Start(*sim_, flags);
  ASSERT_TRUE(Eventually([&] { return history_done(4); }, 90)) << Validation("fleet").dump(2);
  ASSERT_TRUE(Eventually([&] { return !Flagged(Node("node-0")); }, 30)) << Node("node-0").dump(2);
  v = Validation("fleet");
  EXPECT_EQ(v["status"]["history"][3].value("trigger", ""), "schedule");
  EXPECT_FALSE(v["status"].contains("repeatedFailures")) << v.dump(2);
  c = Condition(v, "RepeatedFailures");
  EXPECT_EQ(c.value("status", ""), "False") << v.dump(2);
  EXPECT_EQ(c.value("reason", ""), "NoRepeatedFailures");
  ASSERT_TRUE(Eventually(
      [&] {
        const std::string text = Metrics(op_);
        return text.find("perfgate_node_repeated_failure") != std::string::npos &&
               text.find("perfgate_node_repeated_failure{node=\"node-0\"") == std::string::npos;
      },
      20))
      << Metrics(op_);
}

}  // namespace
}  // namespace perfgate::e2e
