// Typed requests to the Kubernetes API by group/version/resource, for built-in
// types and CRDs, namespaced and cluster-scoped. Objects are nlohmann::json.
//
// Errors: an HTTP error status becomes a Status whose code follows the HTTP
// status (404 kNotFound, 409 kAlreadyExists on create / kAborted otherwise
// ("Conflict"), 410 kGone, 401 kUnauthenticated, 403 kPermissionDenied, 400/422
// kInvalidArgument, 412 kFailedPrecondition, 429 kResourceExhausted, 5xx
// kUnavailable) and whose message carries the request, the HTTP status, the
// Status body's reason and message, in this fixed form:
//   "PUT /apis/perfgate.io/v1alpha1/perfvalidations/x/status: 409 Conflict: the
//   object has been
//    modified; please apply your changes to the latest version and try again"
// Requests are rate limited (config.qps/burst) and 429/5xx are retried
// honouring Retry-After.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "kube/config.h"
#include "kube/ratelimit.h"
#include "kube/transport.h"

namespace perfgate::kube {

using Json = nlohmann::json;

struct GroupVersionResource {
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  std::string resource;  // plural, lower case: "pods", "perfvalidations"
};

// Well-known resources.
GroupVersionResource PodsResource();
GroupVersionResource NodesResource();
GroupVersionResource EventsResource();
GroupVersionResource LeasesResource();

// The path of a collection or object:
// "/api/v1/namespaces/ns/pods[/name[/subresource]]" or
// "/apis/g/v/resource[/name[/subresource]]" when `ns` is empty (cluster-scoped
// or all namespaces). Names are percent-encoded.
std::string ResourcePath(const GroupVersionResource& gvr, const std::string& ns,
                         const std::string& name = "", const std::string& subresource = "");

struct ListOptions {
  std::string labelSelector;
  std::string fieldSelector;
  int64_t limit = 0;          // page size; 0 = no paging
  std::string continueToken;  // "continue"
  std::string resourceVersion;
  std::string resourceVersionMatch;  // "NotOlderThan" | "Exact" | ""
  // Watch only:
  int64_t timeoutSeconds = 0;
  bool allowWatchBookmarks = false;
  // The transport's idle timeout for the watch; 0 = timeoutSeconds + 30 s (it
  // must outlast the server's own timeout, or every quiet watch would end as an
  // error).
  std::chrono::seconds idleTimeoutSeconds{0};
};

enum class PatchType { kMerge, kJson, kStrategicMerge };

struct DeleteOptions {
  std::string propagationPolicy;  // "Foreground" | "Background" | "Orphan" | ""
  std::optional<int64_t> gracePeriodSeconds;
  std::string preconditionUid;              // delete only if the uid still matches
  std::string preconditionResourceVersion;  // ... and/or the resourceVersion
};

struct LogOptions {
  std::string container;
  std::optional<int64_t> tailLines;
  bool previous = false;
};

struct RetryOptions {
  int maxRetries = 10;  // client-go's default
  // Used when a retryable response has no Retry-After: base doubled per
  // attempt, capped.
  std::chrono::milliseconds baseDelay{500};
  std::chrono::milliseconds maxDelay{30000};
  // A Retry-After beyond this is clamped (a broken server must not park us for
  // hours).
  std::chrono::seconds maxRetryAfter{60};
  // Each try's timeout (idle time per read of the response), for requests that set none;
  // 0: the transport's default (30 s). A client whose requests must end within a bound sets
  // it, or one request on a connection the server silently dropped takes the whole 30 s.
  std::chrono::seconds tryTimeout{0};
};

struct ClientOptions {
  RetryOptions retry;
  std::shared_ptr<Clock> clock;  // null: RealClock()
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  Json object;  // the object; for kError a meta/v1 Status
};

// Receives decoded watch events on the watching thread. Return a non-OK Status
// to stop the watch (Watch returns it).
using WatchEventCallback = std::function<Status(WatchEvent&&)>;

class Client {
 public:
  // The transport is shared with the caller. Thread-safe: one Client serves all threads.
  Client(RestConfig config, std::shared_ptr<Transport> transport, ClientOptions options = {});

  const RestConfig& config() const { return config_; }

  // A client on the same server, transport and clock with other retries (and its
  // own rate limiter): for callers whose requests must end within a bound, such
  // as leader election, where a read retried for minutes is worse than a failed
  // one tried again shortly.
  std::shared_ptr<Client> WithRetry(RetryOptions retry) const;

  // All methods: blocking; thread-safe; errors as described at the top of this
  // file.
  Result<Json> Get(const GroupVersionResource& gvr, const std::string& ns, const std::string& name);
  // One page. The returned list carries metadata.continue when there is more.
  Result<Json> List(const GroupVersionResource& gvr, const std::string& ns,
                    const ListOptions& options);
  // Every page, following metadata.continue; the result's
  // metadata.resourceVersion is the snapshot's. If a continue token expires
  // (410) it falls back to one unpaged list.
  Result<Json> ListAll(const GroupVersionResource& gvr, const std::string& ns,
                       const ListOptions& options);
  // Creates `object` (metadata.generateName works: the server picks the name).
  Result<Json> Create(const GroupVersionResource& gvr, const std::string& ns, const Json& object);
  // Evicts a pod through the Eviction API (policy/v1): the server deletes it unless a
  // PodDisruptionBudget forbids it, which comes back as kResourceExhausted (429) with the
  // budget's message, not retried.
  Result<Json> Evict(const std::string& ns, const std::string& pod);
  // Replaces the object (metadata.name, metadata.resourceVersion for optimistic
  // concurrency); a stale resourceVersion gives kAborted "409 Conflict".
  Result<Json> Update(const GroupVersionResource& gvr, const std::string& ns, const Json& object);
  Result<Json> Patch(const GroupVersionResource& gvr, const std::string& ns,
                     const std::string& name, PatchType type, const Json& patch);
  // The status subresource.
  Result<Json> GetStatus(const GroupVersionResource& gvr, const std::string& ns,
                         const std::string& name);
  Result<Json> UpdateStatus(const GroupVersionResource& gvr, const std::string& ns,
                            const Json& object);
  Result<Json> PatchStatus(const GroupVersionResource& gvr, const std::string& ns,
                           const std::string& name, PatchType type, const Json& patch);
  // Deletes; returns the server's answer (the object being deleted or a
  // Status).
  Result<Json> Delete(const GroupVersionResource& gvr, const std::string& ns,
                      const std::string& name, const DeleteOptions& options = {});
  // A pod's log as text.
  Result<std::string> Logs(const std::string& ns, const std::string& pod,
                           const LogOptions& options = {});

  // One watch request (options.resourceVersion, timeoutSeconds,
  // allowWatchBookmarks). Blocks until the server ends the stream (OK),
  // `on_event` returns an error (that error), `cancel` fires (kCancelled), the
  // connection drops (kUnavailable/kDeadlineExceeded) or the request is refused
  // (the mapped HTTP error; 410 is kGone). An ERROR event is handed to
  // `on_event` as is; the reflector turns a 410 inside it into a relist.
  Status Watch(const GroupVersionResource& gvr, const std::string& ns, const ListOptions& options,
               const WatchEventCallback& on_event, const Cancellation* cancel);

  // A raw request through rate limiting, auth, retries and error mapping;
  // returns the body of a 2xx response. Blocking; thread-safe.
  Result<std::string> Do(HttpRequest request);

 private:
  Result<Json> DoJson(HttpRequest request);
  Status AddAuth(HttpRequest& request);

  RestConfig config_;
  std::shared_ptr<Transport> transport_;
  RetryOptions retry_;
  std::shared_ptr<Clock> clock_;
  TokenSource tokens_;
  TokenBucket limiter_;
};

// The Status for a non-2xx response to `request` (exposed for the reflector and
// for tests).
Status HttpError(const HttpRequest& request, const HttpResponse& response, bool is_create);

// The Status for a watch ERROR event's object (a meta/v1 Status); code 410
// gives kGone.
Status StatusFromWatchError(const Json& status_object);

// "namespace/name" or "name" for cluster-scoped objects (client-go's
// MetaNamespaceKeyFunc).
std::string ObjectKey(const Json& object);

// A Client over the cpprest transport for `config` (e.g. from LoadKubeconfig or
// InClusterConfig): the one call a program or an integration test needs. Errors name the config
// field (an unreadable CA, a bad client key).
Result<std::shared_ptr<Client>> NewClient(const RestConfig& config, ClientOptions options = {});

}  // namespace perfgate::kube
