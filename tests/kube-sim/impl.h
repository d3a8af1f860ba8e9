// KubeSim::Impl: the state shared by the API handlers (kube_sim.cc) and the controllers
// (controllers.cc: scheduler, kubelet, garbage collector, namespace deletion). Not an API.
#pragma once

#include "tests/kube-sim/internal.h"

namespace perfgate::kubesim {

struct DeleteOptions {
  std::string propagationPolicy;  // Background (default), Foreground, Orphan
  std::optional<long> gracePeriodSeconds;
  std::string preconditionUid;
  std::string preconditionResourceVersion;
  bool dryRun = false;
};

struct KubeSim::Impl {
  Options opts;
  Pki pki;
  std::string adminToken;
  std::string signingKey;
  std::string issuer = "https://kubernetes.default.svc.cluster.local";
  std::string kubeconfigPath;
  std::string workDir;
  bool ownsWorkDir = false;
  HttpsServer server;
  bool started = false;

  // The store's lock: API reads (get, list, a watch's initial list and its events, discovery)
  // share it; writes, the controllers and the direct accessors that change state hold it alone.
  mutable std::shared_mutex mu;
  mutable std::condition_variable_any cv;  // watchers: new events, drops, stop
  std::condition_variable_any controlCv;   // controllers: something changed
  uint64_t rv = 1;
  uint64_t historyFloor = 0;  // a watch from a resourceVersion below this is expired
  std::deque<WatchEvent> history;
  uint64_t watchEpoch = 0;
  std::atomic<bool> stopping = false;  // set under mu; read by the thaw wait under faultMu
  bool dirty = true;
  bool gcDirty = true;     // a delete, finalizer or owner reference needs the garbage collector
  bool nodesDirty = true;  // a node changed: the node lifecycle controller looks at its taints
  std::map<std::string, ResourceType> types;                   // group/plural -> type
  std::map<std::string, std::map<std::string, Json>> objects;  // group/plural -> ns/name -> obj

  // Faults, under faultMu (taken after mu, never the other way round), so that a request
  // holding mu shared can take its fault.
  std::mutex faultMu;
  int latencyMs = 0;
  int throttleNext = 0;
  int retryAfterSeconds = 1;
  int failNext = 0;
  int failCode = 500;
  double failureFraction = 0;
  int failureFractionCode = 500;
  bool frozen = false;
  bool watchesHeld = false;        // open watches send nothing until released (events kept)
  bool schedulerPaused = false;    // pods stay Pending, with no PodScheduled condition
  std::condition_variable thawCv;  // frozen became false, or stopping (with faultMu)
  std::mt19937 faultRng{42};       // failureFraction's draws
  std::mt19937 rng{42};            // generated names (under mu)

  // The request log, under recordMu (taken after mu and faultMu): requests that share mu
  // record concurrently.
  mutable std::mutex recordMu;
  std::vector<RequestRecord> requests;
  std::ofstream auditLog;  // Options::auditLogPath
  AdmissionHook admission;
  std::function<PodOutcome(const Json&)> scaleAction;

  // Kubelet.
  std::map<std::string, PodRun> runs;  // pod uid -> run
  // Crash-loop back-off: pod uid -> earliest restart.
  std::map<std::string, std::chrono::steady_clock::time_point> restartNotBefore;
  std::thread controller;

  // ---- store (call with mu held; the const members with mu shared or exclusive)
  const ResourceType* FindType(const std::string& group, const std::string& plural) const;
  const ResourceType* FindTypeByKind(const std::string& apiVersion, const std::string& kind) const;
  Json* FindObject(const ResourceType& t, const std::string& ns, const std::string& name);
  const Json* FindObject(const ResourceType& t, const std::string& ns,
                         const std::string& name) const;
  // The stored objects of a type (group/plural), ns/name -> object; empty when none.
  const std::map<std::string, Json>& ObjectsOf(const std::string& key) const;
  void Emit(const ResourceType& t, const std::string& type, const Json& obj, const Json& prev);
  Outcome CreateLocked(const ResourceType& t, const std::string& ns, Json obj, bool dryRun,
                       const std::string& fieldValidation, std::vector<std::string>* warnings);
  Outcome ReplaceLocked(const ResourceType& t, const std::string& ns, const std::string& name,
                        Json obj, bool statusOnly, bool dryRun, const std::string& fieldValidation,
                        std::vector<std::string>* warnings);
  Outcome DeleteLocked(const ResourceType& t, const std::string& ns, const std::string& name,
                       const DeleteOptions& options);
  void RemoveLocked(const ResourceType& t, const std::string& ns, const std::string& name);
  Outcome ValidateCustom(const ResourceType& t, Json& obj, const std::string& fieldValidation,
                         std::vector<std::string>* warnings);
  Outcome RegisterCrd(const Json& crd, bool dryRun);
  void UnregisterCrd(const Json& crd);
  std::string NewUid();
  void MarkDirty();

  // ---- auth
  std::optional<UserInfo> Authenticate(const HttpRequest& req) const;
  bool Authorize(const UserInfo& user, const std::string& verb, const std::string& group,
                 const std::string& resource, const std::string& subresource, const std::string& ns,
                 const std::string& name, const std::string& path) const;
  // OwnerReferencesPermissionEnforcement (Options): the Forbidden outcome when `user` may not
  // make the ownerReferences change from `old` (nullptr on create) to `obj`.
  std::optional<Outcome> EnforceOwnerReferencePermissions(
      const ResourceType& t, const std::string& ns, const std::string& name, const UserInfo& user,
      const Json& obj, const Json* old, std::vector<AuthorizationCheck>* checks);
  Result<std::string> IssueTokenLocked(const std::string& ns, const std::string& sa,
                                       const std::string& podName, int expirationSeconds,
                                       Json* claimsOut);

  // ---- HTTP (routes.cc: the pipeline and its route table; api.cc: what the routes share)
  void Handle(const HttpRequest& req, HttpResponder& resp);
  // Streams a watch; takes mu shared itself.
  void ServeWatch(const HttpRequest& req, HttpResponder& resp, const ResourceType& t,
                  const std::string& ns) const;
  Json Discovery(const std::string& path, bool* found) const;
  Json OpenApiV3(const std::string& gvPath, bool* found) const;
  Json BuildTable(const ResourceType& t, const std::vector<Json>& items,
                  const std::string& includeObject) const;

  // ---- controllers (controllers.cc)
  void ControllerLoop();
  void GarbageCollectLocked();
  void NodeLifecycleLocked();
  void ScheduleLocked();
  // Marks `victim` DisruptionTarget (PreemptionByScheduler) and deletes it gracefully, for
  // `preemptor` nominated to `node`.
  void PreemptLocked(Json victim, const Json& preemptor, const std::string& node);
  void KubeletLocked();
  void StartPodLocked(const ResourceType& podType, Json& pod);
  void ReapPodsLocked();
  void KillAllPods();
  void SetPodStatusLocked(const std::string& ns, const std::string& name, const Json& status);
  // The kubelet's last step for a deleted pod whose containers ended: gone, or kept with no
  // grace left while a finalizer holds it.
  void FinishPodDeletionLocked(const ResourceType& t, const std::string& ns,
                               const std::string& name);
  void RecordEventLocked(const Json& involved, const std::string& type, const std::string& reason,
                         const std::string& message);
  Status AddNodeLocked(const NodeSpec& spec);
  // ---- PodDisruptionBudgets and evictions (disruption.cc)
  Json PdbStatusLocked(const Json& pdb);
  void DisruptionControllerLocked();
  Outcome EvictLocked(const std::string& ns, const std::string& name, const Json& eviction);
};

}  // namespace perfgate::kubesim
