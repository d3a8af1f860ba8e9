#include "operator/reconcile/snapshot.h"

#include <algorithm>
#include <set>

#include "common/labels.h"
#include "core/names.h"
#include "core/selection.h"
#include "operator/policy/lifecycle.h"
#include "operator/policy/rolling.h"
#include "operator/policy/watch_nodes.h"

namespace perfgate::op {
namespace {

// Reads the cluster's profiles that resolving the plan needs.
Status ObserveProfiles(kube::Client& client, const v1alpha1::PerfValidationSpec& spec,
                       ClusterProfiles* out) {
  const ProfilesNeeded need = ProfilesToRead(spec);
  if (!need.named.empty()) {
    auto got = client.Get(ProfilesResource(), "", need.named);
    if (got.ok()) {
      out->by_name[need.named] = *got;
    } else if (got.status().code() != Code::kNotFound) {
      return got.status();
    }
  }
  if (need.list) {
    ASSIGN_OR_RETURN(Json list, client.ListAll(ProfilesResource(), "", kube::ListOptions{}));
    for (const auto& item : list.value("items", Json::array())) out->by_name[Name(item)] = item;
    out->listed = true;
  }
  return Status::Ok();
}

// Reads the PerfBaselines the thresholds name; a name without one is left out (the store may
// have it). A cluster without the PerfBaseline CRD has none.
Status ObserveBaselines(kube::Client& client, const v1alpha1::PerfValidationSpec& spec,
                        const ClusterProfiles& profiles, ClusterBaselines* out) {
  for (const auto& name : BaselinesNamed(spec, profiles)) {
    auto got = client.Get(BaselinesResource(), "", name);
    if (got.ok()) {
      out->by_name[name] = *got;
    } else if (got.status().code() != Code::kNotFound) {
      return got.status();
    }
  }
  return Status::Ok();
}

// The run a validation object is on: its generation, its rerun annotation and its latest
// scheduled time (operator/policy/lifecycle.h), which changes the run id as a rerun annotation
// does.
std::string RunOf(const Json& validation) {
  const Json meta = validation.value("metadata", Json::object());
  std::string token = meta.value("annotations", Json::object()).value(kRerunAnnotation, "");
  if (const std::string scheduled = ScheduleToken(validation.value("status", Json::object()));
      !scheduled.empty()) {
    token += (token.empty() ? "" : "|") + scheduled;
  }
  return RunId(meta.value("generation", int64_t{1}), token);
}

// True when the holder of `claim`, as its validation `holder` now reads (nullptr: deleted), no
// longer wants the node: deleted or re-created, moved on to another run, or done with this one.
// A validation being deleted still holds its nodes until its finalizer releases them.
bool HolderGone(const NodeClaim& claim, const Json* holder) {
  if (holder == nullptr || Str(*holder, "/metadata/uid"_json_pointer) != claim.holder.uid) {
    return true;
  }
  if (!Str(*holder, "/metadata/deletionTimestamp"_json_pointer).empty()) return false;
  const std::string run = RunOf(*holder);
  if (run != claim.holder.run) return true;
  const Json status = holder->value("status", Json::object());
  return status.value("run", "") == run && !status.value("completionTime", "").empty();
}

// Every node claim, and for each held by someone else on a node in `wanted` whether its holder
// is gone (one read of each such holding validation). Claims on other nodes keep nothing of ours
// off a node: reading their holders cost each of 100 validations over 10 nodes apiece a read of
// each of the other 99 on every look.
Status ObserveClaims(kube::Client& client, const ReconcilerConfig& config,
                     const std::set<std::string>& wanted, Snapshot* s) {
  kube::ListOptions o;
  o.labelSelector = std::string(kClaimLabel) + "=node";
  ASSIGN_OR_RETURN(Json list, client.ListAll(LeasesResource(), config.name_space, o));
  std::map<std::string, std::optional<Json>> holders;  // by name; nullopt: not found
  holders[s->name] = s->validation;
  for (const auto& item : list.value("items", Json::array())) {
    std::optional<NodeClaim> c = ClaimOfLease(item);
    if (!c) continue;
    if (c->holder != ClaimHolder{s->name, s->uid, s->run} && wanted.contains(c->node)) {
      auto it = holders.find(c->holder.validation);
      if (it == holders.end()) {
        auto got = client.Get(ValidationsResource(), "", c->holder.validation);
        if (!got.ok() && got.status().code() != Code::kNotFound) return got.status();
        it = holders
                 .emplace(c->holder.validation, got.ok() ? std::optional<Json>(*got) : std::nullopt)
                 .first;
      }
      c->holder_gone = HolderGone(*c, it->second ? &*it->second : nullptr);
    }
    s->claims[c->node] = std::move(*c);
  }
  return Status::Ok();
}

// The nvidia.com/gpu a pod asks for (its containers' limits, else requests).
int GpusOf(const Json& pod) {
  int total = 0;
  for (const auto& c : pod.value("spec", Json::object()).value("containers", Json::array())) {
    const Json res = c.value("resources", Json::object());
    Json q = res.value("limits", Json::object()).value("nvidia.com/gpu", Json());
    if (q.is_null()) q = res.value("requests", Json::object()).value("nvidia.com/gpu", Json());
    if (q.is_number_integer()) total += q.get<int>();
    if (q.is_string()) total += std::atoi(q.get<std::string>().c_str());
  }
  return total;
}

// Other pods holding GPUs on `nodes` (not perfgate's workers, not terminal), read from the API:
// the operator caches only its own pods. A few nodes are listed one by one (fieldSelector
// spec.nodeName, as kubectl drain does) with one list of the unbound pods, more with one list
// of the cluster's live pods. A pod the scheduler nominated to a node counts as holding it.
Status ObserveGpuPods(kube::Client& client, const ReconcilerConfig& config,
                      const std::vector<std::string>& nodes, Snapshot* s) {
  if (nodes.empty()) return Status::Ok();
  std::vector<Json> pods;
  auto add = [&](const Json& list) {
    for (const auto& p : list.value("items", Json::array())) pods.push_back(p);
  };
  if (nodes.size() <= 8) {
    for (const auto& node : nodes) {
      kube::ListOptions lo;
      lo.fieldSelector = "spec.nodeName=" + node;
      ASSIGN_OR_RETURN(Json list, client.ListAll(kube::PodsResource(), "", lo));
      add(list);
    }
    // And the pods not bound yet, for those the scheduler nominated to one of the nodes.
    kube::ListOptions lo;
    lo.fieldSelector = "spec.nodeName=,status.phase=Pending";
    ASSIGN_OR_RETURN(Json pending, client.ListAll(kube::PodsResource(), "", lo));
    add(pending);
  } else {
    kube::ListOptions lo;
    lo.fieldSelector = "status.phase!=Succeeded,status.phase!=Failed";
    lo.limit = 500;
    ASSIGN_OR_RETURN(Json list, client.ListAll(kube::PodsResource(), "", lo));
    add(list);
  }
  const std::set<std::string> wanted(nodes.begin(), nodes.end());
  for (const auto& p : pods) {
    std::string node = Str(p, "/spec/nodeName"_json_pointer);
    const bool nominated = node.empty();
    if (nominated) node = Str(p, "/status/nominatedNodeName"_json_pointer);
    const std::string phase = Str(p, "/status/phase"_json_pointer);
    if (!wanted.contains(node) || phase == "Succeeded" || phase == "Failed") continue;
    const std::string ns = Str(p, "/metadata/namespace"_json_pointer);
    // perfgate's own workers: claims and busyWith speak for them.
    if (ns == config.name_space && !Label(p, kValidationLabel).empty()) continue;
    const int gpus = GpusOf(p);
    if (gpus <= 0) continue;
    s->gpu_pods[node].push_back({ns, Name(p), gpus,
                                 !Str(p, "/metadata/deletionTimestamp"_json_pointer).empty(),
                                 nominated});
  }
  return Status::Ok();
}

// Ended workers of this run without a cached result: whether the API has the result (the cache
// may be behind), and for a failed one with neither a result nor a termination message, the
// last lines of its log.
void LookPastTheCache(kube::Client& client, const ReconcilerConfig& config, Snapshot* s) {
  std::set<std::string> cached_results;  // by name
  for (const auto& r : s->results) cached_results.insert(Name(r));
  for (auto& p : s->pods) {
    if (!p.terminal || BaseRun(p.run) != s->run || cached_results.contains(p.name)) continue;
    p.result_in_api = client.Get(ResultsResource(), config.name_space, p.name).ok();
    if (p.result_in_api || p.run != s->run || p.phase != "Failed" ||
        Str(p.object, "/status/reason"_json_pointer) == "DeadlineExceeded" ||
        !p.termination_message.empty()) {
      continue;
    }
    kube::LogOptions lo;
    lo.tailLines = 5;
    if (auto logs = client.Logs(config.name_space, p.name, lo); logs.ok()) p.log_tail = *logs;
  }
}

// The selected nodes another validation's live worker keeps busy (into s->busy_with), and
// those free of perfgate whose other GPU pods are to be looked up: the nodes still to get a pod
// of this run (with gangs that yield, every node: a gang starts and narrows only where every
// member is idle; other gangs leave it to the scheduler).
std::vector<std::string> FreeNodes(const Caches& caches, const std::vector<std::string>& selected,
                                   Snapshot* s) {
  const v1alpha1::PerfValidationSpec& spec = s->spec->doc.spec();
  std::set<std::string> done;  // nodes with a pod or a result of this run
  for (const auto& r : s->results) {
    if (Label(r, kRunLabel) == s->run) done.insert(ResultNode(r));
  }
  for (const auto& p : s->pods) {
    if (p.run == s->run) done.insert(p.node);
  }
  const bool gang = !spec.gang().shape().empty();
  const bool yielding_gang = gang && spec.disruption().policy() == "yield";
  const std::string own = LabelValue(s->name);
  std::vector<std::string> free_nodes;
  for (const auto& node : selected) {
    if (!gang && done.contains(node)) continue;
    if ((!gang || yielding_gang) && !spec.suspend()) free_nodes.push_back(node);
    for (const auto& p : caches.pods_on(node)) {
      const std::string v = Label(p, kValidationLabel);
      const std::string phase = Str(p, "/status/phase"_json_pointer);
      if (v != own && phase != "Succeeded" && phase != "Failed" &&
          Str(p, "/metadata/deletionTimestamp"_json_pointer).empty()) {
        s->busy_with[node] = v;
        break;
      }
    }
  }
  std::erase_if(free_nodes, [&](const std::string& n) { return s->busy_with.contains(n); });
  return free_nodes;
}

}  // namespace

PodView ViewOfPod(const Json& pod) {
  PodView v;
  v.object = pod;
  v.name = Name(pod);
  v.node = Str(
      pod,
      "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields/0/values/0"_json_pointer);
  if (v.node.empty()) v.node = Label(pod, kNodeLabel);
  v.run = Label(pod, kRunLabel);
  v.phase = Str(pod, "/status/phase"_json_pointer);
  v.terminal = v.phase == "Succeeded" || v.phase == "Failed";
  v.scheduled = !Str(pod, "/spec/nodeName"_json_pointer).empty();
  const Json cs = pod.value("status", Json::object()).value("containerStatuses", Json::array());
  if (!cs.empty() && cs[0].is_object()) {
    v.terminated = cs[0].value("state", Json::object()).value("terminated", Json::object());
  }
  v.termination_message = v.terminated.value("message", "");
  return v;
}

Result<Snapshot> Observe(kube::Client& client, const Caches& caches, const ReconcilerConfig& config,
                         const std::string& name) {
  Snapshot s;
  auto got = client.Get(ValidationsResource(), "", name);
  if (!got.ok()) {
    if (got.status().code() == Code::kNotFound) return s;
    return got.status();
  }
  s.exists = true;
  s.validation = *got;
  const Json& obj = s.validation;
  s.name = name;
  s.uid = Str(obj, "/metadata/uid"_json_pointer);
  s.generation = Int(obj, "/metadata/generation"_json_pointer, 1);
  const Json meta = obj.value("metadata", Json::object());
  s.run = RunOf(obj);
  s.deleting = !Str(obj, "/metadata/deletionTimestamp"_json_pointer).empty();
  const Json finalizers = meta.value("finalizers", Json::array());
  s.has_finalizer = std::find(finalizers.begin(), finalizers.end(), kFinalizer) != finalizers.end();
  const Json status = obj.value("status", Json::object());
  s.run_complete = status.value("run", "") == s.run && !status.value("completionTime", "").empty();
  if (auto parsed = ParseValidationObject(obj); parsed.ok()) {
    s.spec = std::move(*parsed);
  } else {
    s.spec_error = parsed.status();
  }
  // Complete, but watching nodes, or tested again as their period ends (spec.rolling): the
  // nodes, pods and results are read as for a run in progress.
  const bool watching =
      s.spec && (WatchesNodes(s.spec->doc.spec()) || IsRolling(s.spec->doc.spec()));
  if (s.run_complete && !s.deleting && !watching) return s;

  for (auto& n : caches.nodes()) s.nodes[Name(n)] = n;
  for (auto& p : caches.pods_of(name)) s.pods.push_back(ViewOfPod(p));
  s.results = caches.results_of(name);
  // Complete, watching for nodes that join or change or fall due: the caches are enough.
  if (s.run_complete && !s.deleting) return s;
  // Others' claims matter on the nodes this validation selects; being deleted, it only lets
  // go of its own.
  std::vector<std::string> selected;
  if (s.spec && !s.deleting) selected = SelectNodes(s.spec->doc.spec(), s.nodes);
  RETURN_IF_ERROR(
      ObserveClaims(client, config, std::set<std::string>(selected.begin(), selected.end()), &s));
  if (s.deleting || !s.spec) return s;

  LookPastTheCache(client, config, &s);
  const std::vector<std::string> free_nodes = FreeNodes(caches, selected, &s);
  RETURN_IF_ERROR(ObserveGpuPods(client, config, free_nodes, &s));
  const v1alpha1::PerfValidationSpec& spec = s.spec->doc.spec();
  RETURN_IF_ERROR(ObserveProfiles(client, spec, &s.profiles));
  RETURN_IF_ERROR(ObserveBaselines(client, spec, s.profiles, &s.baselines));
  return s;
}

}  // namespace perfgate::op
