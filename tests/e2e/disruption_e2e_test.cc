// Safe disruption end to end (docs/operator.md, "Safe disruption"): a node whose GPUs another
// pod holds waits by default, is cordoned and waited for with `cordon`, drained through the
// Eviction API with `drain` (a PodDisruptionBudget that forbids it keeps the node waiting and
// nothing is deleted), never more than maxUnavailable nodes are under test at once, and under
// `yield` a worker gives its node to a customer's pod and the node is tested once idle.
#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

using kubesim::testing::ShellQuote;

class Disruption : public E2E {
 protected:
  void SetUp() override {
    E2E::SetUp();
    auto r = Kubectl(*sim_, {"create", "namespace", "ml"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  // The validation's status message once it says `text` (or "" after `seconds`).
  bool StatusSays(const std::string& name, const std::string& text, double seconds = 30) {
    return Eventually(
        [&] {
          auto v = sim_->Get("perfgate.io", "perfvalidations", "", name);
          return v.ok() && (*v).value("status", Json::object()).value("message", "").find(text) !=
                               std::string::npos;
        },
        seconds);
  }
  // The workers' PriorityClass under policy yield, as the chart ships it.
  void ApplyYieldPriorityClass() {
    Apply(R"(apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: perfgate-yield}
value: -1000
preemptionPolicy: Never
)");
  }
  static bool Cordoned(const Json& node) {
    return node.value("spec", Json::object()).value("unschedulable", false);
  }
  static std::string UnderTest(const Json& node) {
    return node["metadata"].value("labels", Json::object()).value("perfgate.io/under-test", "");
  }
  bool WorkerOn(const std::string& validation, const std::string& node) {
    for (const auto& p : Pods(validation)) {
      if (p["spec"].value("nodeName", "") == node) return true;
    }
    return false;
  }
  void ExpectAllPassedAndGivenBack(const std::string& name) {
    Json v = Validation(name);
    EXPECT_EQ(v["status"].value("passedNodes", ""), "4/4") << v.dump(2);
    for (int i = 0; i < 4; ++i) {
      const Json n = Node("node-" + std::to_string(i));
      EXPECT_EQ(UnderTest(n), "") << n.dump();
      EXPECT_FALSE(Cordoned(n)) << n.dump();
    }
  }
};

TEST_F(Disruption, DefaultWaitsWhileAnotherPodHoldsTheGpus) {
  const std::string done = StartGpuPod("train", "node-1", 8);
  Apply(SyntheticSpec("wait", ""));
  ASSERT_TRUE(StatusSays("wait", "node-1 (its GPUs are held by pod ml/train)"));
  ASSERT_TRUE(StatusSays("wait", "3 of 4 nodes done"));
  Json v = Validation("wait");
  EXPECT_EQ(Condition(v, "Ready").value("reason", ""), "Waiting") << v.dump(2);
  // Waiting, not fighting: no worker on node-1, no cordon, the training pod untouched.
  EXPECT_FALSE(WorkerOn("wait", "node-1"));
  EXPECT_FALSE(Cordoned(Node("node-1")));
  EXPECT_EQ(Phase("train"), "Running");

  std::ofstream(done) << "";
  ASSERT_TRUE(WaitComplete("wait", 60));
  ExpectAllPassedAndGivenBack("wait");
  EXPECT_EQ(Phase("train"), "Succeeded");
}

TEST_F(Disruption, CordonCordonsWaitsForTheGpuPodThenTestsAndUncordons) {
  const std::string done = StartGpuPod("train", "node-1", 8);
  Apply(
      SyntheticSpec("cordon", "", "    onFailure: taint\n", "  disruption:\n    policy: cordon\n"));
  ASSERT_TRUE(StatusSays("cordon", "node-1 (cordoned; waiting for pod ml/train to finish)"));
  Json n = Node("node-1");
  EXPECT_TRUE(Cordoned(n)) << n.dump();
  EXPECT_EQ(UnderTest(n), "cordon");
  EXPECT_EQ(Phase("train"), "Running");  // cordon never evicts
  EXPECT_FALSE(WorkerOn("cordon", "node-1"));

  // The job finishes: node-1 is tested on its cordon, then given back.
  std::ofstream(done) << "";
  ASSERT_TRUE(WaitComplete("cordon", 60));
  ExpectAllPassedAndGivenBack("cordon");
  EXPECT_FALSE(Node("node-1")["metadata"]["annotations"].contains("perfgate.io/cordoned-for-test"));
}

TEST_F(Disruption, DrainEvictsButABudgetThatForbidsItKeepsTheNodeWaiting) {
  StartGpuPod("train-a", "node-2", 4);
  StartGpuPod("train-b", "node-2", 4);
  Apply(R"(apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: train, namespace: ml}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: train}}
)");
  const auto applied = std::chrono::steady_clock::now();
  Apply(SyntheticSpec("drain", "", "    onFailure: taint\n", "  disruption:\n    policy: drain\n"));
  ASSERT_TRUE(StatusSays("drain",
                         "Cannot evict pod as it would violate the pod's disruption "
                         "budget. The disruption budget train needs 2 healthy pods"));
  // The budget is named in an event too.
  ASSERT_TRUE(Eventually([&] {
    for (const auto& e : sim_->List("", "events", "default")) {
      if (e.value("reason", "") == "EvictionRefused" &&
          e.value("message", "").find("The disruption budget train needs 2 healthy pods") !=
              std::string::npos) {
        return true;
      }
    }
    return false;
  }));
  // Asked again every 2 s while refused, however often the operator looks in between.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  int asked = 0;
  for (const auto& req : sim_->Requests()) {
    asked += req.resource == "pods" && req.subresource == "eviction" && req.code == 429;
  }
  const double refusing =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - applied).count();
  // Two pods, each asked at most once per 2 s (and once at the start).
  EXPECT_LE(asked, 2 * (static_cast<int>(refusing / 2) + 1)) << refusing << " s";
  Json v = Validation("drain");
  EXPECT_EQ(Condition(v, "Ready").value("reason", ""), "Waiting") << v.dump(2);
  EXPECT_TRUE(Cordoned(Node("node-2")));
  // Held by the budget: both pods run on, nobody deleted them.
  EXPECT_EQ(Phase("train-a"), "Running");
  EXPECT_EQ(Phase("train-b"), "Running");
  for (const auto& r : sim_->Requests()) {
    if (r.resource == "pods" && r.nameSpace == "ml") {
      EXPECT_NE(r.verb, "delete") << "a pod under a budget was deleted: " << r.name;
    }
  }
  // The budget allows it: both are evicted and node-2 is tested, then uncordoned.
  auto r = Kubectl(*sim_, {"patch", "pdb", "-n", "ml", "train", "--type=merge", "-p",
                           R"({"spec":{"minAvailable":0}})"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(WaitComplete("drain", 60));
  ExpectAllPassedAndGivenBack("drain");
  EXPECT_EQ(Phase("train-a"), "<gone>");
  EXPECT_EQ(Phase("train-b"), "<gone>");
  int evictions = 0;
  int refused = 0;
  for (const auto& req : sim_->Requests()) {
    if (req.resource == "pods" && req.subresource == "eviction") {
      evictions += req.code == 201;
      refused += req.code == 429;
    }
  }
  EXPECT_EQ(evictions, 2);
  EXPECT_GE(refused, 1);
}

TEST_F(Disruption, NeverMoreThanMaxUnavailableNodesUnderTest) {
  Apply(SyntheticSpec("rolling", "", "    onFailure: taint\n",
                      "  disruption:\n    maxUnavailable: 1\n", "0.05"));
  size_t most_labelled = 0;
  bool waited = false;
  ASSERT_TRUE(Eventually(
      [&] {
        size_t labelled = 0;
        for (const auto& n : sim_->List("", "nodes", "")) labelled += !UnderTest(n).empty();
        most_labelled = std::max(most_labelled, labelled);
        auto v = sim_->Get("perfgate.io", "perfvalidations", "", "rolling");
        if (!v.ok()) return false;
        const Json st = v->value("status", Json::object());
        waited |= st.value("message", "").find("waiting for its turn") != std::string::npos;
        return !st.value("completionTime", "").empty();
      },
      120));
  EXPECT_EQ(most_labelled, 1u);
  EXPECT_TRUE(waited);
  ExpectAllPassedAndGivenBack("rolling");
}

// yield: the worker runs at the chart's low priority on an idle node; a customer's pod that
// needs the node's GPUs makes the scheduler preempt it (gone well within its grace period, the
// customer's pod then runs); the node is neither ERROR nor FAIL but waits, counted as yielded,
// and once the customer's pod ends it is validated (PASS).
TEST_F(Disruption, YieldGivesTheNodeToACustomerPodThenValidatesItWhenIdle) {
  ApplyYieldPriorityClass();
  // node-1 only, with samples slow enough that the worker is still measuring when the
  // customer comes: 6 samples of 1 s, of which the customer's arrival and the preemption leave
  // 4.5 s (a worker starts in milliseconds; 3 s of samples left too little on a busy machine).
  std::string spec = SyntheticSpec("yield", "", "    onFailure: taint\n",
                                   "  disruption:\n    policy: yield\n", "1");
  const std::string all = "  nodeSelector:\n    nvidia.com/gpu.present: \"true\"\n";
  ASSERT_NE(spec.find(all), std::string::npos);
  spec.replace(spec.find(all), all.size(), "  nodes: [node-1]\n");
  Apply(spec);
  std::string worker;
  ASSERT_TRUE(Eventually([&] {
    for (const auto& p : Pods("yield")) {
      if (p["spec"].value("nodeName", "") == "node-1" &&
          p.value("status", Json::object()).value("phase", "") == "Running") {
        worker = p["metadata"]["name"];
      }
    }
    return !worker.empty();
  }));
  Json pod = *sim_->Get("", "pods", kNs, worker);
  EXPECT_EQ(pod["spec"].value("priorityClassName", ""), "perfgate-yield");
  EXPECT_EQ(pod["spec"].value("priority", 0), -1000);
  EXPECT_EQ(pod["metadata"].value("finalizers", Json::array()),
            Json::array({"perfgate.io/yield-record"}));
  const int grace = pod["spec"].value("terminationGracePeriodSeconds", 30);
  // Measuring by now, for at least 1 s of its 6: Kubernetes times are whole seconds, so the GPU
  // time it loses reads as at least 1 s on its 8 GPUs.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));

  const auto arrived = std::chrono::steady_clock::now();
  const std::string done = StartGpuPod("customer", "node-1", 8);
  ASSERT_EQ(Phase("customer"), "Running");
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - arrived).count();
  EXPECT_LT(waited, grace) << "the customer's pod waited past the worker's grace period";
  // The worker has ended; its pod stays (its yield finalizer) only until the yield is recorded.
  if (auto ended = sim_->Get("", "pods", kNs, worker); ended.ok()) {
    const std::string phase = (*ended)["status"].value("phase", "");
    EXPECT_TRUE(phase == "Failed" || phase == "Succeeded") << "the preempted worker still runs";
  }
  EXPECT_TRUE(Eventually([&] { return !sim_->Get("", "pods", kNs, worker).ok(); }, 10))
      << "the preempted worker's pod was never let go";
  bool preempted = false;
  for (const auto& e : sim_->List("", "events", kNs)) {
    preempted |=
        e["involvedObject"].value("name", "") == worker && e.value("reason", "") == "Preempted";
  }
  EXPECT_TRUE(preempted);

  // Neither ERROR nor FAIL: no result, the node waits for the customer, counted as yielded.
  ASSERT_TRUE(StatusSays("yield", "node-1 (its GPUs are held by pod ml/customer)"));
  Json v = Validation("yield");
  EXPECT_TRUE(Results("yield").empty()) << Results("yield")[0].dump(2);
  EXPECT_EQ(v["status"]["yields"]["node-1"].value("count", 0), 1) << v.dump(2);
  EXPECT_EQ(v["status"]["yields"]["node-1"].value("lastReason", ""), "PreemptionByScheduler");
  // What it cost: the GPU time the worker had measured (at least 1 s on 8 GPUs), and the
  // customer's wait behind it, within the grace period.
  EXPECT_GE(v["status"]["yields"]["node-1"].value("lostGpuSeconds", 0.0), 8.0) << v.dump(2);
  const double wait = v["status"]["yields"]["node-1"].value("longestWaitSeconds", -1.0);
  EXPECT_GE(wait, 0.0) << v.dump(2);
  EXPECT_LT(wait, grace) << v.dump(2);
  EXPECT_TRUE(Eventually([&] {
    const std::string m = Metrics(op_);
    return m.find("perfgate_validation_yields{validation=\"yield\"} 1") != std::string::npos &&
           m.find("perfgate_validation_yield_lost_gpu_seconds{validation=\"yield\"}") !=
               std::string::npos;
  })) << Metrics(op_);
  EXPECT_EQ(v["status"].value("errors", 0), 0);
  EXPECT_EQ(v["status"].value("failed", 0), 0);
  EXPECT_EQ(Condition(v, "Ready").value("reason", ""), "Waiting") << v.dump(2);
  EXPECT_EQ(Phase("customer"), "Running");

  // The customer is done: node-1 is validated.
  std::ofstream(done) << "";
  ASSERT_TRUE(WaitComplete("yield", 60));
  v = Validation("yield");
  EXPECT_EQ(v["status"].value("verdict", ""), "Passed") << v.dump(2);
  EXPECT_EQ(v["status"].value("passedNodes", ""), "1/1");
  EXPECT_EQ(v["status"]["yields"]["node-1"].value("count", 0), 1);
  const std::vector<Json> results = Results("yield");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0]["spec"]["report"].value("verdict", ""), "PASS");
  EXPECT_EQ(Phase("customer"), "Succeeded");
  EXPECT_EQ(UnderTest(Node("node-1")), "");
  // What the run used beside what it lost: the passing worker's 6 s and more on 8 GPUs.
  EXPECT_GE(v["status"].value("gpuSeconds", 0.0), 48.0) << v.dump(2);
  EXPECT_TRUE(Eventually([&] {
    return Metrics(op_).find("perfgate_validation_gpu_seconds{validation=\"yield\"}") !=
           std::string::npos;
  })) << Metrics(op_);
  // Its result is in: the worker that passed is let go of too.
  EXPECT_TRUE(Eventually([&] {
    auto p = sim_->Get("", "pods", kNs, worker);
    return !p.ok() ||
           p->value("metadata", Json::object()).value("finalizers", Json::array()).empty();
  })) << "the passing worker still holds the yield finalizer";
}

// yield with a gang: a pair measures node-0 and node-1 together when a customer's pod needs
// node-0's GPUs. The scheduler preempts rank 0 and the operator takes rank 1 down with it: the
// attempt is void and nothing of it is kept, both nodes count a yield, neither is ERROR or FAIL.
// Once the customer is done the pair runs again, whole, and passes.
TEST_F(Disruption, AGangYieldsAsAWholeThenPassesWhenIdle) {
  ApplyYieldPriorityClass();
  // 6 samples of 1 s of the synthetic test first, then the pair's NCCL stand-in.
  Apply(SpecHead("gang-yield") +
        "  nodes: [node-0, node-1]\n"
        "  gang:\n"
        "    shape: pairs\n"
        "  disruption:\n"
        "    policy: yield\n"
        "  sampling:\n"
        "    warmup: 1\n"
        "    minRepeats: 2\n"
        "    maxRepeats: 6\n"
        "  policy:\n"
        "    nodeTimeoutSeconds: 60\n"
        "  tests:\n"
        "    - type: synthetic\n"
        "      parameters: {mean: 100, cv: 0.01, sampleSeconds: 1}\n"
        "      thresholds:\n"
        "        - {metric: bandwidthGBps, statistic: median, op: \">=\", value: 90}\n"
        "    - type: nccl-cpu-loopback\n"
        "      parameters: {collective: all_reduce, maxBytes: 65536, stepFactor: 16, "
        "initTimeoutSeconds: 30}\n");
  std::map<std::string, std::string> first;  // node -> its first worker's uid
  ASSERT_TRUE(Eventually([&] {
    first.clear();
    for (const auto& p : Pods("gang-yield")) {
      if (p.value("status", Json::object()).value("phase", "") == "Running") {
        first[p["spec"].value("nodeName", "")] = p["metadata"].value("uid", "");
      }
    }
    return first.size() == 2;
  })) << Validation("gang-yield").dump(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));

  const std::string done = StartGpuPod("customer", "node-0", 8);
  ASSERT_EQ(Phase("customer"), "Running");
  // Neither rank is left, neither node is ERROR or FAIL: both wait, counted as yielded.
  EXPECT_TRUE(Eventually(
      [&] {
        for (const auto& p : Pods("gang-yield")) {
          if (first[p["spec"].value("nodeName", "")] == p["metadata"].value("uid", "")) {
            return false;
          }
        }
        return true;
      },
      20))
      << "a rank of the yielded attempt is still there";
  ASSERT_TRUE(StatusSays("gang-yield", "node-0's GPUs are held by pod ml/customer"))
      << Validation("gang-yield").dump(2);
  Json v = Validation("gang-yield");
  EXPECT_TRUE(Results("gang-yield").empty()) << Results("gang-yield")[0].dump(2);
  EXPECT_EQ(v["status"]["yields"]["node-0"].value("count", 0), 1) << v.dump(2);
  EXPECT_EQ(v["status"]["yields"]["node-0"].value("lastReason", ""), "PreemptionByScheduler");
  EXPECT_EQ(v["status"]["yields"]["node-1"].value("count", 0), 1) << v.dump(2);
  EXPECT_EQ(v["status"]["yields"]["node-1"].value("lastReason", ""), "GangYielded");
  EXPECT_EQ(v["status"].value("errors", 0), 0);
  EXPECT_EQ(v["status"].value("failed", 0), 0);
  EXPECT_TRUE(Pods("gang-yield").empty()) << "the pair started again on a busy node";

  // The customer is done: the pair runs again, whole, and passes.
  std::ofstream(done) << "";
  ASSERT_TRUE(WaitComplete("gang-yield", 90)) << Validation("gang-yield").dump(2);
  v = Validation("gang-yield");
  EXPECT_EQ(v["status"].value("verdict", ""), "Passed") << v.dump(2);
  EXPECT_EQ(v["status"].value("passedNodes", ""), "2/2");
  EXPECT_EQ(v["status"]["yields"]["node-0"].value("count", 0), 1);
  EXPECT_EQ(v["status"]["yields"]["node-1"].value("count", 0), 1);
  const std::vector<Json> results = Results("gang-yield");
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r["spec"]["report"].value("verdict", ""), "PASS") << r.dump(2);
    EXPECT_NE(r["spec"].value("writtenBy", ""), "operator") << r.dump(2);
  }
  EXPECT_EQ(Phase("customer"), "Succeeded");
}

}  // namespace
}  // namespace perfgate::e2e
