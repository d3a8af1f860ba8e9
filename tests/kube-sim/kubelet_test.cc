// kube-sim's scheduler and kubelet: pods run as local processes with their ConfigMaps, env and
// a service-account token bound to pod and node; kubectl inside the pod is the in-cluster
// client.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <sstream>

#include "tests/kube-sim/kube_sim.h"
#include "tests/kube-sim/test_util.h"

namespace perfgate::kubesim {
namespace {

using ::testing::ContainsRegex;
using testing::Eventually;
using ::testing::HasSubstr;
using testing::Kubectl;

Json Pod(const std::string& ns, const std::string& name, const std::string& script,
         const std::string& node = "") {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec",
               {{"restartPolicy", "Never"},
                {"containers",
                 {{{"name", "main"},
                   {"image", "busybox:1.36"},
                   {"command", {"/bin/sh", "-c", script}},
                   {"env",
                    {{{"name", "POD_NAME"},
                      {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}},
                     {{"name", "POD_NAMESPACE"},
                      {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.namespace"}}}}}},
                     {{"name", "NODE_NAME"},
                      {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}},
                     {{"name", "GREETING_FROM_ENV"}, {"value", "hi-$(POD_NAME)"}}}}}}}}}};
  if (!node.empty()) pod["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", node}};
  return pod;
}

std::string Phase(const KubeSim& sim, const std::string& ns, const std::string& name) {
  auto p = sim.Get("", "pods", ns, name);
  return p.ok() ? p->value("status", Json::object()).value("phase", "") : "<gone>";
}

bool Finished(const KubeSim& sim, const std::string& ns, const std::string& name) {
  std::string phase = Phase(sim, ns, name);
  return phase == "Succeeded" || phase == "Failed";
}

class KubeletTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Options o;
    o.nodes = 2;
    o.gpusPerNode = 8;
    o.imageMap["example.com/perfgate-worker"] = "/bin/echo";
    sim_ = std::make_unique<KubeSim>(o);
    ASSERT_TRUE(sim_->Start().ok());
    const std::string rbac = R"(apiVersion: v1
kind: Namespace
metadata: {name: t}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: worker, namespace: t}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: writer, namespace: t}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [create, get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: worker-writer, namespace: t}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: writer}
subjects:
- {kind: ServiceAccount, name: worker, namespace: t}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: input, namespace: t}
data: {greeting: hello}
)";
    auto r = Kubectl(*sim_, {"apply", "-f", "-"}, rbac);
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  std::unique_ptr<KubeSim> sim_;
};

TEST_F(KubeletTest, PodReadsItsConfigMapAndWritesWithANodeBoundToken) {
  // The in-pod client: kubectl with the token, CA and API address the kubelet provides.
  const std::string script = R"(set -e
G=$(cat "$KUBE_SIM_ROOT/etc/input/greeting")
K="kubectl --server=https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT --certificate-authority=$KUBE_SIM_SA_DIR/ca.crt --token=$(cat $KUBE_SIM_SA_DIR/token) -n $POD_NAMESPACE"
$K create configmap "out-$POD_NAME" --from-literal=greeting="$G" --from-literal=env="$GREETING_FROM_ENV"
$K auth whoami -o json
if $K get secrets; then exit 9; fi
)";
  for (const auto& [name, node] :
       std::vector<std::pair<std::string, std::string>>{{"wa", "node-0"}, {"wb", "node-1"}}) {
    Json pod = Pod("t", name, script, node);
    pod["spec"]["serviceAccountName"] = "worker";
    pod["spec"]["containers"][0]["volumeMounts"] = {
        {{"name", "input"}, {"mountPath", "/etc/input"}}};
    pod["spec"]["volumes"] = {{{"name", "input"}, {"configMap", {{"name", "input"}}}}};
    auto r = Kubectl(*sim_, {"create", "-f", "-"}, pod.dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  ASSERT_TRUE(
      Eventually([&] { return Finished(*sim_, "t", "wa") && Finished(*sim_, "t", "wb"); }, 30));
  for (const auto& [name, node] :
       std::vector<std::pair<std::string, std::string>>{{"wa", "node-0"}, {"wb", "node-1"}}) {
    auto logs = Kubectl(*sim_, {"logs", "-n", "t", name});
    ASSERT_EQ(Phase(*sim_, "t", name), "Succeeded") << logs.out;
    Json pod = *sim_->Get("", "pods", "t", name);
    EXPECT_EQ(pod["spec"]["nodeName"], node);
    EXPECT_EQ(pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 0);
    EXPECT_EQ(pod["status"]["containerStatuses"][0]["state"]["terminated"]["reason"], "Completed");
    auto out = sim_->Get("", "configmaps", "t", "out-" + name);
    ASSERT_TRUE(out.ok()) << logs.out;
    EXPECT_EQ((*out)["data"]["greeting"], "hello");
    EXPECT_EQ((*out)["data"]["env"], "hi-" + name);
    // The authenticator saw the node the token is bound to, not what the pod claims.
    EXPECT_THAT(logs.out, HasSubstr("system:serviceaccount:t:worker"));
    EXPECT_THAT(logs.out, ContainsRegex("authentication.kubernetes.io/node-name\":\\s*\\[\\s*\"" +
                                        node + "\""));
    EXPECT_THAT(logs.out, HasSubstr("secrets is forbidden: User \"system:serviceaccount:t:worker\" "
                                    "cannot list resource \"secrets\" in API group \"\" in the "
                                    "namespace \"t\""));
  }
  std::map<std::string, std::string> writerNode;
  int forbidden = 0;
  for (const auto& rec : sim_->Requests()) {
    if (rec.user != "system:serviceaccount:t:worker") continue;
    if (rec.verb == "create" && rec.resource == "configmaps" && rec.code == 201) {
      writerNode[rec.extra.at("authentication.kubernetes.io/pod-name")[0]] =
          rec.extra.at("authentication.kubernetes.io/node-name")[0];
    }
    if (rec.resource == "secrets" && rec.code == 403) ++forbidden;
  }
  EXPECT_EQ(writerNode["wa"], "node-0");
  EXPECT_EQ(writerNode["wb"], "node-1");
  EXPECT_EQ(forbidden, 2);
}

TEST_F(KubeletTest, AdmissionHookSeesTheNodeAndCanDeny) {
  sim_->SetAdmissionHook([](const RequestRecord& who, const Json&) -> Status {
    auto it = who.extra.find("authentication.kubernetes.io/node-name");
    if (it != who.extra.end() && it->second[0] == "node-1") {
      return Status(Code::kPermissionDenied, "node-1 may not write");
    }
    return Status::Ok();
  });
  const std::string script =
      "kubectl --server=https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT "
      "--certificate-authority=$KUBE_SIM_SA_DIR/ca.crt --token=$(cat $KUBE_SIM_SA_DIR/token) "
      "-n t create configmap out-$POD_NAME --from-literal=a=b";
  for (const auto& [name, node] :
       std::vector<std::pair<std::string, std::string>>{{"pa", "node-0"}, {"pb", "node-1"}}) {
    Json pod = Pod("t", name, script, node);
    pod["spec"]["serviceAccountName"] = "worker";
    pod["spec"]["containers"][0]["terminationMessagePolicy"] = "FallbackToLogsOnError";
    ASSERT_TRUE(sim_->Create("", "pods", pod).ok());
  }
  ASSERT_TRUE(
      Eventually([&] { return Finished(*sim_, "t", "pa") && Finished(*sim_, "t", "pb"); }, 30));
  EXPECT_EQ(Phase(*sim_, "t", "pa"), "Succeeded");
  EXPECT_EQ(Phase(*sim_, "t", "pb"), "Failed");
  Json pb = *sim_->Get("", "pods", "t", "pb");
  const Json& term = pb["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(term["reason"], "Error");
  EXPECT_EQ(term["exitCode"], 1);
  EXPECT_THAT(term["message"].get<std::string>(),
              HasSubstr("configmaps \"out-pb\" is forbidden: node-1 may not write"));
}

TEST_F(KubeletTest, ExitCodeTerminationMessageLogsAndDeadline) {
  Json pod = Pod(
      "t", "msg",
      "echo line1; echo line2; printf 'result: 42' > $KUBE_SIM_ROOT/dev/termination-log; exit 3");
  ASSERT_TRUE(sim_->Create("", "pods", pod).ok());
  Json slow = Pod("t", "slow", "sleep 30");
  slow["spec"]["activeDeadlineSeconds"] = 1;
  ASSERT_TRUE(sim_->Create("", "pods", slow).ok());
  ASSERT_TRUE(Eventually([&] { return Finished(*sim_, "t", "msg"); }, 20));
  Json got = *sim_->Get("", "pods", "t", "msg");
  EXPECT_EQ(got["status"]["phase"], "Failed");
  const Json& term = got["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(term["exitCode"], 3);
  EXPECT_EQ(term["reason"], "Error");
  EXPECT_EQ(term["message"], "result: 42");
  auto r = Kubectl(*sim_, {"logs", "-n", "t", "msg", "--tail=1"});
  EXPECT_EQ(r.out, "line2\n") << r.err;
  // Following a running pod's log streams until its process ends.
  ASSERT_TRUE(sim_->Create("", "pods", Pod("t", "talker", "echo a; sleep 0.3; echo b")).ok());
  ASSERT_TRUE(Eventually([&] { return Phase(*sim_, "t", "talker") == "Running"; }));
  r = Kubectl(*sim_, {"logs", "-f", "-n", "t", "talker"});
  EXPECT_EQ(r.out, "a\nb\n") << r.err;
  r = Kubectl(*sim_, {"logs", "-n", "t", "msg", "--tail=1"});
  EXPECT_EQ(r.out, "line2\n") << r.err;
  r = Kubectl(*sim_, {"get", "pod", "-n", "t", "msg"});
  EXPECT_THAT(r.out, ContainsRegex("msg +0/1 +Error +0"));

  ASSERT_TRUE(Eventually([&] { return Finished(*sim_, "t", "slow"); }, 10));
  got = *sim_->Get("", "pods", "t", "slow");
  EXPECT_EQ(got["status"]["phase"], "Failed");
  EXPECT_EQ(got["status"]["reason"], "DeadlineExceeded");
}

// The container's terminationMessagePath, wherever it points, is an empty file at start and
// its content becomes state.terminated.message; with FallbackToLogsOnError an empty file on
// failure gives the log's tail instead, on success nothing.
TEST_F(KubeletTest, TerminationMessageFromItsPathOrTheLogTail) {
  Json custom = Pod("t", "custom",
                    "test -f $KUBE_SIM_ROOT/var/log/perfgate/msg || exit 7; "
                    "printf 'perfgate result v1: PASS on node-0' > "
                    "$KUBE_SIM_ROOT/var/log/perfgate/msg");
  custom["spec"]["containers"][0]["terminationMessagePath"] = "/var/log/perfgate/msg";
  ASSERT_TRUE(sim_->Create("", "pods", custom).ok());
  Json failing = Pod("t", "failing", "echo one; echo two; exit 2");
  failing["spec"]["containers"][0]["terminationMessagePolicy"] = "FallbackToLogsOnError";
  ASSERT_TRUE(sim_->Create("", "pods", failing).ok());
  Json passing = Pod("t", "passing", "echo one; exit 0");
  passing["spec"]["containers"][0]["terminationMessagePolicy"] = "FallbackToLogsOnError";
  ASSERT_TRUE(sim_->Create("", "pods", passing).ok());
  ASSERT_TRUE(Eventually([&] {
    return Finished(*sim_, "t", "custom") && Finished(*sim_, "t", "failing") &&
           Finished(*sim_, "t", "passing");
  }));
  auto terminated = [&](const std::string& name) {
    return (
        *sim_->Get("", "pods", "t", name))["status"]["containerStatuses"][0]["state"]["terminated"];
  };
  EXPECT_EQ(terminated("custom")["exitCode"], 0);
  EXPECT_EQ(terminated("custom").value("message", ""), "perfgate result v1: PASS on node-0");
  EXPECT_EQ(terminated("failing").value("message", ""), "one\ntwo\n");
  EXPECT_FALSE(terminated("passing").contains("message"));
}

TEST_F(KubeletTest, DeletingARunningPodKillsItsProcess) {
  ASSERT_TRUE(sim_->Create("", "pods", Pod("t", "sleeper", "sleep 60")).ok());
  ASSERT_TRUE(Eventually([&] { return Phase(*sim_, "t", "sleeper") == "Running"; }));
  std::string cid =
      (*sim_->Get("", "pods", "t", "sleeper"))["status"]["containerStatuses"][0]["containerID"];
  pid_t pid = std::stoi(cid.substr(cid.find("://") + 3));
  ASSERT_EQ(::kill(pid, 0), 0);
  auto r = Kubectl(*sim_, {"delete", "pod", "-n", "t", "sleeper", "--timeout=10s"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_FALSE(sim_->Get("", "pods", "t", "sleeper").ok());
  EXPECT_TRUE(Eventually([&] { return ::kill(pid, 0) != 0; }, 5))
      << "process " << pid << " survived";
}

// A finalizer holds a deleted pod after its container ended: the kubelet records the terminal
// phase and the API server keeps the pod (no grace left) until the finalizer goes, as the Job
// controller's tracking finalizer relies on.
TEST_F(KubeletTest, AFinalizerHoldsADeletedPodInItsTerminalPhase) {
  Json held =
      Pod("t", "held", "trap 'sleep 3; exit 143' TERM; echo ready; while :; do sleep 0.1; done");
  held["metadata"]["finalizers"] = {"example.com/record"};
  held["spec"]["terminationGracePeriodSeconds"] = 10;
  ASSERT_TRUE(sim_->Create("", "pods", held).ok());
  // Deleted once its shell has set the trap.
  auto trapped = [&](const std::string& name) {
    return Kubectl(*sim_, {"logs", "-n", "t", name}).out.find("ready") != std::string::npos;
  };
  ASSERT_TRUE(Eventually([&] { return trapped("held"); }));
  ASSERT_TRUE(sim_->Delete("", "pods", "t", "held").ok());
  // The finalizer removed while the container still runs its grace period: the pod stays
  // until its container has ended.
  auto r = Kubectl(*sim_, {"patch", "pod", "-n", "t", "held", "--type=merge", "-p",
                           R"({"metadata":{"finalizers":null}})"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto during = sim_->Get("", "pods", "t", "held");
  ASSERT_TRUE(during.ok()) << "deleted while its container was still stopping";
  EXPECT_EQ((*during)["metadata"].value("deletionGracePeriodSeconds", 0), 10);
  EXPECT_TRUE(Eventually([&] { return Phase(*sim_, "t", "held") == "<gone>"; }, 10));

  // Held: terminal, kept with no grace left, gone once the finalizer is.
  held["metadata"]["name"] = "held2";
  ASSERT_TRUE(sim_->Create("", "pods", held).ok());
  ASSERT_TRUE(Eventually([&] { return trapped("held2"); }));
  ASSERT_TRUE(sim_->Delete("", "pods", "t", "held2").ok());
  ASSERT_TRUE(Eventually([&] { return Phase(*sim_, "t", "held2") == "Failed"; }, 10));
  auto ended = sim_->Get("", "pods", "t", "held2");
  ASSERT_TRUE(ended.ok());
  EXPECT_TRUE((*ended)["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ((*ended)["metadata"].value("deletionGracePeriodSeconds", -1), 0);
  EXPECT_EQ((*ended)["status"]["containerStatuses"][0]["state"]["terminated"].value("exitCode", 0),
            143);
  r = Kubectl(*sim_, {"patch", "pod", "-n", "t", "held2", "--type=merge", "-p",
                      R"({"metadata":{"finalizers":null}})"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(Phase(*sim_, "t", "held2"), "<gone>");
}

TEST_F(KubeletTest, KilledPodsMarkedForOomReportOomKilled) {
  Json pod = Pod("t", "hog", "sleep 60");
  pod["metadata"]["annotations"] = {{"kube-sim.perfgate.io/oom-on-kill", "true"}};
  ASSERT_TRUE(sim_->Create("", "pods", pod).ok());
  ASSERT_TRUE(Eventually([&] { return Phase(*sim_, "t", "hog") == "Running"; }));
  std::string cid =
      (*sim_->Get("", "pods", "t", "hog"))["status"]["containerStatuses"][0]["containerID"];
  ::kill(std::stoi(cid.substr(cid.find("://") + 3)), SIGKILL);
  ASSERT_TRUE(Eventually([&] { return Finished(*sim_, "t", "hog"); }));
  Json got = *sim_->Get("", "pods", "t", "hog");
  EXPECT_EQ(got["status"]["phase"], "Failed");
  EXPECT_EQ(got["status"]["containerStatuses"][0]["state"]["terminated"]["reason"], "OOMKilled");
  EXPECT_EQ(got["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137);
}

// RDMA and EFA devices reach pods as extended resources: a pod asking for one only lands on a
// node that advertises it, and waits with the scheduler's own wording when none is free.
TEST_F(KubeletTest, SchedulerCountsExtendedResourcesBesideGpus) {
  NodeSpec rdma;
  rdma.name = "node-rdma";
  rdma.extendedResources = {{"rdma/rdma_shared_device_a", 1}};
  ASSERT_TRUE(sim_->AddNode(rdma).ok());
  auto rdmaPod = [&](const std::string& name) {
    Json p = Pod("t", name, "sleep 30");
    p["spec"]["containers"][0]["resources"] = {
        {"limits", {{"nvidia.com/gpu", 1}, {"rdma/rdma_shared_device_a", "1"}}}};
    return p;
  };
  ASSERT_TRUE(sim_->Create("", "pods", rdmaPod("r1")).ok());
  ASSERT_TRUE(Eventually([&] {
    auto p = sim_->Get("", "pods", "t", "r1");
    return p.ok() && (*p)["spec"].value("nodeName", "") == "node-rdma";
  }));
  ASSERT_TRUE(sim_->Create("", "pods", rdmaPod("r2")).ok());
  std::string message;
  ASSERT_TRUE(Eventually([&] {
    auto p = sim_->Get("", "pods", "t", "r2");
    if (!p.ok()) return false;
    for (const auto& c : p->value("status", Json::object()).value("conditions", Json::array())) {
      if (c["type"] == "PodScheduled" && c["status"] == "False") message = c.value("message", "");
    }
    return !message.empty();
  }));
  EXPECT_EQ(message,
            "0/3 nodes are available: 3 Insufficient rdma/rdma_shared_device_a. preemption: 0/3 "
            "nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption "
            "is not helpful for scheduling.");
  EXPECT_EQ((*sim_->Get("", "nodes", "", "node-rdma"))["status"]["allocatable"].value(
                "rdma/rdma_shared_device_a", ""),
            "1");
}

TEST_F(KubeletTest, SchedulerHonoursGpusSelectorsTaintsAndCordons) {
  auto gpuPod = [&](const std::string& name, int gpus) {
    Json p = Pod("t", name, "sleep 30");
    p["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", gpus}}}};
    return p;
  };
  ASSERT_TRUE(sim_->Create("", "pods", gpuPod("g1", 8)).ok());
  ASSERT_TRUE(sim_->Create("", "pods", gpuPod("g2", 8)).ok());
  ASSERT_TRUE(Eventually([&] {
    return Phase(*sim_, "t", "g1") == "Running" && Phase(*sim_, "t", "g2") == "Running";
  }));
  EXPECT_NE((*sim_->Get("", "pods", "t", "g1"))["spec"]["nodeName"],
            (*sim_->Get("", "pods", "t", "g2"))["spec"]["nodeName"]);
  ASSERT_TRUE(sim_->Create("", "pods", gpuPod("g3", 1)).ok());
  auto schedMessage = [&](const std::string& name) -> std::string {
    auto p = sim_->Get("", "pods", "t", name);
    if (!p.ok()) return "";
    for (const auto& c : p->value("status", Json::object()).value("conditions", Json::array())) {
      if (c["type"] == "PodScheduled" && c["status"] == "False" && c["reason"] == "Unschedulable") {
        return c["message"];
      }
    }
    return "";
  };
  ASSERT_TRUE(Eventually([&] { return !schedMessage("g3").empty(); }));
  EXPECT_EQ(schedMessage("g3"),
            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are "
            "available: 2 No preemption victims found for incoming pod.");

  // Freeing a node lets the pending pod run there.
  auto r = Kubectl(*sim_, {"delete", "pod", "-n", "t", "g1", "--grace-period=0", "--force"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(Eventually([&] { return Phase(*sim_, "t", "g3") == "Running"; }));

  // A cordoned node and a tainted node, and a selector nobody matches.
  NodeSpec extra;
  extra.name = "node-tainted";
  extra.taints = {{{"key", "perfgate.io/failed"}, {"effect", "NoSchedule"}}};
  ASSERT_TRUE(sim_->AddNode(extra).ok());
  ASSERT_EQ(Kubectl(*sim_, {"cordon", "node-0"}).exitCode, 0);
  ASSERT_EQ(Kubectl(*sim_, {"cordon", "node-1"}).exitCode, 0);
  ASSERT_TRUE(sim_->Create("", "pods", gpuPod("g4", 1)).ok());
  Json picky = gpuPod("g5", 1);
  picky["spec"]["affinity"] = {{"nodeAffinity",
                                {{"requiredDuringSchedulingIgnoredDuringExecution",
                                  {{"nodeSelectorTerms",
                                    {{{"matchExpressions",
                                       {{{"key", "nvidia.com/gpu.product"},
                                         {"operator", "In"},
                                         {"values", {"NVIDIA-B200"}}}}}}}}}}}}};
  ASSERT_TRUE(sim_->Create("", "pods", picky).ok());
  ASSERT_TRUE(
      Eventually([&] { return !schedMessage("g4").empty() && !schedMessage("g5").empty(); }));
  EXPECT_EQ(schedMessage("g4"),
            "0/3 nodes are available: 1 node(s) had untolerated taint {perfgate.io/failed: }, 2 "
            "node(s) were unschedulable. preemption: 0/3 nodes are available: 3 Preemption is not "
            "helpful for scheduling.");
  EXPECT_THAT(schedMessage("g5"), HasSubstr("node(s) didn't match Pod's node affinity/selector"));
  // Tolerating the taint is enough on the tainted node.
  Json tolerant = gpuPod("g6", 1);
  tolerant["spec"]["tolerations"] = {{{"key", "perfgate.io/failed"}, {"operator", "Exists"}}};
  ASSERT_TRUE(sim_->Create("", "pods", tolerant).ok());
  EXPECT_TRUE(Eventually([&] {
    auto p = sim_->Get("", "pods", "t", "g6");
    return p.ok() && (*p)["spec"].value("nodeName", "") == "node-tainted";
  }));
}

// The Priority admission plugin: a class name becomes spec.priority and spec.preemptionPolicy,
// an unknown one is refused in the API server's words, and the one globalDefault class applies
// to pods that name none.
TEST_F(KubeletTest, PriorityClassesResolveAtAdmission) {
  auto r = Kubectl(*sim_, {"apply", "-f", "-"}, R"(apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: background}
value: -1000
preemptionPolicy: Never
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: training}
value: 1000
)");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ((*sim_->Get("scheduling.k8s.io", "priorityclasses", "", "training"))
                .value("preemptionPolicy", ""),
            "PreemptLowerPriority");
  Json low = Pod("t", "low", "true");
  low["spec"]["priorityClassName"] = "background";
  ASSERT_TRUE(sim_->Create("", "pods", low).ok());
  Json got = *sim_->Get("", "pods", "t", "low");
  EXPECT_EQ(got["spec"]["priority"], -1000);
  EXPECT_EQ(got["spec"]["preemptionPolicy"], "Never");
  ASSERT_TRUE(sim_->Create("", "pods", Pod("t", "plain", "true")).ok());
  got = *sim_->Get("", "pods", "t", "plain");
  EXPECT_EQ(got["spec"]["priority"], 0);
  EXPECT_EQ(got["spec"]["preemptionPolicy"], "PreemptLowerPriority");

  Json unknown = Pod("t", "unknown", "true");
  unknown["spec"]["priorityClassName"] = "nope";
  r = Kubectl(*sim_, {"create", "-f", "-"}, unknown.dump());
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("pods \"unknown\" is forbidden: no PriorityClass with name nope "
                               "was found"));
  Json forged = Pod("t", "forged", "true");
  forged["spec"]["priorityClassName"] = "background";
  forged["spec"]["priority"] = 5;
  r = Kubectl(*sim_, {"create", "-f", "-"}, forged.dump());
  EXPECT_THAT(r.err, HasSubstr("the integer value of priority (5) must not be provided in pod "
                               "spec; priority admission controller computed -1000 from the given "
                               "PriorityClass name"));

  auto createClass = [&](const std::string& name, const std::string& rest) {
    return Kubectl(*sim_, {"create", "-f", "-"},
                   "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: " +
                       name + "}\n" + rest);
  };
  r = createClass("too-high", "value: 1000000001\n");
  EXPECT_THAT(r.err, HasSubstr("maximum allowed value of a user defined priority is 1000000000"));
  r = createClass("default-one", "value: 7\nglobalDefault: true\n");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = createClass("default-two", "value: 8\nglobalDefault: true\n");
  EXPECT_THAT(r.err, HasSubstr("PriorityClass default-one is already marked as default. Only one "
                               "default can exist"));
  ASSERT_TRUE(sim_->Create("", "pods", Pod("t", "defaulted", "true")).ok());
  got = *sim_->Get("", "pods", "t", "defaulted");
  EXPECT_EQ(got["spec"]["priority"], 7);
  EXPECT_EQ(got["spec"]["priorityClassName"], "default-one");
  // The system classes are there from the start.
  EXPECT_TRUE(sim_->Get("scheduling.k8s.io", "priorityclasses", "", "system-node-critical").ok());
}

// kube-scheduler's DefaultPreemption for a GPU pod that fits nowhere: the lower-priority pod on
// one node is marked DisruptionTarget (PreemptionByScheduler) and deleted with its own grace
// period, the preemptor is nominated to that node and runs there once the victim has gone; a
// class with preemptionPolicy Never waits instead, and equal priority is never a victim.
TEST_F(KubeletTest, HigherPriorityGpuPodPreemptsLowerPriorityPod) {
  auto r = Kubectl(*sim_, {"apply", "-f", "-"}, R"(apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: background}
value: -1000
preemptionPolicy: Never
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: urgent-but-polite}
value: 5000
preemptionPolicy: Never
)");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto gpuPod = [&](const std::string& name, const std::string& cls, const std::string& script) {
    Json p = Pod("t", name, script);
    p["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", 8}}}};
    if (!cls.empty()) p["spec"]["priorityClassName"] = cls;
    return p;
  };
  // node-0: a background pod that ignores SIGTERM (2 s grace); node-1: a customer's (priority 0).
  Json stubborn = gpuPod("bg", "background", "trap '' TERM; while :; do sleep 0.1; done");
  stubborn["spec"]["terminationGracePeriodSeconds"] = 2;
  stubborn["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", "node-0"}};
  ASSERT_TRUE(sim_->Create("", "pods", stubborn).ok());
  Json other = gpuPod("customer-a", "", "sleep 30");
  other["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", "node-1"}};
  ASSERT_TRUE(sim_->Create("", "pods", other).ok());
  ASSERT_TRUE(Eventually([&] {
    return Phase(*sim_, "t", "bg") == "Running" && Phase(*sim_, "t", "customer-a") == "Running";
  }));
  auto scheduled = [&](const std::string& name) -> Json {
    auto p = sim_->Get("", "pods", "t", name);
    if (!p.ok()) return Json();
    for (const auto& c : p->value("status", Json::object()).value("conditions", Json::array())) {
      if (c["type"] == "PodScheduled") return c;
    }
    return Json();
  };

  // preemptionPolicy Never: it waits, whatever its priority.
  ASSERT_TRUE(sim_->Create("", "pods", gpuPod("polite", "urgent-but-polite", "true")).ok());
  ASSERT_TRUE(Eventually([&] { return scheduled("polite").is_object(); }));
  EXPECT_EQ(scheduled("polite").value("message", ""),
            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: not eligible due "
            "to preemptionPolicy=Never.");
  ASSERT_TRUE(sim_->Delete("", "pods", "t", "polite").ok());
  EXPECT_EQ(Phase(*sim_, "t", "bg"), "Running");

  // Priority 0 (no class, no default) against -1000 on node-0 and 0 on node-1: node-0's pod goes.
  const auto before = std::chrono::steady_clock::now();
  ASSERT_TRUE(sim_->Create("", "pods", gpuPod("customer-b", "", "sleep 30")).ok());
  ASSERT_TRUE(Eventually([&] {
    auto p = sim_->Get("", "pods", "t", "customer-b");
    return p.ok() && p->value("status", Json::object()).value("nominatedNodeName", "") == "node-0";
  }));
  auto victim = sim_->Get("", "pods", "t", "bg");
  ASSERT_TRUE(victim.ok()) << "the victim went before its grace period was up";
  EXPECT_TRUE((*victim)["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ((*victim)["metadata"].value("deletionGracePeriodSeconds", 0), 2);
  Json target;
  for (const auto& c : (*victim)["status"]["conditions"]) {
    if (c["type"] == "DisruptionTarget") target = c;
  }
  EXPECT_EQ(target.value("status", ""), "True");
  EXPECT_EQ(target.value("reason", ""), "PreemptionByScheduler");
  EXPECT_EQ(target.value("message", ""),
            "default-scheduler: preempting to accommodate a higher priority pod");
  EXPECT_EQ(Phase(*sim_, "t", "customer-a"), "Running");
  EXPECT_FALSE(
      (*sim_->Get("", "pods", "t", "customer-a"))["metadata"].contains("deletionTimestamp"));
  // The stubborn victim is killed when its 2 s are up; then the preemptor runs on its node.
  ASSERT_TRUE(Eventually([&] { return Phase(*sim_, "t", "customer-b") == "Running"; }, 15));
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
  EXPECT_GE(waited, 1.5);
  EXPECT_LT(waited, 6.0);
  EXPECT_EQ(Phase(*sim_, "t", "bg"), "<gone>");
  EXPECT_EQ((*sim_->Get("", "pods", "t", "customer-b"))["spec"]["nodeName"], "node-0");
  auto events = Kubectl(*sim_, {"get", "events", "-n", "t", "--field-selector",
                                "involvedObject.name=bg,reason=Preempted", "-o", "json"});
  ASSERT_EQ(events.exitCode, 0) << events.err;
  Json items = Json::parse(events.out)["items"];
  ASSERT_EQ(items.size(), 1u) << events.out;
  EXPECT_THAT(items[0].value("message", ""), ContainsRegex("^Preempted by pod .+ on node node-0$"));

  // Equal priority is no victim.
  ASSERT_TRUE(sim_->Create("", "pods", gpuPod("customer-c", "", "true")).ok());
  ASSERT_TRUE(Eventually([&] { return scheduled("customer-c").is_object(); }));
  EXPECT_EQ(scheduled("customer-c").value("message", ""),
            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are "
            "available: 2 No preemption victims found for incoming pod.");
}

TEST_F(KubeletTest, RestartPolicyRestartsWithBackOffAndCounts) {
  Json pod = Pod("t", "crashy", "echo run; exit 1");
  pod["spec"]["restartPolicy"] = "OnFailure";
  auto created = std::chrono::steady_clock::now();
  ASSERT_TRUE(sim_->Create("", "pods", pod).ok());
  auto restarts = [&] {
    auto p = sim_->Get("", "pods", "t", "crashy");
    if (!p.ok()) return 0;
    return p->value("status", Json::object()).value("containerStatuses", Json::array()).empty()
               ? 0
               : (*p)["status"]["containerStatuses"][0].value("restartCount", 0);
  };
  ASSERT_TRUE(Eventually([&] { return restarts() >= 3; }, 10));
  // Back-off of 0.5 s before the second run and 1 s before the third.
  EXPECT_GE(std::chrono::steady_clock::now() - created, std::chrono::milliseconds(1400));
  Json got = *sim_->Get("", "pods", "t", "crashy");
  EXPECT_NE(got["status"]["phase"], "Succeeded");
  EXPECT_EQ(got["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"], 1);
}

TEST_F(KubeletTest, ImageMapSuppliesTheEntrypointAndEnvComesFromConfigMaps) {
  Json pod = Pod("t", "mapped", "unused");
  Json& c = pod["spec"]["containers"][0];
  c["image"] = "example.com/perfgate-worker:v0.1.0";
  c.erase("command");
  c["args"] = {"run", "$(POD_NAME)", "$(FROM_CM)"};
  c["env"].push_back(
      {{"name", "FROM_CM"},
       {"valueFrom", {{"configMapKeyRef", {{"name", "input"}, {"key", "greeting"}}}}}});
  ASSERT_TRUE(sim_->Create("", "pods", pod).ok());
  // A command naming the mapped binary's file runs the mapped binary.
  Json named = Pod("t", "named", "unused");
  named["spec"]["containers"][0]["image"] = "example.com/perfgate-worker";
  named["spec"]["containers"][0]["command"] = {"/usr/local/bin/echo", "as", "command"};
  ASSERT_TRUE(sim_->Create("", "pods", named).ok());
  ASSERT_TRUE(
      Eventually([&] { return Finished(*sim_, "t", "mapped") && Finished(*sim_, "t", "named"); }));
  EXPECT_EQ(Kubectl(*sim_, {"logs", "-n", "t", "mapped"}).out, "run mapped hello\n");
  EXPECT_EQ(Kubectl(*sim_, {"logs", "-n", "t", "named"}).out, "as command\n");
  // An unmapped image without a command cannot start.
  Json bare = Pod("t", "bare", "unused");
  bare["spec"]["containers"][0].erase("command");
  ASSERT_TRUE(sim_->Create("", "pods", bare).ok());
  ASSERT_TRUE(Eventually([&] { return Finished(*sim_, "t", "bare"); }));
  Json got = *sim_->Get("", "pods", "t", "bare");
  EXPECT_EQ(got["status"]["containerStatuses"][0]["state"]["terminated"]["reason"], "StartError");
}

// kube-sim as a program blocks SIGTERM and SIGINT in every thread (it waits for them with
// sigwait); its kubelet thread inherits that mask. Pods must not: a real kubelet starts each
// container with no signal blocked and default handlers, or graceful shutdown cannot work.
class KubeletSignalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, &old);  // as tests/kube-sim/main.cc does
    Options o;
    o.nodes = 1;
    sim_ = std::make_unique<KubeSim>(o);
    Status started = sim_->Start();
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    ASSERT_TRUE(started.ok()) << started.ToString();
  }
  // `script` in a pod that gets `graceSeconds` to stop.
  Json GracePod(const std::string& name, const std::string& script, int graceSeconds) {
    Json pod = Pod("default", name, script);
    pod["spec"]["terminationGracePeriodSeconds"] = graceSeconds;
    return pod;
  }
  pid_t PodPid(const std::string& name) {
    std::string cid =
        (*sim_->Get("", "pods", "default", name))["status"]["containerStatuses"][0]["containerID"];
    return std::stoi(cid.substr(cid.find("://") + 3));
  }
  std::unique_ptr<KubeSim> sim_;
};

TEST_F(KubeletSignalsTest, PodsStartWithNoSignalBlockedOrIgnored) {
  // Not through a shell: dash clears its signal mask at start and would hide the problem.
  Json pod = Pod("default", "mask", "unused");
  pod["spec"]["containers"][0]["command"] = {"grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status"};
  ASSERT_TRUE(sim_->Create("", "pods", pod).ok());
  ASSERT_TRUE(Eventually([&] { return Finished(*sim_, "default", "mask"); }, 20));
  auto r = Kubectl(*sim_, {"logs", "mask"});
  std::map<std::string, unsigned long long> masks;
  std::istringstream lines(r.out);
  for (std::string key, hex; lines >> key >> hex;) masks[key] = std::stoull(hex, nullptr, 16);
  ASSERT_EQ(masks.size(), 2u) << r.out << r.err;
  EXPECT_EQ(masks["SigBlk:"], 0u) << r.out;
  // Signals 1-31. glibc's posix_spawn leaves its own two internal real-time signals (32, 33)
  // ignored in the child; programs that use them install their handlers again.
  EXPECT_EQ(masks["SigIgn:"] & 0x7fffffffULL, 0u) << r.out;
}

TEST_F(KubeletSignalsTest, DeletingAPodSendsSigtermThenSigkillAfterItsGracePeriod) {
  const std::string marker = sim_->workDir() + "/graceful-marker";
  // Handles SIGTERM and exits 0 at once, well inside its 30 s. Python, not a shell: dash
  // clears an inherited signal mask, a program that is not a shell does not.
  Json graceful_pod = GracePod("graceful", "unused", 30);
  graceful_pod["spec"]["containers"][0]["command"] = {"python3", "-c",
                                                      "import signal, sys, time\n"
                                                      "def stop(*_):\n"
                                                      "    open('" +
                                                          marker +
                                                          "', 'w').write('stopped on TERM\\n')\n"
                                                          "    sys.exit(0)\n"
                                                          "signal.signal(signal.SIGTERM, stop)\n"
                                                          "print('handling SIGTERM', flush=True)\n"
                                                          "while True:\n"
                                                          "    time.sleep(0.1)\n"};
  ASSERT_TRUE(sim_->Create("", "pods", graceful_pod).ok());
  // Ignores SIGTERM: killed when its 2 s are up.
  ASSERT_TRUE(
      sim_->Create("", "pods", GracePod("stubborn", "trap '' TERM; while :; do sleep 0.1; done", 2))
          .ok());
  ASSERT_TRUE(Eventually([&] {
    return Phase(*sim_, "default", "graceful") == "Running" &&
           Phase(*sim_, "default", "stubborn") == "Running";
  }));
  const pid_t graceful = PodPid("graceful"), stubborn = PodPid("stubborn");
  // Python takes a moment to start: delete once its handler is in place.
  ASSERT_TRUE(Eventually([&] {
    return Kubectl(*sim_, {"logs", "graceful"}).out == "handling SIGTERM\n";
  }));

  auto start = std::chrono::steady_clock::now();
  auto r = Kubectl(*sim_, {"delete", "pod", "graceful", "--timeout=20s"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10))
      << "the pod was killed at the end of its grace period instead of stopping on SIGTERM";
  EXPECT_EQ(testing::Slurp(marker), "stopped on TERM\n");
  EXPECT_NE(::kill(graceful, 0), 0);

  start = std::chrono::steady_clock::now();
  r = Kubectl(*sim_, {"delete", "pod", "stubborn", "--timeout=20s"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::seconds(2)) << "killed before its grace period was up";
  EXPECT_LT(took, std::chrono::seconds(10));
  EXPECT_TRUE(Eventually([&] { return ::kill(stubborn, 0) != 0; }, 5));
  EXPECT_FALSE(sim_->Get("", "pods", "default", "stubborn").ok());
}

TEST(KubeletScaleMode, ThousandNodesCompletePodsWithCannedResults) {
  Options o;
  o.nodes = 1000;
  o.scaleMode = true;
  KubeSim sim(o);
  ASSERT_TRUE(sim.Start().ok());
  sim.SetScaleModeAction([](const Json& pod) {
    PodOutcome out;
    out.terminationMessage = "PASS";
    out.log = "ran on " + pod["spec"].value("nodeName", "") + "\n";
    out.objects.push_back(
        {{"apiVersion", "v1"},
         {"kind", "ConfigMap"},
         {"metadata",
          {{"name", "result-" + pod["metadata"].value("name", "")}, {"namespace", "default"}}},
         {"data", {{"node", pod["spec"].value("nodeName", "")}}}});
    return out;
  });
  for (int i = 0; i < 1000; ++i) {
    Json p = Pod("default", "w-" + std::to_string(i), "unused");
    p["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", 8}}}};
    ASSERT_TRUE(sim.Create("", "pods", p).ok());
  }
  ASSERT_TRUE(Eventually(
      [&] {
        for (const auto& p : sim.List("", "pods", "default")) {
          if (p["status"].value("phase", "") != "Succeeded") return false;
        }
        return true;
      },
      30));
  int results = 0;
  for (const auto& cm : sim.List("", "configmaps", "default")) {
    if (cm["metadata"]["name"].get<std::string>().rfind("result-", 0) == 0) ++results;
  }
  EXPECT_EQ(results, 1000);
  auto r = Kubectl(sim, {"logs", "w-7"});
  EXPECT_THAT(r.out, HasSubstr("ran on node-"));
}

}  // namespace
}  // namespace perfgate::kubesim
