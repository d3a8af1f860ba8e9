// Cluster mode of perfgate-worker: in a pod the operator created, the worker runs the plan the
// operator resolved (a ConfigMap mounted at /etc/perfgate/plan.yaml) and writes its node's
// PerfResult through the in-cluster config. It reads nothing else from the API.
#pragma once

#include <string>

#include "common/result.h"
#include "perfgate/v1alpha1/report.pb.h"

namespace perfgate::worker {

// Where the PerfResult goes and what it is tied to; from flags or the pod's env
// (PERFGATE_RESULT_NAME, POD_NAMESPACE, NODE_NAME, PERFGATE_RUN, PERFGATE_VALIDATION_UID).
struct ClusterTarget {
  std::string resultName;
  std::string nameSpace;
  std::string nodeName;
  std::string run;
  std::string validationName;
  std::string validationUid;
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
// as it is: a retried pod must not overwrite what the operator recorded). Blocking.
Status WritePerfResult(const ClusterTarget& target, const v1alpha1::Report& report);

// Writes `message` where the kubelet reads a container's termination message. Best effort.
void WriteTerminationMessage(const std::string& message);

}  // namespace perfgate::worker
