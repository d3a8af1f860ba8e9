// Internals shared by kube-sim's translation units. Not an API.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/time.h"
#include "tests/kube-sim/https_server.h"
#include "tests/kube-sim/kube_sim.h"
#include "tests/kube-sim/pki.h"

namespace perfgate::kubesim {

// A boolean query parameter as kube-apiserver reads one ("watch=1", "follow=true").
inline bool Truthy(const std::string& s) { return s == "1" || s == "true" || s == "True"; }

// o[key], or null when `o` is not an object or has no `key`: read in place, without a copy.
inline const Json& Field(const Json& o, const char* key) {
  static const Json kNull;
  if (!o.is_object()) return kNull;
  auto it = o.find(key);
  return it == o.end() ? kNull : *it;
}

// A URL path's non-empty segments.
std::vector<std::string> SplitPath(const std::string& path);

// The taints the node lifecycle controller keeps in step with a node's Ready condition.
inline constexpr const char* kNotReadyTaint = "node.kubernetes.io/not-ready";
inline constexpr const char* kUnreachableTaint = "node.kubernetes.io/unreachable";

struct ResourceType {
  std::string group;
  std::string version;
  std::string kind;
  std::string plural;
  std::string singular;
  std::vector<std::string> shortNames;
  std::vector<std::string> categories;
  bool namespaced = true;
  bool statusSubresource = false;
  bool hasGeneration = false;
  bool crd = false;
  bool virtualOnly = false;  // create-only review APIs, never stored
  Json schema;               // CRD openAPIV3Schema; null for built-ins
  Json printerColumns = Json::array();
  std::vector<std::string> extraSubresources;  // besides status: log, token, ...

  std::string apiVersion() const { return group.empty() ? version : group + "/" + version; }
  std::string key() const { return group + "/" + plural; }
  // "pods", "perfvalidations.perfgate.io": how kube-apiserver names a resource in messages.
  std::string qualified() const { return group.empty() ? plural : plural + "." + group; }
  std::string qualifiedKind() const { return group.empty() ? kind : kind + "." + group; }
};

// An HTTP answer: a 2xx with an object, or an error with a Status body.
struct Outcome {
  int code = 200;
  Json body;
  bool ok() const { return code < 400; }
};

Json StatusBody(int code, const std::string& reason, const std::string& message,
                Json details = nullptr);
Outcome Err(int code, const std::string& reason, const std::string& message,
            Json details = nullptr);
Outcome NotFound(const ResourceType& t, const std::string& name);
Outcome AlreadyExists(const ResourceType& t, const std::string& name);
Outcome Conflict(const ResourceType& t, const std::string& name, const std::string& why);
Outcome BadRequest(const std::string& message);
struct FieldError {
  std::string type;     // FieldValueInvalid, FieldValueRequired, FieldValueNotSupported, ...
  std::string field;    // spec.level
  std::string message;  // full text after "field: "
};
Outcome Invalid(const ResourceType& t, const std::string& name,
                const std::vector<FieldError>& errs);
// ObjectMeta's label keys and values, annotation keys and total annotation size, in
// kube-apiserver's words (metadata.cc); empty when valid.
std::vector<FieldError> MetadataErrors(const Json& md);
// metadata.name as a DNS-1123 subdomain (most kinds), in kube-apiserver's words.
std::vector<FieldError> NameErrors(const std::string& name);
// IsQualifiedName's messages for `value` (a label key, a taint key); empty when valid.
std::vector<std::string> QualifiedNameErrors(const std::string& value);
// The spec rules kube-apiserver checks for the built-in kinds kube-sim validates beyond their
// metadata (dra.cc: ResourceSlices, DeviceTaintRules); empty when valid or not such a kind.
std::vector<FieldError> BuiltinSpecErrors(const std::string& typeKey, const Json& obj);

struct WatchEvent {
  uint64_t rv = 0;
  std::string resKey;
  std::string type;  // ADDED MODIFIED DELETED
  Json object;
  Json previous;  // null for ADDED
};

struct UserInfo {
  std::string name;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
  std::string uid;
};

struct PodRun {
  std::string key;  // ns/name
  std::string uid;
  pid_t pid = -1;
  std::string root;
  std::string logPath;
  std::chrono::steady_clock::time_point started;
  std::optional<std::chrono::steady_clock::time_point> killAt;  // SIGKILL after grace
  bool deadlineKilled = false;
  bool deleting = false;
  int restarts = 0;
  bool finished = false;
  std::string logText;  // scale mode: the canned log
  std::optional<std::chrono::steady_clock::time_point> restartAt;
};

// Schema (structural-schema validation and pruning, defaults).
// Validates `value` against `schema` at `path`, appending errors; removes unknown fields and
// reports their paths in `unknown` (for strict field validation). Applies defaults.
void ValidateAndPrune(const Json& schema, Json& value, const std::string& path,
                      std::vector<FieldError>& errs, std::vector<std::string>& unknown);
// Evaluates a kubectl-style JSONPath (".status.conditions[?(@.type==\"Ready\")].status").
std::vector<Json> JsonPathEval(const Json& obj, const std::string& path);
// Strategic merge patch as far as kubectl's client-side apply needs it for built-in types.
Json StrategicMerge(const Json& original, const Json& patch, const std::string& fieldName = "");
// Label selector (=, ==, !=, in, notin, exists, !exists) and field selector matching.
bool MatchLabelSelector(const std::string& selector, const Json& labels, std::string* error);
bool MatchFieldSelector(const std::string& selector, const Json& object, std::string* error);
bool MatchLabelSelectorObject(const Json& selector, const Json& labels);  // metav1.LabelSelector
// One requirement of a label selector or node selector term: In, NotIn, Exists, DoesNotExist,
// and (node selectors) Gt, Lt; an unknown operator matches.
bool MatchLabelExpression(const Json& expression, const Json& labels);
std::string HumanDuration(std::chrono::seconds age);
// The Kubernetes protobuf envelope ("k8s\0" + runtime.Unknown) for the kinds kubectl's typed
// commands send; *ok is false for anything else.
Json DecodeKubeProtobuf(const std::string& body, bool* ok);
// Whether a list of an RBAC rule or an admission rule (verbs, apiGroups, operations, ...)
// names `value` or "*".
bool ListMatches(const Json& list, const std::string& value);

// A CREATE or UPDATE as ValidatingAdmissionPolicies see it (admission_policy.cc).
struct AdmissionRequest {
  const ResourceType* type = nullptr;
  std::string version;
  std::string subresource;
  std::string operation;  // CREATE | UPDATE
  std::string ns;
  std::string name;
  bool dryRun = false;
  const UserInfo* user = nullptr;
  const Json* object = nullptr;
  const Json* oldObject = nullptr;        // UPDATE only
  const Json* namespaceObject = nullptr;  // a namespaced object's Namespace, if it exists
};
// The first denial of the stored policies (by "/name") through their bindings, as
// kube-apiserver words it; nullopt when every matching policy admits the request.
std::optional<Outcome> EvaluateAdmissionPolicies(const std::map<std::string, Json>& policies,
                                                 const std::map<std::string, Json>& bindings,
                                                 const AdmissionRequest& request);
// "spec.validations[0].expression: CEL: ..." for each expression of a policy that does not
// compile (the API server refuses such a policy).
std::vector<std::string> CheckPolicyExpressions(const Json& policy);
// Pod Security Admission: the reasons a new pod violates the level its namespace enforces
// (label pod-security.kubernetes.io/enforce: baseline or restricted), joined as
// kube-apiserver joins them after 'violates PodSecurity "<level>:latest": '; "" when admitted.
std::string PodSecurityViolations(const Json& namespaceObject, const Json& pod, std::string* level);

}  // namespace perfgate::kubesim
