#include "operator/metrics.h"

#include <map>

#include "operator/reconciler.h"

namespace perfgate::op {

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
          s.reconcileErrors);
  counter("perfgate_worker_pods_created_total", "Worker pods created.", s.podsCreated);
  counter("perfgate_operator_results_total", "PerfResults the operator wrote itself (ERROR nodes).",
          s.resultsWrittenByOperator);
  header("perfgate_workqueue_depth", "gauge", "Keys ready in the work queue.");
  out += "perfgate_workqueue_depth " + std::to_string(s.queueDepth) + "\n";

  std::map<std::string, int> by_verdict = {{"Running", 0},  {"Passed", 0},       {"Failed", 0},
                                           {"Error", 0},    {"Inconclusive", 0}, {"InvalidSpec", 0},
                                           {"Suspended", 0}};
  for (const auto& v : s.validations) {
    by_verdict[v.value("status", nlohmann::json::object()).value("verdict", "Running")]++;
  }
  header("perfgate_validations", "gauge", "Validations by verdict.");
  for (const auto& [k, n] : by_verdict) {
    out +=
        "perfgate_validations{verdict=\"" + EscapeLabelValue(k) + "\"} " + std::to_string(n) + "\n";
  }

  std::map<std::string, int> nodes_by = {
      {"passed", 0}, {"failed", 0}, {"inconclusive", 0}, {"error", 0}};
  std::string per_node;
  for (const auto& n : s.nodes) {
    const auto meta = n.value("metadata", nlohmann::json::object());
    const auto labels = meta.value("labels", nlohmann::json::object());
    auto it = labels.find(kVerdictLabel);
    if (it == labels.end() || !it->is_string()) continue;
    const std::string verdict = it->get<std::string>();
    nodes_by[verdict]++;
    if (s.perNode) {
      const std::string by =
          meta.value("annotations", nlohmann::json::object()).value(kVerdictByAnnotation, "");
      per_node += "perfgate_node_verdict{node=\"" + EscapeLabelValue(meta.value("name", "")) +
                  "\",verdict=\"" + EscapeLabelValue(verdict) + "\",validation=\"" +
                  EscapeLabelValue(by) + "\"} 1\n";
    }
  }
  header("perfgate_nodes", "gauge", "Nodes by their perfgate.io/verdict label.");
  for (const auto& [k, n] : nodes_by) {
    out += "perfgate_nodes{verdict=\"" + EscapeLabelValue(k) + "\"} " + std::to_string(n) + "\n";
  }
  if (s.perNode) {
    header("perfgate_node_verdict", "gauge",
           "1 for each node's perfgate.io/verdict label, and the validation that set it.");
    out += per_node;
  }
  header("perfgate_leader", "gauge", "Whether this replica leads.");
  out += std::string("perfgate_leader ") + (s.leading ? "1" : "0") + "\n";
  return out;
}

}  // namespace perfgate::op
