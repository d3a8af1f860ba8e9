#include "operator/watch_nodes.h"

#include <map>
#include <vector>

#include "common/node_verdict.h"
#include "core/names.h"
#include "core/selection.h"
#include "operator/identity.h"

namespace perfgate::op {
namespace {

constexpr const char* kEffects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};

std::string EffectOf(const v1alpha1::ProvisioningTaint& t) {
  return t.effect().empty() ? "NoSchedule" : t.effect();
}

// Whether `taint` (a node's spec.taints item) is the one `a` names.
bool Matches(const Json& taint, const ProvisioningAction& a) {
  return taint.value("key", "") == a.key && taint.value("effect", "") == a.effect &&
         (a.value.empty() || taint.value("value", "") == a.value);
}

bool HasTaint(const Json& node, const ProvisioningAction& a) {
  for (const auto& t : node.value("spec", Json::object()).value("taints", Json::array())) {
    if (Matches(t, a)) return true;
  }
  return false;
}

std::string Annotation(const Json& node, const std::string& key) {
  return node.value("metadata", Json::object()).value("annotations", Json::object()).value(key, "");
}

bool HasAnnotation(const Json& node, const std::string& key) {
  const Json a = node.value("metadata", Json::object()).value("annotations", Json::object());
  return a.contains(key);
}

// This run's results by node, only those of the node's current worker name.
std::map<std::string, const Json*> ResultsOfRun(const Snapshot& s) {
  std::map<std::string, const Json*> out;
  for (const auto& r : s.results) {
    if (Label(r, kRunLabel) != s.run) continue;
    const std::string node =
        r.value("spec", Json::object()).value("nodeName", Label(r, kNodeLabel));
    if (Name(r) == WorkerName(s, node)) out[node] = &r;
  }
  return out;
}

std::string List(const std::vector<std::string>& nodes) {
  std::string out;
  for (size_t i = 0; i < nodes.size() && i < 5; ++i) out += (i == 0 ? "" : ", ") + nodes[i];
  if (nodes.size() > 5) out += " and " + std::to_string(nodes.size() - 5) + " more";
  return out;
}

}  // namespace

std::string NodeIdentity(const Json& node) {
  const Json labels = node.value("metadata", Json::object()).value("labels", Json::object());
  auto get = [&](const char* k) {
    auto it = labels.find(k);
    return it != labels.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string driver = LabelledDriver(node);
  std::string id;
  auto add = [&](const char* name, const std::string& v) {
    if (!v.empty()) id += (id.empty() ? "" : " ") + std::string(name) + "=" + v;
  };
  add("driver", driver);
  add("product", get("nvidia.com/gpu.product"));
  add("count", get("nvidia.com/gpu.count"));
  return id;
}

bool WatchesNodes(const v1alpha1::PerfValidationSpec& spec) {
  return spec.watchnodes().newnodes() || spec.watchnodes().identitychange();
}

bool WatchesNodes(const Json& validation) {
  const Json w = validation.value("spec", Json::object()).value("watchNodes", Json::object());
  if (!w.is_object()) return false;
  auto on = [&](const char* k) { return w.contains(k) && w[k].is_boolean() && w[k].get<bool>(); };
  return on("newNodes") || on("identityChange");
}

Status CheckWatchNodes(const v1alpha1::PerfValidationSpec& spec) {
  if (WatchesNodes(spec) && !spec.gang().shape().empty()) {
    return Status(Code::kInvalidArgument,
                  "spec.watchNodes tests nodes one by one: it cannot be used with spec.gang");
  }
  const auto& t = spec.provisioningtaint();
  if (t.key().empty()) {
    if (!t.value().empty() || !t.effect().empty()) {
      return Status(Code::kInvalidArgument, "spec.provisioningTaint needs a key");
    }
    return Status();
  }
  for (const char* e : kEffects) {
    if (EffectOf(t) == e) return Status();
  }
  return Status(Code::kInvalidArgument,
                "spec.provisioningTaint.effect must be NoSchedule, PreferNoSchedule or NoExecute");
}

std::string WorkerName(const Snapshot& s, const std::string& node) {
  const Json status = s.validation.value("status", Json::object());
  int retests = 0;
  if (status.value("run", "") == s.run) {
    const Json r = status.value("retests", Json::object());
    if (r.is_object() && r.contains(node) && r[node].is_number_integer()) {
      retests = r[node].get<int>();
    }
  }
  if (retests <= 0) return ObjectName({s.name, s.run, node});
  return ObjectName({s.name, s.run, node, "r" + std::to_string(retests)});
}

bool DecideWatchNodes(const Snapshot& s, const Json& status, Decision* d) {
  if (!s.spec) return false;
  const v1alpha1::PerfValidationSpec& spec = s.spec->doc.spec();
  if (!WatchesNodes(spec) || !spec.gang().shape().empty() || spec.suspend()) return false;
  // A spec that cannot run stays as it is until it is fixed (a new run).
  if (!CheckWatchNodes(spec).ok() || status.value("verdict", "") == "InvalidSpec") return false;
  const std::map<std::string, const Json*> results = ResultsOfRun(s);
  Json identities = status.value("nodeIdentities", Json::object());
  Json retested = status.value("identityRetests", Json::object());
  std::vector<std::string> joined;
  std::vector<std::string> changed;
  for (const auto& node : SelectNodes(spec, s.nodes)) {
    auto it = results.find(node);
    if (it == results.end()) {
      if (spec.watchnodes().newnodes()) joined.push_back(node);
      continue;
    }
    if (!spec.watchnodes().identitychange()) continue;
    const std::string was = identities.value(node, "");
    const std::string now = NodeIdentity(s.nodes.at(node));
    if (!was.empty() && !now.empty() && was != now) {
      changed.push_back(node);
      d->events.push_back({"Normal", "NodeChanged",
                           node + " changed (" + was + " -> " + now + "): testing it again", true,
                           s.name + "/" + s.run + "/changed/" + node + "/" + now});
      continue;
    }
    // The last result's own identity: the driver its worker found, against the labels now (a
    // driver changed while nobody watched, or labels that were stale when it was recorded).
    // Once per labelled identity, so a driver the labels spell otherwise is not retested forever.
    const std::string reported = IdentityOfResult(*it->second).driver;
    const std::string labelled = LabelledDriver(s.nodes.at(node));
    if (now.empty() || !DriverDiffers(reported, labelled) || retested.value(node, "") == now) {
      continue;
    }
    changed.push_back(node);
    retested[node] = now;
    d->events.push_back({"Normal", "NodeChanged",
                         node + " changed: its last result " + Name(*it->second) +
                             " ran on driver " + reported + ", its labels now say driver " +
                             labelled + ": testing it again",
                         true, s.name + "/" + s.run + "/changed/" + node + "/result/" + now});
  }
  if (joined.empty() && changed.empty()) return false;
  Json out = status;
  Json retests = out.value("retests", Json::object());
  for (const auto& node : changed) {
    const std::string old = Name(*results.at(node));
    d->delete_results.push_back(old);
    d->delete_pods.push_back(old);  // the worker is named as its result
    retests[node] = retests.value(node, 0) + 1;
    identities.erase(node);
  }
  for (const auto& node : joined) {
    d->events.push_back({"Normal", "NodeJoined", node + " matches the selector: testing it", true,
                         s.name + "/" + s.run + "/joined/" + node});
  }
  if (!retests.empty()) out["retests"] = retests;
  if (!retested.empty()) out["identityRetests"] = retested;
  out["nodeIdentities"] = identities;
  out.erase("completionTime");
  out.erase("timeLeft");
  out["verdict"] = "Running";
  std::string msg = "testing";
  if (!joined.empty())
    msg += " new node" + std::string(joined.size() > 1 ? "s " : " ") + List(joined);
  if (!changed.empty()) {
    msg += std::string(joined.empty() ? "" : " and") + " changed node" +
           (changed.size() > 1 ? "s " : " ") + List(changed);
  }
  out["message"] = msg;
  d->status = std::move(out);
  // The next look starts their workers.
  d->requeue_after = std::chrono::milliseconds(10);
  return true;
}

void RecordIdentities(const Snapshot& s, Decision* d) {
  if (!s.spec || !s.spec->doc.spec().watchnodes().identitychange() || !d->status) return;
  Json identities = d->status->value("nodeIdentities", Json::object());
  bool changed = false;
  for (const auto& o : d->outcomes) {
    if (!o.verdict || identities.contains(o.node)) continue;
    auto it = s.nodes.find(o.node);
    if (it == s.nodes.end()) continue;
    const std::string id = NodeIdentity(it->second);
    if (id.empty()) continue;
    identities[o.node] = id;
    changed = true;
  }
  if (changed) (*d->status)["nodeIdentities"] = std::move(identities);
}

Json ProvisioningToleration(const v1alpha1::PerfValidationSpec& spec) {
  const auto& t = spec.provisioningtaint();
  if (t.key().empty()) return Json();
  Json tol = {{"key", t.key()}, {"effect", EffectOf(t)}};
  if (t.value().empty()) {
    tol["operator"] = "Exists";
  } else {
    tol["operator"] = "Equal";
    tol["value"] = t.value();
  }
  return tol;
}

void DecideProvisioning(const Snapshot& s, Decision* d) {
  if (!s.spec || s.spec->doc.spec().provisioningtaint().key().empty()) return;
  const auto& t = s.spec->doc.spec().provisioningtaint();
  std::map<std::string, std::string> reason_of;
  for (const auto& o : d->outcomes) {
    if (!o.verdict) continue;
    reason_of[o.node] =
        verdict::VerdictName(*o.verdict) + (o.reason.empty() ? "" : ": " + o.reason);
  }
  for (const auto& v : d->node_verdicts) {
    auto it = s.nodes.find(v.node);
    if (it == s.nodes.end()) continue;
    ProvisioningAction a{
        v.node, t.key(), t.value(), EffectOf(t), v.verdict == verdict::Verdict::kPass, ""};
    if (!a.passed) {
      a.reason = Cut(
          reason_of.contains(v.node) ? reason_of[v.node] : verdict::VerdictName(v.verdict), 1000);
    }
    Json edited = it->second;
    if (ApplyProvisioning(&edited, a)) d->provisioning.push_back(std::move(a));
  }
}

bool ApplyProvisioning(Json* node, const ProvisioningAction& a) {
  if (a.passed) {
    bool changed = false;
    if (HasTaint(*node, a)) {
      Json kept = Json::array();
      for (const auto& t : (*node)["spec"]["taints"]) {
        if (!Matches(t, a)) kept.push_back(t);
      }
      if (kept.empty()) {
        (*node)["spec"].erase("taints");
      } else {
        (*node)["spec"]["taints"] = std::move(kept);
      }
      changed = true;
    }
    if (HasAnnotation(*node, kProvisioningFailedAnnotation)) {
      (*node)["metadata"]["annotations"].erase(kProvisioningFailedAnnotation);
      changed = true;
    }
    return changed;
  }
  if (HasAnnotation(*node, kProvisioningFailedAnnotation) &&
      Annotation(*node, kProvisioningFailedAnnotation) == a.reason) {
    return false;
  }
  (*node)["metadata"]["annotations"][kProvisioningFailedAnnotation] = a.reason;
  return true;
}

}  // namespace perfgate::op
