// The PerfValidation reconciler: level-triggered and idempotent. Each call reads the
// validation (from the API), its pods and PerfResults and the nodes (from the caches), and
// moves the world one step towards "every selected node has a PerfResult for this run and
// the status, node labels and taints say what they mean" (docs/operator.md, "Verdict words").
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "kube/client.h"

namespace perfgate::op {

using Json = nlohmann::json;

inline constexpr const char* kFinalizer = "perfgate.io/finalizer";
inline constexpr const char* kRerunAnnotation = "perfgate.io/rerun";
inline constexpr const char* kFailedTaint = "perfgate.io/failed";
inline constexpr const char* kVerdictLabel = "perfgate.io/verdict";
inline constexpr const char* kTaintedByAnnotation = "perfgate.io/tainted-by";
inline constexpr const char* kCordonedByAnnotation = "perfgate.io/cordoned-by";
inline constexpr const char* kVerdictByAnnotation = "perfgate.io/verdict-by";

kube::GroupVersionResource ValidationsResource();
kube::GroupVersionResource ResultsResource();
kube::GroupVersionResource ProfilesResource();
kube::GroupVersionResource ConfigMapsResource();

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
  // Where events about cluster-scoped validations go.
  std::string eventNamespace = "default";
};

// A node's place in an NCCL gang.
struct GangMember {
  std::string gangId;  // e.g. "pval-x-g1-gang0": names the headless Service and the pods' label
  int rank = 0;
  int size = 1;
  std::string commId;  // NCCL_COMM_ID: <rank-0 host>:<port>
  bool headlessService = true;
};

// Read-only views of the informers' stores. Thread-safe, non-blocking.
struct Caches {
  std::function<std::vector<Json>()> nodes;
  // Worker pods in the operator's namespace by label perfgate.io/validation, by perfgate.io/node.
  std::function<std::vector<Json>(const std::string& validation)> podsOf;
  std::function<std::vector<Json>(const std::string& node)> podsOn;
  // PerfResults in the operator's namespace by label perfgate.io/validation.
  std::function<std::vector<Json>(const std::string& validation)> resultsOf;
};

struct ReconcileResult {
  // 0: nothing to wait for (events will trigger the next reconcile).
  std::chrono::milliseconds requeueAfter{0};
};

// Counters the /metrics endpoint reads. Thread-safe.
struct ReconcileMetrics {
  std::atomic<uint64_t> reconciles{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> podsCreated{0};
  std::atomic<uint64_t> resultsWrittenByOperator{0};
};

class Reconciler {
 public:
  Reconciler(std::shared_ptr<kube::Client> client, Caches caches, ReconcilerConfig config,
             std::function<std::chrono::system_clock::time_point()> now = nullptr);

  // One reconcile of the validation `name`. Blocking (API calls); thread-safe for distinct
  // names (the work queue never hands one name to two workers). An error means "retry with
  // backoff".
  Result<ReconcileResult> Reconcile(const std::string& name);

  ReconcileMetrics& metrics() { return metrics_; }

 private:
  struct NodeOutcome;
  Result<ReconcileResult> Finalize(const Json& obj);
  Status Complete(const Json& obj, Json status, const std::vector<NodeOutcome>& outcomes,
                  const std::map<std::string, Json>& cached_nodes);
  Status WriteStatus(const Json& obj, const Json& status);
  // `cached`: the informer's copy, tried first (a stale one costs a 409 and a GET).
  Status ApplyNodeAction(const std::string& node, const std::string& verdict,
                         const std::string& validation, const std::string& on_failure,
                         const Json* cached);
  Status UndoNodeActions(const std::string& validation);
  Status WriteOperatorResult(const Json& obj, const std::string& run, const std::string& node,
                             const std::string& pod_name, const std::string& reason);
  Status CleanOldRuns(const Json& obj, const std::string& run, int keep_results);
  void Event(const Json& obj, const std::string& type, const std::string& reason,
             const std::string& message);
  Json BuildPod(const Json& obj, const std::string& run, const std::string& node,
                const std::string& pod_name, const std::string& config_map, int gpus,
                int timeout_seconds);
  // BuildPod plus what a gang rank needs (docs/nccl.md): rank env, NCCL_COMM_ID, a memory
  // /dev/shm, IPC_LOCK, and for rank 0 the hostname its headless Service resolves.
  Json BuildGangPod(const Json& obj, const std::string& run, const std::string& node,
                    const std::string& pod_name, const std::string& config_map, int gpus,
                    int timeout_seconds, const GangMember& member);
  // The headless Service through which a gang's ranks reach rank 0 (idempotent: an existing
  // one is kept). Blocking.
  Status CreateGangService(const Json& obj, const std::string& run, const std::string& gang_id,
                           int port);

  // What every pod of a run's gangs shares (the narrowing rounds' pods too).
  struct GangRun {
    const Json* obj;
    std::string run;
    std::string configMap;
    int specGpus;
    const std::map<std::string, Json>* nodes;
    int timeout;
    int port;
    bool suspended;
    // The validation's cached PerfResults and pods, read once for all narrowing rounds.
    std::vector<Json> results;
    std::vector<Json> pods;
  };
  struct Narrowing {
    std::vector<std::string> suspects;
    std::string running;  // non-empty while a round runs: what it is doing
  };
  // Another validation whose live worker runs on `node`, or "". Non-blocking (caches).
  std::string BusyWith(const std::string& validation, const std::string& node) const;
  // Creates the pods (one that exists already is fine). Blocking.
  Status CreatePods(const std::vector<Json>& pods);
  // NCCL_COMM_ID for a new gang: rank 0 behind the gang's headless Service, or (kube-sim)
  // --gang-rendezvous-host with a free port.
  std::string NewCommId(const std::string& gang_id, int port) const;
  // Runs `groups` as gangs of their own in round `stage` (pods and results of run
  // "<run>-<stage>"): creates what is missing and returns each group's verdict, "" while it
  // runs: PASS when every member passed, FAIL when one failed, else ERROR (a pod that crashed
  // or was not scheduled in time: recorded as the operator's results, so it is not retried).
  // Blocking.
  Result<std::vector<std::string>> RunNarrowingGangs(
      const GangRun& g, const std::string& stage,
      const std::vector<std::vector<std::string>>& groups);
  // The suspects of the decided gangs (docs/nccl.md, "Narrowing"): failing pairs, or a failing
  // `all` gang run again in pairs; then each suspect beside a node that passed.
  Result<Narrowing> Narrow(const GangRun& g, const std::vector<std::vector<std::string>>& gangs,
                           const std::map<std::string, std::string>& verdict_of,
                           const std::string& shape, const std::string& mode);

  std::shared_ptr<kube::Client> client_;
  Caches caches_;
  ReconcilerConfig config_;
  std::function<std::chrono::system_clock::time_point()> now_;
  ReconcileMetrics metrics_;
  std::mutex mu_;
  std::set<std::string> config_maps_written_;
  // "<validation>/<run>" whose Started event went out: a reconcile that fails and retries
  // before the new run reaches the status must not announce the run again.
  std::set<std::string> started_announced_;
  std::atomic<uint64_t> event_seq_{0};
};

// The gangs of a sorted node list: shape "all" is one gang of every node; "pairs" is (0,1),
// (2,3), ..., with an odd last node added to the last pair (one node alone tests no link).
std::vector<std::vector<std::string>> GangsOf(const std::vector<std::string>& nodes,
                                              const std::string& shape);

// The run a PerfResult or pod label belongs to: narrowing rounds run as "<run>-pairs",
// "<run>-probe", "<run>-probe2", ... and count as part of <run>.
std::string BaseRun(const std::string& label);

// Helpers exposed for unit tests.
// The run id of a generation and a rerun token: "g3" or "g3-1a2b3c4d".
std::string RunId(int64_t generation, const std::string& rerun_token);
// A DNS-1123 name from parts, at most 63 characters (a hash keeps long ones unique).
std::string ObjectName(const std::vector<std::string>& parts);
// Whether `node` is selected by `spec`: nodeSelector labels all match, or it is named in
// spec.nodes; neither given selects every node.
bool NodeSelected(const Json& spec, const Json& node);

}  // namespace perfgate::op
