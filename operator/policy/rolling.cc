#include "operator/policy/rolling.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "common/node_verdict.h"
#include "common/strings.h"
#include "common/time.h"
#include "common/verdict.h"
#include "core/selection.h"
#include "operator/policy/watch_nodes.h"
#include "operator/reconcile/status.h"

namespace perfgate::op {
namespace {

using Clock = std::chrono::system_clock;

// Ten years: longer periods are a typo, and the sum stays far from overflowing.
constexpr int64_t kMaxPeriodSeconds = int64_t{10} * 366 * 24 * 3600;

Status BadPeriod(const std::string& text, const std::string& why) {
  return Status(Code::kInvalidArgument, "spec.rolling.period: \"" + text + "\" " + why +
                                            " (a number with a unit, s, m, h, d or w, or "
                                            "several, e.g. 7d, 12h or 1d12h)");
}

std::optional<Clock::time_point> TimeOf(const Json& entry, const char* key) {
  const std::string v = entry.value(key, "");
  if (v.empty()) return std::nullopt;
  return ParseRfc3339(v);
}

// The condition Current from the counts: True while no node is past its due time.
void SetCurrentCondition(const Snapshot& s, const std::vector<std::string>& overdue, int current,
                         size_t selected, const std::string& period, const std::string& now,
                         Json* status) {
  const Json old_status = s.validation.value("status", Json::object());
  const std::string counts = std::to_string(current) + " of " + std::to_string(selected) +
                             " nodes validated within " + period;
  if (overdue.empty()) {
    SetStatusCondition(status, old_status, kCurrentCondition, "True", "WithinPeriod", counts,
                       s.generation, now);
    return;
  }
  SetStatusCondition(
      status, old_status, kCurrentCondition, "False", "Overdue",
      std::to_string(overdue.size()) + " overdue: " + NameSome(overdue, 5) + "; " + counts,
      s.generation, now);
}

}  // namespace

Result<std::chrono::seconds> ParsePeriod(const std::string& text) {
  if (text.empty()) return BadPeriod(text, "is empty");
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    int64_t n = 0;
    const size_t digits = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      n = n * 10 + (text[i] - '0');
      if (n > kMaxPeriodSeconds) return BadPeriod(text, "is longer than ten years");
      ++i;
    }
    if (i == digits || i == text.size()) return BadPeriod(text, "is not a duration");
    int64_t unit = 0;
    switch (text[i]) {
      case 's':
        unit = 1;
        break;
      case 'm':
        unit = 60;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'd':
        unit = 86400;
        break;
      case 'w':
        unit = int64_t{7} * 86400;
        break;
      default:
        return BadPeriod(text, "is not a duration");
    }
    ++i;
    if (n > (kMaxPeriodSeconds - total) / unit) return BadPeriod(text, "is longer than ten years");
    total += n * unit;
  }
  if (total == 0) return BadPeriod(text, "is zero");
  return std::chrono::seconds(total);
}

bool IsRolling(const v1alpha1::PerfValidationSpec& spec) { return spec.has_rolling(); }

Status CheckRolling(const v1alpha1::PerfValidationSpec& spec) {
  if (!IsRolling(spec)) return Status();
  const v1alpha1::Rolling& r = spec.rolling();
  if (r.period().empty()) {
    return Status(Code::kInvalidArgument,
                  "spec.rolling.period is required: how old a node's last verdict may grow "
                  "before it is tested again, e.g. 7d");
  }
  if (auto p = ParsePeriod(r.period()); !p.ok()) return p.status();
  if (r.maxconcurrent() < 1) {
    return Status(Code::kInvalidArgument,
                  "spec.rolling.maxConcurrent must be at least 1 (the nodes tested at once), got " +
                      std::to_string(r.maxconcurrent()));
  }
  if (!spec.schedule().empty()) {
    return Status(Code::kInvalidArgument,
                  "spec.schedule cannot be combined with spec.rolling: a rolling validation "
                  "tests each node again when its own period ends; keep one of them");
  }
  if (!spec.gang().shape().empty()) {
    return Status(Code::kInvalidArgument,
                  "spec.rolling tests nodes one by one: it cannot be used with spec.gang");
  }
  const std::string& policy = spec.disruption().policy();
  if (policy == "cordon" || policy == "drain") {
    return Status(Code::kInvalidArgument,
                  "spec.disruption.policy: " + policy +
                      " takes nodes from their pods, spec.rolling tests only idle nodes: use "
                      "wait or yield");
  }
  return Status();
}

std::optional<RollingSettings> RollingOf(const v1alpha1::PerfValidationSpec& spec) {
  if (!IsRolling(spec) || !CheckRolling(spec).ok()) return std::nullopt;
  return RollingSettings{*ParsePeriod(spec.rolling().period()), spec.rolling().maxconcurrent()};
}

void OrderOldestFirst(const Json& status, std::vector<std::string>* nodes) {
  const Json entries = status.value("rolling", Json::object()).value("nodes", Json::object());
  std::map<std::string, Clock::time_point> last;
  for (const auto& node : *nodes) {
    const Json e = entries.value(node, Json::object());
    last[node] = TimeOf(e, "lastValidated").value_or(Clock::time_point::min());
  }
  std::stable_sort(nodes->begin(), nodes->end(),
                   [&](const std::string& a, const std::string& b) { return last[a] < last[b]; });
}

bool DecideRollingDue(const Snapshot& s, Clock::time_point now, Json* status, Decision* d) {
  if (!s.spec || s.spec->doc.spec().suspend() || !RollingOf(s.spec->doc.spec())) return false;
  const Json entries = status->value("rolling", Json::object()).value("nodes", Json::object());
  const std::map<std::string, const Json*> results = ResultsOfRun(s);
  Json retests = status->value("retests", Json::object());
  std::vector<std::string> due;
  for (const auto& node : SelectNodes(s.spec->doc.spec(), s.nodes)) {
    auto it = results.find(node);
    if (it == results.end()) continue;
    const Json e = entries.value(node, Json::object());
    // A result not recorded yet is newer than any due time.
    if (e.value("result", "") != Name(*it->second)) continue;
    auto next = TimeOf(e, "nextDue");
    if (!next || *next > now) continue;
    due.push_back(node);
    d->delete_results.push_back(Name(*it->second));
    d->delete_pods.push_back(Name(*it->second));  // the worker is named as its result
    d->events.push_back(
        {"Normal", "NodeDue",
         node + " last validated " + e.value("lastValidated", "") + ", due since " +
             e.value("nextDue", "") + ": testing it again",
         true,
         s.name + "/" + s.run + "/due/" + node + "/" + std::to_string(retests.value(node, 0))});
    retests[node] = retests.value(node, 0) + 1;
  }
  if (due.empty()) return false;
  Json out = *status;
  out["retests"] = retests;
  out.erase("completionTime");
  out.erase("timeLeft");
  out["verdict"] = verdict::kRunningWord;
  out["message"] = "testing again, their period over: " + NameSome(due, 5);
  d->status = std::move(out);
  // The next look (its worker names from the new retests) starts them in their turn.
  d->requeue_after = std::chrono::milliseconds(10);
  return true;
}

void RecordRolling(const Snapshot& s, Clock::time_point now, Decision* d) {
  if (!s.spec || !d->status) return;
  const v1alpha1::PerfValidationSpec& spec = s.spec->doc.spec();
  Json& status = *d->status;
  const std::optional<RollingSettings> settings = RollingOf(spec);
  if (!settings) {
    if (!IsRolling(spec)) status.erase("rolling");
    return;
  }
  const Json old = status.value("rolling", Json::object()).value("nodes", Json::object());
  const std::map<std::string, const Json*> results = ResultsOfRun(s);
  std::map<std::string, const NodeOutcome*> decided;
  for (const auto& o : d->outcomes) {
    if (o.verdict) decided[o.node] = &o;
  }
  Json nodes = Json::object();  // the selected nodes only: one that left is forgotten
  std::vector<std::string> overdue;
  int current = 0;
  std::optional<Clock::time_point> next_due;
  const std::vector<std::string> selected = SelectNodes(spec, s.nodes);
  for (const auto& node : selected) {
    Json e = old.value(node, Json::object());
    if (auto o = decided.find(node); o != decided.end()) {
      auto r = results.find(node);
      // An operator's ERROR written in this decision is not in the cache yet.
      const std::string result = r != results.end() ? Name(*r->second) : WorkerName(s, node);
      if (e.value("result", "") != result) {
        std::optional<Clock::time_point> at;
        if (r != results.end())
          at = ParseRfc3339(Str(*r->second, "/metadata/creationTimestamp"_json_pointer));
        e["result"] = result;
        e["lastValidated"] = FormatRfc3339(at.value_or(now));
        e["lastVerdict"] = verdict::VerdictName(*o->second->verdict);
      }
    }
    // Never validated: due one period after it was first selected.
    const auto last = TimeOf(e, "lastValidated");
    const Clock::time_point due =
        last ? *last + settings->period : TimeOf(e, "nextDue").value_or(now + settings->period);
    e["nextDue"] = FormatRfc3339(due);
    if (due <= now) {
      overdue.push_back(node);
    } else {
      current += last.has_value();
      if (!next_due || due < *next_due) next_due = due;
    }
    nodes[node] = std::move(e);
  }
  status["rolling"] = {{"period", spec.rolling().period()},
                       {"currentNodes", current},
                       {"overdueNodes", static_cast<int>(overdue.size())},
                       {"nodes", std::move(nodes)}};
  SetCurrentCondition(s, overdue, current, selected.size(), spec.rolling().period(),
                      FormatRfc3339(now), &status);
  // An overdue node waits for its turn or for idle GPUs: looked at again soon.
  if (!overdue.empty()) RequeueSooner(&d->requeue_after, std::chrono::seconds(2));
  if (next_due) {
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(*next_due - now) +
                      std::chrono::milliseconds(20);
    RequeueSooner(&d->requeue_after,
                  std::min<std::chrono::milliseconds>(wait, std::chrono::hours(1)));
  }
}

}  // namespace perfgate::op
