#include "cli/plan_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/report.h"
#include "common/yaml_emit.h"
#include "core/eta.h"
#include "core/selection.h"

namespace perfgate::planview {

std::string FormatSeconds(double seconds) {
  char buf[32];
  const double s = std::ceil(std::max(seconds, 0.0));
  if (s < 60) {
    std::snprintf(buf, sizeof(buf), "%.0fs", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof(buf), "%.0fm%02.0fs", std::floor(s / 60), std::fmod(s, 60));
  } else {
    const double m = std::ceil(s / 60);
    std::snprintf(buf, sizeof(buf), "%.0fh%02.0fm", std::floor(m / 60), std::fmod(m, 60));
  }
  return buf;
}

Result<View> Build(const spec::Loaded<v1alpha1::PerfValidation>& loaded,
                   const std::map<std::string, Json>& nodes, const op::ClusterProfiles& profiles,
                   bool fixtures) {
  View view;
  view.validation = loaded.doc.metadata().name();
  const auto& spec = loaded.doc.spec();
  const std::vector<std::string> selected = op::SelectNodes(spec, nodes);
  if (selected.empty()) {
    return InvalidArgument(
        "no node matches spec.nodeSelector/spec.nodes with allocatable nvidia.com/gpu");
  }
  const op::SelectedModels models = op::ModelsOf(selected, nodes);
  ASSIGN_OR_RETURN(view.resolved,
                   op::ResolvePlan(loaded, profiles, fixtures, selected, nodes, models));
  for (const auto& name : selected) {
    PlannedNode n{name, "", 0};
    if (auto it = models.known.find(name); it != models.known.end()) n.model = it->second.model;
    if (auto it = nodes.find(name); it != nodes.end()) n.gpus = op::NodeGpus(it->second);
    view.nodes.push_back(n);
  }
  view.gpu_models = op::DescribeModels(models.known);
  const int n = static_cast<int>(selected.size());
  view.parallelism = spec.policy().parallelism();
  if (view.parallelism <= 0 || view.parallelism > n || view.resolved.gang) view.parallelism = n;
  view.typical_seconds =
      op::RemainingSeconds(view.resolved.price.typical_seconds, {}, n, view.parallelism);
  view.worst_seconds =
      op::RemainingSeconds(view.resolved.price.worst_seconds, {}, n, view.parallelism);
  return view;
}

namespace {

Json Count(int n) { return n == std::numeric_limits<int>::max() ? Json(nullptr) : Json(n); }

std::string Samples(const worker::TestPrice& t) {
  if (t.sampling.fixed) return std::to_string(t.sampling.max_repeats);
  return std::to_string(t.sampling.min_repeats) + "-" + std::to_string(t.sampling.max_repeats);
}

}  // namespace

Json ToJson(const View& view) {
  const op::ResolvedPlan& r = view.resolved;
  Json nodes = Json::array();
  for (const auto& n : view.nodes) {
    nodes.push_back({{"name", n.name}, {"gpuModel", n.model}, {"gpus", n.gpus}});
  }
  Json tests = Json::array();
  for (std::size_t i = 0; i < r.price.tests.size(); ++i) {
    const worker::TestPrice& t = r.price.tests[i];
    const worker::PlannedTest& planned = r.built.tests[i];
    Json thresholds = Json::array();
    for (const auto& th : t.thresholds) {
      thresholds.push_back(
          {{"threshold", th.text},
           {"statistical", th.statistical},
           {"fewestSamplesToPass", Count(th.reach.pass_samples)},
           {"fewestSamplesToFail", Count(th.reach.fail_samples)},
           {"typicalSamples", th.statistical ? Count(th.typical_samples) : Json()}});
    }
    tests.push_back({{"name", t.name},
                     {"type", planned.type},
                     {"optional", planned.optional},
                     {"on", t.targets},
                     {"sampling",
                      {{"warmup", t.sampling.warmup},
                       {"minRepeats", t.sampling.min_repeats},
                       {"maxRepeats", t.sampling.max_repeats},
                       {"maxSeconds", t.sampling.max_seconds},
                       {"confidence", t.sampling.confidence},
                       {"method", t.sampling.fixed ? "fixed" : "sequential"}}},
                     {"sampleSeconds", t.sample_seconds},
                     {"typicalSamples", t.typical_samples},
                     {"typicalSeconds", t.typical_seconds},
                     {"worstSeconds", t.worst_seconds},
                     {"thresholds", thresholds}});
  }
  return {{"validation", view.validation},
          {"profile", r.profile},
          {"profileVersion", r.profile_version},
          {"gpuModels", view.gpu_models},
          {"gpusPerNode", r.gpus},
          {"statisticalChecksPerNode", r.price.checks},
          {"gang", r.gang},
          {"parallelism", view.parallelism},
          {"nodes", nodes},
          {"tests", tests},
          {"estimate",
           {{"perNodeTypicalSeconds", r.price.typical_seconds},
            {"perNodeWorstSeconds", r.price.worst_seconds},
            {"typicalSeconds", view.typical_seconds},
            {"worstSeconds", view.worst_seconds}}}};
}

std::string Format(const View& view, const std::string& output) {
  if (output == "json") return ToJson(view).dump(2) + "\n";
  if (output == "yaml") return yaml::EmitYaml(ToJson(view)) + "\n";
  const bool wide = output == "wide";
  const op::ResolvedPlan& r = view.resolved;
  const int n = static_cast<int>(view.nodes.size());
  std::string out;
  std::vector<std::vector<std::string>> head = {
      {"VALIDATION", "PROFILE", "NODES", "GPUS", "AT ONCE", "PER NODE", "IN ALL", "WORST CASE"}};
  head.push_back({view.validation.empty() ? "(unnamed)" : view.validation,
                  r.profile.empty()
                      ? "(inline tests)"
                      : r.profile + (r.profile_version.empty() ? "" : " v" + r.profile_version),
                  std::to_string(n), std::to_string(r.gpus),
                  r.gang ? "gangs" : std::to_string(view.parallelism),
                  "~" + FormatSeconds(r.price.typical_seconds),
                  "~" + FormatSeconds(view.typical_seconds), FormatSeconds(view.worst_seconds)});
  out += report::FormatColumns(head);
  if (!view.gpu_models.empty()) out += "GPU models: " + view.gpu_models + "\n";

  std::vector<std::vector<std::string>> tests = {{"TEST", "ON", wide ? "THRESHOLD" : "THRESHOLDS",
                                                  "SAMPLES", "PER SAMPLE", "TYPICAL", "WORST"}};
  for (const auto& t : r.price.tests) {
    char per[32];
    std::snprintf(per, sizeof(per), "%.2gs", t.sample_seconds);
    if (!wide || t.thresholds.empty()) {
      tests.push_back({t.name, t.targets, std::to_string(t.thresholds.size()), Samples(t), per,
                       FormatSeconds(t.typical_seconds), FormatSeconds(t.worst_seconds)});
      continue;
    }
    for (std::size_t i = 0; i < t.thresholds.size(); ++i) {
      const bool first = i == 0;
      tests.push_back({first ? t.name : "", first ? t.targets : "", t.thresholds[i].text,
                       first ? Samples(t) : "", first ? per : "",
                       first ? FormatSeconds(t.typical_seconds) : "",
                       first ? FormatSeconds(t.worst_seconds) : ""});
    }
  }
  out += "\n" + report::FormatColumns(tests);
  if (wide) {
    std::vector<std::vector<std::string>> nodes = {{"NODE", "GPU MODEL", "GPUS"}};
    for (const auto& node : view.nodes) {
      nodes.push_back(
          {node.name, node.model.empty() ? "-" : node.model, std::to_string(node.gpus)});
    }
    out += "\n" + report::FormatColumns(nodes);
  }
  out +=
      "\nEstimates from each test's declared time per sample: TYPICAL is a healthy node\n"
      "(figures clear of their bounds, warm-up included), WORST every test at its maxRepeats\n"
      "or maxSeconds; IN ALL runs the nodes " +
      std::string(r.gang ? "in their gangs, all at once"
                         : std::to_string(view.parallelism) + " at a time") +
      ". Pod scheduling and image pulls come on top.\n";
  return out;
}

}  // namespace perfgate::planview
