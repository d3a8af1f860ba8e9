// kube-sim's HTTP API: routing, discovery, OpenAPI, tables, watches, patches, subresources,
// authentication/authorization and fault injection in front of the store.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <sstream>

#include "tests/kube-sim/impl.h"

namespace perfgate::kubesim {
namespace {

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream ss(path);
  std::string p;
  while (std::getline(ss, p, '/')) {
    if (!p.empty()) parts.push_back(p);
  }
  return parts;
}

bool Truthy(const std::string& s) { return s == "1" || s == "true" || s == "True"; }

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

Json ObjectMetaOnly(const Json& obj) {
  return {{"kind", "PartialObjectMetadata"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", obj.value("metadata", Json::object())}};
}

std::string Age(const Json& obj) {
  std::string ts = obj["metadata"].value("creationTimestamp", "");
  if (ts.empty()) return "<unknown>";
  auto age = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::system_clock::now() -
      ParseRfc3339(ts).value_or(std::chrono::system_clock::time_point{}));
  return HumanDuration(age);
}

Json Column(const std::string& name, const std::string& type, const std::string& format = "",
            int priority = 0) {
  return {{"name", name},
          {"type", type},
          {"format", format},
          {"description", name},
          {"priority", priority}};
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

}  // namespace

Json KubeSim::Impl::BuildTable(const ResourceType& t, const std::vector<Json>& items,
                               const std::string& includeObject) const {
  Json cols = Json::array();
  cols.push_back(Column("Name", "string", "name"));
  std::vector<std::function<Json(const Json&)>> cells;
  cells.push_back([](const Json& o) { return o["metadata"].value("name", ""); });
  auto age = [](const Json& o) { return Json(Age(o)); };
  if (t.crd) {
    if (t.printerColumns.empty()) {
      cols.push_back(Column("Age", "date"));
      cells.push_back(age);
    }
    for (const auto& pc : t.printerColumns) {
      std::string type = pc.value("type", "string");
      cols.push_back(
          Column(pc.value("name", ""), type, pc.value("format", ""), pc.value("priority", 0)));
      std::string path = pc.value("jsonPath", "");
      cells.push_back([path, type](const Json& o) -> Json {
        std::vector<Json> got = JsonPathEval(o, path);
        if (got.empty() || got[0].is_null()) return nullptr;
        if (type == "date" && got[0].is_string()) {
          auto a = std::chrono::duration_cast<std::chrono::seconds>(
              std::chrono::system_clock::now() -
              ParseRfc3339(got[0].get<std::string>())
                  .value_or(std::chrono::system_clock::time_point{}));
          return HumanDuration(a);
        }
        if (type == "string" && !got[0].is_string()) return got[0].dump();
        return got[0];
      });
    }
  } else if (t.key() == "/pods") {
    cols.push_back(Column("Ready", "string"));
    cells.push_back([](const Json& o) {
      int total = static_cast<int>(o["spec"].value("containers", Json::array()).size());
      int ready = 0;
      for (const auto& cs :
           o.value("status", Json::object()).value("containerStatuses", Json::array())) {
        if (cs.value("ready", false)) ++ready;
      }
      return Json(std::to_string(ready) + "/" + std::to_string(total));
    });
    cols.push_back(Column("Status", "string"));
    cells.push_back([](const Json& o) {
      const Json st = o.value("status", Json::object());
      std::string s = st.value("phase", "Pending");
      for (const auto& cs : st.value("containerStatuses", Json::array())) {
        const Json state = cs.value("state", Json::object());
        if (state.contains("terminated")) s = state["terminated"].value("reason", s);
      }
      if (st.contains("reason")) s = st["reason"].get<std::string>();
      if (o["metadata"].contains("deletionTimestamp")) s = "Terminating";
      return Json(s);
    });
    cols.push_back(Column("Restarts", "integer"));
    cells.push_back([](const Json& o) {
      int r = 0;
      for (const auto& cs :
           o.value("status", Json::object()).value("containerStatuses", Json::array())) {
        r += cs.value("restartCount", 0);
      }
      return Json(r);
    });
    cols.push_back(Column("Age", "string"));
    cells.push_back(age);
    cols.push_back(Column("IP", "string", "", 1));
    cells.push_back([](const Json& o) {
      return Json(o.value("status", Json::object()).value("podIP", "<none>"));
    });
    cols.push_back(Column("Node", "string", "", 1));
    cells.push_back([](const Json& o) { return Json(o["spec"].value("nodeName", "<none>")); });
  } else if (t.key() == "/nodes") {
    cols.push_back(Column("Status", "string"));
    cells.push_back([](const Json& o) {
      std::string s = "NotReady";
      for (const auto& c : o.value("status", Json::object()).value("conditions", Json::array())) {
        if (c.value("type", "") == "Ready" && c.value("status", "") == "True") s = "Ready";
      }
      if (o["spec"].value("unschedulable", false)) s += ",SchedulingDisabled";
      return Json(s);
    });
    cols.push_back(Column("Roles", "string"));
    cells.push_back([](const Json&) { return Json("<none>"); });
    cols.push_back(Column("Age", "string"));
    cells.push_back(age);
    cols.push_back(Column("Version", "string"));
    cells.push_back([](const Json& o) {
      return Json(o.value("status", Json::object())
                      .value("nodeInfo", Json::object())
                      .value("kubeletVersion", ""));
    });
  } else if (t.key() == "/namespaces") {
    cols.push_back(Column("Status", "string"));
    cells.push_back(
        [](const Json& o) { return Json(o.value("status", Json::object()).value("phase", "")); });
    cols.push_back(Column("Age", "string"));
    cells.push_back(age);
  } else if (t.key() == "/configmaps" || t.key() == "/secrets") {
    cols.push_back(Column("Data", "integer"));
    cells.push_back([](const Json& o) {
      return Json(o.value("data", Json::object()).size() +
                  o.value("binaryData", Json::object()).size());
    });
    cols.push_back(Column("Age", "string"));
    cells.push_back(age);
  } else if (t.kind == "Event") {
    cols.clear();
    cells.clear();
    cols.push_back(Column("Last Seen", "string"));
    cells.push_back([](const Json& o) {
      std::string ts = o.value("lastTimestamp", o["metadata"].value("creationTimestamp", ""));
      return Json(HumanDuration(std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::system_clock::now() -
          ParseRfc3339(ts).value_or(std::chrono::system_clock::time_point{}))));
    });
    cols.push_back(Column("Type", "string"));
    cells.push_back([](const Json& o) { return Json(o.value("type", "")); });
    cols.push_back(Column("Reason", "string"));
    cells.push_back([](const Json& o) { return Json(o.value("reason", "")); });
    cols.push_back(Column("Object", "string"));
    cells.push_back([](const Json& o) {
      const Json io = o.value("involvedObject", Json::object());
      std::string kind = io.value("kind", "");
      for (char& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return Json(kind + "/" + io.value("name", ""));
    });
    cols.push_back(Column("Message", "string"));
    cells.push_back([](const Json& o) { return Json(o.value("message", "")); });
  } else if (t.key() == "apiextensions.k8s.io/customresourcedefinitions") {
    cols.push_back(Column("Created At", "date"));
    cells.push_back(
        [](const Json& o) { return Json(o["metadata"].value("creationTimestamp", "")); });
  } else {
    cols.push_back(Column("Age", "string"));
    cells.push_back(age);
  }
  Json rows = Json::array();
  for (const auto& o : items) {
    Json row = {{"cells", Json::array()}};
    for (const auto& c : cells) row["cells"].push_back(c(o));
    if (includeObject == "Object") {
      row["object"] = o;
    } else if (includeObject != "None") {
      row["object"] = ObjectMetaOnly(o);
    }
    rows.push_back(row);
  }
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", {{"resourceVersion", std::to_string(rv)}}},
          {"columnDefinitions", cols},
          {"rows", rows}};
}

Json KubeSim::Impl::Discovery(const std::string& path, bool* found) const {
  *found = true;
  auto resourceList = [&](const std::string& group, const std::string& version) {
    Json list = Json::array();
    for (const auto& [k, t] : types) {
      if (t.group != group || t.version != version) continue;
      Json verbs =
          t.virtualOnly ? Json{"create"} : Json{"create", "delete", "deletecollection", "get",
                                                "list",   "patch",  "update",           "watch"};
      Json r = {{"name", t.plural},
                {"singularName", t.singular},
                {"namespaced", t.namespaced},
                {"kind", t.kind},
                {"verbs", verbs}};
      if (!t.shortNames.empty()) r["shortNames"] = t.shortNames;
      if (!t.categories.empty()) r["categories"] = t.categories;
      list.push_back(r);
      if (t.statusSubresource) {
        list.push_back({{"name", t.plural + "/status"},
                        {"singularName", ""},
                        {"namespaced", t.namespaced},
                        {"kind", t.kind},
                        {"verbs", {"get", "patch", "update"}}});
      }
      for (const auto& sub : t.extraSubresources) {
        list.push_back({{"name", t.plural + "/" + sub},
                        {"singularName", ""},
                        {"namespaced", t.namespaced},
                        {"kind", sub == "token" ? "TokenRequest" : t.kind},
                        {"verbs", sub == "log" ? Json{"get"} : Json{"create"}}});
      }
    }
    return Json{{"kind", "APIResourceList"},
                {"apiVersion", "v1"},
                {"groupVersion", group.empty() ? version : group + "/" + version},
                {"resources", list}};
  };
  if (path == "/api") {
    return {{"kind", "APIVersions"},
            {"versions", {"v1"}},
            {"serverAddressByClientCIDRs",
             {{{"clientCIDR", "0.0.0.0/0"},
               {"serverAddress", opts.host + ":" + std::to_string(server.port())}}}}};
  }
  if (path == "/api/v1") return resourceList("", "v1");
  if (path == "/apis") {
    std::map<std::string, std::string> groups;
    for (const auto& [k, t] : types) {
      if (!t.group.empty()) groups[t.group] = t.version;
    }
    Json list = Json::array();
    for (const auto& [g, v] : groups) {
      Json gv = {{"groupVersion", g + "/" + v}, {"version", v}};
      list.push_back({{"name", g}, {"versions", {gv}}, {"preferredVersion", gv}});
    }
    return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", list}};
  }
  std::vector<std::string> parts = SplitPath(path);
  if (parts.size() == 2 && parts[0] == "apis") {
    for (const auto& [k, t] : types) {
      if (t.group == parts[1]) {
        Json gv = {{"groupVersion", t.group + "/" + t.version}, {"version", t.version}};
        return {{"kind", "APIGroup"},
                {"apiVersion", "v1"},
                {"name", t.group},
                {"versions", {gv}},
                {"preferredVersion", gv}};
      }
    }
  }
  if (parts.size() == 3 && parts[0] == "apis") {
    for (const auto& [k, t] : types) {
      if (t.group == parts[1] && t.version == parts[2]) return resourceList(parts[1], parts[2]);
    }
  }
  *found = false;
  return nullptr;
}

Json KubeSim::Impl::OpenApiV3(const std::string& gvPath, bool* found) const {
  *found = true;
  if (gvPath.empty()) {
    Json paths = Json::object();
    std::set<std::string> gvs;
    for (const auto& [k, t] : types) {
      gvs.insert(t.group.empty() ? "api/" + t.version : "apis/" + t.group + "/" + t.version);
    }
    for (const auto& gv : gvs) {
      bool f = false;
      std::string hash = std::to_string(std::hash<std::string>{}(OpenApiV3(gv, &f).dump()));
      paths[gv] = {{"serverRelativeURL", "/openapi/v3/" + gv + "?hash=" + hash}};
    }
    return {{"paths", paths}};
  }
  Json paths = Json::object();
  Json schemas = Json::object();
  bool any = false;
  for (const auto& [k, t] : types) {
    std::string gv = t.group.empty() ? "api/" + t.version : "apis/" + t.group + "/" + t.version;
    if (gv != gvPath) continue;
    any = true;
    std::string base = "/" + gv + (t.namespaced ? "/namespaces/{namespace}/" : "/") + t.plural;
    Json gvk = {{"group", t.group}, {"version", t.version}, {"kind", t.kind}};
    Json fv = {{"name", "fieldValidation"},
               {"in", "query"},
               {"schema", {{"type", "string"}, {"uniqueItems", true}}}};
    Json op = {{"x-kubernetes-group-version-kind", gvk},
               {"parameters", {fv}},
               {"responses", {{"200", {{"description", "OK"}}}}}};
    Json item = {{"get", op}, {"put", op}, {"patch", op}, {"delete", op}};
    paths[base + "/{name}"] = item;
    paths[base] = {{"post", op}, {"get", op}};
    if (t.statusSubresource) paths[base + "/{name}/status"] = item;
    std::string defName =
        (t.group.empty() ? "io.k8s.api.core." + t.version : t.group + "." + t.version) + "." +
        t.kind;
    Json schema = t.schema.is_object()
                      ? t.schema
                      : Json{{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
    schema["x-kubernetes-group-version-kind"] = {gvk};
    schemas[defName] = schema;
  }
  if (!any) {
    *found = false;
    return nullptr;
  }
  return {{"openapi", "3.0.0"},
          {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
          {"paths", paths},
          {"components", {{"schemas", schemas}}}};
}

void KubeSim::Impl::ServeWatch(const HttpRequest& req, HttpResponder& resp, const ResourceType& t,
                               const std::string& ns) {
  std::string labelSel = req.Query("labelSelector");
  std::string fieldSel = req.Query("fieldSelector");
  bool bookmarks = Truthy(req.Query("allowWatchBookmarks"));
  bool initialEvents = Truthy(req.Query("sendInitialEvents"));
  std::string rvParam = req.Query("resourceVersion");
  double timeoutSeconds = 1800;
  if (!req.Query("timeoutSeconds").empty()) timeoutSeconds = std::stod(req.Query("timeoutSeconds"));
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<long>(timeoutSeconds * 1000));
  auto matches = [&](const Json& o) {
    if (!o.is_object()) return false;
    if (t.namespaced && !ns.empty() && o["metadata"].value("namespace", "") != ns) return false;
    if (!labelSel.empty() &&
        !MatchLabelSelector(labelSel, o["metadata"].value("labels", Json::object()), nullptr)) {
      return false;
    }
    if (!fieldSel.empty() && !MatchFieldSelector(fieldSel, o, nullptr)) return false;
    return true;
  };
  // `kubectl get -w` asks for Table rows: each event carries a one-row Table, the first with
  // the column definitions, as kube-apiserver streams them.
  bool asTable = req.Header("accept").find("as=Table") != std::string::npos;
  std::string includeObject = req.Query("includeObject");
  bool columnsSent = false;
  // Field order as kube-apiserver writes it: type, then object.
  auto line = [&](const std::string& type, const Json& obj) {
    if (asTable && type != "ERROR" && type != "BOOKMARK") {
      Json table = BuildTable(t, {obj}, includeObject);
      if (columnsSent) table["columnDefinitions"] = Json::array();
      columnsSent = true;
      return "{\"type\":\"" + type + "\",\"object\":" + table.dump() + "}\n";
    }
    return "{\"type\":\"" + type + "\",\"object\":" + obj.dump() + "}\n";
  };

  std::unique_lock<std::mutex> lock(mu);
  std::vector<std::string> pending;
  uint64_t cursor = rv;
  if (rvParam.empty() || rvParam == "0" || initialEvents) {
    for (const auto& [k, o] : objects[t.key()]) {
      if (matches(o)) pending.push_back(line("ADDED", o));
    }
    if (initialEvents && bookmarks) {
      Json bm = {{"kind", t.kind},
                 {"apiVersion", t.apiVersion()},
                 {"metadata",
                  {{"resourceVersion", std::to_string(rv)},
                   {"annotations", {{"k8s.io/initial-events-end", "true"}}}}}};
      pending.push_back(line("BOOKMARK", bm));
    }
  } else {
    uint64_t from = std::strtoull(rvParam.c_str(), nullptr, 10);
    if (from < historyFloor) {
      Json st = StatusBody(410, "Expired",
                           "too old resource version: " + std::to_string(from) + " (" +
                               std::to_string(historyFloor) + ")");
      lock.unlock();
      resp.StartChunked(200, "application/json");
      resp.WriteChunk(line("ERROR", st));
      resp.EndChunked();
      return;
    }
    cursor = from;
  }
  uint64_t epoch = watchEpoch;
  lock.unlock();
  if (!resp.StartChunked(200, "application/json")) return;
  auto bookmarkEvery =
      std::chrono::milliseconds(static_cast<long>(opts.bookmarkIntervalSeconds * 1000));
  auto nextBookmark = std::chrono::steady_clock::now() + bookmarkEvery;
  for (;;) {
    for (const auto& p : pending) {
      if (!resp.WriteChunk(p)) return;
    }
    pending.clear();
    lock.lock();
    for (;;) {
      if (stopping || watchEpoch != epoch) {
        lock.unlock();
        resp.CloseAfter();  // an abrupt end, as a dropped connection looks to a client
        return;
      }
      if (cursor < historyFloor) {
        Json st = StatusBody(410, "Expired",
                             "too old resource version: " + std::to_string(cursor) + " (" +
                                 std::to_string(historyFloor) + ")");
        lock.unlock();
        resp.WriteChunk(line("ERROR", st));
        resp.EndChunked();
        return;
      }
      if (watchesHeld) {  // a watch stream stalled: nothing is sent, nothing is lost
        if (std::chrono::steady_clock::now() >= deadline) {
          lock.unlock();
          resp.EndChunked();
          return;
        }
        cv.wait_for(lock, std::chrono::milliseconds(50));
        continue;
      }
      auto it = std::upper_bound(history.begin(), history.end(), cursor,
                                 [](uint64_t c, const WatchEvent& e) { return c < e.rv; });
      for (; it != history.end(); ++it) {
        cursor = it->rv;
        if (it->resKey != t.key()) continue;
        bool now = matches(it->object);
        bool before = !it->previous.is_null() && matches(it->previous);
        std::string type = it->type;
        if (type == "ADDED" && !now) continue;
        if (type == "MODIFIED") {
          if (!now && !before) continue;
          if (now && !before) type = "ADDED";
          if (!now && before) type = "DELETED";
        }
        if (type == "DELETED" && !now && !before) continue;
        pending.push_back(line(type, it->object));
      }
      if (cursor < rv) cursor = rv;
      auto nowTp = std::chrono::steady_clock::now();
      if (!pending.empty()) break;
      if (nowTp >= deadline) {
        lock.unlock();
        resp.EndChunked();
        return;
      }
      if (bookmarks && nowTp >= nextBookmark) {
        Json bm = {{"kind", t.kind},
                   {"apiVersion", t.apiVersion()},
                   {"metadata", {{"resourceVersion", std::to_string(cursor)}}}};
        pending.push_back(line("BOOKMARK", bm));
        nextBookmark = nowTp + bookmarkEvery;
        break;
      }
      auto wake = deadline;
      if (bookmarks && nextBookmark < wake) wake = nextBookmark;
      cv.wait_until(lock, wake);
    }
    lock.unlock();
  }
}

void KubeSim::Impl::Handle(const HttpRequest& req, HttpResponder& resp) {
  auto sendJson = [&](int code, const Json& body, const std::vector<std::string>& warnings = {},
                      std::map<std::string, std::string> headers = {}) {
    if (!warnings.empty()) headers["Warning"] = WarningHeader(warnings);
    resp.Send(code, "application/json", body.dump(), headers);
  };
  auto sendOutcome = [&](const Outcome& o, const std::vector<std::string>& warnings = {}) {
    sendJson(o.code, o.body, warnings);
  };
  if (!opts.quiet) std::fprintf(stderr, "kube-sim: %s %s\n", req.method.c_str(), req.path.c_str());

  if (req.path == "/healthz" || req.path == "/livez" || req.path == "/readyz") {
    resp.Send(200, "text/plain", "ok");
    return;
  }
  if (req.path == "/version") {
    sendJson(200, {{"major", "1"},
                   {"minor", "32"},
                   {"gitVersion", "v1.32.0-kube-sim"},
                   {"gitCommit", "kube-sim"},
                   {"gitTreeState", "clean"},
                   {"buildDate", "2026-01-01T00:00:00Z"},
                   {"goVersion", "go1.23"},
                   {"compiler", "gc"},
                   {"platform", "linux/amd64"}});
    return;
  }

  std::unique_lock<std::mutex> lock(mu);
  std::optional<UserInfo> user = Authenticate(req);
  if (!user) {
    lock.unlock();
    sendJson(401, StatusBody(401, "Unauthorized", "Unauthorized"));
    return;
  }
  bool isAdminPath = req.path.rfind("/kube-sim/", 0) == 0;
  // A freeze holds the request, unanswered, until the thaw (never kube-sim's admin endpoint);
  // then it is answered 504 without being served, as kube-apiserver answers a request its
  // storage did not complete in time.
  const bool held = !isAdminPath && frozen;
  if (held) thawCv.wait(lock, [&] { return !frozen || stopping; });
  // Fault injection applies to the API, never to kube-sim's own admin endpoint.
  int latency = isAdminPath ? 0 : latencyMs;
  int fault = 0;
  int retryAfter = retryAfterSeconds;
  if (!isAdminPath) {
    if (throttleNext > 0) {
      --throttleNext;
      fault = 429;
    } else if (failNext > 0) {
      --failNext;
      fault = failCode;
    } else if (failureFraction > 0 &&
               std::uniform_real_distribution<double>(0, 1)(rng) < failureFraction) {
      fault = failureFractionCode;
    }
  }
  if (latency > 0) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(latency));
    lock.lock();
  }
  RequestInfo info = ParseRequestInfo(req);
  RequestRecord record{{info.verb, info.group, info.resource, info.subresource, info.ns, info.name},
                       user->name,
                       user->groups,
                       user->extra,
                       0,
                       "",
                       {},
                       {},
                       req.Header("user-agent")};
  auto finish = [&](int code) {
    record.code = code;
    record.time = std::chrono::system_clock::now();
    if (auditLog.is_open()) auditLog << AuditEvent(record, req.path) << '\n' << std::flush;
    if (requests.size() < 200000) requests.push_back(record);
  };
  if (held) {
    finish(504);
    lock.unlock();
    sendJson(504, StatusBody(504, "Timeout",
                             "Timeout: request did not complete within the allotted timeout"));
    return;
  }
  if (fault == 429) {
    finish(429);
    lock.unlock();
    sendJson(429,
             StatusBody(429, "TooManyRequests", "Too many requests, please try again later.",
                        {{"retryAfterSeconds", retryAfter}}),
             {}, {{"Retry-After", std::to_string(retryAfter)}});
    return;
  }
  if (fault != 0) {
    finish(fault);
    lock.unlock();
    sendJson(fault, StatusBody(fault, fault == 503 ? "ServiceUnavailable" : "InternalError",
                               "Internal error occurred: injected by kube-sim"));
    return;
  }

  // Admin endpoint: fault injection over HTTP, for a kube-sim started as a separate process.
  if (isAdminPath) {
    bool master =
        std::find(user->groups.begin(), user->groups.end(), "system:masters") != user->groups.end();
    if (!master || req.path != "/kube-sim/faults" || req.method != "POST") {
      lock.unlock();
      sendJson(master ? 404 : 403,
               StatusBody(master ? 404 : 403, master ? "NotFound" : "Forbidden",
                          "kube-sim admin: POST /kube-sim/faults (admin token)"));
      return;
    }
    Json f = Json::parse(req.body, nullptr, false);
    if (!f.is_object()) {
      lock.unlock();
      sendOutcome(BadRequest("kube-sim admin: body must be a JSON object"));
      return;
    }
    latencyMs = f.value("latencyMs", latencyMs);
    retryAfterSeconds = f.value("retryAfterSeconds", retryAfterSeconds);
    throttleNext = f.value("throttleNext", throttleNext);
    failNext = f.value("failNext", failNext);
    failCode = f.value("failCode", failCode);
    failureFraction = f.value("failureFraction", failureFraction);
    if (f.contains("freeze") && f["freeze"].is_boolean()) {
      frozen = f["freeze"].get<bool>();
      thawCv.notify_all();
    }
    if (f.value("dropWatches", false)) ++watchEpoch;
    if (f.value("expireHistory", false)) {
      history.clear();
      historyFloor = rv;
    }
    cv.notify_all();
    lock.unlock();
    sendJson(200, {{"ok", true}});
    return;
  }

  if (!info.isResource) {
    std::string path = req.path;
    const bool allowed = Authorize(*user, "get", "", "", "", "", "", path) || path == "/api" ||
                         path.rfind("/api/", 0) == 0 || path == "/apis" ||
                         path.rfind("/apis/", 0) == 0 || path.rfind("/openapi/", 0) == 0;
    record.decision = allowed ? "allow" : "forbid";
    if (!allowed) {
      finish(403);
      lock.unlock();
      sendJson(403, StatusBody(
                        403, "Forbidden",
                        "forbidden: User \"" + user->name + "\" cannot get path \"" + path + "\""));
      return;
    }
    finish(200);
    bool found = false;
    Json body;
    if (path == "/openapi/v3" || path.rfind("/openapi/v3/", 0) == 0) {
      body = OpenApiV3(path.size() > 12 ? path.substr(12) : "", &found);
    } else if (path.rfind("/openapi/", 0) != 0) {
      body = Discovery(path, &found);
    }
    lock.unlock();
    if (!found) {
      resp.Send(
          404, "application/json",
          StatusBody(404, "NotFound", "the server could not find the requested resource").dump());
      return;
    }
    sendJson(200, body);
    return;
  }

  const ResourceType* tp = FindType(info.group, info.resource);
  if (tp == nullptr) {
    finish(404);
    lock.unlock();
    sendJson(404, StatusBody(404, "NotFound", "the server could not find the requested resource",
                             Json::object()));
    return;
  }
  ResourceType t = *tp;
  if (t.version != info.version) {
    finish(404);
    lock.unlock();
    sendJson(404, StatusBody(404, "NotFound", "the server could not find the requested resource"));
    return;
  }
  std::string verb = info.verb;
  record.decision = Authorize(*user, verb, info.group, info.resource, info.subresource, info.ns,
                              info.name.empty() ? info.nameForAuthz : info.name, "")
                        ? "allow"
                        : "forbid";
  if (record.decision == "forbid") {
    finish(403);
    std::string res =
        info.subresource.empty() ? info.resource : info.resource + "/" + info.subresource;
    std::string where =
        info.ns.empty() ? "at the cluster scope" : "in the namespace \"" + info.ns + "\"";
    std::string prefix = t.qualified() + (info.name.empty() ? "" : " \"" + info.name + "\"");
    lock.unlock();
    sendJson(403, StatusBody(
                      403, "Forbidden",
                      prefix + " is forbidden: User \"" + user->name + "\" cannot " + verb +
                          " resource \"" + res + "\" in API group \"" + info.group + "\" " + where,
                      {{"name", info.name}, {"group", info.group}, {"kind", info.resource}}));
    return;
  }
  if (!t.namespaced && !info.ns.empty()) {
    finish(404);
    lock.unlock();
    sendJson(404, StatusBody(404, "NotFound", "the server could not find the requested resource"));
    return;
  }
  std::string bodyText = req.body;
  if (req.Header("content-type").find("protobuf") != std::string::npos) {
    bool decoded = false;
    Json fromProto = DecodeKubeProtobuf(req.body, &decoded);
    if (!decoded) {
      finish(415);
      lock.unlock();
      sendJson(415, StatusBody(415, "UnsupportedMediaType",
                               "the body of the request was in an unknown format - accepted media "
                               "types include: application/json, application/yaml"));
      return;
    }
    bodyText = fromProto.dump();
  }
  std::string fieldValidation = req.Query("fieldValidation");
  bool dryRun = req.Query("dryRun") == "All";
  std::vector<std::string> warnings;
  std::string accept = req.Header("accept");
  bool wantTable = accept.find("as=Table") != std::string::npos;

  // Admission after authorization, before storage: the test hook, then the stored
  // ValidatingAdmissionPolicies (admission_policy.cc). `old`: the stored object of an UPDATE.
  auto admit = [&](const Json& obj, const Json* old) -> std::optional<Outcome> {
    const std::string obj_name = obj.value("metadata", Json::object()).value("name", info.name);
    if (admission) {
      Status s = admission(record, obj);
      if (!s.ok()) {
        return Err(403, "Forbidden",
                   t.qualified() + " \"" + obj_name + "\" is forbidden: " + s.message(),
                   {{"name", info.name}, {"group", t.group}, {"kind", t.plural}});
      }
    }
    if (t.key() == "/pods" && old == nullptr && info.subresource.empty()) {
      const Json* ns_obj = FindObject(*FindType("", "namespaces"), "", info.ns);
      std::string level;
      const std::string why = ns_obj == nullptr ? "" : PodSecurityViolations(*ns_obj, obj, &level);
      if (!why.empty()) {
        return Err(403, "Forbidden",
                   "pods \"" + obj_name + "\" is forbidden: violates PodSecurity \"" + level +
                       ":latest\": " + why,
                   {{"name", obj_name}, {"kind", "pods"}});
      }
    }
    if (opts.ownerReferencesPermissionEnforcement) {
      if (auto denied = EnforceOwnerReferencePermissions(t, info.ns, obj_name, *user, obj, old,
                                                         &record.admissionChecks)) {
        return denied;
      }
    }
    if (t.key() == "admissionregistration.k8s.io/validatingadmissionpolicies") {
      std::vector<FieldError> errs;
      for (const auto& e : CheckPolicyExpressions(obj)) {
        const size_t colon = e.find(": ");
        errs.push_back({"FieldValueInvalid", e.substr(0, colon),
                        "Invalid value: \"...\": compilation failed: " + e.substr(colon + 2)});
      }
      if (!errs.empty()) return Invalid(t, obj_name, errs);
    }
    AdmissionRequest ar;
    ar.type = &t;
    ar.version = info.version;
    ar.subresource = info.subresource;
    ar.operation = old == nullptr ? "CREATE" : "UPDATE";
    ar.ns = info.ns;
    ar.name = obj_name;
    ar.dryRun = dryRun;
    ar.user = &*user;
    ar.object = &obj;
    ar.oldObject = old;
    if (t.namespaced && !info.ns.empty()) {
      ar.namespaceObject = FindObject(*FindType("", "namespaces"), "", info.ns);
    }
    return EvaluateAdmissionPolicies(
        objects["admissionregistration.k8s.io/validatingadmissionpolicies"],
        objects["admissionregistration.k8s.io/validatingadmissionpolicybindings"], ar);
  };

  // ---- reviews and other create-only virtual resources
  if (t.virtualOnly) {
    bool ok = false;
    Json body = ParseBody(bodyText, &ok);
    if (!ok || !body.is_object()) body = Json::object();
    Json out = body;
    if (t.kind == "SelfSubjectReview") {
      Json extra = Json::object();
      for (const auto& [k, v] : user->extra) extra[k] = v;
      out["status"] = {
          {"userInfo", {{"username", user->name}, {"groups", user->groups}, {"extra", extra}}}};
      if (!user->uid.empty()) out["status"]["userInfo"]["uid"] = user->uid;
    } else if (t.kind == "SelfSubjectAccessReview") {
      const Json ra =
          body.value("spec", Json::object()).value("resourceAttributes", Json::object());
      const Json nra =
          body.value("spec", Json::object()).value("nonResourceAttributes", Json::object());
      bool allowed =
          ra.is_object() && !ra.empty()
              ? Authorize(*user, ra.value("verb", ""), ra.value("group", ""),
                          ra.value("resource", ""), ra.value("subresource", ""),
                          ra.value("namespace", ""), ra.value("name", ""), "")
              : Authorize(*user, nra.value("verb", ""), "", "", "", "", "", nra.value("path", ""));
      out["status"] = {{"allowed", allowed}};
    }
    out["apiVersion"] = t.apiVersion();
    out["kind"] = t.kind;
    finish(201);
    lock.unlock();
    sendJson(201, out);
    return;
  }

  // ---- subresources other than status
  if (info.subresource == "log" && t.key() == "/pods") {
    Json* pod = FindObject(t, info.ns, info.name);
    if (pod == nullptr) {
      finish(404);
      Outcome o = NotFound(t, info.name);
      lock.unlock();
      sendOutcome(o);
      return;
    }
    std::string logPath;
    std::string text;
    auto run = runs.find((*pod)["metadata"].value("uid", ""));
    if (run != runs.end()) {
      logPath = run->second.logPath;
      text = run->second.logText;
    }
    finish(200);
    lock.unlock();
    if (!logPath.empty()) {
      FILE* f = std::fopen(logPath.c_str(), "rb");
      if (f != nullptr) {
        char buf[8192];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
        std::fclose(f);
      }
    }
    if (!req.Query("tailLines").empty()) {
      long want = std::stol(req.Query("tailLines"));
      size_t pos = text.size();
      if (!text.empty() && text.back() == '\n') --pos;
      long lines = 0;
      while (pos > 0) {
        if (text[pos - 1] == '\n' && ++lines == want) break;
        --pos;
      }
      text = text.substr(pos);
    }
    if (!Truthy(req.Query("follow")) || logPath.empty()) {
      resp.Send(200, "text/plain", text);
      return;
    }
    // kubectl logs -f: stream what the process writes until it ends (or kube-sim stops).
    std::string uid = run->first;
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
        std::unique_lock<std::mutex> followLock(mu);
        cv.wait_for(followLock, std::chrono::milliseconds(100));
        auto r = runs.find(uid);
        done = stopping || r == runs.end() || r->second.finished;
      }
      std::string chunk;
      if (FILE* f = std::fopen(logPath.c_str(), "rb")) {
        std::fseek(f, offset, SEEK_SET);
        char buf[8192];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) chunk.append(buf, n);
        std::fclose(f);
      }
      offset += static_cast<long>(chunk.size());
      if (!resp.WriteChunk(chunk)) return;
      if (done) break;
    }
    resp.EndChunked();
    return;
  }
  if (info.subresource == "token" && t.key() == "/serviceaccounts") {
    bool ok = false;
    Json body = ParseBody(bodyText, &ok);
    if (!ok || !body.is_object()) body = Json::object();
    const Json spec = body.value("spec", Json::object());
    const Json bound = spec.value("boundObjectRef", Json::object());
    std::string podName = bound.value("kind", "") == "Pod" ? bound.value("name", "") : "";
    int exp = spec.value("expirationSeconds", 3600);
    Json claims;
    Result<std::string> tok = IssueTokenLocked(info.ns, info.name, podName, exp, &claims);
    if (!tok.ok()) {
      finish(404);
      lock.unlock();
      sendJson(404, StatusBody(404, "NotFound", tok.status().message()));
      return;
    }
    body["apiVersion"] = "authentication.k8s.io/v1";
    body["kind"] = "TokenRequest";
    body["status"] = {{"token", *tok}, {"expirationTimestamp", NowRfc3339()}};
    finish(201);
    lock.unlock();
    sendJson(201, body);
    return;
  }
  if (info.subresource == "binding" && t.key() == "/pods") {
    bool ok = false;
    Json body = ParseBody(bodyText, &ok);
    Json* pod = FindObject(t, info.ns, info.name);
    Outcome o = pod == nullptr ? NotFound(t, info.name) : Outcome{201, StatusBody(201, "", "")};
    if (pod != nullptr) {
      Json updated = *pod;
      updated["spec"]["nodeName"] = body.value("target", Json::object()).value("name", "");
      o = ReplaceLocked(t, info.ns, info.name, updated, false, false, "", nullptr);
      if (o.ok()) o = {201, StatusBody(201, "", "")};
    }
    finish(o.code);
    lock.unlock();
    sendOutcome(o);
    return;
  }
  if (info.subresource == "eviction" && t.key() == "/pods" && req.method == "POST") {
    bool ok = false;
    Json body = ParseBody(bodyText, &ok);
    Outcome o = EvictLocked(info.ns, info.name, ok ? body : Json::object());
    finish(o.code);
    lock.unlock();
    sendOutcome(o);
    return;
  }
  if (!info.subresource.empty() && info.subresource != "status") {
    finish(404);
    lock.unlock();
    sendJson(404, StatusBody(404, "NotFound", "the server could not find the requested resource"));
    return;
  }
  bool statusOnly = info.subresource == "status";
  if (statusOnly && !t.statusSubresource) {
    finish(404);
    lock.unlock();
    sendJson(404, StatusBody(404, "NotFound", "the server could not find the requested resource"));
    return;
  }

  if (verb == "get") {
    Json* obj = FindObject(t, info.ns, info.name);
    Outcome o =
        obj == nullptr
            ? NotFound(t, info.name)
            : Outcome{200, wantTable ? BuildTable(t, {*obj}, req.Query("includeObject")) : *obj};
    finish(o.code);
    lock.unlock();
    sendOutcome(o);
    return;
  }
  if (verb == "list") {
    std::string labelSel = req.Query("labelSelector");
    std::string fieldSel = req.Query("fieldSelector");
    std::string cont = req.Query("continue");
    long limit = req.Query("limit").empty() ? 0 : std::stol(req.Query("limit"));
    std::string startAfter;
    uint64_t listRv = rv;
    if (!cont.empty()) {
      Result<std::string> raw = Base64Decode(cont);
      Json tok = raw.ok() ? Json::parse(*raw, nullptr, false) : Json();
      if (!tok.is_object()) {
        finish(400);
        lock.unlock();
        sendOutcome(BadRequest("continue key is not valid: illegal base64 data"));
        return;
      }
      listRv = tok.value("rv", 0ULL);
      startAfter = tok.value("start", "");
      if (listRv < historyFloor) {
        finish(410);
        lock.unlock();
        sendJson(410,
                 StatusBody(410, "Expired",
                            "The provided continue parameter is too old to display a consistent "
                            "list result. You can start a new list without the continue "
                            "parameter, or use the continue token in this response to retrieve "
                            "the remainder of the results. Continuing with the provided token "
                            "results in an inconsistent list - objects that were created, "
                            "modified, or deleted between the time the first chunk was returned "
                            "and now may show up in the list."));
        return;
      }
    }
    if (req.Query("resourceVersionMatch") == "Exact" && !req.Query("resourceVersion").empty()) {
      uint64_t want = std::strtoull(req.Query("resourceVersion").c_str(), nullptr, 10);
      if (want < historyFloor) {
        finish(410);
        lock.unlock();
        sendJson(410, StatusBody(410, "Expired",
                                 "too old resource version: " + std::to_string(want) + " (" +
                                     std::to_string(historyFloor) + ")"));
        return;
      }
    }
    std::vector<Json> items;
    std::string nextKey;
    for (const auto& [k, o] : objects[t.key()]) {
      if (!startAfter.empty() && k <= startAfter) continue;
      if (t.namespaced && !info.ns.empty() && o["metadata"].value("namespace", "") != info.ns)
        continue;
      std::string err;
      if (!labelSel.empty() &&
          !MatchLabelSelector(labelSel, o["metadata"].value("labels", Json::object()), &err)) {
        if (!err.empty()) {
          finish(400);
          lock.unlock();
          sendOutcome(BadRequest(err));
          return;
        }
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
      std::string lastKey = (t.namespaced ? items.back()["metadata"].value("namespace", "") : "") +
                            "/" + items.back()["metadata"].value("name", "");
      meta["continue"] = Base64Encode(Json{{"rv", listRv}, {"start", lastKey}}.dump());
    }
    Json body;
    if (wantTable) {
      body = BuildTable(t, items, req.Query("includeObject"));
      body["metadata"] = meta;
    } else {
      body = {{"kind", t.kind + "List"},
              {"apiVersion", t.apiVersion()},
              {"metadata", meta},
              {"items", items}};
    }
    finish(200);
    lock.unlock();
    sendJson(200, body);
    return;
  }
  if (verb == "watch") {
    finish(200);
    lock.unlock();
    ServeWatch(req, resp, t, info.ns);
    return;
  }
  if (verb == "create") {
    bool ok = false;
    Json body = ParseBody(bodyText, &ok);
    if (!ok) {
      finish(400);
      lock.unlock();
      sendOutcome(BadRequest("the body of the request was in an unknown format"));
      return;
    }
    if (auto denied = admit(body, nullptr)) {
      finish(403);
      lock.unlock();
      sendOutcome(*denied);
      return;
    }
    Outcome o = CreateLocked(t, info.ns, body, dryRun, fieldValidation, &warnings);
    finish(o.code);
    lock.unlock();
    sendOutcome(o, warnings);
    return;
  }
  if (verb == "update" || verb == "patch") {
    Json* cur = FindObject(t, info.ns, info.name);
    std::string ctype = req.Header("content-type");
    bool apply = ctype.find("apply-patch") != std::string::npos;
    bool ok = false;
    Json body = ParseBody(bodyText, &ok);
    if (!ok) {
      finish(400);
      lock.unlock();
      sendOutcome(BadRequest("the body of the request was in an unknown format"));
      return;
    }
    if (cur == nullptr) {
      Outcome o = NotFound(t, info.name);
      if (apply && !statusOnly) {
        if (!body.contains("metadata")) body["metadata"] = Json::object();
        body["metadata"]["name"] = info.name;
        o = CreateLocked(t, info.ns, body, dryRun, fieldValidation, &warnings);
      }
      finish(o.code);
      lock.unlock();
      sendOutcome(o, warnings);
      return;
    }
    Json target;
    if (verb == "update") {
      target = body;
    } else if (ctype.find("json-patch") != std::string::npos) {
      try {
        target = cur->patch(body);
      } catch (const std::exception& e) {
        finish(422);
        Outcome o =
            Err(422, "Invalid",
                std::string("the server rejected our request due to an error in our request: ") +
                    e.what());
        lock.unlock();
        sendOutcome(o);
        return;
      }
    } else if (ctype.find("strategic-merge-patch") != std::string::npos) {
      if (t.crd) {
        finish(415);
        lock.unlock();
        sendJson(415,
                 StatusBody(415, "UnsupportedMediaType",
                            "the body of the request was in an unknown format - accepted media "
                            "types include: application/json-patch+json, "
                            "application/merge-patch+json, application/apply-patch+yaml"));
        return;
      }
      target = StrategicMerge(*cur, body);
    } else {
      target = *cur;
      target.merge_patch(body);
    }
    if (verb == "patch" && !(body.is_object() && body.contains("metadata") &&
                             body["metadata"].contains("resourceVersion"))) {
      target["metadata"]["resourceVersion"] = (*cur)["metadata"].value("resourceVersion", "");
    }
    if (auto denied = admit(target, cur)) {
      finish(403);
      lock.unlock();
      sendOutcome(*denied);
      return;
    }
    Outcome o = ReplaceLocked(t, info.ns, info.name, target, statusOnly, dryRun, fieldValidation,
                              &warnings);
    finish(o.code);
    lock.unlock();
    sendOutcome(o, warnings);
    return;
  }
  if (verb == "delete" || verb == "deletecollection") {
    bool ok = false;
    Json body = bodyText.empty() ? Json::object() : ParseBody(bodyText, &ok);
    if (!body.is_object()) body = Json::object();
    DeleteOptions options;
    options.propagationPolicy = body.value("propagationPolicy", req.Query("propagationPolicy"));
    if (body.contains("orphanDependents") && body["orphanDependents"].is_boolean() &&
        body["orphanDependents"].get<bool>()) {
      options.propagationPolicy = "Orphan";
    }
    if (body.contains("gracePeriodSeconds") && body["gracePeriodSeconds"].is_number()) {
      options.gracePeriodSeconds = body["gracePeriodSeconds"].get<long>();
    } else if (!req.Query("gracePeriodSeconds").empty()) {
      options.gracePeriodSeconds = std::stol(req.Query("gracePeriodSeconds"));
    }
    const Json pre = body.value("preconditions", Json::object());
    options.preconditionUid = pre.is_object() ? pre.value("uid", "") : "";
    options.preconditionResourceVersion = pre.is_object() ? pre.value("resourceVersion", "") : "";
    options.dryRun = dryRun || (body.contains("dryRun") && !body["dryRun"].empty());
    if (verb == "delete") {
      Outcome o = DeleteLocked(t, info.ns, info.name, options);
      finish(o.code);
      lock.unlock();
      sendOutcome(o);
      return;
    }
    std::string labelSel = req.Query("labelSelector");
    std::string fieldSel = req.Query("fieldSelector");
    std::vector<std::string> names;
    for (const auto& [k, o] : objects[t.key()]) {
      if (t.namespaced && !info.ns.empty() && o["metadata"].value("namespace", "") != info.ns)
        continue;
      if (!labelSel.empty() &&
          !MatchLabelSelector(labelSel, o["metadata"].value("labels", Json::object()), nullptr))
        continue;
      if (!fieldSel.empty() && !MatchFieldSelector(fieldSel, o, nullptr)) continue;
      names.push_back(o["metadata"].value("name", ""));
    }
    for (const auto& n : names) DeleteLocked(t, info.ns, n, options);
    finish(200);
    lock.unlock();
    sendJson(200, StatusBody(200, "", ""));
    return;
  }
  finish(405);
  lock.unlock();
  sendJson(405, StatusBody(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource"));
}

}  // namespace perfgate::kubesim
