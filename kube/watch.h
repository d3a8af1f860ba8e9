// Watch streams: the decoder for the newline-delimited JSON events of a chunked
// watch response, and the reflector that lists then watches a resource like
// client-go's Reflector (bookmarks, randomised watch timeouts, jittered
// reconnect backoff, relist on 410).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "kube/client.h"

namespace perfgate::kube {

// Turns arbitrary pieces of a watch body into events: an event may be split
// anywhere, several may share a piece. Not thread-safe (one per stream).
class WatchDecoder {
 public:
  // Appends `chunk` and hands every completed event to `sink`, in order.
  // Errors: kDataLoss for a line that is not a watch event (names the offending
  // text); an error from `sink` is returned.
  Status Feed(std::string_view chunk, const WatchEventCallback& sink);
  // Ends the stream: a last event without its newline is still decoded.
  Status Finish(const WatchEventCallback& sink);
  // Bytes held back waiting for the rest of an event.
  size_t buffered_bytes() const { return pending_.size(); }

 private:
  static Status DecodeLine(std::string_view line, const WatchEventCallback& sink);
  std::string pending_;  // the start of an event whose newline has not arrived yet
};

// Parses one event line ({"type":"ADDED","object":{...}}).
Result<WatchEvent> ParseWatchEvent(std::string_view line);

// Jittered exponential backoff: 0.8 s doubling to 30 s by default (client-go's
// reflector), each delay jittered by up to +`jitter` of itself; Reset() after a
// healthy watch.
class Backoff {
 public:
  struct Options {
    std::chrono::milliseconds initial{800};
    std::chrono::milliseconds max{30000};
    double factor = 2.0;
    double jitter = 1.0;
  };
  explicit Backoff(Options options, uint64_t seed = std::random_device{}());
  // The next delay (grows until max). Not thread-safe.
  std::chrono::milliseconds Next();
  void Reset();

 private:
  Options options_;
  std::chrono::milliseconds current_{0};
  std::mt19937_64 rng_;
};

// What a reflector tells its consumer. Called on the reflector's thread.
class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // A full list (initial or relist): the store must become exactly `items`
  // (client-go's Replace: objects not in it were deleted while we were away).
  // `resourceVersion` is the list's.
  virtual void Replace(std::vector<Json> items, const std::string& resourceVersion) = 0;
  // A watch event (ADDED / MODIFIED / DELETED); bookmarks and errors are
  // handled inside.
  virtual void Apply(WatchEventType type, Json object) = 0;
};

struct ReflectorOptions {
  GroupVersionResource gvr;
  std::string ns;  // "" = all namespaces or cluster-scoped
  std::string labelSelector;
  std::string fieldSelector;
  int64_t pageSize = 500;  // list page size (client-go's default); 0 = unpaged
  // Each watch asks timeoutSeconds = minWatchTimeout * [1, 2) (client-go: 5
  // min).
  std::chrono::seconds minWatchTimeout{300};
  Backoff::Options backoff{};
  // A watch that lasted at least this long resets the backoff.
  std::chrono::seconds healthyWatch{120};  // client-go: 2 min
  // The transport's idle timeout per watch; 0 = the watch's timeoutSeconds + 30
  // s.
  std::chrono::seconds watchIdleTimeout{0};
  uint64_t seed = std::random_device{}();
};

class Reflector {
 public:
  Reflector(std::shared_ptr<Client> client, ReflectorOptions options, ReflectorSink* sink,
            std::shared_ptr<Clock> clock);
  // Lists then watches until `stop` is cancelled: relists on 410 (HTTP or in an
  // ERROR event), reconnects after the server ends a watch, and backs off after
  // failures. Blocking: run it on its own thread. Returns when stopped.
  void Run(const Cancellation& stop);
  // The last resourceVersion seen (list, event or bookmark). Thread-safe.
  std::string LastResourceVersion() const;

  // Counters for tests and metrics. Thread-safe.
  int lists() const { return lists_.load(); }
  int watches() const { return watches_.load(); }

 private:
  Status ListOnce(const Cancellation& stop);
  // OK: the watch ended normally (reconnect from the last resourceVersion at
  // once). Sets `events` to the number of events received.
  Status WatchOnce(const Cancellation& stop, int& events);
  void SetResourceVersion(const std::string& rv);

  std::shared_ptr<Client> client_;
  ReflectorOptions options_;
  ReflectorSink* sink_;
  std::shared_ptr<Clock> clock_;
  std::mt19937_64 rng_;
  mutable std::mutex mu_;
  std::string resource_version_;
  std::atomic<int> lists_{0};
  std::atomic<int> watches_{0};
};

}  // namespace perfgate::kube
