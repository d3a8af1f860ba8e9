// kube-sim authentication (admin bearer token, bound service-account JWTs) and RBAC
// authorization from the stored Roles, ClusterRoles and bindings.
#include <ctime>

#include "tests/kube-sim/impl.h"

namespace perfgate::kubesim {

Result<std::string> KubeSim::Impl::IssueTokenLocked(const std::string& ns, const std::string& sa,
                                                    const std::string& podName,
                                                    int expirationSeconds, Json* claimsOut) {
  Json* saObj = FindObject(*FindType("", "serviceaccounts"), ns, sa);
  if (saObj == nullptr) return ::perfgate::NotFound("serviceaccounts \"" + sa + "\" not found");
  long now = static_cast<long>(std::time(nullptr));
  Json k8s = {{"namespace", ns},
              {"serviceaccount", {{"name", sa}, {"uid", (*saObj)["metadata"].value("uid", "")}}}};
  if (!podName.empty()) {
    Json* pod = FindObject(*FindType("", "pods"), ns, podName);
    if (pod == nullptr) return ::perfgate::NotFound("pods \"" + podName + "\" not found");
    k8s["pod"] = {{"name", podName}, {"uid", (*pod)["metadata"].value("uid", "")}};
    std::string nodeName = (*pod)["spec"].value("nodeName", "");
    if (!nodeName.empty()) {
      Json* node = FindObject(*FindType("", "nodes"), "", nodeName);
      k8s["node"] = {{"name", nodeName},
                     {"uid", node != nullptr ? (*node)["metadata"].value("uid", "") : ""}};
    }
  }
  Json claims = {{"iss", issuer},   {"sub", "system:serviceaccount:" + ns + ":" + sa},
                 {"aud", {issuer}}, {"iat", now},
                 {"nbf", now},      {"exp", now + expirationSeconds},
                 {"jti", NewUid()}, {"kubernetes.io", k8s}};
  if (claimsOut != nullptr) *claimsOut = claims;
  return SignJwt(claims.dump(), signingKey);
}

std::optional<UserInfo> KubeSim::Impl::Authenticate(const HttpRequest& req) const {
  std::string auth = req.Header("authorization");
  const std::string prefix = "Bearer ";
  if (auth.rfind(prefix, 0) != 0) return std::nullopt;
  std::string token = auth.substr(prefix.size());
  if (token == adminToken) {
    return UserInfo{"kubernetes-admin", {"system:masters", "system:authenticated"}, {}, ""};
  }
  Result<std::string> payload = VerifyJwt(token, signingKey);
  if (!payload.ok()) return std::nullopt;
  Json claims = Json::parse(*payload, nullptr, false);
  if (!claims.is_object() || claims.value("iss", "") != issuer) return std::nullopt;
  if (claims.value("exp", 0L) < static_cast<long>(std::time(nullptr))) return std::nullopt;
  const Json k8s = claims.value("kubernetes.io", Json::object());
  std::string ns = k8s.value("namespace", "");
  const Json saClaim = k8s.value("serviceaccount", Json::object());
  std::string sa = saClaim.value("name", "");
  const Json* saObj = FindObject(*FindType("", "serviceaccounts"), ns, sa);
  // Like kube-apiserver, a token outlives neither its service account nor the pod it is bound to.
  if (saObj == nullptr || (*saObj)["metadata"].value("uid", "") != saClaim.value("uid", "")) {
    return std::nullopt;
  }
  UserInfo u;
  u.name = "system:serviceaccount:" + ns + ":" + sa;
  u.uid = saClaim.value("uid", "");
  u.groups = {"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"};
  if (k8s.contains("pod")) {
    std::string podName = k8s["pod"].value("name", "");
    const Json* pod = FindObject(*FindType("", "pods"), ns, podName);
    if (pod == nullptr || (*pod)["metadata"].value("uid", "") != k8s["pod"].value("uid", "")) {
      return std::nullopt;
    }
    u.extra["authentication.kubernetes.io/pod-name"] = {podName};
    u.extra["authentication.kubernetes.io/pod-uid"] = {k8s["pod"].value("uid", "")};
  }
  if (k8s.contains("node")) {
    u.extra["authentication.kubernetes.io/node-name"] = {k8s["node"].value("name", "")};
    u.extra["authentication.kubernetes.io/node-uid"] = {k8s["node"].value("uid", "")};
  }
  u.extra["authentication.kubernetes.io/credential-id"] = {"JTI=" + claims.value("jti", "")};
  return u;
}

bool ListMatches(const Json& list, const std::string& value) {
  if (!list.is_array()) return false;
  for (const auto& v : list) {
    if (v.is_string() && (v == "*" || v == value)) return true;
  }
  return false;
}

namespace {

bool RuleAllows(const Json& rule, const std::string& verb, const std::string& group,
                const std::string& resource, const std::string& subresource,
                const std::string& name, const std::string& path) {
  if (!ListMatches(rule.value("verbs", Json::array()), verb)) return false;
  if (!path.empty()) {
    for (const auto& u : rule.value("nonResourceURLs", Json::array())) {
      std::string s = u.get<std::string>();
      if (s == "*" || s == path) return true;
      if (!s.empty() && s.back() == '*' && path.rfind(s.substr(0, s.size() - 1), 0) == 0)
        return true;
    }
    return false;
  }
  if (!ListMatches(rule.value("apiGroups", Json::array()), group)) return false;
  std::string full = subresource.empty() ? resource : resource + "/" + subresource;
  bool resOk = false;
  for (const auto& r : rule.value("resources", Json::array())) {
    std::string s = r.get<std::string>();
    if (s == "*" || s == full || (!subresource.empty() && s == "*/" + subresource)) resOk = true;
  }
  if (!resOk) return false;
  const Json names = rule.value("resourceNames", Json::array());
  if (!names.empty() && !ListMatches(names, name)) return false;
  return true;
}

bool SubjectMatches(const Json& subject, const UserInfo& user) {
  std::string kind = subject.value("kind", "");
  std::string name = subject.value("name", "");
  if (kind == "User") return name == user.name;
  if (kind == "Group") {
    for (const auto& g : user.groups) {
      if (g == name) return true;
    }
    return false;
  }
  if (kind == "ServiceAccount") {
    return user.name == "system:serviceaccount:" + subject.value("namespace", "") + ":" + name;
  }
  return false;
}

}  // namespace

bool KubeSim::Impl::Authorize(const UserInfo& user, const std::string& verb,
                              const std::string& group, const std::string& resource,
                              const std::string& subresource, const std::string& ns,
                              const std::string& name, const std::string& path) const {
  for (const auto& g : user.groups) {
    if (g == "system:masters") return true;
  }
  auto rulesOf = [&](const std::string& kind, const std::string& roleNs,
                     const std::string& roleName) -> Json {
    const ResourceType* t =
        FindType("rbac.authorization.k8s.io", kind == "ClusterRole" ? "clusterroles" : "roles");
    const Json* role = FindObject(*t, roleNs, roleName);
    return role == nullptr ? Json::array() : role->value("rules", Json::array());
  };
  auto anyAllows = [&](const Json& rules) {
    for (const auto& r : rules) {
      if (RuleAllows(r, verb, group, resource, subresource, name, path)) return true;
    }
    return false;
  };
  for (const auto& [k, b] : ObjectsOf("rbac.authorization.k8s.io/clusterrolebindings")) {
    bool match = false;
    for (const auto& s : b.value("subjects", Json::array()))
      match = match || SubjectMatches(s, user);
    if (!match) continue;
    if (anyAllows(rulesOf("ClusterRole", "", b["roleRef"].value("name", "")))) return true;
  }
  if (!ns.empty() && path.empty()) {
    for (const auto& [k, b] : ObjectsOf("rbac.authorization.k8s.io/rolebindings")) {
      if (b["metadata"].value("namespace", "") != ns) continue;
      bool match = false;
      for (const auto& s : b.value("subjects", Json::array()))
        match = match || SubjectMatches(s, user);
      if (!match) continue;
      std::string kind = b["roleRef"].value("kind", "");
      if (anyAllows(rulesOf(kind, kind == "Role" ? ns : "", b["roleRef"].value("name", "")))) {
        return true;
      }
    }
  }
  return false;
}

std::optional<Outcome> KubeSim::Impl::EnforceOwnerReferencePermissions(
    const ResourceType& t, const std::string& ns, const std::string& name, const UserInfo& user,
    const Json& obj, const Json* old, std::vector<AuthorizationCheck>* checks) {
  // Each authorization asked on the caller's behalf, as audit would want to know.
  auto authorize = [&](const std::string& verb, const std::string& group,
                       const std::string& resource, const std::string& subresource,
                       const std::string& object_name) {
    const bool allowed = Authorize(user, verb, group, resource, subresource, ns, object_name, "");
    if (checks != nullptr) {
      checks->push_back({{verb, group, resource, subresource, ns, object_name}, allowed});
    }
    return allowed;
  };
  auto refs = [](const Json* o) {
    if (o == nullptr) return Json::array();
    return o->value("metadata", Json::object()).value("ownerReferences", Json::array());
  };
  const Json now = refs(&obj);
  const Json before = refs(old);
  if (now == before) return std::nullopt;
  auto forbidden = [&](const std::string& why) {
    return Err(403, "Forbidden", t.qualified() + " \"" + name + "\" is forbidden: " + why,
               {{"name", name}, {"group", t.group}, {"kind", t.plural}});
  };
  // Creating an object is as good as being able to delete it.
  if (old != nullptr && !authorize("delete", t.group, t.plural, "", name)) {
    return forbidden("cannot set an ownerRef on a resource you can't delete: User \"" + user.name +
                     "\" cannot delete resource \"" + t.plural + "\" in API group \"" + t.group +
                     "\"");
  }
  for (const auto& ref : now) {
    if (!ref.value("blockOwnerDeletion", false)) continue;
    bool was_blocking = false;
    for (const auto& b : before) {
      was_blocking = was_blocking || (b.value("uid", "") == ref.value("uid", "") &&
                                      b.value("blockOwnerDeletion", false));
    }
    if (was_blocking) continue;
    const ResourceType* owner = FindTypeByKind(ref.value("apiVersion", ""), ref.value("kind", ""));
    // As the plugin does, the owner is looked up in the dependent's namespace.
    if (owner == nullptr ||
        !authorize("update", owner->group, owner->plural, "finalizers", ref.value("name", ""))) {
      const std::string res = owner == nullptr ? ref.value("kind", "") : owner->plural;
      return forbidden(
          "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set "
          "finalizers on: User \"" +
          user.name + "\" cannot update resource \"" + res + "/finalizers\"");
    }
  }
  return std::nullopt;
}

}  // namespace perfgate::kubesim
