#include "operator/reconcile/pods.h"

#include <map>

#include "common/labels.h"
#include "common/node_verdict.h"
#include "common/report.h"
#include "core/names.h"
#include "operator/policy/watch_nodes.h"

namespace perfgate::op {

Json OwnerReferences(const Owner& owner, bool controller) {
  Json ref = {{"apiVersion", "perfgate.io/v1alpha1"},
              {"kind", "PerfValidation"},
              {"name", owner.name},
              {"uid", owner.uid},
              {"blockOwnerDeletion", true}};
  if (controller) ref["controller"] = true;
  return Json::array({ref});
}

namespace {

// The spec's tolerations, and the taints every worker pod must tolerate to run where selection
// sent it.
Json Tolerations(const v1alpha1::PerfValidationSpec& spec) {
  Json tolerations = Json::array();
  for (const auto& t : spec.tolerations()) {
    Json tol = Json::object();
    if (!t.key().empty()) tol["key"] = t.key();
    if (!t.operator_().empty()) tol["operator"] = t.operator_();
    if (!t.value().empty()) tol["value"] = t.value();
    if (!t.effect().empty()) tol["effect"] = t.effect();
    tolerations.push_back(tol);
  }
  // The taint nodes join with until perfgate has tested them (docs/lifecycle.md, "Node pools").
  if (Json t = ProvisioningToleration(spec); !t.is_null()) tolerations.push_back(std::move(t));
  // The taints that hand a node over for testing, or flag the fault it is tested again for.
  for (auto& t : SignalTolerations(spec)) tolerations.push_back(std::move(t));
  // A node perfgate failed must still be testable, or it could never pass again.
  tolerations.push_back({{"key", kFailedTaint}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
  // Nor could a node perfgate cordoned: selection already decides which cordoned nodes are
  // tested (perfgate's own cordon, includeCordoned, named nodes), so the pod must run there.
  tolerations.push_back({{"key", "node.kubernetes.io/unschedulable"},
                         {"operator", "Exists"},
                         {"effect", "NoSchedule"}});
  // GPU node pools keep other pods off with this taint (GKE sets nvidia.com/gpu=present by
  // default); a pod that requests GPUs tolerates it, as the ExtendedResourceToleration admission
  // plugin would add.
  tolerations.push_back({{"key", "nvidia.com/gpu"}, {"operator", "Exists"}});
  return tolerations;
}

Json FieldEnv(const std::string& name, const std::string& path) {
  Json field_ref = {{"fieldPath", path}};
  Json value_from = {{"fieldRef", std::move(field_ref)}};
  return {{"name", name}, {"valueFrom", std::move(value_from)}};
}

Json ValueEnv(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

Json WorkerEnv(const Owner& owner, const PodParams& p) {
  Json env = Json::array();
  env.push_back(FieldEnv("NODE_NAME", "spec.nodeName"));
  env.push_back(FieldEnv("POD_NAMESPACE", "metadata.namespace"));
  env.push_back(ValueEnv("PERFGATE_RUN", p.run));
  env.push_back(ValueEnv("PERFGATE_VALIDATION", owner.name));
  env.push_back(ValueEnv("PERFGATE_VALIDATION_UID", owner.uid));
  env.push_back(ValueEnv("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"));
  return env;
}

Json WorkerResources(int gpus) {
  Json requests = {{"cpu", "1"}, {"memory", "1Gi"}};
  Json limits = {{"memory", "32Gi"}};
  if (gpus > 0) {
    requests["nvidia.com/gpu"] = std::to_string(gpus);
    limits["nvidia.com/gpu"] = std::to_string(gpus);
  }
  return {{"requests", std::move(requests)}, {"limits", std::move(limits)}};
}

Json WorkerContainer(const Owner& owner, const ReconcilerConfig& config, const PodParams& p) {
  Json command = {"perfgate-worker", "run", "/etc/perfgate/plan.yaml", "--result", p.pod_name};
  if (config.enable_fixtures) command.push_back("--enable-fixtures");
  Json capabilities = {{"drop", {"ALL"}}};
  Json security = {{"allowPrivilegeEscalation", false}, {"capabilities", std::move(capabilities)}};
  Json plan_mount = {{"name", "plan"}, {"mountPath", "/etc/perfgate"}, {"readOnly", true}};
  Json container = Json::object();
  container["name"] = "worker";
  container["image"] = config.worker_image;
  container["command"] = std::move(command);
  container["env"] = WorkerEnv(owner, p);
  container["resources"] = WorkerResources(p.gpus);
  container["terminationMessagePolicy"] = "FallbackToLogsOnError";
  container["securityContext"] = std::move(security);
  container["volumeMounts"] = Json::array({std::move(plan_mount)});
  if (!config.diagnostics_volume.empty()) {
    container["volumeMounts"].push_back(
        {{"name", "diagnostics"}, {"mountPath", kDiagnosticsMountPath}});
    container["env"].push_back(ValueEnv("PERFGATE_DIAGNOSTICS_DIR", kDiagnosticsMountPath));
  }
  return container;
}

// Required node affinity to exactly `node`, by name.
Json PinToNode(const std::string& node) {
  Json match = {{"key", "metadata.name"}, {"operator", "In"}, {"values", {node}}};
  Json term = {{"matchFields", Json::array({std::move(match)})}};
  Json required = {{"nodeSelectorTerms", Json::array({std::move(term)})}};
  return {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", required}}}};
}

}  // namespace

Json BuildPod(const Owner& owner, const v1alpha1::PerfValidationSpec& spec,
              const ReconcilerConfig& config, const PodParams& p) {
  Json labels = {{"app.kubernetes.io/name", "perfgate-worker"},
                 {"app.kubernetes.io/managed-by", "perfgate-operator"},
                 {kValidationLabel, LabelValue(owner.name)},
                 {kNodeLabel, LabelValue(p.node)},
                 {kRunLabel, p.run}};
  Json metadata = {{"name", p.pod_name},
                   {"namespace", config.name_space},
                   {"labels", std::move(labels)},
                   {"ownerReferences", OwnerReferences(owner, /*controller=*/true)}};
  // Pod Security "restricted" (docs/operator.md): what a gang adds on top is named there.
  Json security = {{"runAsNonRoot", true},
                   {"runAsUser", 65532},
                   {"runAsGroup", 65532},
                   {"seccompProfile", {{"type", "RuntimeDefault"}}}};
  // The bundle volume is written as the worker's group (a PVC's root is root's otherwise).
  if (!config.diagnostics_volume.empty()) security["fsGroup"] = 65532;
  Json plan_volume = {{"name", "plan"}, {"configMap", {{"name", p.config_map}}}};
  Json pod_spec = Json::object();
  pod_spec["restartPolicy"] = "Never";
  pod_spec["serviceAccountName"] = config.worker_service_account;
  pod_spec["activeDeadlineSeconds"] = p.timeout_seconds;
  pod_spec["terminationGracePeriodSeconds"] = 10;
  pod_spec["affinity"] = PinToNode(p.node);
  // yield: below every customer's pod, so the scheduler preempts the worker for theirs; kept
  // once it has gone until its yield is recorded (a reconcile may come after the pod is gone).
  if (spec.disruption().policy() == "yield") {
    pod_spec["priorityClassName"] = config.yield_priority_class;
    metadata["finalizers"] = Json::array({kYieldFinalizer});
  }
  pod_spec["tolerations"] = Tolerations(spec);
  pod_spec["securityContext"] = std::move(security);
  pod_spec["containers"] = Json::array({WorkerContainer(owner, config, p)});
  pod_spec["volumes"] = Json::array({std::move(plan_volume)});
  if (!config.diagnostics_volume.empty()) {
    Json volume = Json::parse(config.diagnostics_volume, nullptr, false);
    if (volume.is_object()) {
      volume["name"] = "diagnostics";
      pod_spec["volumes"].push_back(std::move(volume));
    }
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", std::move(metadata)},
          {"spec", std::move(pod_spec)}};
}

Json BuildGangPod(const Owner& owner, const v1alpha1::PerfValidationSpec& spec,
                  const ReconcilerConfig& config, const PodParams& p, const GangMember& member) {
  Json pod = BuildPod(owner, spec, config, p);
  pod["metadata"]["labels"][kGangLabel] = member.gang_id;
  Json& container = pod["spec"]["containers"][0];
  container["env"].push_back(ValueEnv("PERFGATE_GANG_SIZE", std::to_string(member.size)));
  container["env"].push_back(ValueEnv("PERFGATE_GANG_RANK", std::to_string(member.rank)));
  container["env"].push_back(ValueEnv("PERFGATE_GANG_ID", member.gang_id));
  if (!member.nodes.empty()) {
    std::string nodes;
    for (const auto& n : member.nodes) nodes += (nodes.empty() ? "" : ",") + n;
    container["env"].push_back(ValueEnv("PERFGATE_GANG_NODES", nodes));
  }
  container["env"].push_back(ValueEnv("NCCL_COMM_ID", member.comm_id));
  if (p.gpus > 0) {
    container["env"].push_back(ValueEnv("PERFGATE_GANG_GPUS_PER_NODE", std::to_string(p.gpus)));
  }
  // NCCL's SHM transport and proxy buffers live in /dev/shm; the runtime's 64 MiB is too small.
  const v1alpha1::Gang& gang = spec.gang();
  pod["spec"]["volumes"].push_back(
      {{"name", "dshm"},
       {"emptyDir",
        {{"medium", "Memory"}, {"sizeLimit", gang.shmsize().empty() ? "8Gi" : gang.shmsize()}}}});
  container["volumeMounts"].push_back({{"name", "dshm"}, {"mountPath", "/dev/shm"}});
  // RDMA registration pins memory; without IPC_LOCK NCCL drops the IB/RoCE/EFA transport.
  container["securityContext"]["capabilities"]["add"] = {"IPC_LOCK"};
  if (member.rank == 0 && member.headless_service) {
    pod["spec"]["hostname"] = ObjectName({member.gang_id, "r0"});
    pod["spec"]["subdomain"] = member.gang_id;
  }
  // spec.gang.network (docs/nccl.md, "Pod spec for NCCL"): how this cloud's fast network
  // reaches the pod. BuildPlan has checked the names.
  const v1alpha1::GangNetwork& network = gang.network();
  if (!network.socketifname().empty()) {
    container["env"].push_back(ValueEnv("NCCL_SOCKET_IFNAME", network.socketifname()));
  }
  if (!network.ibhca().empty()) {
    container["env"].push_back(ValueEnv("NCCL_IB_HCA", network.ibhca()));
  }
  // Sorted, as the JSON spec read them: protobuf maps have no order.
  const std::map<std::string, std::string> annotations(network.podannotations().begin(),
                                                       network.podannotations().end());
  const std::map<std::string, std::string> extra_env(network.env().begin(), network.env().end());
  const std::map<std::string, int> extra_resources(network.resources().begin(),
                                                   network.resources().end());
  for (const auto& [k, v] : annotations) pod["metadata"]["annotations"][k] = v;
  for (const auto& [k, v] : extra_env) container["env"].push_back(ValueEnv(k, v));
  for (const auto& [k, v] : extra_resources) {
    // Extended resources: request and limit must be equal (as for nvidia.com/gpu above).
    container["resources"]["requests"][k] = std::to_string(v);
    container["resources"]["limits"][k] = std::to_string(v);
  }
  if (network.hostnetwork()) {
    pod["spec"]["hostNetwork"] = true;
    // Without it a host-network pod uses the node's resolver and rank 0's Service name fails.
    pod["spec"]["dnsPolicy"] = "ClusterFirstWithHostNet";
  }
  return pod;
}

Json BuildGangService(const Owner& owner, const std::string& nameSpace, const std::string& run,
                      const std::string& gang_id, int port) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata",
           {{"name", gang_id},
            {"namespace", nameSpace},
            {"labels", {{kValidationLabel, LabelValue(owner.name)}, {kRunLabel, run}}},
            {"ownerReferences", OwnerReferences(owner, /*controller=*/true)}}},
          {"spec",
           {{"clusterIP", "None"},
            {"publishNotReadyAddresses", true},
            {"selector", {{kGangLabel, gang_id}}},
            {"ports", {{{"name", "nccl-bootstrap"}, {"port", port}, {"protocol", "TCP"}}}}}}};
}

Json BuildPlanConfigMap(const Owner& owner, const std::string& nameSpace, const std::string& run,
                        const std::string& name, const std::string& plan_text) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", name},
            {"namespace", nameSpace},
            {"labels", {{kValidationLabel, LabelValue(owner.name)}, {kRunLabel, run}}},
            {"ownerReferences", OwnerReferences(owner, /*controller=*/true)}}},
          {"data", {{"plan.yaml", plan_text}}}};
}

namespace {

Json ResultObject(const Owner& owner, const std::string& nameSpace, const std::string& run,
                  const std::string& node, const std::string& name, const std::string& worst,
                  Json report) {
  return {{"apiVersion", "perfgate.io/v1alpha1"},
          {"kind", "PerfResult"},
          {"metadata",
           {{"name", name},
            {"namespace", nameSpace},
            {"labels",
             {{kValidationLabel, LabelValue(owner.name)},
              {kNodeLabel, LabelValue(node)},
              {kRunLabel, run}}},
            {"ownerReferences", OwnerReferences(owner, /*controller=*/false)}}},
          {"spec",
           {{"validation", owner.name},
            {"nodeName", node},
            {"run", run},
            {"writtenBy", "operator"},
            {"worst", Cut(worst, 200)},
            {"report", std::move(report)}}}};
}

}  // namespace

Json BuildRecoveredResult(const Owner& owner, const std::string& nameSpace, const std::string& run,
                          const std::string& node, const std::string& name,
                          const termination::NodeResult& decoded) {
  Json report = Json::object();
  if (auto text = report::ToJson(decoded.report); text.ok()) {
    report = Json::parse(*text, nullptr, false);
    if (report.is_discarded()) report = Json::object();
  }
  report["validation"] = owner.name;
  Json obj = ResultObject(owner, nameSpace, run, node, name, decoded.worst, std::move(report));
  obj["metadata"]["annotations"] = {{kRecoveredFromAnnotation, "termination-message"}};
  return obj;
}

Json BuildOperatorResult(const Owner& owner, const std::string& nameSpace, const std::string& run,
                         const std::string& node, const std::string& name,
                         const std::string& reason, const std::string& completion_time) {
  const verdict::Judgement judged = verdict::NoResult(reason);
  return ResultObject(owner, nameSpace, run, node, name, reason,
                      {{"validation", owner.name},
                       {"verdict", verdict::VerdictName(judged.verdict)},
                       {"reason", Cut(judged.reason, 2048)},
                       {"completionTime", completion_time}});
}

}  // namespace perfgate::op
