// kube-sim's request handling: one pipeline (authentication, fault injection, authorization,
// the resource's type) in front of a table of routes, each a small handler. GET and HEAD hold
// the store's lock shared, so gets, lists and watches run side by side; every other request,
// and the controllers, hold it alone.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <optional>
#include <shared_mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/kube-sim/impl.h"

namespace perfgate::kubesim {
namespace {

using Impl = KubeSim::Impl;

Json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      Json o = Json::object();
      for (const auto& kv : node) o[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      Json a = Json::array();
      for (const auto& v : node) a.push_back(YamlToJson(v));
      return a;
    }
    case YAML::NodeType::Scalar: {
      std::string s = node.Scalar();
      if (node.Tag() == "!") return s;  // quoted
      if (s == "true") return true;
      if (s == "false") return false;
      if (s == "null" || s == "~") return nullptr;
      char* end = nullptr;
      long long i = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && *end == '\0') return i;
      double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && *end == '\0') return d;
      return s;
    }
    default:
      return nullptr;
  }
}

Json ParseBody(const std::string& body, bool* ok) {
  Json j = Json::parse(body, nullptr, false);
  if (!j.is_discarded()) {
    *ok = true;
    return j;
  }
  try {
    *ok = true;
    return YamlToJson(YAML::Load(body));
  } catch (const std::exception&) {
    *ok = false;
    return nullptr;
  }
}

struct RequestInfo {
  bool isResource = false;
  std::string verb;
  std::string group;
  std::string version;
  std::string resource;
  std::string subresource;
  std::string ns;
  std::string name;
  std::string nameForAuthz;
};

RequestInfo ParseRequestInfo(const HttpRequest& req) {
  RequestInfo info;
  std::vector<std::string> parts = SplitPath(req.path);
  size_t i = 0;
  if (parts.size() >= 3 && parts[0] == "api") {
    info.version = parts[1];
    i = 2;
  } else if (parts.size() >= 4 && parts[0] == "apis") {
    info.group = parts[1];
    info.version = parts[2];
    i = 3;
  } else {
    return info;
  }
  std::vector<std::string> rest(parts.begin() + static_cast<long>(i), parts.end());
  if (rest.size() >= 2 && rest[0] == "namespaces") {
    if (rest.size() == 2 || rest[2] == "status" || rest[2] == "finalize") {
      info.resource = "namespaces";
      info.name = rest[1];
      if (rest.size() > 2) info.subresource = rest[2];
    } else {
      info.ns = rest[1];
      info.resource = rest[2];
      if (rest.size() > 3) info.name = rest[3];
      if (rest.size() > 4) info.subresource = rest[4];
    }
  } else {
    info.resource = rest[0];
    if (rest.size() > 1) info.name = rest[1];
    if (rest.size() > 2) info.subresource = rest[2];
  }
  info.isResource = true;
  const std::string& m = req.method;
  if (m == "GET" || m == "HEAD") {
    info.verb = info.name.empty() ? (Truthy(req.Query("watch")) ? "watch" : "list") : "get";
  } else if (m == "POST") {
    info.verb = "create";
  } else if (m == "PUT") {
    info.verb = "update";
  } else if (m == "PATCH") {
    info.verb = "patch";
  } else if (m == "DELETE") {
    info.verb = info.name.empty() ? "deletecollection" : "delete";
  }
  // Like kube-apiserver's request-info resolver, a list or watch narrowed to one name by
  // fieldSelector=metadata.name=X is authorized for that name (so resourceNames rules apply).
  if ((info.verb == "list" || info.verb == "watch") && info.name.empty()) {
    std::string fs = req.Query("fieldSelector");
    for (const std::string prefix : {"metadata.name=", "metadata.name=="}) {
      if (fs.rfind(prefix, 0) == 0 && fs.find(',') == std::string::npos) {
        info.nameForAuthz = fs.substr(prefix.size());
      }
    }
  }
  return info;
}

std::string WarningHeader(const std::vector<std::string>& warnings) {
  std::string out;
  for (const auto& w : warnings) {
    if (!out.empty()) out += ",";
    out += "299 - " + Json(w).dump();
  }
  return out;
}

// MicroTime, as audit events carry it: "2026-12-02T01:45:03.123456Z".
std::string FormatAuditTime(std::chrono::system_clock::time_point t) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch());
  const auto secs = std::chrono::floor<std::chrono::seconds>(micros);
  const auto tt = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>((micros - secs).count()));
  return buf;
}

// One audit.k8s.io/v1 Event (level Metadata, stage ResponseComplete) for `r`; kube-sim adds
// admissionAuthorizations, the checks admission plugins made for it.
std::string AuditEvent(const RequestRecord& r, const std::string& path) {
  Json object_ref = {{"resource", r.resource}, {"apiGroup", r.apiGroup}};
  if (!r.nameSpace.empty()) object_ref["namespace"] = r.nameSpace;
  if (!r.name.empty()) object_ref["name"] = r.name;
  if (!r.subresource.empty()) object_ref["subresource"] = r.subresource;
  Json event = {{"kind", "Event"},
                {"apiVersion", "audit.k8s.io/v1"},
                {"level", "Metadata"},
                {"stage", "ResponseComplete"},
                {"requestURI", path},
                {"verb", r.verb},
                {"user", {{"username", r.user}, {"groups", r.groups}}},
                {"userAgent", r.userAgent},
                {"stageTimestamp", FormatAuditTime(r.time)},
                {"responseStatus", {{"code", r.code}}}};
  if (!r.resource.empty()) event["objectRef"] = object_ref;
  if (!r.decision.empty()) event["annotations"] = {{"authorization.k8s.io/decision", r.decision}};
  if (!r.admissionChecks.empty()) {
    Json checks = Json::array();
    for (const auto& c : r.admissionChecks) {
      checks.push_back({{"verb", c.verb},
                        {"apiGroup", c.apiGroup},
                        {"resource", c.resource},
                        {"subresource", c.subresource},
                        {"namespace", c.nameSpace},
                        {"name", c.name},
                        {"allowed", c.allowed}});
    }
    event["admissionAuthorizations"] = checks;
  }
  return event.dump();
}

// One API request on its way through the pipeline.
struct Call {
  Call(const HttpRequest& request, RequestInfo requestInfo)
      : req(request), info(std::move(requestInfo)) {}

  const HttpRequest& req;
  RequestInfo info;
  bool isAdminPath = false;
  UserInfo user;
  RequestRecord record;
  ResourceType t;        // a resource request's type, once resolved
  std::string bodyText;  // JSON or YAML (a protobuf body decoded to JSON)
  std::string fieldValidation;
  bool dryRun = false;
  bool wantTable = false;
};

// A handler's answer. The pipeline records it in the request log, releases the lock, then
// sends it: `body` as JSON, or, when `stream` is set, whatever the stream writes.
struct Reply {
  int code = 200;
  Json body;
  std::vector<std::string> warnings;
  std::map<std::string, std::string> headers;
  bool recorded = true;             // false: never in the request log
  std::optional<int> recordedCode;  // what the request log says, when not `code`
  std::function<void(HttpResponder&)> stream;
};

Reply JsonReply(int code, Json body) {
  Reply r;
  r.code = code;
  r.body = std::move(body);
  return r;
}

Reply OutcomeReply(const Outcome& o, std::vector<std::string> warnings = {}) {
  Reply r = JsonReply(o.code, o.body);
  r.warnings = std::move(warnings);
  return r;
}

Reply NotFoundPath(Json details = nullptr) {
  return JsonReply(404,
                   StatusBody(404, "NotFound", "the server could not find the requested resource",
                              std::move(details)));
}

void Send(HttpResponder& resp, Reply& r) {
  if (r.stream) {
    r.stream(resp);
    return;
  }
  if (!r.warnings.empty()) r.headers["Warning"] = WarningHeader(r.warnings);
  resp.Send(r.code, "application/json", r.body.dump(), r.headers);
}

void Record(Impl& s, Call& c, int code) {
  c.record.code = code;
  std::lock_guard<std::mutex> lock(s.recordMu);
  c.record.time = std::chrono::system_clock::now();
  if (s.auditLog.is_open()) s.auditLog << AuditEvent(c.record, c.req.path) << '\n' << std::flush;
  if (s.requests.size() < 200000) s.requests.push_back(c.record);
}

// The store's lock as one request holds it: shared or alone, released around waits.
class ApiLock {
 public:
  ApiLock(std::shared_mutex& mu, bool exclusive) : mu_(mu), exclusive_(exclusive) { lock(); }
  ~ApiLock() {
    if (held_) unlock();
  }
  ApiLock(const ApiLock&) = delete;
  ApiLock& operator=(const ApiLock&) = delete;

  void lock() {
    if (exclusive_) {
      mu_.lock();
    } else {
      mu_.lock_shared();
    }
    held_ = true;
  }
  void unlock() {
    if (exclusive_) {
      mu_.unlock();
    } else {
      mu_.unlock_shared();
    }
    held_ = false;
  }
  bool held() const { return held_; }
  // A reader that turns out to write takes the lock alone (released in between).
  void MakeExclusive() {
    if (exclusive_) return;
    unlock();
    exclusive_ = true;
    lock();
  }

 private:
  std::shared_mutex& mu_;
  bool exclusive_;
  bool held_ = false;
};

// /healthz, /livez, /readyz and /version, which need neither credentials nor the store.
bool ServeServerInfo(const HttpRequest& req, HttpResponder& resp) {
  if (req.path == "/healthz" || req.path == "/livez" || req.path == "/readyz") {
    resp.Send(200, "text/plain", "ok");
    return true;
  }
  if (req.path != "/version") return false;
  resp.Send(200, "application/json",
            Json{{"major", "1"},
                 {"minor", "32"},
                 {"gitVersion", "v1.32.0-kube-sim"},
                 {"gitCommit", "kube-sim"},
                 {"gitTreeState", "clean"},
                 {"buildDate", "2026-01-01T00:00:00Z"},
                 {"goVersion", "go1.23"},
                 {"compiler", "gc"},
                 {"platform", "linux/amd64"}}
                .dump(),
            {});
  return true;
}

// ---- fault injection

// The injected fault this request takes (429, an error code, or 0), with faultMu held.
int DrawFault(Impl& s) {
  if (s.throttleNext > 0) {
    --s.throttleNext;
    return 429;
  }
  if (s.failNext > 0) {
    --s.failNext;
    return s.failCode;
  }
  if (s.failureFraction > 0 &&
      std::uniform_real_distribution<double>(0, 1)(s.faultRng) < s.failureFraction) {
    return s.failureFractionCode;
  }
  return 0;
}

// A freeze holds the request, unanswered, until the thaw (never kube-sim's admin endpoint);
// then it is answered 504 without being served, as kube-apiserver answers a request its
// storage did not complete in time. Fault injection and latency apply to the API, never to
// kube-sim's own admin endpoint. The store's lock is released while the request waits.
std::optional<Reply> TakeFault(Impl& s, const Call& c, ApiLock& lock) {
  std::unique_lock<std::mutex> faults(s.faultMu);
  const bool held = !c.isAdminPath && s.frozen;
  if (held) {
    lock.unlock();
    s.thawCv.wait(faults, [&] { return !s.frozen || s.stopping; });
  }
  const int latency = c.isAdminPath ? 0 : s.latencyMs;
  const int retryAfter = s.retryAfterSeconds;
  const int fault = c.isAdminPath ? 0 : DrawFault(s);
  faults.unlock();
  if (latency > 0) {
    if (lock.held()) lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(latency));
  }
  if (!lock.held()) lock.lock();
  if (held) {
    return JsonReply(504, StatusBody(504, "Timeout",
                                     "Timeout: request did not complete within the allotted "
                                     "timeout"));
  }
  if (fault == 429) {
    Reply r = JsonReply(
        429, StatusBody(429, "TooManyRequests", "Too many requests, please try again later.",
                        {{"retryAfterSeconds", retryAfter}}));
    r.headers = {{"Retry-After", std::to_string(retryAfter)}};
    return r;
  }
  if (fault != 0) {
    return JsonReply(fault, StatusBody(fault, fault == 503 ? "ServiceUnavailable" : "InternalError",
                                       "Internal error occurred: injected by kube-sim"));
  }
  return std::nullopt;
}

// Admin endpoint: fault injection over HTTP, for a kube-sim started as a separate process.
// Never in the request log.
Reply ServeAdmin(Impl& s, const Call& c) {
  const bool master = std::find(c.user.groups.begin(), c.user.groups.end(), "system:masters") !=
                      c.user.groups.end();
  Reply r;
  r.recorded = false;
  if (!master || c.req.path != "/kube-sim/faults" || c.req.method != "POST") {
    r.code = master ? 404 : 403;
    r.body = StatusBody(master ? 404 : 403, master ? "NotFound" : "Forbidden",
                        "kube-sim admin: POST /kube-sim/faults (admin token)");
    return r;
  }
  Json f = Json::parse(c.req.body, nullptr, false);
  if (!f.is_object()) {
    Outcome o = BadRequest("kube-sim admin: body must be a JSON object");
    r.code = o.code;
    r.body = o.body;
    return r;
  }
  {
    std::lock_guard<std::mutex> faults(s.faultMu);
    s.latencyMs = f.value("latencyMs", s.latencyMs);
    s.retryAfterSeconds = f.value("retryAfterSeconds", s.retryAfterSeconds);
    s.throttleNext = f.value("throttleNext", s.throttleNext);
    s.failNext = f.value("failNext", s.failNext);
    s.failCode = f.value("failCode", s.failCode);
    s.failureFraction = f.value("failureFraction", s.failureFraction);
    if (f.contains("freeze") && f["freeze"].is_boolean()) {
      s.frozen = f["freeze"].get<bool>();
      s.thawCv.notify_all();
    }
  }
  if (f.value("dropWatches", false)) ++s.watchEpoch;
  if (f.value("expireHistory", false)) {
    s.history.clear();
    s.historyFloor = s.rv;
  }
  s.cv.notify_all();
  r.body = {{"ok", true}};
  return r;
}

// ---- what is asked for: a path, or a resource's type

Reply ServeNonResource(const Impl& s, Call& c) {
  const std::string& path = c.req.path;
  const bool allowed = s.Authorize(c.user, "get", "", "", "", "", "", path) || path == "/api" ||
                       path.rfind("/api/", 0) == 0 || path == "/apis" ||
                       path.rfind("/apis/", 0) == 0 || path.rfind("/openapi/", 0) == 0;
  c.record.decision = allowed ? "allow" : "forbid";
  if (!allowed) {
    return JsonReply(403, StatusBody(403, "Forbidden",
                                     "forbidden: User \"" + c.user.name + "\" cannot get path \"" +
                                         path + "\""));
  }
  bool found = false;
  Json body;
  if (path == "/openapi/v3" || path.rfind("/openapi/v3/", 0) == 0) {
    body = s.OpenApiV3(path.size() > 12 ? path.substr(12) : "", &found);
  } else if (path.rfind("/openapi/", 0) != 0) {
    body = s.Discovery(path, &found);
  }
  Reply r = found ? JsonReply(200, std::move(body)) : NotFoundPath();
  r.recordedCode = 200;
  return r;
}

std::optional<Reply> AuthorizeResource(const Impl& s, Call& c) {
  const RequestInfo& info = c.info;
  const bool allowed = s.Authorize(c.user, info.verb, info.group, info.resource, info.subresource,
                                   info.ns, info.name.empty() ? info.nameForAuthz : info.name, "");
  c.record.decision = allowed ? "allow" : "forbid";
  if (allowed) return std::nullopt;
  std::string res =
      info.subresource.empty() ? info.resource : info.resource + "/" + info.subresource;
  std::string where =
      info.ns.empty() ? "at the cluster scope" : "in the namespace \"" + info.ns + "\"";
  std::string prefix = c.t.qualified() + (info.name.empty() ? "" : " \"" + info.name + "\"");
  return JsonReply(
      403, StatusBody(403, "Forbidden",
                      prefix + " is forbidden: User \"" + c.user.name + "\" cannot " + info.verb +
                          " resource \"" + res + "\" in API group \"" + info.group + "\" " + where,
                      {{"name", info.name}, {"group", info.group}, {"kind", info.resource}}));
}

// The resource's type, the authorization, the body: what every resource route needs.
std::optional<Reply> ResolveResource(const Impl& s, Call& c) {
  const ResourceType* tp = s.FindType(c.info.group, c.info.resource);
  if (tp == nullptr) return NotFoundPath(Json::object());
  c.t = *tp;
  if (c.t.version != c.info.version) return NotFoundPath();
  if (std::optional<Reply> forbidden = AuthorizeResource(s, c)) return forbidden;
  if (!c.t.namespaced && !c.info.ns.empty()) return NotFoundPath();
  c.bodyText = c.req.body;
  if (c.req.Header("content-type").find("protobuf") != std::string::npos) {
    bool decoded = false;
    Json fromProto = DecodeKubeProtobuf(c.req.body, &decoded);
    if (!decoded) {
      return JsonReply(415, StatusBody(415, "UnsupportedMediaType",
                                       "the body of the request was in an unknown format - "
                                       "accepted media types include: application/json, "
                                       "application/yaml"));
    }
    c.bodyText = fromProto.dump();
  }
  c.fieldValidation = c.req.Query("fieldValidation");
  c.dryRun = c.req.Query("dryRun") == "All";
  c.wantTable = c.req.Header("accept").find("as=Table") != std::string::npos;
  return std::nullopt;
}

// ---- admission

// Pod Security Admission on a new pod: the denial when its namespace's level refuses it.
std::optional<Outcome> PodSecurityDenial(const Impl& s, const Call& c, const Json& obj,
                                         const std::string& objName) {
  const Json* nsObj = s.FindObject(*s.FindType("", "namespaces"), "", c.info.ns);
  std::string level;
  const std::string why = nsObj == nullptr ? "" : PodSecurityViolations(*nsObj, obj, &level);
  if (why.empty()) return std::nullopt;
  return Err(403, "Forbidden",
             "pods \"" + objName + "\" is forbidden: violates PodSecurity \"" + level +
                 ":latest\": " + why,
             {{"name", objName}, {"kind", "pods"}});
}

// A ValidatingAdmissionPolicy whose expressions do not compile is refused.
std::optional<Outcome> PolicyCompileErrors(const ResourceType& t, const Json& obj,
                                           const std::string& objName) {
  std::vector<FieldError> errs;
  for (const auto& e : CheckPolicyExpressions(obj)) {
    const size_t colon = e.find(": ");
    errs.push_back({"FieldValueInvalid", e.substr(0, colon),
                    "Invalid value: \"...\": compilation failed: " + e.substr(colon + 2)});
  }
  if (errs.empty()) return std::nullopt;
  return Invalid(t, objName, errs);
}

// Admission after authorization, before storage: the test hook, Pod Security, owner
// references, then the stored ValidatingAdmissionPolicies (admission_policy.cc). `old`: the
// stored object of an UPDATE.
std::optional<Outcome> Admit(Impl& s, Call& c, const Json& obj, const Json* old) {
  const RequestInfo& info = c.info;
  const ResourceType& t = c.t;
  const std::string objName = obj.value("metadata", Json::object()).value("name", info.name);
  if (s.admission) {
    Status st = s.admission(c.record, obj);
    if (!st.ok()) {
      return Err(403, "Forbidden",
                 t.qualified() + " \"" + objName + "\" is forbidden: " + st.message(),
                 {{"name", info.name}, {"group", t.group}, {"kind", t.plural}});
    }
  }
  if (t.key() == "/pods" && old == nullptr && info.subresource.empty()) {
    if (auto denied = PodSecurityDenial(s, c, obj, objName)) return denied;
  }
  if (s.opts.ownerReferencesPermissionEnforcement) {
    if (auto denied = s.EnforceOwnerReferencePermissions(t, info.ns, objName, c.user, obj, old,
                                                         &c.record.admissionChecks)) {
      return denied;
    }
  }
  if (t.key() == "admissionregistration.k8s.io/validatingadmissionpolicies") {
    if (auto invalid = PolicyCompileErrors(t, obj, objName)) return invalid;
  }
  AdmissionRequest ar;
  ar.type = &t;
  ar.version = info.version;
  ar.subresource = info.subresource;
  ar.operation = old == nullptr ? "CREATE" : "UPDATE";
  ar.ns = info.ns;
  ar.name = objName;
  ar.dryRun = c.dryRun;
  ar.user = &c.user;
  ar.object = &obj;
  ar.oldObject = old;
  if (t.namespaced && !info.ns.empty()) {
    ar.namespaceObject = s.FindObject(*s.FindType("", "namespaces"), "", info.ns);
  }
  return EvaluateAdmissionPolicies(
      s.ObjectsOf("admissionregistration.k8s.io/validatingadmissionpolicies"),
      s.ObjectsOf("admissionregistration.k8s.io/validatingadmissionpolicybindings"), ar);
}

// A denial answers with its own code but is logged as 403, whatever admission said.
Reply Denied(const Outcome& denied) {
  Reply r = OutcomeReply(denied);
  r.recordedCode = 403;
  return r;
}

// ---- reviews, and subresources other than status

// Create-only virtual resources (SelfSubjectReview, SelfSubjectAccessReview): never stored.
Reply ServeReview(const Impl& s, Call& c) {
  bool ok = false;
  Json body = ParseBody(c.bodyText, &ok);
  if (!ok || !body.is_object()) body = Json::object();
  Json out = body;
  if (c.t.kind == "SelfSubjectReview") {
    Json extra = Json::object();
    for (const auto& [k, v] : c.user.extra) extra[k] = v;
    out["status"] = {
        {"userInfo", {{"username", c.user.name}, {"groups", c.user.groups}, {"extra", extra}}}};
    if (!c.user.uid.empty()) out["status"]["userInfo"]["uid"] = c.user.uid;
  } else if (c.t.kind == "SelfSubjectAccessReview") {
    const Json ra = body.value("spec", Json::object()).value("resourceAttributes", Json::object());
    const Json nra =
        body.value("spec", Json::object()).value("nonResourceAttributes", Json::object());
    bool allowed =
        ra.is_object() && !ra.empty()
            ? s.Authorize(c.user, ra.value("verb", ""), ra.value("group", ""),
                          ra.value("resource", ""), ra.value("subresource", ""),
                          ra.value("namespace", ""), ra.value("name", ""), "")
            : s.Authorize(c.user, nra.value("verb", ""), "", "", "", "", "", nra.value("path", ""));
    out["status"] = {{"allowed", allowed}};
  }
  out["apiVersion"] = c.t.apiVersion();
  out["kind"] = c.t.kind;
  return JsonReply(201, std::move(out));
}

// The file's text from byte `offset` on ("" when it cannot be read).
std::string ReadFileFrom(const std::string& path, long offset) {
  std::string text;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    std::fseek(f, offset, SEEK_SET);
    char buf[8192];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
  }
  return text;
}

// The last `want` lines of `text`.
std::string TailLines(const std::string& text, long want) {
  size_t pos = text.size();
  if (!text.empty() && text.back() == '\n') --pos;
  long lines = 0;
  while (pos > 0) {
    if (text[pos - 1] == '\n' && ++lines == want) break;
    --pos;
  }
  return text.substr(pos);
}

// kubectl logs -f: streams what the process writes until it ends (or kube-sim stops).
void FollowPodLog(const Impl& s, HttpResponder& resp, const std::string& logPath,
                  const std::string& uid, std::string text) {
  if (!resp.StartChunked(200, "text/plain") || !resp.WriteChunk(text)) return;
  long offset = 0;
  if (FILE* f = std::fopen(logPath.c_str(), "rb")) {
    std::fseek(f, 0, SEEK_END);
    offset = std::ftell(f);
    std::fclose(f);
  }
  for (;;) {
    bool done = false;
    {
      std::shared_lock followLock(s.mu);
      s.cv.wait_for(followLock, std::chrono::milliseconds(100));
      auto r = s.runs.find(uid);
      done = s.stopping || r == s.runs.end() || r->second.finished;
    }
    std::string chunk = ReadFileFrom(logPath, offset);
    offset += static_cast<long>(chunk.size());
    if (!resp.WriteChunk(chunk)) return;
    if (done) break;
  }
  resp.EndChunked();
}

Reply ServePodLog(const Impl& s, Call& c) {
  const Json* pod = s.FindObject(c.t, c.info.ns, c.info.name);
  if (pod == nullptr) return OutcomeReply(NotFound(c.t, c.info.name));
  std::string logPath;
  std::string text;
  std::string uid;
  auto run = s.runs.find((*pod)["metadata"].value("uid", ""));
  if (run != s.runs.end()) {
    uid = run->first;
    logPath = run->second.logPath;
    text = run->second.logText;
  }
  Reply r;
  r.stream = [&s, &c, logPath, text, uid](HttpResponder& resp) mutable {
    if (!logPath.empty()) text += ReadFileFrom(logPath, 0);
    if (!c.req.Query("tailLines").empty())
      text = TailLines(text, std::stol(c.req.Query("tailLines")));
    if (!Truthy(c.req.Query("follow")) || logPath.empty()) {
      resp.Send(200, "text/plain", text);
      return;
    }
    FollowPodLog(s, resp, logPath, uid, std::move(text));
  };
  return r;
}

Reply ServeTokenRequest(Impl& s, Call& c) {
  bool ok = false;
  Json body = ParseBody(c.bodyText, &ok);
  if (!ok || !body.is_object()) body = Json::object();
  const Json spec = body.value("spec", Json::object());
  const Json bound = spec.value("boundObjectRef", Json::object());
  std::string podName = bound.value("kind", "") == "Pod" ? bound.value("name", "") : "";
  int exp = spec.value("expirationSeconds", 3600);
  Json claims;
  Result<std::string> tok = s.IssueTokenLocked(c.info.ns, c.info.name, podName, exp, &claims);
  if (!tok.ok()) return JsonReply(404, StatusBody(404, "NotFound", tok.status().message()));
  body["apiVersion"] = "authentication.k8s.io/v1";
  body["kind"] = "TokenRequest";
  body["status"] = {{"token", *tok}, {"expirationTimestamp", NowRfc3339()}};
  return JsonReply(201, std::move(body));
}

Reply ServeBinding(Impl& s, Call& c) {
  bool ok = false;
  Json body = ParseBody(c.bodyText, &ok);
  Json* pod = s.FindObject(c.t, c.info.ns, c.info.name);
  Outcome o = pod == nullptr ? NotFound(c.t, c.info.name) : Outcome{201, StatusBody(201, "", "")};
  if (pod != nullptr) {
    Json updated = *pod;
    updated["spec"]["nodeName"] = body.value("target", Json::object()).value("name", "");
    o = s.ReplaceLocked(c.t, c.info.ns, c.info.name, updated, false, false, "", nullptr);
    if (o.ok()) o = {201, StatusBody(201, "", "")};
  }
  return OutcomeReply(o);
}

Reply ServeEviction(Impl& s, Call& c) {
  bool ok = false;
  Json body = ParseBody(c.bodyText, &ok);
  return OutcomeReply(s.EvictLocked(c.info.ns, c.info.name, ok ? body : Json::object()));
}

Reply ServeNotFound(const Impl& /*s*/, Call& /*c*/) { return NotFoundPath(); }

// ---- reads

Reply ServeGet(const Impl& s, Call& c) {
  const Json* obj = s.FindObject(c.t, c.info.ns, c.info.name);
  if (obj == nullptr) return OutcomeReply(NotFound(c.t, c.info.name));
  return JsonReply(200,
                   c.wantTable ? s.BuildTable(c.t, {*obj}, c.req.Query("includeObject")) : *obj);
}

// Where a list starts: its resourceVersion and, for a continued list, the key after which it
// goes on; or the refusal of an invalid or expired continue token or resourceVersion.
std::optional<Reply> ListStart(const Impl& s, const Call& c, uint64_t* listRv,
                               std::string* startAfter) {
  *listRv = s.rv;
  const std::string cont = c.req.Query("continue");
  if (!cont.empty()) {
    Result<std::string> raw = Base64Decode(cont);
    Json tok = raw.ok() ? Json::parse(*raw, nullptr, false) : Json();
    if (!tok.is_object()) {
      return OutcomeReply(BadRequest("continue key is not valid: illegal base64 data"));
    }
    *listRv = tok.value("rv", 0ULL);
    *startAfter = tok.value("start", "");
    if (*listRv < s.historyFloor) {
      return JsonReply(
          410, StatusBody(410, "Expired",
                          "The provided continue parameter is too old to display a consistent "
                          "list result. You can start a new list without the continue "
                          "parameter, or use the continue token in this response to retrieve "
                          "the remainder of the results. Continuing with the provided token "
                          "results in an inconsistent list - objects that were created, "
                          "modified, or deleted between the time the first chunk was returned "
                          "and now may show up in the list."));
    }
  }
  if (c.req.Query("resourceVersionMatch") == "Exact" && !c.req.Query("resourceVersion").empty()) {
    uint64_t want = std::strtoull(c.req.Query("resourceVersion").c_str(), nullptr, 10);
    if (want < s.historyFloor) {
      return JsonReply(410, StatusBody(410, "Expired",
                                       "too old resource version: " + std::to_string(want) + " (" +
                                           std::to_string(s.historyFloor) + ")"));
    }
  }
  return std::nullopt;
}

Reply ServeList(const Impl& s, Call& c) {
  const std::string labelSel = c.req.Query("labelSelector");
  const std::string fieldSel = c.req.Query("fieldSelector");
  const long limit = c.req.Query("limit").empty() ? 0 : std::stol(c.req.Query("limit"));
  uint64_t listRv = 0;
  std::string startAfter;
  if (std::optional<Reply> refused = ListStart(s, c, &listRv, &startAfter)) return *refused;
  std::vector<Json> items;
  std::string nextKey;
  for (const auto& [k, o] : s.ObjectsOf(c.t.key())) {
    if (!startAfter.empty() && k <= startAfter) continue;
    if (c.t.namespaced && !c.info.ns.empty() && o["metadata"].value("namespace", "") != c.info.ns)
      continue;
    std::string err;
    if (!labelSel.empty() &&
        !MatchLabelSelector(labelSel, o["metadata"].value("labels", Json::object()), &err)) {
      if (!err.empty()) return OutcomeReply(BadRequest(err));
      continue;
    }
    if (!fieldSel.empty() && !MatchFieldSelector(fieldSel, o, nullptr)) continue;
    if (limit > 0 && static_cast<long>(items.size()) == limit) {
      nextKey = "more";
      break;
    }
    items.push_back(o);
    startAfter.clear();
    nextKey.clear();
  }
  Json meta = {{"resourceVersion", std::to_string(listRv)}};
  if (!nextKey.empty() && !items.empty()) {
    std::string lastKey = (c.t.namespaced ? items.back()["metadata"].value("namespace", "") : "") +
                          "/" + items.back()["metadata"].value("name", "");
    meta["continue"] = Base64Encode(Json{{"rv", listRv}, {"start", lastKey}}.dump());
  }
  if (c.wantTable) {
    Json table = s.BuildTable(c.t, items, c.req.Query("includeObject"));
    table["metadata"] = meta;
    return JsonReply(200, std::move(table));
  }
  return JsonReply(200, {{"kind", c.t.kind + "List"},
                         {"apiVersion", c.t.apiVersion()},
                         {"metadata", meta},
                         {"items", std::move(items)}});
}

Reply ServeWatchRoute(const Impl& s, Call& c) {
  Reply r;
  r.stream = [&s, &c](HttpResponder& resp) { s.ServeWatch(c.req, resp, c.t, c.info.ns); };
  return r;
}

// ---- writes

Reply ServeCreate(Impl& s, Call& c) {
  bool ok = false;
  Json body = ParseBody(c.bodyText, &ok);
  if (!ok) return OutcomeReply(BadRequest("the body of the request was in an unknown format"));
  if (auto denied = Admit(s, c, body, nullptr)) return Denied(*denied);
  std::vector<std::string> warnings;
  Outcome o = s.CreateLocked(c.t, c.info.ns, body, c.dryRun, c.fieldValidation, &warnings);
  return OutcomeReply(o, std::move(warnings));
}

// The object an update or patch asks for: the body (update), or the stored object `cur` with
// the patch applied as its content type says; or the refusal of the patch.
std::optional<Reply> PatchTarget(const Call& c, const Json& cur, const Json& body,
                                 const std::string& ctype, Json* target) {
  if (c.info.verb == "update") {
    *target = body;
  } else if (ctype.find("json-patch") != std::string::npos) {
    try {
      *target = cur.patch(body);
    } catch (const std::exception& e) {
      return OutcomeReply(
          Err(422, "Invalid",
              std::string("the server rejected our request due to an error in our request: ") +
                  e.what()));
    }
  } else if (ctype.find("strategic-merge-patch") != std::string::npos) {
    if (c.t.crd) {
      return JsonReply(415, StatusBody(415, "UnsupportedMediaType",
                                       "the body of the request was in an unknown format - "
                                       "accepted media types include: "
                                       "application/json-patch+json, "
                                       "application/merge-patch+json, "
                                       "application/apply-patch+yaml"));
    }
    *target = StrategicMerge(cur, body);
  } else {
    *target = cur;
    target->merge_patch(body);
  }
  if (c.info.verb == "patch" && !(body.is_object() && body.contains("metadata") &&
                                  body["metadata"].contains("resourceVersion"))) {
    (*target)["metadata"]["resourceVersion"] = cur["metadata"].value("resourceVersion", "");
  }
  return std::nullopt;
}

Reply ServeUpdate(Impl& s, Call& c) {
  const bool statusOnly = c.info.subresource == "status";
  Json* cur = s.FindObject(c.t, c.info.ns, c.info.name);
  const std::string ctype = c.req.Header("content-type");
  const bool apply = ctype.find("apply-patch") != std::string::npos;
  bool ok = false;
  Json body = ParseBody(c.bodyText, &ok);
  if (!ok) return OutcomeReply(BadRequest("the body of the request was in an unknown format"));
  std::vector<std::string> warnings;
  if (cur == nullptr) {
    Outcome o = NotFound(c.t, c.info.name);
    if (apply && !statusOnly) {  // server-side apply creates
      if (!body.contains("metadata")) body["metadata"] = Json::object();
      body["metadata"]["name"] = c.info.name;
      o = s.CreateLocked(c.t, c.info.ns, body, c.dryRun, c.fieldValidation, &warnings);
    }
    return OutcomeReply(o, std::move(warnings));
  }
  Json target;
  if (std::optional<Reply> refused = PatchTarget(c, *cur, body, ctype, &target)) return *refused;
  if (auto denied = Admit(s, c, target, cur)) return Denied(*denied);
  Outcome o = s.ReplaceLocked(c.t, c.info.ns, c.info.name, target, statusOnly, c.dryRun,
                              c.fieldValidation, &warnings);
  return OutcomeReply(o, std::move(warnings));
}

// DeleteOptions from the body, or else the query.
DeleteOptions DeleteOptionsOf(const Call& c) {
  bool ok = false;
  Json body = c.bodyText.empty() ? Json::object() : ParseBody(c.bodyText, &ok);
  if (!body.is_object()) body = Json::object();
  DeleteOptions options;
  options.propagationPolicy = body.value("propagationPolicy", c.req.Query("propagationPolicy"));
  if (body.contains("orphanDependents") && body["orphanDependents"].is_boolean() &&
      body["orphanDependents"].get<bool>()) {
    options.propagationPolicy = "Orphan";
  }
  if (body.contains("gracePeriodSeconds") && body["gracePeriodSeconds"].is_number()) {
    options.gracePeriodSeconds = body["gracePeriodSeconds"].get<long>();
  } else if (!c.req.Query("gracePeriodSeconds").empty()) {
    options.gracePeriodSeconds = std::stol(c.req.Query("gracePeriodSeconds"));
  }
  const Json pre = body.value("preconditions", Json::object());
  options.preconditionUid = pre.is_object() ? pre.value("uid", "") : "";
  options.preconditionResourceVersion = pre.is_object() ? pre.value("resourceVersion", "") : "";
  options.dryRun = c.dryRun || (body.contains("dryRun") && !body["dryRun"].empty());
  return options;
}

Reply ServeDelete(Impl& s, Call& c) {
  return OutcomeReply(s.DeleteLocked(c.t, c.info.ns, c.info.name, DeleteOptionsOf(c)));
}

Reply ServeDeleteCollection(Impl& s, Call& c) {
  const DeleteOptions options = DeleteOptionsOf(c);
  const std::string labelSel = c.req.Query("labelSelector");
  const std::string fieldSel = c.req.Query("fieldSelector");
  std::vector<std::string> names;
  for (const auto& [k, o] : s.ObjectsOf(c.t.key())) {
    if (c.t.namespaced && !c.info.ns.empty() && o["metadata"].value("namespace", "") != c.info.ns)
      continue;
    if (!labelSel.empty() &&
        !MatchLabelSelector(labelSel, o["metadata"].value("labels", Json::object()), nullptr))
      continue;
    if (!fieldSel.empty() && !MatchFieldSelector(fieldSel, o, nullptr)) continue;
    names.push_back(o["metadata"].value("name", ""));
  }
  for (const auto& n : names) s.DeleteLocked(c.t, c.info.ns, n, options);
  return JsonReply(200, StatusBody(200, "", ""));
}

// ---- the route table

// A route: the requests it serves and its handler, a reader (the store read-only: it may hold
// the lock shared) or a writer (it holds the lock alone). The first route that matches serves.
struct Route {
  bool (*matches)(const Call&);
  Reply (*read)(const Impl&, Call&);
  Reply (*write)(Impl&, Call&);
};

bool Sub(const Call& c, const char* subresource, const char* key) {
  return c.info.subresource == subresource && c.t.key() == key;
}

const Route kRoutes[] = {
    {[](const Call& c) { return c.t.virtualOnly; }, ServeReview, nullptr},
    {[](const Call& c) { return Sub(c, "log", "/pods"); }, ServePodLog, nullptr},
    {[](const Call& c) { return Sub(c, "token", "/serviceaccounts"); }, nullptr, ServeTokenRequest},
    {[](const Call& c) { return Sub(c, "binding", "/pods"); }, nullptr, ServeBinding},
    {[](const Call& c) { return Sub(c, "eviction", "/pods") && c.req.method == "POST"; }, nullptr,
     ServeEviction},
    {[](const Call& c) { return !c.info.subresource.empty() && c.info.subresource != "status"; },
     ServeNotFound, nullptr},
    {[](const Call& c) { return c.info.subresource == "status" && !c.t.statusSubresource; },
     ServeNotFound, nullptr},
    {[](const Call& c) { return c.info.verb == "get"; }, ServeGet, nullptr},
    {[](const Call& c) { return c.info.verb == "list"; }, ServeList, nullptr},
    {[](const Call& c) { return c.info.verb == "watch"; }, ServeWatchRoute, nullptr},
    {[](const Call& c) { return c.info.verb == "create"; }, nullptr, ServeCreate},
    {[](const Call& c) { return c.info.verb == "update" || c.info.verb == "patch"; }, nullptr,
     ServeUpdate},
    {[](const Call& c) { return c.info.verb == "delete"; }, nullptr, ServeDelete},
    {[](const Call& c) { return c.info.verb == "deletecollection"; }, nullptr,
     ServeDeleteCollection},
};

Reply ServeResource(Impl& s, Call& c, ApiLock& lock) {
  for (const Route& route : kRoutes) {
    if (!route.matches(c)) continue;
    if (route.read != nullptr) return route.read(s, c);
    lock.MakeExclusive();  // a GET of a binding or a token writes
    return route.write(s, c);
  }
  return JsonReply(405, StatusBody(405, "MethodNotAllowed",
                                   "the server does not allow this method on the requested "
                                   "resource"));
}

Reply Serve(Impl& s, Call& c, ApiLock& lock) {
  std::optional<UserInfo> user = s.Authenticate(c.req);
  if (!user) {
    Reply r = JsonReply(401, StatusBody(401, "Unauthorized", "Unauthorized"));
    r.recorded = false;
    return r;
  }
  c.user = std::move(*user);
  const RequestInfo& info = c.info;
  c.record =
      RequestRecord{{info.verb, info.group, info.resource, info.subresource, info.ns, info.name},
                    c.user.name,
                    c.user.groups,
                    c.user.extra,
                    0,
                    "",
                    {},
                    {},
                    c.req.Header("user-agent")};
  if (std::optional<Reply> fault = TakeFault(s, c, lock)) return *fault;
  if (c.isAdminPath) return ServeAdmin(s, c);
  if (!info.isResource) return ServeNonResource(s, c);
  if (std::optional<Reply> refused = ResolveResource(s, c)) return *refused;
  return ServeResource(s, c, lock);
}

}  // namespace

void KubeSim::Impl::Handle(const HttpRequest& req, HttpResponder& resp) {
  if (!opts.quiet) std::fprintf(stderr, "kube-sim: %s %s\n", req.method.c_str(), req.path.c_str());
  if (ServeServerInfo(req, resp)) return;
  Call c{req, ParseRequestInfo(req)};
  c.isAdminPath = req.path.rfind("/kube-sim/", 0) == 0;
  // GET and HEAD read; kube-sim's admin endpoint and every other method write.
  const bool writes = c.isAdminPath || (req.method != "GET" && req.method != "HEAD");
  ApiLock lock(mu, writes);
  Reply r = Serve(*this, c, lock);
  if (r.recorded) Record(*this, c, r.recordedCode.value_or(r.code));
  lock.unlock();
  Send(resp, r);
}

}  // namespace perfgate::kubesim
