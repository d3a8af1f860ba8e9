// What kube-sim's API routes share (routes.cc): discovery, OpenAPI, tables and watches.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <set>
#include <shared_mutex>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/kube-sim/impl.h"

namespace perfgate::kubesim {
namespace {

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

}  // namespace

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream ss(path);
  std::string p;
  while (std::getline(ss, p, '/')) {
    if (!p.empty()) parts.push_back(p);
  }
  return parts;
}

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

namespace {

// Kubernetes' version priority (apimachinery's CompareKubeAwareVersionStrings): GA before beta
// before alpha, higher numbers first. A smaller key sorts first.
std::tuple<int, int, int> VersionPriority(const std::string& v) {
  int major = 0;
  int minor = 0;
  size_t i = 1;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])))
    major = major * 10 + (v[i++] - '0');
  int stability = 0;
  if (v.compare(i, 5, "alpha") == 0) {
    stability = 2;
    i += 5;
  } else if (v.compare(i, 4, "beta") == 0) {
    stability = 1;
    i += 4;
  }
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])))
    minor = minor * 10 + (v[i++] - '0');
  return {stability, -major, -minor};
}

// An APIGroup's name, versions (most preferred first) and preferred version; versions empty
// when no type is served in `group`.
Json GroupDiscovery(const std::map<std::string, ResourceType>& types, const std::string& group) {
  std::set<std::string> versions;
  for (const auto& [k, t] : types) {
    if (t.group == group) versions.insert(t.version);
  }
  std::vector<std::string> ordered(versions.begin(), versions.end());
  std::sort(ordered.begin(), ordered.end(), [](const std::string& a, const std::string& b) {
    return VersionPriority(a) < VersionPriority(b);
  });
  Json list = Json::array();
  for (const auto& v : ordered) list.push_back({{"groupVersion", group + "/" + v}, {"version", v}});
  Json out = {{"name", group}, {"versions", list}};
  if (!list.empty()) out["preferredVersion"] = list[0];
  return out;
}

}  // namespace

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
    std::set<std::string> groups;
    for (const auto& [k, t] : types) {
      if (!t.group.empty()) groups.insert(t.group);
    }
    Json list = Json::array();
    for (const auto& g : groups) list.push_back(GroupDiscovery(types, g));
    return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", list}};
  }
  std::vector<std::string> parts = SplitPath(path);
  if (parts.size() == 2 && parts[0] == "apis") {
    Json group = GroupDiscovery(types, parts[1]);
    if (!group["versions"].empty()) {
      group["kind"] = "APIGroup";
      group["apiVersion"] = "v1";
      return group;
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

namespace {

using SteadyClock = std::chrono::steady_clock;

// One watch request: what it selects and how it writes an event.
struct WatchQuery {
  const KubeSim::Impl& s;
  const ResourceType& t;
  std::string ns;
  std::string labelSel;
  std::string fieldSel;
  std::string rvParam;
  std::string includeObject;
  bool bookmarks = false;
  bool initialEvents = false;
  bool asTable = false;
  bool columnsSent = false;
  SteadyClock::time_point deadline;
  SteadyClock::duration bookmarkEvery;

  WatchQuery(const KubeSim::Impl& sim, const HttpRequest& req, const ResourceType& type,
             std::string nameSpace)
      : s(sim), t(type), ns(std::move(nameSpace)) {
    labelSel = req.Query("labelSelector");
    fieldSel = req.Query("fieldSelector");
    bookmarks = Truthy(req.Query("allowWatchBookmarks"));
    initialEvents = Truthy(req.Query("sendInitialEvents"));
    rvParam = req.Query("resourceVersion");
    double timeoutSeconds = 1800;
    if (!req.Query("timeoutSeconds").empty()) {
      timeoutSeconds = std::stod(req.Query("timeoutSeconds"));
    }
    deadline =
        SteadyClock::now() + std::chrono::milliseconds(static_cast<long>(timeoutSeconds * 1000));
    // `kubectl get -w` asks for Table rows: each event carries a one-row Table, the first with
    // the column definitions, as kube-apiserver streams them.
    asTable = req.Header("accept").find("as=Table") != std::string::npos;
    includeObject = req.Query("includeObject");
    bookmarkEvery =
        std::chrono::milliseconds(static_cast<long>(s.opts.bookmarkIntervalSeconds * 1000));
  }

  bool Matches(const Json& o) const {
    if (!o.is_object()) return false;
    if (t.namespaced && !ns.empty() && o["metadata"].value("namespace", "") != ns) return false;
    if (!labelSel.empty() &&
        !MatchLabelSelector(labelSel, o["metadata"].value("labels", Json::object()), nullptr)) {
      return false;
    }
    if (!fieldSel.empty() && !MatchFieldSelector(fieldSel, o, nullptr)) return false;
    return true;
  }

  // Field order as kube-apiserver writes it: type, then object.
  std::string Line(const std::string& type, const Json& obj) {
    if (asTable && type != "ERROR" && type != "BOOKMARK") {
      Json table = s.BuildTable(t, {obj}, includeObject);
      if (columnsSent) table["columnDefinitions"] = Json::array();
      columnsSent = true;
      return "{\"type\":\"" + type + "\",\"object\":" + table.dump() + "}\n";
    }
    return "{\"type\":\"" + type + "\",\"object\":" + obj.dump() + "}\n";
  }

  // How this watch sees the stored event `e` (an object entering or leaving the selection is
  // ADDED or DELETED); "" when it sees nothing.
  std::string TypeOf(const WatchEvent& e) const {
    if (e.resKey != t.key()) return "";
    bool now = Matches(e.object);
    bool before = !e.previous.is_null() && Matches(e.previous);
    std::string type = e.type;
    if (type == "ADDED" && !now) return "";
    if (type == "MODIFIED") {
      if (!now && !before) return "";
      if (now && !before) type = "ADDED";
      if (!now && before) type = "DELETED";
    }
    if (type == "DELETED" && !now && !before) return "";
    return type;
  }

  Json Bookmark(uint64_t rv) const {
    return {{"kind", t.kind},
            {"apiVersion", t.apiVersion()},
            {"metadata", {{"resourceVersion", std::to_string(rv)}}}};
  }
};

Json Expired(uint64_t rv, uint64_t floor) {
  return StatusBody(
      410, "Expired",
      "too old resource version: " + std::to_string(rv) + " (" + std::to_string(floor) + ")");
}

// The watch's first events when it starts from now (no resourceVersion, "0", or
// sendInitialEvents): every selected object as ADDED, then the initial-events-end bookmark.
std::vector<std::string> InitialEvents(WatchQuery& q) {
  std::vector<std::string> pending;
  for (const auto& [k, o] : q.s.ObjectsOf(q.t.key())) {
    if (q.Matches(o)) pending.push_back(q.Line("ADDED", o));
  }
  if (q.initialEvents && q.bookmarks) {
    Json bm = q.Bookmark(q.s.rv);
    bm["metadata"]["annotations"] = {{"k8s.io/initial-events-end", "true"}};
    pending.push_back(q.Line("BOOKMARK", bm));
  }
  return pending;
}

enum class WatchStep { kSend, kEnd, kDrop };

// With mu held shared in `lock`, waits until the watch has events to send (kSend, in
// `pending`) or ends: kEnd (the timeout, or an expired cursor with its ERROR in `pending`) or
// kDrop (dropped watches, or kube-sim stopping: an abrupt end).
WatchStep AwaitWatchEvents(const KubeSim::Impl& s, WatchQuery& q,
                           std::shared_lock<std::shared_mutex>& lock, uint64_t epoch,
                           uint64_t& cursor, SteadyClock::time_point& nextBookmark,
                           std::vector<std::string>& pending) {
  for (;;) {
    if (s.stopping || s.watchEpoch != epoch) return WatchStep::kDrop;
    if (cursor < s.historyFloor) {
      pending.push_back(q.Line("ERROR", Expired(cursor, s.historyFloor)));
      return WatchStep::kEnd;
    }
    if (s.watchesHeld) {  // a watch stream stalled: nothing is sent, nothing is lost
      if (SteadyClock::now() >= q.deadline) return WatchStep::kEnd;
      s.cv.wait_for(lock, std::chrono::milliseconds(50));
      continue;
    }
    auto it = std::upper_bound(s.history.begin(), s.history.end(), cursor,
                               [](uint64_t c, const WatchEvent& e) { return c < e.rv; });
    for (; it != s.history.end(); ++it) {
      cursor = it->rv;
      std::string type = q.TypeOf(*it);
      if (!type.empty()) pending.push_back(q.Line(type, it->object));
    }
    if (cursor < s.rv) cursor = s.rv;
    auto now = SteadyClock::now();
    if (!pending.empty()) return WatchStep::kSend;
    if (now >= q.deadline) return WatchStep::kEnd;
    if (q.bookmarks && now >= nextBookmark) {
      pending.push_back(q.Line("BOOKMARK", q.Bookmark(cursor)));
      nextBookmark = now + q.bookmarkEvery;
      return WatchStep::kSend;
    }
    auto wake = q.deadline;
    if (q.bookmarks && nextBookmark < wake) wake = nextBookmark;
    s.cv.wait_until(lock, wake);
  }
}

}  // namespace

void KubeSim::Impl::ServeWatch(const HttpRequest& req, HttpResponder& resp, const ResourceType& t,
                               const std::string& ns) const {
  WatchQuery q(*this, req, t, ns);
  std::shared_lock lock(mu);
  std::vector<std::string> pending;
  uint64_t cursor = rv;
  if (q.rvParam.empty() || q.rvParam == "0" || q.initialEvents) {
    pending = InitialEvents(q);
  } else {
    uint64_t from = std::strtoull(q.rvParam.c_str(), nullptr, 10);
    if (from < historyFloor) {
      std::string error = q.Line("ERROR", Expired(from, historyFloor));
      lock.unlock();
      resp.StartChunked(200, "application/json");
      resp.WriteChunk(error);
      resp.EndChunked();
      return;
    }
    cursor = from;
  }
  uint64_t epoch = watchEpoch;
  lock.unlock();
  if (!resp.StartChunked(200, "application/json")) return;
  auto nextBookmark = SteadyClock::now() + q.bookmarkEvery;
  for (;;) {
    for (const auto& p : pending) {
      if (!resp.WriteChunk(p)) return;
    }
    pending.clear();
    lock.lock();
    WatchStep step = AwaitWatchEvents(*this, q, lock, epoch, cursor, nextBookmark, pending);
    lock.unlock();
    if (step == WatchStep::kDrop) {
      resp.CloseAfter();  // an abrupt end, as a dropped connection looks to a client
      return;
    }
    if (step == WatchStep::kEnd) {
      for (const auto& p : pending) resp.WriteChunk(p);
      resp.EndChunked();
      return;
    }
  }
}

}  // namespace perfgate::kubesim
