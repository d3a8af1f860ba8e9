// PodDisruptionBudgets (policy/v1) and the pods/eviction subresource, as kube-apiserver's
// EvictionREST (pkg/registry/core/pod/storage/eviction.go) and the disruption controller
// (pkg/controller/disruption) answer them, with their wording.
#include <cmath>

#include "common/time.h"
#include "tests/kube-sim/impl.h"

namespace perfgate::kubesim {
namespace {

bool PodReady(const Json& pod) {
  for (const auto& c : pod.value("status", Json::object()).value("conditions", Json::array())) {
    if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

bool Terminating(const Json& pod) {
  return !pod.value("metadata", Json::object()).value("deletionTimestamp", "").empty();
}

std::string Phase(const Json& pod) {
  return pod.value("status", Json::object()).value("phase", "");
}

// An IntOrString of `total`: a count, or a percentage rounded up (as the controller's
// GetScaledValueFromIntOrPercent with roundUp).
int Scaled(const Json& v, int total) {
  if (v.is_number_integer()) return v.get<int>();
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (!s.empty() && s.back() == '%') {
      const int p = std::atoi(s.substr(0, s.size() - 1).c_str());
      return static_cast<int>(std::ceil(static_cast<double>(total) * p / 100.0));
    }
    return std::atoi(s.c_str());
  }
  return 0;
}

// A budget without a selector, or with an empty one, selects no pod for eviction.
bool SelectsPods(const Json& pdb) {
  const Json sel = pdb.value("spec", Json::object()).value("selector", Json());
  return sel.is_object() && (!sel.value("matchLabels", Json::object()).empty() ||
                             !sel.value("matchExpressions", Json::array()).empty());
}

}  // namespace

// The budget's status from the pods it selects now: expectedPods are the selected pods not
// terminal (the real controller reads it from their controller's scale; kube-sim counts the
// pods), currentHealthy those Ready and not being deleted.
Json KubeSim::Impl::PdbStatusLocked(const Json& pdb) {
  const std::string ns = pdb["metadata"].value("namespace", "");
  const Json spec = pdb.value("spec", Json::object());
  const Json selector = spec.value("selector", Json::object());
  int expected = 0;
  int healthy = 0;
  for (const auto& [key, pod] : objects["/pods"]) {
    if (pod["metadata"].value("namespace", "") != ns || !SelectsPods(pdb)) continue;
    if (!MatchLabelSelectorObject(selector, pod["metadata"].value("labels", Json::object()))) {
      continue;
    }
    const std::string phase = Phase(pod);
    if (phase == "Succeeded" || phase == "Failed") continue;
    expected++;
    if (PodReady(pod) && !Terminating(pod)) healthy++;
  }
  int desired = 0;
  if (spec.contains("minAvailable")) {
    desired = Scaled(spec["minAvailable"], expected);
  } else if (spec.contains("maxUnavailable")) {
    desired = std::max(0, expected - Scaled(spec["maxUnavailable"], expected));
  }
  const int allowed = std::max(0, healthy - desired);
  const int64_t generation = pdb["metadata"].value("generation", int64_t{1});
  Json status = pdb.value("status", Json::object());
  std::string since = NowRfc3339();
  const std::string want = allowed > 0 ? "True" : "False";
  for (const auto& c : status.value("conditions", Json::array())) {
    if (c.value("type", "") == "DisruptionAllowed" && c.value("status", "") == want) {
      since = c.value("lastTransitionTime", since);
    }
  }
  return {{"observedGeneration", generation},
          {"disruptionsAllowed", allowed},
          {"currentHealthy", healthy},
          {"desiredHealthy", desired},
          {"expectedPods", expected},
          {"conditions",
           {{{"type", "DisruptionAllowed"},
             {"status", want},
             {"reason", allowed > 0 ? "SufficientPods" : "InsufficientPods"},
             {"message", ""},
             {"observedGeneration", generation},
             {"lastTransitionTime", since}}}}};
}

// The disruption controller: every budget's status kept in step with its pods.
void KubeSim::Impl::DisruptionControllerLocked() {
  const ResourceType* t = FindType("policy", "poddisruptionbudgets");
  if (t == nullptr) return;
  std::vector<Json> updates;
  for (const auto& [key, pdb] : objects[t->key()]) {
    Json status = PdbStatusLocked(pdb);
    Json old = pdb.value("status", Json::object());
    old.erase("disruptedPods");  // the eviction's note; dropped once the controller looks again
    if (old == status && !pdb.value("status", Json::object()).contains("disruptedPods")) continue;
    Json updated = pdb;
    updated["status"] = status;
    updates.push_back(std::move(updated));
  }
  for (auto& u : updates) {
    const std::string ns = u["metadata"].value("namespace", "");
    const std::string name = u["metadata"].value("name", "");
    (void)ReplaceLocked(*t, ns, name, u, /*statusOnly=*/true, false, "", nullptr);
  }
}

Outcome KubeSim::Impl::EvictLocked(const std::string& ns, const std::string& name,
                                   const Json& eviction) {
  const ResourceType& podType = *FindType("", "pods");
  Json* pod = FindObject(podType, ns, name);
  if (pod == nullptr) return NotFound(podType, name);
  const std::string bodyName =
      eviction.is_object() ? eviction.value("metadata", Json::object()).value("name", "") : "";
  if (!bodyName.empty() && bodyName != name) {
    return BadRequest("name in URL does not match name in Eviction object");
  }
  const Json success = {{"kind", "Status"},
                        {"apiVersion", "v1"},
                        {"metadata", Json::object()},
                        {"status", "Success"},
                        {"code", 201}};
  if (Terminating(*pod)) return {201, success};
  const std::string phase = Phase(*pod);
  // A pod that is not running (Succeeded, Failed, Pending) is deleted without a budget check.
  const bool ignoreBudget = phase == "Succeeded" || phase == "Failed" || phase == "Pending";
  if (!ignoreBudget) {
    const ResourceType* pdbType = FindType("policy", "poddisruptionbudgets");
    std::vector<std::string> matching;
    const Json labels = (*pod)["metadata"].value("labels", Json::object());
    for (const auto& [key, pdb] : objects[pdbType->key()]) {
      if (pdb["metadata"].value("namespace", "") != ns || !SelectsPods(pdb)) continue;
      if (MatchLabelSelectorObject(pdb.value("spec", Json::object()).value("selector", Json()),
                                   labels)) {
        matching.push_back(pdb["metadata"].value("name", ""));
      }
    }
    if (matching.size() > 1) {
      return Err(500, "InternalError",
                 "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                 "does not support.");
    }
    if (matching.size() == 1) {
      Json* pdb = FindObject(*pdbType, ns, matching[0]);
      Json updated = *pdb;
      updated["status"] = PdbStatusLocked(*pdb);
      Json& st = updated["status"];
      const int allowed = st.value("disruptionsAllowed", 0);
      // IfHealthyBudget: an unready pod may go while the budget is met.
      const bool unhealthyOk =
          !PodReady(*pod) && st.value("currentHealthy", 0) >= st.value("desiredHealthy", 0);
      if (allowed == 0 && !unhealthyOk) {
        (void)ReplaceLocked(*pdbType, ns, matching[0], updated, true, false, "", nullptr);
        return Err(
            429, "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget.",
            {{"causes",
              {{{"reason", "DisruptionBudget"},
                {"message", "The disruption budget " + matching[0] + " needs " +
                                std::to_string(st.value("desiredHealthy", 0)) +
                                " healthy pods and has " +
                                std::to_string(st.value("currentHealthy", 0)) + " currently"}}}}});
      }
      if (allowed > 0 && PodReady(*pod)) {
        st["disruptionsAllowed"] = allowed - 1;
        st["disruptedPods"] = {{name, NowRfc3339()}};
      }
      (void)ReplaceLocked(*pdbType, ns, matching[0], updated, true, false, "", nullptr);
      pod = FindObject(podType, ns, name);
    }
  }
  // The condition that tells the pod's owner it was evicted, then a graceful delete.
  Json marked = *pod;
  Json conditions = Json::array();
  for (const auto& c : marked["status"].value("conditions", Json::array())) {
    if (c.value("type", "") != "DisruptionTarget") conditions.push_back(c);
  }
  conditions.push_back({{"type", "DisruptionTarget"},
                        {"status", "True"},
                        {"reason", "EvictionByEvictionAPI"},
                        {"message", "Eviction API: evicting"},
                        {"lastProbeTime", nullptr},
                        {"lastTransitionTime", NowRfc3339()}});
  marked["status"]["conditions"] = conditions;
  (void)ReplaceLocked(podType, ns, name, marked, /*statusOnly=*/true, false, "", nullptr);
  Outcome deleted = DeleteLocked(podType, ns, name, DeleteOptions{});
  if (!deleted.ok()) return deleted;
  return {201, success};
}

}  // namespace perfgate::kubesim
