// What the operator is configured with (its flags): read by decide, pods and act alike.
#pragma once

#include <chrono>
#include <string>

namespace perfgate::op {

struct ReconcilerConfig {
  std::string nameSpace = "perfgate-system";
  std::string workerImage = "ghcr.io/perfgate/perfgate-worker:latest";
  std::string workerServiceAccount = "perfgate-worker";
  bool enableFixtures = false;
  // A worker pod still unscheduled after this long gives its node ERROR.
  std::chrono::seconds schedulingTimeout{60};
  // Default per-node timeout when the policy gives none.
  int defaultNodeTimeoutSeconds = 3600;
  // Non-empty: NCCL gangs meet at this host on a port free on the operator's machine, not at
  // rank 0's headless Service (kube-sim: every pod is a local process and there is no DNS).
  std::string gangRendezvousHost;
  // Non-empty: a volume source (JSON) mounted into every worker pod at kDiagnosticsMountPath,
  // where a node with a failing test keeps its diagnosis bundle (docs/diagnostics.md).
  std::string diagnosticsVolume;
  // Where events about cluster-scoped validations go.
  std::string eventNamespace = "default";
  // A node claim not renewed for this long may be taken over (operator/claims.h); renewed every
  // third of it while its run goes on.
  int claimDurationSeconds = 60;
  // With a results store (--store): how often a validation whose results wait for the store is
  // looked at again.
  std::chrono::seconds storeRetry{30};
};

}  // namespace perfgate::op
