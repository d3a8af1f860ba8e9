// kube-sim: a loopback Kubernetes API server for tests, with simulated GPU nodes whose kubelet
// runs pods as local processes. It behaves like kube-apiserver where perfgate depends on it
// (see docs/kube-sim.md for what it models and what it does not); it is not a cluster.
//
// In-process use from a test:
//   perfgate::kubesim::Options opts;  opts.nodes = 2;  opts.gpusPerNode = 8;
//   perfgate::kubesim::KubeSim sim(opts);
//   ASSERT_TRUE(sim.Start().ok());
//   ... run kubectl --kubeconfig=sim.kubeconfigPath() ... or a client against sim.url() ...
//   sim.Stop();  // also done by the destructor
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"

namespace perfgate::kubesim {

using Json = nlohmann::json;

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;                                 // 0 picks a free port; url() says which
  std::string kubeconfigPath;                   // empty: <workDir>/kubeconfig
  std::string workDir;                          // empty: a fresh temp dir, removed by Stop()
  int nodes = 0;                                // simulated nodes node-0 .. node-(N-1)
  int gpusPerNode = 8;                          // allocatable nvidia.com/gpu per simulated node
  std::string gpuProduct = "NVIDIA-H200";       // label nvidia.com/gpu.product
  std::map<std::string, std::string> imageMap;  // container image -> local binary
  bool scaleMode = false;                       // kubelet completes pods at once, no processes
  // The OwnerReferencesPermissionEnforcement admission plugin (on by default in OpenShift):
  // changing ownerReferences needs delete on the object (create excepted), and a new
  // blockOwnerDeletion needs update on the owner's finalizers subresource.
  bool ownerReferencesPermissionEnforcement = false;
  // When set, one JSON line per API request is appended here, shaped like kube-apiserver's
  // audit.k8s.io/v1 Event at level Metadata (user, verb, objectRef, response code, the
  // authorization decision), plus the authorizations admission plugins checked for it.
  std::string auditLogPath;
  // Bounded event history for watches from a resourceVersion; each entry holds the object
  // before and after, so memory is about 2 x this x object size.
  size_t watchHistoryEvents = 4096;
  double bookmarkIntervalSeconds = 1.0;
  bool quiet = true;  // no request log on stderr
};

struct NodeSpec {
  std::string name;
  int gpus = 8;
  std::string gpuProduct = "NVIDIA-H200";
  std::map<std::string, std::string> labels;  // added to the defaults
  Json taints = Json::array();                // [{key, value, effect}]
  bool unschedulable = false;
  // More allocatable extended resources, e.g. {"rdma/rdma_shared_device_a", 1}.
  std::map<std::string, int> extendedResources;
};

// What RBAC authorizes: a verb on a resource (and subresource) of a group, in a namespace.
struct ResourceAttributes {
  std::string verb;
  std::string apiGroup;
  std::string resource;
  std::string subresource;
  std::string nameSpace;
  std::string name;
};

// An authorization an admission plugin checked on a request's behalf (e.g.
// OwnerReferencesPermissionEnforcement asks for update on the owner's finalizers).
struct AuthorizationCheck : ResourceAttributes {
  bool allowed = false;
};

// Who made a request, as the authenticator saw it (what admission and audit would see), and
// what it asked for.
struct RequestRecord : ResourceAttributes {
  std::string user;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>>
      extra;  // e.g. authentication.kubernetes.io/node-name
  int code = 0;
  std::string decision;  // RBAC's: "allow" or "forbid"; empty when never authorized
  std::vector<AuthorizationCheck> admissionChecks;
  // When the answer was decided (after any freeze held the request, and after a write was
  // stored): the audit event's stageTimestamp.
  std::chrono::system_clock::time_point time{};
  std::string userAgent;
};

// What a pod "does" in scale mode: no process runs; the kubelet records this outcome at once.
struct PodOutcome {
  int exitCode = 0;
  std::string terminationMessage;
  std::string log;
  // Objects the pod writes (apiVersion/kind pick the resource), created on its behalf as its
  // service account would, before the pod is marked finished. For canned benchmark results.
  std::vector<Json> objects;
};

class KubeSim {
 public:
  explicit KubeSim(Options options);
  ~KubeSim();
  KubeSim(const KubeSim&) = delete;
  KubeSim& operator=(const KubeSim&) = delete;

  // Generates the PKI, binds, writes the kubeconfig, creates the simulated nodes and starts the
  // scheduler/kubelet/garbage collector. Blocking until the server accepts. Call once.
  Status Start();
  // Kills pod processes, closes watches and connections, joins every thread. Idempotent.
  void Stop();

  std::string url() const;  // https://127.0.0.1:PORT
  int port() const;
  const std::string& kubeconfigPath() const;
  const std::string& adminToken() const;
  const std::string& caCertPem() const;
  const std::string& workDir() const;

  // Direct object access, bypassing authentication, authorization and fault injection (but
  // not validation, resourceVersion bumps, watch events or garbage collection). `group` is ""
  // for core/v1; `resource` is the plural. Thread-safe.
  Result<Json> Get(const std::string& group, const std::string& resource, const std::string& ns,
                   const std::string& name) const;
  std::vector<Json> List(const std::string& group, const std::string& resource,
                         const std::string& ns = "") const;
  Result<Json> Create(const std::string& group, const std::string& resource, const Json& object);
  // Replaces the object (main endpoint semantics; `status=true` uses the /status subresource).
  Result<Json> Update(const std::string& group, const std::string& resource, const Json& object,
                      bool status = false);
  Status Delete(const std::string& group, const std::string& resource, const std::string& ns,
                const std::string& name);
  uint64_t resourceVersion() const;

  // Nodes. Thread-safe.
  Status AddNode(const NodeSpec& spec);

  // Service-account token as the TokenRequest API issues it; bound to the pod (and its node)
  // when podName is given. Thread-safe.
  Result<std::string> IssueServiceAccountToken(const std::string& ns,
                                               const std::string& serviceAccount,
                                               const std::string& podName = "",
                                               int expirationSeconds = 3600);

  // Fault injection, for API requests (not for the direct accessors above). Thread-safe.
  void SetLatencyMs(int latencyMs);
  void ThrottleNextRequests(int count, int retryAfterSeconds = 1);  // 429 + Retry-After
  void FailNextRequests(int count, int httpCode = 500);
  void SetFailureFraction(double fraction, int httpCode = 500);  // random, seeded
  void DropWatches();         // closes every open watch stream now
  void ExpireWatchHistory();  // a watch from any older resourceVersion gets a 410 ERROR event
  // A frozen API server holds every new API request without answering until it thaws, then
  // answers each held one 504 Timeout without serving it (a write held is never stored): an
  // apiserver whose storage stalls. Watch streams already open keep streaming.
  void SetFrozen(bool frozen);
  // Held watches: every open and new watch stream sends nothing (not even bookmarks) until
  // released, then everything in order, as a client sees a watch whose connection stalls.
  // Requests are served as usual.
  void HoldWatches(bool held);
  // A paused scheduler binds nothing (pods stay Pending without a PodScheduled condition)
  // until resumed, as when kube-scheduler is slow or restarting.
  void PauseScheduler(bool paused);

  // Every authenticated API request, in order. Thread-safe.
  std::vector<RequestRecord> Requests() const;
  // Called for every create/update/patch after authorization and before storage; a non-OK
  // Status is answered as 403 Forbidden with its message (like a denying admission webhook).
  using AdmissionHook = std::function<Status(const RequestRecord& who, const Json& object)>;
  void SetAdmissionHook(AdmissionHook hook);
  // Scale mode outcome per pod (default: exit 0, no message). Called with kube-sim's lock held:
  // it must not call back into KubeSim; return the objects to write in PodOutcome::objects.
  void SetScaleModeAction(std::function<PodOutcome(const Json& pod)> action);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace perfgate::kubesim
