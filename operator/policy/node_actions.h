// Node actions: what a verdict does to a node object (the perfgate.io/verdict label, and on
// FAIL the perfgate.io/failed taint and cordon the policy asks for; PASS undoes only what
// perfgate set), and what deleting a validation takes back. Pure: edits node JSON in memory.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/verdict.h"
#include "core/json_fields.h"

namespace perfgate::op {

// Applies `verdict` from `validation` with policy.onFailure `on_failure` (none | taint |
// taintAndCordon) to `node`. Returns whether anything changed.
bool MarkNode(Json* node, verdict::Verdict verdict, const std::string& validation,
              const std::string& on_failure, std::optional<bool> repeated_failure = std::nullopt);

// Sets the recommended action: label perfgate.io/action=`step` and annotation
// perfgate.io/action-evidence (cut to 2000 characters; removed when `evidence` is empty). An
// empty `step` changes nothing. Returns whether anything changed.
bool SetAction(Json* node, const std::string& step, const std::string& evidence);

// Names the DRA devices perfgate tainted instead of the node (annotation
// perfgate.io/tainted-devices, or perfgate.io/device-taint-rehearsal when `rehearsal`): a FAIL
// with `devices` sets it; a PASS removes both. Returns whether anything changed.
bool SetTaintedDevices(Json* node, verdict::Verdict verdict, const std::string& devices,
                       bool rehearsal);

// The nodes whose verdict label the deleted `validation` set and which it did not taint (its
// FAIL taint outlives it: a bad GPU stays bad until a later run passes).
std::vector<std::string> NodesToRelease(const std::map<std::string, Json>& nodes,
                                        const std::string& validation);

// Removes the verdict label and the annotation naming who set it.
void ReleaseNode(Json* node);

}  // namespace perfgate::op
