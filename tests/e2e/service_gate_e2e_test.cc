// Back in service only after a PASS, end to end (docs/lifecycle.md, "Fault signals" and
// "Remediation gate"): a node condition or a reboot that another tool causes after the run
// completed tests only that node again; a remediation taint is lifted on PASS and kept on FAIL;
// the brake on mass quarantine (docs/operator.md) stops tainting past its cap and says the
// failures look systemic.
#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

constexpr const char* kGate = "remediation.example.com/needs-validation";

// Edits `node`'s status as its kubelet or node-problem-detector would.
void EditNodeStatus(kubesim::KubeSim& sim, const std::string& node,
                    const std::function<void(Json*)>& edit) {
  auto n = sim.Get("", "nodes", "", node);
  ASSERT_TRUE(n.ok());
  Json obj = *n;
  edit(&obj);
  ASSERT_TRUE(sim.Update("", "nodes", obj, /*status=*/true).ok());
}

void SetBootId(kubesim::KubeSim& sim, const std::string& node, const std::string& id) {
  EditNodeStatus(sim, node, [&](Json* n) { (*n)["status"]["nodeInfo"]["bootID"] = id; });
}

// Waits until the validation's status.retests reads `want`, with the run complete again.
bool RetestsBecome(const std::function<Json()>& validation, const Json& want) {
  return Eventually(
      [&] {
        const Json v = validation();
        return v["status"].value("retests", Json::object()) == want &&
               !v["status"].value("completionTime", "").empty();
      },
      90);
}

TEST_F(E2E, AConditionAnotherToolSetsOrARebootRevalidatesOnlyThatNode) {
  for (const char* n : {"node-0", "node-1", "node-2", "node-3"}) {
    SetBootId(*sim_, n, std::string("boot-a-") + n);
  }
  Apply(SyntheticSpec("signals", "", "    onFailure: taint\n",
                      "  watchNodes:\n"
                      "    conditions:\n"
                      "      - type: GpuXidError\n"
                      "    reboot: true\n"));
  ASSERT_TRUE(WaitComplete("signals"));
  ASSERT_EQ(Validation("signals")["status"].value("passedNodes", ""), "4/4");
  const std::string first = ResultOf(Results("signals"), "node-2");

  // node-problem-detector reports an XID on node-2.
  EditNodeStatus(*sim_, "node-2", [](Json* n) {
    (*n)["status"]["conditions"].push_back({{"type", "GpuXidError"},
                                            {"status", "True"},
                                            {"reason", "Xid79"},
                                            {"message", "GPU has fallen off the bus"}});
  });
  auto validation = [&] { return Validation("signals"); };
  ASSERT_TRUE(RetestsBecome(validation, {{"node-2", 1}})) << Validation("signals").dump(2);
  EXPECT_NE(ResultOf(Results("signals"), "node-2"), first);
  EXPECT_EQ(Validation("signals")["status"].value("passedNodes", ""), "4/4");

  // node-0 reboots (a new boot ID); the XID condition is still set on node-2 and tests it no
  // more.
  SetBootId(*sim_, "node-0", "boot-b-node-0");
  ASSERT_TRUE(RetestsBecome(validation, {{"node-0", 1}, {"node-2", 1}}))
      << Validation("signals").dump(2);
  // And stays so: once per signal.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const Json v = Validation("signals");
  EXPECT_EQ(v["status"]["retests"], Json({{"node-0", 1}, {"node-2", 1}})) << v.dump(2);
  EXPECT_FALSE(v["status"].value("completionTime", "").empty());
  EXPECT_EQ(v["status"].value("passedNodes", ""), "4/4");
}

bool HasGate(const Json& node) {
  for (const auto& t : node.value("spec", Json::object()).value("taints", Json::array())) {
    if (t.value("key", "") == kGate) return true;
  }
  return false;
}

TEST_F(E2E, ARemediationTaintIsLiftedOnPassAndKeptOnFail) {
  Apply(SyntheticSpec("gate", "node-1=50", "    onFailure: none\n",
                      "  remediationTaints:\n"
                      "    - remediation.example.com/needs-validation\n"));
  ASSERT_TRUE(WaitComplete("gate"));
  ASSERT_EQ(Validation("gate")["status"].value("passedNodes", ""), "3/4");

  // A remediation tool hands node-0 (healthy) and node-1 (still broken) back, cordoned.
  for (const char* n : {"node-0", "node-1"}) {
    auto r = Kubectl(*sim_, {"taint", "node", n, std::string(kGate) + "=reset:NoSchedule"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    r = Kubectl(*sim_, {"cordon", n});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  auto validation = [&] { return Validation("gate"); };
  ASSERT_TRUE(RetestsBecome(validation, {{"node-0", 1}, {"node-1", 1}}))
      << Validation("gate").dump(2);
  ASSERT_TRUE(Eventually([&] { return !HasGate(Node("node-0")); }, 30)) << Node("node-0").dump(2);
  const Json passed = Node("node-0");
  EXPECT_EQ(VerdictLabel(passed), "passed");
  EXPECT_FALSE(passed["metadata"]
                   .value("annotations", Json::object())
                   .contains("perfgate.io/remediation-failed"));
  const Json failed = Node("node-1");
  EXPECT_TRUE(HasGate(failed)) << failed.dump(2);
  EXPECT_EQ(VerdictLabel(failed), "failed");
  EXPECT_EQ(failed["metadata"]
                .value("annotations", Json::object())
                .value("perfgate.io/remediation-failed", "")
                .rfind("FAIL", 0),
            0u)
      << failed.dump(2);
  // Nodes never handed over were not tested again.
  EXPECT_EQ(Validation("gate")["status"]["retests"].size(), 2u);
}

TEST_F(E2E, ASystemicFailureOnSixOfEightNodesTaintsTwoAndSaysWhatTheyShare) {
  for (int i = 4; i < 8; ++i) {
    kubesim::NodeSpec node;
    node.name = "node-" + std::to_string(i);
    node.labels["example.com/rack"] = "r2";
    ASSERT_TRUE(sim_->AddNode(node).ok());
  }
  // Six nodes on the same rack switch fail: node-0..3 (rack r1) and node-4, node-5 (rack r2).
  for (const char* n : {"node-0", "node-1", "node-2", "node-3"}) {
    auto r = Kubectl(*sim_, {"label", "node", n, "example.com/rack=r1"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  Apply(SyntheticSpec("fleet", "node-0=50, node-1=50, node-2=50, node-3=50, node-4=50, node-5=50",
                      "    onFailure: taint\n    maxQuarantined: \"25%\"\n"));
  ASSERT_TRUE(WaitComplete("fleet"));
  const Json v = Validation("fleet");
  ASSERT_EQ(v["status"].value("passedNodes", ""), "2/8") << v.dump(2);
  int tainted = 0;
  int failed = 0;
  for (int i = 0; i < 8; ++i) {
    const Json n = Node("node-" + std::to_string(i));
    tainted += HasPerfgateTaint(n) ? 1 : 0;
    failed += VerdictLabel(n) == "failed" ? 1 : 0;
  }
  EXPECT_EQ(tainted, 2);
  EXPECT_EQ(failed, 6);
  const Json c = Condition(v, "SystemicFailure");
  EXPECT_EQ(c.value("status", ""), "True") << v.dump(2);
  EXPECT_EQ(c.value("reason", ""), "QuarantineCapReached");
  EXPECT_NE(c.value("message", "")
                .find("the failures look systemic; the failing nodes share "
                      "gpu.product=NVIDIA-H200"),
            std::string::npos)
      << c.dump(2);
  EXPECT_EQ(v["status"]["quarantine"].value("held", 0), 4) << v.dump(2);
  EXPECT_EQ(v["status"]["quarantine"].value("cap", 0), 2);
  // The event says so too.
  auto events = Kubectl(*sim_, {"get", "events", "-A", "-o", "json"});
  ASSERT_EQ(events.exitCode, 0) << events.err;
  EXPECT_NE(events.out.find("SystemicFailure"), std::string::npos);
}

}  // namespace
}  // namespace perfgate::e2e
