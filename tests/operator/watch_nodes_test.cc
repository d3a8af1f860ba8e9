// New and changed nodes, and the provisioning flow, through Decide on hand-built snapshots: a
// node that joins after the run completed gets a worker of its own and its verdict in the
// status; a node whose driver changed is tested again; the workers tolerate the provisioning
// taint, a PASS removes it and a FAIL keeps it with the reason in an annotation.
#include "operator/policy/watch_nodes.h"
#include "tests/operator/time_at.h"

#include <gtest/gtest.h>

#include <functional>

#include <algorithm>
#include <set>

#include "common/labels.h"
#include "common/time.h"
#include "core/names.h"
#include "operator/policy/identity.h"
#include "operator/policy/node_actions.h"
#include "operator/policy/quarantine.h"
#include "operator/reconcile/decide.h"
#include "tests/operator/status_schema.h"

namespace perfgate::op {
namespace {

using std::chrono::seconds;

const std::string kName = "pool";
const std::string kTaint = "perfgate.io/provisioning";

ReconcilerConfig Config() {
  ReconcilerConfig c;
  c.scheduling_timeout = seconds(300);
  c.worker_image = "ghcr.io/perfgate/perfgate-worker:test";
  return c;
}

Json NodeObj(const std::string& name, const std::string& driver_minor = "54") {
  return {{"metadata",
           {{"name", name},
            {"labels",
             {{"nvidia.com/gpu.present", "true"},
              {"nvidia.com/gpu.product", "NVIDIA-H200"},
              {"nvidia.com/gpu.count", "8"},
              {"nvidia.com/cuda.driver.major", "550"},
              {"nvidia.com/cuda.driver.minor", driver_minor},
              {"nvidia.com/cuda.driver.rev", "15"}}}}},
          {"spec", {{"taints", {{{"key", kTaint}, {"effect", "NoSchedule"}}}}}},
          {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}}}}};
}

// Validation "pool" over its reconciles: what it observes, and its status as the last
// decision wrote it.
struct World {
  Json spec = Json::parse(R"({
    "nodeSelector": {"nvidia.com/gpu.present": "true"},
    "sampling": {"warmup": 1, "minRepeats": 5, "maxRepeats": 20},
    "tests": [{"type": "hbm-stream"}],
    "watchNodes": {"newNodes": true, "identityChange": true},
    "provisioningTaint": {"key": "perfgate.io/provisioning", "effect": "NoSchedule"}})");
  std::map<std::string, Json> nodes;
  std::vector<Json> pods;
  std::vector<Json> results;
  Json status = Json::object();
  std::chrono::system_clock::time_point now = kT0;

  explicit World(int n = 2) {
    for (int i = 0; i < n; ++i) AddNode("node-" + std::to_string(i));
  }
  void AddNode(const std::string& name) { nodes[name] = NodeObj(name); }

  Snapshot Observe() const {
    Snapshot s;
    s.exists = true;
    s.validation = {
        {"apiVersion", "perfgate.io/v1alpha1"},
        {"kind", "PerfValidation"},
        {"metadata",
         {{"name", kName}, {"uid", "uid-1"}, {"generation", 1}, {"finalizers", {kFinalizer}}}},
        {"spec", spec},
        {"status", status}};
    s.name = kName;
    s.uid = "uid-1";
    s.run = RunId(1, "");
    s.has_finalizer = true;
    s.run_complete =
        status.value("run", "") == s.run && !status.value("completionTime", "").empty();
    auto parsed = ParseValidationObject(s.validation);
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
    if (parsed.ok()) s.spec = *parsed;
    s.nodes = nodes;
    for (const auto& p : pods) s.pods.push_back(ViewOfPod(p));
    s.results = results;
    return s;
  }

  // One reconcile: decided and applied as Act would (pods created, deletions, node edits, the
  // status written).
  ReconcilerConfig config = Config();

  Decision Step() {
    Decision d = op::Decide(Observe(), config, now);
    EXPECT_TRUE(d.retry.ok()) << d.retry.message();
    if (d.status) {
      EXPECT_TRUE(StatusFitsTheSchema(*d.status));
    }
    auto gone = [](const std::vector<std::string>& names, std::vector<Json>* objs) {
      std::erase_if(*objs, [&](const Json& o) {
        return std::find(names.begin(), names.end(), Name(o)) != names.end();
      });
    };
    gone(d.delete_pods, &pods);
    gone(d.delete_results, &results);
    for (const auto& p : d.pods) {
      Json pod = p.pod;
      pod["status"] = {{"phase", "Running"}};
      pod["spec"]["nodeName"] = ViewOfPod(pod).node;
      pods.push_back(pod);
    }
    for (const auto& r : d.results) results.push_back(r.result);
    for (const auto& v : d.node_verdicts) {
      MarkNode(&nodes[v.node], v.verdict, kName, v.quarantine ? d.on_failure : "none",
               v.repeated_failure);
    }
    for (const auto& a : d.provisioning) ApplyProvisioning(&nodes[a.node], a);
    if (d.status) status = *d.status;
    now += seconds(1);
    return d;
  }

  // The worker on `node` writes its result (named as its pod) and exits.
  // `identity`: its report's identity (driverVersion, gpus), none when null.
  void Finish(const std::string& node, const std::string& verdict, const Json& identity = Json()) {
    for (auto& p : pods) {
      const PodView v = ViewOfPod(p);
      if (v.node != node || v.terminal) continue;
      p["status"]["phase"] = "Succeeded";
      results.push_back(
          {{"metadata",
            {{"name", v.name},
             {"creationTimestamp", FormatRfc3339(now)},
             {"labels",
              {{kValidationLabel, LabelValue(kName)}, {kNodeLabel, node}, {kRunLabel, v.run}}}}},
           {"spec",
            {{"validation", kName},
             {"nodeName", node},
             {"run", v.run},
             {"report",
              {{"verdict", verdict},
               {"reason", verdict == "PASS" ? "" : "hbm-stream below its threshold"},
               {"tests", {{{"name", "hbm-stream"}, {"verdict", verdict}}}}}}}}});
      if (!identity.is_null()) results.back()["spec"]["report"]["identity"] = identity;
    }
  }

  // Runs every node to `verdict` until the run completes.
  void Complete(const std::string& verdict = "PASS") {
    Step();
    for (const auto& p : std::vector<Json>(pods)) Finish(ViewOfPod(p).node, verdict);
    Step();
    ASSERT_FALSE(status.value("completionTime", "").empty()) << status.dump();
  }
};

std::vector<std::string> PodNodes(const Decision& d) {
  std::vector<std::string> out;
  for (const auto& p : d.pods) out.push_back(ViewOfPod(p.pod).node);
  return out;
}

bool HasTaint(const Json& node) {
  for (const auto& t : node["spec"].value("taints", Json::array())) {
    if (t.value("key", "") == kTaint) return true;
  }
  return false;
}

std::string FailedAnnotation(const Json& node) {
  return node["metadata"]
      .value("annotations", Json::object())
      .value(kProvisioningFailedAnnotation, "");
}

bool HasEvent(const Decision& d, const std::string& reason) {
  return std::any_of(d.events.begin(), d.events.end(),
                     [&](const EventAction& e) { return e.reason == reason; });
}

TEST(WatchNodes, ANodeJoiningAfterCompletionIsTestedAloneAndShownInTheStatus) {
  World w;
  w.Complete();
  EXPECT_EQ(w.status.value("passedNodes", ""), "2/2");

  w.AddNode("node-2");
  const Decision reopen = w.Step();
  EXPECT_TRUE(HasEvent(reopen, "NodeJoined"));
  EXPECT_EQ(w.status.value("verdict", ""), "Running");
  EXPECT_TRUE(w.status.value("completionTime", "").empty());
  EXPECT_NE(w.status.value("message", "").find("node-2"), std::string::npos);

  const Decision start = w.Step();
  EXPECT_EQ(PodNodes(start), std::vector<std::string>{"node-2"});  // the others keep their results
  w.Finish("node-2", "PASS");
  w.Step();
  EXPECT_FALSE(w.status.value("completionTime", "").empty());
  EXPECT_EQ(w.status.value("passedNodes", ""), "3/3");
  EXPECT_EQ(w.status.value("verdict", ""), "Passed");
  EXPECT_EQ(w.status["history"].size(), 1u);  // still one run, completed again
  EXPECT_EQ(w.status["history"][0].value("nodes", 0), 3);
}

TEST(WatchNodes, WithoutWatchNodesAJoiningNodeWaitsForTheNextRun) {
  World w;
  w.spec.erase("watchNodes");
  w.Complete();
  w.AddNode("node-2");
  const Decision d = w.Step();
  EXPECT_TRUE(d.pods.empty());
  EXPECT_FALSE(w.status.value("completionTime", "").empty());
  EXPECT_EQ(w.status.value("passedNodes", ""), "2/2");
}

TEST(WatchNodes, ANodeWhoseDriverChangedIsTestedAgain) {
  World w;
  w.Complete();
  EXPECT_EQ(w.status["nodeIdentities"].value("node-0", ""),
            "driver=550.54.15 product=NVIDIA-H200 count=8");
  const std::string first = ObjectName({kName, RunId(1, ""), "node-0"});

  w.nodes["node-0"]["metadata"]["labels"]["nvidia.com/cuda.driver.minor"] = "90";
  const Decision reopen = w.Step();
  EXPECT_TRUE(HasEvent(reopen, "NodeChanged"));
  EXPECT_EQ(reopen.delete_results, std::vector<std::string>{first});
  EXPECT_EQ(w.status.value("verdict", ""), "Running");

  const Decision start = w.Step();
  ASSERT_EQ(PodNodes(start), std::vector<std::string>{"node-0"});
  EXPECT_NE(Name(start.pods[0].pod), first);
  w.Finish("node-0", "FAIL");
  w.Step();
  EXPECT_FALSE(w.status.value("completionTime", "").empty());
  EXPECT_EQ(w.status.value("passedNodes", ""), "1/2");
  EXPECT_EQ(w.status["nodeIdentities"].value("node-0", ""),
            "driver=550.90.15 product=NVIDIA-H200 count=8");

  // Unchanged since: nothing more to test.
  const Decision later = w.Step();
  EXPECT_TRUE(later.pods.empty());
  EXPECT_FALSE(w.status.value("completionTime", "").empty());
}

TEST(WatchNodes, AStaleResultOfAChangedNodeStillCachedIsNotItsVerdict) {
  World w;
  w.Complete();
  w.nodes["node-1"]["metadata"]["labels"]["nvidia.com/gpu.count"] = "4";
  const std::vector<Json> before = w.results;
  w.Step();
  w.results = before;  // the cache has not seen the deletion yet
  const Decision d = w.Step();
  EXPECT_EQ(PodNodes(d), std::vector<std::string>{"node-1"});
  EXPECT_TRUE(w.status.value("completionTime", "").empty());
}

TEST(WatchNodes, ALastResultOnAnotherDriverThanTheLabelsSayIsTestedAgainOnce) {
  // The labels say 550.54.15 (recorded as node-0's identity when its result came in), but its
  // worker ran on 535.104.05: the driver changed under stale labels, or while nobody watched.
  World w;
  w.Step();
  w.Finish("node-0", "PASS", {{"driverVersion", "535.104.05"}});
  w.Finish("node-1", "PASS", {{"driverVersion", "550.54.15"}});
  w.Step();
  ASSERT_FALSE(w.status.value("completionTime", "").empty());
  const std::string first = ObjectName({kName, RunId(1, ""), "node-0"});

  const Decision reopen = w.Step();
  ASSERT_TRUE(HasEvent(reopen, "NodeChanged"));
  std::string msg;
  for (const auto& e : reopen.events) {
    if (e.reason == "NodeChanged") msg = e.message;
  }
  EXPECT_NE(msg.find("node-0 changed: its last result " + first + " ran on driver 535.104.05"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("labels now say driver 550.54.15"), std::string::npos) << msg;
  EXPECT_EQ(reopen.delete_results, std::vector<std::string>{first});  // node-1 agrees: kept
  EXPECT_EQ(w.status["identityRetests"].value("node-0", ""),
            "driver=550.54.15 product=NVIDIA-H200 count=8");

  const Decision start = w.Step();
  ASSERT_EQ(PodNodes(start), std::vector<std::string>{"node-0"});
  // Its worker still reads 535.104.05 (the labels spell it otherwise): tested once, not again.
  w.Finish("node-0", "PASS", {{"driverVersion", "535.104.05"}});
  w.Step();
  EXPECT_FALSE(w.status.value("completionTime", "").empty());
  const Decision later = w.Step();
  EXPECT_TRUE(later.pods.empty());
  EXPECT_FALSE(HasEvent(later, "NodeChanged"));
  EXPECT_FALSE(w.status.value("completionTime", "").empty());
  EXPECT_EQ(w.status["retests"].value("node-0", 0), 1);
}

TEST(WatchNodes, AResultWithoutAnNvmlDriverNeverCountsAsChanged) {
  World w;
  w.Step();
  w.Finish("node-0", "PASS", {{"driverVersion", "CUDA 12.4"}});
  w.Finish("node-1", "PASS");
  w.Step();
  const Decision later = w.Step();
  EXPECT_FALSE(HasEvent(later, "NodeChanged"));
  EXPECT_FALSE(w.status.value("completionTime", "").empty());
}

TEST(ResultIdentity, DriversAreComparedAsFarAsTheLabelsGo) {
  EXPECT_FALSE(DriverDiffers("550.54.15", "550.54.15"));
  EXPECT_FALSE(DriverDiffers("550.54.15", "550.54"));  // GFD without a rev label
  EXPECT_TRUE(DriverDiffers("550.54.15", "560.35.03"));
  EXPECT_TRUE(DriverDiffers("550.54", "550.54.15"));
  EXPECT_FALSE(DriverDiffers("CUDA 12.4", "550.54.15"));
  EXPECT_FALSE(DriverDiffers("", "550.54.15"));
  EXPECT_FALSE(DriverDiffers("550.54.15", ""));
  EXPECT_EQ(LabelledDriver(NodeObj("n", "90")), "550.90.15");
}

TEST(ResultIdentity, ASwappedGpuIsNamed) {
  const Json was = {{"spec",
                     {{"report",
                       {{"identity",
                         {{"driverVersion", "550.54.15"},
                          {"gpus",
                           {{{"uuid", "GPU-a"}, {"vbios", "96.00.89.00.01"}},
                            {{"uuid", "GPU-b"}, {"vbios", "96.00.89.00.01"}}}}}}}}}}};
  Json now = was;
  EXPECT_EQ(GpuChange(IdentityOfResult(was), IdentityOfResult(now)), "");
  now["spec"]["report"]["identity"]["gpus"][1]["uuid"] = "GPU-c";
  EXPECT_EQ(GpuChange(IdentityOfResult(was), IdentityOfResult(now)),
            "GPUs gone: GPU-b vbios 96.00.89.00.01; new: GPU-c vbios 96.00.89.00.01");
  now = was;
  now["spec"]["report"]["identity"]["gpus"][0]["vbios"] = "96.00.99.00.01";
  EXPECT_NE(
      GpuChange(IdentityOfResult(was), IdentityOfResult(now)).find("new: GPU-a vbios 96.00.99"),
      std::string::npos);
  // A result without GPUs (no NVML) tells nothing.
  EXPECT_EQ(GpuChange(IdentityOfResult(was), IdentityOfResult(Json::object())), "");
}

TEST(ResultIdentity, AResultOnOtherGpusThanTheNodesPreviousOneIsRecordedAndAnnounced) {
  World w;
  w.spec["policy"] = {{"keepResults", 3}};
  const Json gpus_a = {{"driverVersion", "550.54.15"}, {"gpus", {{{"uuid", "GPU-a"}}}}};
  const Json gpus_b = {{"driverVersion", "550.54.15"}, {"gpus", {{{"uuid", "GPU-b"}}}}};
  // node-0's result of an earlier run, on GPU-a.
  w.results.push_back(
      {{"metadata",
        {{"name", "pool-old-node-0"},
         {"creationTimestamp", "2026-11-30T12:00:00Z"},
         {"labels",
          {{kValidationLabel, LabelValue(kName)}, {kNodeLabel, "node-0"}, {kRunLabel, "old"}}}}},
       {"spec",
        {{"nodeName", "node-0"},
         {"run", "old"},
         {"report", {{"verdict", "PASS"}, {"identity", gpus_a}}}}}});
  w.Step();
  w.Finish("node-0", "PASS", gpus_b);
  w.Finish("node-1", "PASS", gpus_b);
  const Decision d = w.Step();
  ASSERT_TRUE(HasEvent(d, "GpuChanged"));
  const Json changes = w.status.value("gpuChanges", Json::array());
  ASSERT_EQ(changes.size(), 1u) << w.status.dump(2);
  EXPECT_EQ(changes[0].value("node", ""), "node-0");
  EXPECT_EQ(changes[0].value("previousResult", ""), "pool-old-node-0");
  EXPECT_EQ(changes[0].value("change", ""), "GPUs gone: GPU-a; new: GPU-b");
  // Recorded once: the next reconcile does not add it again.
  const Decision again = w.Step();
  EXPECT_FALSE(HasEvent(again, "GpuChanged"));
  EXPECT_EQ(w.status.value("gpuChanges", Json::array()).size(), 1u);
}

TEST(ProvisioningTaint, WorkersTolerateIt) {
  World w;
  const Decision d = w.Step();
  ASSERT_EQ(d.pods.size(), 2u);
  const Json tolerations = d.pods[0].pod["spec"]["tolerations"];
  const Json want = {{"key", kTaint}, {"operator", "Exists"}, {"effect", "NoSchedule"}};
  EXPECT_NE(std::find(tolerations.begin(), tolerations.end(), want), tolerations.end())
      << tolerations.dump();
}

TEST(ProvisioningTaint, PassRemovesItFailKeepsItWithTheReason) {
  World w;
  w.Step();
  w.Finish("node-0", "PASS");
  w.Finish("node-1", "FAIL");
  const Decision d = w.Step();
  ASSERT_FALSE(w.status.value("completionTime", "").empty());
  EXPECT_EQ(d.provisioning.size(), 2u);
  EXPECT_FALSE(HasTaint(w.nodes["node-0"]));
  EXPECT_EQ(FailedAnnotation(w.nodes["node-0"]), "");
  EXPECT_TRUE(HasTaint(w.nodes["node-1"]));
  EXPECT_EQ(FailedAnnotation(w.nodes["node-1"]), "FAIL: hbm-stream below its threshold");
}

TEST(ProvisioningTaint, ANewNodeLosesItsTaintWhenItPasses) {
  World w;
  w.Complete();
  w.AddNode("node-2");
  EXPECT_TRUE(HasTaint(w.nodes["node-2"]));
  w.Step();
  w.Step();
  w.Finish("node-2", "PASS");
  w.Step();
  EXPECT_FALSE(HasTaint(w.nodes["node-2"]));
}

TEST(WatchNodes, AValidationCreatedBeforeAnyNodeTestsTheFirstOneToJoin) {
  World w(0);
  w.Step();
  EXPECT_EQ(w.status.value("verdict", ""), "Error");  // NoNodesSelected
  w.AddNode("node-0");
  w.Step();
  const Decision start = w.Step();
  EXPECT_EQ(PodNodes(start), std::vector<std::string>{"node-0"});
  w.Finish("node-0", "PASS");
  w.Step();
  EXPECT_EQ(w.status.value("verdict", ""), "Passed");
  EXPECT_EQ(w.status.value("passedNodes", ""), "1/1");
}

TEST(WatchNodes, NotWithGangs) {
  World w;
  w.spec["gang"] = {{"shape", "all"}};
  w.Step();
  EXPECT_EQ(w.status.value("verdict", ""), "InvalidSpec");
  EXPECT_NE(w.status.value("message", "").find("spec.watchNodes"), std::string::npos);
}

// Remediation gate and fault signals.

const std::string kGate = "remediation.example.com/needs-validation";

void Taint(Json* node, const std::string& key, const std::string& effect = "NoSchedule") {
  Json taints = (*node)["spec"].value("taints", Json::array());
  taints.push_back({{"key", key}, {"value", "reset"}, {"effect", effect}});
  (*node)["spec"]["taints"] = taints;
}

void Untaint(Json* node, const std::string& key) {
  Json kept = Json::array();
  for (const auto& t : (*node)["spec"].value("taints", Json::array())) {
    if (t.value("key", "") != key) kept.push_back(t);
  }
  (*node)["spec"]["taints"] = kept;
}

bool HasTaintKey(const Json& node, const std::string& key) {
  for (const auto& t : node["spec"].value("taints", Json::array())) {
    if (t.value("key", "") == key) return true;
  }
  return false;
}

std::string Annotation(const Json& node, const char* key) {
  return node["metadata"].value("annotations", Json::object()).value(key, "");
}

void SetCondition(Json* node, const std::string& type, const std::string& status) {
  Json conds = Json::array();
  for (const auto& c : (*node)["status"].value("conditions", Json::array())) {
    if (c.value("type", "") != type) conds.push_back(c);
  }
  conds.push_back({{"type", type}, {"status", status}});
  (*node)["status"]["conditions"] = conds;
}

// A completed run over node-0 and node-1 (both PASS), with `spec` fields added.
World Completed(const Json& extra) {
  World w;
  w.spec.erase("watchNodes");
  for (const auto& [k, v] : extra.items()) w.spec[k] = v;
  w.Complete();
  return w;
}

TEST(RemediationGate, ATaintedNodeIsTestedAloneAndThePassLiftsTheTaint) {
  World w = Completed({{"remediationTaints", {kGate}}});
  Taint(&w.nodes["node-1"], kGate, "NoExecute");
  const Decision reopen = w.Step();
  EXPECT_TRUE(HasEvent(reopen, "NodeSignal"));
  EXPECT_EQ(w.status.value("verdict", ""), "Running");
  const Decision start = w.Step();
  ASSERT_EQ(PodNodes(start), std::vector<std::string>{"node-1"});
  // Its worker tolerates the taint whatever its effect.
  const Json tolerations = start.pods[0].pod["spec"]["tolerations"];
  const Json want = {{"key", kGate}, {"operator", "Exists"}};
  EXPECT_NE(std::find(tolerations.begin(), tolerations.end(), want), tolerations.end())
      << tolerations.dump();
  w.Finish("node-1", "PASS");
  w.Step();
  EXPECT_FALSE(w.status.value("completionTime", "").empty());
  EXPECT_FALSE(HasTaintKey(w.nodes["node-1"], kGate));
  EXPECT_EQ(Annotation(w.nodes["node-1"], kRemediationFailedAnnotation), "");
  EXPECT_TRUE(w.Step().pods.empty());  // the node seen without the taint: nothing to test

  // Handed over again later: tested again.
  Taint(&w.nodes["node-1"], kGate);
  w.Step();
  EXPECT_EQ(PodNodes(w.Step()), std::vector<std::string>{"node-1"});
}

TEST(RemediationGate, AFailKeepsTheTaintWithTheVerdictAndIsNotTestedInALoop) {
  World w = Completed({{"remediationTaints", {kGate}}});
  Taint(&w.nodes["node-0"], kGate);
  w.Step();
  w.Step();
  w.Finish("node-0", "FAIL");
  w.Step();
  EXPECT_FALSE(w.status.value("completionTime", "").empty());
  EXPECT_TRUE(HasTaintKey(w.nodes["node-0"], kGate));
  EXPECT_EQ(Annotation(w.nodes["node-0"], kRemediationFailedAnnotation),
            "FAIL: hbm-stream below its threshold");
  // node-1 never carried the taint: no annotation.
  EXPECT_EQ(Annotation(w.nodes["node-1"], kRemediationFailedAnnotation), "");
  const Decision later = w.Step();
  EXPECT_TRUE(later.pods.empty());
  EXPECT_FALSE(HasEvent(later, "NodeSignal"));
  EXPECT_FALSE(w.status.value("completionTime", "").empty());

  // The tool repairs it and hands it over again (taint removed, then set): tested, and the PASS
  // lifts the taint and the annotation.
  Untaint(&w.nodes["node-0"], kGate);
  w.Step();
  Taint(&w.nodes["node-0"], kGate);
  w.Step();
  ASSERT_EQ(PodNodes(w.Step()), std::vector<std::string>{"node-0"});
  w.Finish("node-0", "PASS");
  w.Step();
  EXPECT_FALSE(HasTaintKey(w.nodes["node-0"], kGate));
  EXPECT_EQ(Annotation(w.nodes["node-0"], kRemediationFailedAnnotation), "");
}

TEST(RemediationGate, ACordonedNodeHandedOverIsSelectedAndANewOneIsTested) {
  World w = Completed({{"remediationTaints", {kGate}}});
  w.AddNode("node-2");
  w.nodes["node-2"]["spec"]["unschedulable"] = true;
  Taint(&w.nodes["node-2"], kGate);
  const Decision reopen = w.Step();
  EXPECT_TRUE(HasEvent(reopen, "NodeJoined"));
  EXPECT_EQ(PodNodes(w.Step()), std::vector<std::string>{"node-2"});
}

TEST(RemediationGate, PerfgatesOwnTaintCannotBeOne) {
  World w;
  w.spec["remediationTaints"] = {"perfgate.io/failed"};
  w.Step();
  EXPECT_EQ(w.status.value("verdict", ""), "InvalidSpec");
}

TEST(FaultSignals, AConditionTestsOnlyThatNodeOncePerAppearance) {
  World w = Completed(Json::parse(R"({"watchNodes": {"conditions": [
      {"type": "GpuXidError"}, {"type": "Ready", "status": "False"}]}})"));
  SetCondition(&w.nodes["node-0"], "Ready", "True");
  SetCondition(&w.nodes["node-0"], "GpuXidError", "False");
  EXPECT_TRUE(w.Step().pods.empty());  // not a signal: nothing to test

  SetCondition(&w.nodes["node-0"], "GpuXidError", "True");
  const Decision reopen = w.Step();
  ASSERT_TRUE(HasEvent(reopen, "NodeSignal"));
  EXPECT_NE(reopen.events.back().message.find("has the condition GpuXidError=True"),
            std::string::npos)
      << reopen.events.back().message;
  ASSERT_EQ(PodNodes(w.Step()), std::vector<std::string>{"node-0"});
  w.Finish("node-0", "PASS");
  w.Step();
  EXPECT_FALSE(w.status.value("completionTime", "").empty());
  // Still set: once per appearance, so not again.
  const Decision later = w.Step();
  EXPECT_TRUE(later.pods.empty());
  EXPECT_FALSE(HasEvent(later, "NodeSignal"));
  // It clears and comes back: tested again.
  SetCondition(&w.nodes["node-0"], "GpuXidError", "False");
  w.Step();
  SetCondition(&w.nodes["node-0"], "GpuXidError", "True");
  EXPECT_TRUE(HasEvent(w.Step(), "NodeSignal"));
  EXPECT_EQ(PodNodes(w.Step()), std::vector<std::string>{"node-0"});
  EXPECT_EQ(w.status["retests"].value("node-0", 0), 2);
}

TEST(FaultSignals, ARebootTestsTheNodeAgain) {
  World w;
  w.spec["watchNodes"] = {{"reboot", true}};
  for (auto& [n, node] : w.nodes) node["status"]["nodeInfo"] = {{"bootID", "boot-a-" + n}};
  w.Complete();
  EXPECT_TRUE(w.Step().pods.empty());
  w.nodes["node-1"]["status"]["nodeInfo"]["bootID"] = "boot-b";
  const Decision reopen = w.Step();
  ASSERT_TRUE(HasEvent(reopen, "NodeSignal"));
  EXPECT_NE(reopen.events.back().message.find("rebooted (boot ID boot-a-node-1 -> boot-b)"),
            std::string::npos);
  ASSERT_EQ(PodNodes(w.Step()), std::vector<std::string>{"node-1"});
  w.Finish("node-1", "FAIL");
  w.Step();
  EXPECT_FALSE(w.status.value("completionTime", "").empty());
  EXPECT_TRUE(w.Step().pods.empty());
}

TEST(FaultSignals, AnotherToolsTaintIsToleratedAndTestsTheNodeAgain) {
  World w = Completed({{"watchNodes", {{"taints", {"nvsentinel.example.com/quarantined"}}}}});
  Taint(&w.nodes["node-0"], "nvsentinel.example.com/quarantined");
  EXPECT_TRUE(HasEvent(w.Step(), "NodeSignal"));
  const Decision start = w.Step();
  ASSERT_EQ(PodNodes(start), std::vector<std::string>{"node-0"});
  const Json want = {{"key", "nvsentinel.example.com/quarantined"}, {"operator", "Exists"}};
  const Json tolerations = start.pods[0].pod["spec"]["tolerations"];
  EXPECT_NE(std::find(tolerations.begin(), tolerations.end(), want), tolerations.end());
  w.Finish("node-0", "PASS");
  w.Step();
  // Not perfgate's to remove: the other tool's taint stays.
  EXPECT_TRUE(HasTaintKey(w.nodes["node-0"], "nvsentinel.example.com/quarantined"));
  EXPECT_TRUE(w.Step().pods.empty());
}

// The brake on mass quarantine.

bool Quarantined(const Json& node) {
  for (const auto& t : node["spec"].value("taints", Json::array())) {
    if (t.value("key", "") == kFailedTaint) return true;
  }
  return false;
}

std::string ConditionOf(const Json& status, const std::string& type, const char* field) {
  for (const auto& c : status.value("conditions", Json::array())) {
    if (c.value("type", "") == type) return c.value(field, "");
  }
  return "";
}

// Runs `w` once with every node in `failing` FAIL and the others PASS.
Decision RunWith(World* w, const std::set<std::string>& failing) {
  w->Step();
  for (const auto& p : std::vector<Json>(w->pods)) {
    const std::string node = ViewOfPod(p).node;
    w->Finish(node, failing.contains(node) ? "FAIL" : "PASS");
  }
  return w->Step();
}

TEST(QuarantineBrake, ASystemicFailurePastTheCapTaintsOnlyUpToItAndSaysWhatTheNodesShare) {
  World w(8);
  w.spec["policy"] = {{"onFailure", "taint"}, {"maxQuarantined", "25%"}};
  const Decision d = RunWith(&w, {"node-0", "node-1", "node-2", "node-3", "node-4", "node-5"});
  ASSERT_FALSE(w.status.value("completionTime", "").empty());
  int tainted = 0;
  int failed = 0;
  for (const auto& [name, node] : w.nodes) {
    tainted += Quarantined(node) ? 1 : 0;
    failed += node["metadata"]["labels"].value(kVerdictLabel, "") == "failed" ? 1 : 0;
  }
  EXPECT_EQ(tainted, 2);  // 25% of 8
  EXPECT_EQ(failed, 6);   // every FAIL keeps its verdict label
  EXPECT_TRUE(Quarantined(w.nodes["node-0"]));
  EXPECT_TRUE(Quarantined(w.nodes["node-1"]));
  EXPECT_FALSE(Quarantined(w.nodes["node-2"]));
  const Json q = w.status["quarantine"];
  EXPECT_EQ(q.value("cap", 0), 2);
  EXPECT_EQ(q.value("quarantined", 0), 2);
  EXPECT_EQ(q.value("held", 0), 4);
  EXPECT_EQ(q["heldNodes"], Json({"node-2", "node-3", "node-4", "node-5"}));
  EXPECT_EQ(q.value("shared", ""), "gpu.product=NVIDIA-H200, driver=550.54.15");
  EXPECT_EQ(ConditionOf(w.status, "SystemicFailure", "status"), "True");
  EXPECT_EQ(ConditionOf(w.status, "SystemicFailure", "reason"), "QuarantineCapReached");
  const std::string msg = ConditionOf(w.status, "SystemicFailure", "message");
  EXPECT_NE(msg.find("6 nodes failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the failures look systemic; the failing nodes share "
                     "gpu.product=NVIDIA-H200, driver=550.54.15"),
            std::string::npos)
      << msg;
  EXPECT_TRUE(HasEvent(d, "SystemicFailure"));
}

TEST(QuarantineBrake, ARackLabelTheFailingNodesShareIsNamed) {
  World w(4);
  w.spec["policy"] = {{"onFailure", "taint"}, {"maxQuarantined", "1"}};
  for (const char* n : {"node-0", "node-1"})
    w.nodes[n]["metadata"]["labels"]["example.com/rack"] = "r7";
  for (const char* n : {"node-2", "node-3"})
    w.nodes[n]["metadata"]["labels"]["example.com/rack"] = "r8";
  w.nodes["node-1"]["metadata"]["labels"]["nvidia.com/cuda.driver.minor"] = "90";
  RunWith(&w, {"node-0", "node-1"});
  EXPECT_EQ(w.status["quarantine"].value("shared", ""),
            "gpu.product=NVIDIA-H200, example.com/rack=r7");
}

TEST(QuarantineBrake, WithinTheDefaultCapEveryFailIsTainted) {
  World w(4);
  w.spec["policy"] = {{"onFailure", "taint"}};
  const Decision d = RunWith(&w, {"node-1", "node-2"});
  EXPECT_TRUE(Quarantined(w.nodes["node-1"]));
  EXPECT_TRUE(Quarantined(w.nodes["node-2"]));
  EXPECT_FALSE(w.status.contains("quarantine"));
  EXPECT_EQ(ConditionOf(w.status, "SystemicFailure", "status"), "");
  EXPECT_FALSE(HasEvent(d, "SystemicFailure"));
}

// Four nodes for one validation under an operator cap of 2, and two more outside its
// selection that `out_of_service` takes out of service some other way, then node-0 FAILs.
World CapOfTwoWithTwoOthers(const std::function<void(const std::string&, Json*)>& out_of_service) {
  World w(4);
  w.config.max_quarantined = "2";
  w.spec["policy"] = {{"onFailure", "taint"}, {"maxQuarantined", "100%"}};
  for (const char* n : {"other-0", "other-1"}) {
    w.AddNode(n);
    w.nodes[n]["metadata"]["labels"]["nvidia.com/gpu.present"] = "false";
    out_of_service(n, &w.nodes[n]);
  }
  RunWith(&w, {"node-0"});
  return w;
}

TEST(QuarantineBrake, TheOperatorsCapCountsNodesOtherValidationsTainted) {
  World w = CapOfTwoWithTwoOthers([](const std::string&, Json* node) {
    MarkNode(node, verdict::Verdict::kFail, "other", "taint");
  });
  EXPECT_FALSE(Quarantined(w.nodes["node-0"]));
  EXPECT_EQ(w.nodes["node-0"]["metadata"]["labels"].value(kVerdictLabel, ""), "failed");
  EXPECT_EQ(ConditionOf(w.status, "SystemicFailure", "status"), "True");
}

// A node with some GPUs under perfgate's DeviceTaintRules is partly out of service: it takes a
// place under the operator's cap as a tainted node does.
TEST(QuarantineBrake, NodesWithTaintedDevicesCountAgainstTheCap) {
  World w = CapOfTwoWithTwoOthers([](const std::string& name, Json* node) {
    (*node)["metadata"]["annotations"][kTaintedDevicesAnnotation] =
        "gpu3=gpu.nvidia.com/" + name + "/gpu-3";
  });
  EXPECT_FALSE(Quarantined(w.nodes["node-0"]));
  EXPECT_EQ(ConditionOf(w.status, "SystemicFailure", "status"), "True");
  EXPECT_EQ(w.status["quarantine"].value("held", 0), 1);
}

TEST(QuarantineBrake, AMaxQuarantinedThatIsNoCountIsAnInvalidSpec) {
  World w;
  w.spec["policy"] = {{"onFailure", "taint"}, {"maxQuarantined", "half"}};
  w.Step();
  EXPECT_EQ(w.status.value("verdict", ""), "InvalidSpec");
  EXPECT_NE(w.status.value("message", "").find("spec.policy.maxQuarantined"), std::string::npos);
}

}  // namespace
}  // namespace perfgate::op
