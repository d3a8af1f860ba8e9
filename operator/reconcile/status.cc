#include "operator/reconcile/status.h"

#include <cstdio>

#include "common/node_verdict.h"

namespace perfgate::op {
namespace {

struct Condition {
  const char* type;
  const char* status;  // True | False | Unknown
};

// The conditions in `rows`, each with `reason` and `message`; a condition whose status did not
// change keeps its lastTransitionTime.
Json Conditions(const Json& old_status, const std::vector<Condition>& rows,
                const std::string& reason, const std::string& message, int64_t generation,
                const std::string& now) {
  Json conditions = Json::array();
  for (const auto& row : rows) {
    Json c = {{"type", row.type},
              {"status", row.status},
              {"reason", reason},
              {"message", message},
              {"observedGeneration", generation},
              {"lastTransitionTime", now}};
    for (const auto& o : old_status.value("conditions", Json::array())) {
      if (o.value("type", "") == row.type && o.value("status", "") == row.status) {
        c["lastTransitionTime"] = o.value("lastTransitionTime", now);
      }
    }
    conditions.push_back(c);
  }
  return conditions;
}

// Not passed, complete: what a stalled validation shows.
const std::vector<Condition> kNotPassed = {
    {"Ready", "False"}, {"Stalled", "True"}, {"Complete", "True"}, {"Passed", "False"}};

std::string SuspectNames(const Json& status) {
  std::string names;
  for (const auto& n : status.value("suspectNodes", Json::array())) {
    names += (names.empty() ? "" : ", ") + n.get<std::string>();
  }
  return names;
}

// Sets the condition `type` of `status` (replacing one of that type), keeping its
// lastTransitionTime when its status did not change.
void SetCondition(Json* status, const Json& old_status, const char* type, const char* value,
                  const std::string& reason, const std::string& message, int64_t generation,
                  const std::string& now) {
  Json kept = Json::array();
  for (const auto& c : status->value("conditions", Json::array())) {
    if (c.value("type", "") != type) kept.push_back(c);
  }
  for (const auto& c :
       Conditions(old_status, {{type, value}}, reason, Cut(message, 1000), generation, now)) {
    kept.push_back(c);
  }
  (*status)["conditions"] = kept;
}

}  // namespace

void CarryCondition(Json* status, const Json& old_status, const std::string& type) {
  Json conditions = status->value("conditions", Json::array());
  for (const auto& c : conditions) {
    if (c.value("type", "") == type) return;
  }
  for (const auto& c : old_status.value("conditions", Json::array())) {
    if (c.value("type", "") != type) continue;
    conditions.push_back(c);
    (*status)["conditions"] = std::move(conditions);
    return;
  }
}

void SetStatusCondition(Json* status, const Json& old_status, const char* type, const char* value,
                        const std::string& reason, const std::string& message, int64_t generation,
                        const std::string& now) {
  SetCondition(status, old_status, type, value, reason, message, generation, now);
}

void SetRecordedCondition(Json* status, const Json& old_status, const StoreView& store,
                          int64_t generation, const std::string& now) {
  if (store.available) {
    SetCondition(status, old_status, "Recorded", "True", "Recorded",
                 "results recorded in " + store.describe, generation, now);
    return;
  }
  std::string msg = "results store unavailable: " + store.error;
  if (store.spooled > 0) {
    msg += "; " + std::to_string(store.spooled) +
           " results wait in the spool and are written when it is back";
  }
  SetCondition(status, old_status, "Recorded", "False", "StoreUnavailable", msg, generation, now);
}

void SetStoreOffCondition(Json* status, const Json& old_status, int64_t generation,
                          const std::string& now) {
  SetCondition(status, old_status, "Recorded", "False", "StoreOff",
               "results are not kept: the operator runs without a results store (--store=off); "
               "install the chart with store.mode=sqlite or store.mode=postgres to keep every "
               "result and check nodes against their history",
               generation, now);
}

void SetRegressedCondition(Json* status, const Json& old_status, const RegressionCheck& check,
                           int64_t generation, const std::string& now) {
  if (check.compared == 0 && check.found.empty()) return;
  char margin[32];
  std::snprintf(margin, sizeof margin, "%g%%", check.margin * 100);
  const std::string history =
      check.history_read ? "" : " (not with history: the results store is unavailable)";
  if (check.found.empty()) {
    SetCondition(status, old_status, "Regressed", "False", "NoRegressions",
                 std::to_string(check.compared) + " figures compared with history and peers" +
                     history + ": none worse beyond the " + margin + " margin",
                 generation, now);
    return;
  }
  std::string msg;
  for (const auto& r : check.found) {
    msg += (msg.empty() ? "" : "; ") + r.node + ": " + DescribeRegression(r);
    if (msg.size() > 800) break;
  }
  SetCondition(status, old_status, "Regressed", "True", "RegressionsFound",
               "slower beyond the " + std::string(margin) + " margin" + history + ": " + msg,
               generation, now);
}

Json RunningStatus(Json status, const Json& old_status, bool suspended, const std::string& message,
                   int64_t generation, const std::string& now) {
  const std::string reason = suspended ? "Suspended" : "Running";
  status["conditions"] = Conditions(old_status,
                                    {{"Reconciling", suspended ? "False" : "True"},
                                     {"Ready", "False"},
                                     {"Complete", "False"},
                                     {"Passed", "Unknown"}},
                                    reason, message, generation, now);
  status["verdict"] = suspended ? verdict::kSuspendedWord : verdict::kRunningWord;
  status["message"] = message;
  return status;
}

Json StoppedStatus(Json status, const Json& old_status, const std::string& reason,
                   const std::string& verdict, const std::string& message, int64_t generation,
                   const std::string& now) {
  status["conditions"] = Conditions(old_status, kNotPassed, reason, message, generation, now);
  status["verdict"] = verdict;
  status["message"] = Cut(message, 2000);
  status["completionTime"] = now;
  return status;
}

int CountOutcomes(const std::vector<NodeOutcome>& outcomes, Json* status) {
  int counts[5] = {0, 0, 0, 0, 0};  // pass fail inconclusive error pending
  Json failing = Json::array();
  for (const auto& o : outcomes) {
    if (!o.verdict) {
      counts[4]++;
    } else if (*o.verdict == verdict::Verdict::kPass) {
      counts[0]++;
    } else if (*o.verdict == verdict::Verdict::kFail) {
      counts[1]++;
    } else if (*o.verdict == verdict::Verdict::kInconclusive) {
      counts[2]++;
    } else {
      counts[3]++;  // ERROR (a node's verdict is never SKIPPED: rule 1)
    }
    if (o.verdict && *o.verdict != verdict::Verdict::kPass && failing.size() < 20) {
      failing.push_back({{"node", o.node},
                         {"verdict", verdict::VerdictName(*o.verdict)},
                         {"test", o.test},
                         {"figure", Cut(o.figure, 200)},
                         {"reason", Cut(o.reason, 500)},
                         {"action", o.action}});
    }
  }
  Json& s = *status;
  s["nodes"] = static_cast<int>(outcomes.size());
  s["passed"] = counts[0];
  s["failed"] = counts[1];
  s["inconclusive"] = counts[2];
  s["errors"] = counts[3];
  s["pending"] = counts[4];
  s["passedNodes"] = std::to_string(counts[0]) + "/" + std::to_string(outcomes.size());
  s["progress"] = std::to_string(outcomes.size() - static_cast<size_t>(counts[4])) + "/" +
                  std::to_string(outcomes.size());
  s["failingNodes"] = failing;
  return counts[4];
}

Json CompleteStatus(Json status, const Json& old_status, const std::vector<NodeOutcome>& outcomes,
                    int64_t generation, const std::string& now) {
  const int failed = status.value("failed", 0), errors = status.value("errors", 0),
            inconclusive = status.value("inconclusive", 0);
  // The worst node verdict decides (rule 5), in the words of docs/operator.md's table.
  const verdict::RunJudgement run = verdict::JudgeRun(failed, errors, inconclusive);
  if (run.verdict == verdict::kPassedWord) {
    const std::string msg = "all " + std::to_string(outcomes.size()) + " nodes passed";
    status["conditions"] =
        Conditions(old_status, {{"Ready", "True"}, {"Complete", "True"}, {"Passed", "True"}},
                   run.reason, msg, generation, now);
    status["verdict"] = run.verdict;
    status["message"] = msg;
  } else {
    std::string msg = std::to_string(failed + errors + inconclusive) + " of " +
                      std::to_string(outcomes.size()) + " nodes did not pass";
    for (const auto& o : outcomes) {
      if (!o.verdict || *o.verdict == verdict::Verdict::kPass) continue;
      msg += "; " + o.node + " " + verdict::VerdictName(*o.verdict) + ": " + Cut(o.reason, 300);
      if (!o.figure.empty() && o.reason.find(o.figure) == std::string::npos) {
        msg += " (" + o.figure + ")";
      }
      if (msg.size() > 1500) break;
    }
    if (const std::string names = SuspectNames(status); !names.empty()) {
      msg = "suspect nodes (narrowed down by pairs): " + names + "; " + msg;
    }
    status["conditions"] = Conditions(old_status, kNotPassed, run.reason, msg, generation, now);
    status["verdict"] = run.verdict;
    status["message"] = Cut(msg, 2000);
  }
  if (status.value("completionTime", "").empty()) status["completionTime"] = now;
  return status;
}

}  // namespace perfgate::op
