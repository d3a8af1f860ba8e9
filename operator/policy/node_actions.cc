#include "operator/policy/node_actions.h"

#include <algorithm>

#include "common/node_verdict.h"
#include "core/names.h"

namespace perfgate::op {

bool SetTaintedDevices(Json* node, verdict::Verdict verdict, const std::string& devices,
                       bool rehearsal) {
  Json& meta = (*node)["metadata"];
  if (!meta.contains("annotations") || !meta["annotations"].is_object()) {
    meta["annotations"] = Json::object();
  }
  Json& ann = meta["annotations"];
  const Json before = ann;
  if (verdict == verdict::Verdict::kPass) {
    ann.erase(kTaintedDevicesAnnotation);
    ann.erase(kDeviceTaintRehearsalAnnotation);
  } else if (verdict == verdict::Verdict::kFail && !devices.empty()) {
    ann[rehearsal ? kDeviceTaintRehearsalAnnotation : kTaintedDevicesAnnotation] = devices;
  }
  return ann != before;
}

bool MarkNode(Json* node, verdict::Verdict verdict, const std::string& validation,
              const std::string& on_failure, std::optional<bool> repeated_failure) {
  Json& n = *node;
  // A Node may be stored without a spec (or labels, annotations): read them as empty.
  if (!n.contains("spec") || !n["spec"].is_object()) n["spec"] = Json::object();
  const Json before = n;
  Json& meta = n["metadata"];
  if (!meta.contains("labels")) meta["labels"] = Json::object();
  if (!meta.contains("annotations")) meta["annotations"] = Json::object();
  Json& ann = meta["annotations"];
  // The label's words: passed, failed, inconclusive, error.
  meta["labels"][kVerdictLabel] = verdict == verdict::Verdict::kPass ? "passed"
                                  : verdict == verdict::Verdict::kFail
                                      ? "failed"
                                      : Lower(verdict::VerdictName(verdict));
  ann[kVerdictByAnnotation] = validation;
  if (repeated_failure && *repeated_failure) {
    meta["labels"][kRepeatedFailureLabel] = "true";
  } else if (repeated_failure) {
    meta["labels"].erase(kRepeatedFailureLabel);
  }
  Json taints = n["spec"].value("taints", Json::array());
  const bool has_taint = std::any_of(taints.begin(), taints.end(), [](const Json& t) {
    return t.value("key", "") == kFailedTaint;
  });
  if (verdict == verdict::Verdict::kFail &&
      (on_failure == "taint" || on_failure == "taintAndCordon")) {
    if (!has_taint) {
      taints.push_back({{"key", kFailedTaint}, {"value", validation}, {"effect", "NoSchedule"}});
      ann[kTaintedByAnnotation] = validation;
    }
    if (on_failure == "taintAndCordon" && !n["spec"].value("unschedulable", false)) {
      n["spec"]["unschedulable"] = true;
      ann[kCordonedByAnnotation] = validation;
    }
  } else if (verdict == verdict::Verdict::kPass) {
    // Only what perfgate set: its own taint key, a cordon it recorded.
    if (has_taint) {
      Json kept = Json::array();
      for (const auto& t : taints) {
        if (t.value("key", "") != kFailedTaint) kept.push_back(t);
      }
      taints = kept;
      ann.erase(kTaintedByAnnotation);
    }
    if (ann.contains(kCordonedByAnnotation)) {
      n["spec"]["unschedulable"] = false;
      ann.erase(kCordonedByAnnotation);
    }
  }
  if (taints.empty()) {
    n["spec"].erase("taints");
  } else {
    n["spec"]["taints"] = taints;
  }
  return n != before;
}

std::vector<std::string> NodesToRelease(const std::map<std::string, Json>& nodes,
                                        const std::string& validation) {
  std::vector<std::string> out;
  for (const auto& [name, node] : nodes) {
    const Json ann = node.value("metadata", Json::object()).value("annotations", Json::object());
    if (ann.value(kVerdictByAnnotation, "") != validation) continue;
    // Another validation's taint does not keep this one's verdict label.
    if (ann.value(kTaintedByAnnotation, "") == validation) continue;
    out.push_back(name);
  }
  return out;
}

bool SetAction(Json* node, const std::string& step, const std::string& evidence) {
  if (step.empty()) return false;
  Json& meta = (*node)["metadata"];
  const Json before = meta;
  if (!meta.contains("labels") || !meta["labels"].is_object()) meta["labels"] = Json::object();
  if (!meta.contains("annotations") || !meta["annotations"].is_object()) {
    meta["annotations"] = Json::object();
  }
  meta["labels"][kActionLabel] = step;
  if (evidence.empty()) {
    meta["annotations"].erase(kActionEvidenceAnnotation);
  } else {
    meta["annotations"][kActionEvidenceAnnotation] =
        evidence.size() > 2000 ? evidence.substr(0, 1997) + "..." : evidence;
  }
  return meta != before;
}

void ReleaseNode(Json* node) {
  Json& meta = (*node)["metadata"];
  if (meta.contains("labels")) {
    meta["labels"].erase(kVerdictLabel);
    meta["labels"].erase(kActionLabel);
  }
  if (meta.contains("annotations")) {
    meta["annotations"].erase(kVerdictByAnnotation);
    meta["annotations"].erase(kActionEvidenceAnnotation);
  }
}

}  // namespace perfgate::op
