#include "operator/policy/quarantine.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

#include "common/strings.h"
#include "core/names.h"
#include "core/selection.h"
#include "operator/policy/disruption.h"
#include "operator/policy/identity.h"
#include "operator/reconcile/status.h"

namespace perfgate::op {
namespace {

// Out of service by perfgate's hand, wholly (the node's taint) or in part (some of its GPUs
// under DeviceTaintRules): either takes a place under the cap, so a fault on one GPU of every
// node cannot quarantine a GPU on every node at once.
bool Quarantined(const Json& node) {
  for (const auto& t : node.value("spec", Json::object()).value("taints", Json::array())) {
    if (t.is_object() && t.value("key", "") == kFailedTaint) return true;
  }
  const Json annotations =
      node.value("metadata", Json::object()).value("annotations", Json::object());
  return !annotations.value(kTaintedDevicesAnnotation, "").empty();
}

bool NamesRackOrSwitch(const std::string& key) {
  std::string lower = key;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("rack") != std::string::npos || lower.find("switch") != std::string::npos;
}

}  // namespace

std::string SharedByFailing(const std::vector<std::string>& failing,
                            const std::map<std::string, Json>& nodes, const std::string& profile,
                            const std::vector<std::string>& extra_labels) {
  std::vector<const Json*> objs;
  for (const auto& n : failing) {
    auto it = nodes.find(n);
    if (it != nodes.end()) objs.push_back(&it->second);
  }
  if (objs.empty()) return "";
  std::string out;
  auto add = [&](const std::string& name, const std::function<std::string(const Json&)>& get) {
    const std::string first = get(*objs[0]);
    if (first.empty()) return;
    for (const Json* o : objs) {
      if (get(*o) != first) return;
    }
    out += (out.empty() ? "" : ", ") + name + "=" + first;
  };
  add("gpu.product", [](const Json& n) { return Label(n, "nvidia.com/gpu.product"); });
  add("driver", [](const Json& n) { return LabelledDriver(n); });
  if (!profile.empty()) out += (out.empty() ? "" : ", ") + std::string("profile=") + profile;
  std::vector<std::string> keys = {"topology.kubernetes.io/zone"};
  const Json labels = objs[0]->value("metadata", Json::object()).value("labels", Json::object());
  if (labels.is_object()) {
    for (const auto& [k, v] : labels.get_ref<const Json::object_t&>()) {
      if (NamesRackOrSwitch(k)) keys.push_back(k);
    }
  }
  keys.insert(keys.end(), extra_labels.begin(), extra_labels.end());
  std::set<std::string> seen;
  for (const auto& k : keys) {
    if (seen.insert(k).second) add(k, [&](const Json& n) { return Label(n, k); });
  }
  return out;
}

namespace {

// The caps on quarantine for this validation: its own (spec.policy.maxQuarantined, else the
// operator's --max-quarantined, of its selected nodes) and the cluster's (--max-quarantined of
// every GPU node), and how many nodes are quarantined now.
struct QuarantineCaps {
  std::string value;  // the maxQuarantined in force, as written
  size_t selected = 0;
  size_t gpu_nodes = 0;
  int cap = 0;
  int fleet_cap = 0;
  int fleet_now = 0;
};

QuarantineCaps CapsOf(const Snapshot& s, const ReconcilerConfig& config) {
  const v1alpha1::PerfValidationSpec& spec = s.spec->doc.spec();
  QuarantineCaps c;
  c.selected = SelectNodes(spec, s.nodes).size();
  for (const auto& [name, node] : s.nodes) {
    if (NodeGpus(node) > 0) ++c.gpu_nodes;
    if (Quarantined(node)) ++c.fleet_now;
  }
  c.value = spec.policy().maxquarantined().empty() ? config.max_quarantined
                                                   : spec.policy().maxquarantined();
  // Both were checked (the spec by CheckQuarantine, the flag at start): a value that still
  // does not parse quarantines nothing more.
  const Result<int> cap_or = NodeCount(c.value, c.selected, "spec.policy.maxQuarantined");
  const Result<int> fleet_or = NodeCount(config.max_quarantined, c.gpu_nodes, "--max-quarantined");
  c.cap = cap_or.ok() ? *cap_or : 0;
  c.fleet_cap = fleet_or.ok() ? *fleet_or : 0;
  return c;
}

}  // namespace

void DecideQuarantine(const Snapshot& s, const ReconcilerConfig& config, const std::string& now,
                      Decision* d) {
  if (!s.spec || d->node_verdicts.empty() || !d->status) return;
  if (d->on_failure != "taint" && d->on_failure != "taintAndCordon") return;
  const v1alpha1::PerfValidationSpec& spec = s.spec->doc.spec();
  const QuarantineCaps caps = CapsOf(s, config);
  const size_t selected = caps.selected;
  const size_t gpu_nodes = caps.gpu_nodes;
  int fleet_now = caps.fleet_now;
  const std::string& value = caps.value;
  const int cap = caps.cap;
  const int fleet_cap = caps.fleet_cap;

  int mine = 0;  // this validation's FAILs already quarantined: they stay so
  std::vector<NodeVerdict*> fresh;
  std::vector<std::string> failing;
  for (auto& v : d->node_verdicts) {
    auto it = s.nodes.find(v.node);
    const bool tainted = it != s.nodes.end() && Quarantined(it->second);
    if (v.verdict == verdict::Verdict::kPass && tainted) --fleet_now;  // the PASS lifts it
    if (v.verdict != verdict::Verdict::kFail) continue;
    failing.push_back(v.node);
    if (tainted) {
      ++mine;
    } else {
      fresh.push_back(&v);
    }
  }
  int room = std::min(cap - mine, fleet_cap - fleet_now);
  std::vector<std::string> held;
  for (NodeVerdict* v : fresh) {
    if (room > 0) {
      --room;
      continue;
    }
    v->quarantine = false;
    held.push_back(v->node);
  }
  Json& status = *d->status;
  const Json old_status = s.validation.value("status", Json::object());
  if (held.empty()) {
    status.erase("quarantine");
    for (const auto& c : status.value("conditions", Json::array())) {
      if (c.value("type", "") == "SystemicFailure" && c.value("status", "") == "True") {
        SetStatusCondition(&status, old_status, "SystemicFailure", "False", "WithinCap",
                           "the failing nodes are within the quarantine cap (" +
                               std::to_string(cap) + " of " + std::to_string(selected) + ")",
                           s.generation, now);
        break;
      }
    }
    return;
  }
  const std::vector<std::string> extra(spec.policy().systemiclabels().begin(),
                                       spec.policy().systemiclabels().end());
  const std::string shared = SharedByFailing(failing, s.nodes, status.value("profile", ""), extra);
  const int quarantined = mine + static_cast<int>(fresh.size() - held.size());
  std::string msg = std::to_string(failing.size()) + " nodes failed, more than perfgate may " +
                    "quarantine at once (" + std::to_string(cap) + " of " +
                    std::to_string(selected) + " selected nodes, maxQuarantined " + value + "; " +
                    std::to_string(fleet_cap) + " of the cluster's " + std::to_string(gpu_nodes) +
                    " GPU nodes): the failures look systemic";
  msg += shared.empty() ? "" : "; the failing nodes share " + shared;
  msg += ". " + std::to_string(held.size()) +
         " kept their FAIL verdict without the taint: " + NameSome(held, 10);
  Json held_json = Json::array();
  for (size_t i = 0; i < held.size() && i < 20; ++i) held_json.push_back(held[i]);
  status["quarantine"] = {{"cap", cap},
                          {"quarantined", quarantined},
                          {"held", static_cast<int>(held.size())},
                          {"heldNodes", held_json},
                          {"shared", shared}};
  SetStatusCondition(&status, old_status, "SystemicFailure", "True", "QuarantineCapReached", msg,
                     s.generation, now);
  d->events.push_back({"Warning", "SystemicFailure", msg, true,
                       s.name + "/" + s.run + "/systemic/" + std::to_string(failing.size()) + "/" +
                           std::to_string(held.size())});
}

Status CheckQuarantine(const v1alpha1::PerfValidationSpec& spec) {
  if (spec.policy().maxquarantined().empty()) return Status();
  return NodeCount(spec.policy().maxquarantined(), 1, "spec.policy.maxQuarantined").status();
}

}  // namespace perfgate::op
