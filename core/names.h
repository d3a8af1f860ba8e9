// Names the operator derives and writes: API resources, the labels, annotations, taint and
// finalizer it owns, run ids and object names. Deterministic, so a restarted operator finds
// everything it made. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/labels.h"
#include "kube/client.h"

namespace perfgate::op {

inline constexpr const char* kFinalizer = "perfgate.io/finalizer";
// On a worker pod under spec.disruption.policy yield: keeps the pod, once preempted or
// evicted, until the operator has recorded the yield (as the Job controller's tracking
// finalizer keeps a Job's pods until it has counted them).
inline constexpr const char* kYieldFinalizer = "perfgate.io/yield-record";
inline constexpr const char* kRerunAnnotation = "perfgate.io/rerun";
inline constexpr const char* kFailedTaint = "perfgate.io/failed";
inline constexpr const char* kVerdictLabel = "perfgate.io/verdict";
inline constexpr const char* kTaintedByAnnotation = "perfgate.io/tainted-by";
inline constexpr const char* kCordonedByAnnotation = "perfgate.io/cordoned-by";
inline constexpr const char* kVerdictByAnnotation = "perfgate.io/verdict-by";
inline constexpr const char* kValidationLabel = "perfgate.io/validation";
inline constexpr const char* kNodeLabel = "perfgate.io/node";
inline constexpr const char* kRunLabel = "perfgate.io/run";
// On a PerfResult the operator recovered from the worker's termination message.
inline constexpr const char* kRecoveredFromAnnotation = "perfgate.io/recovered-from";
inline constexpr const char* kGangLabel = "perfgate.io/gang";
// On a node that failed repeatedly (operator/policy/repeated_failures.h): "true".
inline constexpr const char* kRepeatedFailureLabel = "perfgate.io/repeated-failure";
// On a node with a verdict: the recommended action (common/action.h: none, retest, reset-gpu,
// reboot-node, reseat, rma), for automation to select on, and the evidence behind it.
inline constexpr const char* kActionLabel = "perfgate.io/action";
inline constexpr const char* kActionEvidenceAnnotation = "perfgate.io/action-evidence";
// On a node under test (its worker running, or being made free for it): the validation's label
// value. Removed once the node's result is in, whatever happens (docs/operator.md).
inline constexpr const char* kUnderTestLabel = "perfgate.io/under-test";
// On a node perfgate cordoned to make it free for a test (spec.disruption cordon or drain): the
// validation; the cordon is undone with the label. Absent when the node was cordoned already.
inline constexpr const char* kCordonedForTestAnnotation = "perfgate.io/cordoned-for-test";
// When the node's disruption began (RFC 3339): spec.disruption.timeoutSeconds counts from it.
inline constexpr const char* kDisruptionSinceAnnotation = "perfgate.io/disruption-since";
// On a node whose FAIL is confined to some GPUs that perfgate tainted one by one with DRA
// DeviceTaintRules instead of tainting the node (operator/policy/device_taints.h): "gpu3=<driver>/
// <pool>/<device>", comma-separated. With policy.deviceTaint None (a rehearsal) the same list
// goes into perfgate.io/device-taint-rehearsal and nothing is tainted.
inline constexpr const char* kTaintedDevicesAnnotation = "perfgate.io/tainted-devices";
inline constexpr const char* kDeviceTaintRehearsalAnnotation = "perfgate.io/device-taint-rehearsal";

kube::GroupVersionResource ValidationsResource();
kube::GroupVersionResource ResultsResource();
kube::GroupVersionResource ProfilesResource();
kube::GroupVersionResource BaselinesResource();
kube::GroupVersionResource ConfigMapsResource();
kube::GroupVersionResource ServicesResource();

// The run id of a generation and a rerun token: "g3" or "g3-1a2b3c4d".
std::string RunId(int64_t generation, const std::string& rerun_token);
// A DNS-1123 name from parts, at most 63 characters (a hash keeps long ones unique).
using ::perfgate::ObjectName;
// The run a PerfResult or pod label belongs to: narrowing rounds run as "<run>-pairs",
// "<run>-probe", "<run>-probe2", ... and count as part of <run>.
std::string BaseRun(const std::string& label);
// 16 hex digits of the FNV-1a hash of `s` (event names).
std::string HashHex(const std::string& s);

}  // namespace perfgate::op
