// What the operator is configured with (its flags): read by decide, pods and act alike.
#pragma once

#include <chrono>
#include <string>

namespace perfgate::op {

struct ReconcilerConfig {
  std::string name_space = "perfgate-system";
  std::string worker_image = "ghcr.io/perfgate/perfgate-worker:latest";
  std::string worker_service_account = "perfgate-worker";
  // The PriorityClass of workers under spec.disruption.policy yield (the chart ships it: a low
  // value and preemptionPolicy Never), so that the scheduler preempts them for anyone else.
  std::string yield_priority_class = "perfgate-yield";
  bool enable_fixtures = false;
  // A worker pod still unscheduled after this long gives its node ERROR.
  std::chrono::seconds scheduling_timeout{60};
  // Default per-node timeout when the policy gives none.
  int default_node_timeout_seconds = 3600;
  // Non-empty: NCCL gangs meet at this host on a port free on the operator's machine, not at
  // rank 0's headless Service (kube-sim: every pod is a local process and there is no DNS).
  std::string gang_rendezvous_host;
  // Non-empty: a volume source (JSON) mounted into every worker pod at kDiagnosticsMountPath,
  // where a node with a failing test keeps its diagnosis bundle (docs/diagnostics.md).
  std::string diagnostics_volume;
  // Where events about cluster-scoped validations go.
  std::string event_namespace = "default";
  // A node claim not renewed for this long may be taken over (operator/reconcile/claims.h); renewed
  // every third of it while its run goes on.
  int claim_duration_seconds = 60;
  // With a results store (--store): how often a validation whose results wait for the store is
  // looked at again.
  std::chrono::seconds store_retry{30};
  // The brake on mass quarantine (--max-quarantined): a validation without
  // policy.maxQuarantined taints or cordons at most this many of its selected nodes, and all
  // validations together at most this many of the cluster's GPU nodes (a count or a percentage).
  std::string max_quarantined = "50%";
};

}  // namespace perfgate::op
