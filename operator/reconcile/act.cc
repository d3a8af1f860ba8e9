#include "operator/reconcile/act.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <thread>

#include "common/time.h"
#include "core/json_fields.h"
#include "core/names.h"
#include "operator/policy/disruption.h"
#include "operator/policy/node_actions.h"
#include "operator/policy/watch_nodes.h"
#include "operator/runtime/cache_strip.h"
#include "operator/runtime/log.h"

namespace perfgate::op {
namespace {

// Runs fn(0..n-1) on up to 8 threads; the first error wins (the rest still run: each call is
// idempotent and the next reconcile retries).
Status ForEachConcurrently(size_t n, const std::function<Status(size_t)>& fn) {
  constexpr size_t kThreads = 8;
  if (n <= 1) return n == 1 ? fn(0) : Status::Ok();
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first;
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) {
      Status st = fn(i);
      std::lock_guard<std::mutex> lock(mu);
      if (!st.ok() && first.ok()) first = st;
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < std::min(n, kThreads); ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  return first;
}

// A loopback port nobody listens on right now (bound to port 0, then released): the
// rendezvous port of a gang whose pods are all local processes (kube-sim).
int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 29500;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

bool Ignorable(const Status& st, Code code) { return st.ok() || st.code() == code; }

}  // namespace

Actor::Actor(std::shared_ptr<kube::Client> client, const ReconcilerConfig& config,
             ReconcileMetrics& metrics, std::shared_ptr<perfgate::Clock> clock)
    : client_(std::move(client)),
      device_taints_(client_),
      config_(config),
      metrics_(metrics),
      clock_(std::move(clock)) {}

Status Actor::Delete(const kube::GroupVersionResource& gvr, const std::string& name) {
  auto st = client_->Delete(gvr, config_.name_space, name);
  return st.ok() || st.status().code() == Code::kNotFound ? Status::Ok() : st.status();
}

Result<Json> Actor::SetFinalizers(const Snapshot& s, const Json& obj, const Json& finalizers) {
  return client_->Patch(
      ValidationsResource(), "", s.name, kube::PatchType::kMerge,
      {{"metadata",
        {{"finalizers", finalizers},
         {"resourceVersion", Str(obj, "/metadata/resourceVersion"_json_pointer)}}}});
}

Status Actor::DeleteDropped(const Snapshot& s, const Decision& d) {
  // Let go first, as read (deleting a pod changes it), then deleted.
  for (const auto& r : d.release_pods) {
    auto patched = client_->Patch(
        kube::PodsResource(), config_.name_space, r.name, kube::PatchType::kMerge,
        {{"metadata", {{"finalizers", r.finalizers}, {"resourceVersion", r.resource_version}}}});
    // Changed since it was read: the change brings another reconcile, unless this one removes
    // the validation's finalizer (nothing would look again), which must then be retried.
    if (patched.status().code() == Code::kAborted && !d.remove_finalizer) continue;
    if (!Ignorable(patched.status(), Code::kNotFound)) return patched.status();
  }
  for (const auto& pod : d.delete_pods) RETURN_IF_ERROR(Delete(kube::PodsResource(), pod));
  for (const auto& r : d.delete_results) RETURN_IF_ERROR(Delete(ResultsResource(), r));
  if (d.delete_plan.empty()) return Status::Ok();
  Status st = Delete(ConfigMapsResource(), d.delete_plan);
  // Refused (an older chart's Role grants no delete): the plan goes with its validation
  // anyway, and a new run must not wait on a clean-up.
  if (st.code() == Code::kPermissionDenied) {
    Logger()->warn("{}: previous plan {} left for garbage collection: {}", s.name, d.delete_plan,
                   st.message());
    return Status::Ok();
  }
  return st;
}

Status Actor::WriteObjects(const Decision& d) {
  if (d.plan_config_map) {
    const std::string cm = Name(*d.plan_config_map);
    std::lock_guard<std::mutex> lock(mu_);
    if (!config_maps_written_.contains(cm)) {
      auto created = client_->Create(ConfigMapsResource(), config_.name_space, *d.plan_config_map);
      if (!Ignorable(created.status(), Code::kAlreadyExists)) return created.status();
      config_maps_written_.insert(cm);
    }
  }
  for (const auto& w : d.results) {
    // Written already; the cache is behind.
    const std::string key = "perfresults/" + Name(w.result);
    if (expectations_.Pending(key, Expectations::Clock::now())) continue;
    auto created = client_->Create(ResultsResource(), config_.name_space, w.result);
    if (!Ignorable(created.status(), Code::kAlreadyExists)) return created.status();
    expectations_.Created(key, Expectations::Clock::now());
    metrics_.results_written_by_operator++;
  }
  // Every result first, then the pods they end.
  for (const auto& w : d.results) {
    if (!w.delete_pod_after.empty())
      RETURN_IF_ERROR(Delete(kube::PodsResource(), w.delete_pod_after));
  }
  for (const auto& pod : d.delete_pods_after_results) (void)Delete(kube::PodsResource(), pod);
  for (const auto& svc : d.services) {
    auto created = client_->Create(ServicesResource(), config_.name_space, svc);
    if (!Ignorable(created.status(), Code::kAlreadyExists)) return created.status();
  }
  return Status::Ok();
}

Status Actor::EditNodesUnderTest(const Snapshot& s, const Decision& d) {
  // Nodes whose test is over given back first (so the nodes under test never outnumber
  // maxUnavailable, even for a moment), then nodes made free for their test: labelled and
  // cordoned before anything else, so no new GPU pod lands while the old ones go.
  RETURN_IF_ERROR(ForEachConcurrently(d.restore_nodes.size(), [&](size_t i) -> Status {
    const NodeRestore& r = d.restore_nodes[i];
    auto it = s.nodes.find(r.node);
    return EditNode(r.node, it == s.nodes.end() ? nullptr : &it->second,
                    [&](Json* node_obj) { return GiveBack(node_obj, s.name, r.keep_cordon); });
  }));
  const std::string now = FormatRfc3339(clock_->WallNow());
  return ForEachConcurrently(d.disrupt_nodes.size(), [&](size_t i) -> Status {
    const NodeDisruption& n = d.disrupt_nodes[i];
    auto it = s.nodes.find(n.node);
    return EditNode(n.node, it == s.nodes.end() ? nullptr : &it->second,
                    [&](Json* node_obj) { return MarkUnderTest(node_obj, s.name, n.cordon, now); });
  });
}

Status Actor::MarkNodes(const Snapshot& s, const Decision& d) {
  RETURN_IF_ERROR(ForEachConcurrently(d.node_verdicts.size(), [&](size_t i) -> Status {
    const NodeVerdict& v = d.node_verdicts[i];
    auto it = s.nodes.find(v.node);
    return MarkNode(v, s.name, s.run, v.quarantine ? d.on_failure : "none", d.device_taint,
                    it == s.nodes.end() ? nullptr : &it->second);
  }));
  for (const auto& node : d.release_nodes) ReleaseNode(node);
  return ForEachConcurrently(d.provisioning.size(), [&](size_t i) -> Status {
    const ProvisioningAction& a = d.provisioning[i];
    // Read again: the verdict above may have just updated the node.
    return EditNode(a.node, nullptr,
                    [&](Json* node_obj) { return ApplyProvisioning(node_obj, a); });
  });
}

Result<Json> Actor::Apply(const Snapshot& s, const Decision& d) {
  for (const auto& p : s.pods) expectations_.Observed("pods/" + p.name);
  for (const auto& r : s.results) expectations_.Observed("perfresults/" + Name(r));
  Json obj = s.validation;
  const Json finalizers = obj["metadata"].value("finalizers", Json::array());
  if (d.add_finalizer) {
    Json with = finalizers;
    with.push_back(kFinalizer);
    ASSIGN_OR_RETURN(obj, SetFinalizers(s, obj, with));
  }
  RETURN_IF_ERROR(DeleteDropped(s, d));
  SendEvents(s, d, /*after_status=*/false);
  RETURN_IF_ERROR(WriteObjects(d));
  RETURN_IF_ERROR(EditNodesUnderTest(s, d));
  Evict(s.name, d.evictions);
  ASSIGN_OR_RETURN(std::set<std::string> unclaimed, MakeClaims(s.name, d.claims));
  if (unclaimed.empty()) {
    RETURN_IF_ERROR(CreatePods(d.pods));
  } else {
    RETURN_IF_ERROR(CreatePods(PodsOnClaimedNodes(d.pods, unclaimed)));
  }
  RETURN_IF_ERROR(MarkNodes(s, d));
  ReleaseClaims(s.name, d.release_claims);
  if (d.remove_finalizer) {
    Json kept = Json::array();
    for (const auto& f : finalizers) {
      if (f != kFinalizer) kept.push_back(f);
    }
    auto patched = SetFinalizers(s, obj, kept);
    if (!Ignorable(patched.status(), Code::kNotFound)) return patched.status();
    Logger()->info("{}: finalized", s.name);
  }
  return obj;
}

Status Actor::CreatePods(const std::vector<PodCreate>& pods) {
  // A gang whose address is still to be chosen meets at one free port, the same for every rank.
  std::map<std::string, std::string> addresses;
  std::vector<Json> ready;
  for (const auto& p : pods) {
    // Created already; the cache is behind: no second POST.
    if (expectations_.Pending("pods/" + Name(p.pod), Expectations::Clock::now())) continue;
    Json pod = p.pod;
    if (!p.rendezvous_gang.empty()) {
      auto [it, fresh] = addresses.emplace(p.rendezvous_gang, "");
      if (fresh) {
        it->second = config_.gang_rendezvous_host + ":" + std::to_string(FreeLoopbackPort());
      }
      for (auto& e : pod["spec"]["containers"][0]["env"]) {
        if (e.value("name", "") == "NCCL_COMM_ID") e["value"] = it->second;
      }
    }
    ready.push_back(std::move(pod));
  }
  // Concurrently (a few at a time): one at a time, 1,000 nodes wait ~1,000 round trips.
  return ForEachConcurrently(ready.size(), [&](size_t i) -> Status {
    auto created = client_->Create(kube::PodsResource(), config_.name_space, ready[i]);
    if (!Ignorable(created.status(), Code::kAlreadyExists)) {
      metrics_.errors++;
      return created.status();
    }
    expectations_.Created("pods/" + Name(ready[i]), Expectations::Clock::now());
    if (created.ok()) metrics_.pods_created++;
    return Status::Ok();
  });
}

Status Actor::MarkNode(const NodeVerdict& v, const std::string& validation, const std::string& run,
                       const std::string& on_failure, const std::string& device_taint,
                       const Json* cached) {
  std::string node_failure = on_failure;
  std::string devices;  // the annotation's value: "" when no device is named
  const bool taints = on_failure == "taint" || on_failure == "taintAndCordon";
  std::optional<DeviceQuarantine> known;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& runs = device_quarantines_[validation];
    // Only this run's are kept.
    for (auto it = runs.begin(); it != runs.end();) {
      it = it->first.rfind(run + "/", 0) == 0 ? std::next(it) : runs.erase(it);
    }
    if (auto it = runs.find(run + "/" + v.node); it != runs.end()) known = it->second;
  }
  if (known) {
    devices = known->devices;
    if (!devices.empty()) node_failure = "none";
  } else if (v.verdict == verdict::Verdict::kFail && taints && !device_taint.empty() &&
             !v.failing_gpus.empty()) {
    auto found = device_taints_.Find(v.node, v.failing_gpus);
    if (!found.ok()) {
      // No way to taint the devices (e.g. RBAC): the node is quarantined as without DRA.
      Logger()->warn("{}: node {}: DRA devices not readable, tainting the node: {}", validation,
                     v.node, found.status().ToString());
    } else if (found->has_value()) {
      if (device_taint != "None") {
        RETURN_IF_ERROR(device_taints_.Taint(validation, v.node, **found, device_taint));
      }
      devices = DescribeDevices(**found);
      node_failure = "none";
      Logger()->info("{}: node {}: {} devices {} ({})", validation, v.node,
                     device_taint == "None" ? "would taint" : "tainted", devices, device_taint);
    } else {
      Logger()->info(
          "{}: node {}: its failing GPUs are not all published as DRA devices: "
          "tainting the node",
          validation, v.node);
    }
    if (found.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      device_quarantines_[validation][run + "/" + v.node] = {devices, device_taint == "None"};
    }
  }
  const bool had_devices = cached == nullptr || cached->value("metadata", Json::object())
                                                    .value("annotations", Json::object())
                                                    .contains(kTaintedDevicesAnnotation);
  if (v.verdict == verdict::Verdict::kPass && had_devices) {
    RETURN_IF_ERROR(device_taints_.Untaint(v.node));
  }
  return EditNode(v.node, cached, [&](Json* n) {
    const bool marked = op::MarkNode(n, v.verdict, validation, node_failure, v.repeated_failure);
    const bool acted = SetAction(n, v.action, v.action_evidence);
    const bool named =
        SetTaintedDevices(n, v.verdict, devices, known ? known->rehearsal : device_taint == "None");
    return marked || acted || named;
  });
}

Status Actor::EditNode(const std::string& node, const Json* cached,
                       const std::function<bool(Json*)>& edit) {
  const Json::json_pointer rv("/metadata/resourceVersion");
  for (int attempt = 0; attempt < 5; ++attempt) {
    Json n;
    std::set<std::string> behind;  // the versions our earlier writes replaced
    if (attempt == 0 && cached != nullptr) {
      n = *cached;
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = written_nodes_.find(node); it != written_nodes_.end()) {
        if (it->second.behind.contains(Str(*cached, rv))) {
          n = it->second.node;
          behind = it->second.behind;
        } else {
          written_nodes_.erase(it);
        }
      }
    } else {
      auto got = client_->Get(kube::NodesResource(), "", node);
      if (!got.ok()) {
        return got.status().code() == Code::kNotFound ? Status::Ok() : got.status();
      }
      n = *got;
    }
    if (!edit(&n)) return Status::Ok();
    behind.insert(Str(n, rv));
    auto updated = client_->Update(kube::NodesResource(), "", n);
    if (updated.ok()) {
      Json written = *updated;
      StripNode(written);
      std::lock_guard<std::mutex> lock(mu_);
      written_nodes_[node] = {std::move(behind), std::move(written)};
      return Status::Ok();
    }
    if (updated.status().code() == Code::kNotFound) return Status::Ok();
    if (updated.status().code() != Code::kAborted) return updated.status();
  }
  return Status(Code::kAborted, "node " + node + ": too many update conflicts");
}

void Actor::Evict(const std::string& validation, const std::vector<PodEviction>& evictions) {
  const auto now = clock_->WallNow();
  std::map<std::string, Refusal> before;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = eviction_refused_.find(validation); it != eviction_refused_.end()) {
      before = it->second;
    }
  }
  std::map<std::string, Refusal> refused;
  for (const auto& e : evictions) {
    const std::string key = e.name_space + "/" + e.name;
    // Refused less than kEvictionRetry ago: not asked again yet, whatever woke this reconcile.
    if (auto b = before.find(key);
        b != before.end() && now >= b->second.at && now - b->second.at < kEvictionRetry) {
      refused[key] = b->second;
      continue;
    }
    auto r = client_->Evict(e.name_space, e.name);
    if (r.ok() || r.status().code() == Code::kNotFound) {
      Logger()->info("{}: evicted pod {}/{}", validation, e.name_space, e.name);
      continue;
    }
    // A PodDisruptionBudget's 429 (or anything else): asked again at the next look; the pod is
    // never deleted behind the budget's back.
    std::string msg = r.status().message();
    if (auto colon = msg.find(": 429 TooManyRequests: "); colon != std::string::npos) {
      msg = msg.substr(colon + 23);
    }
    Logger()->info("{}: eviction of pod {}/{} refused: {}", validation, e.name_space, e.name, msg);
    refused[key] = {msg, now};
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (refused.empty()) {
    eviction_refused_.erase(validation);
  } else {
    eviction_refused_[validation] = std::move(refused);
  }
}

void Actor::NameTaintedDevices(const std::string& validation, const std::string& run,
                               Json* status) {
  std::lock_guard<std::mutex> lock(mu_);
  auto runs = device_quarantines_.find(validation);
  if (runs == device_quarantines_.end() || !status->contains("failingNodes")) return;
  for (Json& f : (*status)["failingNodes"]) {
    auto it = runs->second.find(run + "/" + f.value("node", ""));
    if (it == runs->second.end() || it->second.devices.empty()) continue;
    f[it->second.rehearsal ? "deviceTaintRehearsal" : "taintedDevices"] = it->second.devices;
  }
}

std::map<std::string, std::string> Actor::EvictionsRefused(const std::string& validation) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::string> out;
  if (auto it = eviction_refused_.find(validation); it != eviction_refused_.end()) {
    for (const auto& [pod, r] : it->second) out[pod] = r.message;
  }
  return out;
}

void Actor::ReleaseNode(const std::string& node) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto got = client_->Get(kube::NodesResource(), "", node);
    if (!got.ok()) return;
    Json n = *got;
    op::ReleaseNode(&n);
    auto updated = client_->Update(kube::NodesResource(), "", n);
    if (updated.ok() || updated.status().code() != Code::kAborted) return;
  }
}

bool Actor::Record(const Snapshot& s, const Decision& d) {
  return recorder_ != nullptr && recorder_->Record(s, d);
}

Status Actor::Report(const Json& validation, const Json& status) {
  if (validation.value("status", Json::object()) == status) return Status::Ok();
  Json updated = validation;
  updated["status"] = status;
  auto r = client_->UpdateStatus(ValidationsResource(), "", updated);
  return r.ok() ? Status::Ok() : r.status();
}

void Actor::SendEvents(const Snapshot& s, const Decision& d, bool after_status) {
  for (const auto& e : d.events) {
    if (e.after_status != after_status) continue;
    if (!e.once_key.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!sent_once_.insert(e.once_key).second) continue;
    }
    if (e.reason == "Started") Logger()->info("{}: {}", s.name, e.message);
    if (e.reason == "Completed") {
      Logger()->info("{}: run {} complete: {}", s.name, s.run, e.message);
    }
    const std::string now = FormatRfc3339(clock_->WallNow());
    Json ev = {{"apiVersion", "v1"},
               {"kind", "Event"},
               {"metadata",
                {{"name", s.name + "." +
                              HashHex(now + e.reason + e.message + std::to_string(++event_seq_))},
                 {"namespace", config_.event_namespace}}},
               {"involvedObject",
                {{"apiVersion", "perfgate.io/v1alpha1"},
                 {"kind", "PerfValidation"},
                 {"name", s.name},
                 {"uid", s.uid}}},
               {"type", e.type},
               {"reason", e.reason},
               {"message", Cut(e.message, 1024)},
               {"source", {{"component", "perfgate-operator"}}},
               {"reportingComponent", "perfgate-operator"},
               {"firstTimestamp", now},
               {"lastTimestamp", now},
               {"count", 1}};
    auto created = client_->Create(kube::EventsResource(), config_.event_namespace, ev);
    if (!created.ok()) {
      Logger()->warn("{}: event {}: {}", s.name, e.reason, created.status().message());
    }
  }
}

}  // namespace perfgate::op
