// kube-sim's controllers, run on one thread under the store lock: garbage collector,
// namespace deletion, scheduler and kubelet (pods as local processes).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <tuple>

#include "tests/kube-sim/impl.h"

extern char** environ;

namespace perfgate::kubesim {
namespace {

namespace fs = std::filesystem;

// o[a][b] when it is a string, else "": read in place, for the loops over every pod that run on
// each write (a copy of each pod's status there made a 1,000-node cluster crawl).
const std::string& StringAt(const Json& o, const char* a, const char* b) {
  static const std::string kEmpty;
  const Json& v = Field(Field(o, a), b);
  return v.is_string() ? v.get_ref<const std::string&>() : kEmpty;
}

struct Ref {
  std::string typeKey;
  std::string ns;
  std::string name;
};

int QuantityInt(const Json& v) {
  return v.is_string() ? std::atoi(v.get<std::string>().c_str()) : v.is_number() ? v.get<int>() : 0;
}

// Extended resources (names with a '/': nvidia.com/gpu, rdma/..., vpc.amazonaws.com/efa) a
// pod asks for: per container the larger of limit and request, summed over containers.
// cpu and memory are not modelled (the simulated nodes have plenty).
std::map<std::string, int> ExtendedRequest(const Json& pod) {
  std::map<std::string, int> total;
  const Json& containers = Field(Field(pod, "spec"), "containers");
  if (!containers.is_array()) return total;
  for (const auto& c : containers) {
    const Json& res = Field(c, "resources");
    std::map<std::string, int> want;
    for (const char* kind : {"limits", "requests"}) {
      const Json& amounts = Field(res, kind);
      if (!amounts.is_object()) continue;
      for (const auto& [name, v] : amounts.items()) {
        if (name.find('/') == std::string::npos) continue;
        want[name] = std::max(want[name], QuantityInt(v));
      }
    }
    for (const auto& [name, n] : want) total[name] += n;
  }
  return total;
}

bool Tolerates(const Json& tolerations, const Json& taint) {
  for (const auto& tol : tolerations) {
    std::string op = tol.value("operator", "Equal");
    std::string key = tol.value("key", "");
    std::string effect = tol.value("effect", "");
    if (!effect.empty() && effect != taint.value("effect", "")) continue;
    if (key.empty() && op == "Exists") return true;
    if (key != taint.value("key", "")) continue;
    if (op == "Exists" || tol.value("value", "") == taint.value("value", "")) return true;
  }
  return false;
}

bool MatchNodeSelectorTerm(const Json& term, const Json& node) {
  const Json labels = node["metadata"].value("labels", Json::object());
  for (const auto& e : term.value("matchExpressions", Json::array())) {
    if (!MatchLabelExpression(e, labels)) return false;
  }
  for (const auto& e : term.value("matchFields", Json::array())) {
    if (e.value("key", "") != "metadata.name") return false;
    bool in = false;
    for (const auto& x : e.value("values", Json::array())) in = in || x == node["metadata"]["name"];
    if (e.value("operator", "") == "In" ? !in : in) return false;
  }
  return true;
}

// Why `node` cannot run `pod`, worded as the default scheduler's filter plugins word it;
// empty when it can.
std::string NodeMisfit(const Json& pod, const Json& node, const std::map<std::string, int>& free,
                       const std::map<std::string, int>& request) {
  const Json& podSpec = Field(pod, "spec");
  const Json& nodeSpec = Field(node, "spec");
  const Json& tolerations = Field(podSpec, "tolerations");
  const Json noTolerations = Json::array();
  const Json& tols = tolerations.is_array() ? tolerations : noTolerations;
  if (Field(nodeSpec, "unschedulable").is_boolean() &&
      Field(nodeSpec, "unschedulable").get<bool>()) {
    bool tolerated =
        Tolerates(tols, {{"key", "node.kubernetes.io/unschedulable"}, {"effect", "NoSchedule"}});
    if (!tolerated) return "node(s) were unschedulable";
  }
  const Json& sel = Field(podSpec, "nodeSelector");
  const Json& labels = Field(Field(node, "metadata"), "labels");
  bool affinityOk = true;
  if (sel.is_object()) {
    for (auto it = sel.begin(); it != sel.end(); ++it) {
      const Json& have = Field(labels, it.key().c_str());
      if (have != it.value()) affinityOk = false;
    }
  }
  const Json& terms = Field(Field(Field(Field(podSpec, "affinity"), "nodeAffinity"),
                                  "requiredDuringSchedulingIgnoredDuringExecution"),
                            "nodeSelectorTerms");
  if (terms.is_array() && !terms.empty()) {
    bool any = false;
    for (const auto& term : terms) any = any || MatchNodeSelectorTerm(term, node);
    affinityOk = affinityOk && any;
  }
  if (!affinityOk) return "node(s) didn't match Pod's node affinity/selector";
  const Json& taints = Field(nodeSpec, "taints");
  if (taints.is_array()) {
    for (const auto& taint : taints) {
      std::string effect = taint.value("effect", "");
      if (effect != "NoSchedule" && effect != "NoExecute") continue;
      if (!Tolerates(tols, taint)) {
        return "node(s) had untolerated taint {" + taint.value("key", "") + ": " +
               taint.value("value", "") + "}";
      }
    }
  }
  // As NodeResourcesFit words it; a resource the node does not have at all counts as 0 free.
  for (const auto& [name, want] : request) {
    auto it = free.find(name);
    if (want > (it == free.end() ? 0 : it->second)) return "Insufficient " + name;
  }
  return "";
}

// spec.priority as admission set it (0 for a pod created before any class existed).
int PodPriority(const Json& pod) {
  const Json& v = Field(Field(pod, "spec"), "priority");
  return v.is_number_integer() ? v.get<int>() : 0;
}

// Being deleted because the scheduler preempted it (its DisruptionTarget condition says so).
bool TerminatingByPreemption(const Json& pod) {
  if (!Field(pod, "metadata").contains("deletionTimestamp")) return false;
  const Json& conds = Field(Field(pod, "status"), "conditions");
  if (!conds.is_array()) return false;
  for (const auto& c : conds) {
    if (c.value("type", "") == "DisruptionTarget" && c.value("status", "") == "True" &&
        c.value("reason", "") == "PreemptionByScheduler") {
      return true;
    }
  }
  return false;
}

// A pod the scheduler counts on a node (or nominated to one).
struct Placed {
  std::string key;  // ns/name
  int priority = 0;
  std::map<std::string, int> request;
  bool terminating = false;
};

bool Terminal(const Json& pod) {
  const std::string& phase = StringAt(pod, "status", "phase");
  return phase == "Succeeded" || phase == "Failed";
}

std::string ExpandVars(const std::string& in, const std::map<std::string, std::string>& env) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '$' && i + 1 < in.size() && in[i + 1] == '$') {
      out.push_back('$');
      ++i;
      continue;
    }
    if (in[i] == '$' && i + 1 < in.size() && in[i + 1] == '(') {
      size_t close = in.find(')', i);
      if (close != std::string::npos) {
        std::string name = in.substr(i + 2, close - i - 2);
        auto it = env.find(name);
        if (it != env.end()) {
          out += it->second;
          i = close;
          continue;
        }
      }
    }
    out.push_back(in[i]);
  }
  return out;
}

std::string FieldRef(const Json& pod, const std::string& path) {
  if (path == "metadata.name") return pod["metadata"].value("name", "");
  if (path == "metadata.namespace") return pod["metadata"].value("namespace", "");
  if (path == "metadata.uid") return pod["metadata"].value("uid", "");
  if (path == "spec.nodeName") return pod["spec"].value("nodeName", "");
  if (path == "spec.serviceAccountName") return pod["spec"].value("serviceAccountName", "");
  if (path == "status.podIP" || path == "status.hostIP") return "127.0.0.1";
  if (path == "status.podIPs") return "127.0.0.1";
  std::vector<Json> got = JsonPathEval(pod, "." + path);
  if (path.rfind("metadata.labels['", 0) == 0 || path.rfind("metadata.annotations['", 0) == 0) {
    size_t q1 = path.find('\'');
    size_t q2 = path.rfind('\'');
    std::string map = path.substr(9, path.find('[') - 9);
    std::string key = path.substr(q1 + 1, q2 - q1 - 1);
    return pod["metadata"].value(map, Json::object()).value(key, "");
  }
  if (!got.empty() && got[0].is_string()) return got[0].get<std::string>();
  return got.empty() ? "" : got[0].dump();
}

void WriteFile(const fs::path& path, const std::string& content, int mode) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
  ::chmod(path.c_str(), static_cast<mode_t>(mode));
}

std::string ReadFileTail(const std::string& path, size_t maxBytes, int maxLines) {
  std::string text;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[8192];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
  }
  if (maxLines > 0) {
    size_t pos = text.size();
    if (!text.empty() && text.back() == '\n') --pos;
    int lines = 0;
    while (pos > 0) {
      if (text[pos - 1] == '\n' && ++lines == maxLines) break;
      --pos;
    }
    text = text.substr(pos);
  }
  if (text.size() > maxBytes) text = text.substr(text.size() - maxBytes);
  return text;
}

}  // namespace

void KubeSim::Impl::RecordEventLocked(const Json& involved, const std::string& type,
                                      const std::string& reason, const std::string& message) {
  const ResourceType& evType = *FindType("", "events");
  std::string ns = involved["metadata"].value("namespace", "default");
  if (FindObject(*FindType("", "namespaces"), "", ns) == nullptr) return;
  Json ev = {
      {"metadata",
       {{"generateName", involved["metadata"].value("name", "x") + "."}, {"namespace", ns}}},
      {"involvedObject",
       {{"kind", involved.value("kind", "")},
        {"apiVersion", involved.value("apiVersion", "")},
        {"name", involved["metadata"].value("name", "")},
        {"namespace", ns},
        {"uid", involved["metadata"].value("uid", "")}}},
      {"type", type},
      {"reason", reason},
      {"message", message},
      {"count", 1},
      {"firstTimestamp", NowRfc3339()},
      {"lastTimestamp", NowRfc3339()},
      {"source",
       {{"component", reason == "Scheduled" || reason == "FailedScheduling" || reason == "Preempted"
                          ? "default-scheduler"
                          : "kubelet"}}}};
  CreateLocked(evType, ns, ev, false, "", nullptr);
}

Status KubeSim::Impl::AddNodeLocked(const NodeSpec& spec) {
  const ResourceType& t = *FindType("", "nodes");
  // The kubelet labels a node with its host name, which is at most 63 characters: for a longer
  // node name (a fully qualified one), its first DNS label.
  std::string hostname = spec.name;
  if (hostname.size() > 63) hostname = hostname.substr(0, std::min<size_t>(hostname.find('.'), 63));
  Json labels = {{"kubernetes.io/hostname", hostname},
                 {"kubernetes.io/os", "linux"},
                 {"kubernetes.io/arch", "amd64"},
                 {"nvidia.com/gpu.present", "true"},
                 {"nvidia.com/gpu.product", spec.gpuProduct},
                 {"nvidia.com/gpu.count", std::to_string(spec.gpus)}};
  for (const auto& [k, v] : spec.labels) labels[k] = v;
  Json resources = {{"cpu", "64"},
                    {"memory", "2113929216Ki"},
                    {"pods", "110"},
                    {"ephemeral-storage", "1Ti"},
                    {"nvidia.com/gpu", std::to_string(spec.gpus)}};
  for (const auto& [r, n] : spec.extendedResources) resources[r] = std::to_string(n);
  Json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", spec.name}, {"labels", labels}}},
               {"spec", {{"taints", spec.taints}}},
               {"status",
                {{"capacity", resources},
                 {"allocatable", resources},
                 {"conditions",
                  {{{"type", "Ready"},
                    {"status", "True"},
                    {"reason", "KubeletReady"},
                    {"message", "kubelet is posting ready status"},
                    {"lastHeartbeatTime", NowRfc3339()},
                    {"lastTransitionTime", NowRfc3339()}}}},
                 {"addresses",
                  {{{"type", "InternalIP"}, {"address", "127.0.0.1"}},
                   {{"type", "Hostname"}, {"address", spec.name}}}},
                 {"nodeInfo",
                  {{"kubeletVersion", "v1.32.0-kube-sim"},
                   {"containerRuntimeVersion", "kube-sim://1"},
                   {"operatingSystem", "linux"},
                   {"architecture", "amd64"}}}}}};
  if (spec.taints.empty()) node["spec"].erase("taints");
  if (spec.unschedulable) node["spec"]["unschedulable"] = true;
  Outcome o = CreateLocked(t, "", node, false, "", nullptr);
  if (!o.ok()) return Status(Code::kAlreadyExists, o.body.value("message", ""));
  return Status::Ok();
}

void KubeSim::Impl::ControllerLoop() {
  std::unique_lock<std::shared_mutex> lock(mu);
  while (!stopping) {
    auto wait = runs.empty() && restartNotBefore.empty() ? std::chrono::milliseconds(200)
                                                         : std::chrono::milliseconds(20);
    controlCv.wait_for(lock, wait, [&] { return stopping || dirty; });
    if (stopping) break;
    auto now = std::chrono::steady_clock::now();
    for (auto it = restartNotBefore.begin(); it != restartNotBefore.end();) {
      if (it->second <= now) {
        dirty = true;  // KubeletLocked restarts it
        it = restartNotBefore.erase(it);
      } else {
        ++it;
      }
    }
    if (dirty) {
      dirty = false;
      if (gcDirty) {
        gcDirty = false;
        GarbageCollectLocked();
      }
      if (nodesDirty) {
        nodesDirty = false;
        NodeLifecycleLocked();
      }
      ScheduleLocked();
      KubeletLocked();
      DisruptionControllerLocked();
    }
    ReapPodsLocked();
  }
}

// The node lifecycle controller's NoSchedule taints from the Ready condition: not-ready while
// False, unreachable while Unknown, neither once True. A node without a Ready condition keeps
// what it has (a new one, the not-ready taint admission gave it, without timeAdded).
void KubeSim::Impl::NodeLifecycleLocked() {
  const ResourceType& t = *FindType("", "nodes");
  std::vector<Json> updates;
  for (const auto& [key, node] : objects["/nodes"]) {
    std::string ready;
    for (const auto& c : Field(Field(node, "status"), "conditions")) {
      if (c.value("type", "") == "Ready") ready = c.value("status", "Unknown");
    }
    if (ready.empty()) continue;
    const char* want = ready == "True"    ? nullptr
                       : ready == "False" ? kNotReadyTaint
                                          : kUnreachableTaint;
    Json taints = Json::array();
    bool has_wanted = false;
    for (const auto& taint : Field(Field(node, "spec"), "taints")) {
      const std::string k = taint.value("key", "");
      const bool ours = taint.value("effect", "") == "NoSchedule" &&
                        (k == kNotReadyTaint || k == kUnreachableTaint);
      if (ours && (want == nullptr || k != want)) continue;
      has_wanted = has_wanted || (want != nullptr && ours);
      taints.push_back(taint);
    }
    // As SwapNodeControllerTaint, the controller stamps the taints it adds with timeAdded.
    if (want != nullptr && !has_wanted) {
      taints.push_back({{"key", want}, {"effect", "NoSchedule"}, {"timeAdded", NowRfc3339()}});
    }
    const Json& before = Field(Field(node, "spec"), "taints");
    if (taints == (before.is_array() ? before : Json::array())) continue;
    Json updated = node;
    if (taints.empty()) {
      updated["spec"].erase("taints");
    } else {
      updated["spec"]["taints"] = taints;
    }
    updates.push_back(std::move(updated));
  }
  for (auto& n : updates) {
    const std::string name = n["metadata"].value("name", "");
    ReplaceLocked(t, "", name, std::move(n), false, false, "", nullptr);
  }
}

void KubeSim::Impl::GarbageCollectLocked() {
  // The objects some ownerReference or deletion finalizer names, by uid: only those are looked
  // up below (a map of every object, events included, on each pass was most of its cost).
  std::set<std::string> wanted;
  for (const auto& [key, m] : objects) {
    for (const auto& [k, o] : m) {
      const Json& md = Field(o, "metadata");
      if (md.contains("deletionTimestamp")) wanted.insert(StringAt(o, "metadata", "uid"));
      const Json& refs = Field(md, "ownerReferences");
      if (!refs.is_array()) continue;
      for (const auto& ref : refs) {
        const Json& uid = Field(ref, "uid");
        if (uid.is_string()) wanted.insert(uid.get<std::string>());
      }
    }
  }
  if (wanted.empty()) return;
  std::map<std::string, Ref> byUid;
  for (const auto& [key, m] : objects) {
    for (const auto& [k, o] : m) {
      const std::string& uid = StringAt(o, "metadata", "uid");
      if (wanted.count(uid) == 0) continue;
      byUid[uid] = {key, StringAt(o, "metadata", "namespace"), StringAt(o, "metadata", "name")};
    }
  }
  std::vector<Ref> toDelete;
  std::vector<std::pair<Ref, Json>> toUpdate;  // new ownerReferences
  std::vector<Ref> foregroundDone;
  std::vector<Ref> orphanDone;
  std::map<std::string, int> dependentsOf;  // owner uid -> live dependents
  std::set<std::string> foregroundOwners, orphanOwners;
  for (const auto& [key, m] : objects) {
    for (const auto& [k, o] : m) {
      const Json& md = o["metadata"];
      if (!md.contains("deletionTimestamp")) continue;
      for (const auto& f : md.value("finalizers", Json::array())) {
        if (f == "foregroundDeletion") foregroundOwners.insert(md.value("uid", ""));
        if (f == "orphan") orphanOwners.insert(md.value("uid", ""));
      }
    }
  }
  for (const auto& [key, m] : objects) {
    for (const auto& [k, o] : m) {
      const Json& md = o["metadata"];
      if (!md.contains("ownerReferences")) continue;
      Ref self{key, md.value("namespace", ""), md.value("name", "")};
      Json kept = Json::array();
      bool deleteMe = false;
      int dangling = 0;
      for (const auto& ref : md["ownerReferences"]) {
        std::string uid = ref.value("uid", "");
        if (orphanOwners.count(uid) > 0) continue;
        if (foregroundOwners.count(uid) > 0) {
          deleteMe = true;
          ++dependentsOf[uid];
        }
        if (byUid.count(uid) > 0) {
          kept.push_back(ref);
        } else {
          ++dangling;
        }
      }
      if (deleteMe || (kept.empty() && dangling > 0)) {
        if (!md.contains("deletionTimestamp") || deleteMe) toDelete.push_back(self);
      } else if (kept.size() != md["ownerReferences"].size()) {
        toUpdate.emplace_back(self, kept);
      }
    }
  }
  for (const auto& uid : foregroundOwners) {
    if (dependentsOf[uid] == 0) foregroundDone.push_back(byUid[uid]);
  }
  for (const auto& uid : orphanOwners) orphanDone.push_back(byUid[uid]);
  for (const auto& [ref, refs] : toUpdate) {
    Json* o = FindObject(types[ref.typeKey], ref.ns, ref.name);
    if (o == nullptr) continue;
    Json copy = *o;
    if (refs.empty()) {
      copy["metadata"].erase("ownerReferences");
    } else {
      copy["metadata"]["ownerReferences"] = refs;
    }
    ResourceType t = types[ref.typeKey];
    ReplaceLocked(t, ref.ns, ref.name, copy, false, false, "", nullptr);
  }
  for (const auto& ref : toDelete) {
    auto it = types.find(ref.typeKey);
    if (it == types.end()) continue;
    ResourceType t = it->second;
    Json* o = FindObject(t, ref.ns, ref.name);
    if (o == nullptr || (*o)["metadata"].contains("deletionTimestamp")) continue;
    DeleteOptions background;
    background.propagationPolicy = "Background";
    DeleteLocked(t, ref.ns, ref.name, background);
  }
  auto dropFinalizer = [&](const Ref& ref, const std::string& fin) {
    auto it = types.find(ref.typeKey);
    if (it == types.end()) return;
    ResourceType t = it->second;
    Json* o = FindObject(t, ref.ns, ref.name);
    if (o == nullptr) return;
    Json copy = *o;
    Json kept = Json::array();
    for (const auto& f : copy["metadata"].value("finalizers", Json::array())) {
      if (f != fin) kept.push_back(f);
    }
    copy["metadata"]["finalizers"] = kept;
    ReplaceLocked(t, ref.ns, ref.name, copy, false, false, "", nullptr);
  };
  for (const auto& ref : foregroundDone) dropFinalizer(ref, "foregroundDeletion");
  for (const auto& ref : orphanDone) dropFinalizer(ref, "orphan");

  // Namespace deletion: empty it, then remove it.
  std::vector<std::string> terminating;
  for (const auto& [k, o] : objects["/namespaces"]) {
    if (o["metadata"].contains("deletionTimestamp")) terminating.push_back(o["metadata"]["name"]);
  }
  for (const auto& ns : terminating) {
    bool empty = true;
    std::vector<std::pair<std::string, std::string>> doomed;
    for (const auto& [key, t] : types) {
      if (!t.namespaced || t.virtualOnly) continue;
      for (const auto& [k, o] : objects[key]) {
        if (o["metadata"].value("namespace", "") != ns) continue;
        empty = false;
        if (!o["metadata"].contains("deletionTimestamp"))
          doomed.emplace_back(key, o["metadata"]["name"]);
      }
    }
    for (const auto& [key, name] : doomed) {
      ResourceType t = types[key];
      DeleteLocked(t, ns, name, DeleteOptions{});
    }
    if (empty) RemoveLocked(*FindType("", "namespaces"), "", ns);
  }
}

void KubeSim::Impl::ScheduleLocked() {
  if (schedulerPaused) return;
  const ResourceType podType = *FindType("", "pods");
  auto& pods = objects["/pods"];
  auto& nodes = objects["/nodes"];
  std::vector<std::string> pending;
  for (const auto& [k, p] : pods) {
    if (!StringAt(p, "spec", "nodeName").empty()) continue;
    const std::string& scheduler = StringAt(p, "spec", "schedulerName");
    if (!Field(p, "metadata").contains("deletionTimestamp") &&
        (scheduler.empty() || scheduler == "default-scheduler")) {
      pending.push_back(k);
    }
  }
  if (pending.empty()) return;
  // The scheduling queue: higher priority first, then as they were (by namespace and name).
  std::stable_sort(pending.begin(), pending.end(), [&](const std::string& a, const std::string& b) {
    return PodPriority(pods[a]) > PodPriority(pods[b]);
  });
  std::map<std::string, std::map<std::string, int>> used;  // node -> resource -> in use
  std::map<std::string, std::vector<Placed>> placed;       // node -> its pods, not terminal
  // Pods a preemption made room for, waiting for their victims to go: node -> pods. Their
  // requests are held on that node against pods of no higher priority.
  std::map<std::string, std::vector<Placed>> nominated;
  for (const auto& [k, p] : pods) {
    const std::string& node = StringAt(p, "spec", "nodeName");
    if (node.empty()) {
      const std::string& nom = StringAt(p, "status", "nominatedNodeName");
      if (!nom.empty() && !Field(p, "metadata").contains("deletionTimestamp")) {
        nominated[nom].push_back({k, PodPriority(p), ExtendedRequest(p), false});
      }
      continue;
    }
    if (Terminal(p)) continue;
    std::map<std::string, int> request = ExtendedRequest(p);
    for (const auto& [r, n] : request) used[node][r] += n;
    placed[node].push_back({k, PodPriority(p), std::move(request),
                            Field(p, "metadata").contains("deletionTimestamp")});
  }
  struct NodeInfo {
    std::string name;
    std::map<std::string, int> allocatable;  // extended resources only
    const Json* node;
  };
  std::vector<NodeInfo> nodeInfos;
  int maxAllocatable = 0;
  for (const auto& [nk, node] : nodes) {
    NodeInfo info{node["metadata"]["name"].get<std::string>(), {}, &node};
    for (const auto& [r, v] : Field(Field(node, "status"), "allocatable").items()) {
      if (r.find('/') != std::string::npos) info.allocatable[r] = QuantityInt(v);
    }
    maxAllocatable = std::max(maxAllocatable, info.allocatable["nvidia.com/gpu"]);
    nodeInfos.push_back(std::move(info));
  }
  // What `key` (of `priority`) finds free on `n`: allocatable less the pods there and the pods
  // of at least its priority nominated to it.
  auto freeOn = [&](const NodeInfo& n, const std::string& key, int priority) {
    std::map<std::string, int> free = n.allocatable;
    for (const auto& [r, u] : used[n.name]) free[r] -= u;
    if (nominated.empty()) return free;
    auto it = nominated.find(n.name);
    if (it == nominated.end()) return free;
    for (const auto& nom : it->second) {
      if (nom.key == key || nom.priority < priority) continue;
      for (const auto& [r, u] : nom.request) free[r] -= u;
    }
    return free;
  };
  auto histogram = [&](const std::map<std::string, int>& reasons) {
    std::vector<std::string> parts;
    for (const auto& [why, n] : reasons) parts.push_back(std::to_string(n) + " " + why);
    std::sort(parts.begin(), parts.end());
    std::string joined;
    for (const auto& p : parts) joined += (joined.empty() ? "" : ", ") + p;
    return "0/" + std::to_string(nodes.size()) + " nodes are available: " + joined + ".";
  };
  for (const auto& key : pending) {
    auto it = pods.find(key);
    if (it == pods.end()) continue;
    Json pod = it->second;
    const int priority = PodPriority(pod);
    std::map<std::string, int> reasons;
    std::string best;
    int bestFree = -1;
    const std::map<std::string, int> request = ExtendedRequest(pod);
    for (auto& n : nodeInfos) {
      std::map<std::string, int> free = freeOn(n, key, priority);
      const int freeGpus = free["nvidia.com/gpu"];
      std::string why = NodeMisfit(pod, *n.node, free, request);
      if (!why.empty()) {
        ++reasons[why];
      } else if (freeGpus > bestFree) {
        bestFree = freeGpus;
        best = n.name;
        if (freeGpus >= maxAllocatable) break;  // nothing can beat an empty, largest node
      }
    }
    std::string ns = pod["metadata"]["namespace"];
    std::string name = pod["metadata"]["name"];
    Json status = pod.value("status", Json::object());
    Json conds = Json::array();
    for (const auto& c : status.value("conditions", Json::array())) {
      if (c.value("type", "") != "PodScheduled") conds.push_back(c);
    }
    if (!best.empty()) {
      Json updated = pod;
      updated["spec"]["nodeName"] = best;
      conds.push_back({{"type", "PodScheduled"},
                       {"status", "True"},
                       {"lastProbeTime", nullptr},
                       {"lastTransitionTime", NowRfc3339()}});
      updated["status"]["conditions"] = conds;
      Json prev = it->second;
      ++rv;
      updated["metadata"]["resourceVersion"] = std::to_string(rv);
      it->second = updated;
      Emit(podType, "MODIFIED", updated, prev);
      for (const auto& [r, n] : request) used[best][r] += n;
      placed[best].push_back({key, priority, request, false});
      for (auto& [node, list] : nominated) {
        std::erase_if(list, [&](const Placed& p) { return p.key == key; });
      }
      RecordEventLocked(updated, "Normal", "Scheduled",
                        "Successfully assigned " + ns + "/" + name + " to " + best);
      continue;
    }
    std::string message;
    std::string nominate = StringAt(pod, "status", "nominatedNodeName");
    if (nodes.empty()) {
      message = "no nodes available to schedule pods";
    } else {
      // PostFilter: DefaultPreemption, as kube-scheduler's preemption evaluator decides.
      std::string postFilter;
      const std::string& ownNode = nominate;
      bool terminatingVictim = false;
      for (const auto& p : placed[ownNode]) {
        terminatingVictim = terminatingVictim || (p.priority < priority && p.terminating &&
                                                  TerminatingByPreemption(pods[p.key]));
      }
      if (StringAt(pod, "spec", "preemptionPolicy") == "Never") {
        postFilter = "not eligible due to preemptionPolicy=Never.";
      } else if (!ownNode.empty() && terminatingVictim) {
        postFilter = "not eligible due to a terminating pod on the nominated node.";
      } else {
        struct Candidate {
          std::string node;
          std::vector<Placed> victims;
        };
        std::vector<Candidate> candidates;
        std::map<std::string, int> nodeReasons;
        for (auto& n : nodeInfos) {
          // A node the pod misfits even when empty: preemption cannot help there.
          if (!NodeMisfit(pod, *n.node, n.allocatable, request).empty()) {
            ++nodeReasons["Preemption is not helpful for scheduling"];
            continue;
          }
          std::vector<Placed> lower;
          for (const auto& p : placed[n.name]) {
            if (p.priority < priority) lower.push_back(p);
          }
          if (lower.empty()) {
            ++nodeReasons["No preemption victims found for incoming pod"];
            continue;
          }
          // Every lower-priority pod gone; then as many kept as still leave room, the highest
          // priority first.
          std::map<std::string, int> free = freeOn(n, key, priority);
          for (const auto& v : lower) {
            for (const auto& [r, u] : v.request) free[r] += u;
          }
          if (std::string why = NodeMisfit(pod, *n.node, free, request); !why.empty()) {
            ++nodeReasons[why];
            continue;
          }
          std::stable_sort(lower.begin(), lower.end(), [](const Placed& a, const Placed& b) {
            return a.priority > b.priority;
          });
          Candidate c{n.name, {}};
          for (const auto& v : lower) {
            std::map<std::string, int> kept = free;
            for (const auto& [r, u] : v.request) kept[r] -= u;
            if (NodeMisfit(pod, *n.node, kept, request).empty()) {
              free = std::move(kept);
            } else {
              c.victims.push_back(v);
            }
          }
          candidates.push_back(std::move(c));
        }
        // pickOneNodeForPreemption: the lowest highest victim priority, then the lowest sum of
        // priorities, then the fewest victims.
        auto rank = [](const Candidate& c) {
          int highest = std::numeric_limits<int>::min();
          int64_t sum = 0;
          for (const auto& v : c.victims) {
            highest = std::max(highest, v.priority);
            sum += static_cast<int64_t>(v.priority) + (int64_t{1} << 31);
          }
          return std::make_tuple(highest, sum, c.victims.size());
        };
        const Candidate* chosen = nullptr;
        for (const auto& c : candidates) {
          if (chosen == nullptr || rank(c) < rank(*chosen)) chosen = &c;
        }
        if (chosen == nullptr) {
          postFilter = histogram(nodeReasons);
        } else {
          for (const auto& v : chosen->victims) {
            if (v.terminating) continue;
            PreemptLocked(pods[v.key], pod, chosen->node);
          }
          nominate = chosen->node;
          nominated[nominate].push_back({key, priority, request, false});
        }
      }
      message = histogram(reasons) + (postFilter.empty() ? "" : " preemption: " + postFilter);
    }
    auto cur = pods.find(key);
    if (cur == pods.end()) continue;
    status = cur->second.value("status", Json::object());
    bool same = StringAt(cur->second, "status", "nominatedNodeName") == nominate;
    bool sameMessage = false;
    for (const auto& c : status.value("conditions", Json::array())) {
      if (c.value("type", "") == "PodScheduled" && c.value("message", "") == message) {
        sameMessage = true;
      }
    }
    if (same && sameMessage) continue;
    conds.push_back({{"type", "PodScheduled"},
                     {"status", "False"},
                     {"lastProbeTime", nullptr},
                     {"lastTransitionTime", NowRfc3339()},
                     {"reason", "Unschedulable"},
                     {"message", message}});
    status["conditions"] = conds;
    if (nominate.empty()) {
      status.erase("nominatedNodeName");
    } else {
      status["nominatedNodeName"] = nominate;
    }
    SetPodStatusLocked(ns, name, status);
    if (!sameMessage) RecordEventLocked(pod, "Warning", "FailedScheduling", message);
  }
}

// The victim of a preemption: the DisruptionTarget condition kube-scheduler sets, an event, and
// a graceful delete with the pod's own grace period.
void KubeSim::Impl::PreemptLocked(Json victim, const Json& preemptor, const std::string& node) {
  const ResourceType& podType = *FindType("", "pods");
  const std::string ns = victim["metadata"].value("namespace", "");
  const std::string name = victim["metadata"].value("name", "");
  Json status = victim.value("status", Json::object());
  Json conds = Json::array();
  for (const auto& c : status.value("conditions", Json::array())) {
    if (c.value("type", "") != "DisruptionTarget") conds.push_back(c);
  }
  conds.push_back({{"type", "DisruptionTarget"},
                   {"status", "True"},
                   {"reason", "PreemptionByScheduler"},
                   {"message", StringAt(preemptor, "spec", "schedulerName") +
                                   ": preempting to accommodate a higher priority pod"},
                   {"lastProbeTime", nullptr},
                   {"lastTransitionTime", NowRfc3339()}});
  status["conditions"] = conds;
  SetPodStatusLocked(ns, name, status);
  RecordEventLocked(
      victim, "Normal", "Preempted",
      "Preempted by pod " + preemptor["metadata"].value("uid", "") + " on node " + node);
  DeleteLocked(podType, ns, name, DeleteOptions{});
}

void KubeSim::Impl::SetPodStatusLocked(const std::string& ns, const std::string& name,
                                       const Json& status) {
  const ResourceType& t = *FindType("", "pods");
  Json* pod = FindObject(t, ns, name);
  if (pod == nullptr) return;
  Json prev = *pod;
  (*pod)["status"] = status;
  ++rv;
  (*pod)["metadata"]["resourceVersion"] = std::to_string(rv);
  Emit(t, "MODIFIED", *pod, prev);
}

void KubeSim::Impl::FinishPodDeletionLocked(const ResourceType& t, const std::string& ns,
                                            const std::string& name) {
  Json* pod = FindObject(t, ns, name);
  if (pod == nullptr) return;
  if (Field(*pod, "metadata").value("finalizers", Json::array()).empty()) {
    RemoveLocked(t, ns, name);
    return;
  }
  Json prev = *pod;
  (*pod)["metadata"]["deletionGracePeriodSeconds"] = 0;
  ++rv;
  (*pod)["metadata"]["resourceVersion"] = std::to_string(rv);
  Emit(t, "MODIFIED", *pod, prev);
}

void KubeSim::Impl::KubeletLocked() {
  ResourceType podType = *FindType("", "pods");
  const ResourceType& nodeType = *FindType("", "nodes");
  std::vector<std::string> toStart;
  for (const auto& [k, p] : objects["/pods"]) {
    const std::string& node = StringAt(p, "spec", "nodeName");
    if (node.empty() || Terminal(p) || Field(p, "metadata").contains("deletionTimestamp")) continue;
    const std::string& uid = StringAt(p, "metadata", "uid");
    if (runs.count(uid) > 0 || restartNotBefore.count(uid) > 0) continue;
    if (FindObject(nodeType, "", node) == nullptr) continue;
    toStart.push_back(k);
  }
  for (const auto& k : toStart) {
    auto it = objects["/pods"].find(k);
    if (it != objects["/pods"].end()) {
      Json pod = it->second;
      StartPodLocked(podType, pod);
    }
  }
}

void KubeSim::Impl::StartPodLocked(const ResourceType& podType, Json& pod) {
  (void)podType;
  std::string ns = pod["metadata"]["namespace"];
  std::string name = pod["metadata"]["name"];
  std::string uid = pod["metadata"]["uid"];
  const Json containers = pod["spec"].value("containers", Json::array());
  const Json container = containers.empty() ? Json::object() : containers[0];
  std::string cname = container.value("name", "main");
  std::string image = container.value("image", "");
  Json status = pod.value("status", Json::object());
  status["hostIP"] = "127.0.0.1";
  status["hostIPs"] = {{{"ip", "127.0.0.1"}}};
  status["podIP"] = "127.0.0.1";
  status["podIPs"] = {{{"ip", "127.0.0.1"}}};
  status["startTime"] = NowRfc3339();
  auto setConds = [&](bool ready) {
    Json conds = Json::array();
    for (const auto& c : status.value("conditions", Json::array())) {
      if (c.value("type", "") == "PodScheduled") conds.push_back(c);
    }
    for (const char* type : {"Initialized", "ContainersReady", "Ready"}) {
      bool value = std::string(type) == "Initialized" || ready;
      Json c = {{"type", type},
                {"status", value ? "True" : "False"},
                {"lastProbeTime", nullptr},
                {"lastTransitionTime", NowRfc3339()}};
      if (!value) c["reason"] = "PodCompleted";
      conds.push_back(c);
    }
    status["conditions"] = conds;
  };
  PodRun run;
  run.key = ns + "/" + name;
  run.uid = uid;
  run.started = std::chrono::steady_clock::now();

  if (opts.scaleMode) {
    PodOutcome outcome = scaleAction ? scaleAction(pod) : PodOutcome{};
    for (const auto& obj : outcome.objects) {
      const ResourceType* t = FindTypeByKind(obj.value("apiVersion", ""), obj.value("kind", ""));
      if (t == nullptr) continue;
      ResourceType copy = *t;
      CreateLocked(copy, obj.value("metadata", Json::object()).value("namespace", ns), obj, false,
                   "", nullptr);
    }
    run.finished = true;
    run.logText = outcome.log;
    runs[uid] = run;
    Json term = {{"exitCode", outcome.exitCode},
                 {"reason", outcome.exitCode == 0 ? "Completed" : "Error"},
                 {"startedAt", NowRfc3339()},
                 {"finishedAt", NowRfc3339()},
                 {"containerID", "kubesim://scale-" + uid.substr(0, 8)}};
    if (!outcome.terminationMessage.empty()) term["message"] = outcome.terminationMessage;
    status["phase"] = outcome.exitCode == 0 ? "Succeeded" : "Failed";
    setConds(false);
    status["containerStatuses"] = {{{"name", cname},
                                    {"image", image},
                                    {"imageID", image},
                                    {"ready", false},
                                    {"started", false},
                                    {"restartCount", 0},
                                    {"state", {{"terminated", term}}}}};
    SetPodStatusLocked(ns, name, status);
    return;
  }

  fs::path root = fs::path(workDir) / "pods" / (ns + "_" + name + "_" + uid.substr(0, 8));
  fs::create_directories(root / "dev");
  {
    // The termination-message file exists, empty, when the container starts (the kubelet
    // mounts a fresh one into each container it starts, restarts included).
    std::string msgPath = container.value("terminationMessagePath", "/dev/termination-log");
    fs::path file = root / fs::path(msgPath).relative_path();
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    std::ofstream(file, std::ios::trunc).flush();
  }
  fs::path saDir = root / "var/run/secrets/kubernetes.io/serviceaccount";
  run.root = root.string();
  run.logPath = (root / "container.log").string();

  // Environment: the API address, the per-pod root and service-account dir (documented in
  // docs/kube-sim.md), then the container's own env with the downward API resolved.
  std::map<std::string, std::string> env;
  const char* path = std::getenv("PATH");
  env["PATH"] = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  env["HOME"] = root.string();
  env["HOSTNAME"] = name;
  env["KUBERNETES_SERVICE_HOST"] = opts.host;
  env["KUBERNETES_SERVICE_PORT"] = std::to_string(server.port());
  env["KUBERNETES_SERVICE_PORT_HTTPS"] = std::to_string(server.port());
  env["KUBE_SIM_ROOT"] = root.string();
  env["KUBE_SIM_SA_DIR"] = saDir.string();
  // The same two, as perfgate-worker's configuration names them (docs/operator.md).
  env["PERFGATE_POD_ROOT"] = root.string();
  env["PERFGATE_SERVICE_ACCOUNT_DIR"] = saDir.string();
  auto configMapData = [&](const std::string& cmName) -> Json {
    Json* cm = FindObject(*FindType("", "configmaps"), ns, cmName);
    return cm == nullptr ? Json::object() : cm->value("data", Json::object());
  };
  auto secretData = [&](const std::string& sName) -> Json {
    Json* s = FindObject(*FindType("", "secrets"), ns, sName);
    Json out = Json::object();
    if (s == nullptr) return out;
    // Named, not temporaries: items() only refers to the object it iterates.
    const Json data = s->value("data", Json::object());
    for (const auto& [k, v] : data.items()) {
      Result<std::string> d = Base64Decode(v.get<std::string>());
      out[k] = d.ok() ? *d : "";
    }
    const Json string_data = s->value("stringData", Json::object());
    for (const auto& [k, v] : string_data.items()) out[k] = v;
    return out;
  };
  for (const auto& ef : container.value("envFrom", Json::array())) {
    Json data = ef.contains("configMapRef")
                    ? configMapData(ef["configMapRef"].value("name", ""))
                    : secretData(ef.value("secretRef", Json::object()).value("name", ""));
    for (const auto& [k, v] : data.items()) env[ef.value("prefix", "") + k] = v.get<std::string>();
  }
  for (const auto& e : container.value("env", Json::array())) {
    std::string key = e.value("name", "");
    if (e.contains("value")) {
      env[key] = ExpandVars(e["value"].get<std::string>(), env);
    } else if (e.contains("valueFrom")) {
      const Json& vf = e["valueFrom"];
      if (vf.contains("fieldRef")) {
        env[key] = FieldRef(pod, vf["fieldRef"].value("fieldPath", ""));
      } else if (vf.contains("configMapKeyRef")) {
        env[key] = configMapData(vf["configMapKeyRef"].value("name", ""))
                       .value(vf["configMapKeyRef"].value("key", ""), "");
      } else if (vf.contains("secretKeyRef")) {
        env[key] = secretData(vf["secretKeyRef"].value("name", ""))
                       .value(vf["secretKeyRef"].value("key", ""), "");
      } else if (vf.contains("resourceFieldRef")) {
        std::string res = vf["resourceFieldRef"].value("resource", "");
        std::vector<Json> got =
            JsonPathEval(container, ".resources." + res.substr(0, res.find('.')) + "['" +
                                        res.substr(res.find('.') + 1) + "']");
        env[key] =
            got.empty() ? "0" : (got[0].is_string() ? got[0].get<std::string>() : got[0].dump());
      }
    } else {
      env[key] = "";
    }
  }

  // Volumes, written under the pod root at their mountPath.
  std::string token;
  {
    Result<std::string> tok = IssueTokenLocked(
        ns, pod["spec"].value("serviceAccountName", "default"), name, 3600, nullptr);
    if (tok.ok()) token = *tok;
  }
  const Json volumes = pod["spec"].value("volumes", Json::array());
  auto writeVolume = [&](const Json& vol, const fs::path& dir) {
    fs::create_directories(dir);
    auto writeItems = [&](const Json& data, const Json& items, int mode) {
      if (items.is_array() && !items.empty()) {
        for (const auto& it : items) {
          std::string k = it.value("key", "");
          if (data.contains(k))
            WriteFile(dir / it.value("path", k), data[k].get<std::string>(),
                      it.value("mode", mode));
        }
      } else {
        for (const auto& [k, v] : data.items()) WriteFile(dir / k, v.get<std::string>(), mode);
      }
    };
    if (vol.contains("configMap")) {
      writeItems(configMapData(vol["configMap"].value("name", "")),
                 vol["configMap"].value("items", Json::array()),
                 vol["configMap"].value("defaultMode", 0644));
    } else if (vol.contains("secret")) {
      writeItems(secretData(vol["secret"].value("secretName", "")),
                 vol["secret"].value("items", Json::array()),
                 vol["secret"].value("defaultMode", 0644));
    } else if (vol.contains("downwardAPI")) {
      for (const auto& it : vol["downwardAPI"].value("items", Json::array())) {
        if (it.contains("fieldRef"))
          WriteFile(dir / it.value("path", "x"),
                    FieldRef(pod, it["fieldRef"].value("fieldPath", "")), 0644);
      }
    } else if (vol.contains("projected")) {
      for (const auto& src : vol["projected"].value("sources", Json::array())) {
        if (src.contains("serviceAccountToken")) {
          WriteFile(dir / src["serviceAccountToken"].value("path", "token"), token, 0600);
        } else if (src.contains("configMap")) {
          writeItems(configMapData(src["configMap"].value("name", "")),
                     src["configMap"].value("items", Json::array()), 0644);
        } else if (src.contains("secret")) {
          writeItems(secretData(src["secret"].value("name", "")),
                     src["secret"].value("items", Json::array()), 0644);
        } else if (src.contains("downwardAPI")) {
          for (const auto& it : src["downwardAPI"].value("items", Json::array())) {
            if (it.contains("fieldRef"))
              WriteFile(dir / it.value("path", "x"),
                        FieldRef(pod, it["fieldRef"].value("fieldPath", "")), 0644);
          }
        }
      }
    } else if (vol.contains("hostPath")) {
      std::error_code ec;
      fs::remove(dir, ec);
      fs::create_directory_symlink(vol["hostPath"].value("path", "/"), dir, ec);
    }
  };
  for (const auto& vm : container.value("volumeMounts", Json::array())) {
    for (const auto& vol : volumes) {
      if (vol.value("name", "") != vm.value("name", "")) continue;
      std::string mountPath = vm.value("mountPath", "/");
      writeVolume(vol, root / mountPath.substr(mountPath.find_first_not_of('/') == std::string::npos
                                                   ? mountPath.size()
                                                   : mountPath.find_first_not_of('/')));
    }
  }
  bool automount = pod["spec"].value("automountServiceAccountToken", true);
  if (automount) {
    WriteFile(saDir / "token", token, 0600);
    WriteFile(saDir / "ca.crt", pki.caCertPem, 0644);
    WriteFile(saDir / "namespace", ns, 0644);
  }

  // argv: the image's entrypoint is the mapped binary; a command naming that binary (or none)
  // runs it; any other command runs as given.
  std::vector<std::string> argv;
  std::vector<std::string> command, args;
  for (const auto& c : container.value("command", Json::array()))
    command.push_back(ExpandVars(c, env));
  for (const auto& a : container.value("args", Json::array())) args.push_back(ExpandVars(a, env));
  auto mapped = opts.imageMap.find(image);
  if (mapped == opts.imageMap.end()) {
    std::string noTag =
        image.substr(0, image.rfind(':') == std::string::npos || image.rfind(':') < image.rfind('/')
                            ? image.size()
                            : image.rfind(':'));
    mapped = opts.imageMap.find(noTag);
  }
  if (mapped != opts.imageMap.end()) {
    if (command.empty() || fs::path(command[0]).filename() == fs::path(mapped->second).filename()) {
      argv.push_back(mapped->second);
      if (!command.empty()) argv.insert(argv.end(), command.begin() + 1, command.end());
    } else {
      argv = command;
    }
  } else {
    argv = command;
  }
  argv.insert(argv.end(), args.begin(), args.end());

  Json cstatus = {{"name", cname}, {"image", image}, {"imageID", image}, {"restartCount", 0}};
  const Json previous = status.value("containerStatuses", Json::array());
  if (!previous.empty()) {
    cstatus["restartCount"] = previous[0].value("restartCount", 0);
    if (previous[0].contains("lastState")) cstatus["lastState"] = previous[0]["lastState"];
  }
  pid_t pid = -1;
  std::string spawnError;
  if (argv.empty()) {
    spawnError =
        "kube-sim: container has no command and image \"" + image + "\" is not in --image-map";
  } else {
    std::vector<std::string> envStrings;
    for (const auto& [k, v] : env) envStrings.push_back(k + "=" + v);
    std::vector<char*> cargv, cenv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    for (auto& e : envStrings) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, run.logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addchdir_np(&fa, root.c_str());
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // A container starts as a kubelet starts it: nothing blocked (kube-sim's own threads block
    // SIGTERM to sigwait for it, and a mask survives exec) and every handler at its default
    // (kube-sim ignores SIGPIPE, which also survives exec).
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr, 0);
    int rc = posix_spawnp(&pid, cargv[0], &fa, &attr, cargv.data(), cenv.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      spawnError = "exec: \"" + argv[0] + "\": " + std::strerror(rc);
      pid = -1;
    }
  }
  if (pid < 0) {
    run.finished = true;
    runs[uid] = run;
    status["phase"] = "Failed";
    setConds(false);
    cstatus["ready"] = false;
    cstatus["started"] = false;
    cstatus["state"] = {{"terminated",
                         {{"exitCode", 128},
                          {"reason", "StartError"},
                          {"message", spawnError},
                          {"startedAt", NowRfc3339()},
                          {"finishedAt", NowRfc3339()}}}};
    status["containerStatuses"] = {cstatus};
    SetPodStatusLocked(ns, name, status);
    RecordEventLocked(pod, "Warning", "Failed", spawnError);
    return;
  }
  run.pid = pid;
  runs[uid] = run;
  status["phase"] = "Running";
  setConds(true);
  cstatus["ready"] = true;
  cstatus["started"] = true;
  cstatus["containerID"] = "kubesim://" + std::to_string(pid);
  cstatus["state"] = {{"running", {{"startedAt", NowRfc3339()}}}};
  status["containerStatuses"] = {cstatus};
  SetPodStatusLocked(ns, name, status);
  RecordEventLocked(pod, "Normal", "Started", "Started container " + cname);
}

void KubeSim::Impl::ReapPodsLocked() {
  const ResourceType& podType = *FindType("", "pods");
  auto now = std::chrono::steady_clock::now();
  std::vector<std::string> forget;
  for (auto& [uid, run] : runs) {
    std::string ns = run.key.substr(0, run.key.find('/'));
    std::string name = run.key.substr(run.key.find('/') + 1);
    Json* pod = FindObject(podType, ns, name);
    bool gone = pod == nullptr || (*pod)["metadata"].value("uid", "") != uid;
    if (run.finished || run.pid <= 0) {
      if (gone) forget.push_back(uid);
      continue;
    }
    int wstatus = 0;
    pid_t r = ::waitpid(run.pid, &wstatus, WNOHANG);
    if (r == 0) {
      bool deleting = gone || run.deleting || (*pod)["metadata"].contains("deletionTimestamp");
      if (deleting && !run.killAt) {
        ::kill(-run.pid, SIGTERM);
        long grace =
            gone || run.deleting ? 0 : (*pod)["metadata"].value("deletionGracePeriodSeconds", 30L);
        run.killAt = now + std::chrono::seconds(grace);
      }
      if (run.killAt && now >= *run.killAt) ::kill(-run.pid, SIGKILL);
      if (!deleting && pod != nullptr) {
        long deadline = (*pod)["spec"].value("activeDeadlineSeconds", 0L);
        if (deadline > 0 && now - run.started >= std::chrono::seconds(deadline) &&
            !run.deadlineKilled) {
          run.deadlineKilled = true;
          ::kill(-run.pid, SIGKILL);
        }
      }
      continue;
    }
    ::kill(-run.pid, SIGKILL);  // stragglers in the pod's process group
    run.pid = -1;
    run.finished = true;
    if (gone) {
      forget.push_back(uid);
      continue;
    }
    // Deleted: the kubelet records how the container ended (a terminal phase), then deletes
    // the pod with no grace left; a finalizer keeps it until whoever set it lets go.
    const bool deleted = (*pod)["metadata"].contains("deletionTimestamp");
    int exitCode = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    Json status = (*pod)["status"];
    const Json container = (*pod)["spec"]["containers"][0];
    Json term = {{"exitCode", exitCode},
                 {"reason", exitCode == 0 ? "Completed" : "Error"},
                 {"startedAt", status.value("startTime", NowRfc3339())},
                 {"finishedAt", NowRfc3339()},
                 {"containerID", status["containerStatuses"][0].value("containerID", "")}};
    std::string msgPath = container.value("terminationMessagePath", "/dev/termination-log");
    std::string message = ReadFileTail(run.root + msgPath, 4096, 0);
    if (message.empty() && exitCode != 0 &&
        container.value("terminationMessagePolicy", "File") == "FallbackToLogsOnError") {
      message = ReadFileTail(run.logPath, 2048, 80);
    }
    if (!message.empty()) term["message"] = message;
    if (!WIFEXITED(wstatus) && WTERMSIG(wstatus) == SIGKILL && !run.deadlineKilled &&
        (*pod)["metadata"]
                .value("annotations", Json::object())
                .value("kube-sim.perfgate.io/oom-on-kill", "") == "true") {
      term["reason"] = "OOMKilled";
    }
    std::string policy = (*pod)["spec"].value("restartPolicy", "Always");
    Json cs = status["containerStatuses"][0];
    cs["ready"] = false;
    cs["started"] = false;
    cs["state"] = {{"terminated", term}};
    bool restart = !deleted && !run.deadlineKilled &&
                   (policy == "Always" || (policy == "OnFailure" && exitCode != 0));
    if (restart) {
      // Restarts re-run the pod's process through KubeletLocked on the next pass.
      cs["lastState"] = cs["state"];
      cs["restartCount"] = cs.value("restartCount", 0) + 1;
      cs["state"] = {{"waiting", {{"reason", "CrashLoopBackOff"}}}};
      status["containerStatuses"] = {cs};
      SetPodStatusLocked(ns, name, status);
      // Back-off 0.5 s doubling to 5 s (the kubelet's is 10 s doubling to 5 min: too slow for
      // tests).
      int n = std::clamp(cs["restartCount"].get<int>(), 1, 5);
      restartNotBefore[uid] = now + std::chrono::milliseconds(500 << (n - 1));
      forget.push_back(uid);
      continue;
    }
    status["containerStatuses"] = {cs};
    if (run.deadlineKilled) {
      status["phase"] = "Failed";
      status["reason"] = "DeadlineExceeded";
      status["message"] = "Pod was active on the node longer than the specified deadline";
    } else {
      status["phase"] = exitCode == 0 ? "Succeeded" : "Failed";
    }
    Json conds = Json::array();
    for (auto c : status.value("conditions", Json::array())) {
      std::string type = c.value("type", "");
      if (type == "Ready" || type == "ContainersReady") {
        c["status"] = "False";
        c["reason"] = "PodCompleted";
        c["lastTransitionTime"] = NowRfc3339();
      }
      conds.push_back(c);
    }
    status["conditions"] = conds;
    SetPodStatusLocked(ns, name, status);
    if (deleted) {
      FinishPodDeletionLocked(podType, ns, name);
      forget.push_back(uid);
    }
  }
  for (const auto& uid : forget) {
    // A restarting pod keeps its root and log; only forget the process.
    auto it = runs.find(uid);
    if (it != runs.end() && it->second.pid <= 0) runs.erase(it);
  }
}

void KubeSim::Impl::KillAllPods() {
  std::lock_guard<std::shared_mutex> lock(mu);
  for (auto& [uid, run] : runs) {
    if (run.pid > 0) {
      ::kill(-run.pid, SIGKILL);
      int st = 0;
      ::waitpid(run.pid, &st, 0);
      run.pid = -1;
    }
  }
}

}  // namespace perfgate::kubesim
