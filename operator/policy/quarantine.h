// The brake on mass quarantine (docs/operator.md, "The brake on mass quarantine"): FAILs that
// policy.onFailure would taint or cordon, past the cap of policy.maxQuarantined (of the selected
// nodes) or the operator's --max-quarantined (of the cluster's GPU nodes), keep their verdict
// label without the taint; the validation then says the failures look systemic and names what
// the failing nodes share. Pure: decide's part.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "core/json_fields.h"
#include "operator/reconcile/actions.h"
#include "operator/reconcile/config.h"
#include "operator/reconcile/snapshot.h"

namespace perfgate::op {

// What the failing nodes `failing` share, in words: "gpu.product=NVIDIA-H200, driver=550.54.15,
// profile=h200-sxm-141gb, rack=r12" (the GPU product, the labelled driver, `profile`, the zone,
// labels whose key names a rack or switch, and `extra_labels`); "" when nothing.
std::string SharedByFailing(const std::vector<std::string>& failing,
                            const std::map<std::string, Json>& nodes, const std::string& profile,
                            const std::vector<std::string>& extra_labels);

// With policy.onFailure taint or taintAndCordon and node verdicts in `d`: the FAILs past the cap
// get quarantine false; status.quarantine, the condition SystemicFailure and a SystemicFailure
// event say so. A spec whose maxQuarantined does not parse holds every new quarantine (and says
// why). Call after the node verdicts are decided, before the cordons kept are.
void DecideQuarantine(const Snapshot& s, const ReconcilerConfig& config, const std::string& now,
                      Decision* d);

// spec.policy.maxQuarantined checked (kInvalidArgument naming the field).
Status CheckQuarantine(const v1alpha1::PerfValidationSpec& spec);

}  // namespace perfgate::op
