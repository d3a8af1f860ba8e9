// End-to-end: kube-sim with simulated GPU nodes whose kubelet runs the real perfgate-worker,
// the operator as a real process (so killing it is real), and the real kubectl. Each test
// is one scenario a user of the operator meets; the fixture test type `synthetic` plants a
// slow, crashing or hanging node (the worker refuses it without --enable-fixtures).
#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

// 1. Four nodes pass: kubectl wait returns, Passed=True, one PerfResult per node.
TEST_F(E2E, FourNodesPass) {
  Apply(SyntheticSpec("smoke", ""));
  ASSERT_TRUE(WaitComplete("smoke"));
  Json v = Validation("smoke");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "True") << v.dump(2);
  EXPECT_EQ(Condition(v, "Ready").value("status", ""), "True");
  EXPECT_EQ(v["status"].value("passedNodes", ""), "4/4");
  auto results = Results("smoke");
  ASSERT_EQ(results.size(), 4u);
  std::set<std::string> nodes;
  for (const auto& r : results) {
    nodes.insert(r["spec"].value("nodeName", ""));
    EXPECT_EQ(r["spec"]["report"].value("verdict", ""), "PASS");
    EXPECT_EQ(r["spec"].value("writtenBy", "worker"), "worker");
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"node-0", "node-1", "node-2", "node-3"}));
  for (const auto& n : nodes) {
    EXPECT_EQ(VerdictLabel(Node(n)), "passed") << n;
    EXPECT_FALSE(HasPerfgateTaint(Node(n))) << n;
  }
  // The printer columns a user sees.
  auto get = Kubectl(*sim_, {"get", "pval", "smoke"});
  EXPECT_NE(get.out.find("Passed"), std::string::npos) << get.out;
  EXPECT_NE(get.out.find("4/4"), std::string::npos) << get.out;
}

// 2. One slow node: only it is tainted and labelled failed; the reason names node, test, figure.
TEST_F(E2E, OneSlowNodeFailsAndOnlyItIsTainted) {
  Apply(SyntheticSpec("slow", "node-2=50"));
  ASSERT_TRUE(WaitComplete("slow"));
  Json v = Validation("slow");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "False") << v.dump(2);
  EXPECT_EQ(Condition(v, "Stalled").value("status", ""), "True");
  EXPECT_EQ(Condition(v, "Ready").value("status", ""), "False");
  EXPECT_EQ(Condition(v, "Ready").value("reason", ""), "TestsFailed");
  EXPECT_EQ(v["status"].value("verdict", ""), "Failed");
  const std::string msg = Condition(v, "Passed").value("message", "");
  EXPECT_NE(msg.find("node-2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("synthetic"), std::string::npos) << msg;
  // The measured median, ~50 GB/s (the synthetic node's mean at CV 1%).
  std::smatch figure;
  ASSERT_TRUE(std::regex_search(msg, figure, std::regex(R"(median bandwidthGBps ([0-9.]+) GB/s)")))
      << msg;
  EXPECT_NEAR(std::stod(figure[1].str()), 50.0, 2.0) << msg;
  for (const char* n : {"node-0", "node-1", "node-3"}) {
    EXPECT_FALSE(HasPerfgateTaint(Node(n))) << n;
    EXPECT_EQ(VerdictLabel(Node(n)), "passed") << n;
  }
  EXPECT_TRUE(HasPerfgateTaint(Node("node-2")));
  EXPECT_EQ(VerdictLabel(Node("node-2")), "failed");
  EXPECT_EQ(v["status"].value("passedNodes", ""), "3/4");
  // An event says which node failed.
  auto events = Kubectl(*sim_, {"get", "events", "-n", "default", "-o", "json"});
  EXPECT_NE(events.out.find("NodeNotPassed"), std::string::npos);
}

// 3. The operator killed mid-run and restarted: no duplicate pods, the same verdict.
TEST_F(E2E, OperatorRestartMidRunKeepsPodsAndVerdict) {
  // About 3 s of sampling per node, so the kill lands while workers run.
  Apply(SyntheticSpec("restart", "node-1=50", "    onFailure: taint\n", "", "0.3"));
  ASSERT_TRUE(Eventually([&] { return Pods("restart").size() == 4; }, 30));
  op_.Kill(SIGKILL);
  op_.Start(*sim_);
  ASSERT_TRUE(WaitComplete("restart"));
  Json v = Validation("restart");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "False") << v.dump(2);
  EXPECT_NE(Condition(v, "Passed").value("message", "").find("node-1"), std::string::npos);
  EXPECT_EQ(Pods("restart").size(), 4u);
  int pod_creates = 0;
  for (const auto& r : sim_->Requests()) {
    if (r.verb == "create" && r.resource == "pods" && r.code == 201) pod_creates++;
  }
  EXPECT_EQ(pod_creates, 4);
  EXPECT_EQ(Results("restart").size(), 4u);
  EXPECT_TRUE(HasPerfgateTaint(Node("node-1")));
}

// 4. Crash, hang past the deadline, never scheduled, GPUs missing: ERROR with a reason each,
// no taint, the validation completes not passed.
TEST_F(E2E, BrokenWorkersGiveErrorNotTaint) {
  ASSERT_TRUE(AddUntoleratedNode("node-4").ok());
  kubesim::NodeSpec small;
  small.name = "node-5";
  small.gpus = 2;
  ASSERT_TRUE(sim_->AddNode(small).ok());
  // The node timeout must outlast a healthy worker's start and run on a loaded CI machine
  // (a 4 s timeout turned healthy nodes into ERROR there); only node-1's hang may reach it.
  Apply(SyntheticSpec("broken", "node-0=crash, node-1=hang",
                      "    onFailure: taint\n    nodeTimeoutSeconds: 12\n", "  gpusPerNode: 4\n"));
  // While it waits, the status says why node-4's worker does not start.
  EXPECT_TRUE(Eventually(
      [&] {
        auto v = sim_->Get("perfgate.io", "perfvalidations", "", "broken");
        return v.ok() && v->value("status", Json::object())
                                 .value("message", "")
                                 .find("node-4 (unscheduled: ") != std::string::npos;
      },
      10));
  ASSERT_TRUE(WaitComplete("broken", 60));
  Json v = Validation("broken");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "False") << v.dump(2);
  EXPECT_EQ(Condition(v, "Complete").value("status", ""), "True");
  EXPECT_EQ(Condition(v, "Ready").value("reason", ""), "NodeErrors");
  // No node failed a test: the validation says ERROR, not FAIL.
  EXPECT_EQ(v["status"].value("verdict", ""), "Error");
  std::map<std::string, Json> by_node;
  for (auto& r : Results("broken")) by_node[r["spec"].value("nodeName", "")] = r;
  ASSERT_EQ(by_node.size(), 6u);
  auto reason = [&](const std::string& n) {
    return by_node[n]["spec"]["report"].value("reason", "");
  };
  auto verdict = [&](const std::string& n) {
    return by_node[n]["spec"]["report"].value("verdict", "");
  };
  EXPECT_EQ(verdict("node-0"), "ERROR");
  EXPECT_NE(reason("node-0").find("exit code 134"), std::string::npos) << reason("node-0");
  EXPECT_EQ(verdict("node-1"), "ERROR");
  EXPECT_NE(reason("node-1").find("timed out"), std::string::npos) << reason("node-1");
  EXPECT_EQ(verdict("node-4"), "ERROR");
  EXPECT_NE(reason("node-4").find("not scheduled"), std::string::npos) << reason("node-4");
  EXPECT_NE(reason("node-4").find("untolerated taint"), std::string::npos) << reason("node-4");
  EXPECT_EQ(verdict("node-5"), "ERROR");
  EXPECT_NE(reason("node-5").find("expected 4 GPUs"), std::string::npos) << reason("node-5");
  EXPECT_EQ(verdict("node-2"), "PASS");
  for (const char* n : {"node-0", "node-1", "node-2", "node-3", "node-4", "node-5"}) {
    EXPECT_FALSE(HasPerfgateTaint(Node(n))) << n;
  }
  EXPECT_EQ(VerdictLabel(Node("node-0")), "error");
}

// 5. An invalid spec: refused by the schema (kubectl names the field), or accepted by the
// schema and completed not passed with reason InvalidSpec and the loader's message.
TEST_F(E2E, InvalidSpecIsRefusedOrCompletesInvalid) {
  std::string bad_level = SyntheticSpec("badlevel", "");
  bad_level.replace(bad_level.find("  sampling:"), 0, "  level: slow\n");
  auto r = Kubectl(*sim_, {"apply", "-f", "-"}, bad_level);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("spec.level"), std::string::npos) << r.err;

  std::string bad_type = SyntheticSpec("badtype", "");
  bad_type.replace(bad_type.find("type: synthetic"), 15, "type: no-such-test");
  const std::string msg = ApplyExpectingInvalidSpec("badtype", bad_type);
  EXPECT_NE(msg.find("spec.tests[0].type"), std::string::npos) << msg;
}

// A threshold its sampling can never decide (p05 needs ~70 samples to PASS, the cap is 10) is
// InvalidSpec before any pod runs, with the samples it would need, as a local run exits 2.
TEST_F(E2E, UndecidableThresholdIsInvalidSpecBeforeAnyPod) {
  std::string spec = SyntheticSpec("undecidable", "");
  spec.replace(spec.find("statistic: median"), 17, "statistic: p05");
  const std::string msg = ApplyExpectingInvalidSpec("undecidable", spec);
  EXPECT_NE(msg.find("spec.tests[0].thresholds[0]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("p05 bandwidthGBps >= 90"), std::string::npos) << msg;
  EXPECT_NE(msg.find("can never PASS within maxRepeats 10"), std::string::npos) << msg;
  EXPECT_NE(msg.find("it needs at least"), std::string::npos) << msg;
}

// 6. A later passing validation removes the taint the failing one set, and no other.
TEST_F(E2E, LaterPassRemovesOnlyPerfgateTaint) {
  Json n1 = Node("node-1");
  n1["spec"]["taints"] =
      Json::array({{{"key", "team"}, {"value", "ml"}, {"effect", "NoSchedule"}}});
  ASSERT_TRUE(sim_->Update("", "nodes", n1).ok());
  const std::string tolerate = "  tolerations:\n    - key: team\n      operator: Exists\n";
  Apply(SyntheticSpec("first", "node-1=50, node-2=50", "    onFailure: taint\n", tolerate));
  ASSERT_TRUE(WaitComplete("first"));
  ASSERT_TRUE(HasPerfgateTaint(Node("node-1")));
  ASSERT_TRUE(HasPerfgateTaint(Node("node-2")));
  Apply(SyntheticSpec("second", "", "    onFailure: taint\n", tolerate));
  ASSERT_TRUE(WaitComplete("second"));
  EXPECT_EQ(Condition(Validation("second"), "Passed").value("status", ""), "True");
  for (const char* n : {"node-0", "node-1", "node-2", "node-3"}) {
    EXPECT_FALSE(HasPerfgateTaint(Node(n))) << n;
    EXPECT_EQ(VerdictLabel(Node(n)), "passed") << n;
  }
  auto taints = Node("node-1")["spec"].value("taints", Json::array());
  ASSERT_EQ(taints.size(), 1u) << taints.dump();
  EXPECT_EQ(taints[0].value("key", ""), "team");
}

// Names are up to 253 characters, label values only 63: a validation and a node with longer
// names run and pass like any other, with one Started event, and every label stays valid.
TEST_F(E2E, ValidationAndNodeWithNamesLongerThan63Characters) {
  const std::string node = "gpu-7.rack-42.zone-b.datacenter-east.gpu-fleet.example-cloud.internal";
  const std::string name =
      "nightly-acceptance-of-the-h200-fleet-after-the-driver-upgrade-in-zone-b";
  ASSERT_GT(node.size(), 63u);
  ASSERT_GT(name.size(), 63u);
  kubesim::NodeSpec spec;
  spec.name = node;
  ASSERT_TRUE(sim_->AddNode(spec).ok());
  std::string yaml = SyntheticSpec(name, "");
  const std::string selector = "  nodeSelector:\n    nvidia.com/gpu.present: \"true\"\n";
  yaml.replace(yaml.find(selector), selector.size(), "  nodes: [" + node + ", node-0]\n");
  Apply(yaml);
  ASSERT_TRUE(WaitComplete(name, 60));
  Json v = Validation(name);
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "True") << v.dump(2);
  EXPECT_EQ(v["status"].value("passedNodes", ""), "2/2");
  std::set<std::string> nodes;
  for (const auto& r : sim_->List("perfgate.io", "perfresults", kNs)) {
    nodes.insert(r["spec"].value("nodeName", ""));
    EXPECT_EQ(r["spec"].value("writtenBy", "worker"), "worker") << r.dump(2);
  }
  EXPECT_EQ(nodes, (std::set<std::string>{node, "node-0"}));
  EXPECT_EQ(VerdictLabel(Node(node)), "passed");
  int started = 0;
  for (const auto& e : sim_->List("", "events", "default")) {
    started += e.value("reason", "") == "Started" && e["involvedObject"].value("name", "") == name;
  }
  EXPECT_EQ(started, 1);
  // Selection by label still finds this validation's objects, under its shortened value.
  auto labels = Kubectl(*sim_, {"get", "perfresults", "-n", kNs, "-o",
                                "jsonpath={.items[*].metadata.labels.perfgate\\.io/validation}"});
  ASSERT_EQ(labels.exitCode, 0) << labels.err;
  ASSERT_FALSE(labels.out.empty());
  std::istringstream values(labels.out);
  for (std::string value; values >> value;) {
    EXPECT_LE(value.size(), 63u) << value;
    auto listed = Kubectl(*sim_, {"get", "perfresults", "-n", kNs, "-l",
                                  "perfgate.io/validation=" + value, "-o", "name"});
    EXPECT_EQ(std::count(listed.out.begin(), listed.out.end(), '\n'), 2) << listed.out;
  }
}

// A node perfgate failed, tainted and cordoned is re-tested by the next validation that selects
// it (its worker tolerates the cordon), and a PASS lifts both the taint and the cordon.
TEST_F(E2E, CordonedFailedNodeIsRetestedAndReleasedOnPass) {
  Apply(SyntheticSpec("cordon", "node-2=50", "    onFailure: taintAndCordon\n"));
  ASSERT_TRUE(WaitComplete("cordon"));
  ASSERT_TRUE(HasPerfgateTaint(Node("node-2")));
  ASSERT_TRUE(Node("node-2")["spec"].value("unschedulable", false));
  Apply(SyntheticSpec("retest", "", "    onFailure: taintAndCordon\n"));
  ASSERT_TRUE(WaitComplete("retest"));
  Json v = Validation("retest");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "True") << v.dump(2);
  EXPECT_EQ(v["status"].value("passedNodes", ""), "4/4");
  Json node = Node("node-2");
  EXPECT_FALSE(HasPerfgateTaint(node)) << node.dump(2);
  EXPECT_FALSE(node["spec"].value("unschedulable", false)) << node.dump(2);
  EXPECT_EQ(VerdictLabel(node), "passed");
}

// Deleting every validation leaves no verdict label behind, also where the node carries
// another validation's FAIL taint (which stays, by design, until a later run passes the node).
TEST_F(E2E, DeletingEveryValidationLeavesNoVerdictLabel) {
  Apply(SyntheticSpec("tainter", "node-2=50", "    onFailure: taint\n"));
  ASSERT_TRUE(WaitComplete("tainter"));
  Apply(SyntheticSpec("watcher", "node-2=50", "    onFailure: none\n"));
  ASSERT_TRUE(WaitComplete("watcher"));
  ASSERT_EQ(VerdictLabel(Node("node-2")), "failed");
  for (const char* v : {"tainter", "watcher"}) {
    auto del = Kubectl(*sim_, {"delete", "pval", v, "--timeout=30s"});
    ASSERT_EQ(del.exitCode, 0) << del.err;
  }
  for (const char* n : {"node-0", "node-1", "node-2", "node-3"}) {
    Json node = Node(n);
    EXPECT_EQ(VerdictLabel(node), "") << node.dump(2);
    EXPECT_FALSE(
        node["metadata"].value("annotations", Json::object()).contains("perfgate.io/verdict-by"))
        << node.dump(2);
  }
  EXPECT_TRUE(HasPerfgateTaint(Node("node-2")));
}

// A Node created without a spec (the API allows it; the server then serves `spec: {}` once the
// not-ready taint every new node gets is lifted) is selected, tested and labelled like any
// other; the operator neither crashes nor stalls on it. DecideScenario's test of the same name
// gives the operator's code a node with no spec at all.
TEST_F(E2E, NodeWithoutSpecIsTestedLikeAnyOther) {
  Apply(R"(apiVersion: v1
kind: Node
metadata:
  name: bare
  labels: {nvidia.com/gpu.present: "true", nvidia.com/gpu.product: NVIDIA-H200}
status:
  capacity: {cpu: "64", memory: 2113929216Ki, pods: "110", nvidia.com/gpu: "8"}
  allocatable: {cpu: "64", memory: 2113929216Ki, pods: "110", nvidia.com/gpu: "8"}
  conditions: [{type: Ready, status: "True"}]
)");
  ASSERT_TRUE(Eventually([&] { return Node("bare").value("spec", Json()) == Json::object(); }))
      << Node("bare").dump(2);
  Apply(SyntheticSpec("bare", "", "    onFailure: taintAndCordon\n"));
  ASSERT_TRUE(WaitComplete("bare", 60));
  Json v = Validation("bare");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "True") << v.dump(2);
  EXPECT_EQ(v["status"].value("passedNodes", ""), "5/5");
  EXPECT_EQ(VerdictLabel(Node("bare")), "passed");
  auto del = Kubectl(*sim_, {"delete", "pval", "bare", "--timeout=30s"});
  ASSERT_EQ(del.exitCode, 0) << del.err;
  EXPECT_EQ(VerdictLabel(Node("bare")), "");
}

// A single-node worker pod meets Pod Security "restricted", so the chart's namespace can
// enforce it (and here does: kube-sim applies the namespace's level): seccomp RuntimeDefault,
// non-root with a numeric uid, no privilege escalation, every capability dropped, no host
// namespaces, only configMap volumes.
TEST_F(E2E, WorkerPodsMeetRestrictedPodSecurity) {
  auto label =
      Kubectl(*sim_, {"label", "namespace", kNs, "pod-security.kubernetes.io/enforce=restricted"});
  ASSERT_EQ(label.exitCode, 0) << label.err;
  Apply(SyntheticSpec("restricted", ""));
  ASSERT_TRUE(WaitComplete("restricted"));
  EXPECT_EQ(Condition(Validation("restricted"), "Passed").value("status", ""), "True");
  auto pods = Pods("restricted");
  ASSERT_EQ(pods.size(), 4u);
  for (const auto& p : pods) {
    const Json& spec = p["spec"];
    const Json psc = spec.value("securityContext", Json::object());
    EXPECT_EQ(psc.value("seccompProfile", Json::object()).value("type", ""), "RuntimeDefault");
    EXPECT_TRUE(psc.value("runAsNonRoot", false));
    EXPECT_GT(psc.value("runAsUser", 0), 0);
    EXPECT_FALSE(spec.value("hostNetwork", false));
    EXPECT_FALSE(spec.value("hostIPC", false));
    EXPECT_FALSE(spec.value("hostPID", false));
    for (const auto& v : spec.value("volumes", Json::array())) {
      EXPECT_TRUE(v.contains("configMap") || v.contains("emptyDir") || v.contains("projected"))
          << v.dump();
    }
    for (const auto& c : spec.value("containers", Json::array())) {
      const Json csc = c.value("securityContext", Json::object());
      EXPECT_FALSE(csc.value("allowPrivilegeEscalation", true)) << c.dump();
      EXPECT_FALSE(csc.value("privileged", false));
      const Json caps = csc.value("capabilities", Json::object());
      EXPECT_EQ(caps.value("drop", Json::array()), Json::array({"ALL"}));
      EXPECT_TRUE(caps.value("add", Json::array()).empty()) << caps.dump();
    }
  }
}

// Suspend, resume (a new generation), rerun by annotation with keepResults, and deletion
// through the finalizer.
TEST_F(E2E, SuspendRerunKeepResultsAndDelete) {
  std::string spec = SyntheticSpec("life", "", "    keepResults: 1\n", "  suspend: true\n");
  Apply(spec);
  auto status = [&] {
    auto v = sim_->Get("perfgate.io", "perfvalidations", "", "life");
    return v.ok() ? v->value("status", Json::object()) : Json::object();
  };
  ASSERT_TRUE(Eventually([&] { return status().value("verdict", "") == "Suspended"; }, 30))
      << status().dump(2);
  EXPECT_EQ(Condition(Validation("life"), "Complete").value("status", ""), "False");
  EXPECT_TRUE(Pods("life").empty());

  spec.replace(spec.find("  suspend: true\n"), 16, "");
  Apply(spec);
  ASSERT_TRUE(Eventually([&] { return status().value("observedGeneration", 0) == 2; }, 30));
  ASSERT_TRUE(WaitComplete("life"));
  const std::string run1 = status().value("run", "");
  EXPECT_EQ(run1, "g2");
  EXPECT_EQ(Results("life").size(), 4u);

  auto rerun = [&](const std::string& token) {
    const std::string before = status().value("run", "");
    auto r =
        Kubectl(*sim_, {"annotate", "--overwrite", "pval", "life", "perfgate.io/rerun=" + token});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    ASSERT_TRUE(Eventually(
        [&] {
          Json st = status();
          return st.value("run", "") != before && !st.value("completionTime", "").empty();
        },
        60))
        << status().dump(2);
  };
  rerun("1");
  EXPECT_EQ(Condition(Validation("life"), "Passed").value("status", ""), "True");
  EXPECT_EQ(Results("life").size(), 8u);  // this run's 4 and the previous run's 4
  rerun("2");
  // One plan ConfigMap: each new run deletes the previous run's.
  int plans = 0;
  for (const auto& cm : sim_->List("", "configmaps", kNs)) {
    plans +=
        cm["metadata"].value("labels", Json::object()).value("perfgate.io/validation", "") == "life"
            ? 1
            : 0;
  }
  EXPECT_EQ(plans, 1);
  auto results = Results("life");
  EXPECT_EQ(results.size(), 8u);  // keepResults: 1 old run
  for (const auto& r : results)
    EXPECT_NE(r["metadata"]["labels"].value("perfgate.io/run", ""), run1);

  auto del = Kubectl(*sim_, {"delete", "pval", "life", "--timeout=30s"});
  ASSERT_EQ(del.exitCode, 0) << del.err;
  EXPECT_FALSE(sim_->Get("perfgate.io", "perfvalidations", "", "life").ok());
  EXPECT_EQ(VerdictLabel(Node("node-0")), "");  // the finalizer took back what it set
  EXPECT_TRUE(Eventually([&] { return Results("life").empty() && Pods("life").empty(); }, 30));
}

// A named profile resolves from the cluster's PerfProfile: its tests and level sampling go to
// the worker inline, and status and results name the profile and its version.
TEST_F(E2E, ProfileFromClusterIsResolvedIntoThePlan) {
  Apply(
      "apiVersion: perfgate.io/v1alpha1\n"
      "kind: PerfProfile\n"
      "metadata:\n"
      "  name: sim-gpu\n"
      "spec:\n"
      "  version: \"2026.11-1\"\n"
      "  gpuModels: [H200]\n"
      "  quick:\n"
      "    sampling: {warmup: 1, minRepeats: 5, maxRepeats: 10}\n"
      "    tests:\n"
      "      - type: synthetic\n"
      "        parameters: {mean: 100, behaviour: [\"node-3=50\"]}\n"
      "        thresholds: [{metric: bandwidthGBps, value: 90}]\n");
  Apply(SpecHead("byprofile") +
        "  profile: sim-gpu\n"
        "  level: quick\n");
  ASSERT_TRUE(WaitComplete("byprofile"));
  Json v = Validation("byprofile");
  EXPECT_EQ(v["status"].value("profile", ""), "sim-gpu") << v.dump(2);
  EXPECT_EQ(v["status"].value("profileVersion", ""), "2026.11-1");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "False");
  EXPECT_NE(Condition(v, "Passed").value("message", "").find("node-3"), std::string::npos);
  auto results = Results("byprofile");
  ASSERT_EQ(results.size(), 4u);
  for (const auto& r : results) {
    EXPECT_EQ(r["spec"]["report"].value("profile", ""), "sim-gpu");
    EXPECT_EQ(r["spec"]["report"].value("profileVersion", ""), "2026.11-1");
  }
  // A profile that does not exist is an invalid spec, named.
  Apply(SpecHead("noprofile") + "  profile: no-such-profile\n");
  ASSERT_TRUE(WaitComplete("noprofile", 30));
  Json bad = Validation("noprofile");
  EXPECT_EQ(Condition(bad, "Ready").value("reason", ""), "InvalidSpec");
  EXPECT_NE(Condition(bad, "Ready").value("message", "").find("no-such-profile"),
            std::string::npos);

  // `profile: auto` picks by the nodes' nvidia.com/gpu.product (NVIDIA-H200 here) among the
  // cluster's PerfProfiles, and inlines what it picked.
  Apply(SpecHead("byauto") + "  profile: auto\n");
  ASSERT_TRUE(WaitComplete("byauto"));
  Json a = Validation("byauto");
  EXPECT_EQ(a["status"].value("profile", ""), "sim-gpu") << a.dump(2);
  EXPECT_EQ(a["status"].value("passedNodes", ""), "3/4") << a.dump(2);
  for (const auto& r : Results("byauto")) {
    EXPECT_EQ(r["spec"]["report"].value("profile", ""), "sim-gpu") << r.dump(2);
  }
  // One validation certifies one GPU model: a second model among the selected nodes is an
  // invalid spec naming both, and so is a node without the label.
  kubesim::NodeSpec b200;
  b200.name = "node-b200";
  b200.gpuProduct = "NVIDIA-B200";
  ASSERT_TRUE(sim_->AddNode(b200).ok());
  Apply(SpecHead("mixed") + "  profile: auto\n");
  ASSERT_TRUE(WaitComplete("mixed", 30));
  Json m = Validation("mixed");
  EXPECT_EQ(Condition(m, "Ready").value("reason", ""), "InvalidSpec") << m.dump(2);
  EXPECT_NE(Condition(m, "Ready")
                .value("message", "")
                .find("different GPU models (NVIDIA-B200, NVIDIA-H200): select one with "
                      "spec.nodeSelector nvidia.com/gpu.product"),
            std::string::npos)
      << Condition(m, "Ready").dump();
}

// A bound that cannot bind (>= 0 on a bandwidth passes whatever is measured) is InvalidSpec in a
// cluster too, with the field named, before any node is tested or labelled.
TEST_F(E2E, BoundThatCannotBindIsInvalidSpec) {
  std::string spec = SyntheticSpec("nobound", "");
  spec.replace(spec.find("value: 90"), 9, "value: 0");
  const std::string msg = ApplyExpectingInvalidSpec("nobound", spec);
  EXPECT_NE(msg.find("spec.tests[0].thresholds[0].value: a \">=\" bound of 0 on bandwidthGBps"),
            std::string::npos)
      << msg;
  EXPECT_EQ(VerdictLabel(Node("node-0")), "");
}

// gpusPerNode that no selected node has is the spec's mistake: InvalidSpec naming the nodes
// and what they have, no worker pod, no node labelled.
TEST_F(E2E, ImpossibleGpusPerNodeIsInvalidSpecNamingTheNodes) {
  const std::string msg = ApplyExpectingInvalidSpec(
      "toomany", SyntheticSpec("toomany", "", "    onFailure: taint\n", "  gpusPerNode: 16\n"));
  EXPECT_NE(msg.find("spec.gpusPerNode: 16 GPUs per node, and no selected node has that many"),
            std::string::npos)
      << msg;
  for (const char* n : {"node-0", "node-1", "node-2", "node-3"}) {
    EXPECT_NE(msg.find(std::string(n) + " has 8"), std::string::npos) << msg;
    EXPECT_EQ(VerdictLabel(Node(n)), "") << n;
  }
  EXPECT_TRUE(Results("toomany").empty());
}

// A profile named for another GPU model than the selected nodes' is InvalidSpec naming the
// nodes and both models: its bounds would pass or fail them for the wrong reasons.
TEST_F(E2E, NamedProfileOfAnotherModelIsInvalidSpecNamingNodesAndModels) {
  Apply(
      "apiVersion: perfgate.io/v1alpha1\n"
      "kind: PerfProfile\n"
      "metadata:\n"
      "  name: h100-sim\n"
      "spec:\n"
      "  version: \"1\"\n"
      "  gpuModels: [\"H100 80GB HBM3\"]\n"
      "  quick:\n"
      "    tests:\n"
      "      - type: synthetic\n"
      "        thresholds: [{metric: bandwidthGBps, value: 90}]\n");
  // The simulated nodes are labelled NVIDIA-H200.
  const std::string msg = ApplyExpectingInvalidSpec(
      "wrongmodel",
      GpuNodesSpec("wrongmodel") + "  profile: h100-sim\n  policy:\n    onFailure: taint\n");
  EXPECT_NE(msg.find("profile \"h100-sim\" is for GPU models H100 80GB HBM3"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("node-0 (NVIDIA-H200)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node-3 (NVIDIA-H200)"), std::string::npos) << msg;
  for (const char* n : {"node-0", "node-1", "node-2", "node-3"}) {
    EXPECT_EQ(VerdictLabel(Node(n)), "") << n;
    EXPECT_FALSE(HasPerfgateTaint(Node(n))) << n;
  }
}

// `profile: auto` reads GPU Feature Discovery's labels with the shipped profiles' gpuModels:
// an H100 SXM node gets the H100 profile, and a GH200 node is refused, never given the H200 one.
TEST_F(E2E, AutoPicksShippedProfilesFromGfdLabels) {
  auto applied = Kubectl(*sim_, {"apply", "-f", std::string(PERFGATE_SOURCE_DIR) + "/profiles"});
  ASSERT_EQ(applied.exitCode, 0) << applied.err;
  kubesim::NodeSpec h100;
  h100.name = "node-h100";
  h100.gpuProduct = "NVIDIA-H100-80GB-HBM3";
  ASSERT_TRUE(sim_->AddNode(h100).ok());
  kubesim::NodeSpec gh200;
  gh200.name = "node-gh200";
  gh200.gpuProduct = "NVIDIA-GH200-480GB";
  ASSERT_TRUE(sim_->AddNode(gh200).ok());

  Apply(SpecHead("autoh100") +
        "  profile: auto\n  nodeSelector:\n    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n");
  EXPECT_TRUE(Eventually(
      [&] {
        auto v = sim_->Get("perfgate.io", "perfvalidations", "", "autoh100");
        return v.ok() && v->value("status", Json::object()).value("profile", "") == "h100-sxm-80gb";
      },
      30))
      << Validation("autoh100").dump(2);

  const std::string msg = ApplyExpectingInvalidSpec(
      "autogh200", SpecHead("autogh200") +
                       "  profile: auto\n  nodeSelector:\n"
                       "    nvidia.com/gpu.product: NVIDIA-GH200-480GB\n");
  EXPECT_EQ(Validation("autogh200")["status"].value("profile", ""), "");
  EXPECT_NE(msg.find("GPU \"NVIDIA-GH200-480GB\" is not a model of any profile"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("h200-sxm-141gb (H200, !NVL)"), std::string::npos) << msg;
}

// A GPU node as a managed cloud labels it: the cloud's own labels, none of GPU Feature
// Discovery's (kube-sim writes them on every node; they are taken off again, as kubectl would).
void AddCloudNode(kubesim::KubeSim& sim, const std::string& name,
                  const std::map<std::string, std::string>& labels, Json taints = Json::array()) {
  kubesim::NodeSpec node;
  node.name = name;
  node.labels = labels;
  node.taints = std::move(taints);
  ASSERT_TRUE(sim.AddNode(node).ok()) << name;
  auto r = Kubectl(sim, {"label", "node", name, "nvidia.com/gpu.product-",
                         "nvidia.com/gpu.present-", "nvidia.com/gpu.count-"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
}

// GKE's GPU node pools carry this taint by default.
Json GkeGpuTaint() {
  return Json::array({{{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}}});
}

// Worker pods the scheduler placed, by node.
std::set<std::string> ScheduledNodes(const std::vector<Json>& pods) {
  std::set<std::string> out;
  for (const auto& p : pods) {
    const std::string node = p["spec"].value("nodeName", "");
    if (!node.empty()) out.insert(node);
  }
  return out;
}

// Without GPU Feature Discovery, `profile: auto` reads each cloud's own labels: a GKE pool (with
// GKE's default GPU taint), an EKS node group and an AKS pool each get their model's built-in
// profile, say how the model was read, and their workers are scheduled past the GPU taints.
TEST_F(E2E, AutoResolvesFromGkeEksAndAksLabelsWithoutGfd) {
  auto applied = Kubectl(*sim_, {"apply", "-f", std::string(PERFGATE_SOURCE_DIR) + "/profiles"});
  ASSERT_EQ(applied.exitCode, 0) << applied.err;
  for (const char* n : {"gke-a3-0", "gke-a3-1"}) {
    AddCloudNode(*sim_, n,
                 {{"cloud.google.com/gke-accelerator", "nvidia-h100-80gb"},
                  {"cloud.google.com/gke-nodepool", "a3"},
                  {"node.kubernetes.io/instance-type", "a3-highgpu-8g"}},
                 GkeGpuTaint());
  }
  // An EKS node group tainted as GPU node groups often are (EKS sets no taint by default).
  AddCloudNode(*sim_, "eks-p5en-0",
               {{"eks.amazonaws.com/nodegroup", "gpu"},
                {"node.kubernetes.io/instance-type", "p5en.48xlarge"}},
               Json::array({{{"key", "nvidia.com/gpu"}, {"effect", "NoSchedule"}}}));
  AddCloudNode(*sim_, "aks-nd-0",
               {{"kubernetes.azure.com/accelerator", "nvidia"},
                {"kubernetes.azure.com/agentpool", "gpu"},
                {"node.kubernetes.io/instance-type", "Standard_ND96amsr_A100_v4"}});

  struct Pool {
    std::string validation, selectorKey, selectorValue, profile, gpuModels;
    std::set<std::string> nodes;
  };
  const std::vector<Pool> pools = {
      {"gke",
       "cloud.google.com/gke-accelerator",
       "nvidia-h100-80gb",
       "h100-sxm-80gb",
       "NVIDIA H100 80GB HBM3: gke-a3-0, gke-a3-1 (GKE label "
       "cloud.google.com/gke-accelerator=nvidia-h100-80gb)",
       {"gke-a3-0", "gke-a3-1"}},
      {"eks",
       "node.kubernetes.io/instance-type",
       "p5en.48xlarge",
       "h200-sxm-141gb",
       "NVIDIA H200: eks-p5en-0 (EKS instance type node.kubernetes.io/instance-type=p5en.48xlarge)",
       {"eks-p5en-0"}},
      {"aks",
       "kubernetes.azure.com/accelerator",
       "nvidia",
       "a100-sxm-80gb",
       "NVIDIA A100-SXM4-80GB: aks-nd-0 (AKS VM size "
       "node.kubernetes.io/instance-type=Standard_ND96amsr_A100_v4)",
       {"aks-nd-0"}},
  };
  for (const Pool& p : pools) {
    Apply(SpecHead(p.validation) + "  profile: auto\n  nodeSelector:\n    " + p.selectorKey +
          ": \"" + p.selectorValue + "\"\n");
  }
  for (const Pool& p : pools) {
    EXPECT_TRUE(Eventually(
        [&] {
          auto v = sim_->Get("perfgate.io", "perfvalidations", "", p.validation);
          return v.ok() && !v->value("status", Json::object()).value("profile", "").empty() &&
                 ScheduledNodes(Pods(p.validation)) == p.nodes;
        },
        30))
        << p.validation << ": " << Validation(p.validation).dump(2);
    Json v = Validation(p.validation);
    EXPECT_EQ(v["status"].value("profile", ""), p.profile) << v.dump(2);
    EXPECT_EQ(v["status"].value("gpuModels", ""), p.gpuModels) << v.dump(2);
    EXPECT_NE(v["status"].value("verdict", ""), "InvalidSpec") << v.dump(2);
  }
  // The way each model was read is also an event on the validation.
  bool event = false;
  for (const auto& e : sim_->List("", "events", "default")) {
    event |= e.value("reason", "") == "GpuModels" &&
             e["involvedObject"].value("name", "") == "gke" &&
             e.value("message", "").find("GKE label cloud.google.com/gke-accelerator") !=
                 std::string::npos;
  }
  EXPECT_TRUE(event);
}

// A model no built-in profile is for, a node whose labels name no model, and two models in one
// validation are each refused before any pod, naming the nodes, the labels read and the profiles.
TEST_F(E2E, AutoRefusesCloudNodesItCannotCertifyNamingNodesAndLabels) {
  auto applied = Kubectl(*sim_, {"apply", "-f", std::string(PERFGATE_SOURCE_DIR) + "/profiles"});
  ASSERT_EQ(applied.exitCode, 0) << applied.err;
  AddCloudNode(*sim_, "eks-p4d-0", {{"node.kubernetes.io/instance-type", "p4d.24xlarge"}});
  AddCloudNode(*sim_, "gke-l4-0",
               {{"cloud.google.com/gke-accelerator", "nvidia-l4"},
                {"node.kubernetes.io/instance-type", "g2-standard-8"}},
               GkeGpuTaint());
  AddCloudNode(*sim_, "gke-a3-0", {{"cloud.google.com/gke-accelerator", "nvidia-h100-80gb"}},
               GkeGpuTaint());
  auto refused = [&](const std::string& name, const std::string& body) {
    Apply(SpecHead(name) + "  profile: auto\n" + body);
    EXPECT_TRUE(WaitComplete(name, 30));
    Json v = Validation(name);
    EXPECT_EQ(Condition(v, "Ready").value("reason", ""), "InvalidSpec") << v.dump(2);
    EXPECT_TRUE(Pods(name).empty()) << name;
    return Condition(v, "Ready").value("message", "");
  };

  const std::string a100 = refused("p4d", "  nodes: [eks-p4d-0]\n");
  EXPECT_NE(a100.find("GPU \"NVIDIA A100-SXM4-40GB\" is not a model of any profile"),
            std::string::npos)
      << a100;
  EXPECT_NE(
      a100.find("eks-p4d-0 (EKS instance type node.kubernetes.io/instance-type=p4d.24xlarge)"),
      std::string::npos)
      << a100;
  EXPECT_NE(a100.find("a100-sxm-80gb (A100-SXM4-80GB, A100-SXM-80GB)"), std::string::npos) << a100;

  const std::string l4 = refused("l4", "  nodes: [gke-l4-0]\n");
  EXPECT_NE(l4.find("node gke-l4-0: no label names a GPU model perfgate knows (read "
                    "nvidia.com/gpu.product (absent), cloud.google.com/gke-accelerator=nvidia-l4, "
                    "node.kubernetes.io/instance-type=g2-standard-8)"),
            std::string::npos)
      << l4;
  EXPECT_NE(l4.find("profiles: a100-sxm-80gb"), std::string::npos) << l4;

  // A named profile is checked against the model GKE's label names.
  Apply(SpecHead("named") + "  profile: h200-sxm-141gb\n  nodes: [gke-a3-0]\n");
  EXPECT_TRUE(WaitComplete("named", 30));
  Json named = Validation("named");
  EXPECT_EQ(Condition(named, "Ready").value("reason", ""), "InvalidSpec") << named.dump(2);
  EXPECT_NE(Condition(named, "Ready")
                .value("message", "")
                .find("1 selected node has another model: gke-a3-0 (NVIDIA H100 80GB HBM3)"),
            std::string::npos)
      << named.dump(2);
  EXPECT_EQ(named["status"].value("gpuModels", ""),
            "NVIDIA H100 80GB HBM3: gke-a3-0 (GKE label "
            "cloud.google.com/gke-accelerator=nvidia-h100-80gb)");
  EXPECT_TRUE(Pods("named").empty());

  const std::string mixed = refused("mixed", "  nodes: [eks-p4d-0, gke-a3-0]\n");
  EXPECT_NE(mixed.find("different GPU models (NVIDIA A100-SXM4-40GB, NVIDIA H100 80GB HBM3)"),
            std::string::npos)
      << mixed;
  EXPECT_NE(mixed.find("split the validation, one per model: NVIDIA A100-SXM4-40GB: eks-p4d-0 (EKS "
                       "instance type node.kubernetes.io/instance-type=p4d.24xlarge); NVIDIA H100 "
                       "80GB HBM3: gke-a3-0 (GKE label "
                       "cloud.google.com/gke-accelerator=nvidia-h100-80gb)"),
            std::string::npos)
      << mixed;
}

// The README's cluster example, applied as it is, on a GKE cluster without GPU Feature
// Discovery: it selects every node with allocatable GPUs (not the CPU node), checks its profile
// against the model GKE's label names, and its workers get past GKE's default GPU taint.
TEST_F(E2E, ReadmeClusterExampleWorksWithoutGfd) {
  auto applied = Kubectl(*sim_, {"apply", "-f", std::string(PERFGATE_SOURCE_DIR) + "/profiles"});
  ASSERT_EQ(applied.exitCode, 0) << applied.err;
  auto removed = Kubectl(*sim_, {"delete", "nodes", "node-0", "node-1", "node-2", "node-3"});
  ASSERT_EQ(removed.exitCode, 0) << removed.err;
  for (const char* n : {"gke-a3u-0", "gke-a3u-1"}) {
    AddCloudNode(*sim_, n,
                 {{"cloud.google.com/gke-accelerator", "nvidia-h200-141gb"},
                  {"node.kubernetes.io/instance-type", "a3-ultragpu-8g"}},
                 GkeGpuTaint());
  }
  kubesim::NodeSpec cpu;
  cpu.name = "gke-cpu-0";
  cpu.gpus = 0;
  ASSERT_TRUE(sim_->AddNode(cpu).ok());
  auto r = Kubectl(*sim_, {"label", "node", "gke-cpu-0", "nvidia.com/gpu.product-",
                           "nvidia.com/gpu.present-", "nvidia.com/gpu.count-"});
  ASSERT_EQ(r.exitCode, 0) << r.err;

  auto example = Kubectl(
      *sim_, {"apply", "-f", std::string(PERFGATE_SOURCE_DIR) + "/examples/h200-node.yaml"});
  ASSERT_EQ(example.exitCode, 0) << example.err;
  const std::set<std::string> gpu_nodes = {"gke-a3u-0", "gke-a3u-1"};
  EXPECT_TRUE(
      Eventually([&] { return ScheduledNodes(Pods("h200-node-acceptance")) == gpu_nodes; }, 30))
      << Validation("h200-node-acceptance").dump(2);
  Json v = Validation("h200-node-acceptance");
  EXPECT_EQ(v["status"].value("profile", ""), "h200-sxm-141gb") << v.dump(2);
  EXPECT_NE(v["status"].value("gpuModels", "").find("GKE label"), std::string::npos) << v.dump(2);
  EXPECT_EQ(Pods("h200-node-acceptance").size(), 2u);
}

// A validation of the NCCL CPU stand-in as one gang over every GPU node; the operator, not the
// spec, must make the sampling fixed (sequential stopping could desynchronise the ranks).
std::string GangSpec(const std::string& name, const std::string& shape,
                     const std::string& extra_spec = "") {
  return GpuNodesSpec(name) + extra_spec +
         "  gang:\n"
         "    shape: " +
         shape +
         "\n"
         "  sampling:\n"
         "    warmup: 1\n"
         "    minRepeats: 2\n"
         "    maxRepeats: 3\n"
         "  policy:\n"
         "    onFailure: taint\n"
         "    nodeTimeoutSeconds: 60\n"
         "  tests:\n"
         "    - type: nccl-cpu-loopback\n"
         "      parameters:\n"
         "        collective: reduce_scatter\n"
         "        maxBytes: 65536\n"
         "        stepFactor: 16\n"
         "        initTimeoutSeconds: 30\n";
}

std::string EnvOf(const Json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0].value("env", Json::array())) {
    if (e.value("name", "") == name) return e.value("value", "");
  }
  return "";
}

// 7. A 4-node gang: every rank completes the rendezvous at rank 0 and writes its own node's
// result; the operator forms one verdict from the four.
TEST_F(E2E, GangOfFourPasses) {
  Apply(GangSpec("gang", "all"));
  ASSERT_TRUE(WaitComplete("gang"));
  Json v = Validation("gang");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "True") << v.dump(2);
  EXPECT_EQ(v["status"].value("passedNodes", ""), "4/4");
  EXPECT_EQ(v["status"].value("gangs", 0), 1);
  auto results = Results("gang");
  ASSERT_EQ(results.size(), 4u);
  for (const auto& r : results) {
    EXPECT_NE(r["spec"].value("writtenBy", ""), "operator") << r.dump(2);
    EXPECT_EQ(r["spec"]["report"].value("verdict", ""), "PASS") << r.dump(2);
    const Json tests = r["spec"]["report"].value("tests", Json::array());
    ASSERT_EQ(tests.size(), 1u) << r.dump(2);
    EXPECT_EQ(tests[0].value("type", ""), "nccl-cpu-loopback");
    // maxRepeats of the spec, on every rank: the operator made the sampling fixed.
    EXPECT_EQ(tests[0].value("stopReason", ""), "fixed") << r.dump(2);
    EXPECT_EQ(tests[0].value("samples", 0), 3) << r.dump(2);
  }
  // Ranks follow the sorted node names; all point at one rendezvous; sampling was fixed.
  auto pods = Pods("gang");
  ASSERT_EQ(pods.size(), 4u);
  std::set<std::string> comm_ids;
  for (const auto& p : pods) {
    const std::string node = p["metadata"]["labels"].value("perfgate.io/node", "");
    EXPECT_EQ(EnvOf(p, "PERFGATE_GANG_SIZE"), "4");
    EXPECT_EQ(EnvOf(p, "PERFGATE_GANG_RANK"), node.substr(node.size() - 1)) << node;
    comm_ids.insert(EnvOf(p, "NCCL_COMM_ID"));
  }
  EXPECT_EQ(comm_ids.size(), 1u);
  std::string plan;
  for (const auto& cm : sim_->List("", "configmaps", kNs)) {
    plan += cm.value("data", Json::object()).value("plan.yaml", "");
  }
  EXPECT_NE(plan.find("\"method\":\"fixed\""), std::string::npos) << plan;
}

// 8. A gang with one pod that cannot be scheduled fails as a whole, every node with the reason,
// and nobody is tainted (a scheduling problem is not a bad GPU).
TEST_F(E2E, GangWithUnschedulablePodFailsAsOne) {
  ASSERT_TRUE(AddUntoleratedNode("node-4").ok());
  Apply(GangSpec("gang-broken", "all"));
  ASSERT_TRUE(WaitComplete("gang-broken", 60));
  Json v = Validation("gang-broken");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "False") << v.dump(2);
  EXPECT_EQ(Condition(v, "Ready").value("reason", ""), "NodeErrors");
  auto results = Results("gang-broken");
  ASSERT_EQ(results.size(), 5u);
  for (const auto& r : results) {
    const std::string node = r["spec"].value("nodeName", "");
    const std::string reason = r["spec"]["report"].value("reason", "");
    EXPECT_EQ(r["spec"]["report"].value("verdict", ""), "ERROR") << node;
    if (node == "node-4") {
      EXPECT_NE(reason.find("not scheduled"), std::string::npos) << reason;
    } else {
      EXPECT_NE(reason.find("gang of 5: node-4 ERROR: worker pod not scheduled"), std::string::npos)
          << node << ": " << reason;
    }
    EXPECT_FALSE(HasPerfgateTaint(Node(node))) << node;
  }
  const std::string msg = v["status"].value("message", "");
  EXPECT_NE(msg.find("gang of 5: node-4 ERROR: worker pod not scheduled"), std::string::npos)
      << msg;
}

// 9. Pairs are separate gangs: (node-0,node-1) passes while (node-2,node-3,node-4), whose odd
// node-4 cannot be scheduled, fails as a whole; a scheduling problem makes nobody a suspect.
TEST_F(E2E, GangPairsFailOnlyTheirOwnPair) {
  ASSERT_TRUE(AddUntoleratedNode("node-4").ok());
  Apply(GangSpec("pairs", "pairs"));
  ASSERT_TRUE(WaitComplete("pairs", 60));
  Json v = Validation("pairs");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "False") << v.dump(2);
  EXPECT_EQ(v["status"].value("gangs", 0), 2);
  EXPECT_EQ(v["status"].value("passedNodes", ""), "2/5");
  EXPECT_FALSE(v["status"].contains("suspectNodes")) << v.dump(2);
  std::map<std::string, Json> by_node;
  for (auto& r : Results("pairs")) by_node[r["spec"].value("nodeName", "")] = r;
  ASSERT_EQ(by_node.size(), 5u);
  for (const char* n : {"node-0", "node-1"}) {
    EXPECT_EQ(by_node[n]["spec"]["report"].value("verdict", ""), "PASS") << n;
  }
  for (const char* n : {"node-2", "node-3"}) {
    EXPECT_EQ(by_node[n]["spec"]["report"].value("verdict", ""), "ERROR") << n;
    EXPECT_NE(by_node[n]["spec"]["report"].value("reason", "").find("gang of 3: node-4 ERROR"),
              std::string::npos)
        << by_node[n].dump(2);
  }
  std::map<std::string, std::string> size_of;
  for (const auto& p : Pods("pairs")) {
    size_of[p["metadata"]["labels"].value("perfgate.io/node", "")] = EnvOf(p, "PERFGATE_GANG_SIZE");
  }
  EXPECT_EQ(size_of["node-0"], "2");
  EXPECT_EQ(size_of["node-1"], "2");
}

// A gang over every GPU node whose node-2 is slow (the stand-in sleeps 200 ms per call), with
// a time bound only a gang without node-2 meets.
std::string SlowNodeGangSpec(const std::string& name, const std::string& shape,
                             const std::string& behaviour = "[\"node-2=slow:200\"]") {
  return GpuNodesSpec(name) + "  gang: {shape: " + shape +
         "}\n"
         "  sampling: {warmup: 1, minRepeats: 5, maxRepeats: 5}\n"
         "  policy: {onFailure: none, nodeTimeoutSeconds: 60}\n"
         "  tests:\n"
         "    - type: nccl-cpu-loopback\n"
         "      parameters: {collective: all_reduce, minBytes: 65536, maxBytes: 65536,\n"
         "                   warmupIterations: 1, iterations: 3, inPlace: false,\n"
         "                   initTimeoutSeconds: 30, behaviour: " +
         behaviour +
         "}\n"
         "      thresholds:\n"
         "        - {metric: timeMicroseconds@64KiB, statistic: median, op: \"<=\", value: "
         "50000}\n";
}

// 10. One planted slow node: its pair fails its time threshold, then each node of that pair
// runs again beside a node that passed, and only the slow one is named a suspect.
TEST_F(E2E, GangPairsNameTheSlowNodeAsSuspect) {
  Apply(SlowNodeGangSpec("narrow", "pairs"));
  ASSERT_TRUE(WaitComplete("narrow", 90));
  Json v = Validation("narrow");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "False") << v.dump(2);
  EXPECT_EQ(v["status"].value("suspectNodes", Json::array()), Json::array({"node-2"})) << v.dump(2);
  EXPECT_EQ(v["status"].value("passedNodes", ""), "2/4") << v.dump(2);
  std::map<std::string, Json> by_node;
  for (auto& r : Results("narrow")) {
    if (r["metadata"]["labels"].value("perfgate.io/run", "") == v["status"].value("run", "")) {
      by_node[r["spec"].value("nodeName", "")] = r;
    }
  }
  ASSERT_EQ(by_node.size(), 4u);
  EXPECT_EQ(by_node["node-2"]["spec"]["report"].value("verdict", ""), "FAIL")
      << by_node["node-2"].dump(2);
  EXPECT_EQ(by_node["node-0"]["spec"]["report"].value("verdict", ""), "PASS");
}

// 11. A whole-cluster gang that fails narrows itself down: its nodes run again in pairs, then
// each node of the failing pair beside a node that passed, and only the slow one is named.
TEST_F(E2E, GangAllFailureNarrowsByPairsToTheSlowNode) {
  Apply(SlowNodeGangSpec("narrow-all", "all"));
  ASSERT_TRUE(WaitComplete("narrow-all", 120));
  Json v = Validation("narrow-all");
  const std::string run = v["status"].value("run", "");
  EXPECT_EQ(v["status"].value("suspectNodes", Json::array()), Json::array({"node-2"})) << v.dump(2);
  // The gang's verdict stands: one slow rank slows every collective of the gang.
  EXPECT_EQ(v["status"].value("passedNodes", ""), "0/4") << v.dump(2);
  EXPECT_NE(v["status"].value("message", "").find("suspect nodes (narrowed down by pairs): node-2"),
            std::string::npos)
      << v["status"].value("message", "");
  auto events = Kubectl(*sim_, {"get", "events", "-n", "default", "--field-selector",
                                "reason=SuspectNodes", "-o", "jsonpath={.items[*].message}"});
  EXPECT_EQ(events.out, "narrowed down by pairs: node-2") << events.err;
  auto wide = Kubectl(*sim_, {"get", "pval", "narrow-all", "-o", "wide"});
  EXPECT_THAT(wide.out, ::testing::ContainsRegex("SUSPECTS"));
  EXPECT_THAT(wide.out, ::testing::HasSubstr("[\"node-2\"]")) << wide.out;
  // The rounds: two pairs, then one probe per node of the failing pair (node-2, node-3).
  std::map<std::string, std::map<std::string, std::string>> verdicts;  // run -> node -> verdict
  for (auto& r : Results("narrow-all")) {
    verdicts[r["metadata"]["labels"].value("perfgate.io/run", "")]
            [r["spec"].value("nodeName", "")] = r["spec"]["report"].value("verdict", "");
  }
  EXPECT_EQ(verdicts[run + "-pairs"],
            (std::map<std::string, std::string>{
                {"node-0", "PASS"}, {"node-1", "PASS"}, {"node-2", "FAIL"}, {"node-3", "FAIL"}}));
  EXPECT_EQ(verdicts[run + "-probe"],
            (std::map<std::string, std::string>{
                {"node-0", "FAIL"}, {"node-1", "PASS"}, {"node-2", "FAIL"}, {"node-3", "PASS"}}));
}

// 11a. More suspects than passing nodes: the probes run in rounds. Six nodes, node-2 and
// node-4 slow: pairs (0,1) pass, (2,3) and (4,5) fail; round 1 probes node-2 and node-3
// beside node-0 and node-1, round 2 node-4 and node-5; only the slow two stay suspects.
TEST_F(E2E, GangProbesRunInRoundsWhenSuspectsOutnumberPassingNodes) {
  for (const char* n : {"node-4", "node-5"}) {
    kubesim::NodeSpec node;
    node.name = n;
    ASSERT_TRUE(sim_->AddNode(node).ok());
  }
  Apply(SlowNodeGangSpec("rounds", "pairs", "[\"node-2=slow:200\", \"node-4=slow:200\"]"));
  ASSERT_TRUE(WaitComplete("rounds", 150));
  Json v = Validation("rounds");
  const std::string run = v["status"].value("run", "");
  EXPECT_EQ(v["status"].value("suspectNodes", Json::array()), Json::array({"node-2", "node-4"}))
      << v.dump(2);
  std::map<std::string, std::set<std::string>> nodes_of;  // round -> nodes
  for (auto& r : Results("rounds")) {
    nodes_of[r["metadata"]["labels"].value("perfgate.io/run", "")].insert(
        r["spec"].value("nodeName", ""));
  }
  EXPECT_EQ(nodes_of[run + "-probe"],
            (std::set<std::string>{"node-0", "node-1", "node-2", "node-3"}));
  EXPECT_EQ(nodes_of[run + "-probe2"],
            (std::set<std::string>{"node-0", "node-1", "node-4", "node-5"}));
}

// 11b. narrow: none stops at the pairs: both nodes of the failing pair are named, and no
// probe runs.
TEST_F(E2E, GangPairsWithoutNarrowingNameTheFailingPair) {
  Apply(SlowNodeGangSpec("nonarrow", "pairs, narrow: none"));
  ASSERT_TRUE(WaitComplete("nonarrow", 90));
  Json v = Validation("nonarrow");
  EXPECT_EQ(v["status"].value("suspectNodes", Json::array()), Json::array({"node-2", "node-3"}))
      << v.dump(2);
  for (auto& r : Results("nonarrow")) {
    EXPECT_EQ(r["metadata"]["labels"].value("perfgate.io/run", ""), v["status"].value("run", ""))
        << "a narrowing round ran: " << r.dump(2);
  }
}

// 11c. The fabric rail by rail: nccl-rails on the CPU stand-in, each node's two fake NICs read
// from a recorded ConnectX-7 tree, one child process per rail, node-2's mlx5_1 planted slow.
// Its pair fails on that rail, narrowing names node-2, and node-2's failure names the NIC, its
// PCI address and NUMA node and the peer it was paired with; every pod knows its gang's nodes.
TEST_F(E2E, GangRailsNameTheSlowNodeAndItsRail) {
  Apply(GpuNodesSpec("rails") +
        "  gang: {shape: pairs}\n"
        "  sampling: {warmup: 0, minRepeats: 3, maxRepeats: 3}\n"
        "  policy: {onFailure: none, nodeTimeoutSeconds: 60}\n"
        "  tests:\n"
        "    - type: nccl-rails-cpu-loopback\n"
        "      parameters: {hcas: [mlx5_0, mlx5_1], bytes: 65536, warmupIterations: 0,\n"
        "                   iterations: 2, initTimeoutSeconds: 30, timeoutSeconds: 30,\n"
        "                   sysfsRoot: \"" +
        std::string(PERFGATE_SOURCE_DIR) +
        "/tests/kernels/sysfs/cx7-ndr-clean\",\n"
        "                   behaviour: [\"node-2/mlx5_1=slow:100\"]}\n"
        "      thresholds:\n"
        "        - {metric: slowestRailBusBandwidthGBps, statistic: min, op: \">=\", "
        "value: 0.002}\n");
  ASSERT_TRUE(WaitComplete("rails", 90));
  Json v = Validation("rails");
  const std::string run = v["status"].value("run", "");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "False") << v.dump(2);
  EXPECT_EQ(v["status"].value("suspectNodes", Json::array()), Json::array({"node-2"})) << v.dump(2);
  std::map<std::string, Json> by_node;
  for (auto& r : Results("rails")) {
    if (r["metadata"]["labels"].value("perfgate.io/run", "") == run) {
      by_node[r["spec"].value("nodeName", "")] = r;
    }
  }
  ASSERT_EQ(by_node.size(), 4u);
  EXPECT_EQ(by_node["node-0"]["spec"]["report"].value("verdict", ""), "PASS")
      << by_node["node-0"].dump(2);
  const Json& failed = by_node["node-2"]["spec"]["report"];
  EXPECT_EQ(failed.value("verdict", ""), "FAIL") << failed.dump(2);
  const std::string reason = failed.dump();
  EXPECT_NE(reason.find("mlx5_1 (PCI 0000:40:00.0, NUMA 0) paired with node-3"), std::string::npos)
      << reason;
  for (const auto& p : Pods("rails")) {
    const std::string size = EnvOf(p, "PERFGATE_GANG_SIZE");
    EXPECT_EQ(EnvOf(p, "PERFGATE_GANG_NODES").size(), size == "2" ? 13u : 20u) << p.dump(2);
  }
}

// 12. spec.gang.network reaches the gang's pods: the RDMA resource is requested (so only nodes
// that have it run the gang), the interface and HCA variables and extra NCCL/libfabric
// variables are in every rank's environment and in its report, and host networking comes
// with the DNS policy that still resolves rank 0's Service. A node without the resource
// leaves the gang unscheduled, with the scheduler's reason.
TEST_F(E2E, GangNetworkOptionsReachThePods) {
  for (const char* name : {"rdma-0", "rdma-1", "rdma-2"}) {
    kubesim::NodeSpec node;
    node.name = name;
    node.labels = {{"fabric", "rdma"}};
    if (std::string(name) != "rdma-2") node.extendedResources = {{"rdma/rdma_shared_device_a", 1}};
    ASSERT_TRUE(sim_->AddNode(node).ok());
  }
  auto spec = [](const std::string& name, const std::string& nodes) {
    return SpecHead(name) + "  nodes: " + nodes +
           "\n"
           "  gang:\n"
           "    shape: all\n"
           "    shmSize: 16Gi\n"
           "    network:\n"
           "      podAnnotations: {k8s.v1.cni.cncf.io/networks: rdma-net}\n"
           "      socketIfname: lo\n"
           "      ibHca: =mlx5_0:1\n"
           "      hostNetwork: true\n"
           "      resources: {rdma/rdma_shared_device_a: 1}\n"
           "      env: {NCCL_IB_GID_INDEX: \"3\", FI_PROVIDER: efa}\n"
           "  sampling: {warmup: 1, minRepeats: 2, maxRepeats: 2}\n"
           "  policy: {nodeTimeoutSeconds: 60}\n"
           "  tests:\n"
           "    - type: nccl-cpu-loopback\n"
           "      parameters: {collective: all_gather, maxBytes: 4096, initTimeoutSeconds: 30}\n";
  };
  Apply(spec("fabric", "[rdma-0, rdma-1]"));
  ASSERT_TRUE(WaitComplete("fabric", 60));
  Json v = Validation("fabric");
  EXPECT_EQ(v["status"].value("passedNodes", ""), "2/2") << v.dump(2);
  auto pods = Pods("fabric");
  ASSERT_EQ(pods.size(), 2u);
  for (const auto& p : pods) {
    EXPECT_EQ(EnvOf(p, "NCCL_SOCKET_IFNAME"), "lo");
    EXPECT_EQ(EnvOf(p, "NCCL_IB_HCA"), "=mlx5_0:1");
    EXPECT_EQ(EnvOf(p, "NCCL_IB_GID_INDEX"), "3");
    EXPECT_EQ(EnvOf(p, "FI_PROVIDER"), "efa");
    EXPECT_TRUE(p["spec"].value("hostNetwork", false));
    EXPECT_EQ(p["spec"].value("dnsPolicy", ""), "ClusterFirstWithHostNet");
    EXPECT_EQ(p["metadata"]["annotations"].value("k8s.v1.cni.cncf.io/networks", ""), "rdma-net");
    std::string shm;
    for (const auto& vol : p["spec"]["volumes"]) {
      if (vol.value("name", "") == "dshm") shm = vol["emptyDir"].value("sizeLimit", "");
    }
    EXPECT_EQ(shm, "16Gi");
    EXPECT_EQ(
        p["spec"]["containers"][0]["resources"]["limits"].value("rdma/rdma_shared_device_a", ""),
        "1");
  }
  for (const auto& r : Results("fabric")) {
    const Json details = r["spec"]["report"]["tests"][0].value("details", Json::object());
    EXPECT_EQ(details.value("env NCCL_SOCKET_IFNAME", ""), "lo") << r.dump(2);
    EXPECT_EQ(details.value("env FI_PROVIDER", ""), "efa") << r.dump(2);
  }

  Apply(spec("fabric-short", "[rdma-0, rdma-1, rdma-2]"));
  ASSERT_TRUE(WaitComplete("fabric-short", 60));
  Json w = Validation("fabric-short");
  EXPECT_EQ(w["status"].value("passedNodes", ""), "0/3") << w.dump(2);
  EXPECT_NE(w["status"].value("message", "").find("Insufficient rdma/rdma_shared_device_a"),
            std::string::npos)
      << w["status"].value("message", "");
}

// ---- Durability: results survive a failing API server ----

// Each node's verdict, as its PerfResult says, and who wrote it.
std::map<std::string, std::string> VerdictsOf(const std::vector<Json>& results) {
  std::map<std::string, std::string> out;
  for (const auto& r : results) {
    out[r["spec"].value("nodeName", "")] =
        r["spec"]["report"].value("verdict", "") + " by " + r["spec"].value("writtenBy", "worker");
  }
  return out;
}

// The API server answers 500 to everything for 20 s while the workers finish: each worker
// keeps retrying its PerfResult and every node ends with the verdict it has without faults
// (node-2 FAIL, the others PASS), written by its worker, not an ERROR by the operator.
TEST_F(E2E, TwentySecondsOf500WhileWorkersFinishLosesNoVerdict) {
  Apply(SyntheticSpec("calm", "node-2=50", "    onFailure: taint\n", "", "0.3"));
  ASSERT_TRUE(WaitComplete("calm"));
  const auto fault_free = VerdictsOf(Results("calm"));
  ASSERT_EQ(fault_free, (std::map<std::string, std::string>{{"node-0", "PASS by worker"},
                                                            {"node-1", "PASS by worker"},
                                                            {"node-2", "FAIL by worker"},
                                                            {"node-3", "PASS by worker"}}));

  // About 3 s of sampling per node: the outage starts once every worker runs and outlasts them.
  Apply(SyntheticSpec("storm", "node-2=50", "    onFailure: taint\n", "", "0.3"));
  ASSERT_TRUE(Eventually(
      [&] {
        auto pods = Pods("storm");
        return pods.size() == 4 && std::all_of(pods.begin(), pods.end(), [](const Json& p) {
                 return p.value("status", Json::object()).value("phase", "") == "Running";
               });
      },
      60));
  sim_->SetFailureFraction(1.0, 500);
  const auto outage_start = std::chrono::steady_clock::now();
  std::this_thread::sleep_until(outage_start + std::chrono::seconds(20));
  sim_->SetFailureFraction(0);
  // Every worker met the outage: its PerfResult was refused at least once.
  std::set<std::string> refused;
  for (const auto& r : sim_->Requests()) {
    auto pod = r.extra.find("authentication.kubernetes.io/pod-name");
    if (r.resource == "perfresults" && r.verb == "create" && r.code == 500 &&
        pod != r.extra.end() && !pod->second.empty()) {
      refused.insert(pod->second[0]);
    }
  }
  EXPECT_EQ(refused.size(), 4u) << "the outage missed some workers' writes";
  // A leader that could not renew its lease through the outage has stopped, as it must; its
  // Deployment would start it again.
  if (op_.Log().find("stopped leading") != std::string::npos) {
    std::cerr << "the operator lost its lease in the outage; starting it again\n";
    op_.Kill(SIGTERM);
    op_.Start(*sim_);
  }

  ASSERT_TRUE(WaitComplete("storm"));
  EXPECT_EQ(VerdictsOf(Results("storm")), fault_free);
  Json v = Validation("storm");
  EXPECT_EQ(v["status"].value("passedNodes", ""), "3/4") << v.dump(2);
  EXPECT_EQ(Condition(v, "Ready").value("reason", ""), "TestsFailed") << v.dump(2);
}

// Two validations of the same nodes applied in one `kubectl apply` (the same second), again and
// again: each node is claimed through the API server by one of them at a time, the other waits
// (visibly: Waiting, naming the node and the holder) and runs afterwards. Every run completes,
// every healthy node PASSes for both, no node ever ran both validations' workers at once, and
// no node was claimed twice. kOverlapRounds rounds (~8 s each here).
TEST_F(E2E, SimultaneousOverlappingValidationsNeverShareANode) {
  constexpr int kOverlapRounds = 10;
  bool saw_waiting = false;
  for (int round = 0; round < kOverlapRounds; ++round) {
    const std::string a = "left-" + std::to_string(round);
    const std::string b = "right-" + std::to_string(round);
    // node-0..2 for one, node-1..3 for the other: three nodes in common.
    std::string ya = SyntheticSpec(a, "", "    onFailure: taint\n", "", "0.05");
    std::string yb = SyntheticSpec(b, "", "    onFailure: taint\n", "", "0.05");
    const std::string selector = "  nodeSelector:\n    nvidia.com/gpu.present: \"true\"\n";
    ya.replace(ya.find(selector), selector.size(), "  nodes: [node-0, node-1, node-2]\n");
    yb.replace(yb.find(selector), selector.size(), "  nodes: [node-1, node-2, node-3]\n");
    Apply(ya + "---\n" + yb);
    // Watch for the loser's Waiting while both run.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (std::chrono::steady_clock::now() < deadline) {
      bool done = true;
      for (const auto& n : {a, b}) {
        auto got = sim_->Get("perfgate.io", "perfvalidations", "", n);
        if (!got.ok() || !got->contains("status")) {
          done = false;
          continue;
        }
        Json v = *got;
        const Json ready = Condition(v, "Ready");
        // The holder is named whether the loser sees its claim or, a moment later, its worker.
        const std::string holder = std::string(n == a ? b : a) + ")";
        const std::string message = ready.value("message", "");
        if (ready.value("reason", "") == "Waiting" &&
            (message.find("(claimed by validation " + holder) != std::string::npos ||
             message.find("(busy with validation " + holder) != std::string::npos)) {
          saw_waiting = true;
        }
        done &= !v["status"].value("completionTime", "").empty();
      }
      if (done) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (const auto& n : {a, b}) {
      ASSERT_TRUE(WaitComplete(n, 30)) << "round " << round;
      Json v = Validation(n);
      EXPECT_EQ(Condition(v, "Passed").value("status", ""), "True")
          << "round " << round << ": " << v.dump(2);
      EXPECT_EQ(v["status"].value("passedNodes", ""), "3/3") << "round " << round;
      for (const auto& r : Results(n)) {
        EXPECT_EQ(r["spec"]["report"].value("verdict", ""), "PASS")
            << "round " << round << " " << r["spec"].value("nodeName", "") << ": "
            << r["spec"]["report"].value("reason", "");
      }
    }
    // No node ran both at once: on each node, one worker finished before the other started.
    std::map<std::string, std::vector<std::pair<std::string, std::string>>> runs;  // node ->
    for (const auto& n : {a, b}) {
      for (const auto& p : Pods(n)) {
        const Json cs = p["status"].value("containerStatuses", Json::array());
        ASSERT_FALSE(cs.empty()) << p.dump(2);
        const Json term = cs[0]["state"].value("terminated", Json::object());
        runs[p["spec"].value("nodeName", "")].emplace_back(p["status"].value("startTime", ""),
                                                           term.value("finishedAt", ""));
      }
    }
    for (const auto& node : {"node-1", "node-2"}) {
      ASSERT_EQ(runs[node].size(), 2u) << node;
      const auto& x = runs[node][0];
      const auto& y = runs[node][1];
      EXPECT_FALSE(x.first < y.second && y.first < x.second)
          << "round " << round << ": " << node << " ran both: [" << x.first << ", " << x.second
          << "] and [" << y.first << ", " << y.second << "]";
    }
    // Released: no claim is left once both runs are complete.
    EXPECT_TRUE(Eventually([&] {
      return sim_->List("coordination.k8s.io", "leases", kNs).size() <= 1;  // the leader's
    }));
  }
  EXPECT_TRUE(saw_waiting) << "the loser never showed Waiting naming the node's holder";
  // Each claim was created or taken over through the API server, which let only one in.
  int created = 0;
  int refused = 0;
  for (const auto& r : sim_->Requests()) {
    if (r.resource == "leases" && r.verb == "create") {
      (r.code == 201 ? created : refused)++;
    }
  }
  std::cerr << "leases created " << created << ", refused (409) " << refused << "\n";
}

// The results store: every node's result recorded in SQLite; with the store unreachable the
// verdicts are the same, the results wait in the spool and the condition Recorded says False;
// once it is back they are written and Recorded flips to True. A node made 8% slower than its
// history and its peers, still above its bound, passes and is listed in status.regressions
// (and fails only where policy.failOnRegression asks).
TEST_F(E2E, StoreRecordsResultsCatchesUpAndFlagsRegressions) {
  namespace fs = std::filesystem;
  const std::string blocked = sim_->workDir() + "/blocked";
  const std::string url = "sqlite://" + blocked + "/results.db";
  const std::string spool = sim_->workDir() + "/spool";
  // A file where the store's folder must go: the store cannot be opened until it is removed.
  { std::ofstream(blocked) << "not a folder\n"; }
  op_.Kill(SIGTERM);
  op_.Start(*sim_, {"--store=" + url, "--cluster-name=e2e", "--store-spool-dir=" + spool,
                    "--store-retry-seconds=1"});
  auto spooled = [&] {
    int n = 0;
    std::error_code ec;
    for (fs::directory_iterator it(spool, ec), end; !ec && it != end; it.increment(ec)) {
      n += it->path().extension() == ".json";
    }
    return n;
  };

  Apply(SyntheticSpec("hist", ""));
  ASSERT_TRUE(WaitComplete("hist"));
  Json v = Validation("hist");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "True") << v.dump(2);
  EXPECT_EQ(Condition(v, "Recorded").value("status", ""), "False") << v.dump(2);
  EXPECT_EQ(Condition(v, "Recorded").value("reason", ""), "StoreUnavailable");
  EXPECT_NE(Condition(v, "Recorded").value("message", "").find(blocked), std::string::npos)
      << v.dump(2);
  EXPECT_EQ(spooled(), 4);

  // The store comes back: the spool is written and the condition flips.
  fs::remove(blocked);
  ASSERT_TRUE(Eventually(
      [&] { return Condition(Validation("hist"), "Recorded").value("status", "") == "True"; }, 30))
      << Validation("hist").dump(2);
  EXPECT_EQ(spooled(), 0);
  auto events = Kubectl(*sim_, {"get", "events", "-n", "default", "-o", "json"});
  EXPECT_NE(events.out.find("StoreUnavailable"), std::string::npos);
  EXPECT_NE(events.out.find("StoreRecovered"), std::string::npos);
  {
    auto store = store::Open(url);
    ASSERT_TRUE(store.ok()) << store.status().message();
    store::ResultQuery q;
    q.validation = "hist";
    auto stored = (*store)->Results(q);
    ASSERT_TRUE(stored.ok()) << stored.status().message();
    std::set<std::string> nodes;
    for (const auto& r : *stored) {
      EXPECT_EQ(r.key.cluster, "e2e");
      EXPECT_EQ(r.verdict, "PASS");
      nodes.insert(r.key.node);
    }
    EXPECT_EQ(nodes, (std::set<std::string>{"node-0", "node-1", "node-2", "node-3"}));
  }

  // Applies `yaml` (a new generation of "hist") and waits for its new run to complete.
  auto run_again = [&](const std::string& yaml) {
    const std::string before = Validation("hist")["status"].value("run", "");
    Apply(yaml);
    return Eventually(
        [&] {
          const Json st = Validation("hist")["status"];
          return st.value("run", "") != before && !st.value("completionTime", "").empty();
        },
        90);
  };
  // A second run with node-2 8% slower, still above its bound of 90.
  ASSERT_TRUE(run_again(SyntheticSpec("hist", "node-2=92")));
  v = Validation("hist");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "True") << v.dump(2);
  EXPECT_EQ(v["status"].value("passedNodes", ""), "4/4");
  EXPECT_EQ(Condition(v, "Recorded").value("status", ""), "True") << v.dump(2);
  EXPECT_EQ(Condition(v, "Regressed").value("status", ""), "True") << v.dump(2);
  std::set<std::string> against;
  for (const auto& r : v["status"].value("regressions", Json::array())) {
    EXPECT_EQ(r.value("node", ""), "node-2") << r.dump();
    EXPECT_NEAR(r.value("ratio", 0.0), 0.92, 0.02) << r.dump();
    EXPECT_LT(r.value("high", 1.0), 0.97) << r.dump();
    EXPECT_LE(r.value("low", 1.0), r.value("ratio", 0.0)) << r.dump();
    against.insert(r.value("against", ""));
  }
  EXPECT_EQ(against, (std::set<std::string>{"history", "peers"})) << v.dump(2);
  events = Kubectl(*sim_, {"get", "events", "-n", "default", "-o", "json"});
  EXPECT_NE(events.out.find("node-2: synthetic"), std::string::npos);

  // Asked for by the policy, the regression fails the node.
  ASSERT_TRUE(run_again(
      SyntheticSpec("hist", "node-2=92", "    onFailure: none\n    failOnRegression: true\n")));
  v = Validation("hist");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "False") << v.dump(2);
  EXPECT_EQ(v["status"].value("passedNodes", ""), "3/4");
  EXPECT_NE(Condition(v, "Passed").value("message", "").find("node-2 FAIL: regression"),
            std::string::npos)
      << v.dump(2);
}

}  // namespace
}  // namespace perfgate::e2e
