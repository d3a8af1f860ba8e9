// ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) as kube-apiserver applies it to
// a CREATE or UPDATE: bindings with the Deny action, matchConstraints and the binding's
// matchResources (resource rules, namespace and object selectors), matchConditions, lazy
// variables, validations with message/messageExpression and reason, and failurePolicy. The
// expressions run on kube-sim's CEL subset (cel.h). Not modelled: paramKind/paramRef, the
// Warn and Audit actions, auditAnnotations, DELETE and CONNECT, type checking at creation.
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "tests/kube-sim/cel.h"
#include "tests/kube-sim/internal.h"

namespace perfgate::kubesim {
namespace {

bool ResourceMatches(const Json& resources, const AdmissionRequest& r) {
  if (!resources.is_array()) return false;
  const std::string& plural = r.type->plural;
  for (const auto& v : resources) {
    const std::string s = v.is_string() ? v.get<std::string>() : "";
    const size_t slash = s.find('/');
    const std::string res = s.substr(0, slash);
    const std::string sub = slash == std::string::npos ? "" : s.substr(slash + 1);
    if (res != "*" && res != plural) continue;
    if (slash == std::string::npos ? r.subresource.empty() : (sub == "*" || sub == r.subresource))
      return true;
  }
  return false;
}

bool RuleMatches(const Json& rule, const AdmissionRequest& r) {
  const std::string scope = rule.value("scope", "*");
  if (scope == "Cluster" && r.type->namespaced) return false;
  if (scope == "Namespaced" && !r.type->namespaced) return false;
  return ListMatches(rule.value("operations", Json::array()), r.operation) &&
         ListMatches(rule.value("apiGroups", Json::array()), r.type->group) &&
         ListMatches(rule.value("apiVersions", Json::array()), r.version) &&
         ResourceMatches(rule.value("resources", Json::array()), r);
}

// matchConstraints of a policy, or matchResources of a binding (`require_rules`: whether an
// absent resourceRules matches nothing, as for a policy, or everything, as for a binding).
bool MatchesResources(const Json& m, const AdmissionRequest& r, bool require_rules) {
  if (!m.is_object()) return !require_rules;
  const Json rules = m.value("resourceRules", Json::array());
  if (!rules.empty() || require_rules) {
    bool any = false;
    for (const auto& rule : rules) any = any || RuleMatches(rule, r);
    if (!any) return false;
  }
  for (const auto& rule : m.value("excludeResourceRules", Json::array())) {
    if (RuleMatches(rule, r)) return false;
  }
  const Json labels = r.object->value("metadata", Json::object()).value("labels", Json::object());
  if (m.contains("objectSelector") && !MatchLabelSelectorObject(m["objectSelector"], labels)) {
    return false;
  }
  if (m.contains("namespaceSelector")) {
    // A namespaced object is matched by its namespace's labels, a Namespace by its own; other
    // cluster-scoped objects are never skipped by a namespace selector.
    Json ns_labels;
    if (r.type->namespaced) {
      ns_labels =
          r.namespaceObject != nullptr
              ? r.namespaceObject->value("metadata", Json::object()).value("labels", Json::object())
              : Json::object();
    } else if (r.type->kind == "Namespace" && r.type->group.empty()) {
      ns_labels = labels;
    }
    if (!ns_labels.is_null() && !MatchLabelSelectorObject(m["namespaceSelector"], ns_labels)) {
      return false;
    }
  }
  return true;
}

int CodeOf(const std::string& reason) {
  if (reason == "Forbidden") return 403;
  if (reason == "Unauthorized") return 401;
  if (reason == "RequestEntityTooLarge") return 413;
  return 422;  // Invalid, and the default
}

Json RequestJson(const AdmissionRequest& r) {
  Json extra = Json::object();
  for (const auto& [k, v] : r.user->extra) extra[k] = v;
  Json user = {{"username", r.user->name}, {"groups", r.user->groups}, {"extra", extra}};
  if (!r.user->uid.empty()) user["uid"] = r.user->uid;
  return {{"kind", {{"group", r.type->group}, {"version", r.version}, {"kind", r.type->kind}}},
          {"resource",
           {{"group", r.type->group}, {"version", r.version}, {"resource", r.type->plural}}},
          {"subResource", r.subresource},
          {"name", r.name},
          {"namespace", r.ns},
          {"operation", r.operation},
          {"userInfo", user},
          {"dryRun", r.dryRun}};
}

// Policies are evaluated on every matching write: each expression is parsed once (a policy
// that does not parse was refused when it was stored).
Result<Json> Run(const std::string& expression, const cel::Program::Env& env) {
  static std::mutex mu;
  static std::map<std::string, cel::Program> compiled;
  std::optional<cel::Program> program;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = compiled.find(expression); it != compiled.end()) program = it->second;
  }
  if (!program) {
    ASSIGN_OR_RETURN(auto fresh, cel::Program::Compile(expression));
    std::lock_guard<std::mutex> lock(mu);
    program = compiled.emplace(expression, std::move(fresh)).first->second;
  }
  return program->Evaluate(env);
}

}  // namespace

std::optional<Outcome> EvaluateAdmissionPolicies(const std::map<std::string, Json>& policies,
                                                 const std::map<std::string, Json>& bindings,
                                                 const AdmissionRequest& r) {
  for (const auto& [bkey, binding] : bindings) {
    const Json bspec = binding.value("spec", Json::object());
    if (!ListMatches(bspec.value("validationActions", Json::array()), "Deny")) continue;
    auto pit = policies.find("/" + bspec.value("policyName", ""));
    if (pit == policies.end()) continue;
    const Json& policy = pit->second;
    const Json pspec = policy.value("spec", Json::object());
    if (!MatchesResources(pspec.value("matchConstraints", Json()), r, true)) continue;
    if (bspec.contains("matchResources") && !MatchesResources(bspec["matchResources"], r, false))
      continue;

    const std::string policy_name = policy["metadata"].value("name", "");
    const std::string binding_name = binding["metadata"].value("name", "");
    const bool fail_closed = pspec.value("failurePolicy", "Fail") != "Ignore";
    auto deny = [&](const std::string& reason, const std::string& message) {
      const std::string text = "ValidatingAdmissionPolicy '" + policy_name + "' with binding '" +
                               binding_name + "' denied request: " + message;
      return Err(CodeOf(reason), reason,
                 r.type->qualified() + " \"" + r.name + "\" is forbidden: " + text,
                 {{"name", r.name},
                  {"group", r.type->group},
                  {"kind", r.type->plural},
                  {"causes", {{{"message", text}}}}});
    };

    cel::Program::Env env;
    env.vars["object"] = *r.object;
    env.vars["oldObject"] = r.oldObject != nullptr ? *r.oldObject : Json();
    env.vars["request"] = RequestJson(r);
    env.vars["params"] = Json();
    env.vars["namespaceObject"] = r.namespaceObject != nullptr ? *r.namespaceObject : Json();
    std::map<std::string, Json> declared;
    for (const auto& v : pspec.value("variables", Json::array())) {
      declared[v.value("name", "")] = v.value("expression", "");
    }
    std::map<std::string, Result<Json>> cache;
    std::map<std::string, bool> evaluating;
    env.variable = [&](const std::string& name) -> Result<Json> {
      if (auto it = cache.find(name); it != cache.end()) return it->second;
      auto d = declared.find(name);
      if (d == declared.end()) return InvalidArgument("undefined variable '" + name + "'");
      if (evaluating[name]) return InvalidArgument("variable '" + name + "' refers to itself");
      evaluating[name] = true;
      Result<Json> v = Run(d->second.get<std::string>(), env);
      evaluating[name] = false;
      cache.emplace(name, v);
      return v;
    };

    bool skip = false;
    std::optional<Outcome> denied;
    for (const auto& c : pspec.value("matchConditions", Json::array())) {
      const std::string expr = c.value("expression", "");
      auto v = Run(expr, env);
      if (!v.ok() || !v->is_boolean()) {
        const std::string why = v.ok() ? "does not evaluate to a bool" : v.status().message();
        if (fail_closed) {
          denied = deny("Invalid", "matchCondition '" + c.value("name", "") +
                                       "' resulted in "
                                       "error: " +
                                       why);
        } else {
          skip = true;
        }
        break;
      }
      if (!v->get<bool>()) {
        skip = true;
        break;
      }
    }
    if (denied) return denied;
    if (skip) continue;

    for (const auto& val : pspec.value("validations", Json::array())) {
      const std::string expr = val.value("expression", "");
      auto v = Run(expr, env);
      if (!v.ok() || !v->is_boolean()) {
        if (!fail_closed) continue;
        return deny("Invalid", "expression '" + expr + "' resulted in error: " +
                                   (v.ok() ? "does not evaluate to a bool" : v.status().message()));
      }
      if (v->get<bool>()) continue;
      std::string message;
      if (val.contains("messageExpression")) {
        auto m = Run(val.value("messageExpression", ""), env);
        if (m.ok() && m->is_string()) message = m->get<std::string>();
      }
      if (message.empty()) message = val.value("message", "");
      if (message.empty()) message = "failed expression: " + expr;
      return deny(val.value("reason", "Invalid"), message);
    }
  }
  return std::nullopt;
}

std::vector<std::string> CheckPolicyExpressions(const Json& policy) {
  std::vector<std::string> errors;
  const Json spec = policy.value("spec", Json::object());
  auto check = [&](const std::string& path, const Json& holder, const char* field) {
    if (!holder.contains(field)) return;
    auto p = cel::Program::Compile(holder.value(field, ""));
    if (!p.ok()) errors.push_back(path + "." + field + ": " + p.status().message());
  };
  for (const char* list : {"matchConditions", "variables", "validations"}) {
    const Json items = spec.value(list, Json::array());
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string path = "spec." + std::string(list) + "[" + std::to_string(i) + "]";
      check(path, items[i], "expression");
      check(path, items[i], "messageExpression");
    }
  }
  return errors;
}

std::string PodSecurityViolations(const Json& namespaceObject, const Json& pod,
                                  std::string* level) {
  const std::string enforce = namespaceObject.value("metadata", Json::object())
                                  .value("labels", Json::object())
                                  .value("pod-security.kubernetes.io/enforce", "privileged");
  *level = enforce;
  if (enforce != "baseline" && enforce != "restricted") return "";
  const bool restricted = enforce == "restricted";
  const Json spec = pod.value("spec", Json::object());
  const Json psc = spec.value("securityContext", Json::object());
  std::vector<Json> containers;
  for (const char* k : {"initContainers", "containers"}) {
    for (const auto& c : spec.value(k, Json::array())) containers.push_back(c);
  }
  // "container \"a\"" or "containers \"a\", \"b\"", as the admission plugin names them.
  auto named = [](const std::vector<std::string>& names) {
    std::string out = names.size() == 1 ? "container " : "containers ";
    for (size_t i = 0; i < names.size(); ++i) out += (i ? ", \"" : "\"") + names[i] + "\"";
    return out;
  };
  auto csc = [](const Json& c) { return c.value("securityContext", Json::object()); };
  std::vector<std::string> reasons;
  auto each = [&](auto bad) {
    std::vector<std::string> names;
    for (const auto& c : containers) {
      if (bad(c)) names.push_back(c.value("name", ""));
    }
    return names;
  };
  if (restricted) {
    auto names =
        each([&](const Json& c) { return csc(c).value("allowPrivilegeEscalation", true); });
    if (!names.empty()) {
      reasons.push_back("allowPrivilegeEscalation != false (" + named(names) +
                        " must set securityContext.allowPrivilegeEscalation=false)");
    }
  }
  static const std::set<std::string> kBaselineCaps = {
      "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",      "MKNOD",
      "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SETUID", "SYS_CHROOT"};
  std::vector<std::string> added;
  std::vector<std::string> adders;
  for (const auto& c : containers) {
    bool any = false;
    for (const auto& cap :
         csc(c).value("capabilities", Json::object()).value("add", Json::array())) {
      if (cap.is_string() && kBaselineCaps.count(cap.get<std::string>()) == 0) {
        added.push_back(cap.get<std::string>());
        any = true;
      }
    }
    if (any) adders.push_back(c.value("name", ""));
  }
  if (!adders.empty()) {
    std::string caps;
    for (const auto& a : added) caps += (caps.empty() ? "\"" : ", \"") + a + "\"";
    reasons.push_back("non-default capabilities (" + named(adders) + " must not include " + caps +
                      " in securityContext.capabilities.add)");
  }
  if (restricted) {
    auto names = each([&](const Json& c) {
      const Json caps = csc(c).value("capabilities", Json::object());
      bool drops_all = false;
      for (const auto& d : caps.value("drop", Json::array())) drops_all |= d == "ALL";
      return !drops_all;
    });
    if (!names.empty()) {
      reasons.push_back("unrestricted capabilities (" + named(names) +
                        " must set securityContext.capabilities.drop=[\"ALL\"])");
    }
  }
  std::vector<std::string> host;
  for (const char* k : {"hostNetwork", "hostPID", "hostIPC"}) {
    if (spec.value(k, false)) host.push_back(std::string(k) + "=true");
  }
  if (!host.empty()) {
    std::string joined;
    for (const auto& h : host) joined += (joined.empty() ? "" : ", ") + h;
    reasons.push_back("host namespaces (" + joined + ")");
  }
  {
    auto names = each([&](const Json& c) { return csc(c).value("privileged", false); });
    if (!names.empty()) {
      reasons.push_back("privileged (" + named(names) +
                        " must not set securityContext.privileged=true)");
    }
  }
  if (restricted) {
    const bool pod_non_root = psc.value("runAsNonRoot", false);
    auto names = each([&](const Json& c) { return !csc(c).value("runAsNonRoot", pod_non_root); });
    if (!names.empty()) {
      reasons.push_back("runAsNonRoot != true (pod or " + named(names) +
                        " must set securityContext.runAsNonRoot=true)");
    }
    const std::string pod_seccomp = psc.value("seccompProfile", Json::object()).value("type", "");
    names = each([&](const Json& c) {
      const std::string t =
          csc(c).value("seccompProfile", Json::object()).value("type", pod_seccomp);
      return t != "RuntimeDefault" && t != "Localhost";
    });
    if (!names.empty()) {
      reasons.push_back("seccompProfile (pod or " + named(names) +
                        " must set securityContext.seccompProfile.type to \"RuntimeDefault\" or "
                        "\"Localhost\")");
    }
  }
  std::string out;
  for (const auto& r : reasons) out += (out.empty() ? "" : ", ") + r;
  return out;
}

}  // namespace perfgate::kubesim
