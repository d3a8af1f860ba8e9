// kube-sim's object store: resource registry, create/replace/delete with kube-apiserver's
// metadata rules, resourceVersion and the bounded watch-event history.
#include <algorithm>
#include <utility>

#include "tests/kube-sim/impl.h"

namespace perfgate::kubesim {

Json StatusBody(int code, const std::string& reason, const std::string& message, Json details) {
  Json s = {{"kind", "Status"},
            {"apiVersion", "v1"},
            {"metadata", Json::object()},
            {"status", code < 400 ? "Success" : "Failure"},
            {"message", message},
            {"reason", reason},
            {"code", code}};
  if (!details.is_null()) s["details"] = details;
  if (reason.empty()) s.erase("reason");
  return s;
}

Outcome Err(int code, const std::string& reason, const std::string& message, Json details) {
  return {code, StatusBody(code, reason, message, std::move(details))};
}

namespace {
Json Details(const ResourceType& t, const std::string& name) {
  Json d = {{"group", t.group}, {"kind", t.plural}};
  if (!name.empty()) d["name"] = name;
  return d;
}
}  // namespace

Outcome NotFound(const ResourceType& t, const std::string& name) {
  return Err(404, "NotFound", t.qualified() + " \"" + name + "\" not found", Details(t, name));
}

Outcome AlreadyExists(const ResourceType& t, const std::string& name) {
  return Err(409, "AlreadyExists", t.qualified() + " \"" + name + "\" already exists",
             Details(t, name));
}

Outcome Conflict(const ResourceType& t, const std::string& name, const std::string& why) {
  return Err(409, "Conflict",
             "Operation cannot be fulfilled on " + t.qualified() + " \"" + name + "\": " + why,
             Details(t, name));
}

Outcome BadRequest(const std::string& message) { return Err(400, "BadRequest", message); }

Outcome Invalid(const ResourceType& t, const std::string& name,
                const std::vector<FieldError>& errs) {
  std::string joined;
  Json causes = Json::array();
  for (const auto& e : errs) {
    std::string text = e.field + ": " + e.message;
    joined += (joined.empty() ? "" : ", ") + text;
    causes.push_back({{"reason", e.type}, {"message", e.message}, {"field", e.field}});
  }
  if (errs.size() > 1) joined = "[" + joined + "]";
  Json d = {{"name", name}, {"group", t.group}, {"kind", t.kind}, {"causes", causes}};
  return Err(422, "Invalid", t.qualifiedKind() + " \"" + name + "\" is invalid: " + joined, d);
}

const ResourceType* KubeSim::Impl::FindType(const std::string& group,
                                            const std::string& plural) const {
  auto it = types.find(group + "/" + plural);
  return it == types.end() ? nullptr : &it->second;
}

const ResourceType* KubeSim::Impl::FindTypeByKind(const std::string& apiVersion,
                                                  const std::string& kind) const {
  for (const auto& [k, t] : types) {
    if (t.kind == kind && t.apiVersion() == apiVersion && !t.virtualOnly) return &t;
  }
  return nullptr;
}

// Lookups never insert, so that requests sharing mu only read the maps.
Json* KubeSim::Impl::FindObject(const ResourceType& t, const std::string& ns,
                                const std::string& name) {
  return const_cast<Json*>(std::as_const(*this).FindObject(t, ns, name));
}

const Json* KubeSim::Impl::FindObject(const ResourceType& t, const std::string& ns,
                                      const std::string& name) const {
  const std::map<std::string, Json>& m = ObjectsOf(t.key());
  auto it = m.find((t.namespaced ? ns : "") + "/" + name);
  return it == m.end() ? nullptr : &it->second;
}

const std::map<std::string, Json>& KubeSim::Impl::ObjectsOf(const std::string& key) const {
  static const std::map<std::string, Json> kNone;
  auto it = objects.find(key);
  return it == objects.end() ? kNone : it->second;
}

std::string KubeSim::Impl::NewUid() {
  std::string h = RandomHex(16);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20, 12);
}

void KubeSim::Impl::MarkDirty() {
  dirty = true;
  controlCv.notify_all();
}

void KubeSim::Impl::Emit(const ResourceType& t, const std::string& type, const Json& obj,
                         const Json& prev) {
  history.push_back({rv, t.key(), type, obj, prev});
  while (history.size() > opts.watchHistoryEvents) {
    historyFloor = history.front().rv;
    history.pop_front();
  }
  if (t.key() == "/nodes") nodesDirty = true;
  cv.notify_all();
  // No controller here reads events or leases: their writes (one per node claim, per event)
  // need no pass over every pod, unless the garbage collector has work.
  if (t.key() == "/events" || t.key() == "coordination.k8s.io/leases" ||
      t.key() == "events.k8s.io/events") {
    if (gcDirty) MarkDirty();
    return;
  }
  MarkDirty();
}

namespace {

const char* kNameChars = "bcdfghjklmnpqrstvwxz2456789";

bool SpecChanged(const Json& a, const Json& b, bool ignoreStatus) {
  Json x = a;
  Json y = b;
  x.erase("metadata");
  y.erase("metadata");
  if (ignoreStatus) {
    x.erase("status");
    y.erase("status");
  }
  return x != y;
}

Json WithoutVolatile(Json o) {
  if (o.contains("metadata")) {
    o["metadata"].erase("resourceVersion");
    o["metadata"].erase("managedFields");
  }
  return o;
}

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.')) {
      return false;
    }
  }
  return std::isalnum(static_cast<unsigned char>(name.front())) &&
         std::isalnum(static_cast<unsigned char>(name.back()));
}

}  // namespace

Outcome KubeSim::Impl::ValidateCustom(const ResourceType& t, Json& obj,
                                      const std::string& fieldValidation,
                                      std::vector<std::string>* warnings) {
  if (!t.crd || !t.schema.is_object()) return {};
  std::vector<FieldError> errs;
  std::vector<std::string> unknown;
  ValidateAndPrune(t.schema, obj, "", errs, unknown);
  if (!unknown.empty()) {
    if (fieldValidation == "Strict") {
      std::string msg;
      for (const auto& u : unknown)
        msg += (msg.empty() ? "" : ", ") + ("unknown field \"" + u + "\"");
      std::string version = t.version;
      return BadRequest(t.kind + " in version \"" + version + "\" cannot be handled as a " +
                        t.kind + ": strict decoding error: " + msg);
    }
    if (fieldValidation != "Ignore" && warnings != nullptr) {
      for (const auto& u : unknown) warnings->push_back("unknown field \"" + u + "\"");
    }
  }
  if (!errs.empty()) {
    return Invalid(t, obj["metadata"].value("name", ""), errs);
  }
  return {};
}

Outcome KubeSim::Impl::CreateLocked(const ResourceType& t, const std::string& nsIn, Json obj,
                                    bool dryRun, const std::string& fieldValidation,
                                    std::vector<std::string>* warnings) {
  if (!obj.is_object()) return BadRequest("the body of the request is not a JSON object");
  if (!obj.contains("metadata") || !obj["metadata"].is_object()) obj["metadata"] = Json::object();
  Json& md = obj["metadata"];
  std::string ns = t.namespaced ? nsIn : "";
  if (t.namespaced) {
    std::string bodyNs = md.value("namespace", "");
    if (ns.empty()) ns = bodyNs.empty() ? "default" : bodyNs;
    if (!bodyNs.empty() && bodyNs != ns) {
      return BadRequest(
          "the namespace of the provided object does not match the namespace sent "
          "on the request");
    }
    const ResourceType* nsType = FindType("", "namespaces");
    Json* nsObj = FindObject(*nsType, "", ns);
    if (nsObj == nullptr) return NotFound(*nsType, ns);
    if ((*nsObj)["metadata"].contains("deletionTimestamp")) {
      return Err(403, "Forbidden",
                 t.qualified() + " \"" + md.value("name", md.value("generateName", "")) +
                     "\" is forbidden: unable to create new content in namespace " + ns +
                     " because it is being terminated",
                 Details(t, md.value("name", "")));
    }
    md["namespace"] = ns;
  } else {
    md.erase("namespace");
  }
  if (!md.contains("name") || md["name"].get<std::string>().empty()) {
    std::string gen = md.value("generateName", "");
    if (gen.empty()) {
      return Invalid(t, "",
                     {{"FieldValueRequired", "metadata.name",
                       "Required value: name or generateName is required"}});
    }
    std::string suffix;
    std::uniform_int_distribution<int> d(0, 26);
    for (int i = 0; i < 5; ++i) suffix.push_back(kNameChars[d(rng)]);
    md["name"] = gen + suffix;
  }
  std::string name = md["name"].get<std::string>();
  // RBAC objects only need a valid path segment (system:basic-user); most kinds a DNS subdomain.
  bool pathSegmentOk = name.find('/') == std::string::npos && name.find('%') == std::string::npos &&
                       name != "." && name != "..";
  bool nameOk = t.group == "rbac.authorization.k8s.io" ? pathSegmentOk : ValidName(name);
  std::vector<FieldError> metaErrs;
  if (!nameOk && t.kind != "Event") metaErrs = NameErrors(name);
  for (auto& e : MetadataErrors(md)) metaErrs.push_back(std::move(e));
  for (auto& e : BuiltinSpecErrors(t.key(), obj)) metaErrs.push_back(std::move(e));
  if (!metaErrs.empty()) return Invalid(t, name, metaErrs);
  obj["apiVersion"] = t.apiVersion();
  obj["kind"] = t.kind;
  if (t.crd && t.statusSubresource) obj.erase("status");
  Outcome v = ValidateCustom(t, obj, fieldValidation, warnings);
  if (!v.ok()) return v;
  if (t.crd && !obj.contains("metadata")) obj["metadata"] = md;
  if (FindObject(t, ns, name) != nullptr) return AlreadyExists(t, name);

  // Per-kind defaults, as the built-in strategies and admission plugins set them.
  if (t.key() == "/pods") {
    Json& spec = obj["spec"];
    if (!spec.contains("serviceAccountName"))
      spec["serviceAccountName"] = spec.value("serviceAccount", "default");
    spec["serviceAccount"] = spec["serviceAccountName"];
    std::string sa = spec["serviceAccountName"].get<std::string>();
    if (FindObject(*FindType("", "serviceaccounts"), ns, sa) == nullptr) {
      return Err(403, "Forbidden",
                 "pods \"" + name + "\" is forbidden: error looking up service account " + ns +
                     "/" + sa + ": serviceaccount \"" + sa + "\" not found",
                 Details(t, name));
    }
    // The Priority admission plugin: spec.priorityClassName (or the globalDefault class) resolved
    // to spec.priority and spec.preemptionPolicy, in its words when that fails.
    const ResourceType& pcType = *FindType("scheduling.k8s.io", "priorityclasses");
    int priority = 0;
    std::string preemption = "PreemptLowerPriority";
    const std::string className = spec.value("priorityClassName", "");
    const Json* pc = nullptr;
    if (className.empty()) {
      for (const auto& [k, c] : ObjectsOf(pcType.key())) {
        if (c.value("globalDefault", false)) pc = &c;
      }
      if (pc != nullptr) spec["priorityClassName"] = (*pc)["metadata"].value("name", "");
    } else {
      pc = FindObject(pcType, "", className);
      if (pc == nullptr) {
        return Err(403, "Forbidden",
                   "pods \"" + name + "\" is forbidden: no PriorityClass with name " + className +
                       " was found",
                   Details(t, name));
      }
    }
    if (pc != nullptr) {
      priority = pc->value("value", 0);
      preemption = pc->value("preemptionPolicy", preemption);
    }
    if (spec.contains("priority") && spec["priority"] != priority) {
      return Err(403, "Forbidden",
                 "pods \"" + name + "\" is forbidden: the integer value of priority (" +
                     spec["priority"].dump() +
                     ") must not be provided in pod spec; priority admission controller computed " +
                     std::to_string(priority) + " from the given PriorityClass name",
                 Details(t, name));
    }
    if (spec.contains("preemptionPolicy") && spec["preemptionPolicy"] != preemption) {
      return Err(403, "Forbidden",
                 "pods \"" + name + "\" is forbidden: the string value of PreemptionPolicy (" +
                     spec.value("preemptionPolicy", "") +
                     ") must not be provided in pod spec; priority admission controller computed " +
                     preemption + " from the given PriorityClass name",
                 Details(t, name));
    }
    spec["priority"] = priority;
    spec["preemptionPolicy"] = preemption;
    if (!spec.contains("restartPolicy")) spec["restartPolicy"] = "Always";
    if (!spec.contains("schedulerName")) spec["schedulerName"] = "default-scheduler";
    if (!spec.contains("terminationGracePeriodSeconds")) spec["terminationGracePeriodSeconds"] = 30;
    if (!spec.contains("dnsPolicy")) spec["dnsPolicy"] = "ClusterFirst";
    if (!spec.contains("tolerations")) spec["tolerations"] = Json::array();
    for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
      bool have = false;
      for (const auto& tol : spec["tolerations"]) have = have || tol.value("key", "") == key;
      if (!have) {
        spec["tolerations"].push_back({{"key", key},
                                       {"operator", "Exists"},
                                       {"effect", "NoExecute"},
                                       {"tolerationSeconds", 300}});
      }
    }
    for (auto& c : spec["containers"]) {
      if (!c.contains("terminationMessagePath"))
        c["terminationMessagePath"] = "/dev/termination-log";
      if (!c.contains("terminationMessagePolicy")) c["terminationMessagePolicy"] = "File";
      if (!c.contains("imagePullPolicy")) c["imagePullPolicy"] = "IfNotPresent";
    }
    obj["status"] = {{"phase", "Pending"}, {"qosClass", "BestEffort"}};
  } else if (t.key() == "/nodes") {
    // A Node's spec is a struct: served as {} when empty. The TaintNodesByCondition admission
    // plugin taints every new node not-ready until the node lifecycle controller sees it Ready.
    if (!obj["spec"].is_object()) obj["spec"] = Json::object();
    Json& taints = obj["spec"]["taints"];
    if (!taints.is_array()) taints = Json::array();
    bool tainted = false;
    for (const auto& taint : taints) {
      tainted = tainted || (taint.value("key", "") == kNotReadyTaint &&
                            taint.value("effect", "") == "NoSchedule");
    }
    if (!tainted) taints.push_back({{"key", kNotReadyTaint}, {"effect", "NoSchedule"}});
  } else if (t.key() == "scheduling.k8s.io/priorityclasses") {
    // As ValidatePriorityClass and the Priority admission plugin check a new class.
    if (!obj.contains("preemptionPolicy")) obj["preemptionPolicy"] = "PreemptLowerPriority";
    const Json& value = obj.contains("value") ? obj["value"] : Json(0);
    std::vector<FieldError> errs;
    if (!value.is_number_integer()) {
      errs.push_back({"FieldValueInvalid", "value", "Invalid value: must be an integer"});
    } else if (name.rfind("system-", 0) != 0 && value.get<int64_t>() > 1000000000) {
      errs.push_back({"FieldValueForbidden", "value",
                      "Forbidden: maximum allowed value of a user defined priority is 1000000000"});
    }
    const std::string policy = obj["preemptionPolicy"].is_string() ? obj["preemptionPolicy"] : "";
    if (policy != "Never" && policy != "PreemptLowerPriority") {
      errs.push_back({"FieldValueNotSupported", "preemptionPolicy",
                      "Unsupported value: " + obj["preemptionPolicy"].dump() +
                          ": supported values: \"Never\", \"PreemptLowerPriority\""});
    }
    if (!errs.empty()) return Invalid(t, name, errs);
    obj["value"] = value;
    if (obj.value("globalDefault", false)) {
      for (const auto& [k, c] : ObjectsOf(t.key())) {
        if (!c.value("globalDefault", false)) continue;
        return Err(403, "Forbidden",
                   t.qualified() + " \"" + name + "\" is forbidden: PriorityClass " +
                       c["metadata"].value("name", "") +
                       " is already marked as default. Only one default can exist",
                   Details(t, name));
      }
    }
  } else if (t.key() == "/namespaces") {
    obj["spec"] = {{"finalizers", {"kubernetes"}}};
    obj["status"] = {{"phase", "Active"}};
    md["labels"]["kubernetes.io/metadata.name"] = name;
  } else if (t.key() == "apiextensions.k8s.io/customresourcedefinitions") {
    Outcome r = RegisterCrd(obj, true);
    if (!r.ok()) return r;
  }
  if (dryRun) return {201, obj};

  md["uid"] = NewUid();
  md["creationTimestamp"] = NowRfc3339();
  if (t.hasGeneration) md["generation"] = 1;
  md.erase("deletionTimestamp");
  md.erase("resourceVersion");
  md.erase("selfLink");
  ++rv;
  md["resourceVersion"] = std::to_string(rv);
  if (t.key() == "apiextensions.k8s.io/customresourcedefinitions") {
    RegisterCrd(obj, false);
    obj["status"] = {{"acceptedNames", obj["spec"]["names"]},
                     {"storedVersions", Json::array()},
                     {"conditions",
                      {{{"type", "NamesAccepted"},
                        {"status", "True"},
                        {"reason", "NoConflicts"},
                        {"message", "no conflicts found"},
                        {"lastTransitionTime", NowRfc3339()}},
                       {{"type", "Established"},
                        {"status", "True"},
                        {"reason", "InitialNamesAccepted"},
                        {"message", "the initial names have been accepted"},
                        {"lastTransitionTime", NowRfc3339()}}}}};
    for (const auto& ver : obj["spec"]["versions"]) {
      if (ver.value("storage", false)) obj["status"]["storedVersions"].push_back(ver["name"]);
    }
  }
  if (md.contains("ownerReferences")) gcDirty = true;
  objects[t.key()][ns + "/" + name] = obj;
  Emit(t, "ADDED", obj, nullptr);
  if (t.key() == "/namespaces") {
    // The service-account and root-CA controllers of a real cluster fill every new namespace.
    Json sa = {{"apiVersion", "v1"},
               {"kind", "ServiceAccount"},
               {"metadata", {{"name", "default"}, {"namespace", name}}}};
    CreateLocked(*FindType("", "serviceaccounts"), name, sa, false, "", nullptr);
    Json cm = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata", {{"name", "kube-root-ca.crt"}, {"namespace", name}}},
               {"data", {{"ca.crt", pki.caCertPem}}}};
    CreateLocked(*FindType("", "configmaps"), name, cm, false, "", nullptr);
  }
  return {201, objects[t.key()][ns + "/" + name]};
}

Outcome KubeSim::Impl::ReplaceLocked(const ResourceType& t, const std::string& nsIn,
                                     const std::string& name, Json obj, bool statusOnly,
                                     bool dryRun, const std::string& fieldValidation,
                                     std::vector<std::string>* warnings) {
  std::string ns = t.namespaced ? nsIn : "";
  Json* cur = FindObject(t, ns, name);
  if (cur == nullptr) return NotFound(t, name);
  if (!obj.is_object()) return BadRequest("the body of the request is not a JSON object");
  if (!obj.contains("metadata") || !obj["metadata"].is_object()) obj["metadata"] = Json::object();
  Json& md = obj["metadata"];
  if (md.contains("name") && md["name"] != name) {
    return BadRequest("the name of the object (" + md["name"].get<std::string>() +
                      ") does not match the name on the URL (" + name + ")");
  }
  const Json& oldMd = (*cur)["metadata"];
  std::string wantRv = md.value("resourceVersion", "");
  if (!wantRv.empty() && wantRv != oldMd.value("resourceVersion", "")) {
    return Conflict(t, name,
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again");
  }
  Json merged;
  if (statusOnly) {
    merged = *cur;
    if (obj.contains("status")) {
      merged["status"] = obj["status"];
    } else {
      merged.erase("status");
    }
  } else {
    merged = obj;
    if (t.statusSubresource) {
      if (cur->contains("status")) {
        merged["status"] = (*cur)["status"];
      } else {
        merged.erase("status");
      }
    }
    Json& mmd = merged["metadata"];
    for (const char* k : {"uid", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "generation"}) {
      if (oldMd.contains(k)) {
        mmd[k] = oldMd[k];
      } else {
        mmd.erase(k);
      }
    }
    mmd["name"] = name;
    if (t.namespaced) mmd["namespace"] = ns;
  }
  merged["apiVersion"] = t.apiVersion();
  merged["kind"] = t.kind;
  if (t.key() == "/nodes" && !merged["spec"].is_object()) merged["spec"] = Json::object();
  std::vector<FieldError> errs = MetadataErrors(merged["metadata"]);
  for (auto& e : BuiltinSpecErrors(t.key(), merged)) errs.push_back(std::move(e));
  if (!errs.empty()) return Invalid(t, name, errs);
  Outcome v = ValidateCustom(t, merged, fieldValidation, warnings);
  if (!v.ok()) return v;
  if (t.key() == "apiextensions.k8s.io/customresourcedefinitions" && !statusOnly) {
    Outcome r = RegisterCrd(merged, true);
    if (!r.ok()) return r;
  }
  if (WithoutVolatile(merged) == WithoutVolatile(*cur)) return {200, *cur};
  if (dryRun) return {200, merged};
  if (t.hasGeneration && SpecChanged(*cur, merged, t.statusSubresource)) {
    merged["metadata"]["generation"] = oldMd.value("generation", 1) + 1;
  }
  Json prev = *cur;
  if (merged["metadata"].contains("deletionTimestamp") ||
      merged["metadata"].contains("ownerReferences") ||
      prev["metadata"].contains("ownerReferences")) {
    gcDirty = true;
  }
  ++rv;
  merged["metadata"]["resourceVersion"] = std::to_string(rv);
  // The last finalizer gone from an object being deleted deletes it, unless it is a pod whose
  // graceful deletion is still under way (its kubelet deletes it once its containers ended).
  if (merged["metadata"].contains("deletionTimestamp") &&
      merged["metadata"].value("finalizers", Json::array()).empty() &&
      oldMd.value("deletionGracePeriodSeconds", 0L) == 0) {
    objects[t.key()].erase(ns + "/" + name);
    Emit(t, "DELETED", merged, prev);
    if (t.key() == "apiextensions.k8s.io/customresourcedefinitions") UnregisterCrd(merged);
    return {200, merged};
  }
  *cur = merged;
  if (t.key() == "apiextensions.k8s.io/customresourcedefinitions" && !statusOnly) {
    RegisterCrd(merged, false);
  }
  Emit(t, "MODIFIED", merged, prev);
  return {200, merged};
}

void KubeSim::Impl::RemoveLocked(const ResourceType& t, const std::string& ns,
                                 const std::string& name) {
  auto& m = objects[t.key()];
  auto it = m.find((t.namespaced ? ns : "") + "/" + name);
  if (it == m.end()) return;
  Json prev = it->second;
  Json obj = it->second;
  m.erase(it);
  gcDirty = true;
  ++rv;
  obj["metadata"]["resourceVersion"] = std::to_string(rv);
  Emit(t, "DELETED", obj, prev);
  if (t.key() == "apiextensions.k8s.io/customresourcedefinitions") UnregisterCrd(obj);
}

Outcome KubeSim::Impl::DeleteLocked(const ResourceType& t, const std::string& nsIn,
                                    const std::string& name, const DeleteOptions& options) {
  std::string ns = t.namespaced ? nsIn : "";
  Json* cur = FindObject(t, ns, name);
  if (cur == nullptr) return NotFound(t, name);
  Json& md = (*cur)["metadata"];
  if (!options.preconditionUid.empty() && options.preconditionUid != md.value("uid", "")) {
    return Conflict(t, name,
                    "Precondition failed: UID in precondition: " + options.preconditionUid +
                        ", UID in object meta: " + md.value("uid", ""));
  }
  if (!options.preconditionResourceVersion.empty() &&
      options.preconditionResourceVersion != md.value("resourceVersion", "")) {
    return Conflict(t, name,
                    "Precondition failed: ResourceVersion in precondition: " +
                        options.preconditionResourceVersion +
                        ", ResourceVersion in object meta: " + md.value("resourceVersion", ""));
  }
  if (options.dryRun) return {200, *cur};
  Json finalizers = md.value("finalizers", Json::array());
  std::string policy = options.propagationPolicy;
  bool addFinalizer = false;
  if (policy == "Foreground" || policy == "Orphan") {
    std::string f = policy == "Foreground" ? "foregroundDeletion" : "orphan";
    bool have = false;
    for (const auto& x : finalizers) have = have || x == f;
    if (!have) {
      finalizers.push_back(f);
      addFinalizer = true;
    }
  }
  // Pods with a running process end gracefully: the kubelet kills it, then removes the pod.
  bool gracefulPod = false;
  if (t.key() == "/pods") {
    std::string uid = md.value("uid", "");
    auto run = runs.find(uid);
    gracefulPod = run != runs.end() && run->second.pid > 0 &&
                  !(options.gracePeriodSeconds.has_value() && *options.gracePeriodSeconds == 0);
    if (run != runs.end() && !gracefulPod) run->second.deleting = true;
  }
  bool isNamespace = t.key() == "/namespaces";
  if (!finalizers.empty() || gracefulPod || isNamespace) {
    gcDirty = true;
    Json prev = *cur;
    bool changed = addFinalizer;
    if (!md.contains("deletionTimestamp")) {
      md["deletionTimestamp"] = NowRfc3339();
      long grace = gracefulPod ? options.gracePeriodSeconds.value_or(
                                     (*cur)["spec"].value("terminationGracePeriodSeconds", 30L))
                               : 0;
      md["deletionGracePeriodSeconds"] = grace;
      changed = true;
    }
    if (isNamespace) (*cur)["status"]["phase"] = "Terminating";
    md["finalizers"] = finalizers;
    if (finalizers.empty()) md.erase("finalizers");
    if (changed) {
      ++rv;
      md["resourceVersion"] = std::to_string(rv);
      Emit(t, "MODIFIED", *cur, prev);
    }
    return {200, *cur};
  }
  Json obj = *cur;
  RemoveLocked(t, ns, name);
  if (t.crd) {
    return {200, StatusBody(200, "", "",
                            {{"name", name},
                             {"group", t.group},
                             {"kind", t.plural},
                             {"uid", obj["metadata"].value("uid", "")}})};
  }
  return {200, obj};
}

Outcome KubeSim::Impl::RegisterCrd(const Json& crd, bool dryRun) {
  const ResourceType& crdType = *FindType("apiextensions.k8s.io", "customresourcedefinitions");
  std::string crdName = crd["metadata"].value("name", "");
  const Json& spec = crd.value("spec", Json::object());
  std::vector<FieldError> errs;
  std::string group = spec.value("group", "");
  const Json names = spec.value("names", Json::object());
  std::string plural = names.value("plural", "");
  std::string kind = names.value("kind", "");
  std::string scope = spec.value("scope", "");
  if (group.empty()) errs.push_back({"FieldValueRequired", "spec.group", "Required value"});
  if (plural.empty()) errs.push_back({"FieldValueRequired", "spec.names.plural", "Required value"});
  if (kind.empty()) errs.push_back({"FieldValueRequired", "spec.names.kind", "Required value"});
  if (scope != "Namespaced" && scope != "Cluster") {
    errs.push_back(
        {"FieldValueNotSupported", "spec.scope",
         "Unsupported value: \"" + scope + "\": supported values: \"Cluster\", \"Namespaced\""});
  }
  if (!plural.empty() && !group.empty() && crdName != plural + "." + group) {
    errs.push_back(
        {"FieldValueInvalid", "metadata.name",
         "Invalid value: \"" + crdName + "\": must be spec.names.plural+\".\"+spec.group"});
  }
  const Json versions = spec.value("versions", Json::array());
  const Json* version = nullptr;
  for (const auto& v : versions) {
    if (v.value("storage", false)) version = &v;
  }
  if (version == nullptr) {
    errs.push_back(
        {"FieldValueInvalid", "spec.versions",
         "Invalid value: []apiextensions.CustomResourceDefinitionVersion(nil): must have "
         "exactly one version marked as storage version"});
  }
  if (!errs.empty()) return Invalid(crdType, crdName, errs);
  if (dryRun) return {};
  ResourceType t;
  t.group = group;
  t.version = (*version)["name"].get<std::string>();
  t.kind = kind;
  t.plural = plural;
  t.singular = names.value("singular", "");
  if (t.singular.empty()) {
    t.singular = kind;
    for (char& c : t.singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (const auto& s : names.value("shortNames", Json::array())) t.shortNames.push_back(s);
  for (const auto& s : names.value("categories", Json::array())) t.categories.push_back(s);
  t.namespaced = scope == "Namespaced";
  t.crd = true;
  t.hasGeneration = true;
  t.statusSubresource =
      version->contains("subresources") && (*version)["subresources"].contains("status");
  if (version->contains("schema")) t.schema = (*version)["schema"].value("openAPIV3Schema", Json());
  t.printerColumns = version->value("additionalPrinterColumns", Json::array());
  types[t.key()] = t;
  return {};
}

void KubeSim::Impl::UnregisterCrd(const Json& crd) {
  const Json& spec = crd["spec"];
  std::string key = spec.value("group", "") + "/" + spec["names"].value("plural", "");
  auto it = types.find(key);
  if (it == types.end()) return;
  ResourceType t = it->second;
  std::vector<std::pair<std::string, std::string>> doomed;
  for (const auto& [k, o] : objects[key]) {
    doomed.emplace_back(o["metadata"].value("namespace", ""), o["metadata"].value("name", ""));
  }
  for (const auto& [ns, name] : doomed) RemoveLocked(t, ns, name);
  types.erase(key);
  objects.erase(key);
}

}  // namespace perfgate::kubesim
