#include "operator/policy/watch_nodes.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "common/node_verdict.h"
#include "common/strings.h"
#include "core/names.h"
#include "core/selection.h"
#include "operator/policy/identity.h"

namespace perfgate::op {
namespace {

constexpr const char* kEffects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};

std::string EffectOf(const v1alpha1::ProvisioningTaint& t) {
  return t.effect().empty() ? "NoSchedule" : t.effect();
}

// Whether `taint` (a node's spec.taints item) is the one `a` names.
bool Matches(const Json& taint, const ProvisioningAction& a) {
  return taint.value("key", "") == a.key &&
         (a.effect.empty() || taint.value("effect", "") == a.effect) &&
         (a.value.empty() || taint.value("value", "") == a.value);
}

bool HasTaintKey(const Json& node, const std::string& key) {
  for (const auto& t : node.value("spec", Json::object()).value("taints", Json::array())) {
    if (t.is_object() && t.value("key", "") == key) return true;
  }
  return false;
}

// Why `now` holds a signal `was` (the node's signals when its result was taken) did not, in
// words; "" when none is new. A boot ID counts only against an earlier one.
std::string NewSignal(const v1alpha1::PerfValidationSpec& spec, const Json& was,
                      const std::vector<std::string>& now) {
  std::set<std::string> before;
  std::string old_boot;
  for (const auto& w : was) {
    if (!w.is_string()) continue;
    before.insert(w.get<std::string>());
    if (w.get<std::string>().starts_with("boot:")) old_boot = w.get<std::string>().substr(5);
  }
  for (const auto& sig : now) {
    if (before.contains(sig)) continue;
    if (sig.starts_with("boot:")) {
      if (old_boot.empty()) continue;
      return "rebooted (boot ID " + old_boot + " -> " + sig.substr(5) + ")";
    }
    if (sig.starts_with("taint:")) {
      const std::string key = sig.substr(6);
      const auto& gate = spec.remediationtaints();
      const bool remediation = std::find(gate.begin(), gate.end(), key) != gate.end();
      return std::string(remediation ? "has the remediation taint " : "has the taint ") + key;
    }
    return "has the condition " + sig.substr(10);
  }
  return "";
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

bool WatchesSignals(const v1alpha1::PerfValidationSpec& spec) {
  const auto& w = spec.watchnodes();
  return w.conditions_size() > 0 || w.taints_size() > 0 || w.reboot() ||
         spec.remediationtaints_size() > 0;
}

bool WatchesNodes(const v1alpha1::PerfValidationSpec& spec) {
  return spec.watchnodes().newnodes() || spec.watchnodes().identitychange() || WatchesSignals(spec);
}

bool WatchesNodes(const Json& validation) {
  const Json spec = validation.value("spec", Json::object());
  if (!spec.is_object()) return false;
  auto listed = [](const Json& o, const char* k) {
    return o.contains(k) && o[k].is_array() && !o[k].empty();
  };
  if (listed(spec, "remediationTaints")) return true;
  const Json w = spec.value("watchNodes", Json::object());
  if (!w.is_object()) return false;
  auto on = [&](const char* k) { return w.contains(k) && w[k].is_boolean() && w[k].get<bool>(); };
  return on("newNodes") || on("identityChange") || on("reboot") || listed(w, "conditions") ||
         listed(w, "taints");
}

std::vector<std::string> NodeSignals(const v1alpha1::PerfValidationSpec& spec, const Json& node) {
  std::set<std::string> out;
  std::vector<std::string> keys(spec.remediationtaints().begin(), spec.remediationtaints().end());
  keys.insert(keys.end(), spec.watchnodes().taints().begin(), spec.watchnodes().taints().end());
  for (const auto& k : keys) {
    if (HasTaintKey(node, k)) out.insert("taint:" + k);
  }
  const Json status = node.value("status", Json::object());
  for (const auto& c : status.value("conditions", Json::array())) {
    if (!c.is_object()) continue;
    for (const auto& want : spec.watchnodes().conditions()) {
      const std::string st = want.status().empty() ? "True" : want.status();
      if (c.value("type", "") == want.type() && c.value("status", "") == st) {
        out.insert("condition:" + want.type() + "=" + st);
      }
    }
  }
  if (spec.watchnodes().reboot()) {
    const std::string boot = status.value("nodeInfo", Json::object()).value("bootID", "");
    if (!boot.empty()) out.insert("boot:" + boot);
  }
  return {out.begin(), out.end()};
}

Status CheckWatchNodes(const v1alpha1::PerfValidationSpec& spec) {
  if (WatchesNodes(spec) && !spec.gang().shape().empty()) {
    return Status(Code::kInvalidArgument,
                  "spec.watchNodes tests nodes one by one: it cannot be used with spec.gang");
  }
  for (const auto& c : spec.watchnodes().conditions()) {
    if (c.type().empty()) {
      return Status(Code::kInvalidArgument, "spec.watchNodes.conditions: each needs a type");
    }
  }
  for (const auto& k : spec.watchnodes().taints()) {
    if (k.empty()) return Status(Code::kInvalidArgument, "spec.watchNodes.taints: empty key");
  }
  for (const auto& k : spec.remediationtaints()) {
    if (k.empty()) return Status(Code::kInvalidArgument, "spec.remediationTaints: empty key");
    if (k == kFailedTaint) {
      return Status(
          Code::kInvalidArgument,
          std::string("spec.remediationTaints cannot name perfgate's own ") + kFailedTaint);
    }
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

std::map<std::string, const Json*> ResultsOfRun(const Snapshot& s) {
  std::map<std::string, const Json*> out;
  for (const auto& r : s.results) {
    if (Label(r, kRunLabel) != s.run) continue;
    const std::string node = ResultNode(r);
    if (Name(r) == WorkerName(s, node)) out[node] = &r;
  }
  return out;
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

// What DecideWatchNodes keeps in the status between looks.
struct WatchState {
  Json identities;      // status.nodeIdentities
  Json retested;        // status.identityRetests
  Json signals;         // status.nodeSignals
  Json retests_before;  // status.retests
};

// Why `node`, whose result `result` is in, is to be tested again (an event saying so), or
// nothing: a new fault signal, a changed identity, or a driver its result does not match.
std::optional<EventAction> NodeChange(const Snapshot& s, const std::string& node,
                                      const Json& node_obj, const Json& result, WatchState* w) {
  const v1alpha1::PerfValidationSpec& spec = s.spec->doc.spec();
  if (WatchesSignals(spec)) {
    // A fault signal the node did not show when its result was taken: tested once more.
    const std::vector<std::string> now = NodeSignals(spec, node_obj);
    const Json was = w->signals.value(node, Json());
    const std::string fresh = was.is_array() ? NewSignal(spec, was, now) : "";
    if (!fresh.empty()) {
      return EventAction{"Normal", "NodeSignal",
                         node + " " + fresh + " since its last result: testing it again", true,
                         s.name + "/" + s.run + "/signal/" + node + "/" +
                             std::to_string(w->retests_before.value(node, 0))};
    }
    // Signals that went away are forgotten, so they count again when they come back.
    if (was != Json(now)) w->signals[node] = now;
  }
  if (!spec.watchnodes().identitychange()) return std::nullopt;
  const std::string was = w->identities.value(node, "");
  const std::string now = NodeIdentity(node_obj);
  if (!was.empty() && !now.empty() && was != now) {
    return EventAction{"Normal", "NodeChanged",
                       node + " changed (" + was + " -> " + now + "): testing it again", true,
                       s.name + "/" + s.run + "/changed/" + node + "/" + now};
  }
  // The last result's own identity: the driver its worker found, against the labels now (a
  // driver changed while nobody watched, or labels that were stale when it was recorded).
  // Once per labelled identity, so a driver the labels spell otherwise is not retested forever.
  const std::string reported = IdentityOfResult(result).driver;
  const std::string labelled = LabelledDriver(node_obj);
  if (now.empty() || !DriverDiffers(reported, labelled) || w->retested.value(node, "") == now) {
    return std::nullopt;
  }
  w->retested[node] = now;
  return EventAction{"Normal", "NodeChanged",
                     node + " changed: its last result " + Name(result) + " ran on driver " +
                         reported + ", its labels now say driver " + labelled +
                         ": testing it again",
                     true, s.name + "/" + s.run + "/changed/" + node + "/result/" + now};
}

// The status of a run that tests `joined` and `changed` nodes (again): their old results and
// workers go, and the run is Running.
Json RetestStatus(const Snapshot& s, const std::map<std::string, const Json*>& results,
                  const std::vector<std::string>& joined, const std::vector<std::string>& changed,
                  WatchState* w, const Json& status, Decision* d) {
  Json out = status;
  Json retests = out.value("retests", Json::object());
  for (const auto& node : changed) {
    const std::string old = Name(*results.at(node));
    d->delete_results.push_back(old);
    d->delete_pods.push_back(old);  // the worker is named as its result
    retests[node] = retests.value(node, 0) + 1;
    w->identities.erase(node);
  }
  for (const auto& node : joined) {
    d->events.push_back({"Normal", "NodeJoined", node + " matches the selector: testing it", true,
                         s.name + "/" + s.run + "/joined/" + node});
  }
  if (!retests.empty()) out["retests"] = retests;
  if (!w->retested.empty()) out["identityRetests"] = w->retested;
  out["nodeIdentities"] = w->identities;
  out.erase("completionTime");
  out.erase("timeLeft");
  out["verdict"] = verdict::kRunningWord;
  std::string msg = "testing";
  if (!joined.empty())
    msg += " new node" + std::string(joined.size() > 1 ? "s " : " ") + NameSome(joined, 5);
  if (!changed.empty()) {
    msg += std::string(joined.empty() ? "" : " and") + " changed node" +
           (changed.size() > 1 ? "s " : " ") + NameSome(changed, 5);
  }
  out["message"] = msg;
  return out;
}

bool DecideWatchNodes(const Snapshot& s, Json* status, Decision* d) {
  if (!s.spec) return false;
  const v1alpha1::PerfValidationSpec& spec = s.spec->doc.spec();
  if (!WatchesNodes(spec) || !spec.gang().shape().empty() || spec.suspend()) return false;
  // A spec that cannot run stays as it is until it is fixed (a new run).
  if (!CheckWatchNodes(spec).ok() || status->value("verdict", "") == verdict::kInvalidSpecWord)
    return false;
  const std::map<std::string, const Json*> results = ResultsOfRun(s);
  WatchState w{status->value("nodeIdentities", Json::object()),
               status->value("identityRetests", Json::object()),
               status->value("nodeSignals", Json::object()),
               status->value("retests", Json::object())};
  std::vector<std::string> joined;
  std::vector<std::string> changed;
  for (const auto& node : SelectNodes(spec, s.nodes)) {
    auto obj = s.nodes.find(node);
    auto it = results.find(node);
    if (it == results.end()) {
      // A node handed over with a remediation taint is tested whether or not new nodes are.
      if (spec.watchnodes().newnodes() ||
          (obj != s.nodes.end() && HasRemediationTaint(spec, obj->second))) {
        joined.push_back(node);
      }
      continue;
    }
    if (obj == s.nodes.end()) continue;
    if (auto event = NodeChange(s, node, obj->second, *it->second, &w)) {
      changed.push_back(node);
      w.signals.erase(node);
      d->events.push_back(std::move(*event));
    }
  }
  if (w.signals.empty()) {
    status->erase("nodeSignals");
  } else {
    (*status)["nodeSignals"] = w.signals;
  }
  if (joined.empty() && changed.empty()) return false;
  d->status = RetestStatus(s, results, joined, changed, &w, *status, d);
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

void RecordSignals(const Snapshot& s, Decision* d) {
  if (!s.spec || !WatchesSignals(s.spec->doc.spec()) || !d->status) return;
  const v1alpha1::PerfValidationSpec& spec = s.spec->doc.spec();
  Json signals = d->status->value("nodeSignals", Json::object());
  bool changed = false;
  for (const auto& o : d->outcomes) {
    if (!o.verdict || signals.contains(o.node)) continue;
    auto it = s.nodes.find(o.node);
    if (it == s.nodes.end()) continue;
    // A remediation taint the PASS removes is recorded too: once the node is seen without it,
    // DecideWatchNodes forgets it, so a node cache that has not seen the removal yet does not
    // count it as set again.
    const std::vector<std::string> now = NodeSignals(spec, it->second);
    signals[o.node] = now;
    changed = true;
  }
  if (changed) (*d->status)["nodeSignals"] = std::move(signals);
}

Json SignalTolerations(const v1alpha1::PerfValidationSpec& spec) {
  Json out = Json::array();
  std::set<std::string> seen;
  std::vector<std::string> keys(spec.remediationtaints().begin(), spec.remediationtaints().end());
  keys.insert(keys.end(), spec.watchnodes().taints().begin(), spec.watchnodes().taints().end());
  for (const auto& k : keys) {
    if (!k.empty() && seen.insert(k).second) out.push_back({{"key", k}, {"operator", "Exists"}});
  }
  return out;
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
  if (!s.spec) return;
  const v1alpha1::PerfValidationSpec& spec = s.spec->doc.spec();
  const auto& t = spec.provisioningtaint();
  if (t.key().empty() && spec.remediationtaints().empty()) return;
  std::map<std::string, std::string> reason_of;
  for (const auto& o : d->outcomes) {
    if (!o.verdict) continue;
    reason_of[o.node] =
        verdict::VerdictName(*o.verdict) + (o.reason.empty() ? "" : ": " + o.reason);
  }
  for (const auto& v : d->node_verdicts) {
    auto it = s.nodes.find(v.node);
    if (it == s.nodes.end()) continue;
    const bool passed = v.verdict == verdict::Verdict::kPass;
    const std::string reason =
        passed
            ? ""
            : Cut(reason_of.contains(v.node) ? reason_of[v.node] : verdict::VerdictName(v.verdict),
                  1000);
    std::vector<ProvisioningAction> wanted;
    if (!t.key().empty()) {
      wanted.push_back(
          {v.node, t.key(), t.value(), EffectOf(t), passed, reason, kProvisioningFailedAnnotation});
    }
    // A remediation taint concerns only a node that carries it (or still has the annotation of
    // an earlier verdict to take back).
    for (const auto& key : spec.remediationtaints()) {
      if (!passed && !HasTaintKey(it->second, key)) continue;
      wanted.push_back({v.node, key, "", "", passed, reason, kRemediationFailedAnnotation});
    }
    Json edited = it->second;
    for (auto& a : wanted) {
      if (ApplyProvisioning(&edited, a)) d->provisioning.push_back(std::move(a));
    }
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
    if (HasAnnotation(*node, a.annotation)) {
      (*node)["metadata"]["annotations"].erase(a.annotation);
      changed = true;
    }
    return changed;
  }
  if (HasAnnotation(*node, a.annotation) && Annotation(*node, a.annotation) == a.reason) {
    return false;
  }
  (*node)["metadata"]["annotations"][a.annotation] = a.reason;
  return true;
}

}  // namespace perfgate::op
