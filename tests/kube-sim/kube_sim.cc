// KubeSim's public surface: lifecycle, kubeconfig, the built-in resource registry and the
// direct (in-process) accessors.
#include "tests/kube-sim/kube_sim.h"

#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "tests/kube-sim/impl.h"

namespace perfgate::kubesim {
namespace {

ResourceType Builtin(const std::string& group, const std::string& version, const std::string& kind,
                     const std::string& plural, bool namespaced,
                     std::vector<std::string> shortNames = {}, bool statusSub = false) {
  ResourceType t;
  t.group = group;
  t.version = version;
  t.kind = kind;
  t.plural = plural;
  t.singular = kind;
  for (char& c : t.singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  t.namespaced = namespaced;
  t.shortNames = std::move(shortNames);
  t.statusSubresource = statusSub;
  return t;
}

void RegisterBuiltins(std::map<std::string, ResourceType>& types) {
  std::vector<ResourceType> list = {
      Builtin("", "v1", "Pod", "pods", true, {"po"}, true),
      Builtin("", "v1", "Node", "nodes", false, {"no"}, true),
      Builtin("", "v1", "Namespace", "namespaces", false, {"ns"}, true),
      Builtin("", "v1", "Event", "events", true, {"ev"}),
      Builtin("", "v1", "ConfigMap", "configmaps", true, {"cm"}),
      Builtin("", "v1", "Secret", "secrets", true),
      Builtin("", "v1", "Service", "services", true, {"svc"}, true),
      Builtin("", "v1", "ServiceAccount", "serviceaccounts", true, {"sa"}),
      Builtin("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true, {"pvc"}, true),
      Builtin("coordination.k8s.io", "v1", "Lease", "leases", true),
      Builtin("rbac.authorization.k8s.io", "v1", "Role", "roles", true),
      Builtin("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false),
      Builtin("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true),
      Builtin("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings",
              false),
      Builtin("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
              false, {"crd", "crds"}, true),
      Builtin("apps", "v1", "Deployment", "deployments", true, {"deploy"}, true),
      Builtin("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true, {"pdb"}, true),
      Builtin("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false, {"pc"}),
      Builtin("events.k8s.io", "v1", "Event", "events", true, {"ev"}),
      // Dynamic Resource Allocation as Kubernetes 1.34-1.35 serves it: ResourceSlices stable,
      // DeviceTaintRules alpha (docs/kube-sim.md).
      Builtin("resource.k8s.io", "v1", "ResourceSlice", "resourceslices", false),
      Builtin("resource.k8s.io", "v1alpha3", "DeviceTaintRule", "devicetaintrules", false),
      Builtin("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy",
              "validatingadmissionpolicies", false, {}, true),
      Builtin("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding",
              "validatingadmissionpolicybindings", false),
  };
  for (auto& t : list) {
    if (t.key() == "/pods") t.extraSubresources = {"log", "binding", "eviction"};
    if (t.key() == "/serviceaccounts") t.extraSubresources = {"token"};
    if (t.key() == "apiextensions.k8s.io/customresourcedefinitions" ||
        t.key() == "apps/deployments" || t.key() == "policy/poddisruptionbudgets" ||
        t.group == "resource.k8s.io") {
      t.hasGeneration = true;
    }
    types[t.key()] = t;
  }
  ResourceType ssr =
      Builtin("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", false);
  ssr.virtualOnly = true;
  types[ssr.key()] = ssr;
  ResourceType ssar = Builtin("authorization.k8s.io", "v1", "SelfSubjectAccessReview",
                              "selfsubjectaccessreviews", false);
  ssar.virtualOnly = true;
  types[ssar.key()] = ssar;
}

Result<Json> ToResult(const Outcome& o) {
  if (o.ok()) return o.body;
  Code code = Code::kUnknown;
  switch (o.code) {
    case 400:
      code = Code::kInvalidArgument;
      break;
    case 401:
      code = Code::kUnauthenticated;
      break;
    case 403:
      code = Code::kPermissionDenied;
      break;
    case 404:
      code = Code::kNotFound;
      break;
    case 409:
      code = o.body.value("reason", "") == "AlreadyExists" ? Code::kAlreadyExists : Code::kAborted;
      break;
    case 410:
      code = Code::kGone;
      break;
    case 422:
      code = Code::kInvalidArgument;
      break;
    default:
      code = Code::kInternal;
  }
  return Status(code, o.body.value("message", "kube-sim error"));
}

// The namespaces and bootstrap RBAC kube-apiserver creates that perfgate's tests lean on.
void CreateBootstrapObjects(KubeSim::Impl& s) {
  std::lock_guard<std::shared_mutex> lock(s.mu);
  const ResourceType& nsType = *s.FindType("", "namespaces");
  for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    s.CreateLocked(nsType, "", {{"metadata", {{"name", ns}}}}, false, "", nullptr);
  }
  // The bootstrap RBAC kube-apiserver creates that perfgate's tests lean on.
  const ResourceType& cr = *s.FindType("rbac.authorization.k8s.io", "clusterroles");
  const ResourceType& crb = *s.FindType("rbac.authorization.k8s.io", "clusterrolebindings");
  s.CreateLocked(cr, "",
                 {{"metadata", {{"name", "cluster-admin"}}},
                  {"rules",
                   {{{"apiGroups", {"*"}}, {"resources", {"*"}}, {"verbs", {"*"}}},
                    {{"nonResourceURLs", {"*"}}, {"verbs", {"*"}}}}}},
                 false, "", nullptr);
  s.CreateLocked(crb, "",
                 {{"metadata", {{"name", "cluster-admin"}}},
                  {"roleRef",
                   {{"apiGroup", "rbac.authorization.k8s.io"},
                    {"kind", "ClusterRole"},
                    {"name", "cluster-admin"}}},
                  {"subjects",
                   {{{"apiGroup", "rbac.authorization.k8s.io"},
                     {"kind", "Group"},
                     {"name", "system:masters"}}}}},
                 false, "", nullptr);
  s.CreateLocked(cr, "",
                 {{"metadata", {{"name", "system:basic-user"}}},
                  {"rules",
                   {{{"apiGroups", {"authentication.k8s.io"}},
                     {"resources", {"selfsubjectreviews"}},
                     {"verbs", {"create"}}},
                    {{"apiGroups", {"authorization.k8s.io"}},
                     {"resources", {"selfsubjectaccessreviews"}},
                     {"verbs", {"create"}}}}}},
                 false, "", nullptr);
  s.CreateLocked(crb, "",
                 {{"metadata", {{"name", "system:basic-user"}}},
                  {"roleRef",
                   {{"apiGroup", "rbac.authorization.k8s.io"},
                    {"kind", "ClusterRole"},
                    {"name", "system:basic-user"}}},
                  {"subjects",
                   {{{"apiGroup", "rbac.authorization.k8s.io"},
                     {"kind", "Group"},
                     {"name", "system:authenticated"}}}}},
                 false, "", nullptr);
  // The two system PriorityClasses the API server keeps.
  const ResourceType& pc = *s.FindType("scheduling.k8s.io", "priorityclasses");
  for (const auto& [name, value] : std::vector<std::pair<std::string, int>>{
           {"system-cluster-critical", 2000000000}, {"system-node-critical", 2000001000}}) {
    s.CreateLocked(pc, "",
                   {{"metadata", {{"name", name}}},
                    {"value", value},
                    {"description",
                     "Used for system critical pods that must not be moved from "
                     "their current node."}},
                   false, "", nullptr);
  }
}

}  // namespace

KubeSim::KubeSim(Options options) : impl_(std::make_unique<Impl>()) {
  impl_->opts = std::move(options);
}

KubeSim::~KubeSim() { Stop(); }

Status KubeSim::Start() {
  Impl& s = *impl_;
  if (s.started) return FailedPrecondition("kube-sim: Start() called twice");
  ASSIGN_OR_RETURN(s.pki, GeneratePki());
  s.adminToken = "kube-sim-admin-" + RandomHex(16);
  s.signingKey = RandomHex(32);
  if (s.opts.workDir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kube-sim-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return Internal("kube-sim: mkdtemp failed");
    s.workDir = tmpl;
    s.ownsWorkDir = true;
  } else {
    s.workDir = s.opts.workDir;
    std::filesystem::create_directories(s.workDir);
  }
  s.kubeconfigPath =
      s.opts.kubeconfigPath.empty() ? s.workDir + "/kubeconfig" : s.opts.kubeconfigPath;
  if (!s.opts.auditLogPath.empty()) {
    s.auditLog.open(s.opts.auditLogPath, std::ios::out | std::ios::trunc);
    if (!s.auditLog) return Internal("kube-sim: cannot write the audit log " + s.opts.auditLogPath);
  }
  RegisterBuiltins(s.types);
  CreateBootstrapObjects(s);
  RETURN_IF_ERROR(s.server.Start(
      s.opts.host, s.opts.port, s.pki.serverCertPem, s.pki.serverKeyPem,
      [this](const HttpRequest& req, HttpResponder& resp) { impl_->Handle(req, resp); }));
  for (int i = 0; i < s.opts.nodes; ++i) {
    NodeSpec n;
    n.name = "node-" + std::to_string(i);
    n.gpus = s.opts.gpusPerNode;
    n.gpuProduct = s.opts.gpuProduct;
    RETURN_IF_ERROR(AddNode(n));
  }
  // The kubeconfig: CA data, the admin bearer token and the real port.
  std::string kubeconfig =
      "apiVersion: v1\nkind: Config\nclusters:\n- name: kube-sim\n  cluster:\n"
      "    server: " +
      url() + "\n    certificate-authority-data: " + Base64Encode(s.pki.caCertPem) +
      "\nusers:\n- name: kube-sim-admin\n  user:\n    token: " + s.adminToken +
      "\ncontexts:\n- name: kube-sim\n  context:\n    cluster: kube-sim\n    user: kube-sim-admin\n"
      "    namespace: default\ncurrent-context: kube-sim\n";
  {
    std::string tmp = s.kubeconfigPath + ".tmp";
    std::ofstream out(tmp);
    out << kubeconfig;
    out.close();
    if (!out) return Internal("kube-sim: cannot write kubeconfig " + s.kubeconfigPath);
    std::filesystem::rename(tmp, s.kubeconfigPath);
  }
  std::ofstream(s.workDir + "/ca.crt") << s.pki.caCertPem;
  s.started = true;
  s.controller = std::thread([this] { impl_->ControllerLoop(); });
  return Status::Ok();
}

void KubeSim::Stop() {
  Impl& s = *impl_;
  if (!s.started) return;
  s.started = false;
  {
    std::lock_guard<std::shared_mutex> lock(s.mu);
    s.stopping = true;
    s.cv.notify_all();
    s.controlCv.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(s.faultMu);  // a frozen request's wait sees `stopping`
    s.thawCv.notify_all();
  }
  if (s.controller.joinable()) s.controller.join();
  s.KillAllPods();
  s.server.Stop();
  if (s.ownsWorkDir) {
    std::error_code ec;
    std::filesystem::remove_all(s.workDir, ec);
  }
}

std::string KubeSim::url() const {
  return "https://" + impl_->opts.host + ":" + std::to_string(impl_->server.port());
}
int KubeSim::port() const { return impl_->server.port(); }
const std::string& KubeSim::kubeconfigPath() const { return impl_->kubeconfigPath; }
const std::string& KubeSim::adminToken() const { return impl_->adminToken; }
const std::string& KubeSim::caCertPem() const { return impl_->pki.caCertPem; }
const std::string& KubeSim::workDir() const { return impl_->workDir; }

Result<Json> KubeSim::Get(const std::string& group, const std::string& resource,
                          const std::string& ns, const std::string& name) const {
  const Impl& s = *impl_;
  std::shared_lock lock(s.mu);
  const ResourceType* t = s.FindType(group, resource);
  if (t == nullptr) return ::perfgate::NotFound("kube-sim: no resource " + resource + "." + group);
  const Json* o = s.FindObject(*t, ns, name);
  if (o == nullptr) return ToResult(NotFound(*t, name));
  return *o;
}

std::vector<Json> KubeSim::List(const std::string& group, const std::string& resource,
                                const std::string& ns) const {
  const Impl& s = *impl_;
  std::shared_lock lock(s.mu);
  std::vector<Json> out;
  const ResourceType* t = s.FindType(group, resource);
  if (t == nullptr) return out;
  for (const auto& [k, o] : s.ObjectsOf(t->key())) {
    if (ns.empty() || o["metadata"].value("namespace", "") == ns) out.push_back(o);
  }
  return out;
}

Result<Json> KubeSim::Create(const std::string& group, const std::string& resource,
                             const Json& object) {
  std::lock_guard<std::shared_mutex> lock(impl_->mu);
  const ResourceType* t = impl_->FindType(group, resource);
  if (t == nullptr) return ::perfgate::NotFound("kube-sim: no resource " + resource + "." + group);
  ResourceType copy = *t;
  return ToResult(
      impl_->CreateLocked(copy, object.value("metadata", Json::object()).value("namespace", ""),
                          object, false, "Strict", nullptr));
}

Result<Json> KubeSim::Update(const std::string& group, const std::string& resource,
                             const Json& object, bool status) {
  std::lock_guard<std::shared_mutex> lock(impl_->mu);
  const ResourceType* t = impl_->FindType(group, resource);
  if (t == nullptr) return ::perfgate::NotFound("kube-sim: no resource " + resource + "." + group);
  ResourceType copy = *t;
  const Json md = object.value("metadata", Json::object());
  return ToResult(impl_->ReplaceLocked(copy, md.value("namespace", ""), md.value("name", ""),
                                       object, status, false, "Strict", nullptr));
}

Status KubeSim::Delete(const std::string& group, const std::string& resource, const std::string& ns,
                       const std::string& name) {
  std::lock_guard<std::shared_mutex> lock(impl_->mu);
  const ResourceType* t = impl_->FindType(group, resource);
  if (t == nullptr) return ::perfgate::NotFound("kube-sim: no resource " + resource + "." + group);
  ResourceType copy = *t;
  Result<Json> r = ToResult(impl_->DeleteLocked(copy, ns, name, DeleteOptions{}));
  return r.ok() ? Status::Ok() : r.status();
}

uint64_t KubeSim::resourceVersion() const {
  std::shared_lock lock(impl_->mu);
  return impl_->rv;
}

Status KubeSim::AddNode(const NodeSpec& spec) {
  std::lock_guard<std::shared_mutex> lock(impl_->mu);
  return impl_->AddNodeLocked(spec);
}

Result<std::string> KubeSim::IssueServiceAccountToken(const std::string& ns,
                                                      const std::string& serviceAccount,
                                                      const std::string& podName,
                                                      int expirationSeconds) {
  std::lock_guard<std::shared_mutex> lock(impl_->mu);
  return impl_->IssueTokenLocked(ns, serviceAccount, podName, expirationSeconds, nullptr);
}

void KubeSim::SetLatencyMs(int latencyMs) {
  std::lock_guard<std::mutex> lock(impl_->faultMu);
  impl_->latencyMs = latencyMs;
}
void KubeSim::ThrottleNextRequests(int count, int retryAfterSeconds) {
  std::lock_guard<std::mutex> lock(impl_->faultMu);
  impl_->throttleNext = count;
  impl_->retryAfterSeconds = retryAfterSeconds;
}
void KubeSim::FailNextRequests(int count, int httpCode) {
  std::lock_guard<std::mutex> lock(impl_->faultMu);
  impl_->failNext = count;
  impl_->failCode = httpCode;
}
void KubeSim::SetFailureFraction(double fraction, int httpCode) {
  std::lock_guard<std::mutex> lock(impl_->faultMu);
  impl_->failureFraction = fraction;
  impl_->failureFractionCode = httpCode;
}
void KubeSim::DropWatches() {
  std::lock_guard<std::shared_mutex> lock(impl_->mu);
  ++impl_->watchEpoch;
  impl_->cv.notify_all();
}
void KubeSim::ExpireWatchHistory() {
  std::lock_guard<std::shared_mutex> lock(impl_->mu);
  impl_->history.clear();
  impl_->historyFloor = impl_->rv;
  impl_->cv.notify_all();
}
void KubeSim::HoldWatches(bool held) {
  std::lock_guard<std::shared_mutex> lock(impl_->mu);
  impl_->watchesHeld = held;
  impl_->cv.notify_all();
}
void KubeSim::PauseScheduler(bool paused) {
  std::lock_guard<std::shared_mutex> lock(impl_->mu);
  impl_->schedulerPaused = paused;
  impl_->dirty = true;
  impl_->controlCv.notify_all();
}
void KubeSim::SetFrozen(bool frozen) {
  std::lock_guard<std::mutex> lock(impl_->faultMu);
  impl_->frozen = frozen;
  impl_->thawCv.notify_all();
}
std::vector<RequestRecord> KubeSim::Requests() const {
  std::lock_guard<std::mutex> lock(impl_->recordMu);
  return impl_->requests;
}
void KubeSim::SetAdmissionHook(AdmissionHook hook) {
  std::lock_guard<std::shared_mutex> lock(impl_->mu);
  impl_->admission = std::move(hook);
}
void KubeSim::SetScaleModeAction(std::function<PodOutcome(const Json& pod)> action) {
  std::lock_guard<std::shared_mutex> lock(impl_->mu);
  impl_->scaleAction = std::move(action);
}

}  // namespace perfgate::kubesim
