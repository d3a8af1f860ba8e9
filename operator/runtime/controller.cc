#include "operator/runtime/controller.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "operator/policy/watch_nodes.h"
#include "operator/runtime/log.h"

namespace perfgate::op {
namespace {

using Json = nlohmann::json;

// Equal but for metadata.resourceVersion: nothing the cache keeps has changed.
bool SameButVersion(const Json& a, const Json& b) {
  if (a == b) return true;
  auto without_version = [](Json o) {
    auto meta = o.find("metadata");
    if (meta != o.end() && meta->is_object()) meta->erase("resourceVersion");
    return o;
  };
  return without_version(a) == without_version(b);
}

}  // namespace

Controller::Controller(ReconcileFunc reconcile, ControllerOptions options)
    : reconcile_(std::move(reconcile)),
      options_(std::move(options)),
      queue_(options_.queue, options_.clock) {}

Controller::~Controller() { Stop(); }

kube::InformerHandlers Controller::EnqueueFor(const KeysOf& keys_of, bool skip_unchanged) {
  auto enqueue = [this, keys_of](const Json& object) {
    for (const auto& key : keys_of(object)) {
      if (!key.empty()) queue_.Add(key);
    }
  };
  return {enqueue,
          [enqueue, skip_unchanged](const Json& old_object, const Json& object) {
            if (skip_unchanged && SameButVersion(old_object, object)) return;
            enqueue(object);
          },
          enqueue};
}

void Controller::Enqueue(const std::string& key) { queue_.Add(key); }

void Controller::Start(std::vector<kube::Informer*> caches) {
  std::lock_guard lock(mu_);
  if (started_ || stopped_) return;
  started_ = true;
  starter_ = std::thread([this, caches = std::move(caches)] { Run(caches); });
}

void Controller::Run(const std::vector<kube::Informer*>& caches) {
  for (auto* cache : caches) cache->Start();
  for (auto* cache : caches) {
    while (!cache->WaitForSync(options_.sync_poll_interval)) {
      // A stopped informer answers at once: wait here, so that this never spins.
      if (cancel_.WaitFor(std::chrono::milliseconds(10))) return;
    }
  }
  std::lock_guard lock(mu_);
  if (stopped_) return;
  synced_ = true;
  Logger()->info("caches synced; {} workers", options_.workers);
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { Work(); });
  }
}

void Controller::Work() {
  while (auto key = queue_.Get()) {
    if (stopping_) {
      queue_.Done(*key);
      return;
    }
    ++active_;
    Handle(*key);
    queue_.Done(*key);
    --active_;
  }
}

void Controller::Handle(const std::string& key) {
  Result<ReconcileResult> r = Status(Code::kInternal, "reconcile did not run");
  try {
    r = reconcile_(key);
  } catch (const std::exception& e) {
    // A bug, not a cluster state: retried with backoff like any error rather than ending the
    // process from a worker thread.
    r = Status(Code::kInternal, std::string("reconcile threw: ") + e.what());
  } catch (...) {
    r = Status(Code::kInternal, "reconcile threw a non-standard exception");
  }
  if (!r.ok()) {
    Logger()->warn("{}: reconcile failed (retrying): {}", key, r.status().message());
    queue_.AddRateLimited(key);
    return;
  }
  queue_.Forget(key);
  if (r->requeue_after.count() > 0) queue_.AddAfter(key, r->requeue_after);
}

void Controller::Stop() {
  std::lock_guard serial(stop_mu_);  // two Stops never join one thread together
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  stopping_ = true;
  cancel_.Cancel();
  queue_.ShutDown();
  // Start cannot assign starter_ any more, and once the starter is joined nothing adds workers.
  if (starter_.joinable()) starter_.join();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
}

void EnqueueValidationsOn(Controller& controller, const ValidationInformers& informers) {
  kube::Informer* validations = informers.validations;
  informers.validations->AddHandlers(controller.EnqueueFor([](const Json& v) {
    return std::vector<std::string>{v.value("metadata", Json::object()).value("name", "")};
  }));
  for (auto* owned : {informers.pods, informers.results}) {
    owned->AddHandlers(controller.EnqueueFor(OwningValidation));
  }
  informers.nodes->AddHandlers(controller.EnqueueFor(
      [validations](const Json&) {
        std::vector<std::string> running;
        for (const auto& v : validations->List()) {
          // A completed validation with spec.watchNodes tests nodes that join or change.
          if (v.value("status", Json::object()).value("completionTime", "").empty() ||
              WatchesNodes(v)) {
            running.push_back(v["metadata"].value("name", ""));
          }
        }
        return running;
      },
      /*skip_unchanged=*/true));
}

std::vector<std::string> OwningValidation(const Json& object) {
  const Json meta = object.value("metadata", Json::object());
  for (const auto& ref : meta.value("ownerReferences", Json::array())) {
    if (ref.value("kind", "") == "PerfValidation" && !ref.value("name", "").empty()) {
      return {ref.value("name", "")};
    }
  }
  const Json labels = meta.value("labels", Json::object());
  auto it = labels.find("perfgate.io/validation");
  if (it != labels.end() && it->is_string()) return {it->get<std::string>()};
  return {};
}

}  // namespace perfgate::op
