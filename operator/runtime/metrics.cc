#include "operator/runtime/metrics.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "common/node_verdict.h"
#include "common/time.h"
#include "core/fleet.h"
#include "core/json_fields.h"
#include "operator/reconcile/reconciler.h"

namespace perfgate::op {
namespace {

// A label set: {a="x",b="y"}, values escaped.
std::string Labels(std::initializer_list<std::pair<const char*, std::string>> labels) {
  std::string out = "{";
  for (const auto& [k, v] : labels) {
    if (out.size() > 1) out += ',';
    out += std::string(k) + "=\"" + EscapeLabelValue(v) + "\"";
  }
  return out + "}";
}

// A sample value as Prometheus reads it: the shortest text that reads back the same double, NaN
// and infinities by name.
std::string Value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  return std::string(buf, end);
}

// Seconds since the epoch of an RFC 3339 time; nullopt when it is not one.
std::optional<double> EpochSeconds(const std::string& rfc3339) {
  auto t = ParseRfc3339(rfc3339);
  if (!t) return std::nullopt;
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::seconds>(t->time_since_epoch()).count());
}

// A gauge's HELP and TYPE lines, then its samples.
void Gauge(const char* name, const char* help, const std::string& samples, std::string* out) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" + samples;
}

// spec.disruption.policy yield: what giving way to customers cost (status.yields), per
// validation (its nodes summed, the longest wait the longest of theirs) and per node.
struct YieldSeries {
  std::string yields, lost, waits, node_yields;

  void Add(const std::string& name, const Json& by_node) {
    if (!by_node.is_object() || by_node.empty()) return;
    int64_t count = 0;
    double lost_seconds = 0;
    double longest = 0;
    for (const auto& [node, y] : by_node.items()) {
      if (!y.is_object()) continue;
      count += y.value("count", int64_t{0});
      lost_seconds += y.value("lostGpuSeconds", 0.0);
      longest = std::max(longest, y.value("longestWaitSeconds", 0.0));
      node_yields += "perfgate_node_yields" + Labels({{"validation", name}, {"node", node}}) + " " +
                     std::to_string(y.value("count", int64_t{0})) + "\n";
    }
    yields += "perfgate_validation_yields" + Labels({{"validation", name}}) + " " +
              std::to_string(count) + "\n";
    lost += "perfgate_validation_yield_lost_gpu_seconds" + Labels({{"validation", name}}) + " " +
            Value(lost_seconds) + "\n";
    waits += "perfgate_validation_yield_longest_wait_seconds" + Labels({{"validation", name}}) +
             " " + Value(longest) + "\n";
  }

  void Render(std::string* out) const {
    Gauge("perfgate_validation_yields",
          "How often a yield validation's workers gave their GPUs to customers in its current run.",
          yields, out);
    Gauge("perfgate_validation_yield_lost_gpu_seconds",
          "GPU seconds a yield validation's workers had measured before they gave way, discarded.",
          lost, out);
    Gauge("perfgate_validation_yield_longest_wait_seconds",
          "The longest a customer's pod waited for a yielding worker to go.", waits, out);
    Gauge("perfgate_node_yields", "How often each node's worker gave way, per yield validation.",
          node_yields, out);
  }
};

// Per validation: its nodes by state (progress), its verdict as one series per possible verdict
// (0 or 1, so a change never leaves a stale series behind), and its run's start and completion.
void RenderValidations(const std::vector<Json>& validations, std::string* out) {
  static const std::pair<const char*, const char*> kStates[] = {{"passed", "passed"},
                                                                {"failed", "failed"},
                                                                {"inconclusive", "inconclusive"},
                                                                {"error", "errors"},
                                                                {"pending", "pending"}};
  std::string nodes, verdicts, starts, completions, held, used;
  YieldSeries yield_series;
  for (const Json& v : validations) {
    const std::string name = Name(v);
    if (name.empty()) continue;
    held += "perfgate_validation_quarantine_held_nodes" + Labels({{"validation", name}}) + " " +
            std::to_string(Int(v, "/status/quarantine/held"_json_pointer)) + "\n";
    if (const Json gpu_seconds = v.value("status", Json::object()).value("gpuSeconds", Json());
        gpu_seconds.is_number()) {
      used += "perfgate_validation_gpu_seconds" + Labels({{"validation", name}}) + " " +
              Value(gpu_seconds.get<double>()) + "\n";
    }
    yield_series.Add(name, v.value("status", Json::object()).value("yields", Json::object()));
    std::string verdict = Str(v, "/status/verdict"_json_pointer);
    if (verdict.empty()) verdict = verdict::kRunningWord;
    for (const char* word : verdict::kValidationVerdictWords) {
      verdicts += "perfgate_validation_verdict" +
                  Labels({{"validation", name}, {"verdict", word}}) +
                  (verdict == word ? " 1\n" : " 0\n");
    }
    for (const auto& [state, field] : kStates) {
      const int64_t n = Int(v, Json::json_pointer(std::string("/status/") + field));
      nodes += "perfgate_validation_nodes" + Labels({{"validation", name}, {"state", state}}) +
               " " + std::to_string(n) + "\n";
    }
    if (auto t = EpochSeconds(Str(v, "/status/startTime"_json_pointer))) {
      starts += "perfgate_validation_start_timestamp_seconds" + Labels({{"validation", name}}) +
                " " + Value(*t) + "\n";
    }
    if (auto t = EpochSeconds(Str(v, "/status/completionTime"_json_pointer))) {
      completions += "perfgate_validation_completion_timestamp_seconds" +
                     Labels({{"validation", name}}) + " " + Value(*t) + "\n";
    }
  }
  Gauge("perfgate_validation_nodes",
        "A validation's selected nodes by state in its current run (pending: not decided yet).",
        nodes, out);
  Gauge("perfgate_validation_verdict", "1 for a validation's verdict, 0 for the others.", verdicts,
        out);
  Gauge("perfgate_validation_start_timestamp_seconds", "When a validation's current run started.",
        starts, out);
  Gauge("perfgate_validation_quarantine_held_nodes",
        "FAIL nodes a validation left untainted because the brake on mass quarantine holds "
        "(the failures look systemic; its SystemicFailure condition says what they share).",
        held, out);
  Gauge("perfgate_validation_completion_timestamp_seconds",
        "When a validation's current run completed (absent while it runs).", completions, out);
  Gauge("perfgate_validation_gpu_seconds",
        "GPU seconds a validation's workers measured to the end in its current run (each result's "
        "start to completion, times the worker's GPUs).",
        used, out);
  yield_series.Render(out);
}

// Per rolling validation (spec.rolling, status.rolling): how many of its nodes are overdue, and
// per node when it was last validated and when it falls due.
void RenderRolling(const std::vector<Json>& validations, std::string* out) {
  std::string validated, due, overdue;
  for (const Json& v : validations) {
    const std::string name = Name(v);
    const Json rolling = v.value("status", Json::object()).value("rolling", Json::object());
    if (name.empty() || !rolling.is_object() || !rolling.contains("overdueNodes")) continue;
    overdue += "perfgate_validation_overdue_nodes" + Labels({{"validation", name}}) + " " +
               std::to_string(rolling.value("overdueNodes", int64_t{0})) + "\n";
    const Json nodes = rolling.value("nodes", Json::object());
    if (!nodes.is_object()) continue;
    for (const auto& [node, e] : nodes.items()) {
      if (!e.is_object()) continue;
      const std::string labels = Labels({{"validation", name}, {"node", node}});
      if (auto t = EpochSeconds(e.value("lastValidated", ""))) {
        validated +=
            "perfgate_node_rolling_validated_timestamp_seconds" + labels + " " + Value(*t) + "\n";
      }
      if (auto t = EpochSeconds(e.value("nextDue", ""))) {
        due += "perfgate_node_validation_due_timestamp_seconds" + labels + " " + Value(*t) + "\n";
      }
    }
  }
  Gauge("perfgate_validation_overdue_nodes",
        "A rolling validation's selected nodes past their due time and not validated again yet.",
        overdue, out);
  Gauge("perfgate_node_rolling_validated_timestamp_seconds",
        "When a rolling validation last validated the node (its result came in).", validated, out);
  Gauge("perfgate_node_validation_due_timestamp_seconds",
        "When the node falls due again under a rolling validation's period.", due, out);
}

// Per node: the regressions each validation's status lists (status.regressions, at most 20
// rows a validation): the node's worst figure against its history and against its peers, as
// the ratio now / reference and the high end of its interval. Bounded by the status list, so
// always on.
void RenderRegressions(const std::vector<Json>& validations, std::string* out) {
  std::string ratios, highs;
  std::set<std::string> seen;
  for (const Json& v : validations) {
    const std::string name = Name(v);
    const Json rows = v.value("status", Json::object()).value("regressions", Json::array());
    if (name.empty() || !rows.is_array()) continue;
    for (const Json& r : rows) {
      if (!r.is_object() || !r.contains("ratio") || !r["ratio"].is_number()) continue;
      const std::string labels = Labels({{"validation", name},
                                         {"node", r.value("node", "")},
                                         {"against", r.value("against", "")},
                                         {"test", r.value("test", "")},
                                         {"metric", r.value("metric", "")}});
      if (!seen.insert(labels).second) continue;
      ratios +=
          "perfgate_node_regression_ratio" + labels + " " + Value(r["ratio"].get<double>()) + "\n";
      if (r.contains("high") && r["high"].is_number()) {
        highs += "perfgate_node_regression_interval_high" + labels + " " +
                 Value(r["high"].get<double>()) + "\n";
      }
    }
  }
  Gauge("perfgate_node_regression_ratio",
        "A passing node's figure now over its history's or its peers' (against), where the "
        "interval lies beyond the validation's regression margin: its worst figure per reference.",
        ratios, out);
  Gauge("perfgate_node_regression_interval_high",
        "The high end of that ratio's confidence interval (below 1 - margin when flagged).", highs,
        out);
}

// Each node's latest result (by completion time, of any validation), as reports. One at a
// time, so that a result the report reader cannot take costs only its own node's series (a
// list of one: the API server's list items carry no kind).
std::vector<fleet::NodeReport> LatestReports(const std::vector<Json>& results) {
  std::map<std::string, std::pair<double, const Json*>> latest;  // node -> (completion, result)
  for (const Json& r : results) {
    const std::string node = Str(r, "/spec/nodeName"_json_pointer);
    auto done = EpochSeconds(Str(r, "/spec/report/completionTime"_json_pointer));
    if (node.empty() || !done) continue;
    auto [it, added] = latest.emplace(node, std::make_pair(*done, &r));
    if (!added && *done > it->second.first) it->second = {*done, &r};
  }
  std::vector<fleet::NodeReport> reports;
  for (const auto& [node, at] : latest) {
    const Json one = {{"kind", "List"}, {"items", Json::array({*at.second})}};
    auto parsed = fleet::ParseReports(one.dump(), "the PerfResult of node " + node);
    if (parsed.ok()) reports.push_back(std::move(parsed->front()));
  }
  return reports;
}

// Per node of `reports`: when its result completed, how long it ran, each test's verdict per
// device.
void RenderNodeRuns(const std::vector<fleet::NodeReport>& reports, std::string* out) {
  std::string times, durations, tests;
  for (const fleet::NodeReport& r : reports) {
    const auto done = EpochSeconds(r.report.completiontime());
    const auto start = EpochSeconds(r.report.starttime());
    if (done) {
      times += "perfgate_node_last_validated_timestamp_seconds" + Labels({{"node", r.node}}) + " " +
               Value(*done) + "\n";
      if (start) {
        durations += "perfgate_node_run_seconds" + Labels({{"node", r.node}}) + " " +
                     Value(*done - *start) + "\n";
      }
    }
    for (const auto& t : r.report.tests()) {
      tests += "perfgate_node_test_verdict" +
               Labels({{"node", r.node},
                       {"device", t.device()},
                       {"test", t.name()},
                       {"verdict", v1alpha1::Verdict_Name(t.verdict())}}) +
               " 1\n";
    }
  }
  Gauge("perfgate_node_last_validated_timestamp_seconds",
        "When the node's latest result completed.", times, out);
  Gauge("perfgate_node_run_seconds", "How long the node's latest run took, start to completion.",
        durations, out);
  Gauge("perfgate_node_test_verdict",
        "1 for each test and device of the node's latest result, labelled with its verdict.", tests,
        out);
}

// Per node, from its latest result (by completion time, of any validation): the figures with
// their bounds, the test verdicts per device, the figures lagging their peers (the HTML
// report's and `perfgate summary`'s rule), the consistency digests that differ from their
// peers' (fleet::FindDigestOutliers), when it completed and how long it ran.
void RenderNodeResults(const std::vector<Json>& results, std::string* out) {
  const std::vector<fleet::NodeReport> reports = LatestReports(results);
  RenderNodeRuns(reports, out);
  std::string figures, bounds, lagging, digests;
  const std::vector<fleet::Figure> all = fleet::Figures(reports);
  auto figure_labels = [](const fleet::Figure& f) {
    return Labels({{"node", f.node},
                   {"device", f.device},
                   {"test", f.test},
                   {"metric", f.metric},
                   {"statistic", f.statistic},
                   {"op", f.op}});
  };
  for (const fleet::Figure& f : all) {
    if (f.op.empty()) continue;  // only figures a threshold checks: each has its bound
    const std::string labels = figure_labels(f);
    figures += "perfgate_node_figure" + labels + " " + Value(f.value) + "\n";
    bounds += "perfgate_node_figure_bound" + labels + " " + Value(f.bound) + "\n";
  }
  for (const fleet::Lagging& l : fleet::FindLagging(all)) {
    lagging += "perfgate_node_figure_lagging_ratio" + figure_labels(l.figure) + " " +
               Value(l.ratio) + "\n";
  }
  for (const fleet::DigestOutlier& d : fleet::FindDigestOutliers(reports)) {
    digests += "perfgate_node_digest_mismatch" +
               Labels({{"node", d.node}, {"test", d.test}, {"computation", d.computation}}) +
               " 1\n";
  }
  Gauge("perfgate_node_figure",
        "A thresholded figure of the node's latest result: the statistic's observed value.",
        figures, out);
  Gauge("perfgate_node_figure_bound", "The bound the figure was held to (op: how).", bounds, out);
  Gauge("perfgate_node_figure_lagging_ratio",
        "A passing figure well below its GPU model's peers: figure / the peers' median.", lagging,
        out);
  Gauge("perfgate_node_digest_mismatch",
        "1 where the node's consistency digest of a computation differs from the one most nodes "
        "of its GPU model, driver and CUDA version computed with the same parameters.",
        digests, out);
}

}  // namespace

std::string EscapeLabelValue(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// What perfgate's labels say of the nodes: counts by verdict and by recommended action, the
// nodes that failed too often, and (per node) each node's verdict and action.
void RenderNodeLabels(const MetricsSnapshot& s, std::string* out) {
  std::map<std::string, int> nodes_by = {
      {"passed", 0}, {"failed", 0}, {"inconclusive", 0}, {"error", 0}};
  std::string per_node;
  std::string repeated;
  std::string actions;
  std::map<std::string, int> by_action;
  for (const auto& n : s.nodes) {
    const auto meta = n.value("metadata", nlohmann::json::object());
    const auto labels = meta.value("labels", nlohmann::json::object());
    const std::string node = EscapeLabelValue(meta.value("name", ""));
    if (labels.value(kRepeatedFailureLabel, "") == "true") {
      repeated += "perfgate_node_repeated_failure{node=\"" + node + "\"} 1\n";
    }
    if (const std::string step = labels.value(kActionLabel, ""); !step.empty() && step != "none") {
      by_action[step]++;
      actions += "perfgate_node_recommended_action{node=\"" + node + "\",action=\"" +
                 EscapeLabelValue(step) + "\"} 1\n";
    }
    auto it = labels.find(kVerdictLabel);
    if (it == labels.end() || !it->is_string()) continue;
    const std::string verdict = it->get<std::string>();
    nodes_by[verdict]++;
    if (s.per_node) {
      const std::string by =
          meta.value("annotations", nlohmann::json::object()).value(kVerdictByAnnotation, "");
      per_node += "perfgate_node_verdict{node=\"" + node + "\",verdict=\"" +
                  EscapeLabelValue(verdict) + "\",validation=\"" + EscapeLabelValue(by) + "\"} 1\n";
    }
  }
  std::string counts;
  for (const auto& [k, n] : nodes_by) {
    counts += "perfgate_nodes{verdict=\"" + EscapeLabelValue(k) + "\"} " + std::to_string(n) + "\n";
  }
  Gauge("perfgate_nodes", "Nodes by their perfgate.io/verdict label.", counts, out);
  Gauge("perfgate_node_repeated_failure",
        "1 for each node labelled perfgate.io/repeated-failure=true: it failed too many of its "
        "latest validations.",
        repeated, out);
  std::string action_counts;
  for (const auto& [step, n] : by_action) {
    action_counts += "perfgate_nodes_by_action{action=\"" + EscapeLabelValue(step) + "\"} " +
                     std::to_string(n) + "\n";
  }
  Gauge("perfgate_nodes_by_action",
        "Nodes by their perfgate.io/action label (the recommended action), none left out.",
        action_counts, out);
  Gauge("perfgate_node_recommended_action",
        "1 for each node whose perfgate.io/action label asks for something: the action.", actions,
        out);
  if (s.per_node) {
    Gauge("perfgate_node_verdict",
          "1 for each node's perfgate.io/verdict label, and the validation that set it.", per_node,
          out);
  }
}

std::string RenderMetrics(const MetricsSnapshot& s) {
  std::string out;
  auto header = [&](const std::string& name, const std::string& type, const std::string& help) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto counter = [&](const std::string& name, const std::string& help, uint64_t v) {
    header(name, "counter", help);
    out += name + " " + std::to_string(v) + "\n";
  };
  counter("perfgate_reconcile_total", "Reconciles run.", s.reconciles);
  counter("perfgate_reconcile_errors_total", "Reconciles that returned an error.",
          s.reconcile_errors);
  counter("perfgate_worker_pods_created_total", "Worker pods created.", s.pods_created);
  counter("perfgate_operator_results_total", "PerfResults the operator wrote itself (ERROR nodes).",
          s.results_written_by_operator);
  header("perfgate_workqueue_depth", "gauge", "Keys ready in the work queue.");
  out += "perfgate_workqueue_depth " + std::to_string(s.queue_depth) + "\n";

  std::map<std::string, int> by_verdict;
  for (const char* word : verdict::kValidationVerdictWords) by_verdict[word] = 0;
  for (const auto& v : s.validations) {
    by_verdict[v.value("status", nlohmann::json::object())
                   .value("verdict", std::string(verdict::kRunningWord))]++;
  }
  header("perfgate_validations", "gauge", "Validations by verdict.");
  for (const auto& [k, n] : by_verdict) {
    out +=
        "perfgate_validations{verdict=\"" + EscapeLabelValue(k) + "\"} " + std::to_string(n) + "\n";
  }

  RenderNodeLabels(s, &out);
  RenderValidations(s.validations, &out);
  RenderRolling(s.validations, &out);
  RenderRegressions(s.validations, &out);
  if (s.per_node) RenderNodeResults(s.results, &out);
  header("perfgate_leader", "gauge", "Whether this replica leads.");
  out += std::string("perfgate_leader ") + (s.leading ? "1" : "0") + "\n";
  header("perfgate_store_enabled", "gauge",
         "1 when completed results are recorded in a results store, 0 with --store=off: results "
         "are not kept beyond the PerfResults.");
  out += std::string("perfgate_store_enabled ") + (s.store_enabled ? "1" : "0") + "\n";
  return out;
}

}  // namespace perfgate::op
