#include "kube/client.h"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <memory>
#include <utility>

#include "kube/log.h"
#include "kube/watch.h"

namespace perfgate::kube {
namespace {

std::string PercentEncode(std::string_view in) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(in.size());
  for (unsigned char c : in) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

class Query {
 public:
  void Add(std::string_view key, std::string_view value) {
    if (value.empty()) return;
    out_ += out_.empty() ? '?' : '&';
    out_ += key;
    out_ += '=';
    out_ += PercentEncode(value);
  }
  void Add(std::string_view key, int64_t value) { Add(key, std::to_string(value)); }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

std::string ListQuery(const ListOptions& o, bool watch) {
  Query q;
  if (watch) q.Add("watch", "true");
  q.Add("labelSelector", o.labelSelector);
  q.Add("fieldSelector", o.fieldSelector);
  if (o.limit > 0) q.Add("limit", o.limit);
  q.Add("continue", o.continueToken);
  q.Add("resourceVersion", o.resourceVersion);
  q.Add("resourceVersionMatch", o.resourceVersionMatch);
  if (o.timeoutSeconds > 0) q.Add("timeoutSeconds", o.timeoutSeconds);
  if (o.allowWatchBookmarks) q.Add("allowWatchBookmarks", "true");
  return q.str();
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
    case 412:
      return "PreconditionFailed";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 501:
      return "NotImplemented";
    case 502:
      return "BadGateway";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "Error";
  }
}

Code CodeForHttp(int status, std::string_view reason, bool is_create) {
  switch (status) {
    case 400:
      return Code::kInvalidArgument;
    case 401:
      return Code::kUnauthenticated;
    case 403:
      return Code::kPermissionDenied;
    case 404:
      return Code::kNotFound;
    case 405:
      return Code::kUnimplemented;
    case 409:
      if (reason == "AlreadyExists") return Code::kAlreadyExists;
      if (reason == "Conflict") return Code::kAborted;
      return is_create ? Code::kAlreadyExists : Code::kAborted;
    case 410:
      return Code::kGone;
    case 412:
      return Code::kFailedPrecondition;
    case 413:
    case 415:
    case 422:
      return Code::kInvalidArgument;
    case 429:
      return Code::kResourceExhausted;
    default:
      break;
  }
  if (status >= 500) return Code::kUnavailable;
  return Code::kUnknown;
}

bool Retryable(const HttpRequest& request, const HttpResponse& response) {
  // 429 means the server refused before doing anything (APF, max-in-flight):
  // always safe. A 5xx may come after the write happened, so only retry it when
  // the server asks (Retry-After, as client-go does) or the request is a read.
  if (response.status == 429) return request.retryTooManyRequests;
  if (response.status < 500) return false;
  if (response.headers.contains("Retry-After")) return true;
  return request.method == "GET";
}

std::optional<std::chrono::seconds> RetryAfter(const HttpResponse& response) {
  auto it = response.headers.find("Retry-After");
  if (it == response.headers.end()) return std::nullopt;
  int64_t seconds = 0;
  const std::string& v = it->second;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
  if (ec != std::errc() || seconds < 0) return std::nullopt;  // HTTP-dates: use our backoff
  return std::chrono::seconds(seconds);
}

std::string Truncate(std::string s, size_t max) {
  if (s.size() > max) {
    s.resize(max);
    s += "...";
  }
  return s;
}

}  // namespace

std::shared_ptr<spdlog::logger> Logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    if (auto existing = spdlog::get("kube")) return existing;
    auto l = spdlog::stderr_color_mt("kube");
    return l;
  }();
  return logger;
}

Result<std::shared_ptr<Client>> NewClient(const RestConfig& config, ClientOptions options) {
  ASSIGN_OR_RETURN(std::shared_ptr<Transport> transport, NewCpprestTransport(config));
  return std::make_shared<Client>(config, std::move(transport), std::move(options));
}

GroupVersionResource PodsResource() { return {"", "v1", "pods"}; }
GroupVersionResource NodesResource() { return {"", "v1", "nodes"}; }
GroupVersionResource EventsResource() { return {"", "v1", "events"}; }
GroupVersionResource LeasesResource() { return {"coordination.k8s.io", "v1", "leases"}; }

std::string ResourcePath(const GroupVersionResource& gvr, const std::string& ns,
                         const std::string& name, const std::string& subresource) {
  std::string p = gvr.group.empty() ? fmt::format("/api/{}", gvr.version)
                                    : fmt::format("/apis/{}/{}", gvr.group, gvr.version);
  if (!ns.empty()) p += "/namespaces/" + PercentEncode(ns);
  p += "/" + gvr.resource;
  if (!name.empty()) p += "/" + PercentEncode(name);
  if (!subresource.empty()) p += "/" + subresource;
  return p;
}

Status HttpError(const HttpRequest& request, const HttpResponse& response, bool is_create) {
  std::string reason(ReasonPhrase(response.status));
  std::string message;
  Json body = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_object() && body.value("kind", "") == "Status") {
    if (auto r = body.value("reason", ""); !r.empty()) reason = r;
    message = body.value("message", "");
    // A refused eviction says which PodDisruptionBudget refused it only in its causes.
    if (response.status == 429) {
      for (const auto& c : body.value("details", Json::object()).value("causes", Json::array())) {
        if (c.is_object() && !c.value("message", "").empty()) {
          message += " " + c.value("message", "");
        }
      }
    }
  } else {
    message = Truncate(response.body, 512);
  }
  std::string path = request.path;
  if (auto q = path.find('?'); q != std::string::npos && request.method != "GET") {
    path.resize(q);
  }
  std::string text = fmt::format("{} {}: {} {}", request.method, path, response.status, reason);
  if (!message.empty()) text += ": " + message;
  return {CodeForHttp(response.status, reason, is_create), std::move(text)};
}

Status StatusFromWatchError(const Json& status_object) {
  int code = status_object.value("code", 0);
  std::string reason = status_object.value("reason", std::string(ReasonPhrase(code)));
  std::string message = status_object.value("message", "");
  Code c = code == 0 ? Code::kUnknown : CodeForHttp(code, reason, false);
  return {c, fmt::format("watch ERROR event: {} {}: {}", code, reason, message)};
}

std::string ObjectKey(const Json& object) {
  const Json* meta =
      object.is_object() && object.contains("metadata") ? &object["metadata"] : nullptr;
  if (meta == nullptr || !meta->is_object()) return "";
  std::string name = meta->value("name", "");
  std::string ns = meta->value("namespace", "");
  return ns.empty() ? name : ns + "/" + name;
}

Client::Client(RestConfig config, std::shared_ptr<Transport> transport, ClientOptions options)
    : config_(std::move(config)),
      transport_(std::move(transport)),
      retry_(options.retry),
      clock_(options.clock ? std::move(options.clock) : RealClock()),
      tokens_(config_),
      limiter_(config_.qps, config_.burst, clock_) {}

std::shared_ptr<Client> Client::WithRetry(RetryOptions retry) const {
  return std::make_shared<Client>(config_, transport_, ClientOptions{retry, clock_});
}

Status Client::AddAuth(HttpRequest& request) {
  ASSIGN_OR_RETURN(std::string token, tokens_.Token());
  if (!token.empty()) request.headers["Authorization"] = "Bearer " + token;
  if (!request.headers.contains("Accept")) request.headers["Accept"] = "application/json";
  request.headers["User-Agent"] = config_.userAgent;
  return Status::Ok();
}

Result<std::string> Client::Do(HttpRequest request) {
  RETURN_IF_ERROR(AddAuth(request));
  if (request.idleTimeoutSeconds.count() == 0) request.idleTimeoutSeconds = retry_.tryTimeout;
  bool is_create = request.method == "POST";
  for (int attempt = 0;; ++attempt) {
    limiter_.Acquire();
    auto response = transport_->Send(request);
    if (!response.ok()) {
      return response.status().WithContext(fmt::format("{} {}", request.method, request.path));
    }
    if (response->status >= 200 && response->status < 300) return std::move(response->body);
    if (attempt < retry_.maxRetries && Retryable(request, *response)) {
      std::chrono::nanoseconds delay;
      if (auto after = RetryAfter(*response)) {
        delay = std::min<std::chrono::nanoseconds>(*after, retry_.maxRetryAfter);
      } else {
        auto d = retry_.baseDelay * (int64_t{1} << std::min(attempt, 20));
        delay = std::min<std::chrono::nanoseconds>(d, retry_.maxDelay);
      }
      Logger()->debug("{} {}: {} (attempt {}), retrying in {} ms", request.method, request.path,
                      response->status, attempt + 1,
                      std::chrono::duration_cast<std::chrono::milliseconds>(delay).count());
      clock_->SleepFor(delay, nullptr);
      if (request.headers.contains("Authorization")) RETURN_IF_ERROR(AddAuth(request));
      continue;
    }
    return HttpError(request, *response, is_create);
  }
}

Result<Json> Client::DoJson(HttpRequest request) {
  std::string method = request.method;
  std::string path = request.path;
  ASSIGN_OR_RETURN(std::string body, Do(std::move(request)));
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return DataLoss(
        fmt::format("{} {}: response is not JSON: {}", method, path, Truncate(body, 200)));
  }
  return j;
}

namespace {
HttpRequest JsonRequest(std::string method, std::string path, const Json* body,
                        std::string content_type = "application/json") {
  HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  if (body != nullptr) {
    r.body = body->dump();
    r.headers["Content-Type"] = std::move(content_type);
  }
  return r;
}

Result<std::string> NameOf(const Json& object, std::string_view what) {
  std::string name;
  if (object.is_object() && object.contains("metadata") && object["metadata"].is_object()) {
    name = object["metadata"].value("name", "");
  }
  if (name.empty()) return InvalidArgument(fmt::format("{}: object has no metadata.name", what));
  return name;
}

std::string_view PatchContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
  }
  return "application/merge-patch+json";
}
}  // namespace

Result<Json> Client::Get(const GroupVersionResource& gvr, const std::string& ns,
                         const std::string& name) {
  return DoJson(JsonRequest("GET", ResourcePath(gvr, ns, name), nullptr));
}

Result<Json> Client::List(const GroupVersionResource& gvr, const std::string& ns,
                          const ListOptions& options) {
  return DoJson(JsonRequest("GET", ResourcePath(gvr, ns) + ListQuery(options, false), nullptr));
}

Result<Json> Client::ListAll(const GroupVersionResource& gvr, const std::string& ns,
                             const ListOptions& options) {
  ListOptions page_options = options;
  Json all;
  Json items = Json::array();
  for (int page = 0;; ++page) {
    auto list = List(gvr, ns, page_options);
    if (!list.ok()) {
      if (list.status().code() == Code::kGone && page > 0) {
        // The continue token expired mid-way (etcd compacted): the pages no
        // longer form one snapshot, so start again with one unpaged list, as
        // client-go's pager does.
        Logger()->info("{}: continue token expired; listing without paging", ResourcePath(gvr, ns));
        ListOptions full = options;
        full.limit = 0;
        full.continueToken.clear();
        return List(gvr, ns, full);
      }
      return list.status();
    }
    Json& l = *list;
    if (page == 0) {
      all = l;
      all["items"] = Json::array();
    }
    if (l.contains("items") && l["items"].is_array()) {
      for (auto& item : l["items"]) items.push_back(std::move(item));
    }
    std::string next;
    if (l.contains("metadata") && l["metadata"].is_object()) {
      next = l["metadata"].value("continue", "");
    }
    if (next.empty() || options.limit <= 0) break;
    page_options.continueToken = next;
    // A continue token already pins the snapshot; the server rejects both
    // together.
    page_options.resourceVersion.clear();
    page_options.resourceVersionMatch.clear();
  }
  all["items"] = std::move(items);
  if (all.contains("metadata") && all["metadata"].is_object()) all["metadata"].erase("continue");
  return all;
}

Result<Json> Client::Create(const GroupVersionResource& gvr, const std::string& ns,
                            const Json& object) {
  return DoJson(JsonRequest("POST", ResourcePath(gvr, ns), &object));
}

Result<Json> Client::Evict(const std::string& ns, const std::string& pod) {
  const Json eviction = {{"apiVersion", "policy/v1"},
                         {"kind", "Eviction"},
                         {"metadata", {{"name", pod}, {"namespace", ns}}}};
  HttpRequest request =
      JsonRequest("POST", ResourcePath(PodsResource(), ns, pod) + "/eviction", &eviction);
  request.retryTooManyRequests = false;
  return DoJson(std::move(request));
}

Result<Json> Client::Update(const GroupVersionResource& gvr, const std::string& ns,
                            const Json& object) {
  ASSIGN_OR_RETURN(std::string name, NameOf(object, "update"));
  return DoJson(JsonRequest("PUT", ResourcePath(gvr, ns, name), &object));
}

Result<Json> Client::Patch(const GroupVersionResource& gvr, const std::string& ns,
                           const std::string& name, PatchType type, const Json& patch) {
  return DoJson(JsonRequest("PATCH", ResourcePath(gvr, ns, name), &patch,
                            std::string(PatchContentType(type))));
}

Result<Json> Client::GetStatus(const GroupVersionResource& gvr, const std::string& ns,
                               const std::string& name) {
  return DoJson(JsonRequest("GET", ResourcePath(gvr, ns, name, "status"), nullptr));
}

Result<Json> Client::UpdateStatus(const GroupVersionResource& gvr, const std::string& ns,
                                  const Json& object) {
  ASSIGN_OR_RETURN(std::string name, NameOf(object, "update status"));
  return DoJson(JsonRequest("PUT", ResourcePath(gvr, ns, name, "status"), &object));
}

Result<Json> Client::PatchStatus(const GroupVersionResource& gvr, const std::string& ns,
                                 const std::string& name, PatchType type, const Json& patch) {
  return DoJson(JsonRequest("PATCH", ResourcePath(gvr, ns, name, "status"), &patch,
                            std::string(PatchContentType(type))));
}

Result<Json> Client::Delete(const GroupVersionResource& gvr, const std::string& ns,
                            const std::string& name, const DeleteOptions& options) {
  Json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!options.propagationPolicy.empty()) body["propagationPolicy"] = options.propagationPolicy;
  if (options.gracePeriodSeconds) body["gracePeriodSeconds"] = *options.gracePeriodSeconds;
  if (!options.preconditionUid.empty()) body["preconditions"]["uid"] = options.preconditionUid;
  if (!options.preconditionResourceVersion.empty()) {
    body["preconditions"]["resourceVersion"] = options.preconditionResourceVersion;
  }
  return DoJson(JsonRequest("DELETE", ResourcePath(gvr, ns, name), &body));
}

Result<std::string> Client::Logs(const std::string& ns, const std::string& pod,
                                 const LogOptions& options) {
  Query q;
  q.Add("container", options.container);
  if (options.tailLines) q.Add("tailLines", *options.tailLines);
  if (options.previous) q.Add("previous", "true");
  HttpRequest r;
  r.method = "GET";
  r.path = ResourcePath(PodsResource(), ns, pod, "log") + q.str();
  r.headers["Accept"] = "text/plain, */*";
  return Do(std::move(r));
}

Status Client::Watch(const GroupVersionResource& gvr, const std::string& ns,
                     const ListOptions& options, const WatchEventCallback& on_event,
                     const Cancellation* cancel) {
  HttpRequest r;
  r.method = "GET";
  r.path = ResourcePath(gvr, ns) + ListQuery(options, true);
  // The transport's timeout is idle time per read: keep it above the
  // server-side timeout so a quiet watch ends by the server's choice, not ours.
  r.idleTimeoutSeconds =
      options.idleTimeoutSeconds.count() > 0
          ? options.idleTimeoutSeconds
          : std::chrono::seconds(options.timeoutSeconds > 0 ? options.timeoutSeconds + 30 : 330);
  RETURN_IF_ERROR(AddAuth(r));
  if (!limiter_.Acquire(cancel)) return Cancelled(fmt::format("GET {}: cancelled", r.path));

  WatchDecoder decoder;
  Status stop_status;
  auto response = transport_->Stream(
      r,
      [&](std::string_view chunk) {
        stop_status = decoder.Feed(chunk, on_event);
        return stop_status.ok();
      },
      cancel);
  if (!stop_status.ok()) return stop_status;
  if (!response.ok()) return response.status().WithContext(fmt::format("GET {}", r.path));
  if (response->status < 200 || response->status >= 300) {
    return HttpError(r, *response, false);
  }
  return decoder.Finish(on_event);
}

}  // namespace perfgate::kube
