// An informer: a reflector feeding a local store, with add/update/delete
// handlers and periodic resync, like client-go's SharedIndexInformer (one
// consumer). Reads are served from the store.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "kube/client.h"
#include "kube/watch.h"

namespace perfgate::kube {

// Called on the informer's handler thread, one at a time. They must not throw and should be
// quick (enqueue a key and return): a slow handler delays every later event. Any may be null.
struct InformerHandlers {
  std::function<void(const Json& object)> onAdd;
  // On a change, and for every cached object at each resync (then old == current).
  std::function<void(const Json& old_object, const Json& object)> onUpdate;
  // The last known state (for an object gone while disconnected: the cached one).
  std::function<void(const Json& object)> onDelete;
};

struct InformerOptions {
  ReflectorOptions reflector;
  // Every resyncPeriod, onUpdate(obj, obj) for every cached object. 0 = never.
  std::chrono::seconds resyncPeriod{0};
  // Applied to every object before it is stored and handed to handlers (on the reflector's
  // thread): drop what the reconciler never reads to save memory. Null = none.
  std::function<void(Json& object)> transform;
};

// A transform that removes metadata.managedFields (often the largest part of an object).
void StripManagedFields(Json& object);

class Informer {
 public:
  Informer(std::shared_ptr<Client> client, InformerOptions options,
           std::shared_ptr<Clock> clock = nullptr);
  ~Informer();  // Stops.
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Registers handlers. Call before Start. Not thread-safe.
  void AddHandlers(InformerHandlers handlers);
  // Starts the reflector thread and the handler thread. Non-blocking. Call
  // once.
  void Start();
  // Stops both threads and waits for them. Blocking; idempotent. No handler
  // runs after it.
  void Stop();

  // True once the first full list is in the store and its add events have been
  // delivered. Thread-safe, non-blocking.
  bool HasSynced() const;
  // Blocks until synced, stopped, or `timeout` (real time) passes; returns
  // HasSynced().
  bool WaitForSync(std::chrono::milliseconds timeout) const;

  // Store reads: thread-safe, non-blocking, copies. Keys as ObjectKey().
  std::optional<Json> Get(const std::string& key) const;
  std::vector<Json> List() const;
  std::vector<std::string> Keys() const;
  size_t Size() const;
  // The reflector's last resourceVersion. Thread-safe.
  std::string LastResourceVersion() const;
  const Reflector& reflector() const { return *reflector_; }

 private:
  class Sink;
  // What the reflector thread hands the handler thread.
  struct Delta {
    enum class Kind { kReplace, kApply };
    Kind kind = Kind::kApply;
    WatchEventType type = WatchEventType::kAdded;
    Json object;              // kApply
    std::vector<Json> items;  // kReplace
  };
  void Enqueue(Delta delta);
  void DispatchLoop();
  void Process(Delta& delta);

  std::shared_ptr<Client> client_;
  InformerOptions options_;
  std::shared_ptr<Clock> clock_;
  std::vector<InformerHandlers> handlers_;
  std::unique_ptr<Sink> sink_;
  std::unique_ptr<Reflector> reflector_;
  Cancellation stop_;

  mutable std::mutex store_mu_;
  mutable std::condition_variable synced_cv_;
  std::map<std::string, Json> store_;
  bool synced_ = false;
  bool stopped_ = false;

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<Delta> deltas_;

  std::thread reflector_thread_;
  std::thread dispatch_thread_;
  std::atomic<bool> started_{false};
};

}  // namespace perfgate::kube
