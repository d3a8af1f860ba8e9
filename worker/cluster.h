// Cluster mode of perfgate-worker: in a pod the operator created, the worker runs the plan the
// operator resolved (a ConfigMap mounted at /etc/perfgate/plan.yaml) and writes its node's
// PerfResult through the in-cluster config. It reads nothing else from the API.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "perfgate/v1alpha1/report.pb.h"

namespace perfgate::worker {

// How long a worker retries its PerfResult write by default: an API server restart or a
// control-plane upgrade is over in this time.
inline constexpr std::chrono::seconds kDefaultResultWriteTimeout{300};

// Where the PerfResult goes and what it is tied to; from flags or the pod's env
// (PERFGATE_RESULT_NAME, POD_NAMESPACE, NODE_NAME, PERFGATE_RUN, PERFGATE_VALIDATION_UID,
// PERFGATE_RESULT_WRITE_TIMEOUT_SECONDS).
struct ClusterTarget {
  std::string result_name;
  std::string name_space;
  std::string node_name;
  std::string run;
  std::string validation_name;
  std::string validation_uid;
  // How long the worker keeps retrying its PerfResult write before it gives up (and leaves
  // the verdict in its termination message only).
  std::chrono::seconds result_write_timeout{kDefaultResultWriteTimeout};
};

// Fills the unset fields of `target` from the environment. Non-blocking.
void ClusterTargetFromEnv(ClusterTarget* target);

// An absolute path the pod spec names (/etc/perfgate/plan.yaml, /dev/termination-log) as this
// process must open it: under $PERFGATE_POD_ROOT when that is set (a kubelet, or a run outside
// a container, that cannot give each pod its own /etc and /dev), else unchanged.
std::string PodPath(const std::string& path);

// The PerfResult object for `report` (JSON text of a perfgate.io/v1alpha1 PerfResult).
Result<std::string> PerfResultJson(const ClusterTarget& target, const v1alpha1::Report& report);

// "test metric statistic figure (op bound)" of the worst test: the first FAIL, else ERROR,
// else INCONCLUSIVE, else the PASS closest to its bound; "" when no threshold was evaluated.
std::string WorstFigure(const v1alpha1::Report& report);

// Creates the PerfResult with the in-cluster config (an existing one of the same name is left
// as it is: a retried pod must not overwrite what the operator recorded), retrying transient
// failures (RetryResultWrite) for up to target.result_write_timeout. Blocking.
// `uid`, when given, receives the created object's metadata.uid ("" when it already existed).
Status WritePerfResult(const ClusterTarget& target, const v1alpha1::Report& report,
                       std::string* uid = nullptr);

// The ConfigMap that holds a node's diagnosis bundle (docs/diagnostics.md): named after the
// PerfResult, labelled with its validation, node and run, owned by the PerfResult
// (`result_uid`), else by the validation, so that it goes with them.
std::string DiagnosisConfigMapName(const std::string& result_name);
Result<std::string> DiagnosisConfigMapJson(const ClusterTarget& target,
                                           const std::map<std::string, std::string>& files,
                                           const std::string& result_uid);
// Creates it with the in-cluster config, retrying transient failures as WritePerfResult does.
Status WriteDiagnosisConfigMap(const ClusterTarget& target, const std::string& object_json);

// Whether a failed create of the PerfResult may succeed when sent again: no response at all,
// 5xx, 429, a 2xx whose body was cut. Other 4xx (refused, invalid, forbidden) would fail the
// same way again.
bool RetryableWriteError(const Status& status);

// Backoff between write attempts: `initial`, doubling up to `max`, each wait drawn uniformly
// from its upper half (jitter, so the workers of a large validation do not retry in step).
struct WriteBackoff {
  std::chrono::milliseconds initial{500};
  std::chrono::milliseconds max{16000};
};

// Calls `attempt` until it succeeds (kAlreadyExists counts: the name is deterministic, so the
// object is ours from an earlier attempt whose answer was lost), fails with an error that
// RetryableWriteError refuses, or `timeout` has passed (the last wait is cut to end at it);
// then returns the last error. It waits on `clock` (a test's fake advances its time);
// `on_retry` hears each failure that will be retried, with the wait. Blocking.
Status RetryResultWrite(
    const std::function<Status()>& attempt, std::chrono::milliseconds timeout,
    const WriteBackoff& backoff, Clock& clock, uint64_t jitter_seed,
    const std::function<void(int attempt, const Status& error, std::chrono::milliseconds wait)>&
        on_retry = nullptr);

// The termination message (common/termination.h) carrying this node's verdict; `note` says why
// the PerfResult could not be written ("" before trying).
std::string TerminationResult(const ClusterTarget& target, const v1alpha1::Report& report,
                              const std::string& note);

// Writes `message` where the kubelet reads a container's termination message (at most 4096
// bytes are kept). Best effort.
void WriteTerminationMessage(const std::string& message);

}  // namespace perfgate::worker
