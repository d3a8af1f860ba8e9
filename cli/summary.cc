#include "cli/summary.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <tuple>

#include "common/report.h"
#include "common/time.h"
#include "common/yaml_emit.h"
#include "core/gpu_model.h"
#include "core/names.h"

namespace perfgate::summary {
namespace {

using Json = nlohmann::json;

std::string LabelOf(const Json& node, const std::string& key) {
  const Json* labels = nullptr;
  if (node.contains("metadata") && node["metadata"].contains("labels")) {
    labels = &node["metadata"]["labels"];
  }
  if (labels == nullptr || !labels->is_object() || !labels->contains(key)) return "";
  const Json& v = (*labels)[key];
  return v.is_string() ? v.get<std::string>() : "";
}

std::map<std::string, std::string> Labels(const Json& node) {
  std::map<std::string, std::string> out;
  if (!node.contains("metadata") || !node["metadata"].contains("labels")) return out;
  for (const auto& [k, v] : node["metadata"]["labels"].items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

bool IsGpuNode(const Json& node) {
  if (!LabelOf(node, "perfgate.io/verdict").empty()) return true;
  const Json::json_pointer p("/status/allocatable/nvidia.com~1gpu");
  if (!node.contains(p)) return false;
  const Json& v = node[p];
  if (v.is_string()) return !v.get<std::string>().empty() && v.get<std::string>() != "0";
  return v.is_number() && v.get<double>() > 0;
}

std::string CompletedAt(const fleet::NodeReport& r) {
  return !r.report.completiontime().empty() ? r.report.completiontime() : r.report.starttime();
}

std::string WhyOf(const fleet::NodeReport& r) {
  // The first thing the diagnosis points at, and where its bundle is (docs/diagnostics.md).
  const auto& d = r.report.diagnosis();
  const std::string command = fleet::BundleCommand(r);
  const std::string bundle = command.empty() ? "" : "; bundle: " + command;
  if (r.report.verdict() != v1alpha1::PASS && !r.report.reason().empty()) {
    std::string why = r.report.reason();
    if (!d.hints().empty()) why += "; hint: " + d.hints(0);
    return why + bundle;
  }
  // A passing node whose GPU lags its siblings (the worker captured a diagnosis for it).
  if (!d.lagging().empty()) return "lagging: " + d.lagging(0) + bundle;
  return r.worst;
}

// The line that says results are not kept, and how to keep them.
constexpr const char* kNotKept =
    "results are not kept (store.mode=off): history and regressions are not compared; set "
    "store.mode=sqlite or postgres to keep them";

// Whether the validation's condition Recorded is False for reason StoreOff.
bool SaysStoreOff(const Json& validation) {
  if (!validation.is_object()) return false;
  const Json status = validation.value("status", Json::object());
  if (!status.is_object()) return false;
  for (const auto& c : status.value("conditions", Json::array())) {
    if (c.is_object() && c.value("type", "") == "Recorded") {
      return c.value("status", "") == "False" && c.value("reason", "") == "StoreOff";
    }
  }
  return false;
}

Json ToJson(const FleetSummary& s) {
  Json out = {{"nodes", Json::array()},
              {"byModel", Json::object()},
              {"lagging", Json::array()},
              {"resultsNotKept", s.results_not_kept}};
  if (s.results_not_kept) out["notice"] = kNotKept;
  for (const auto& n : s.nodes) {
    out["nodes"].push_back({{"node", n.node},
                            {"model", n.model},
                            {"verdict", n.verdict.empty() ? "NEVER" : n.verdict},
                            {"validation", n.validation},
                            {"run", n.run},
                            {"why", n.why},
                            {"action", n.action},
                            {"lastValidated", n.last_validated},
                            {"stale", n.stale}});
  }
  for (const auto& [model, counts] : s.by_model) out["byModel"][model] = counts;
  for (const auto& r : s.rolling) {
    out["rolling"].push_back({{"node", r.node},
                              {"validation", r.validation},
                              {"lastValidated", r.last_validated},
                              {"nextDue", r.next_due},
                              {"lastVerdict", r.last_verdict},
                              {"overdue", r.overdue}});
  }
  for (const auto& l : s.lagging) {
    out["lagging"].push_back({{"node", l.figure.node},
                              {"device", l.figure.device},
                              {"test", l.figure.test},
                              {"metric", l.figure.metric},
                              {"statistic", l.figure.statistic},
                              {"figure", l.figure.value},
                              {"peerMedian", l.peer_median},
                              {"ratio", l.ratio},
                              {"robustZ", l.z}});
  }
  return out;
}

}  // namespace

bool ResultsNotKept(const std::vector<Json>& validations) {
  return !validations.empty() && std::all_of(validations.begin(), validations.end(), SaysStoreOff);
}

FleetSummary Summarize(const std::vector<Json>& nodes,
                       const std::vector<fleet::NodeReport>& results,
                       std::chrono::system_clock::time_point now, std::chrono::hours stale_after) {
  std::map<std::string, const fleet::NodeReport*> latest;
  for (const auto& r : results) {
    auto [it, added] = latest.emplace(r.node, &r);
    if (!added && CompletedAt(r) > CompletedAt(*it->second)) it->second = &r;
  }
  FleetSummary s;
  std::vector<fleet::NodeReport> current;
  for (const Json& node : nodes) {
    if (!IsGpuNode(node)) continue;
    NodeLine line;
    line.node = node.value("/metadata/name"_json_pointer, std::string());
    const std::map<std::string, std::string> labels = Labels(node);
    if (auto model = op::GpuModelOfNode(labels); model.ok()) line.model = model->model;
    if (auto it = latest.find(line.node); it != latest.end()) {
      const fleet::NodeReport& r = *it->second;
      if (std::string m = fleet::GpuModel(r.report); !m.empty()) line.model = m;
      line.verdict = report::VerdictName(r.report.verdict());
      line.validation = r.validation;
      line.run = r.run;
      line.why = WhyOf(r);
      line.action = r.report.action().step();
      // The operator's label: the same step, climbed when the node keeps failing.
      if (auto label = labels.find(op::kActionLabel);
          label != labels.end() && !label->second.empty()) {
        line.action = label->second;
      }
      line.last_validated = CompletedAt(r);
      const auto at = ParseRfc3339(line.last_validated);
      line.stale = !at || now - *at > stale_after;
      current.push_back(r);
    }
    // GPU Feature Discovery writes "NVIDIA-H200" where CUDA says "NVIDIA H200": one model.
    std::replace(line.model.begin(), line.model.end(), '-', ' ');
    std::replace(line.model.begin(), line.model.end(), '_', ' ');
    if (line.model.empty()) line.model = "unknown";
    auto& counts = s.by_model[line.model];
    ++counts[line.verdict.empty() ? "NEVER" : line.verdict];
    if (line.stale) ++counts["STALE"];
    s.nodes.push_back(std::move(line));
  }
  std::sort(s.nodes.begin(), s.nodes.end(),
            [](const NodeLine& a, const NodeLine& b) { return a.node < b.node; });
  s.lagging = fleet::FindLagging(fleet::Figures(current));
  return s;
}

std::vector<RollingLine> RollingNodes(const std::vector<Json>& validations,
                                      std::chrono::system_clock::time_point now) {
  std::vector<RollingLine> out;
  for (const Json& v : validations) {
    if (!v.is_object()) continue;
    const Json rolling = v.value("status", Json::object()).value("rolling", Json::object());
    if (!rolling.is_object()) continue;
    const Json nodes = rolling.value("nodes", Json::object());
    if (!nodes.is_object()) continue;
    for (const auto& [node, e] : nodes.items()) {
      if (!e.is_object()) continue;
      RollingLine line{node,
                       v.value("/metadata/name"_json_pointer, std::string()),
                       e.value("lastValidated", ""),
                       e.value("nextDue", ""),
                       e.value("lastVerdict", ""),
                       false};
      const auto due = ParseRfc3339(line.next_due);
      line.overdue = due && *due <= now;
      out.push_back(std::move(line));
    }
  }
  std::sort(out.begin(), out.end(), [](const RollingLine& a, const RollingLine& b) {
    return std::tie(a.validation, a.node) < std::tie(b.validation, b.node);
  });
  return out;
}

std::string Notice(const FleetSummary& s) {
  return s.results_not_kept ? std::string("Note: ") + kNotKept + ".\n" : "";
}

std::string Format(const FleetSummary& s, const std::string& output) {
  if (output == "json") return ToJson(s).dump(2) + "\n";
  if (output == "yaml") {
    return yaml::EmitYaml(ToJson(s)) + "\n";
  }
  const bool wide = output == "wide";
  std::ostringstream os;
  std::vector<std::vector<std::string>> models = {
      {"GPU MODEL", "NODES", "PASS", "FAIL", "INCONCLUSIVE", "ERROR", "NEVER", "STALE"}};
  for (const auto& entry : s.by_model) {
    const std::string& model = entry.first;
    const std::map<std::string, int>& c = entry.second;
    int total = 0;
    for (const auto& [word, n] : c) total += word == "STALE" ? 0 : n;
    auto count = [&](const std::string& w) {
      auto it = c.find(w);
      return std::to_string(it == c.end() ? 0 : it->second);
    };
    models.push_back({model, std::to_string(total), count(report::VerdictName(v1alpha1::PASS)),
                      count(report::VerdictName(v1alpha1::FAIL)),
                      count(report::VerdictName(v1alpha1::INCONCLUSIVE)),
                      count(report::VerdictName(v1alpha1::ERROR)), count("NEVER"), count("STALE")});
  }
  os << report::FormatColumns(models);

  std::vector<std::vector<std::string>> bad = {{"NODE", "VERDICT", "ACTION", "VALIDATION", "WHY"}};
  if (wide) {
    bad[0] = {"NODE", "VERDICT", "ACTION", "VALIDATION", "RUN", "MODEL", "LAST VALIDATED", "WHY"};
  }
  for (const auto& n : s.nodes) {
    if (n.verdict.empty() || n.verdict == "PASS") continue;
    const std::string action = n.action.empty() ? "-" : n.action;
    if (wide) {
      bad.push_back(
          {n.node, n.verdict, action, n.validation, n.run, n.model, n.last_validated, n.why});
    } else {
      bad.push_back({n.node, n.verdict, action, n.validation, n.why});
    }
  }
  if (bad.size() > 1) os << "\nNot passing:\n" << report::FormatColumns(bad);

  if (!s.lagging.empty()) {
    std::vector<std::vector<std::string>> lag = {
        {"NODE", "DEVICE", "TEST", "METRIC", "FIGURE", "PEERS", "RATIO"}};
    if (wide) lag[0].push_back("ROBUST Z");
    for (const auto& l : s.lagging) {
      lag.push_back({l.figure.node, l.figure.device, l.figure.test, l.figure.metric,
                     report::FormatFigure(l.figure.value), report::FormatFigure(l.peer_median),
                     report::FormatFigure(l.ratio)});
      if (wide) lag.back().push_back(report::FormatFigure(l.z));
    }
    os << "\nLagging their peers (passing, 3% or more below the median of their GPU model):\n"
       << report::FormatColumns(lag);
  }

  std::vector<std::vector<std::string>> never = {{"NODE", "MODEL"}};
  std::vector<std::vector<std::string>> stale = {{"NODE", "VERDICT", "LAST VALIDATED"}};
  for (const auto& n : s.nodes) {
    if (n.verdict.empty()) never.push_back({n.node, n.model});
    if (n.stale) stale.push_back({n.node, n.verdict, n.last_validated});
  }
  if (never.size() > 1) os << "\nNever validated:\n" << report::FormatColumns(never);
  if (stale.size() > 1) os << "\nValidated too long ago:\n" << report::FormatColumns(stale);
  if (!s.rolling.empty()) {
    std::vector<std::vector<std::string>> rolling = {
        {"NODE", "VALIDATION", "LAST VALIDATED", "VERDICT", "DUE", "STATE"}};
    for (const auto& r : s.rolling) {
      const char* state = r.overdue ? "overdue" : r.last_validated.empty() ? "never" : "current";
      rolling.push_back({r.node, r.validation, r.last_validated.empty() ? "-" : r.last_validated,
                         r.last_verdict.empty() ? "-" : r.last_verdict, r.next_due, state});
    }
    os << "\nRolling re-validation:\n" << report::FormatColumns(rolling);
  }
  if (s.results_not_kept) os << "\n" << Notice(s);
  return os.str();
}

}  // namespace perfgate::summary
