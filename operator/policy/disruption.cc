#include "operator/policy/disruption.h"

#include <algorithm>
#include <charconv>

#include "common/labels.h"
#include "common/time.h"
#include "core/names.h"

namespace perfgate::op {
namespace {

using Clock = std::chrono::system_clock;

Json Annotations(const Json& node) {
  return node.value("metadata", Json::object()).value("annotations", Json::object());
}

bool Unschedulable(const Json& node) {
  const Json spec = node.value("spec", Json::object());
  return spec.is_object() && spec.value("unschedulable", false);
}

// "ns/a, ns/b and 3 more".
std::string PodList(const std::vector<GpuPod>& pods) {
  std::string out;
  for (size_t i = 0; i < pods.size() && i < 3; ++i) {
    out += (i == 0 ? "" : ", ") + pods[i].Key();
  }
  if (pods.size() > 3) out += " and " + std::to_string(pods.size() - 3) + " more";
  return out;
}

std::string Plural(size_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

}  // namespace

Result<int> MaxUnavailable(const std::string& value, size_t selected) {
  return NodeCount(value, selected, "spec.disruption.maxUnavailable");
}

Result<int> NodeCount(const std::string& value, size_t selected, const std::string& field) {
  if (value.empty()) return static_cast<int>(selected);
  const bool percent = value.back() == '%';
  const std::string digits = percent ? value.substr(0, value.size() - 1) : value;
  int n = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || n <= 0 ||
      (percent && n > 100)) {
    return InvalidArgument(field + ": \"" + value +
                           "\" is neither a count of at least 1 nor a percentage from 1% to 100%");
  }
  if (!percent) return n;
  // Rounded down, as a Deployment's maxUnavailable; at least one node, or nothing would run.
  return std::max(1, static_cast<int>(selected * static_cast<size_t>(n) / 100));
}

std::string YieldReason(const PodView& pod) {
  const Json status = pod.object.value("status", Json::object());
  for (const auto& c : status.value("conditions", Json::array())) {
    if (c.value("type", "") == "DisruptionTarget" && c.value("status", "") == "True") {
      return c.value("reason", "DisruptionTarget");
    }
  }
  if (!Str(pod.object, "/metadata/deletionTimestamp"_json_pointer).empty()) return "Deleted";
  if (!pod.scheduled && !pod.terminal) {
    for (const auto& c : status.value("conditions", Json::array())) {
      if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False" &&
          c.value("message", "").find("Insufficient nvidia.com/gpu") != std::string::npos) {
        return "GpusTaken";
      }
    }
  }
  return "";
}

std::string GpusHeldBy(const Snapshot& s, const std::string& node) {
  auto it = s.gpu_pods.find(node);
  return it == s.gpu_pods.end() ? "" : PodList(it->second);
}

Result<DisruptionSettings> ParseDisruption(const v1alpha1::Disruption& spec, size_t selected) {
  DisruptionSettings out;
  if (!spec.policy().empty()) out.policy = spec.policy();
  if (out.policy != "wait" && out.policy != "cordon" && out.policy != "drain" &&
      out.policy != "yield") {
    return InvalidArgument("spec.disruption.policy: \"" + spec.policy() +
                           "\" is not one of wait, cordon, drain, yield");
  }
  if (spec.timeoutseconds() < 0) {
    return InvalidArgument("spec.disruption.timeoutSeconds: must be at least 0");
  }
  out.timeout_seconds = spec.timeoutseconds();
  ASSIGN_OR_RETURN(out.max_unavailable, MaxUnavailable(spec.maxunavailable(), selected));
  return out;
}

DisruptionPlan PlanDisruption(const Snapshot& s, const DisruptionSettings& settings,
                              const std::vector<std::string>& selected,
                              const std::vector<std::string>& candidates,
                              const std::set<std::string>& live, Clock::time_point now) {
  DisruptionPlan plan;
  const std::string own = LabelValue(s.name);
  // The selected nodes under test right now, by any validation: this one's live workers and the
  // nodes it is making free, and every node another validation labelled. (This validation's
  // label on a node whose test is over is given back in this same reconcile.)
  std::set<std::string> in_use(live.begin(), live.end());
  const std::set<std::string> pending(candidates.begin(), candidates.end());
  for (const auto& node : selected) {
    auto it = s.nodes.find(node);
    if (it == s.nodes.end()) continue;
    const std::string holder = Label(it->second, kUnderTestLabel);
    if (!holder.empty() && (holder != own || pending.contains(node))) in_use.insert(node);
  }
  const size_t limit = static_cast<size_t>(settings.max_unavailable);
  for (const auto& node : candidates) {
    auto it = s.nodes.find(node);
    if (it == s.nodes.end()) continue;
    const Json& obj = it->second;
    const std::string holder = Label(obj, kUnderTestLabel);
    if (!holder.empty() && holder != own) {
      plan.waiting.push_back(node + " (under test by validation " + holder + ")");
      continue;
    }
    const bool mine = holder == own;
    if (!mine && limit > 0 && in_use.size() >= limit) {
      plan.waiting.push_back(
          node + " (waiting for its turn: spec.disruption.maxUnavailable=" + std::to_string(limit) +
          ", " + Plural(in_use.size(), "selected node") + " under test)");
      continue;
    }
    auto pods_it = s.gpu_pods.find(node);
    if (pods_it == s.gpu_pods.end() || pods_it->second.empty()) {
      plan.start.push_back(node);
      in_use.insert(node);
      continue;
    }
    const std::vector<GpuPod>& pods = pods_it->second;
    // yield starts as wait does, on idle GPUs only (its workers then give way: decide.cc).
    if (settings.policy == "wait" || settings.policy == "yield") {
      plan.waiting.push_back(node + " (its GPUs are held by pod " + PodList(pods) + ")");
      continue;
    }
    // cordon or drain: the node is out of service from now on.
    in_use.insert(node);
    const Json ann = Annotations(obj);
    if (mine && settings.timeout_seconds > 0) {
      auto since = ParseRfc3339(ann.value(kDisruptionSinceAnnotation, ""));
      if (since && now - *since >= std::chrono::seconds(settings.timeout_seconds)) {
        plan.timed_out.emplace_back(
            node, "GPU pods still on the node " + std::to_string(settings.timeout_seconds) +
                      "s after it was " + (settings.policy == "drain" ? "drained" : "cordoned") +
                      " (spec.disruption.timeoutSeconds): " + PodList(pods));
        continue;
      }
    }
    plan.held.insert(node);
    if (!mine || !Unschedulable(obj)) plan.disrupt.push_back({node, true, true});
    if (settings.policy == "cordon") {
      plan.waiting.push_back(node + " (cordoned; waiting for pod " + PodList(pods) + " to finish)");
      continue;
    }
    std::string refused;
    for (const auto& p : pods) {
      // A pod only nominated to the node is not running there: nothing to evict.
      if (!p.terminating && !p.nominated) plan.evictions.push_back({p.name_space, p.name});
      if (auto r = s.eviction_refused.find(p.Key()); r != s.eviction_refused.end()) {
        plan.refused.push_back({node, p.Key(), r->second});
        if (refused.empty()) refused = p.Key() + ": " + r->second;
      }
    }
    plan.waiting.push_back(node + " (draining: " +
                           (refused.empty() ? "evicting pod " + PodList(pods) : refused) + ")");
  }
  return plan;
}

std::vector<NodeRestore> NodesToGiveBack(const std::map<std::string, Json>& nodes,
                                         const std::string& name, const std::set<std::string>& held,
                                         const std::set<std::string>& keep_cordon) {
  std::vector<NodeRestore> out;
  const std::string own = LabelValue(name);
  for (const auto& [node, obj] : nodes) {
    if (Label(obj, kUnderTestLabel) != own || held.contains(node)) continue;
    out.push_back({node, keep_cordon.contains(node)});
  }
  return out;
}

bool MarkUnderTest(Json* node, const std::string& name, bool cordon, const std::string& now) {
  Json& n = *node;
  const Json before = n;
  if (!n.contains("spec") || !n["spec"].is_object()) n["spec"] = Json::object();
  Json& meta = n["metadata"];
  if (!meta.contains("labels") || !meta["labels"].is_object()) meta["labels"] = Json::object();
  if (!meta.contains("annotations") || !meta["annotations"].is_object()) {
    meta["annotations"] = Json::object();
  }
  const std::string own = LabelValue(name);
  const std::string holder = meta["labels"].value(kUnderTestLabel, "");
  if (!holder.empty() && holder != own) return false;  // another validation's
  Json& ann = meta["annotations"];
  if (holder.empty() || !ann.contains(kDisruptionSinceAnnotation)) {
    ann[kDisruptionSinceAnnotation] = now;
  }
  meta["labels"][kUnderTestLabel] = own;
  if (cordon && !n["spec"].value("unschedulable", false)) {
    n["spec"]["unschedulable"] = true;
    ann[kCordonedForTestAnnotation] = name;
  }
  return n != before;
}

bool GiveBack(Json* node, const std::string& name, bool keep_cordon) {
  Json& n = *node;
  Json& meta = n["metadata"];
  if (!meta.contains("labels") || !meta["labels"].is_object() ||
      meta["labels"].value(kUnderTestLabel, "") != LabelValue(name)) {
    return false;
  }
  meta["labels"].erase(kUnderTestLabel);
  if (meta.contains("annotations") && meta["annotations"].is_object()) {
    Json& ann = meta["annotations"];
    ann.erase(kDisruptionSinceAnnotation);
    if (ann.value(kCordonedForTestAnnotation, "") == name) {
      ann.erase(kCordonedForTestAnnotation);
      if (keep_cordon) {
        ann[kCordonedByAnnotation] = name;
      } else if (n.contains("spec") && n["spec"].is_object()) {
        n["spec"]["unschedulable"] = false;
      }
    }
  }
  return true;
}

}  // namespace perfgate::op
