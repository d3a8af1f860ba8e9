// Safe disruption in memory (operator/policy/disruption.h through Decide): the default waits while
// another pod holds a node's GPUs, cordon cordons and waits, drain evicts and a refused
// eviction keeps the node waiting, maxUnavailable bounds the nodes under test, and every node
// is given back (label gone, perfgate's cordon undone) whatever happens.
#include "operator/policy/disruption.h"
#include "tests/operator/time_at.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/labels.h"
#include "common/time.h"
#include "core/names.h"
#include "operator/policy/gangs.h"
#include "operator/reconcile/decide.h"
#include "tests/operator/status_schema.h"

namespace perfgate::op {
namespace {

using std::chrono::seconds;

const std::string kName = "acceptance";

ReconcilerConfig Config() {
  ReconcilerConfig c;
  c.scheduling_timeout = seconds(3);
  c.worker_image = "ghcr.io/perfgate/perfgate-worker:test";
  return c;
}

Json NodeObj(const std::string& name) {
  return {{"metadata",
           {{"name", name},
            {"labels",
             {{"nvidia.com/gpu.present", "true"}, {"nvidia.com/gpu.product", "NVIDIA-H200"}}}}},
          {"spec", Json::object()},
          {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}}}}};
}

// What one reconcile of validation "acceptance" observes.
struct World {
  Json spec = Json::parse(R"({
    "nodeSelector": {"nvidia.com/gpu.present": "true"},
    "sampling": {"warmup": 1, "minRepeats": 5, "maxRepeats": 20},
    "tests": [{"type": "hbm-stream"}]})");
  std::map<std::string, Json> nodes;
  std::vector<Json> pods;
  std::vector<Json> results;
  std::map<std::string, std::vector<GpuPod>> gpuPods;
  std::map<std::string, std::string> evictionRefused;
  bool deleting = false;
  Json validation_status;  // what the last reconcile wrote (null: none yet)
  std::chrono::system_clock::time_point now = kT0;

  explicit World(int n = 4) {
    for (int i = 0; i < n; ++i)
      nodes["node-" + std::to_string(i)] = NodeObj("node-" + std::to_string(i));
  }

  Snapshot Observe() const {
    Snapshot s;
    s.exists = true;
    s.validation = {
        {"apiVersion", "perfgate.io/v1alpha1"},
        {"kind", "PerfValidation"},
        {"metadata",
         {{"name", kName}, {"uid", "uid-1"}, {"generation", 1}, {"finalizers", {kFinalizer}}}},
        {"spec", spec}};
    if (deleting) s.validation["metadata"]["deletionTimestamp"] = FormatRfc3339(kT0);
    if (validation_status.is_object()) s.validation["status"] = validation_status;
    s.name = kName;
    s.uid = "uid-1";
    s.run = RunId(1, "");
    s.deleting = deleting;
    s.has_finalizer = true;
    auto parsed = ParseValidationObject(s.validation);
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
    if (parsed.ok()) s.spec = *parsed;
    s.nodes = nodes;
    for (const auto& p : pods) s.pods.push_back(ViewOfPod(p));
    s.results = results;
    s.gpu_pods = gpuPods;
    s.eviction_refused = evictionRefused;
    return s;
  }
  Decision Decide() const {
    Decision d = op::Decide(Observe(), Config(), now);
    if (d.status) {
      EXPECT_TRUE(StatusFitsTheSchema(*d.status));
    }
    return d;
  }

  // Applies the node edits and pod creates of `d`, as Act would.
  void Apply(const Decision& d) {
    for (const auto& n : d.disrupt_nodes) {
      MarkUnderTest(&nodes[n.node], kName, n.cordon, FormatRfc3339(now));
    }
    for (const auto& r : d.restore_nodes) GiveBack(&nodes[r.node], kName, r.keep_cordon);
    for (const auto& p : d.pods) {
      Json pod = p.pod;
      pod["status"] = {{"phase", "Running"}};
      pod["spec"]["nodeName"] = ViewOfPod(pod).node;
      pods.push_back(pod);
    }
  }

  void Result(const std::string& node, const std::string& verdict) {
    const std::string run = RunId(1, "");
    results.push_back(
        {{"metadata",
          {{"name", ObjectName({kName, run, node})},
           {"creationTimestamp", FormatRfc3339(now)},
           {"labels",
            {{kValidationLabel, LabelValue(kName)}, {kNodeLabel, node}, {kRunLabel, run}}}}},
         {"spec",
          {{"validation", kName},
           {"nodeName", node},
           {"run", run},
           {"report",
            {{"verdict", verdict},
             {"tests", {{{"name", "hbm-stream"}, {"verdict", verdict}}}}}}}}});
    for (auto& p : pods) {
      if (ViewOfPod(p).node == node) p["status"]["phase"] = "Succeeded";
    }
  }
};

std::set<std::string> PodNodes(const Decision& d) {
  std::set<std::string> out;
  for (const auto& p : d.pods) out.insert(ViewOfPod(p.pod).node);
  return out;
}

std::string Reason(const Decision& d, const std::string& type) {
  for (const auto& c : d.status->value("conditions", Json::array())) {
    if (c.value("type", "") == type) return c.value("reason", "");
  }
  return "";
}

const NodeDisruption* DisruptionOf(const Decision& d, const std::string& node) {
  for (const auto& n : d.disrupt_nodes) {
    if (n.node == node) return &n;
  }
  return nullptr;
}

bool Unschedulable(const Json& node) { return node["spec"].value("unschedulable", false); }

TEST(Disruption, MaxUnavailableIsACountOrAPercentageRoundedDownAndAtLeastOne) {
  EXPECT_EQ(*MaxUnavailable("", 7), 7);
  EXPECT_EQ(*MaxUnavailable("2", 7), 2);
  EXPECT_EQ(*MaxUnavailable("25%", 10), 2);  // 2.5 rounded down
  EXPECT_EQ(*MaxUnavailable("10%", 4), 1);   // 0.4: at least one node, or nothing runs
  EXPECT_EQ(*MaxUnavailable("100%", 7), 7);
  EXPECT_EQ(*MaxUnavailable("50%", 5), 2);
  for (const char* bad : {"0", "-1", "abc", "150%", "%", "2.5"}) {
    auto r = MaxUnavailable(bad, 4);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("spec.disruption.maxUnavailable"), std::string::npos);
  }
  v1alpha1::Disruption d;
  d.set_policy("evict");
  auto parsed = ParseDisruption(d, 4);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(),
            "spec.disruption.policy: \"evict\" is not one of wait, cordon, drain, yield");
}

TEST(Disruption, InvalidMaxUnavailableIsInvalidSpecBeforeAnyPod) {
  World w;
  w.spec["disruption"] = {{"maxUnavailable", "0%"}};
  const Decision d = w.Decide();
  EXPECT_TRUE(d.pods.empty());
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  EXPECT_NE(d.status->value("message", "").find("spec.disruption.maxUnavailable"),
            std::string::npos);
}

TEST(Disruption, DefaultWaitsWhileAnotherPodHoldsTheNodesGpus) {
  World w;
  w.gpuPods["node-1"] = {{"ml", "train-0", 8, false}};
  const Decision d = w.Decide();
  EXPECT_EQ(PodNodes(d), (std::set<std::string>{"node-0", "node-2", "node-3"}));
  EXPECT_TRUE(d.evictions.empty());
  EXPECT_EQ(DisruptionOf(d, "node-1"), nullptr);  // neither labelled nor cordoned
  EXPECT_EQ(Reason(d, "Ready"), "Waiting");
  EXPECT_NE(d.status->value("message", "").find("node-1 (its GPUs are held by pod ml/train-0)"),
            std::string::npos)
      << d.status->dump();
  // The nodes that start are labelled under test, not cordoned.
  ASSERT_NE(DisruptionOf(d, "node-0"), nullptr);
  EXPECT_FALSE(DisruptionOf(d, "node-0")->cordon);

  // The pod finishes: node-1 gets its worker.
  w.Apply(d);
  w.gpuPods.clear();
  EXPECT_EQ(PodNodes(w.Decide()), (std::set<std::string>{"node-1"}));
}

TEST(Disruption, CordonCordonsWaitsForTheGpuPodsThenTests) {
  World w;
  w.spec["disruption"] = {{"policy", "cordon"}};
  w.gpuPods["node-1"] = {{"ml", "train-0", 8, false}};
  Decision d = w.Decide();
  EXPECT_FALSE(PodNodes(d).contains("node-1"));
  ASSERT_NE(DisruptionOf(d, "node-1"), nullptr);
  EXPECT_TRUE(DisruptionOf(d, "node-1")->cordon);
  EXPECT_TRUE(d.evictions.empty());  // cordon never evicts
  EXPECT_NE(d.status->value("message", "").find("node-1 (cordoned; waiting for pod ml/train-0"),
            std::string::npos);
  w.Apply(d);
  EXPECT_TRUE(Unschedulable(w.nodes["node-1"]));
  EXPECT_EQ(Label(w.nodes["node-1"], kUnderTestLabel), kName);

  // Still running: still waiting, still cordoned, not given back.
  d = w.Decide();
  EXPECT_TRUE(d.restore_nodes.empty());
  EXPECT_FALSE(PodNodes(d).contains("node-1"));

  // It finishes: the worker starts on the cordoned node (its pod tolerates the cordon).
  w.gpuPods.clear();
  d = w.Decide();
  EXPECT_EQ(PodNodes(d), (std::set<std::string>{"node-1"}));
  EXPECT_TRUE(d.restore_nodes.empty());
  w.Apply(d);
  EXPECT_TRUE(Unschedulable(w.nodes["node-1"]));

  // Its result is in (PASS): the label goes and perfgate's cordon is undone.
  w.Result("node-1", "PASS");
  d = w.Decide();
  ASSERT_EQ(d.restore_nodes.size(), 1u);  // the others' workers still run
  EXPECT_EQ(d.restore_nodes[0].node, "node-1");
  EXPECT_FALSE(d.restore_nodes[0].keep_cordon);
  w.Apply(d);
  EXPECT_FALSE(Unschedulable(w.nodes["node-1"]));
  EXPECT_EQ(Label(w.nodes["node-1"], kUnderTestLabel), "");
  EXPECT_FALSE(w.nodes["node-1"]["metadata"]["annotations"].contains(kCordonedForTestAnnotation));
}

TEST(Disruption, DrainEvictsAndARefusedEvictionKeepsTheNodeWaitingWithoutDeleting) {
  World w;
  w.spec["disruption"] = {{"policy", "drain"}};
  w.gpuPods["node-2"] = {{"ml", "train-0", 4, false}, {"ml", "train-1", 4, true}};
  Decision d = w.Decide();
  ASSERT_EQ(d.evictions.size(), 1u);  // the terminating one is going already
  EXPECT_EQ(d.evictions[0].name_space, "ml");
  EXPECT_EQ(d.evictions[0].name, "train-0");
  EXPECT_TRUE(DisruptionOf(d, "node-2")->cordon);
  EXPECT_TRUE(d.delete_pods.empty());
  EXPECT_EQ(d.requeue_after, seconds(2));
  w.Apply(d);

  // The budget refuses: the node waits, saying why, and the eviction is asked again.
  w.evictionRefused["ml/train-0"] =
      "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget "
      "train needs 2 healthy pods and has 2 currently";
  d = w.Decide();
  EXPECT_FALSE(PodNodes(d).contains("node-2"));
  ASSERT_EQ(d.evictions.size(), 1u);
  EXPECT_TRUE(d.delete_pods.empty());
  EXPECT_EQ(Reason(d, "Ready"), "Waiting");
  EXPECT_NE(d.status->value("message", "")
                .find("node-2 (draining: ml/train-0: Cannot evict pod as it would violate"),
            std::string::npos)
      << d.status->value("message", "");
  // And an event names the budget (once per pod and run: the key says so).
  const auto refused = std::find_if(d.events.begin(), d.events.end(), [](const EventAction& e) {
    return e.reason == "EvictionRefused";
  });
  ASSERT_NE(refused, d.events.end());
  EXPECT_EQ(refused->type, "Warning");
  EXPECT_NE(refused->message.find("node-2: eviction of pod ml/train-0 refused: Cannot evict pod"),
            std::string::npos)
      << refused->message;
  EXPECT_NE(refused->message.find("The disruption budget train needs 2 healthy pods"),
            std::string::npos);
  EXPECT_FALSE(refused->once_key.empty());
}

TEST(Disruption, GpuPodsOutlivingTheTimeoutGiveErrorAndTheNodeBack) {
  World w;
  w.spec["disruption"] = {{"policy", "cordon"}, {"timeoutSeconds", 60}};
  w.gpuPods["node-1"] = {{"ml", "train-0", 8, false}};
  w.Apply(w.Decide());
  w.now = kT0 + seconds(59);
  EXPECT_TRUE(w.Decide().results.empty());
  w.now = kT0 + seconds(60);
  const Decision d = w.Decide();
  ASSERT_EQ(d.results.size(), 1u);
  const Json& r = d.results[0].result;
  EXPECT_EQ(r["spec"]["nodeName"], "node-1");
  EXPECT_EQ(r["spec"]["report"]["verdict"], "ERROR");
  EXPECT_NE(r["spec"]["report"].value("reason", "").find("spec.disruption.timeoutSeconds"),
            std::string::npos);
  ASSERT_EQ(d.restore_nodes.size(), 1u);
  EXPECT_EQ(d.restore_nodes[0].node, "node-1");
  EXPECT_FALSE(d.restore_nodes[0].keep_cordon);
}

TEST(Disruption, MaxUnavailableBoundsTheSelectedNodesUnderTestByAnyValidation) {
  World w;
  w.spec["disruption"] = {{"maxUnavailable", "50%"}};
  Decision d = w.Decide();
  EXPECT_EQ(PodNodes(d), (std::set<std::string>{"node-0", "node-1"}));
  EXPECT_EQ(Reason(d, "Ready"), "Waiting");
  EXPECT_NE(d.status->value("message", "")
                .find("node-2 (waiting for its turn: spec.disruption.maxUnavailable=2, 2 "
                      "selected nodes under test)"),
            std::string::npos)
      << d.status->value("message", "");
  w.Apply(d);
  EXPECT_TRUE(w.Decide().pods.empty());  // still two under test

  // node-0 is done and given back: exactly one more starts.
  w.Result("node-0", "PASS");
  d = w.Decide();
  EXPECT_EQ(PodNodes(d), (std::set<std::string>{"node-2"}));
  ASSERT_EQ(d.restore_nodes.size(), 1u);
  EXPECT_EQ(d.restore_nodes[0].node, "node-0");

  // Another validation's node under test counts too, and is not this one's to take.
  World other;
  other.spec["disruption"] = {{"maxUnavailable", 1}};
  other.nodes["node-3"]["metadata"]["labels"][kUnderTestLabel] = "other";
  d = other.Decide();
  EXPECT_TRUE(d.pods.empty());
  EXPECT_NE(d.status->value("message", "").find("node-0 (waiting for its turn"), std::string::npos);
}

TEST(Disruption, TaintAndCordonFailKeepsTheCordonAsTheFailCordon) {
  World w;
  w.spec["disruption"] = {{"policy", "cordon"}};
  w.spec["policy"] = {{"onFailure", "taintAndCordon"}};
  w.gpuPods["node-1"] = {{"ml", "train-0", 8, false}};
  w.Apply(w.Decide());
  w.gpuPods.clear();
  w.Apply(w.Decide());
  w.Result("node-1", "FAIL");
  const Decision d = w.Decide();
  auto it = std::find_if(d.restore_nodes.begin(), d.restore_nodes.end(),
                         [](const NodeRestore& r) { return r.node == "node-1"; });
  ASSERT_NE(it, d.restore_nodes.end());
  EXPECT_TRUE(it->keep_cordon);
  w.Apply(d);
  EXPECT_TRUE(Unschedulable(w.nodes["node-1"]));
  EXPECT_EQ(w.nodes["node-1"]["metadata"]["annotations"].value(kCordonedByAnnotation, ""), kName);
  EXPECT_EQ(Label(w.nodes["node-1"], kUnderTestLabel), "");
}

TEST(Disruption, APersonsCordonIsNeverUndone) {
  Json node = NodeObj("node-1");
  node["spec"]["unschedulable"] = true;  // cordoned by hand
  ASSERT_TRUE(MarkUnderTest(&node, kName, /*cordon=*/true, FormatRfc3339(kT0)));
  EXPECT_FALSE(node["metadata"]["annotations"].contains(kCordonedForTestAnnotation));
  ASSERT_TRUE(GiveBack(&node, kName, false));
  EXPECT_TRUE(Unschedulable(node));
  EXPECT_EQ(Label(node, kUnderTestLabel), "");
  // Another validation's label is left alone.
  node["metadata"]["labels"][kUnderTestLabel] = "other";
  EXPECT_FALSE(MarkUnderTest(&node, kName, true, FormatRfc3339(kT0)));
  EXPECT_FALSE(GiveBack(&node, kName, false));
}

TEST(Disruption, DeletingTheValidationGivesBackEveryNodeItHeld) {
  World w;
  w.spec["disruption"] = {{"policy", "drain"}};
  w.gpuPods["node-1"] = {{"ml", "train-0", 8, false}};
  w.Apply(w.Decide());
  EXPECT_TRUE(Unschedulable(w.nodes["node-1"]));
  w.deleting = true;
  const Decision d = w.Decide();
  EXPECT_EQ(d.restore_nodes.size(), 4u);
  EXPECT_TRUE(d.evictions.empty());
  w.Apply(d);
  for (const auto& [name, node] : w.nodes) {
    EXPECT_EQ(Label(node, kUnderTestLabel), "") << name;
    EXPECT_FALSE(Unschedulable(node)) << name;
  }
}

Json* PodOn(std::vector<Json>& pods, const std::string& node) {
  for (auto& p : pods) {
    if (ViewOfPod(p).node == node) return &p;
  }
  return nullptr;
}

Json Yields(const Decision& d, const std::string& node) {
  return d.status->value("yields", Json::object()).value(node, Json::object());
}

bool Announced(const Decision& d, const std::string& reason, const std::string& text) {
  return std::any_of(d.events.begin(), d.events.end(), [&](const EventAction& e) {
    return e.reason == reason && e.message.find(text) != std::string::npos;
  });
}

TEST(Yield, WorkersRunAtTheYieldPriorityOnlyOnIdleNodes) {
  World w;
  w.spec["disruption"] = {{"policy", "yield"}};
  w.gpuPods["node-1"] = {{"ml", "train-0", 8, false}};
  // Nominated after a preemption: holds node-2 although it is not bound yet.
  w.gpuPods["node-2"] = {{"ml", "train-1", 8, false, true}};
  const Decision d = w.Decide();
  EXPECT_EQ(PodNodes(d), (std::set<std::string>{"node-0", "node-3"}));
  for (const auto& p : d.pods) {
    EXPECT_EQ(p.pod["spec"].value("priorityClassName", ""), "perfgate-yield") << p.pod.dump();
  }
  EXPECT_TRUE(d.evictions.empty());
  EXPECT_EQ(DisruptionOf(d, "node-1"), nullptr);
  EXPECT_EQ(Reason(d, "Ready"), "Waiting");
  EXPECT_NE(d.status->value("message", "").find("node-1 (its GPUs are held by pod ml/train-0)"),
            std::string::npos)
      << d.status->dump();
  // Under any other policy the workers keep the default priority.
  World other;
  for (const auto& p : other.Decide().pods) {
    EXPECT_FALSE(p.pod["spec"].contains("priorityClassName")) << p.pod.dump();
  }
}

TEST(Yield, APreemptedWorkerIsNeitherErrorNorFailAndItsNodeIsTestedAgainWhenIdle) {
  World w(2);
  w.spec["disruption"] = {{"policy", "yield"}};
  w.Apply(w.Decide());
  ASSERT_EQ(w.pods.size(), 2u);
  Json* worker = PodOn(w.pods, "node-0");
  ASSERT_NE(worker, nullptr);
  (*worker)["metadata"]["uid"] = "pod-uid-1";
  // The scheduler preempts it for a customer's pod: DisruptionTarget, then a graceful delete.
  (*worker)["status"]["conditions"] = {{{"type", "DisruptionTarget"},
                                        {"status", "True"},
                                        {"reason", "PreemptionByScheduler"},
                                        {"message",
                                         "default-scheduler: preempting to accommodate "
                                         "a higher priority pod"}}};
  (*worker)["metadata"]["deletionTimestamp"] = FormatRfc3339(w.now);
  w.Result("node-1", "PASS");
  Decision d = w.Decide();
  EXPECT_TRUE(d.results.empty()) << "no ERROR result is written for a yielded worker";
  for (const auto& o : d.outcomes) {
    if (o.node == "node-0") {
      EXPECT_FALSE(o.verdict.has_value());
    }
  }
  EXPECT_TRUE(d.status->value("completionTime", "").empty());
  EXPECT_EQ(Yields(d, "node-0").value("count", 0), 1);
  EXPECT_EQ(Yields(d, "node-0").value("lastReason", ""), "PreemptionByScheduler");
  EXPECT_TRUE(Announced(d, "Yielded", "node-0: worker"));
  EXPECT_TRUE(d.delete_pods.empty());  // being deleted already
  EXPECT_EQ(Reason(d, "Ready"), "Waiting");
  EXPECT_NE(d.status->value("message", "").find("node-0 (yielded: PreemptionByScheduler"),
            std::string::npos)
      << d.status->value("message", "");
  EXPECT_TRUE(d.pods.empty());

  // Seen again (and then Failed, exit 143, as a kubelet leaves it): still one yield, no ERROR,
  // and the operator deletes what is left of it.
  w.validation_status = *d.status;
  (*worker)["status"]["phase"] = "Failed";
  (*worker)["metadata"].erase("deletionTimestamp");
  (*worker)["status"]["containerStatuses"] = {
      {{"state", {{"terminated", {{"exitCode", 143}, {"reason", "Error"}}}}}}};
  d = w.Decide();
  EXPECT_TRUE(d.results.empty());
  EXPECT_EQ(Yields(d, "node-0").value("count", 0), 1);
  EXPECT_EQ(d.delete_pods, std::vector<std::string>{ViewOfPod(*worker).name});

  // Gone; the customer's pod holds the GPUs: the node waits, nothing starts.
  w.validation_status = *d.status;
  std::erase_if(w.pods, [](const Json& p) { return ViewOfPod(p).node == "node-0"; });
  w.gpuPods["node-0"] = {{"ml", "customer", 8, false}};
  d = w.Decide();
  EXPECT_TRUE(d.pods.empty());
  EXPECT_NE(d.status->value("message", "").find("node-0 (its GPUs are held by pod ml/customer)"),
            std::string::npos);
  EXPECT_EQ(Yields(d, "node-0").value("count", 0), 1);

  // The customer is done: a new worker, and its PASS completes the run.
  w.validation_status = *d.status;
  w.gpuPods.clear();
  d = w.Decide();
  EXPECT_EQ(PodNodes(d), (std::set<std::string>{"node-0"}));
  w.Apply(d);
  w.validation_status = *d.status;
  w.Result("node-0", "PASS");
  d = w.Decide();
  EXPECT_EQ(d.status->value("verdict", ""), "Passed") << d.status->dump();
  EXPECT_EQ(Yields(d, "node-0").value("count", 0), 1);
}

std::vector<std::string> Released(const Decision& d) {
  std::vector<std::string> names;
  for (const auto& r : d.release_pods) names.push_back(r.name);
  return names;
}

// A yielding worker carries the yield finalizer, so a preemption the operator sees only after
// the pod ended is still counted: the finalizer goes once the status as read holds the yield,
// or the node's result is in, or the validation is deleted; never before.
TEST(Yield, AWorkerIsKeptUntilItsYieldOrResultIsRecorded) {
  World w(3);
  w.spec["disruption"] = {{"policy", "yield"}};
  w.Apply(w.Decide());
  ASSERT_EQ(w.pods.size(), 3u);
  for (auto& p : w.pods) {
    EXPECT_EQ(p["metadata"].value("finalizers", Json::array()), Json::array({kYieldFinalizer}));
    p["metadata"]["resourceVersion"] = "7";
  }
  Json* worker = PodOn(w.pods, "node-0");
  (*worker)["metadata"]["uid"] = "pod-uid-1";
  // Preempted, and already ended when the operator first looks (a kubelet's terminal phase).
  (*worker)["status"] = {
      {"phase", "Failed"},
      {"conditions",
       {{{"type", "DisruptionTarget"},
         {"status", "True"},
         {"reason", "PreemptionByScheduler"},
         {"lastTransitionTime", FormatRfc3339(w.now - std::chrono::seconds(4))}}}},
      {"containerStatuses",
       {{{"state",
          {{"terminated",
            {{"exitCode", 143},
             {"finishedAt", FormatRfc3339(w.now - std::chrono::seconds(1))}}}}}}}}};
  (*worker)["metadata"]["deletionTimestamp"] = FormatRfc3339(w.now - std::chrono::seconds(4));
  w.Result("node-1", "PASS");
  Decision d = w.Decide();
  EXPECT_EQ(Yields(d, "node-0").value("count", 0), 1);
  // The customer waited from the preemption until the worker's container ended.
  EXPECT_DOUBLE_EQ(Yields(d, "node-0").value("longestWaitSeconds", -1.0), 3.0);
  // node-1's result is in: its worker goes; node-0's yield is not in the status yet: it stays.
  EXPECT_EQ(Released(d), std::vector<std::string>{ViewOfPod(*PodOn(w.pods, "node-1")).name});
  ASSERT_EQ(d.release_pods.size(), 1u);
  EXPECT_EQ(d.release_pods[0].resource_version, "7");
  EXPECT_EQ(d.release_pods[0].finalizers, Json::array());

  // The status write failed: the yield is decided again, once, and the pod is still kept.
  d = w.Decide();
  EXPECT_EQ(Yields(d, "node-0").value("count", 0), 1);
  EXPECT_EQ(Released(d), std::vector<std::string>{ViewOfPod(*PodOn(w.pods, "node-1")).name});

  // Written: the next reconcile lets node-0's worker go (and still counts it once).
  w.validation_status = *d.status;
  d = w.Decide();
  EXPECT_EQ(Yields(d, "node-0").value("count", 0), 1);
  const std::vector<std::string> both = {ViewOfPod(*PodOn(w.pods, "node-0")).name,
                                         ViewOfPod(*PodOn(w.pods, "node-1")).name};
  EXPECT_EQ(Released(d), both);

  // node-2's worker still measures: kept, until the validation is deleted.
  EXPECT_FALSE(std::ranges::any_of(d.release_pods, [&](const PodRelease& r) {
    return r.name == ViewOfPod(*PodOn(w.pods, "node-2")).name;
  }));
  w.deleting = true;
  d = w.Decide();
  EXPECT_EQ(d.release_pods.size(), 3u);
  EXPECT_EQ(d.delete_pods.size(), 3u);
}

// A recorded yield lets the worker go only once it has ended: still stopping it could yet write
// a result. Ended is a terminal phase, or its container terminated where a kubelet leaves a
// deleted pod's phase as it was.
TEST(Yield, ARecordedYieldLetsTheWorkerGoOnlyOnceItsContainerEnded) {
  World w(1);
  w.spec["disruption"] = {{"policy", "yield"}};
  w.Apply(w.Decide());
  Json* worker = &w.pods[0];
  (*worker)["metadata"]["uid"] = "pod-uid-1";
  (*worker)["status"]["conditions"] = {
      {{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "PreemptionByScheduler"}}};
  (*worker)["metadata"]["deletionTimestamp"] = FormatRfc3339(w.now);
  Decision d = w.Decide();
  ASSERT_EQ(Yields(d, "node-0").value("count", 0), 1);
  w.validation_status = *d.status;
  // Recorded, but its container is still stopping (phase Running): kept.
  d = w.Decide();
  EXPECT_TRUE(d.release_pods.empty());
  // Its container terminated, the phase left as it was: let go.
  (*worker)["status"]["containerStatuses"] = {
      {{"state", {{"terminated", {{"exitCode", 143}, {"reason", "Error"}}}}}}};
  d = w.Decide();
  EXPECT_EQ(Released(d), std::vector<std::string>{ViewOfPod(*worker).name});
}

// status.gpuSeconds, what testing used beside what yielding lost: each worker's result from its
// start to its completion, times the GPUs its worker held; the operator's results measured
// nothing, and neither did an earlier run.
TEST(Yield, TheGpuTimeUsedIsEachWorkersSpanTimesItsGpus) {
  World w(3);
  w.Apply(w.Decide());
  auto span = [&](Json* result, int from, int to) {
    (*result)["spec"]["report"]["startTime"] = FormatRfc3339(w.now - std::chrono::seconds(from));
    (*result)["spec"]["report"]["completionTime"] = FormatRfc3339(w.now - std::chrono::seconds(to));
  };
  w.Result("node-0", "PASS");
  span(&w.results.back(), 10, 4);  // 6 s on 8 GPUs
  w.Result("node-1", "ERROR");
  w.results.back()["spec"]["writtenBy"] = "operator";
  span(&w.results.back(), 10, 0);
  Json earlier = w.results.front();
  earlier["metadata"]["name"] = "earlier";
  earlier["metadata"]["labels"][kRunLabel] = "g0";
  w.results.push_back(earlier);
  Decision d = w.Decide();
  EXPECT_DOUBLE_EQ(d.status->value("gpuSeconds", 0.0), 48.0) << d.status->dump();
  w.Result("node-2", "PASS");
  span(&w.results.back(), 3, 1);
  d = w.Decide();
  EXPECT_DOUBLE_EQ(d.status->value("gpuSeconds", 0.0), 64.0) << d.status->dump();
}

TEST(Yield, AWorkerDeletedBySomeoneElseOrNeverScheduledYieldsToo) {
  World w(2);
  w.spec["disruption"] = {{"policy", "yield"}};
  w.Apply(w.Decide());
  Json* deleted = PodOn(w.pods, "node-0");
  (*deleted)["metadata"]["uid"] = "pod-uid-a";
  (*deleted)["metadata"]["deletionTimestamp"] = FormatRfc3339(w.now);
  // A customer's pod took node-1's GPUs before the worker was bound.
  Json* unbound = PodOn(w.pods, "node-1");
  (*unbound)["metadata"]["uid"] = "pod-uid-b";
  (*unbound)["spec"].erase("nodeName");
  (*unbound)["status"] = {
      {"phase", "Pending"},
      {"conditions",
       {{{"type", "PodScheduled"},
         {"status", "False"},
         {"reason", "Unschedulable"},
         {"message",
          "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't "
          "match Pod's node affinity/selector."}}}}};
  const Decision d = w.Decide();
  EXPECT_TRUE(d.results.empty());
  EXPECT_EQ(Yields(d, "node-0").value("lastReason", ""), "Deleted");
  EXPECT_EQ(Yields(d, "node-1").value("lastReason", ""), "GpusTaken");
  EXPECT_EQ(d.delete_pods, std::vector<std::string>{ViewOfPod(*unbound).name});
}

TEST(Yield, UnderAnotherPolicyAPreemptedWorkerStaysAnError) {
  World w(1);
  w.Apply(w.Decide());
  w.pods[0]["status"] = {
      {"phase", "Failed"},
      {"conditions", {{{"type", "DisruptionTarget"}, {"status", "True"}}}},
      {"containerStatuses", {{{"state", {{"terminated", {{"exitCode", 143}}}}}}}}};
  const Decision d = w.Decide();
  ASSERT_EQ(d.results.size(), 1u);
  EXPECT_FALSE(d.status->contains("yields"));
}

bool Has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A gang yields as a whole: one rank preempted voids the attempt (the peer's PASS of it is
// deleted, not kept), every member waits as yielded and is counted, the workers are let go of
// only once no result of the attempt is left, and the gang starts again, whole, on idle nodes.
TEST(Yield, AGangYieldsAsAWholeAndStartsAgainWholeOnIdleNodes) {
  World w;  // pairs: (node-0, node-1), (node-2, node-3)
  w.spec = Json::parse(R"({
    "nodeSelector": {"nvidia.com/gpu.present": "true"},
    "sampling": {"warmup": 1, "minRepeats": 2, "maxRepeats": 3},
    "tests": [{"type": "nccl-all-reduce", "parameters": {"maxBytes": 65536}}],
    "gang": {"shape": "pairs"},
    "disruption": {"policy": "yield"}})");
  // A customer holds node-3: its pair waits, whole; the other pair starts.
  w.gpuPods["node-3"] = {{"ml", "customer", 8, false}};
  Decision d = w.Decide();
  ASSERT_NE(d.status->value("verdict", ""), "InvalidSpec") << d.status->dump();
  EXPECT_EQ(PodNodes(d), (std::set<std::string>{"node-0", "node-1"}));
  EXPECT_NE(d.status->value("message", "").find("node-3's GPUs are held by pod ml/customer"),
            std::string::npos)
      << d.status->value("message", "");
  w.Apply(d);
  for (auto& p : w.pods) {
    EXPECT_EQ(p["spec"].value("priorityClassName", ""), "perfgate-yield");
    p["metadata"]["uid"] = "uid-" + ViewOfPod(p).node;
  }
  const std::string pod0 = ViewOfPod(*PodOn(w.pods, "node-0")).name;
  const std::string pod1 = ViewOfPod(*PodOn(w.pods, "node-1")).name;

  // Rank 0 is preempted; rank 1 had finished and passed alone.
  Json* rank0 = PodOn(w.pods, "node-0");
  (*rank0)["status"]["conditions"] = {
      {{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "PreemptionByScheduler"}}};
  (*rank0)["metadata"]["deletionTimestamp"] = FormatRfc3339(w.now);
  w.Result("node-1", "PASS");
  d = w.Decide();
  EXPECT_TRUE(d.results.empty()) << "no ERROR for a gang that yielded";
  for (const auto& o : d.outcomes) {
    if (o.node == "node-0" || o.node == "node-1") {
      EXPECT_FALSE(o.verdict) << o.node;
    }
  }
  EXPECT_EQ(d.delete_results, std::vector<std::string>{Name(w.results[0])});
  EXPECT_TRUE(Has(d.delete_pods, pod1));
  EXPECT_TRUE(d.release_pods.empty());
  EXPECT_EQ(Yields(d, "node-0").value("count", 0), 0)
      << "counted once the attempt's results are gone";
  EXPECT_NE(d.status->value("message", "").find("its attempt's results are being deleted"),
            std::string::npos)
      << d.status->value("message", "");

  // The result is gone, rank 1 is being deleted: both yields are counted, once each.
  w.results.clear();
  (*PodOn(w.pods, "node-1"))["metadata"]["deletionTimestamp"] = FormatRfc3339(w.now);
  d = w.Decide();
  EXPECT_EQ(Yields(d, "node-0").value("count", 0), 1);
  EXPECT_EQ(Yields(d, "node-0").value("lastReason", ""), "PreemptionByScheduler");
  EXPECT_EQ(Yields(d, "node-1").value("count", 0), 1);
  EXPECT_EQ(Yields(d, "node-1").value("lastReason", ""), "GangYielded");
  EXPECT_TRUE(d.release_pods.empty());
  EXPECT_TRUE(d.pods.empty());

  // Recorded; rank 0 has ended too: both are let go of, still nothing starts.
  w.validation_status = *d.status;
  (*rank0)["status"]["phase"] = "Failed";
  d = w.Decide();
  EXPECT_EQ(Released(d), (std::vector<std::string>{pod0, pod1}));
  EXPECT_TRUE(d.pods.empty());
  EXPECT_EQ(Yields(d, "node-1").value("count", 0), 1);

  // Gone, and the customer is done: both pairs start, whole; every PASS completes the run.
  w.validation_status = *d.status;
  w.pods.clear();
  w.gpuPods.clear();
  d = w.Decide();
  EXPECT_EQ(PodNodes(d), (std::set<std::string>{"node-0", "node-1", "node-2", "node-3"}));
  w.Apply(d);
  w.validation_status = *d.status;
  for (const auto* n : {"node-0", "node-1", "node-2", "node-3"}) w.Result(n, "PASS");
  d = w.Decide();
  EXPECT_EQ(d.status->value("verdict", ""), "Passed") << d.status->dump();
  EXPECT_EQ(Yields(d, "node-0").value("count", 0), 1);
  EXPECT_EQ(Yields(d, "node-1").value("count", 0), 1);
}

TEST(Yield, DrainNeverEvictsAPodThatIsOnlyNominated) {
  World w;
  w.spec["disruption"] = {{"policy", "drain"}};
  w.gpuPods["node-2"] = {{"ml", "waiting-for-node-2", 8, false, true}};
  const Decision d = w.Decide();
  EXPECT_TRUE(d.evictions.empty());
  EXPECT_FALSE(PodNodes(d).contains("node-2"));
}

TEST(GangsUnderMaxUnavailable, AGangStartsOnlyWhenAllItsNodesFit) {
  const auto gangs = GangsOf({"n0", "n1", "n2", "n3", "n4"}, "pairs");  // (n0,n1) (n2,n3,n4)
  ASSERT_EQ(gangs.size(), 2U);
  // Limit 4, nothing under test: the pair fits (2), the trio would make 5: it waits, whole.
  GangTurns t = GangsInTurn(gangs, {true, true}, {}, 4);
  EXPECT_EQ(t.start, (std::set<std::string>{"n0", "n1"}));
  ASSERT_EQ(t.waiting.size(), 1U);
  EXPECT_NE(t.waiting[0].find("gang of 3 nodes n2, n3, n4"), std::string::npos) << t.waiting[0];
  EXPECT_NE(t.waiting[0].find("maxUnavailable=4"), std::string::npos) << t.waiting[0];
  // Once the pair is done, the trio has its turn.
  t = GangsInTurn(gangs, {false, true}, {}, 4);
  EXPECT_EQ(t.start, (std::set<std::string>{"n2", "n3", "n4"}));
  EXPECT_TRUE(t.waiting.empty());
  // Nodes under test (another validation's, or a gang running) count: 3 busy of 4, no pair fits.
  t = GangsInTurn(gangs, {true, false}, {"x", "y", "z"}, 4);
  EXPECT_TRUE(t.start.empty());
  EXPECT_EQ(t.waiting.size(), 1U);
  // No limit: every ready gang starts.
  t = GangsInTurn(gangs, {true, true}, {"x"}, 0);
  EXPECT_EQ(t.start.size(), 5U);
}

TEST(GangsUnderMaxUnavailable, AGangLargerThanMaxUnavailableIsAnInvalidSpec) {
  const auto all = GangsOf({"n0", "n1", "n2", "n3"}, "all");
  Status st = CheckGangsFit(all, "2", 2);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("spec.gang needs 4 nodes"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("maxUnavailable=\"2\" allows 2"), std::string::npos) << st.message();
  // A percentage: 50% of 4 is 2.
  st = CheckGangsFit(all, "50%", 2);
  EXPECT_NE(st.message().find("maxUnavailable=\"50%\" allows 2"), std::string::npos);
  EXPECT_TRUE(CheckGangsFit(all, "4", 4).ok());
  EXPECT_TRUE(CheckGangsFit(all, "", 4).ok());
  EXPECT_TRUE(CheckGangsFit(GangsOf({"n0", "n1", "n2", "n3"}, "pairs"), "2", 2).ok());
}

}  // namespace
}  // namespace perfgate::op
