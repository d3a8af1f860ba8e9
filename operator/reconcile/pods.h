// Builds the namespaced objects a run needs: worker pods (alone or as a gang rank), a gang's
// headless Service, the plan ConfigMap and the PerfResults the operator writes itself.
// Pure: returns objects to create, creates nothing.
#pragma once

#include <string>

#include "common/termination.h"
#include "core/json_fields.h"
#include "operator/reconcile/config.h"
#include "perfgate/v1alpha1/validation.pb.h"

namespace perfgate::op {

// Where worker pods mount ReconcilerConfig::diagnosticsVolume (PERFGATE_DIAGNOSTICS_DIR).
inline constexpr const char* kDiagnosticsMountPath = "/var/lib/perfgate/diagnostics";

// The validation that owns what is built.
struct Owner {
  std::string name;
  std::string uid;
};

// A node's place in an NCCL gang.
struct GangMember {
  std::string gang_id;  // e.g. "pval-x-g1-gang0": names the headless Service and the pods' label
  int rank = 0;
  int size = 1;
  // The gang's nodes by rank (PERFGATE_GANG_NODES: a per-rail failure names its peer node).
  std::vector<std::string> nodes;
  // NCCL_COMM_ID: <rank-0 host>:<port>; "" while the act step still has to pick a free port
  // at --gang-rendezvous-host.
  std::string comm_id;
  bool headless_service = true;
};

// What one worker pod runs.
struct PodParams {
  std::string run;  // the pod's run label: the run, or a narrowing round "<run>-<stage>"
  std::string node;
  std::string pod_name;
  std::string config_map;
  int gpus = 0;
  int timeout_seconds = 0;
};

// The ownerReferences of an object owned by the validation (garbage-collected with it): a pod,
// Service or plan is controlled by it; a result written for it is only owned.
Json OwnerReferences(const Owner& owner, bool controller);

Json BuildPod(const Owner& owner, const v1alpha1::PerfValidationSpec& spec,
              const ReconcilerConfig& config, const PodParams& p);
// BuildPod plus what a gang rank needs (docs/nccl.md): rank env, NCCL_COMM_ID, a memory
// /dev/shm, IPC_LOCK, and for rank 0 the hostname its headless Service resolves.
Json BuildGangPod(const Owner& owner, const v1alpha1::PerfValidationSpec& spec,
                  const ReconcilerConfig& config, const PodParams& p, const GangMember& member);
// The headless Service through which a gang's ranks reach rank 0.
Json BuildGangService(const Owner& owner, const std::string& nameSpace, const std::string& run,
                      const std::string& gang_id, int port);
// The ConfigMap `name` holding the resolved plan, mounted at /etc/perfgate/plan.yaml.
Json BuildPlanConfigMap(const Owner& owner, const std::string& nameSpace, const std::string& run,
                        const std::string& name, const std::string& plan_text);
// A worker's measured result recovered from its termination message, when the worker could not
// write it (spec.writtenBy: operator; annotation perfgate.io/recovered-from).
Json BuildRecoveredResult(const Owner& owner, const std::string& nameSpace, const std::string& run,
                          const std::string& node, const std::string& name,
                          const termination::NodeResult& decoded);
// An ERROR PerfResult the operator writes for `node` (spec.writtenBy: operator).
Json BuildOperatorResult(const Owner& owner, const std::string& nameSpace, const std::string& run,
                         const std::string& node, const std::string& name,
                         const std::string& reason, const std::string& completion_time);

}  // namespace perfgate::op
