#include "kube/informer.h"

#include <unordered_set>
#include <utility>

#include "kube/log.h"

namespace perfgate::kube {

class Informer::Sink final : public ReflectorSink {
 public:
  explicit Sink(Informer* informer) : informer_(informer) {}
  void Replace(std::vector<Json> items, const std::string& /*resourceVersion*/) override {
    if (informer_->options_.transform) {
      for (auto& item : items) informer_->options_.transform(item);
    }
    Delta d;
    d.kind = Delta::Kind::kReplace;
    d.items = std::move(items);
    informer_->Enqueue(std::move(d));
  }
  void Apply(WatchEventType type, Json object) override {
    if (informer_->options_.transform) informer_->options_.transform(object);
    Delta d;
    d.kind = Delta::Kind::kApply;
    d.type = type;
    d.object = std::move(object);
    informer_->Enqueue(std::move(d));
  }

 private:
  Informer* informer_;
};

void StripManagedFields(Json& object) {
  auto meta = object.find("metadata");
  if (meta != object.end() && meta->is_object()) meta->erase("managedFields");
}

Informer::Informer(std::shared_ptr<Client> client, InformerOptions options,
                   std::shared_ptr<Clock> clock)
    : client_(std::move(client)),
      options_(std::move(options)),
      clock_(clock ? std::move(clock) : RealClock()),
      sink_(std::make_unique<Sink>(this)),
      reflector_(std::make_unique<Reflector>(client_, options_.reflector, sink_.get(), clock_)) {}

Informer::~Informer() { Stop(); }

void Informer::AddHandlers(InformerHandlers handlers) { handlers_.push_back(std::move(handlers)); }

void Informer::Start() {
  if (started_.exchange(true)) return;
  dispatch_thread_ = std::thread([this] { DispatchLoop(); });
  reflector_thread_ = std::thread([this] { reflector_->Run(stop_); });
}

void Informer::Stop() {
  stop_.Cancel();
  {
    std::lock_guard lock(queue_mu_);
    stopped_ = true;
  }
  queue_cv_.notify_all();
  { std::lock_guard lock(store_mu_); }  // a waiter between its check and its wait sees the stop
  synced_cv_.notify_all();
  if (reflector_thread_.joinable()) reflector_thread_.join();
  if (dispatch_thread_.joinable()) dispatch_thread_.join();
}

void Informer::Enqueue(Delta delta) {
  {
    std::lock_guard lock(queue_mu_);
    deltas_.push_back(std::move(delta));
  }
  queue_cv_.notify_one();
}

bool Informer::HasSynced() const {
  std::lock_guard lock(store_mu_);
  return synced_;
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(store_mu_);
  synced_cv_.wait_for(lock, timeout, [this] { return synced_ || stop_.cancelled(); });
  return synced_;
}

std::optional<Json> Informer::Get(const std::string& key) const {
  std::lock_guard lock(store_mu_);
  auto it = store_.find(key);
  if (it == store_.end()) return std::nullopt;
  return it->second;
}

std::vector<Json> Informer::List() const {
  std::lock_guard lock(store_mu_);
  std::vector<Json> out;
  out.reserve(store_.size());
  for (const auto& [key, object] : store_) out.push_back(object);
  return out;
}

std::vector<std::string> Informer::Keys() const {
  std::lock_guard lock(store_mu_);
  std::vector<std::string> out;
  out.reserve(store_.size());
  for (const auto& [key, object] : store_) out.push_back(key);
  return out;
}

size_t Informer::Size() const {
  std::lock_guard lock(store_mu_);
  return store_.size();
}

std::string Informer::LastResourceVersion() const { return reflector_->LastResourceVersion(); }

void Informer::Process(Delta& delta) {
  // The store changes first, then the handlers run (outside the lock), so a handler that reads
  // the store sees the state its event describes. Only this thread writes the store, so it may
  // read store_ here without the lock while other threads read it under the lock.
  if (delta.kind == Delta::Kind::kReplace) {
    std::map<std::string, Json> next;
    for (auto& item : delta.items) {
      std::string key = ObjectKey(item);
      if (key.empty()) continue;
      next[key] = std::move(item);
    }
    std::map<std::string, Json> previous;
    {
      std::lock_guard lock(store_mu_);
      previous.swap(store_);
      store_ = std::move(next);  // moved, not copied: a relist must not need twice the memory
    }
    for (const auto& [key, object] : store_) {
      auto old = previous.find(key);
      for (auto& h : handlers_) {
        if (old == previous.end()) {
          if (h.onAdd) h.onAdd(object);
        } else if (h.onUpdate) {
          h.onUpdate(old->second, object);
        }
      }
    }
    // Gone while we were not watching: deliver the last state we knew
    // (client-go's DeletedFinalStateUnknown carries the same).
    for (auto& [key, object] : previous) {
      if (store_.contains(key)) continue;
      for (auto& h : handlers_) {
        if (h.onDelete) h.onDelete(object);
      }
    }
    bool first = false;
    {
      std::lock_guard lock(store_mu_);
      first = !synced_;
      synced_ = true;
    }
    if (first) synced_cv_.notify_all();
    return;
  }

  std::string key = ObjectKey(delta.object);
  if (key.empty()) return;
  if (delta.type == WatchEventType::kDeleted) {
    std::optional<Json> old;
    {
      std::lock_guard lock(store_mu_);
      auto it = store_.find(key);
      if (it != store_.end()) {
        old = std::move(it->second);
        store_.erase(it);
      }
    }
    if (!old) return;
    for (auto& h : handlers_) {
      if (h.onDelete) h.onDelete(delta.object);
    }
    return;
  }
  std::optional<Json> old;
  const Json* stored = nullptr;
  {
    std::lock_guard lock(store_mu_);
    auto [it, inserted] = store_.try_emplace(key);
    if (!inserted) old = std::move(it->second);
    it->second = std::move(delta.object);
    stored = &it->second;
  }
  for (auto& h : handlers_) {
    if (!old) {
      if (h.onAdd) h.onAdd(*stored);
    } else if (h.onUpdate) {
      h.onUpdate(*old, *stored);
    }
  }
}

void Informer::DispatchLoop() {
  const bool resync = options_.resyncPeriod.count() > 0;
  auto next_resync = clock_->Now() + options_.resyncPeriod;
  // A fake clock does not wake us: re-read it at this pace while a resync is
  // due.
  constexpr auto kPoll = std::chrono::milliseconds(20);
  while (true) {
    std::optional<Delta> delta;
    {
      std::unique_lock lock(queue_mu_);
      if (deltas_.empty() && !stopped_) {
        if (resync) {
          auto wait = std::min<std::chrono::nanoseconds>(next_resync - clock_->Now(), kPoll);
          if (wait.count() > 0) queue_cv_.wait_for(lock, wait);
        } else {
          queue_cv_.wait(lock, [this] { return !deltas_.empty() || stopped_; });
        }
      }
      if (stopped_) return;
      if (!deltas_.empty()) {
        delta = std::move(deltas_.front());
        deltas_.pop_front();
      }
    }
    if (delta) Process(*delta);
    if (resync && clock_->Now() >= next_resync) {
      next_resync = clock_->Now() + options_.resyncPeriod;
      if (!HasSynced()) continue;
      for (const Json& object : List()) {
        for (auto& h : handlers_) {
          if (h.onUpdate) h.onUpdate(object, object);
        }
      }
    }
  }
}

}  // namespace perfgate::kube
