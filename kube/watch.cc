#include "kube/watch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/strings.h"
#include "kube/log.h"

namespace perfgate::kube {
namespace {

std::string Excerpt(std::string_view s) {
  if (s.size() <= 120) return std::string(s);
  return std::string(s.substr(0, 120)) + "...";
}

std::string ResourceVersionOf(const Json& object) {
  if (!object.is_object()) return "";
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  return meta->value("resourceVersion", "");
}

}  // namespace

Result<WatchEvent> ParseWatchEvent(std::string_view line) {
  Json j = Json::parse(line.begin(), line.end(), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return DataLoss(fmt::format("watch stream: not a JSON event: {}", Excerpt(line)));
  }
  auto type = j.find("type");
  auto object = j.find("object");
  if (type == j.end() || !type->is_string() || object == j.end() || !object->is_object()) {
    return DataLoss(fmt::format("watch stream: event without type/object: {}", Excerpt(line)));
  }
  WatchEvent event;
  const auto& t = type->get_ref<const std::string&>();
  if (t == "ADDED") {
    event.type = WatchEventType::kAdded;
  } else if (t == "MODIFIED") {
    event.type = WatchEventType::kModified;
  } else if (t == "DELETED") {
    event.type = WatchEventType::kDeleted;
  } else if (t == "BOOKMARK") {
    event.type = WatchEventType::kBookmark;
  } else if (t == "ERROR") {
    event.type = WatchEventType::kError;
  } else {
    return DataLoss(fmt::format("watch stream: unknown event type \"{}\"", t));
  }
  event.object = std::move(*object);
  return event;
}

Status WatchDecoder::DecodeLine(std::string_view line, const WatchEventCallback& sink) {
  line = Trim(line);
  if (line.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(WatchEvent event, ParseWatchEvent(line));
  return sink(std::move(event));
}

Status WatchDecoder::Feed(std::string_view chunk, const WatchEventCallback& sink) {
  size_t start = 0;
  if (!pending_.empty()) {
    const void* nl = std::memchr(chunk.data(), '\n', chunk.size());
    if (nl == nullptr) {
      pending_.append(chunk);
      return Status::Ok();
    }
    auto end = static_cast<size_t>(static_cast<const char*>(nl) - chunk.data());
    pending_.append(chunk.substr(0, end));
    // clear() keeps the buffer's capacity for the next split event.
    Status s = DecodeLine(pending_, sink);
    pending_.clear();
    RETURN_IF_ERROR(s);
    start = end + 1;
  }
  // Whole events inside the chunk are decoded in place, without copying.
  while (start < chunk.size()) {
    const void* nl = std::memchr(chunk.data() + start, '\n', chunk.size() - start);
    if (nl == nullptr) break;
    auto end = static_cast<size_t>(static_cast<const char*>(nl) - chunk.data());
    RETURN_IF_ERROR(DecodeLine(chunk.substr(start, end - start), sink));
    start = end + 1;
  }
  if (start < chunk.size()) pending_.append(chunk.substr(start));
  return Status::Ok();
}

Status WatchDecoder::Finish(const WatchEventCallback& sink) {
  Status s = DecodeLine(pending_, sink);
  pending_.clear();
  return s;
}

Backoff::Backoff(Options options, uint64_t seed) : options_(options), rng_(seed) {}

std::chrono::milliseconds Backoff::Next() {
  if (current_.count() == 0) {
    current_ = options_.initial;
  } else {
    auto grown = std::chrono::milliseconds(
        static_cast<int64_t>(static_cast<double>(current_.count()) * options_.factor));
    current_ = std::min(grown, options_.max);
  }
  double jitter = std::uniform_real_distribution<double>(0.0, options_.jitter)(rng_);
  auto delay = std::chrono::milliseconds(
      static_cast<int64_t>(static_cast<double>(current_.count()) * (1.0 + jitter)));
  // The cap holds after jitter too: 30 s means at most 30 s.
  return std::min(delay, options_.max);
}

void Backoff::Reset() { current_ = std::chrono::milliseconds(0); }

Reflector::Reflector(std::shared_ptr<Client> client, ReflectorOptions options, ReflectorSink* sink,
                     std::shared_ptr<Clock> clock)
    : client_(std::move(client)),
      options_(std::move(options)),
      sink_(sink),
      clock_(clock ? std::move(clock) : RealClock()),
      rng_(options_.seed) {}

std::string Reflector::LastResourceVersion() const {
  std::lock_guard lock(mu_);
  return resource_version_;
}

void Reflector::SetResourceVersion(const std::string& rv) {
  if (rv.empty()) return;
  std::lock_guard lock(mu_);
  resource_version_ = rv;
}

Status Reflector::ListOnce(const Cancellation& stop) {
  ListOptions o;
  o.labelSelector = options_.labelSelector;
  o.fieldSelector = options_.fieldSelector;
  o.limit = options_.pageSize;
  std::string last = LastResourceVersion();
  if (!last.empty()) {
    // Never go back in time after a reconnect: ask for a state at least as new
    // as what we saw.
    o.resourceVersion = last;
    o.resourceVersionMatch = "NotOlderThan";
  }
  ++lists_;
  auto list = client_->ListAll(options_.gvr, options_.ns, o);
  if (!list.ok() && list.status().code() == Code::kGone && !last.empty()) {
    // Our resourceVersion is compacted away: a consistent read from etcd is
    // always possible.
    Logger()->info("list {}: resourceVersion {} expired; listing the latest",
                   ResourcePath(options_.gvr, options_.ns), last);
    {
      std::lock_guard lock(mu_);
      resource_version_.clear();
    }
    if (stop.cancelled()) return Cancelled("stopped");
    o.resourceVersion.clear();
    o.resourceVersionMatch.clear();
    ++lists_;
    list = client_->ListAll(options_.gvr, options_.ns, o);
  }
  if (!list.ok()) return list.status();
  std::string rv = ResourceVersionOf(*list);
  std::vector<Json> items;
  if (list->contains("items") && (*list)["items"].is_array()) {
    items.reserve((*list)["items"].size());
    for (auto& item : (*list)["items"]) items.push_back(std::move(item));
  }
  SetResourceVersion(rv);
  sink_->Replace(std::move(items), rv);
  return Status::Ok();
}

Status Reflector::WatchOnce(const Cancellation& stop, int& events) {
  events = 0;
  ListOptions o;
  o.labelSelector = options_.labelSelector;
  o.fieldSelector = options_.fieldSelector;
  o.resourceVersion = LastResourceVersion();
  o.allowWatchBookmarks = true;
  o.idleTimeoutSeconds = options_.watchIdleTimeout;
  // Randomised so that many clients' watches do not all end (and relist) at the
  // same moment.
  double factor = std::uniform_real_distribution<double>(1.0, 2.0)(rng_);
  o.timeoutSeconds = std::max<int64_t>(
      1, static_cast<int64_t>(static_cast<double>(options_.minWatchTimeout.count()) * factor));
  ++watches_;
  return client_->Watch(
      options_.gvr, options_.ns, o,
      [&](WatchEvent&& event) -> Status {
        ++events;
        switch (event.type) {
          case WatchEventType::kError:
            return StatusFromWatchError(event.object);
          case WatchEventType::kBookmark:
            SetResourceVersion(ResourceVersionOf(event.object));
            return Status::Ok();
          default: {
            std::string rv = ResourceVersionOf(event.object);
            sink_->Apply(event.type, std::move(event.object));
            SetResourceVersion(rv);
            return Status::Ok();
          }
        }
      },
      &stop);
}

void Reflector::Run(const Cancellation& stop) {
  Backoff backoff(options_.backoff, options_.seed ^ 0x9e3779b97f4a7c15ULL);
  const std::string what = ResourcePath(options_.gvr, options_.ns);
  bool need_list = true;
  while (!stop.cancelled()) {
    if (need_list) {
      Status s = ListOnce(stop);
      if (stop.cancelled()) break;
      if (!s.ok()) {
        auto delay = backoff.Next();
        Logger()->warn("list {} failed: {}; retrying in {} ms", what, s.ToString(), delay.count());
        clock_->SleepFor(delay, &stop);
        continue;
      }
      need_list = false;
    }
    auto started = clock_->Now();
    int events = 0;
    Status s = WatchOnce(stop, events);
    if (stop.cancelled()) break;
    bool healthy = clock_->Now() - started >= options_.healthyWatch;
    if (healthy) backoff.Reset();
    if (s.code() == Code::kGone) {
      // The server no longer has history from our resourceVersion: relist from
      // the latest state; the store's Replace delivers the deletes we missed.
      Logger()->info("watch {}: {}; relisting", what, s.message());
      {
        std::lock_guard lock(mu_);
        resource_version_.clear();
      }
      need_list = true;
      continue;
    }
    if (s.code() == Code::kDataLoss) {
      // A corrupt stream may have lost an event: rebuild the store from a list
      // no older than what we saw (a 410 there falls back to the latest state).
      Logger()->warn("watch {}: {}; relisting", what, s.message());
      need_list = true;
      continue;
    }
    if (s.ok() && (events > 0 || healthy)) continue;  // a watch timeout: reconnect at once
    if (s.ok()) s = Unavailable("watch closed at once without events");
    auto delay = backoff.Next();
    Logger()->info("watch {} ended: {}; reconnecting in {} ms", what, s.ToString(), delay.count());
    clock_->SleepFor(delay, &stop);
  }
}

}  // namespace perfgate::kube
