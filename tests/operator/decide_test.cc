// The decide step in memory: each test builds the Snapshot one reconcile would observe and
// checks the Decision — one test per end-to-end scenario's decisions (tests/e2e/e2e_test.cc),
// then the edge cases the end-to-end suite cannot reach cheaply.
//
// Each E2E scenario (tests/e2e/e2e_test.cc) and the tests here that decide what it does:
//   FourNodesPass, OneSlowNodeFailsAndOnlyItIsTainted, BrokenWorkersGiveErrorNotTaint,
//   LaterPassRemovesOnlyPerfgateTaint, CordonedFailedNodeIsRetestedAndReleasedOnPass,
//   NodeWithoutSpecIsTestedLikeAnyOther, WorkerPodsMeetRestrictedPodSecurity,
//   ProfileFromClusterIsResolvedIntoThePlan, BoundThatCannotBindIsInvalidSpec,
//   ImpossibleGpusPerNodeIsInvalidSpecNamingTheNodes, AutoResolvesFromGkeEksAndAksLabelsWithoutGfd,
//   AutoRefusesCloudNodesItCannotCertifyNamingNodesAndLabels, ReadmeClusterExampleWorksWithoutGfd,
//   GangOfFourPasses, GangWithUnschedulablePodFailsAsOne, GangPairsFailOnlyTheirOwnPair,
//   GangPairsNameTheSlowNodeAsSuspect, GangAllFailureNarrowsByPairsToTheSlowNode,
//   GangPairsWithoutNarrowingNameTheFailingPair, GangNetworkOptionsReachThePods
//                                      -> DecideScenario.<the same name>
//   OperatorRestartMidRunKeepsPodsAndVerdict
//       -> DecideScenario.OperatorRestartMidRunCreatesNothingTwice
//   InvalidSpecIsRefusedOrCompletesInvalid -> DecideScenario.InvalidSpecCompletesBeforeAnyPod,
//                                             DecideEdge.UnparsableSpecIsInvalidSpec
//   UndecidableThresholdIsInvalidSpecBeforeAnyPod
//       -> DecideScenario.UndecidableThresholdIsInvalidSpec
//   ValidationAndNodeWithNamesLongerThan63Characters -> DecideScenario.NamesLongerThan63Characters,
//                                                       DecideEdge.LongNamesStayDistinctAndBounded
//   DeletingEveryValidationLeavesNoVerdictLabel
//       -> DecideScenario.DeletionReleasesLabelsThenTheFinalizer
//   SuspendRerunKeepResultsAndDelete -> DecideScenario.SuspendedStartsNothing,
//       RerunKeepsResultsOfTheNewestRuns, DeletionReleasesLabelsThenTheFinalizer
//   NamedProfileOfAnotherModelIsInvalidSpecNamingNodesAndModels
//       -> DecideScenario.NamedProfileOfAnotherModelIsInvalidSpec, MissingNamedProfileIsInvalidSpec
//   AutoPicksShippedProfilesFromGfdLabels -> DecideScenario.AutoPicksTheProfileOfTheNodesModel,
//                                            AutoRefusesMixedModels
//   GangProbesRunInRoundsWhenSuspectsOutnumberPassingNodes -> DecideScenario.GangProbesRunInRounds
//   TwentySecondsOf500WhileWorkersFinishLosesNoVerdict
//       -> DecideScenario.ApiOutageWhileWorkersFinishLosesNoVerdict,
//          DecideEdge.RefusedStatusWriteIsDecidedAgainWithTheSameOnceKey, SameSnapshotSameDecision
//   SimultaneousOverlappingValidationsNeverShareANode
//       -> DecideEdge.BusyNodeWaitsForTheOtherValidation,
//       ClaimedNodeWaitsVisiblyAndIsTakenWhenReleased, UnrenewedClaimExpiresAfterItsDuration,
//       ClaimsAreRenewedThenReleasedNodeByNode, DeletionReleasesClaims
//   StoreRecordsResultsCatchesUpAndFlagsRegressions -> DecideStore.*, DecideRegressions.*
// The DecideEdge tests are the edge cases the end-to-end suite cannot reach cheaply.
#include "operator/reconcile/decide.h"
#include "common/node_verdict.h"
#include "tests/operator/time_at.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/labels.h"
#include "common/report.h"
#include "common/termination.h"
#include "common/time.h"
#include "core/names.h"
#include "operator/policy/node_actions.h"
#include "operator/reconcile/reconciler.h"
#include "tests/operator/status_schema.h"

namespace perfgate::op {
namespace {

using std::chrono::seconds;

ReconcilerConfig Config() {
  ReconcilerConfig c;
  c.scheduling_timeout = seconds(3);
  c.worker_image = "ghcr.io/perfgate/perfgate-worker:test";
  return c;
}

// A single-node spec every GPU node passes or fails on its own.
Json StreamSpec() {
  return Json::parse(R"({
    "nodeSelector": {"nvidia.com/gpu.present": "true"},
    "sampling": {"warmup": 1, "minRepeats": 5, "maxRepeats": 20},
    "policy": {"onFailure": "taint"},
    "tests": [{"type": "hbm-stream"}]})");
}

// An NCCL spec across nodes in gangs of `shape`.
Json GangSpec(const std::string& shape, const std::string& narrow = "") {
  Json spec = Json::parse(R"({
    "nodeSelector": {"nvidia.com/gpu.present": "true"},
    "sampling": {"warmup": 1, "minRepeats": 2, "maxRepeats": 3},
    "policy": {"onFailure": "taint", "nodeTimeoutSeconds": 60},
    "tests": [{"type": "nccl-all-reduce", "parameters": {"maxBytes": 65536}}]})");
  spec["gang"] = {{"shape", shape}};
  if (!narrow.empty()) spec["gang"]["narrow"] = narrow;
  return spec;
}

Json NodeObj(const std::string& name, int gpus = 8, const std::string& product = "NVIDIA-H200") {
  Json labels = {{"nvidia.com/gpu.present", "true"}};
  if (!product.empty()) labels["nvidia.com/gpu.product"] = product;
  return {{"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", Json::object()},
          {"status", {{"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}};
}

std::vector<Json> Nodes(int n) {
  std::vector<Json> out;
  for (int i = 0; i < n; ++i) out.push_back(NodeObj("node-" + std::to_string(i)));
  return out;
}

// What one reconcile observes; each test changes what it needs and calls Decide.
struct World {
  Json validation;
  std::vector<Json> nodes;
  std::vector<Json> pods;
  std::vector<Json> results;
  std::map<std::string, std::string> busyWith;
  std::map<std::string, NodeClaim> claims;  // by node, as the API holds them
  std::set<std::string> resultsInApi;       // pod names whose result the cache has not seen
  std::map<std::string, std::string> logs;
  ClusterProfiles profiles;
  ClusterBaselines baselines;      // PerfBaseline objects by name
  std::optional<StoreView> store;  // the results store's view; none: --store=off
  ReconcilerConfig config = Config();
  std::chrono::system_clock::time_point now = kT0;
  int claimVersion = 100;

  World(const std::string& name, Json spec, std::vector<Json> node_list = Nodes(4)) {
    validation = {{"apiVersion", "perfgate.io/v1alpha1"},
                  {"kind", "PerfValidation"},
                  {"metadata",
                   {{"name", name},
                    {"uid", "uid-" + name},
                    {"generation", 1},
                    {"resourceVersion", "7"},
                    {"finalizers", {kFinalizer}}}},
                  {"spec", std::move(spec)}};
    nodes = std::move(node_list);
  }
  std::string name() const { return validation["metadata"]["name"]; }

  Snapshot Observe() const {
    Snapshot s;
    s.exists = true;
    s.validation = validation;
    s.name = name();
    s.uid = validation["metadata"].value("uid", "");
    s.generation = validation["metadata"].value("generation", 1);
    s.run = RunId(
        s.generation,
        validation["metadata"].value("annotations", Json::object()).value(kRerunAnnotation, ""));
    s.deleting = validation["metadata"].contains("deletionTimestamp");
    const Json f = validation["metadata"].value("finalizers", Json::array());
    s.has_finalizer = std::find(f.begin(), f.end(), kFinalizer) != f.end();
    const Json st = validation.value("status", Json::object());
    s.run_complete = st.value("run", "") == s.run && !st.value("completionTime", "").empty();
    if (auto parsed = ParseValidationObject(validation); parsed.ok()) {
      s.spec = *parsed;
    } else {
      s.spec_error = parsed.status();
    }
    for (const auto& n : nodes) s.nodes[Name(n)] = n;
    for (const auto& p : pods) {
      PodView v = ViewOfPod(p);
      v.result_in_api = resultsInApi.count(v.name) != 0;
      if (auto l = logs.find(v.name); l != logs.end()) v.log_tail = l->second;
      s.pods.push_back(v);
    }
    s.results = results;
    s.busy_with = busyWith;
    s.claims = claims;
    s.profiles = profiles;
    s.baselines = baselines;
    s.store = store;
    return s;
  }
  Decision Decide() const {
    Decision d = op::Decide(Observe(), config, now);
    if (d.status) {
      EXPECT_TRUE(StatusFitsTheSchema(*d.status));
    }
    return d;
  }

  // Applies what a decision creates and the status it writes, as the API server would.
  void Apply(const Decision& d) {
    for (const auto& name : d.delete_pods) Remove(&pods, name);
    for (const auto& name : d.delete_results) Remove(&results, name);
    for (const auto& w : d.results) {
      if (!w.delete_pod_after.empty()) Remove(&pods, w.delete_pod_after);
      results.push_back(w.result);
    }
    for (const auto& name : d.delete_pods_after_results) Remove(&pods, name);
    for (const auto& p : d.pods) {
      Json pod = p.pod;
      pod["metadata"]["creationTimestamp"] = FormatRfc3339(now);
      if (std::none_of(pods.begin(), pods.end(),
                       [&](const Json& o) { return Name(o) == Name(pod); }))
        pods.push_back(pod);
    }
    for (const auto& c : d.claims) {
      if (auto made = ClaimOfLease(c.lease)) {
        made->resource_version = std::to_string(++claimVersion);
        claims[c.node] = *made;
      }
    }
    for (const auto& r : d.release_claims) {
      if (claims.contains(r.node) && claims[r.node].resource_version == r.resource_version) {
        claims.erase(r.node);
      }
    }
    if (d.status) validation["status"] = *d.status;
    if (d.add_finalizer) validation["metadata"]["finalizers"].push_back(kFinalizer);
  }
  static void Remove(std::vector<Json>* v, const std::string& name) {
    v->erase(std::remove_if(v->begin(), v->end(), [&](const Json& o) { return Name(o) == name; }),
             v->end());
  }
  Json* PodOn(const std::string& node) {
    for (auto& p : pods) {
      if (ViewOfPod(p).node == node && Label(p, kRunLabel) == Run()) return &p;
    }
    return nullptr;
  }
  std::string Run() const { return Observe().run; }
  // The node's pod of this run was scheduled and runs.
  void Start(const std::string& node) {
    Json* p = PodOn(node);
    ASSERT_NE(p, nullptr) << node;
    (*p)["spec"]["nodeName"] = node;
    (*p)["status"]["phase"] = "Running";
  }
  // The worker on `node` wrote its result and exited 0.
  void Finish(const std::string& node, const std::string& verdict, const std::string& reason = "",
              const std::string& run = "") {
    const std::string r = run.empty() ? Run() : run;
    const std::string pod_name = ObjectName({name(), r, node});
    for (auto& p : pods) {
      if (Name(p) == pod_name) {
        p["spec"]["nodeName"] = node;
        p["status"]["phase"] = "Succeeded";
      }
    }
    results.push_back(ResultOf(r, node, pod_name, verdict, reason));
  }
  Json ResultOf(const std::string& run, const std::string& node, const std::string& result_name,
                const std::string& verdict, const std::string& reason) const {
    return {{"metadata",
             {{"name", result_name},
              {"creationTimestamp", FormatRfc3339(now)},
              {"labels",
               {{kValidationLabel, LabelValue(name())},
                {kNodeLabel, LabelValue(node)},
                {kRunLabel, run}}}}},
            {"spec",
             {{"validation", name()},
              {"nodeName", node},
              {"run", run},
              {"worst", reason},
              {"report",
               {{"verdict", verdict},
                {"reason", reason},
                {"tests", {{{"name", "hbm-stream"}, {"verdict", verdict}}}}}}}}};
  }
  // Every worker of every pod of `run` (a narrowing round's too) finishes with the verdict
  // `verdict_of(node)`.
  void FinishRound(const std::string& run,
                   const std::function<std::string(const std::string&)>& verdict_of) {
    for (auto& p : pods) {
      const PodView v = ViewOfPod(p);
      if (v.run != run || v.terminal) continue;
      p["spec"]["nodeName"] = v.node;
      p["status"]["phase"] = "Succeeded";
      results.push_back(ResultOf(run, v.node, v.name, verdict_of(v.node), "measured"));
    }
  }
};

Json Condition(const Json& status, const std::string& type) {
  for (const auto& c : status.value("conditions", Json::array())) {
    if (c.value("type", "") == type) return c;
  }
  return Json::object();
}

std::string Env(const Json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0]["env"]) {
    if (e.value("name", "") == name) return e.value("value", "");
  }
  return "";
}

std::set<std::string> PodNodes(const Decision& d) {
  std::set<std::string> out;
  for (const auto& p : d.pods) out.insert(ViewOfPod(p.pod).node);
  return out;
}

std::map<std::string, std::string> ResultReasons(const Decision& d) {
  std::map<std::string, std::string> out;
  for (const auto& w : d.results) {
    out[w.result["spec"]["nodeName"]] = w.result["spec"]["report"].value("reason", "");
  }
  return out;
}

bool HasEvent(const Decision& d, const std::string& reason, bool after_status) {
  return std::any_of(d.events.begin(), d.events.end(), [&](const EventAction& e) {
    return e.reason == reason && e.after_status == after_status;
  });
}

// Runs the world until the decision creates nothing more, every created pod finishing with
// `verdict_of(node)`. Returns the last decision.
Decision RunToCompletion(World* w,
                         const std::function<std::string(const std::string&)>& verdict_of) {
  Decision d;
  for (int i = 0; i < 20; ++i) {
    d = w->Decide();
    EXPECT_TRUE(d.retry.ok()) << d.retry.message();
    w->Apply(d);
    if (d.status && !d.status->value("completionTime", "").empty()) return d;
    std::set<std::string> runs;
    for (const auto& p : w->pods) runs.insert(Label(p, kRunLabel));
    for (const auto& r : runs) w->FinishRound(r, verdict_of);
  }
  ADD_FAILURE() << "no completion after 20 reconciles";
  return d;
}

// ---- The end-to-end scenarios' decisions ----

// FourNodesPass: a pod per node, then PASS everywhere: Passed, 4/4, nodes labelled passed.
TEST(DecideScenario, FourNodesPass) {
  World w("smoke", StreamSpec());
  Decision d = w.Decide();
  ASSERT_TRUE(d.retry.ok()) << d.retry.message();
  EXPECT_FALSE(d.add_finalizer);
  EXPECT_EQ(PodNodes(d), (std::set<std::string>{"node-0", "node-1", "node-2", "node-3"}));
  ASSERT_TRUE(d.plan_config_map);
  EXPECT_EQ(Name(*d.plan_config_map), "smoke-g1-plan");
  EXPECT_TRUE(HasEvent(d, "Started", false));
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "Running");
  EXPECT_EQ(d.status->value("message", ""), "0 of 4 nodes done");
  EXPECT_EQ(d.status->value("progress", ""), "0/4");  // kubectl get pval's PROGRESS
  EXPECT_EQ(Condition(*d.status, "Reconciling").value("status", ""), "True");
  w.Apply(d);
  w.Finish("node-2", "PASS");
  d = w.Decide();
  EXPECT_EQ(d.status->value("progress", ""), "1/4");
  EXPECT_EQ(d.status->value("message", ""), "1 of 4 nodes done");
  w.Apply(d);
  for (int i : {0, 1, 3}) w.Finish("node-" + std::to_string(i), "PASS");
  d = w.Decide();
  EXPECT_EQ(d.status->value("progress", ""), "4/4");
  EXPECT_TRUE(d.pods.empty());
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "Passed");
  EXPECT_EQ(d.status->value("passedNodes", ""), "4/4");
  EXPECT_EQ(Condition(*d.status, "Passed").value("status", ""), "True");
  EXPECT_EQ(Condition(*d.status, "Ready").value("status", ""), "True");
  EXPECT_FALSE(d.status->value("completionTime", "").empty());
  ASSERT_EQ(d.node_verdicts.size(), 4u);
  for (const auto& v : d.node_verdicts) EXPECT_EQ(v.verdict, verdict::Verdict::kPass) << v.node;
  EXPECT_TRUE(HasEvent(d, "Completed", true));
  EXPECT_FALSE(HasEvent(d, "NodeNotPassed", true));
}

// kubectl get pval's ETA: the time the undecided nodes need from the plan's price per node,
// `parallelism` at a time; less as nodes finish, gone once the run is complete.
TEST(DecideScenario, TimeLeftShrinksAsNodesFinishAndGoesWhenComplete) {
  Json spec = StreamSpec();
  spec["policy"]["parallelism"] = 2;
  // A test of 10 s windows: about a minute per node, two rounds of it at first.
  spec["tests"] = Json::parse(R"([{"type": "burn", "parameters": {"windowSeconds": 10}}])");
  World w("eta", spec);
  auto eta_seconds = [](const std::string& eta) {
    // "~45s", "~12m", "~1h05m"
    EXPECT_EQ(eta.front(), '~') << eta;
    const auto h = eta.find('h');
    if (h != std::string::npos) {
      return std::stod(eta.substr(1, h - 1)) * 3600 + std::stod(eta.substr(h + 1)) * 60;
    }
    return std::stod(eta.substr(1)) * (eta.back() == 'm' ? 60 : 1);
  };
  Decision d = w.Decide();
  ASSERT_TRUE(d.status);
  const std::string first = d.status->value("timeLeft", "");
  ASSERT_FALSE(first.empty()) << d.status->dump();
  w.Apply(d);
  w.Finish("node-0", "PASS");
  w.Finish("node-1", "PASS");
  d = w.Decide();
  const std::string half = d.status->value("timeLeft", "");
  ASSERT_FALSE(half.empty());
  // Four nodes two at a time are two rounds; two left are one.
  EXPECT_LT(eta_seconds(half), eta_seconds(first)) << first << " then " << half;
  EXPECT_GE(eta_seconds(half), eta_seconds(first) / 2 - 5) << first << " then " << half;
  w.Apply(d);
  w.Finish("node-2", "PASS");
  w.Finish("node-3", "PASS");
  d = w.Decide();
  EXPECT_EQ(d.status->value("verdict", ""), "Passed");
  EXPECT_FALSE(d.status->contains("timeLeft"));
}

// OneSlowNodeFailsAndOnlyItIsTainted: node-2 FAIL gives Failed/TestsFailed naming node-2, and
// only node-2 gets a FAIL verdict (with the policy's taint).
TEST(DecideScenario, OneSlowNodeFailsAndOnlyItIsTainted) {
  World w("slow", StreamSpec());
  w.Apply(w.Decide());
  for (const char* n : {"node-0", "node-1", "node-3"}) w.Finish(n, "PASS");
  w.Finish("node-2", "FAIL", "hbm-stream: median triadBandwidthGBps 50 GB/s < 3840");
  const Decision d = w.Decide();
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "Failed");
  EXPECT_EQ(Condition(*d.status, "Ready").value("reason", ""), "TestsFailed");
  EXPECT_EQ(Condition(*d.status, "Stalled").value("status", ""), "True");
  EXPECT_NE(Condition(*d.status, "Passed").value("message", "").find("node-2 FAIL: hbm-stream"),
            std::string::npos);
  EXPECT_EQ(d.status->value("passedNodes", ""), "3/4");
  EXPECT_EQ(d.on_failure, "taint");
  for (const auto& v : d.node_verdicts)
    EXPECT_EQ(v.verdict, v.node == "node-2" ? verdict::Verdict::kFail : verdict::Verdict::kPass);
  EXPECT_TRUE(HasEvent(d, "NodeNotPassed", true));
  Json node = NodeObj("node-2");
  EXPECT_TRUE(MarkNode(&node, verdict::Verdict::kFail, "slow", d.on_failure));
  EXPECT_EQ(node["spec"]["taints"][0].value("key", ""), kFailedTaint);
  EXPECT_EQ(node["metadata"]["labels"].value(kVerdictLabel, ""), "failed");
}

// OperatorRestartMidRunKeepsPodsAndVerdict: a restarted operator observes the pods it made and
// creates none again.
TEST(DecideScenario, OperatorRestartMidRunCreatesNothingTwice) {
  World w("restart", StreamSpec());
  w.Apply(w.Decide());
  for (const char* n : {"node-0", "node-1", "node-2", "node-3"}) w.Start(n);
  const Decision d = w.Decide();
  EXPECT_TRUE(d.pods.empty());
  EXPECT_TRUE(d.results.empty());
  EXPECT_TRUE(d.delete_pods.empty());
  EXPECT_FALSE(HasEvent(d, "Started", false));
  EXPECT_EQ(d.status->value("message", ""), "0 of 4 nodes done");
}

// BrokenWorkersGiveErrorNotTaint: a crash, a hang past the deadline, a pod never scheduled and
// a node with too few GPUs are each the operator's ERROR with its reason; nobody FAILs.
TEST(DecideScenario, BrokenWorkersGiveErrorNotTaint) {
  std::vector<Json> nodes = Nodes(4);
  nodes.push_back(NodeObj("node-4"));
  nodes.push_back(NodeObj("node-5", 2));
  Json spec = StreamSpec();
  spec["gpusPerNode"] = 4;
  spec["policy"]["nodeTimeoutSeconds"] = 4;
  World w("broken", spec, nodes);
  Decision d = w.Decide();
  EXPECT_EQ(ResultReasons(d).at("node-5"),
            "expected 4 GPUs (spec.gpusPerNode), node has 2 allocatable nvidia.com/gpu");
  EXPECT_EQ(PodNodes(d).count("node-5"), 0u);
  w.Apply(d);
  // node-4 is never scheduled; the scheduler says why.
  Json* unscheduled = w.PodOn("node-4");
  ASSERT_NE(unscheduled, nullptr);
  (*unscheduled)["status"] = {
      {"phase", "Pending"},
      {"conditions",
       {{{"type", "PodScheduled"},
         {"status", "False"},
         {"message", "0/6 nodes are available: 1 node(s) had untolerated taint"}}}}};
  w.now = kT0 + seconds(1);
  d = w.Decide();
  EXPECT_NE(d.status->value("message", "").find("node-4 (unscheduled: 0/6 nodes"),
            std::string::npos)
      << d.status->value("message", "");
  EXPECT_EQ(d.requeue_after, std::chrono::milliseconds(2100));
  // The rest end: node-0 crashes, node-1 hangs past its deadline, node-2 and -3 pass.
  Json* crashed = w.PodOn("node-0");
  (*crashed)["spec"]["nodeName"] = "node-0";
  (*crashed)["status"] = {
      {"phase", "Failed"},
      {"containerStatuses",
       {{{"state",
          {{"terminated",
            {{"exitCode", 134}, {"reason", "Error"}, {"message", "abort: planted crash\n"}}}}}}}}};
  Json* hung = w.PodOn("node-1");
  (*hung)["spec"]["nodeName"] = "node-1";
  (*hung)["status"] = {{"phase", "Failed"}, {"reason", "DeadlineExceeded"}};
  w.Finish("node-2", "PASS");
  w.Finish("node-3", "PASS");
  w.now = kT0 + seconds(4);
  d = w.Decide();
  const auto reasons = ResultReasons(d);
  EXPECT_EQ(reasons.at("node-0"), "worker failed: exit code 134 (Error): abort: planted crash");
  EXPECT_EQ(reasons.at("node-1"),
            "worker timed out: no result within policy.nodeTimeoutSeconds=4s (pod "
            "DeadlineExceeded)");
  EXPECT_NE(reasons.at("node-4").find("worker pod not scheduled within 3s: 0/6 nodes"),
            std::string::npos);
  EXPECT_EQ(d.delete_pods_after_results, std::vector<std::string>{"broken-g1-node-4"});
  for (const auto& r : d.results) {
    EXPECT_EQ(r.result["spec"].value("writtenBy", ""), "operator");
    EXPECT_EQ(r.result["spec"]["report"].value("verdict", ""), "ERROR");
  }
  // Every node decided in this same reconcile: Error, NodeErrors, no FAIL verdict.
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "Error");
  EXPECT_EQ(Condition(*d.status, "Ready").value("reason", ""), "NodeErrors");
  for (const auto& v : d.node_verdicts) EXPECT_NE(v.verdict, verdict::Verdict::kFail) << v.node;
}

// InvalidSpecIsRefusedOrCompletesInvalid: an unknown test type completes InvalidSpec with the
// loader's message, before any pod.
TEST(DecideScenario, InvalidSpecCompletesBeforeAnyPod) {
  Json spec = StreamSpec();
  spec["tests"][0]["type"] = "no-such-test";
  World w("badtype", spec);
  const Decision d = w.Decide();
  EXPECT_TRUE(d.pods.empty());
  EXPECT_FALSE(d.plan_config_map);
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  EXPECT_EQ(Condition(*d.status, "Ready").value("reason", ""), "InvalidSpec");
  EXPECT_EQ(Condition(*d.status, "Stalled").value("status", ""), "True");
  EXPECT_EQ(Condition(*d.status, "Passed").value("status", ""), "False");
  EXPECT_NE(d.status->value("message", "").find("spec.tests[0].type"), std::string::npos)
      << d.status->value("message", "");
  EXPECT_TRUE(HasEvent(d, "InvalidSpec", true));
}

// UndecidableThresholdIsInvalidSpecBeforeAnyPod.
TEST(DecideScenario, UndecidableThresholdIsInvalidSpec) {
  Json spec = StreamSpec();
  spec["sampling"]["maxRepeats"] = 10;
  spec["tests"][0]["thresholds"] = Json::parse(
      R"([{"metric": "triadBandwidthGBps", "statistic": "p05", "op": ">=", "value": 90}])");
  World w("undecidable", spec);
  const Decision d = w.Decide();
  EXPECT_TRUE(d.pods.empty());
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  EXPECT_NE(d.status->value("message", "").find("can never PASS within maxRepeats 10"),
            std::string::npos)
      << d.status->value("message", "");
}

// LaterPassRemovesOnlyPerfgateTaint: a PASS removes perfgate's taint and keeps the others.
TEST(DecideScenario, LaterPassRemovesOnlyPerfgateTaint) {
  Json node = NodeObj("node-1");
  node["spec"]["taints"] =
      Json::parse(R"([{"key": "team", "value": "ml", "effect": "NoSchedule"}])");
  ASSERT_TRUE(MarkNode(&node, verdict::Verdict::kFail, "first", "taint"));
  ASSERT_EQ(node["spec"]["taints"].size(), 2u);
  World w("second", StreamSpec(), {node});
  w.Apply(w.Decide());
  w.Finish("node-1", "PASS");
  const Decision d = w.Decide();
  ASSERT_EQ(d.node_verdicts.size(), 1u);
  EXPECT_TRUE(MarkNode(&node, d.node_verdicts[0].verdict, "second", d.on_failure));
  ASSERT_EQ(node["spec"]["taints"].size(), 1u);
  EXPECT_EQ(node["spec"]["taints"][0].value("key", ""), "team");
  EXPECT_EQ(node["metadata"]["labels"].value(kVerdictLabel, ""), "passed");
  EXPECT_FALSE(node["metadata"]["annotations"].contains(kTaintedByAnnotation));
}

// ValidationAndNodeWithNamesLongerThan63Characters: names and labels stay valid and the run
// is announced under one key.
TEST(DecideScenario, NamesLongerThan63Characters) {
  const std::string node = "gpu-7.rack-42.zone-b.datacenter-east.gpu-fleet.example-cloud.internal";
  const std::string name =
      "nightly-acceptance-of-the-h200-fleet-after-the-driver-upgrade-in-zone-b";
  Json spec = StreamSpec();
  spec.erase("nodeSelector");
  spec["nodes"] = {node, "node-0"};
  World w(name, spec, {NodeObj(node), NodeObj("node-0")});
  const Decision d = w.Decide();
  ASSERT_EQ(d.pods.size(), 2u);
  for (const auto& p : d.pods) {
    EXPECT_LE(Name(p.pod).size(), 63u);
    for (const auto& [k, v] : p.pod["metadata"]["labels"].items()) {
      EXPECT_LE(v.get<std::string>().size(), 63u) << k;
    }
    EXPECT_EQ(Env(p.pod, "PERFGATE_VALIDATION"), name);  // the full name, not the label
  }
  EXPECT_EQ(PodNodes(d), (std::set<std::string>{node, "node-0"}));
  EXPECT_LE(Name(*d.plan_config_map).size(), 63u);
  for (const auto& e : d.events) {
    if (e.reason == "Started") {
      EXPECT_EQ(e.once_key, name + "/g1");
    }
  }
}

// CordonedFailedNodeIsRetestedAndReleasedOnPass: perfgate's own cordon does not exclude the
// node, and a PASS lifts it.
TEST(DecideScenario, CordonedFailedNodeIsRetestedAndReleasedOnPass) {
  std::vector<Json> nodes = Nodes(4);
  ASSERT_TRUE(MarkNode(&nodes[2], verdict::Verdict::kFail, "cordon", "taintAndCordon"));
  ASSERT_TRUE(nodes[2]["spec"].value("unschedulable", false));
  Json spec = StreamSpec();
  spec["policy"]["onFailure"] = "taintAndCordon";
  World w("retest", spec, nodes);
  const Decision d = w.Decide();
  EXPECT_EQ(PodNodes(d).count("node-2"), 1u);
  // The pod tolerates the cordon and perfgate's taint.
  std::set<std::string> tolerated;
  for (const auto& p : d.pods) {
    for (const auto& t : p.pod["spec"]["tolerations"]) tolerated.insert(t.value("key", ""));
  }
  EXPECT_TRUE(tolerated.count("node.kubernetes.io/unschedulable"));
  EXPECT_TRUE(tolerated.count(kFailedTaint));
  EXPECT_TRUE(MarkNode(&nodes[2], verdict::Verdict::kPass, "retest", "taintAndCordon"));
  EXPECT_FALSE(nodes[2]["spec"].value("unschedulable", true));
  EXPECT_FALSE(nodes[2]["spec"].contains("taints"));
}

// DeletingEveryValidationLeavesNoVerdictLabel: deletion deletes the pods, releases the verdict
// labels the validation set (not where it left its own taint), then drops the finalizer.
TEST(DecideScenario, DeletionReleasesLabelsThenTheFinalizer) {
  std::vector<Json> nodes = Nodes(4);
  ASSERT_TRUE(MarkNode(&nodes[0], verdict::Verdict::kPass, "tainter", "taint"));
  ASSERT_TRUE(MarkNode(&nodes[2], verdict::Verdict::kFail, "tainter", "taint"));
  ASSERT_TRUE(MarkNode(&nodes[3], verdict::Verdict::kPass, "other", "taint"));
  World w("tainter", StreamSpec(), nodes);
  w.Apply(w.Decide());
  w.validation["metadata"]["deletionTimestamp"] = "2026-12-01T12:01:00Z";
  const Decision d = w.Decide();
  EXPECT_EQ(d.delete_pods.size(), 4u);
  EXPECT_EQ(d.release_nodes, std::vector<std::string>{"node-0"});
  EXPECT_TRUE(d.remove_finalizer);
  EXPECT_FALSE(d.status);
  ReleaseNode(&nodes[0]);
  EXPECT_FALSE(nodes[0]["metadata"]["labels"].contains(kVerdictLabel));
  EXPECT_FALSE(nodes[0]["metadata"]["annotations"].contains(kVerdictByAnnotation));
}

// NodeWithoutSpecIsTestedLikeAnyOther.
TEST(DecideScenario, NodeWithoutSpecIsTestedLikeAnyOther) {
  std::vector<Json> nodes = Nodes(4);
  Json bare = NodeObj("bare");
  bare.erase("spec");
  nodes.push_back(bare);
  World w("bare", StreamSpec(), nodes);
  const Decision d = w.Decide();
  EXPECT_EQ(PodNodes(d).count("bare"), 1u);
  EXPECT_TRUE(MarkNode(&bare, verdict::Verdict::kPass, "bare", "taintAndCordon"));
  EXPECT_EQ(bare["metadata"]["labels"].value(kVerdictLabel, ""), "passed");
}

// WorkerPodsMeetRestrictedPodSecurity.
TEST(DecideScenario, WorkerPodsMeetRestrictedPodSecurity) {
  World w("restricted", StreamSpec());
  const Decision d = w.Decide();
  ASSERT_EQ(d.pods.size(), 4u);
  for (const auto& p : d.pods) {
    const Json& spec = p.pod["spec"];
    EXPECT_EQ(spec["securityContext"]["seccompProfile"].value("type", ""), "RuntimeDefault");
    EXPECT_TRUE(spec["securityContext"].value("runAsNonRoot", false));
    EXPECT_FALSE(spec.contains("hostNetwork"));
    const Json& c = spec["containers"][0];
    EXPECT_FALSE(c["securityContext"].value("allowPrivilegeEscalation", true));
    EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], Json::array({"ALL"}));
    EXPECT_FALSE(c["securityContext"]["capabilities"].contains("add"));
    EXPECT_EQ(spec["volumes"].size(), 1u);
  }
}

// SuspendRerunKeepResultsAndDelete, suspended: no pods, Suspended, Reconciling False.
TEST(DecideScenario, SuspendedStartsNothing) {
  Json spec = StreamSpec();
  spec["suspend"] = true;
  World w("life", spec);
  const Decision d = w.Decide();
  EXPECT_TRUE(d.pods.empty());
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "Suspended");
  EXPECT_EQ(Condition(*d.status, "Reconciling").value("status", ""), "False");
  EXPECT_EQ(Condition(*d.status, "Complete").value("status", ""), "False");
  EXPECT_EQ(d.status->value("message", "").rfind("suspended: ", 0), 0u);
}

// SuspendRerunKeepResultsAndDelete, reruns: a new rerun token starts a new run; the previous
// plan goes, and results of runs past keepResults go.
TEST(DecideScenario, RerunKeepsResultsOfTheNewestRuns) {
  Json spec = StreamSpec();
  spec["policy"]["keepResults"] = 1;
  World w("life", spec);
  RunToCompletion(&w, [](const std::string&) { return "PASS"; });
  const std::string run1 = w.Run();
  w.validation["metadata"]["annotations"][kRerunAnnotation] = "1";
  Decision d = RunToCompletion(&w, [](const std::string&) { return "PASS"; });
  const std::string run2 = w.Run();
  ASSERT_NE(run1, run2);
  EXPECT_EQ(w.results.size(), 8u);  // this run's 4 and the previous run's 4
  w.validation["metadata"]["annotations"][kRerunAnnotation] = "2";
  w.now += seconds(10);
  d = w.Decide();
  EXPECT_EQ(d.delete_plan, ObjectName({"life", run2, "plan"}));
  EXPECT_EQ(d.delete_results.size(), 4u);
  for (const auto& r : d.delete_results) EXPECT_NE(r.find(run1), std::string::npos) << r;
  EXPECT_EQ(d.delete_pods.size(), 4u);  // run2's finished pods
  EXPECT_TRUE(HasEvent(d, "Started", false));
  EXPECT_EQ(d.status->value("run", ""), w.Run());
  EXPECT_EQ(d.status->value("message", ""), "0 of 4 nodes done");
}

Json Profile(const std::string& name, const std::string& model) {
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"version", "2026.11-1"},
            {"gpuModels", {model}},
            {"quick",
             {{"sampling", {{"warmup", 1}, {"minRepeats", 5}, {"maxRepeats", 20}}},
              {"tests", {{{"type", "hbm-stream"}}}}}}}}};
}

// ProfileFromClusterIsResolvedIntoThePlan: a named profile's tests go into the plan and its
// name and version into the status.
TEST(DecideScenario, ProfileFromClusterIsResolvedIntoThePlan) {
  Json spec = StreamSpec();
  spec.erase("tests");
  spec.erase("sampling");
  spec["profile"] = "sim-gpu";
  World w("profiled", spec);
  w.profiles.by_name["sim-gpu"] = Profile("sim-gpu", "NVIDIA H200");
  const Decision d = w.Decide();
  ASSERT_TRUE(d.plan_config_map) << d.status->dump(2);
  const std::string plan = (*d.plan_config_map)["data"]["plan.yaml"];
  EXPECT_NE(plan.find("hbm-stream"), std::string::npos) << plan;
  EXPECT_NE(plan.find("2026.11-1"), std::string::npos) << plan;
  EXPECT_EQ(d.status->value("profile", ""), "sim-gpu");
  EXPECT_EQ(d.status->value("profileVersion", ""), "2026.11-1");
}

// A named profile missing from the cluster is an invalid spec naming it.
TEST(DecideScenario, MissingNamedProfileIsInvalidSpec) {
  Json spec = StreamSpec();
  spec.erase("tests");
  spec["profile"] = "nowhere";
  World w("missing", spec);
  const Decision d = w.Decide();
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  EXPECT_NE(d.status->value("message", "").find("PerfProfile \"nowhere\" not found"),
            std::string::npos);
}

// ImpossibleGpusPerNodeIsInvalidSpecNamingTheNodes.
TEST(DecideScenario, ImpossibleGpusPerNodeIsInvalidSpecNamingTheNodes) {
  Json spec = StreamSpec();
  spec["gpusPerNode"] = 16;
  World w("toomany", spec);
  const Decision d = w.Decide();
  EXPECT_TRUE(d.pods.empty());
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  EXPECT_NE(d.status->value("message", "").find("node-0 has 8"), std::string::npos)
      << d.status->value("message", "");
}

// NamedProfileOfAnotherModelIsInvalidSpecNamingNodesAndModels.
TEST(DecideScenario, NamedProfileOfAnotherModelIsInvalidSpec) {
  Json spec = StreamSpec();
  spec.erase("tests");
  spec.erase("sampling");
  spec["profile"] = "b200";
  World w("othermodel", spec);
  w.profiles.by_name["b200"] = Profile("b200", "NVIDIA B200");
  const Decision d = w.Decide();
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  const std::string msg = d.status->value("message", "");
  EXPECT_NE(msg.find("is for GPU models NVIDIA B200"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node-0 (NVIDIA-H200)"), std::string::npos) << msg;
}

// AutoPicksShippedProfilesFromGfdLabels: `profile: auto` picks by the nodes' model, and the
// status and a GpuModels event say which nodes have it.
TEST(DecideScenario, AutoPicksTheProfileOfTheNodesModel) {
  Json spec = StreamSpec();
  spec.erase("tests");
  spec.erase("sampling");
  spec["profile"] = "auto";
  World w("auto", spec);
  w.profiles.by_name["h200"] = Profile("h200", "NVIDIA H200");
  w.profiles.by_name["b200"] = Profile("b200", "NVIDIA B200");
  w.profiles.listed = true;
  const Decision d = w.Decide();
  ASSERT_TRUE(d.retry.ok()) << d.retry.message();
  EXPECT_EQ(d.status->value("profile", ""), "h200") << d.status->dump(2);
  EXPECT_NE(d.status->value("gpuModels", "").find("NVIDIA-H200: node-0, node-1, node-2, node-3"),
            std::string::npos)
      << d.status->value("gpuModels", "");
  EXPECT_TRUE(HasEvent(d, "GpuModels", false));
  EXPECT_EQ(d.pods.size(), 4u);
}

// AutoRefusesCloudNodesItCannotCertify: nodes of two models are refused, naming both.
TEST(DecideScenario, AutoRefusesMixedModels) {
  Json spec = StreamSpec();
  spec.erase("tests");
  spec["profile"] = "auto";
  std::vector<Json> nodes = Nodes(2);
  nodes.push_back(NodeObj("b-0", 8, "NVIDIA-B200"));
  World w("mixed", spec, nodes);
  w.profiles.listed = true;
  const Decision d = w.Decide();
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  EXPECT_NE(d.status->value("message", "").find("different GPU models"), std::string::npos)
      << d.status->value("message", "");
}

// GangOfFourPasses: one gang, ranks in sorted node order, one address, a headless Service,
// fixed sampling in the plan.
TEST(DecideScenario, GangOfFourPasses) {
  World w("gang", GangSpec("all"));
  Decision d = w.Decide();
  ASSERT_TRUE(d.retry.ok()) << d.retry.message();
  ASSERT_EQ(d.pods.size(), 4u) << (d.status ? d.status->dump(2) : "");
  std::set<std::string> comm;
  for (const auto& p : d.pods) {
    const std::string node = ViewOfPod(p.pod).node;
    EXPECT_EQ(Env(p.pod, "PERFGATE_GANG_SIZE"), "4");
    EXPECT_EQ(Env(p.pod, "PERFGATE_GANG_RANK"), node.substr(node.size() - 1));
    // The gang's nodes by rank: a per-rail failure names the peer it was paired with.
    EXPECT_EQ(Env(p.pod, "PERFGATE_GANG_NODES"), "node-0,node-1,node-2,node-3");
    comm.insert(Env(p.pod, "NCCL_COMM_ID"));
    EXPECT_TRUE(p.rendezvous_gang.empty());
  }
  ASSERT_EQ(comm.size(), 1u);
  EXPECT_EQ(*comm.begin(), "gang-g1-gang0-r0.gang-g1-gang0.perfgate-system.svc:29500");
  ASSERT_EQ(d.services.size(), 1u);
  EXPECT_EQ(Name(d.services[0]), "gang-g1-gang0");
  EXPECT_NE((*d.plan_config_map)["data"].value("plan.yaml", "").find("\"method\":\"fixed\""),
            std::string::npos);
  w.Apply(d);
  for (int i = 0; i < 4; ++i) w.Finish("node-" + std::to_string(i), "PASS");
  d = w.Decide();
  EXPECT_EQ(d.status->value("verdict", ""), "Passed");
  EXPECT_EQ(d.status->value("gangs", 0), 1);
}

// GangPairsUnderMaxUnavailableStartOneGangAtATime: pairs on four nodes with
// maxUnavailable 2: one whole pair runs, the other waits for its turn; once the first is done
// the second starts. A gang of all four under maxUnavailable 2 can never start: InvalidSpec.
TEST(DecideScenario, GangPairsUnderMaxUnavailableStartOneGangAtATime) {
  Json spec = GangSpec("pairs");
  spec["disruption"] = {{"maxUnavailable", "2"}};
  World w("pairs-limited", spec);
  Decision d = w.Decide();
  ASSERT_TRUE(d.retry.ok()) << d.retry.message();
  std::set<std::string> started;
  for (const auto& p : d.pods) started.insert(ViewOfPod(p.pod).node);
  EXPECT_EQ(started, (std::set<std::string>{"node-0", "node-1"})) << d.status->dump(2);
  EXPECT_NE(d.status->value("message", "")
                .find("gang of 2 nodes node-2, node-3 (waiting for its turn: "
                      "spec.disruption.maxUnavailable=2, 2 selected nodes under test)"),
            std::string::npos)
      << d.status->dump(2);
  w.Apply(d);
  w.Start("node-0");
  w.Start("node-1");
  d = w.Decide();
  EXPECT_TRUE(d.pods.empty());
  w.Apply(d);
  w.Finish("node-0", "PASS");
  w.Finish("node-1", "PASS");
  d = w.Decide();
  started.clear();
  for (const auto& p : d.pods) started.insert(ViewOfPod(p.pod).node);
  EXPECT_EQ(started, (std::set<std::string>{"node-2", "node-3"}));

  Json all = GangSpec("all");
  all["disruption"] = {{"maxUnavailable", "2"}};
  World w2("all-limited", all);
  d = w2.Decide();
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  EXPECT_NE(d.status->value("message", "").find("spec.gang needs 4 nodes"), std::string::npos)
      << d.status->dump(2);
  EXPECT_NE(d.status->value("message", "").find("maxUnavailable=\"2\" allows 2"),
            std::string::npos);
  EXPECT_TRUE(d.pods.empty());
}

// Probes under maxUnavailable 2: each probe holds two nodes, so one runs at a time (four
// rounds for four suspects), never more nodes under test than the limit.
TEST(DecideScenario, GangProbesUnderMaxUnavailableRunOneAtATime) {
  Json spec = GangSpec("pairs");
  spec["disruption"] = {{"maxUnavailable", "2"}};
  World w("probes-limited", spec, Nodes(6));
  // The pairs in their turns: node-0/1 pass, node-2/3 and node-4/5 fail.
  for (int turn = 0; turn < 3; ++turn) {
    Decision d = w.Decide();
    ASSERT_EQ(d.pods.size(), 2u) << "turn " << turn << ": " << d.status->dump(2);
    w.Apply(d);
    for (const auto& p : d.pods) {
      const std::string n = ViewOfPod(p.pod).node;
      w.Finish(n, n == "node-0" || n == "node-1" ? "PASS" : "FAIL");
    }
  }
  Decision d = w.Decide();
  ASSERT_EQ(d.pods.size(), 2u) << d.status->dump(2);
  for (const auto& p : d.pods) EXPECT_EQ(Label(p.pod, kRunLabel), "g1-probe");
  EXPECT_NE(d.status->value("message", "").find("(round 1 of 4)"), std::string::npos)
      << d.status->dump(2);
}

// With --gang-rendezvous-host the ranks meet at an address Act picks, the same for the gang.
TEST(DecideScenario, GangAtRendezvousHostLeavesThePortToAct) {
  World w("gang", GangSpec("pairs"));
  w.config.gang_rendezvous_host = "127.0.0.1";
  const Decision d = w.Decide();
  ASSERT_EQ(d.pods.size(), 4u);
  EXPECT_TRUE(d.services.empty());
  std::set<std::string> gangs;
  for (const auto& p : d.pods) {
    EXPECT_EQ(Env(p.pod, "NCCL_COMM_ID"), "");
    gangs.insert(p.rendezvous_gang);
  }
  EXPECT_EQ(gangs, (std::set<std::string>{"gang-g1-gang0", "gang-g1-gang1"}));
}

// GangWithUnschedulablePodFailsAsOne: node-4's pod is never scheduled; every member gets the
// gang's ERROR (the running ones' pods deleted first), nobody FAILs.
TEST(DecideScenario, GangWithUnschedulablePodFailsAsOne) {
  World w("gang-broken", GangSpec("all"), Nodes(5));
  w.Apply(w.Decide());
  for (int i = 0; i < 4; ++i) w.Start("node-" + std::to_string(i));
  w.now = kT0 + seconds(3);
  const Decision d = w.Decide();
  const auto reasons = ResultReasons(d);
  ASSERT_EQ(reasons.size(), 5u);
  EXPECT_EQ(reasons.at("node-4").rfind("worker pod not scheduled within 3s", 0), 0u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(reasons.at("node-" + std::to_string(i))
                  .rfind("gang of 5: node-4 ERROR: worker pod not scheduled", 0),
              0u);
  }
  for (const auto& r : d.results) {
    const std::string node = r.result["spec"]["nodeName"];
    EXPECT_EQ(r.delete_pod_after.empty(), node == "node-4") << node;
  }
  EXPECT_EQ(d.status->value("verdict", ""), "Error");
  EXPECT_NE(d.status->value("message", "").find("gang of 5: node-4 ERROR"), std::string::npos);
  for (const auto& v : d.node_verdicts) EXPECT_EQ(v.verdict, verdict::Verdict::kError);
}

// GangPairsFailOnlyTheirOwnPair: five nodes make (0,1) and (2,3,4); a scheduling ERROR names
// no suspect.
TEST(DecideScenario, GangPairsFailOnlyTheirOwnPair) {
  World w("pairs", GangSpec("pairs"), Nodes(5));
  Decision d = w.Decide();
  std::map<std::string, std::string> size_of;
  for (const auto& p : d.pods) size_of[ViewOfPod(p.pod).node] = Env(p.pod, "PERFGATE_GANG_SIZE");
  EXPECT_EQ(
      size_of,
      (std::map<std::string, std::string>{
          {"node-0", "2"}, {"node-1", "2"}, {"node-2", "3"}, {"node-3", "3"}, {"node-4", "3"}}));
  w.Apply(d);
  w.Finish("node-0", "PASS");
  w.Finish("node-1", "PASS");
  w.Start("node-2");
  w.Start("node-3");
  w.now = kT0 + seconds(5);
  d = w.Decide();
  EXPECT_EQ(d.status->value("passedNodes", ""), "2/5");
  EXPECT_EQ(d.status->value("gangs", 0), 2);
  EXPECT_FALSE(d.status->contains("suspectNodes"));
  EXPECT_NE(ResultReasons(d).at("node-2").find("gang of 3: node-4 ERROR"), std::string::npos);
  EXPECT_TRUE(d.pods.empty());  // an ERROR is not narrowed down
}

// GangPairsNameTheSlowNodeAsSuspect: pair (2,3) fails; each of its nodes runs again beside a
// node that passed (run "<run>-probe"), and only the one whose probe fails stays a suspect.
TEST(DecideScenario, GangPairsNameTheSlowNodeAsSuspect) {
  World w("narrow", GangSpec("pairs"));
  w.Apply(w.Decide());
  for (const char* n : {"node-0", "node-1"}) w.Finish(n, "PASS");
  for (const char* n : {"node-2", "node-3"}) w.Finish(n, "FAIL");
  Decision d = w.Decide();
  ASSERT_EQ(d.pods.size(), 4u);
  std::map<std::string, std::string> gang_of;
  for (const auto& p : d.pods) {
    EXPECT_EQ(Label(p.pod, kRunLabel), "g1-probe");
    gang_of[ViewOfPod(p.pod).node] = Label(p.pod, kGangLabel);
  }
  EXPECT_EQ(gang_of["node-0"], gang_of["node-2"]);
  EXPECT_EQ(gang_of["node-1"], gang_of["node-3"]);
  EXPECT_EQ(d.status->value("verdict", ""), "Running");
  EXPECT_EQ(d.status->value("message", "").rfind("narrowing down: 2 suspect node(s)", 0), 0u);
  EXPECT_EQ(d.requeue_after, seconds(1));
  w.Apply(d);
  // A probe pairs a suspect with a passing node: the pair's verdict is both members'.
  w.FinishRound("g1-probe", [&](const std::string& n) {
    return n == "node-0" || n == "node-2" ? "FAIL" : "PASS";
  });
  d = w.Decide();
  EXPECT_TRUE(d.pods.empty());
  EXPECT_EQ(d.status->value("suspectNodes", Json::array()), Json::array({"node-2"}));
  EXPECT_EQ(d.status->value("passedNodes", ""), "2/4");
  EXPECT_TRUE(HasEvent(d, "SuspectNodes", true));
}

// GangAllFailureNarrowsByPairsToTheSlowNode: the failing gang of four runs again in pairs,
// then probes; the gang's own verdict stands (0/4).
TEST(DecideScenario, GangAllFailureNarrowsByPairsToTheSlowNode) {
  World w("narrow-all", GangSpec("all"));
  w.Apply(w.Decide());
  for (int i = 0; i < 4; ++i) w.Finish("node-" + std::to_string(i), "FAIL");
  Decision d = w.Decide();
  ASSERT_EQ(d.pods.size(), 4u);
  for (const auto& p : d.pods) EXPECT_EQ(Label(p.pod, kRunLabel), "g1-pairs");
  EXPECT_EQ(d.status->value("message", ""),
            "narrowing down: the gang of 4 failed; its nodes run again in 2 pairs (2 running)");
  w.Apply(d);
  w.FinishRound("g1-pairs", [](const std::string& n) {
    return n == "node-2" || n == "node-3" ? "FAIL" : "PASS";
  });
  d = w.Decide();
  ASSERT_EQ(d.pods.size(), 4u);
  for (const auto& p : d.pods) EXPECT_EQ(Label(p.pod, kRunLabel), "g1-probe");
  w.Apply(d);
  w.FinishRound("g1-probe", [](const std::string& n) {
    return n == "node-0" || n == "node-2" ? "FAIL" : "PASS";
  });
  d = w.Decide();
  EXPECT_EQ(d.status->value("suspectNodes", Json::array()), Json::array({"node-2"}));
  EXPECT_EQ(d.status->value("passedNodes", ""), "0/4");
  EXPECT_EQ(
      d.status->value("message", "").rfind("suspect nodes (narrowed down by pairs): node-2; ", 0),
      0u);
}

// GangProbesRunInRoundsWhenSuspectsOutnumberPassingNodes.
TEST(DecideScenario, GangProbesRunInRounds) {
  World w("rounds", GangSpec("pairs"), Nodes(6));
  auto slow = [](const std::string& n) { return n == "node-2" || n == "node-4"; };
  w.Apply(w.Decide());
  for (int i = 0; i < 6; ++i) {
    const std::string n = "node-" + std::to_string(i);
    w.Finish(n, i < 2 ? "PASS" : "FAIL");
  }
  Decision d = w.Decide();
  std::set<std::string> round1;
  for (const auto& p : d.pods) round1.insert(ViewOfPod(p.pod).node);
  EXPECT_EQ(round1, (std::set<std::string>{"node-0", "node-1", "node-2", "node-3"}));
  EXPECT_NE(d.status->value("message", "").find("(round 1 of 2)"), std::string::npos);
  w.Apply(d);
  // A probe's gang fails as a whole when its suspect is slow.
  auto probe_verdicts = [&](const std::string& run) {
    std::map<std::string, std::string> gang_verdict;
    for (const auto& p : w.pods) {
      const PodView v = ViewOfPod(p);
      if (v.run == run && slow(v.node)) gang_verdict[Label(p, kGangLabel)] = "FAIL";
    }
    return [&, gang_verdict, run](const std::string& n) {
      for (const auto& p : w.pods) {
        const PodView v = ViewOfPod(p);
        if (v.run == run && v.node == n) {
          auto it = gang_verdict.find(Label(p, kGangLabel));
          return std::string(it == gang_verdict.end() ? "PASS" : "FAIL");
        }
      }
      return std::string("PASS");
    };
  };
  w.FinishRound("g1-probe", probe_verdicts("g1-probe"));
  d = w.Decide();
  std::set<std::string> round2;
  for (const auto& p : d.pods) {
    EXPECT_EQ(Label(p.pod, kRunLabel), "g1-probe2");
    round2.insert(ViewOfPod(p.pod).node);
  }
  EXPECT_EQ(round2, (std::set<std::string>{"node-0", "node-1", "node-4", "node-5"}));
  w.Apply(d);
  w.FinishRound("g1-probe2", probe_verdicts("g1-probe2"));
  d = w.Decide();
  EXPECT_EQ(d.status->value("suspectNodes", Json::array()), Json::array({"node-2", "node-4"}));
}

// GangPairsWithoutNarrowingNameTheFailingPair.
TEST(DecideScenario, GangPairsWithoutNarrowingNameTheFailingPair) {
  World w("nonarrow", GangSpec("pairs", "none"));
  w.Apply(w.Decide());
  for (const char* n : {"node-0", "node-1"}) w.Finish(n, "PASS");
  for (const char* n : {"node-2", "node-3"}) w.Finish(n, "FAIL");
  const Decision d = w.Decide();
  EXPECT_TRUE(d.pods.empty());
  EXPECT_EQ(d.status->value("suspectNodes", Json::array()), Json::array({"node-2", "node-3"}));
  EXPECT_FALSE(d.status->value("completionTime", "").empty());
}

// GangNetworkOptionsReachThePods.
TEST(DecideScenario, GangNetworkOptionsReachThePods) {
  Json spec = GangSpec("all");
  spec["gang"]["network"] = Json::parse(R"({
    "socketIfname": "eth0", "ibHca": "mlx5_0", "hostNetwork": true,
    "resources": {"rdma/rdma_shared_device_a": 1},
    "env": {"NCCL_DEBUG": "INFO", "FI_PROVIDER": "efa"},
    "podAnnotations": {"k8s.v1.cni.cncf.io/networks": "rdma-net"}})");
  World w("net", spec, Nodes(2));
  const Decision d = w.Decide();
  ASSERT_EQ(d.pods.size(), 2u) << d.status->dump(2);
  for (const auto& p : d.pods) {
    EXPECT_EQ(Env(p.pod, "NCCL_SOCKET_IFNAME"), "eth0");
    EXPECT_EQ(Env(p.pod, "NCCL_IB_HCA"), "mlx5_0");
    EXPECT_EQ(Env(p.pod, "NCCL_DEBUG"), "INFO");
    EXPECT_EQ(Env(p.pod, "FI_PROVIDER"), "efa");
    EXPECT_EQ(p.pod["spec"]["containers"][0]["resources"]["limits"].value(
                  "rdma/rdma_shared_device_a", ""),
              "1");
    EXPECT_TRUE(p.pod["spec"].value("hostNetwork", false));
    EXPECT_EQ(p.pod["spec"].value("dnsPolicy", ""), "ClusterFirstWithHostNet");
    EXPECT_EQ(p.pod["metadata"]["annotations"].value("k8s.v1.cni.cncf.io/networks", ""),
              "rdma-net");
    EXPECT_EQ(p.pod["spec"]["containers"][0]["securityContext"]["capabilities"]["add"],
              Json::array({"IPC_LOCK"}));
  }
}

// ---- Edge cases ----

// A node that vanishes mid-run: its node's ERROR, written by the operator.
TEST(DecideEdge, NodeThatVanishesMidRunIsAnError) {
  World w("vanish", StreamSpec());
  Json spec = StreamSpec();
  spec.erase("nodeSelector");
  spec["nodes"] = {"node-0", "node-1"};
  w.validation["spec"] = spec;
  w.Apply(w.Decide());
  w.Start("node-0");
  w.Start("node-1");
  w.nodes.erase(w.nodes.begin() + 1);  // node-1 is gone
  const Decision d = w.Decide();
  EXPECT_EQ(ResultReasons(d),
            (std::map<std::string, std::string>{{"node-1", "node node-1 does not exist"}}));
  EXPECT_EQ(d.status->value("message", ""), "1 of 2 nodes done");
}

// A result for a stale run decides nothing in the current one.
TEST(DecideEdge, ResultOfAStaleRunIsIgnored) {
  World w("stale", StreamSpec());
  w.validation["metadata"]["generation"] = 2;
  w.results.push_back(w.ResultOf("g1", "node-0", "stale-g1-node-0", "FAIL", "old"));
  w.validation["status"] = {{"run", "g1"}, {"completionTime", "2026-12-01T11:00:00Z"}};
  const Decision d = w.Decide();
  EXPECT_EQ(PodNodes(d).count("node-0"), 1u);  // node-0 is tested again
  EXPECT_EQ(d.delete_results, std::vector<std::string>{"stale-g1-node-0"});  // keepResults 0
  EXPECT_EQ(d.delete_plan, "stale-g1-plan");
  EXPECT_EQ(d.status->value("pending", 0), 4);
  EXPECT_FALSE(d.status->contains("completionTime"));
}

// A pod that never starts waits, with the requeue at the scheduling timeout, then is an ERROR
// and deleted.
TEST(DecideEdge, PodThatNeverStartsTimesOut) {
  World w("never", StreamSpec(), Nodes(1));
  w.Apply(w.Decide());
  w.now = kT0 + seconds(1);
  Decision d = w.Decide();
  EXPECT_TRUE(d.results.empty());
  EXPECT_EQ(d.requeue_after, std::chrono::milliseconds(2100));
  w.now = kT0 + seconds(3);
  d = w.Decide();
  ASSERT_EQ(d.results.size(), 1u);
  EXPECT_EQ(ResultReasons(d).at("node-0"), "worker pod not scheduled within 3s");
  EXPECT_EQ(d.delete_pods_after_results, std::vector<std::string>{"never-g1-node-0"});
  EXPECT_EQ(d.status->value("verdict", ""), "Error");
}

// A spec change mid-run (a new generation): the old run's pods go, the new run starts.
TEST(DecideEdge, SpecChangeMidRunStartsANewRun) {
  World w("change", StreamSpec());
  w.Apply(w.Decide());
  w.Start("node-0");
  w.validation["metadata"]["generation"] = 2;
  w.validation["spec"]["policy"]["parallelism"] = 1;
  const Decision d = w.Decide();
  EXPECT_EQ(d.delete_pods.size(), 4u);
  EXPECT_EQ(d.delete_plan, "change-g1-plan");
  ASSERT_EQ(d.pods.size(), 1u);  // parallelism 1
  EXPECT_EQ(Label(d.pods[0].pod, kRunLabel), "g2");
  EXPECT_EQ(d.status->value("run", ""), "g2");
  EXPECT_EQ(d.status->value("observedGeneration", 0), 2);
}

// A long validation name on a long node name: names at most 63 characters, distinct.
TEST(DecideEdge, LongNamesStayDistinctAndBounded) {
  const std::string name(120, 'v');
  std::vector<Json> nodes = {NodeObj(std::string(100, 'n') + "-a"),
                             NodeObj(std::string(100, 'n') + "-b")};
  World w(name, StreamSpec(), nodes);
  const Decision d = w.Decide();
  ASSERT_EQ(d.pods.size(), 2u);
  EXPECT_NE(Name(d.pods[0].pod), Name(d.pods[1].pod));
  EXPECT_LE(Name(d.pods[0].pod).size(), 63u);
  EXPECT_EQ(Label(d.pods[0].pod, kValidationLabel), LabelValue(name));
}

// A node whose Node object has no spec is selected and its pod built.
TEST(DecideEdge, NodeWithoutSpecOrLabelsIsNamedAndTested) {
  Json bare = {{"metadata", {{"name", "bare"}}},
               {"status", {{"allocatable", {{"nvidia.com/gpu", 8}}}}}};
  Json spec = StreamSpec();
  spec.erase("nodeSelector");
  spec["nodes"] = {"bare"};
  World w("bare", spec, {bare});
  const Decision d = w.Decide();
  EXPECT_EQ(PodNodes(d), std::set<std::string>{"bare"});
  EXPECT_EQ(
      d.pods[0].pod["spec"]["containers"][0]["resources"]["limits"].value("nvidia.com/gpu", ""),
      "8");
}

// A worker's result the cache has not seen yet: not an ERROR; look again soon.
TEST(DecideEdge, ResultInTheApiButNotTheCacheIsAwaited) {
  World w("lag", StreamSpec(), Nodes(1));
  w.Apply(w.Decide());
  Json* pod = w.PodOn("node-0");
  (*pod)["spec"]["nodeName"] = "node-0";
  (*pod)["status"]["phase"] = "Succeeded";
  w.resultsInApi.insert(Name(*pod));
  Decision d = w.Decide();
  EXPECT_TRUE(d.results.empty());
  EXPECT_EQ(d.requeue_after, std::chrono::milliseconds(200));
  // Without it: exited 0 without a result.
  w.resultsInApi.clear();
  d = w.Decide();
  EXPECT_EQ(ResultReasons(d).at("node-0"), "worker exited 0 without writing its PerfResult");
}

// A crashed worker without a termination message: the last log lines say why.
TEST(DecideEdge, CrashedWorkerWithoutMessageQuotesItsLog) {
  World w("crash", StreamSpec(), Nodes(1));
  w.Apply(w.Decide());
  Json* pod = w.PodOn("node-0");
  (*pod)["spec"]["nodeName"] = "node-0";
  (*pod)["status"] = {{"phase", "Failed"},
                      {"containerStatuses",
                       {{{"state", {{"terminated", {{"exitCode", 139}, {"reason", "Error"}}}}}}}}};
  w.logs[Name(*pod)] = "cudaMalloc failed\nsegfault\n";
  const Decision d = w.Decide();
  EXPECT_EQ(ResultReasons(d).at("node-0"),
            "worker failed: exit code 139 (Error): cudaMalloc failed\nsegfault");
}

// A worker that measured FAIL but could not write its result (the API server down past its
// retries) left the verdict in its termination message: the node FAILs, not ERRORs, and the
// result says where it came from. A message of another run or node is not taken.
TEST(DecideEdge, VerdictInTheTerminationMessageIsTheNodesResult) {
  World w("lost", StreamSpec(), Nodes(2));
  w.Apply(w.Decide());
  termination::NodeResult r;
  r.validation = "lost";
  r.run = w.Run();
  r.report.set_verdict(v1alpha1::FAIL);
  r.report.set_reason("hbm-stream [gpu0]: triadBandwidthGBps median 3100 below 3840");
  r.worst = "hbm-stream gpu0 triadBandwidthGBps median 3100 (>= 3840)";
  r.note = "cannot write the PerfResult: 500";
  r.node_name = "node-0";  // node-1's pod carries node-0's message: not its own result
  for (const std::string node : {"node-0", "node-1"}) {
    Json* pod = w.PodOn(node);
    (*pod)["spec"]["nodeName"] = node;
    (*pod)["status"] = {
        {"phase", "Failed"},
        {"containerStatuses",
         {{{"state",
            {{"terminated",
              {{"exitCode", 3}, {"reason", "Error"}, {"message", termination::Encode(r)}}}}}}}}};
  }
  const Decision d = w.Decide();
  ASSERT_EQ(d.results.size(), 2u);
  for (const auto& write : d.results) {
    const Json& spec = write.result["spec"];
    if (spec["nodeName"] == "node-0") {
      EXPECT_EQ(spec["report"]["verdict"], "FAIL");
      EXPECT_EQ(spec["worst"], r.worst);
      EXPECT_EQ(write.result["metadata"]["annotations"][kRecoveredFromAnnotation],
                "termination-message");
    } else {
      EXPECT_EQ(spec["report"]["verdict"], "ERROR");
    }
  }
  w.Apply(d);
  const Decision next = w.Decide();
  ASSERT_TRUE(next.status.has_value());
  EXPECT_EQ((*next.status)["failed"], 1);
  EXPECT_EQ((*next.status)["errors"], 1);
}

// A node busy with another validation waits, named in the status; nothing starts there.
TEST(DecideEdge, BusyNodeWaitsForTheOtherValidation) {
  World w("second", StreamSpec(), Nodes(2));
  w.busyWith["node-1"] = "first";
  const Decision d = w.Decide();
  EXPECT_EQ(PodNodes(d), std::set<std::string>{"node-0"});
  EXPECT_EQ(d.status->value("message", ""),
            "0 of 2 nodes done; waiting for node-1 (busy with validation first)");
  for (const auto& c : (*d.status)["conditions"]) {
    if (c.value("type", "") == "Ready") {
      EXPECT_EQ(c.value("reason", ""), "Waiting") << c.dump();
    }
  }
  EXPECT_EQ(d.requeue_after, seconds(5));
}

// A node claimed by another validation's run: no pod there, the status says Waiting and names
// the node and the holder; never an ERROR however long it waits, and the node is taken once the
// claim is released.
TEST(DecideEdge, ClaimedNodeWaitsVisiblyAndIsTakenWhenReleased) {
  World other("first", StreamSpec(), Nodes(1));
  Decision first = other.Decide();
  ASSERT_EQ(first.claims.size(), 1u);
  EXPECT_EQ(first.claims[0].kind, ClaimAction::Kind::kCreate);
  EXPECT_EQ(first.claims[0].lease["metadata"].value("name", ""), "claim-node-0");
  other.Apply(first);

  World w("second", StreamSpec(), Nodes(2));
  w.claims = other.claims;
  w.config.claim_duration_seconds = 60;
  const ClaimHolder holder = w.claims.at("node-0").holder;
  EXPECT_EQ(holder, (ClaimHolder{"first", "uid-first", "g1"}));
  // Long past the scheduling timeout, but well within the holder's claim (renewed now).
  w.claims.at("node-0").renew_time = kT0 + seconds(600);
  w.now = kT0 + seconds(610);
  Decision d = w.Decide();
  EXPECT_EQ(PodNodes(d), std::set<std::string>{"node-1"});
  ASSERT_TRUE(d.status.has_value());
  EXPECT_EQ(d.status->value("message", ""),
            "0 of 2 nodes done; waiting for node-0 (claimed by validation first)");
  EXPECT_EQ(Condition(*d.status, "Ready").value("reason", ""), "Waiting");
  EXPECT_EQ(d.requeue_after, seconds(2));  // a release wakes nobody: look again soon
  EXPECT_EQ(Condition(*d.status, "Complete").value("status", ""), "False");
  EXPECT_TRUE(d.results.empty());  // no ERROR for waiting
  ASSERT_EQ(d.claims.size(), 1u);
  EXPECT_EQ(d.claims[0].node, "node-1");

  // The holder's validation completed that run: its claim is stale and taken over with the
  // resourceVersion read (a precondition, so only one taker wins).
  w.Apply(d);
  w.claims.at("node-0").holder_gone = true;
  d = w.Decide();
  EXPECT_EQ(PodNodes(d), std::set<std::string>{"node-0"});
  ASSERT_EQ(d.claims.size(), 1u);
  EXPECT_EQ(d.claims[0].kind, ClaimAction::Kind::kTakeOver);
  EXPECT_EQ(d.claims[0].lease["metadata"].value("resourceVersion", ""),
            w.claims.at("node-0").resource_version);
}

// A holder that stopped renewing (its operator gone) loses the node after the claim's duration,
// not before.
TEST(DecideEdge, UnrenewedClaimExpiresAfterItsDuration) {
  World other("first", StreamSpec(), Nodes(1));
  other.Apply(other.Decide());
  World w("second", StreamSpec(), Nodes(1));
  w.claims = other.claims;
  w.now = kT0 + seconds(w.claims.at("node-0").lease_duration_seconds);
  EXPECT_TRUE(w.Decide().pods.empty());
  w.now += seconds(1);
  EXPECT_EQ(PodNodes(w.Decide()), std::set<std::string>{"node-0"});
}

// The holder renews while its run goes on, looks again before the claim could go stale, and
// releases each node once it is done and the rest when the run completes.
TEST(DecideEdge, ClaimsAreRenewedThenReleasedNodeByNode) {
  World w("one", StreamSpec(), Nodes(2));
  w.config.claim_duration_seconds = 30;
  Decision d = w.Decide();
  ASSERT_EQ(d.claims.size(), 2u);
  EXPECT_LE(d.requeue_after, seconds(10));
  w.Apply(d);
  w.Start("node-0");
  w.Start("node-1");
  w.now = kT0 + seconds(11);
  d = w.Decide();
  ASSERT_EQ(d.claims.size(), 2u);
  EXPECT_EQ(d.claims[0].kind, ClaimAction::Kind::kRenew);
  EXPECT_TRUE(d.release_claims.empty());
  w.Apply(d);
  w.Finish("node-0", "PASS");
  // Its worker has written the result and is still exiting: the claim goes all the same, and is
  // not made again while the worker exits.
  (*w.PodOn("node-0"))["status"]["phase"] = "Running";
  d = w.Decide();
  ASSERT_EQ(d.release_claims.size(), 1u);
  EXPECT_EQ(d.release_claims[0].node, "node-0");
  w.Apply(d);
  EXPECT_TRUE(w.Decide().claims.empty());
  w.Finish("node-1", "PASS");
  d = w.Decide();
  ASSERT_TRUE(d.status && !d.status->value("completionTime", "").empty());
  ASSERT_EQ(d.release_claims.size(), 1u);
  EXPECT_EQ(d.release_claims[0].node, "node-1");
  w.Apply(d);
  EXPECT_TRUE(w.claims.empty());
}

// Deleting the validation releases every claim it holds.
TEST(DecideEdge, DeletionReleasesClaims) {
  World w("gone", StreamSpec(), Nodes(2));
  w.Apply(w.Decide());
  ASSERT_EQ(w.claims.size(), 2u);
  w.validation["metadata"]["deletionTimestamp"] = FormatRfc3339(kT0);
  const Decision d = w.Decide();
  EXPECT_EQ(d.release_claims.size(), 2u);
  EXPECT_TRUE(d.remove_finalizer);
}

// policy.parallelism bounds the pods running at once.
TEST(DecideEdge, ParallelismBoundsLivePods) {
  Json spec = StreamSpec();
  spec["policy"]["parallelism"] = 2;
  World w("par", spec);
  Decision d = w.Decide();
  EXPECT_EQ(PodNodes(d), (std::set<std::string>{"node-0", "node-1"}));
  w.Apply(d);
  w.Finish("node-0", "PASS");
  d = w.Decide();
  EXPECT_EQ(PodNodes(d), std::set<std::string>{"node-2"});
}

// A run already complete: only observedGeneration is kept current; nothing else is done.
TEST(DecideEdge, CompletedRunDoesNothing) {
  World w("done", StreamSpec());
  RunToCompletion(&w, [](const std::string&) { return "PASS"; });
  const Decision d = w.Decide();
  EXPECT_TRUE(d.pods.empty());
  EXPECT_TRUE(d.node_verdicts.empty());
  EXPECT_TRUE(d.events.empty());
  ASSERT_TRUE(d.status);
  EXPECT_EQ(*d.status, w.validation["status"]);
}

// No node selected: complete, verdict Error, reason NoNodesSelected.
TEST(DecideEdge, NoNodeSelectedIsAnError) {
  Json spec = StreamSpec();
  spec["nodeSelector"] = {{"pool", "none"}};
  World w("none", spec);
  const Decision d = w.Decide();
  EXPECT_TRUE(d.pods.empty());
  EXPECT_EQ(d.status->value("verdict", ""), "Error");
  EXPECT_EQ(Condition(*d.status, "Ready").value("reason", ""), "NoNodesSelected");
  EXPECT_EQ(d.status->value("passedNodes", ""), "0/0");
}

// A cordon someone else set excludes the node, unless includeCordoned.
TEST(DecideEdge, ForeignCordonExcludesUnlessIncluded) {
  std::vector<Json> nodes = Nodes(2);
  nodes[1]["spec"]["unschedulable"] = true;
  World w("cordoned", StreamSpec(), nodes);
  EXPECT_EQ(PodNodes(w.Decide()), std::set<std::string>{"node-0"});
  w.validation["spec"]["includeCordoned"] = true;
  EXPECT_EQ(PodNodes(w.Decide()), (std::set<std::string>{"node-0", "node-1"}));
}

// A validation without the finalizer gets it; a deleted one without it is left alone.
TEST(DecideEdge, FinalizerIsAddedAndOnlyRemovedWhenPresent) {
  World w("fin", StreamSpec());
  w.validation["metadata"]["finalizers"] = Json::array();
  EXPECT_TRUE(w.Decide().add_finalizer);
  w.validation["metadata"]["deletionTimestamp"] = "2026-12-01T12:01:00Z";
  const Decision d = w.Decide();
  EXPECT_FALSE(d.remove_finalizer);
  EXPECT_TRUE(d.delete_pods.empty());
}

// A gang member whose pod exists keeps the gang's address when a missing peer is created.
TEST(DecideEdge, GangKeepsTheAddressOfPodsAlreadyMade) {
  World w("gang", GangSpec("all"), Nodes(2));
  w.config.gang_rendezvous_host = "127.0.0.1";
  Decision d = w.Decide();
  ASSERT_EQ(d.pods.size(), 2u);
  Json first = d.pods[0].pod;
  for (auto& e : first["spec"]["containers"][0]["env"]) {
    if (e.value("name", "") == "NCCL_COMM_ID") e["value"] = "127.0.0.1:40000";
  }
  w.pods = {first};  // the second create failed
  d = w.Decide();
  ASSERT_EQ(d.pods.size(), 1u);
  EXPECT_EQ(Env(d.pods[0].pod, "NCCL_COMM_ID"), "127.0.0.1:40000");
  EXPECT_TRUE(d.pods[0].rendezvous_gang.empty());
}

// A narrowing round whose pod is never scheduled ends its gang with the operator's ERROR
// (the scheduled peer's pod deleted first), and the round's other gangs go on; the pair that
// did not pass still holds the suspects, so the probes start.
TEST(DecideEdge, NarrowingRoundPodNeverScheduledEndsItsGang) {
  World w("round", GangSpec("all"));
  w.Apply(w.Decide());
  for (int i = 0; i < 4; ++i) w.Finish("node-" + std::to_string(i), "FAIL");
  w.Apply(w.Decide());  // the pairs round
  // (node-0, node-1) pass; node-2 runs; node-3's pod is never scheduled.
  for (auto& p : w.pods) {
    const PodView v = ViewOfPod(p);
    if (v.run != "g1-pairs" || v.node == "node-3") continue;
    p["spec"]["nodeName"] = v.node;
    p["status"]["phase"] = v.node == "node-2" ? "Running" : "Succeeded";
    if (v.node != "node-2") w.results.push_back(w.ResultOf("g1-pairs", v.node, v.name, "PASS", ""));
  }
  w.now = kT0 + seconds(3);
  const Decision d = w.Decide();
  std::map<std::string, const ResultWrite*> by_node;
  for (const auto& r : d.results) by_node[r.result["spec"]["nodeName"]] = &r;
  ASSERT_EQ(by_node.size(), 2u);
  EXPECT_EQ(by_node["node-3"]->result["spec"]["report"].value("reason", ""),
            "narrowing gang of 2: pod on node-3 not scheduled within 3s");
  EXPECT_EQ(Label(by_node["node-3"]->result, kRunLabel), "g1-pairs");
  EXPECT_FALSE(by_node["node-2"]->delete_pod_after.empty());  // it would wait for its peer
  // The errored pair holds the suspects: each runs again beside a node that passed.
  EXPECT_EQ(PodNodes(d), (std::set<std::string>{"node-0", "node-1", "node-2", "node-3"}));
  for (const auto& p : d.pods) EXPECT_EQ(Label(p.pod, kRunLabel), "g1-probe");
}

// Decide is pure: the same snapshot and time give the same decision.
TEST(DecideEdge, SameSnapshotSameDecision) {
  World w("pure", GangSpec("pairs"), Nodes(3));
  const Snapshot s = w.Observe();
  const Decision a = Decide(s, w.config, kT0);
  const Decision b = Decide(s, w.config, kT0);
  ASSERT_EQ(a.pods.size(), b.pods.size());
  for (size_t i = 0; i < a.pods.size(); ++i) EXPECT_EQ(a.pods[i].pod, b.pods[i].pod);
  EXPECT_EQ(*a.status, *b.status);
}

// A spec that does not parse is an invalid spec with the loader's message.
TEST(DecideEdge, UnparsableSpecIsInvalidSpec) {
  Json spec = StreamSpec();
  spec["gpusPerNode"] = "eight";
  World w("unparsable", spec);
  const Decision d = w.Decide();
  EXPECT_TRUE(d.pods.empty());
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  EXPECT_NE(d.status->value("message", "").find("spec.gpusPerNode"), std::string::npos)
      << d.status->value("message", "");
}

// ---- The results store and regressions ----

StoreView View(const std::string& describe, bool available, const std::string& error, int spooled) {
  StoreView v;
  v.describe = describe;
  v.available = available;
  v.error = error;
  v.spooled = spooled;
  return v;
}

// A worker's result whose one metric has `samples` (bandwidth, higher is better).
Json MeasuredResult(World& w, const std::string& node, const std::vector<double>& samples) {
  Json r = w.ResultOf("g1", node, ObjectName({w.name(), "g1", node}), "PASS", "measured");
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  r["spec"]["report"]["tests"] = {{{"name", "hbm-stream"},
                                   {"type", "hbm-stream"},
                                   {"device", "gpu0"},
                                   {"verdict", "PASS"},
                                   {"metrics",
                                    {{{"name", "triadBandwidthGBps"},
                                      {"unit", "GB/s"},
                                      {"higherIsBetter", true},
                                      {"summary", {{"median", sorted[sorted.size() / 2]}}},
                                      {"samples", samples}}}}}};
  return r;
}

// Eight samples around `mean`, 1% apart.
std::vector<double> Around(double mean) {
  std::vector<double> out;
  for (int i = 0; i < 8; ++i) out.push_back(mean * (0.996 + 0.001 * i));
  return out;
}

// Every node of `w` has its pod and result; node-2's figures come from `node2`.
void FinishMeasured(World* w, double node2) {
  w->Apply(w->Decide());
  for (auto& p : w->pods) p["status"]["phase"] = "Succeeded";
  for (int i = 0; i < 4; ++i) {
    const std::string node = "node-" + std::to_string(i);
    w->results.push_back(MeasuredResult(*w, node, Around(node == "node-2" ? node2 : 3000)));
    // What observe reads from the API in full (the cache keeps a summary).
    if (w->store) {
      auto report = report::FromJson(w->results.back()["spec"]["report"].dump());
      ASSERT_TRUE(report.ok()) << report.status().message();
      w->store->reports[node] = *report;
    }
  }
}

TEST(DecideStore, UnavailableStoreLeavesTheVerdictAndSaysSo) {
  World w("rec", StreamSpec());
  w.store = View("sqlite:///var/lib/perfgate/results.db", false, "cannot create /x: denied", 4);
  EXPECT_TRUE(HasEvent(w.Decide(), "StoreUnavailable", true));
  FinishMeasured(&w, 3000);
  Decision d = w.Decide();
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "Passed");
  EXPECT_EQ(Condition(*d.status, "Passed").value("status", ""), "True");
  const Json rec = Condition(*d.status, "Recorded");
  EXPECT_EQ(rec.value("status", ""), "False") << d.status->dump(2);
  EXPECT_EQ(rec.value("reason", ""), "StoreUnavailable");
  EXPECT_NE(rec.value("message", "").find("cannot create /x: denied"), std::string::npos);
  EXPECT_NE(rec.value("message", "").find("4 results wait"), std::string::npos);
  // Announced once, when the condition turned False (the run's first reconcile), not again.
  EXPECT_FALSE(HasEvent(d, "StoreUnavailable", true));
  // Looked at again while the results wait.
  EXPECT_GT(d.requeue_after.count(), 0);
  EXPECT_LE(d.requeue_after, w.config.store_retry);
  // Not history: the store could not be read; the peers were compared.
  EXPECT_NE(Condition(*d.status, "Regressed").value("message", "").find("not with history"),
            std::string::npos);

  // The store is back and the spool written: True, and one event saying so.
  w.Apply(d);
  w.store = View("sqlite:///var/lib/perfgate/results.db", true, "", 0);
  d = w.Decide();
  ASSERT_TRUE(d.status);
  EXPECT_EQ(Condition(*d.status, "Recorded").value("status", ""), "True");
  EXPECT_TRUE(HasEvent(d, "StoreRecovered", true));
  EXPECT_FALSE(HasEvent(d, "StoreUnavailable", true));
  EXPECT_EQ(d.requeue_after.count(), 0);
}

TEST(DecideStore, WithoutAStoreRecordedSaysResultsAreNotKeptAndHow) {
  World w("off", StreamSpec());
  // From the first reconcile on, where a person looks (kubectl describe, kubectl get -o yaml).
  Decision first = w.Decide();
  ASSERT_TRUE(first.status);
  EXPECT_EQ(Condition(*first.status, "Recorded").value("reason", ""), "StoreOff")
      << first.status->dump(2);
  FinishMeasured(&w, 3000);
  w.now += std::chrono::seconds(30);
  Decision d = w.Decide();
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "Passed");
  const Json rec = Condition(*d.status, "Recorded");
  EXPECT_EQ(rec.value("status", ""), "False") << d.status->dump(2);
  EXPECT_EQ(rec.value("reason", ""), "StoreOff");
  EXPECT_NE(rec.value("message", "").find("not kept"), std::string::npos);
  EXPECT_NE(rec.value("message", "").find("store.mode=sqlite"), std::string::npos);
  // Unchanged since the first reconcile: its transition time is kept, and no event is sent.
  EXPECT_EQ(rec.value("lastTransitionTime", ""),
            Condition(*first.status, "Recorded").value("lastTransitionTime", ""));
  EXPECT_FALSE(HasEvent(d, "StoreOff", true));
  // Nothing compared either: the full reports come with the store.
  EXPECT_TRUE(Condition(*d.status, "Regressed").empty()) << d.status->dump(2);
  EXPECT_FALSE(d.status->contains("regressions"));
}

TEST(DecideRegressions, NodeEightPercentSlowerPassesAndIsListed) {
  World w("reg", StreamSpec());
  w.store = View("sqlite:///r.db", true, "", 0);
  // node-2's history: three earlier runs at 3000.
  for (int run = 0; run < 3; ++run) {
    store::MetricRecord m;
    m.key = {"default", "reg", "g0-" + std::to_string(run), "node-2"};
    m.test = "hbm-stream";
    m.device = "gpu0";
    m.metric = "triadBandwidthGBps";
    m.samples = Around(3000);
    m.summary.set_median(3000);
    w.store->history["node-2"].push_back(m);
  }
  FinishMeasured(&w, 2760);  // 8% slower, still above any bound here
  Decision d = w.Decide();
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "Passed") << d.status->dump(2);
  for (const auto& v : d.node_verdicts) EXPECT_EQ(v.verdict, verdict::Verdict::kPass) << v.node;
  const Json rows = d.status->value("regressions", Json::array());
  ASSERT_EQ(rows.size(), 2u) << d.status->dump(2);
  std::set<std::string> against;
  for (const auto& r : rows) {
    EXPECT_EQ(r.value("node", ""), "node-2");
    EXPECT_NEAR(r.value("ratio", 0.0), 0.92, 0.005);
    EXPECT_LT(r.value("high", 1.0), 0.97);
    EXPECT_EQ(r.value("metric", ""), "triadBandwidthGBps");
    against.insert(r.value("against", ""));
  }
  EXPECT_EQ(against, (std::set<std::string>{"history", "peers"}));
  EXPECT_EQ(Condition(*d.status, "Regressed").value("reason", ""), "RegressionsFound");
  EXPECT_TRUE(HasEvent(d, "Regression", true));
}

TEST(DecideRegressions, FailOnRegressionFailsTheSlowNodeOnly) {
  Json spec = StreamSpec();
  spec["policy"]["failOnRegression"] = true;
  World w("regfail", spec);
  w.store = View("sqlite:///r.db", true, "", 0);
  FinishMeasured(&w, 2760);
  Decision d = w.Decide();
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "Failed");
  EXPECT_EQ(d.status->value("passedNodes", ""), "3/4");
  for (const auto& v : d.node_verdicts) {
    EXPECT_EQ(v.verdict, v.node == "node-2" ? verdict::Verdict::kFail : verdict::Verdict::kPass)
        << v.node;
  }
  EXPECT_NE(d.status->value("message", "").find("node-2 FAIL: regression"), std::string::npos)
      << d.status->dump(2);
}

TEST(DecideRegressions, ShiftInsideTheMarginIsNotARegression) {
  Json spec = StreamSpec();
  spec["policy"]["regressionMargin"] = 0.1;
  World w("margin", spec);
  w.store = View("sqlite:///r.db", true, "", 0);
  FinishMeasured(&w, 2760);
  Decision d = w.Decide();
  ASSERT_TRUE(d.status);
  EXPECT_FALSE(d.status->contains("regressions")) << d.status->dump(2);
  EXPECT_EQ(Condition(*d.status, "Regressed").value("status", ""), "False");
}

// A spec whose hbm-stream threshold is 0.97 of baseline `h200-june`.
Json BaselineSpec() {
  Json spec = StreamSpec();
  spec["tests"][0]["thresholds"] = {{{"metric", "triadBandwidthGBps"},
                                     {"statistic", "median"},
                                     {"op", ">="},
                                     {"baseline", "h200-june"},
                                     {"fraction", 0.97}}};
  return spec;
}

store::Baseline H200June() {
  store::Baseline b;
  b.name = "h200-june";
  // The model as CUDA names it: the nodes' GFD label says NVIDIA-H200.
  b.values.push_back(
      {"NVIDIA H200", "", "hbm-stream", "triadBandwidthGBps", "median", 4000, 24, 3950, 4050});
  return b;
}

TEST(DecideBaselines, BaselineBoundTravelsAsReferenceAndFraction) {
  World w("base", BaselineSpec());
  w.store = View("sqlite:///r.db", true, "", 0);
  w.store->baselines["h200-june"] = H200June();
  Decision d = w.Decide();
  ASSERT_TRUE(d.retry.ok()) << d.retry.message();
  ASSERT_TRUE(d.plan_config_map) << (d.status ? d.status->dump(2) : "");
  const std::string plan = (*d.plan_config_map)["data"]["plan.yaml"];
  EXPECT_NE(plan.find("\"reference\":4000"), std::string::npos) << plan;
  EXPECT_NE(plan.find("\"referenceSource\":\"baseline h200-june\""), std::string::npos) << plan;
  EXPECT_EQ(plan.find("\"baseline\""), std::string::npos) << plan;
  EXPECT_EQ(PodNodes(d).size(), 4u);
}

TEST(DecideBaselines, MissingBaselineOrFigureIsInvalidSpec) {
  World w("nobase", BaselineSpec());
  w.store = View("sqlite:///r.db", true, "", 0);
  w.store->baseline_errors["h200-june"] =
      NotFound("baseline \"h200-june\" not found in sqlite:///r.db");
  Decision d = w.Decide();
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  EXPECT_NE(d.status->value("message", "").find("not found in sqlite:///r.db"), std::string::npos)
      << d.status->dump(2);
  // A baseline of another model names what it holds.
  store::Baseline other = H200June();
  other.values[0].gpu_model = "NVIDIA B200";
  w.store->baseline_errors.clear();
  w.store->baselines["h200-june"] = other;
  d = w.Decide();
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  EXPECT_NE(d.status->value("message", "").find("NVIDIA B200"), std::string::npos)
      << d.status->dump(2);
}

TEST(DecideBaselines, UnreachableStoreIsRetriedNotInvalid) {
  World w("wait", BaselineSpec());
  w.store = View("sqlite:///r.db", false, "down", 0);
  w.store->baseline_errors["h200-june"] = Unavailable("results store unavailable: down");
  Decision d = w.Decide();
  EXPECT_FALSE(d.retry.ok());
  EXPECT_EQ(d.retry.code(), Code::kUnavailable);
  EXPECT_TRUE(d.pods.empty());
}

TEST(DecideBaselines, WithoutAStoreABaselineIsRefused) {
  World w("off", BaselineSpec());
  Decision d = w.Decide();
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  EXPECT_NE(d.status->value("message", "").find("baseline"), std::string::npos);
}

// The PerfBaseline object h200-june, as `perfgate baseline create -o yaml` writes it.
Json H200JuneObject(double figure) {
  return {{"apiVersion", "perfgate.io/v1alpha1"},
          {"kind", "PerfBaseline"},
          {"metadata", {{"name", "h200-june"}}},
          {"spec",
           {{"source", "--from validation=acceptance (PASS results)"},
            {"created", "2026-06-30T12:00:00Z"},
            {"values",
             {{{"gpuModel", "NVIDIA H200"},
               {"test", "hbm-stream"},
               {"metric", "triadBandwidthGBps"},
               {"statistic", "median"},
               {"value", figure},
               {"count", 24}}}}}}};
}

TEST(DecideBaselines, APerfBaselineObjectComesFirstAndNeedsNoStore) {
  World w("cluster", BaselineSpec());  // --store=off
  w.baselines.by_name["h200-june"] = H200JuneObject(4100);
  Decision d = w.Decide();
  ASSERT_TRUE(d.retry.ok()) << d.retry.message();
  ASSERT_TRUE(d.plan_config_map) << (d.status ? d.status->dump(2) : "");
  std::string plan = (*d.plan_config_map)["data"]["plan.yaml"];
  EXPECT_NE(plan.find("\"reference\":4100"), std::string::npos) << plan;
  EXPECT_NE(plan.find("\"referenceSource\":\"baseline h200-june\""), std::string::npos) << plan;

  // The store's baseline of the same name (4000) is not read; nor is a store that is down.
  World both("both", BaselineSpec());
  both.store = View("sqlite:///r.db", true, "", 0);
  both.store->baselines["h200-june"] = H200June();
  both.baselines.by_name["h200-june"] = H200JuneObject(4100);
  d = both.Decide();
  ASSERT_TRUE(d.plan_config_map);
  plan = (*d.plan_config_map)["data"]["plan.yaml"];
  EXPECT_NE(plan.find("\"reference\":4100"), std::string::npos) << plan;
  both.store = View("sqlite:///r.db", false, "down", 0);
  both.store->baseline_errors["h200-june"] = Unavailable("results store unavailable: down");
  d = both.Decide();
  EXPECT_TRUE(d.retry.ok()) << d.retry.message();
  EXPECT_EQ(PodNodes(d).size(), 4u);
}

TEST(DecideBaselines, AMissingBaselineNamesTheClusterAndTheStore) {
  World w("none", BaselineSpec());
  w.store = View("sqlite:///r.db", true, "", 0);
  w.store->baseline_errors["h200-june"] =
      NotFound("baseline \"h200-june\" not found in sqlite:///r.db");
  Decision d = w.Decide();
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  const std::string msg = d.status->value("message", "");
  EXPECT_NE(msg.find("spec.tests[0].thresholds[0].baseline"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no PerfBaseline \"h200-june\" in the cluster"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not found in sqlite:///r.db"), std::string::npos) << msg;

  // A PerfBaseline without a figure for this model names what it holds.
  World other("other", BaselineSpec());
  Json object = H200JuneObject(4100);
  object["spec"]["values"][0]["gpuModel"] = "NVIDIA B200";
  other.baselines.by_name["h200-june"] = object;
  d = other.Decide();
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  EXPECT_NE(d.status->value("message", "").find("NVIDIA B200"), std::string::npos)
      << d.status->dump(2);
}

// ---- The scenarios added after the first pass: cloud labels, bounds, API outages ----

// BoundThatCannotBindIsInvalidSpec: a ">=" bound of 0 passes every node whatever it measures,
// so it is refused before any pod, naming the threshold.
TEST(DecideScenario, BoundThatCannotBindIsInvalidSpec) {
  Json spec = StreamSpec();
  spec["tests"][0]["thresholds"] =
      Json::parse(R"([{"metric": "triadBandwidthGBps", "op": ">=", "value": 0}])");
  World w("nobound", spec);
  const Decision d = w.Decide();
  EXPECT_TRUE(d.pods.empty());
  EXPECT_FALSE(d.plan_config_map);
  EXPECT_TRUE(d.node_verdicts.empty());
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec");
  EXPECT_NE(
      d.status->value("message", "")
          .find("spec.tests[0].thresholds[0].value: a \">=\" bound of 0 on triadBandwidthGBps"),
      std::string::npos)
      << d.status->value("message", "");
}

// The shipped profiles' names and gpuModels (profiles/*.yaml), with a one-test quick level.
ClusterProfiles ShippedProfiles() {
  ClusterProfiles p;
  const std::vector<std::pair<std::string, Json>> shipped = {
      {"a100-sxm-80gb", {"A100-SXM4-80GB", "A100-SXM-80GB"}},
      {"h100-sxm-80gb", {"H100 80GB HBM3", "H100 SXM"}},
      {"h200-sxm-141gb", {"H200", "!NVL"}},
      {"b200-sxm-180gb", {"B200"}}};
  for (const auto& [name, models] : shipped) {
    Json profile = Profile(name, "");
    profile["spec"]["gpuModels"] = models;
    p.by_name[name] = profile;
  }
  p.listed = true;
  return p;
}

// A GPU node as a managed cloud labels it: its own labels, none of GPU Feature Discovery's.
Json CloudNode(const std::string& name, const Json& labels, const Json& taints = nullptr) {
  Json node = NodeObj(name, 8, "");
  node["metadata"]["labels"] = labels;
  if (taints.is_array()) node["spec"]["taints"] = taints;
  return node;
}

Json GkeGpuTaint() {
  return Json::parse(R"([{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])");
}

Json AutoSpec() {
  Json spec = StreamSpec();
  spec.erase("tests");
  spec.erase("sampling");
  spec["profile"] = "auto";
  return spec;
}

bool ToleratesGpuTaint(const Json& pod) {
  for (const auto& t : pod["spec"].value("tolerations", Json::array())) {
    if (t.value("key", "") == "nvidia.com/gpu" && t.value("operator", "") == "Exists" &&
        t.value("effect", "").empty()) {
      return true;
    }
  }
  return false;
}

// AutoResolvesFromGkeEksAndAksLabelsWithoutGfd: each cloud's own labels give the model, the
// profile and the status line saying how it was read; the workers tolerate the GPU taints.
TEST(DecideScenario, AutoResolvesFromGkeEksAndAksLabelsWithoutGfd) {
  const std::vector<Json> nodes = {
      CloudNode("gke-a3-0",
                {{"cloud.google.com/gke-accelerator", "nvidia-h100-80gb"},
                 {"cloud.google.com/gke-nodepool", "a3"},
                 {"node.kubernetes.io/instance-type", "a3-highgpu-8g"}},
                GkeGpuTaint()),
      CloudNode("gke-a3-1",
                {{"cloud.google.com/gke-accelerator", "nvidia-h100-80gb"},
                 {"cloud.google.com/gke-nodepool", "a3"},
                 {"node.kubernetes.io/instance-type", "a3-highgpu-8g"}},
                GkeGpuTaint()),
      CloudNode("eks-p5en-0",
                {{"eks.amazonaws.com/nodegroup", "gpu"},
                 {"node.kubernetes.io/instance-type", "p5en.48xlarge"}},
                Json::parse(R"([{"key": "nvidia.com/gpu", "effect": "NoSchedule"}])")),
      CloudNode("aks-nd-0", {{"kubernetes.azure.com/accelerator", "nvidia"},
                             {"kubernetes.azure.com/agentpool", "gpu"},
                             {"node.kubernetes.io/instance-type", "Standard_ND96amsr_A100_v4"}})};
  struct Pool {
    std::string name, key, value, profile, gpuModels, how;
    std::set<std::string> nodes;
  };
  const std::vector<Pool> pools = {
      {"gke",
       "cloud.google.com/gke-accelerator",
       "nvidia-h100-80gb",
       "h100-sxm-80gb",
       "NVIDIA H100 80GB HBM3: gke-a3-0, gke-a3-1 (GKE label "
       "cloud.google.com/gke-accelerator=nvidia-h100-80gb)",
       "GKE label cloud.google.com/gke-accelerator",
       {"gke-a3-0", "gke-a3-1"}},
      {"eks",
       "node.kubernetes.io/instance-type",
       "p5en.48xlarge",
       "h200-sxm-141gb",
       "NVIDIA H200: eks-p5en-0 (EKS instance type node.kubernetes.io/instance-type=p5en.48xlarge)",
       "EKS instance type",
       {"eks-p5en-0"}},
      {"aks",
       "kubernetes.azure.com/accelerator",
       "nvidia",
       "a100-sxm-80gb",
       "NVIDIA A100-SXM4-80GB: aks-nd-0 (AKS VM size "
       "node.kubernetes.io/instance-type=Standard_ND96amsr_A100_v4)",
       "AKS VM size",
       {"aks-nd-0"}}};
  for (const Pool& pool : pools) {
    Json spec = AutoSpec();
    spec["nodeSelector"] = {{pool.key, pool.value}};
    World w(pool.name, spec, nodes);
    w.profiles = ShippedProfiles();
    const Decision d = w.Decide();
    ASSERT_TRUE(d.retry.ok()) << d.retry.message();
    ASSERT_TRUE(d.status) << pool.name;
    EXPECT_EQ(d.status->value("profile", ""), pool.profile) << d.status->dump(2);
    EXPECT_EQ(d.status->value("gpuModels", ""), pool.gpuModels) << d.status->dump(2);
    EXPECT_NE(d.status->value("verdict", ""), "InvalidSpec") << d.status->dump(2);
    EXPECT_EQ(PodNodes(d), pool.nodes) << pool.name;
    for (const auto& p : d.pods) EXPECT_TRUE(ToleratesGpuTaint(p.pod)) << p.pod.dump(2);
    EXPECT_TRUE(std::any_of(d.events.begin(), d.events.end(), [&](const EventAction& e) {
      return e.reason == "GpuModels" && e.message.find(pool.how) != std::string::npos;
    })) << pool.name;
  }
}

// AutoRefusesCloudNodesItCannotCertifyNamingNodesAndLabels: a model no profile is for, a node
// whose labels name no model, a named profile of another model and two models in one
// validation are each InvalidSpec before any pod, naming nodes, labels and profiles.
TEST(DecideScenario, AutoRefusesCloudNodesItCannotCertifyNamingNodesAndLabels) {
  const std::vector<Json> nodes = {
      CloudNode("eks-p4d-0", {{"node.kubernetes.io/instance-type", "p4d.24xlarge"}}),
      CloudNode("gke-l4-0",
                {{"cloud.google.com/gke-accelerator", "nvidia-l4"},
                 {"node.kubernetes.io/instance-type", "g2-standard-8"}},
                GkeGpuTaint()),
      CloudNode("gke-a3-0", {{"cloud.google.com/gke-accelerator", "nvidia-h100-80gb"}},
                GkeGpuTaint())};
  auto refused = [&](const std::string& name, const Json& node_names,
                     const std::string& profile = "auto") {
    Json spec = AutoSpec();
    spec.erase("nodeSelector");
    spec["nodes"] = node_names;
    spec["profile"] = profile;
    World w(name, spec, nodes);
    w.profiles = ShippedProfiles();
    const Decision d = w.Decide();
    EXPECT_TRUE(d.pods.empty()) << name;
    EXPECT_FALSE(d.plan_config_map) << name;
    if (!d.status) {
      ADD_FAILURE() << name << ": no status";
      return Json::object();
    }
    EXPECT_EQ(d.status->value("verdict", ""), "InvalidSpec") << d.status->dump(2);
    EXPECT_EQ(Condition(*d.status, "Ready").value("reason", ""), "InvalidSpec");
    return *d.status;
  };
  const std::string a100 = refused("p4d", {"eks-p4d-0"}).value("message", "");
  EXPECT_NE(a100.find("GPU \"NVIDIA A100-SXM4-40GB\" is not a model of any profile"),
            std::string::npos)
      << a100;
  EXPECT_NE(
      a100.find("eks-p4d-0 (EKS instance type node.kubernetes.io/instance-type=p4d.24xlarge)"),
      std::string::npos)
      << a100;
  EXPECT_NE(a100.find("a100-sxm-80gb (A100-SXM4-80GB, A100-SXM-80GB)"), std::string::npos) << a100;

  const std::string l4 = refused("l4", {"gke-l4-0"}).value("message", "");
  EXPECT_NE(l4.find("node gke-l4-0: no label names a GPU model perfgate knows (read "
                    "nvidia.com/gpu.product (absent), cloud.google.com/gke-accelerator=nvidia-l4, "
                    "node.kubernetes.io/instance-type=g2-standard-8)"),
            std::string::npos)
      << l4;
  EXPECT_NE(l4.find("profiles: a100-sxm-80gb"), std::string::npos) << l4;

  const Json named = refused("named", {"gke-a3-0"}, "h200-sxm-141gb");
  EXPECT_NE(named.value("message", "")
                .find("1 selected node has another model: gke-a3-0 (NVIDIA H100 80GB HBM3)"),
            std::string::npos)
      << named.dump(2);
  EXPECT_EQ(named.value("gpuModels", ""),
            "NVIDIA H100 80GB HBM3: gke-a3-0 (GKE label "
            "cloud.google.com/gke-accelerator=nvidia-h100-80gb)");

  const std::string mixed = refused("mixed", {"eks-p4d-0", "gke-a3-0"}).value("message", "");
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

// ReadmeClusterExampleWorksWithoutGfd: examples/h200-node.yaml's spec (no selector) on a GKE
// cluster: the GPU nodes are selected, not the CPU node, and the named profile is checked
// against the model GKE's label names.
TEST(DecideScenario, ReadmeClusterExampleWorksWithoutGfd) {
  std::vector<Json> nodes;
  for (const char* n : {"gke-a3u-0", "gke-a3u-1"}) {
    nodes.push_back(CloudNode(n,
                              {{"cloud.google.com/gke-accelerator", "nvidia-h200-141gb"},
                               {"node.kubernetes.io/instance-type", "a3-ultragpu-8g"}},
                              GkeGpuTaint()));
  }
  Json cpu = CloudNode("gke-cpu-0", {{"node.kubernetes.io/instance-type", "n2-standard-8"}});
  cpu["status"]["allocatable"].erase("nvidia.com/gpu");
  nodes.push_back(cpu);
  const Json spec = {{"profile", "h200-sxm-141gb"}, {"level", "quick"}, {"gpusPerNode", 8}};
  World w("h200-node-acceptance", spec, nodes);
  w.profiles = ShippedProfiles();
  const Decision d = w.Decide();
  ASSERT_TRUE(d.retry.ok()) << d.retry.message();
  ASSERT_TRUE(d.status);
  EXPECT_EQ(PodNodes(d), (std::set<std::string>{"gke-a3u-0", "gke-a3u-1"})) << d.status->dump(2);
  EXPECT_EQ(d.status->value("profile", ""), "h200-sxm-141gb");
  EXPECT_NE(d.status->value("gpuModels", "").find("GKE label"), std::string::npos)
      << d.status->dump(2);
  for (const auto& p : d.pods) EXPECT_TRUE(ToleratesGpuTaint(p.pod));
}

// TwentySecondsOf500WhileWorkersFinishLosesNoVerdict: while the API server refuses every write,
// the operator's decisions are not applied (its status write fails too); running workers
// without results are awaited, never given an ERROR; once their results arrive, late, every
// node has the verdict its worker wrote.
TEST(DecideScenario, ApiOutageWhileWorkersFinishLosesNoVerdict) {
  World w("storm", StreamSpec());
  w.Apply(w.Decide());
  for (const char* n : {"node-0", "node-1", "node-2", "node-3"}) w.Start(n);
  const Json before = w.validation["status"];
  for (int second = 0; second <= 20; second += 5) {  // reconciles retried through the outage
    w.now = kT0 + seconds(10 + second);
    const Decision d = w.Decide();
    EXPECT_TRUE(d.results.empty()) << second;
    EXPECT_TRUE(d.delete_pods.empty()) << second;
    EXPECT_TRUE(d.delete_pods_after_results.empty()) << second;
    EXPECT_TRUE(d.pods.empty()) << second;
    EXPECT_TRUE(d.node_verdicts.empty()) << second;
    if (d.status) {
      EXPECT_EQ(d.status->value("message", ""), "0 of 4 nodes done");
    }
    // Nothing of it is applied: the writes are refused.
  }
  EXPECT_EQ(w.validation["status"], before);
  for (const char* n : {"node-0", "node-1", "node-3"}) w.Finish(n, "PASS");
  w.Finish("node-2", "FAIL", "hbm-stream: median triadBandwidthGBps 50 GB/s < 3840");
  const Decision d = w.Decide();
  EXPECT_TRUE(d.results.empty());  // every verdict is the worker's
  ASSERT_TRUE(d.status);
  EXPECT_EQ(d.status->value("passedNodes", ""), "3/4");
  EXPECT_EQ(Condition(*d.status, "Ready").value("reason", ""), "TestsFailed");
  for (const auto& o : d.outcomes) {
    EXPECT_FALSE(o.by_operator) << o.node;
    EXPECT_EQ(o.verdict, o.node == "node-2" ? verdict::Verdict::kFail : verdict::Verdict::kPass)
        << o.node;
  }
}

// The same outage from the operator's side: its own status write was refused, so the next
// reconcile sees the old status and decides the same status again, with the Started event
// keyed once (Act sends it once per run, however often the write is retried).
TEST(DecideEdge, RefusedStatusWriteIsDecidedAgainWithTheSameOnceKey) {
  World w("retry", StreamSpec());
  const Decision first = w.Decide();
  World again = w;  // the status write was refused: the world is as it was
  const Decision second = again.Decide();
  ASSERT_TRUE(first.status && second.status);
  EXPECT_EQ(first.status->value("message", ""), second.status->value("message", ""));
  EXPECT_EQ(PodNodes(first), PodNodes(second));
  auto started_key = [](const Decision& d) {
    for (const auto& e : d.events) {
      if (e.reason == "Started") return e.once_key;
    }
    return std::string();
  };
  EXPECT_FALSE(started_key(first).empty());
  EXPECT_EQ(started_key(first), started_key(second));
}

}  // namespace
}  // namespace perfgate::op
