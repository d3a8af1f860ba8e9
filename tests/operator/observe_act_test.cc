// Observe and act against a scripted API server (tests/kube/fakes.h): what a reconcile reads,
// and in which order and how often it writes.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/names.h"
#include "operator/reconcile/act.h"
#include "operator/reconcile/snapshot.h"
#include "tests/kube/fakes.h"
#include "tests/operator/time_at.h"

namespace perfgate::op {
namespace {

using kube::testing::FakeClock;
using kube::testing::FakeTransport;
using kube::testing::Reply;

std::string NotFoundBody() {
  return Json{{"kind", "Status"}, {"code", 404}, {"reason", "NotFound"}, {"message", "gone"}}
      .dump();
}

class ApiTest : public ::testing::Test {
 protected:
  ApiTest() {
    kube::RestConfig rc;
    rc.server = "https://api:6443";
    rc.bearerToken = "tok";
    rc.qps = 0;
    kube::ClientOptions o;
    o.clock = std::make_shared<FakeClock>();
    o.retry.maxRetries = 0;
    client_ = std::make_shared<kube::Client>(rc, transport_, o);
    caches_.nodes = [this] {
      nodeReads_++;
      return nodes_;
    };
    caches_.pods_of = [this](const std::string&) { return pods_; };
    caches_.pods_on = [this](const std::string& node) {
      std::vector<Json> out;
      for (const auto& p : others_) {
        if (p["spec"].value("nodeName", "") == node) out.push_back(p);
      }
      return out;
    };
    caches_.results_of = [this](const std::string&) { return results_; };
  }

  static Json Validation(Json spec, Json status = Json::object()) {
    return {{"apiVersion", "perfgate.io/v1alpha1"},
            {"kind", "PerfValidation"},
            {"metadata",
             {{"name", "v"},
              {"uid", "u1"},
              {"generation", 1},
              {"resourceVersion", "5"},
              {"finalizers", {kFinalizer}}}},
            {"spec", std::move(spec)},
            {"status", std::move(status)}};
  }
  static Json Spec() {
    return Json::parse(R"({"tests": [{"type": "hbm-stream"}],
                           "sampling": {"minRepeats": 5, "maxRepeats": 20}})");
  }
  static Json Node(const std::string& name) {
    return {{"metadata",
             {{"name", name},
              {"labels",
               {{"nvidia.com/gpu.present", "true"}, {"nvidia.com/gpu.product", "NVIDIA-H200"}}}}},
            {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}}}}};
  }
  // What Observe gives Act for the validation "v" (no pods, results or claims yet).
  static Snapshot SnapshotOfV() {
    Snapshot s;
    s.exists = true;
    s.name = "v";
    s.validation = Validation(Spec());
    return s;
  }
  std::vector<std::string> Paths() const {
    std::vector<std::string> out;
    for (const auto& r : transport_->requests()) out.push_back(r.method + " " + r.path);
    return out;
  }

  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  std::shared_ptr<kube::Client> client_;
  Caches caches_;
  ReconcilerConfig config_;
  std::vector<Json> nodes_, pods_, others_, results_;
  int nodeReads_ = 0;
};

const char* kPvalPath = "/apis/perfgate.io/v1alpha1/perfvalidations/v";
const char* kClaimsPath =
    "/apis/coordination.k8s.io/v1/namespaces/perfgate-system/"
    "leases?labelSelector=perfgate.io%2Fclaim%3Dnode";

TEST_F(ApiTest, ObserveOfAGoneValidationSaysSo) {
  transport_->Expect("GET", kPvalPath, Reply().WithStatus(404).WithBody(NotFoundBody()));
  auto s = Observe(*client_, caches_, config_, "v");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_FALSE(s->exists);
}

TEST_F(ApiTest, ObserveOfACompletedRunReadsOnlyTheValidation) {
  transport_->Expect(
      "GET", kPvalPath,
      Reply().WithBody(
          Validation(Spec(), {{"run", "g1"}, {"completionTime", "2026-12-01T12:00:00Z"}}).dump()));
  auto s = Observe(*client_, caches_, config_, "v");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->run_complete);
  ASSERT_TRUE(s->spec);  // parsed once, typed
  EXPECT_EQ(s->spec->doc.spec().tests(0).type(), "hbm-stream");
  EXPECT_EQ(nodeReads_, 0);
  EXPECT_EQ(transport_->requests().size(), 1u);
}

// A finished pod whose result the cache lacks: the API is asked; a crashed one without a
// termination message has its log read.
TEST_F(ApiTest, ObserveAsksTheApiForResultsAndLogsTheCacheCannotGive) {
  transport_->Expect("GET", kPvalPath, Reply().WithBody(Validation(Spec()).dump()));
  nodes_ = {Node("node-0"), Node("node-1")};
  auto pod = [](const std::string& node, Json status) {
    return Json{{"metadata",
                 {{"name", "v-g1-" + node},
                  {"labels", {{kValidationLabel, "v"}, {kNodeLabel, node}, {kRunLabel, "g1"}}}}},
                {"spec", {{"nodeName", node}}},
                {"status", std::move(status)}};
  };
  pods_ = {pod("node-0", {{"phase", "Succeeded"}}),
           pod("node-1", Json::parse(R"({"phase": "Failed", "containerStatuses":
                 [{"state": {"terminated": {"exitCode": 1}}}]})"))};
  transport_->Expect(
      "GET", "/apis/perfgate.io/v1alpha1/namespaces/perfgate-system/perfresults/v-g1-node-0",
      Reply().WithBody(R"({"metadata": {"name": "v-g1-node-0"}})"));
  transport_->Expect(
      "GET", "/apis/perfgate.io/v1alpha1/namespaces/perfgate-system/perfresults/v-g1-node-1",
      Reply().WithStatus(404).WithBody(NotFoundBody()));
  transport_->Expect("GET", kClaimsPath, Reply().WithBody(R"({"items": []})"));
  transport_->Expect("GET", "/api/v1/namespaces/perfgate-system/pods/v-g1-node-1/log",
                     Reply().WithBody("out of memory\n"));
  auto s = Observe(*client_, caches_, config_, "v");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->pods.size(), 2u);
  EXPECT_TRUE(s->pods[0].result_in_api);
  EXPECT_FALSE(s->pods[0].log_tail);
  EXPECT_FALSE(s->pods[1].result_in_api);
  ASSERT_TRUE(s->pods[1].log_tail);
  EXPECT_EQ(*s->pods[1].log_tail, "out of memory\n");
  // The validation, the claims, two results, the log.
  EXPECT_EQ(transport_->requests().size(), 5u);
  EXPECT_NE(transport_->requests()[4].path.find("tailLines=5"), std::string::npos);
}

// Another validation's live worker makes a node busy; a named profile is read by name, and a
// missing one is no error (the spec is invalid, which decide says).
TEST_F(ApiTest, ObserveReadsBusyNodesAndTheNamedProfile) {
  Json spec = {{"profile", "sim"}};
  transport_->Expect("GET", kPvalPath, Reply().WithBody(Validation(spec).dump()));
  transport_->Expect("GET", "/apis/perfgate.io/v1alpha1/perfprofiles/sim",
                     Reply().WithStatus(404).WithBody(NotFoundBody()));
  transport_->Expect("GET", kClaimsPath, Reply().WithBody(R"({"items": []})"));
  // node-0 is free of perfgate's workers: the pods bound to it are read from the API, and a
  // training pod there holds 8 GPUs (a pod without GPUs does not count).
  transport_->Expect("GET", "/api/v1/pods?", Reply().WithBody(R"({"items": [
        {"metadata": {"name": "train", "namespace": "ml"},
         "spec": {"nodeName": "node-0", "containers": [{"name": "c",
                  "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
         "status": {"phase": "Running"}},
        {"metadata": {"name": "web", "namespace": "ml"},
         "spec": {"nodeName": "node-0", "containers": [{"name": "c"}]},
         "status": {"phase": "Running"}}]})"));
  // And the pods not bound yet: one the scheduler nominated to node-0 (after preempting there)
  // holds it too; one nominated nowhere does not.
  transport_->Expect("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3D%2Cstatus.phase%3DPending",
                     Reply().WithBody(R"({"items": [
        {"metadata": {"name": "big-job", "namespace": "ml"},
         "spec": {"containers": [{"name": "c",
                  "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
         "status": {"phase": "Pending", "nominatedNodeName": "node-0"}},
        {"metadata": {"name": "queued", "namespace": "ml"},
         "spec": {"containers": [{"name": "c",
                  "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
         "status": {"phase": "Pending"}}]})"));
  nodes_ = {Node("node-0"), Node("node-1")};
  others_ = {{{"metadata", {{"name", "x"}, {"labels", {{kValidationLabel, "other"}}}}},
              {"spec", {{"nodeName", "node-1"}}},
              {"status", {{"phase", "Running"}}}}};
  auto s = Observe(*client_, caches_, config_, "v");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->busy_with, (std::map<std::string, std::string>{{"node-1", "other"}}));
  EXPECT_TRUE(s->profiles.by_name.empty());
  EXPECT_FALSE(s->profiles.listed);
  ASSERT_EQ(s->gpu_pods["node-0"].size(), 2u);
  EXPECT_EQ(s->gpu_pods["node-0"][0].Key(), "ml/train");
  EXPECT_EQ(s->gpu_pods["node-0"][0].gpus, 8);
  EXPECT_FALSE(s->gpu_pods["node-0"][0].nominated);
  EXPECT_EQ(s->gpu_pods["node-0"][1].Key(), "ml/big-job");
  EXPECT_TRUE(s->gpu_pods["node-0"][1].nominated);
  EXPECT_EQ(s->gpu_pods.size(), 1u);
  // The validation, the node claims, node-0's pods, the unbound pods, the profile.
  EXPECT_EQ(transport_->requests().size(), 5u);
}

// Claims come from the API, not a cache; a claim's holder is read once to know whether it is
// gone (here: deleted, so its claim is stale; the other's run is still going).
TEST_F(ApiTest, ObserveReadsClaimsAndWhetherTheirHoldersAreGone) {
  transport_->Expect("GET", kPvalPath, Reply().WithBody(Validation(Spec()).dump()));
  nodes_ = {Node("node-0"), Node("node-1")};
  const auto t = kT0;
  Json list = {{"items",
                {BuildClaimLease("perfgate-system", "node-0", {"deleted", "u9", "g1"}, 60, t),
                 BuildClaimLease("perfgate-system", "node-1", {"running", "u8", "g2"}, 60, t)}}};
  transport_->Expect("GET", kClaimsPath, Reply().WithBody(list.dump()));
  transport_->Expect("GET", "/apis/perfgate.io/v1alpha1/perfvalidations/deleted",
                     Reply().WithStatus(404).WithBody(NotFoundBody()));
  Json running = Validation(Spec());
  running["metadata"]["name"] = "running";
  running["metadata"]["uid"] = "u8";
  running["metadata"]["generation"] = 2;
  transport_->Expect("GET", "/apis/perfgate.io/v1alpha1/perfvalidations/running",
                     Reply().WithBody(running.dump()));
  // Each free node's pods and the unbound pods (none holds GPUs).
  transport_->Expect("GET", "/api/v1/pods?", Reply().WithBody(R"({"items": []})"));
  transport_->Expect("GET", "/api/v1/pods?", Reply().WithBody(R"({"items": []})"));
  transport_->Expect("GET", "/api/v1/pods?", Reply().WithBody(R"({"items": []})"));
  auto s = Observe(*client_, caches_, config_, "v");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->claims.size(), 2u);
  EXPECT_TRUE(s->claims.at("node-0").holder_gone);
  EXPECT_FALSE(s->claims.at("node-1").holder_gone);
  EXPECT_EQ(s->claims.at("node-1").holder, (ClaimHolder{"running", "u8", "g2"}));
}

// A claim on a node this validation does not select keeps nothing of it off a node: its holder
// is not read (with 100 validations over 10 nodes apiece, each look read the other 99).
TEST_F(ApiTest, ObserveReadsNoHolderOfAClaimOnANodeItDoesNotSelect) {
  Json spec = Spec();
  spec["nodes"] = {"node-0"};
  transport_->Expect("GET", kPvalPath, Reply().WithBody(Validation(spec).dump()));
  nodes_ = {Node("node-0"), Node("node-1")};
  Json list = {
      {"items", {BuildClaimLease("perfgate-system", "node-1", {"other", "u7", "g1"}, 60, kT0)}}};
  transport_->Expect("GET", kClaimsPath, Reply().WithBody(list.dump()));
  transport_->Expect("GET", "/api/v1/pods?", Reply().WithBody(R"({"items": []})"));
  transport_->Expect("GET", "/api/v1/pods?", Reply().WithBody(R"({"items": []})"));
  auto s = Observe(*client_, caches_, config_, "v");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->claims.size(), 1u);
  for (const auto& path : Paths()) {
    EXPECT_EQ(path.find("perfvalidations/other"), std::string::npos) << path;
  }
}

// Two edits of one node in one pass (given back, then its verdict) while the cache still shows
// the node before the first: the second starts from what the first wrote, so it neither meets
// a 409 nor reads the node again.
TEST_F(ApiTest, ASecondNodeEditStartsFromTheFirstWriteNotTheLaggingCache) {
  ReconcileMetrics metrics;
  Actor actor(client_, config_, metrics, WallClockAt(kT0));
  Snapshot s = SnapshotOfV();
  Json cached = Node("node-0");
  cached["metadata"]["resourceVersion"] = "10";
  cached["metadata"]["labels"][kUnderTestLabel] = LabelValue("v");
  s.nodes["node-0"] = cached;
  Decision d;
  d.restore_nodes.push_back({"node-0", false});
  d.node_verdicts.push_back({"node-0", verdict::Verdict::kPass, std::nullopt});
  Json given_back = cached;
  given_back["metadata"]["labels"].erase(kUnderTestLabel);
  given_back["metadata"]["resourceVersion"] = "11";
  transport_->Expect("PUT", "/api/v1/nodes/node-0", Reply().WithBody(given_back.dump()));
  transport_->Expect("PUT", "/api/v1/nodes/node-0", Reply().WithBody(given_back.dump()));
  ASSERT_TRUE(actor.Apply(s, d).ok());
  ASSERT_EQ(Paths(),
            (std::vector<std::string>{"PUT /api/v1/nodes/node-0", "PUT /api/v1/nodes/node-0"}));
  const Json second = Json::parse(transport_->requests()[1].body);
  EXPECT_EQ(second["metadata"]["resourceVersion"], "11");
  EXPECT_FALSE(second["metadata"]["labels"].contains(kUnderTestLabel));
  EXPECT_EQ(second["metadata"]["labels"].value(kVerdictLabel, ""), "passed");
}

// A refused eviction (a PodDisruptionBudget's 429) is asked again at the documented pace,
// kEvictionRetry after the refusal, however often reconciles come in between; what it said is
// kept for the status meanwhile.
TEST_F(ApiTest, ARefusedEvictionIsAskedAgainOnlyEveryTwoSeconds) {
  ReconcileMetrics metrics;
  auto clock = WallClockAt(kT0);
  Actor actor(client_, config_, metrics, clock);
  const std::string refusal = R"({"kind": "Status", "apiVersion": "v1", "status": "Failure",
      "message": "Cannot evict pod as it would violate the pod's disruption budget.",
      "reason": "TooManyRequests", "code": 429,
      "details": {"causes": [{"reason": "DisruptionBudget",
          "message": "The disruption budget train needs 2 healthy pods and has 2 currently"}]}})";
  for (int i = 0; i < 3; ++i) {
    transport_->Expect("POST", "/api/v1/namespaces/ml/pods/train-0/eviction",
                       Reply().WithStatus(429).WithBody(refusal));
  }
  Decision d;
  d.evictions.push_back({"ml", "train-0"});
  auto evictions = [&] {
    int n = 0;
    for (const auto& p : Paths()) n += p.find("/eviction") != std::string::npos;
    return n;
  };
  // Ten reconciles in 1.9 s (node and pod events wake it): one eviction asked.
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(actor.Apply(SnapshotOfV(), d).ok());
    clock->now += std::chrono::milliseconds(190);
  }
  EXPECT_EQ(evictions(), 1);
  const auto refused = actor.EvictionsRefused("v");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused.at("ml/train-0").find("The disruption budget train needs 2 healthy pods"),
            std::string::npos)
      << refused.at("ml/train-0");
  // 2 s after the refusal: asked again, and again only 2 s after that one.
  clock->now = kT0 + std::chrono::seconds(2);
  ASSERT_TRUE(actor.Apply(SnapshotOfV(), d).ok());
  EXPECT_EQ(evictions(), 2);
  clock->now += std::chrono::milliseconds(1500);
  ASSERT_TRUE(actor.Apply(SnapshotOfV(), d).ok());
  EXPECT_EQ(evictions(), 2);
  clock->now += std::chrono::milliseconds(500);
  ASSERT_TRUE(actor.Apply(SnapshotOfV(), d).ok());
  EXPECT_EQ(evictions(), 3);
  EXPECT_EQ(actor.EvictionsRefused("v").size(), 1u);
}

// A claim lost to someone faster (409 AlreadyExists): that node's pod is not created, nor any
// node's claimed after it; the reconcile is told to look again soon.
TEST_F(ApiTest, ApplyCreatesNoPodOnANodeWhoseClaimWasLost) {
  ReconcileMetrics metrics;
  Actor actor(client_, config_, metrics, WallClockAt(kT0));
  Snapshot s = SnapshotOfV();
  Decision d;
  for (const std::string node : {"node-0", "node-1", "node-2"}) {
    d.claims.push_back({ClaimAction::Kind::kCreate, node,
                        BuildClaimLease("perfgate-system", node, {"v", "u1", "g1"}, 60, kT0)});
    Json pod = {{"metadata", {{"name", "v-g1-" + node}, {"labels", {{kNodeLabel, node}}}}},
                {"spec", Json::object()}};
    d.pods.push_back({pod, ""});
  }
  const std::string leases = "/apis/coordination.k8s.io/v1/namespaces/perfgate-system/leases";
  transport_->Expect("POST", leases, Reply().WithStatus(201).WithBody("{}"));
  transport_->Expect(
      "POST", leases,
      Reply().WithStatus(409).WithBody(
          R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"AlreadyExists","code":409,
              "message":"leases.coordination.k8s.io \"claim-node-1\" already exists"})"));
  transport_->Expect("POST", "/api/v1/namespaces/perfgate-system/pods",
                     Reply().WithStatus(201).WithBody("{}"));
  ASSERT_TRUE(actor.Apply(s, d).ok());
  const auto paths = Paths();
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[2], "POST /api/v1/namespaces/perfgate-system/pods");
  EXPECT_EQ(Json::parse(transport_->requests()[2].body)["metadata"]["name"], "v-g1-node-0");
  EXPECT_TRUE(actor.TakeClaimLost("v"));
  EXPECT_FALSE(actor.TakeClaimLost("v"));
}

// Expectations: after its own writes (the status write among them) a reconcile that still runs
// on a cache without the new pod and result does not POST them again; once the cache shows
// them, the expectation ends.
TEST_F(ApiTest, NoSecondPostFromAStaleCacheAfterTheStatusWrite) {
  ReconcileMetrics metrics;
  Actor actor(client_, config_, metrics, WallClockAt(kT0));
  Snapshot s = SnapshotOfV();
  Decision d;
  d.results.push_back({{{"metadata", {{"name", "v-g1-node-1"}}}}, ""});
  d.pods.push_back({{{"metadata", {{"name", "v-g1-node-0"}}}, {"spec", Json::object()}}, ""});
  transport_->Expect("POST", "/apis/perfgate.io/v1alpha1/namespaces/perfgate-system/perfresults",
                     Reply().WithStatus(201).WithBody("{}"));
  transport_->Expect("POST", "/api/v1/namespaces/perfgate-system/pods",
                     Reply().WithStatus(201).WithBody("{}"));
  ASSERT_TRUE(actor.Apply(s, d).ok());
  transport_->Expect("PUT", std::string(kPvalPath) + "/status",
                     Reply().WithBody(s.validation.dump()));
  ASSERT_TRUE(actor.Report(s.validation, {{"run", "g1"}}).ok());
  ASSERT_EQ(transport_->requests().size(), 3u);
  // The next reconcile, on the same stale cache: the same decision, no POST.
  ASSERT_TRUE(actor.Apply(s, d).ok());
  EXPECT_EQ(transport_->requests().size(), 3u);
  EXPECT_EQ(actor.expectations().size(), 2u);
  // The cache caught up: nothing is expected any more.
  s.pods.push_back(ViewOfPod(d.pods[0].pod));
  s.results.push_back(d.results[0].result);
  ASSERT_TRUE(actor.Apply(s, Decision{}).ok());
  EXPECT_EQ(actor.expectations().size(), 0u);
}

TEST_F(ApiTest, ReportWritesOnlyAChangedStatus) {
  ReconcileMetrics metrics;
  Actor actor(client_, config_, metrics, WallClockAt(kT0));
  const Json v = Validation(Spec(), {{"run", "g1"}});
  EXPECT_TRUE(actor.Report(v, v["status"]).ok());
  EXPECT_TRUE(transport_->requests().empty());
  transport_->Expect("PUT", std::string(kPvalPath) + "/status", Reply().WithBody(v.dump()));
  EXPECT_TRUE(actor.Report(v, {{"run", "g1"}, {"observedGeneration", 1}}).ok());
  ASSERT_EQ(transport_->requests().size(), 1u);
  EXPECT_EQ(Json::parse(transport_->requests()[0].body)["status"].value("observedGeneration", 0),
            1);
}

// The order of the writes: a gang member's result is written before its pod goes (deleting a
// rank first lets its peers fail on their own and write an ERROR that hides the gang's reason),
// results before pods; every rank of a gang at the rendezvous host gets the same free port; an
// event with a once-key goes out once.
TEST_F(ApiTest, ApplyWritesInOrderAndGivesAGangOnePort) {
  config_.gang_rendezvous_host = "127.0.0.1";
  ReconcileMetrics metrics;
  Actor actor(client_, config_, metrics, WallClockAt(kT0));
  Snapshot s = SnapshotOfV();
  Decision d;
  d.results.push_back({{{"metadata", {{"name", "v-g1-node-0"}}}}, "v-g1-node-0"});
  for (int rank = 0; rank < 2; ++rank) {
    Json pod = {
        {"metadata", {{"name", "p" + std::to_string(rank)}}},
        {"spec", {{"containers", {{{"env", {{{"name", "NCCL_COMM_ID"}, {"value", ""}}}}}}}}}};
    d.pods.push_back({pod, "v-g1-gang0"});
  }
  d.events.push_back({"Normal", "Started", "run g1 started", false, "v/g1"});
  const std::string ns = "/api/v1/namespaces/perfgate-system";
  transport_->Expect("DELETE", ns + "/pods/v-g1-node-0", Reply().WithBody("{}"));
  transport_->Expect("POST", "/apis/perfgate.io/v1alpha1/namespaces/perfgate-system/perfresults",
                     Reply().WithStatus(201).WithBody("{}"));
  transport_->Expect("POST", "/api/v1/namespaces/default/events",
                     Reply().WithStatus(201).WithBody("{}"));
  transport_->Expect("POST", ns + "/pods", Reply().WithStatus(201).WithBody("{}"));
  transport_->Expect("POST", ns + "/pods", Reply().WithStatus(201).WithBody("{}"));
  ASSERT_TRUE(actor.Apply(s, d).ok());
  const auto paths = Paths();
  ASSERT_EQ(paths.size(), 5u);
  EXPECT_EQ(paths[0], "POST /api/v1/namespaces/default/events");
  EXPECT_EQ(paths[1], "POST /apis/perfgate.io/v1alpha1/namespaces/perfgate-system/perfresults");
  EXPECT_EQ(paths[2], "DELETE " + ns + "/pods/v-g1-node-0");
  std::set<std::string> addresses;
  for (size_t i = 3; i < 5; ++i) {
    const Json pod = Json::parse(transport_->requests()[i].body);
    addresses.insert(pod["spec"]["containers"][0]["env"][0].value("value", ""));
  }
  ASSERT_EQ(addresses.size(), 1u);
  EXPECT_EQ(addresses.begin()->rfind("127.0.0.1:", 0), 0u);
  EXPECT_NE(*addresses.begin(), "127.0.0.1:");
  EXPECT_EQ(metrics.pods_created, 2u);
  EXPECT_EQ(metrics.results_written_by_operator, 1u);
  // The same decision again: the Started event is not sent twice.
  Decision again;
  again.events = d.events;
  ASSERT_TRUE(actor.Apply(s, again).ok());
  EXPECT_EQ(transport_->requests().size(), 5u);
}

}  // namespace
}  // namespace perfgate::op
