// perfgate's commands over results and clusters: report, summary, plan against a cluster, rerun,
// bundle, compare and export (cli/commands.h).
#include "cli/commands.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/compare.h"
#include "cli/html_report.h"
#include "cli/plan_view.h"
#include "cli/summary.h"
#include "common/exit_codes.h"
#include "common/labels.h"
#include "common/report.h"
#include "common/strings.h"
#include "common/time.h"
#include "core/fleet.h"
#include "core/names.h"
#include "core/resolve.h"
#include "kube/client.h"
#include "kube/config.h"
#include "store/store.h"

namespace perfgate::cli {
namespace {

// Invalid input the command line could not see: exit 2.
int Usage(const std::string& command, const std::string& error) {
  std::cerr << "perfgate " << command << ": " << error << "\n";
  return exit_code::kInvalid;
}

// A failure named by `status`: what the user named does not exist (2), or it could not be
// read, written or reached (3).
int Fail(const std::string& command, const Status& status) {
  std::cerr << "perfgate " << command << ": " << status.message() << "\n";
  return status.code() == Code::kNotFound || status.code() == Code::kInvalidArgument
             ? exit_code::kInvalid
             : exit_code::kError;
}

int Fail(const std::string& command, const std::string& error) {
  std::cerr << "perfgate " << command << ": " << error << "\n";
  return exit_code::kError;
}

// A client as kubectl would pick its config: --kubeconfig, else $KUBECONFIG, else in-cluster,
// else ~/.kube/config; --context selects a context of that file.
Result<std::shared_ptr<kube::Client>> Connect(const ClusterFlags& flags) {
  const std::string& context = flags.context;
  Result<kube::RestConfig> config = Status::Ok();
  if (context.empty()) {
    config = kube::LoadDefaultConfig(flags.kubeconfig);
  } else {
    std::string path = flags.kubeconfig;
    if (path.empty()) {
      const char* env = std::getenv("KUBECONFIG");  // NOLINT(concurrency-mt-unsafe)
      if (env != nullptr && *env != '\0')
        path = std::string(env).substr(0, std::string(env).find(':'));
    }
    if (path.empty()) {
      const char* home = std::getenv("HOME");  // NOLINT(concurrency-mt-unsafe)
      path = std::string(home != nullptr ? home : "") + "/.kube/config";
    }
    config = kube::LoadKubeconfig(path, context);
  }
  if (!config.ok()) return config.status();
  return kube::NewClient(*config);
}

// The validation's PerfResults of its current run (status.run).
Result<std::vector<fleet::NodeReport>> FromCluster(kube::Client& client,
                                                   const std::string& validation,
                                                   const std::string& ns) {
  auto obj = client.Get(op::ValidationsResource(), "", validation);
  if (!obj.ok()) return obj.status().WithContext("perfvalidation " + validation);
  std::string run;
  if (const auto& st = (*obj)["status"]; st.is_object() && st.contains("run")) {
    run = st["run"].get<std::string>();
  }
  if (run.empty()) {
    return Status(Code::kFailedPrecondition,
                  "perfvalidation " + validation + " has not started a run yet");
  }
  kube::ListOptions options;
  options.labelSelector = std::string(op::kValidationLabel) + "=" + LabelValue(validation) + "," +
                          op::kRunLabel + "=" + run;
  auto list = client.ListAll(op::ResultsResource(), ns, options);
  if (!list.ok()) return list.status().WithContext("perfresults in namespace " + ns);
  auto reports = fleet::ParseReports(list->dump(), "perfresults of " + validation);
  if (reports.ok() && reports->empty()) {
    return Status(Code::kFailedPrecondition, "perfvalidation " + validation + " run " + run +
                                                 " has no PerfResults in namespace " + ns + " yet");
  }
  return reports;
}

}  // namespace

int Report(const ReportArgs& args) {
  const std::string& validation = args.validation;
  const std::string& ns = args.cluster.name_space;
  const std::string& output = args.out;
  if (args.paths.empty() == validation.empty()) {
    return Usage("report", "give report files or folders, or --validation NAME (not both)");
  }
  Result<std::vector<fleet::NodeReport>> reports = Status::Ok();
  if (validation.empty()) {
    reports = fleet::LoadReports(args.paths);
  } else {
    auto client = Connect(args.cluster);
    if (!client.ok()) return Fail("report", client.status());
    reports = FromCluster(**client, validation, ns);
  }
  if (!reports.ok()) return Fail("report", reports.status());
  htmlreport::Options options;
  options.title = !args.title.empty()  ? args.title
                  : validation.empty() ? "perfgate report"
                                       : "perfgate: " + validation;
  if (validation.empty()) {
    for (const auto& p : args.paths) {
      options.source += (options.source.empty() ? "" : ", ") + p;
    }
  } else {
    options.source = "perfvalidation " + validation;
  }
  options.generated = NowRfc3339();
  const std::string html = htmlreport::Render(*reports, options);
  if (output == "-") {
    std::cout << html;
    return 0;
  }
  if (Status st = report::WriteFileAtomic(output, html); !st.ok()) {
    return Fail("report", st.message());
  }
  std::cerr << "perfgate report: " << reports->size() << " node reports -> " << output << "\n";
  return 0;
}

int Summary(const SummaryArgs& args) {
  const std::string& output = args.output;
  const int stale_hours = args.stale_hours;
  auto client = Connect(args.cluster);
  if (!client.ok()) return Fail("summary", client.status());
  auto nodes = (*client)->ListAll(kube::NodesResource(), "", {});
  if (!nodes.ok()) return Fail("summary", nodes.status().WithContext("nodes"));
  const std::string& ns = args.cluster.name_space;
  auto results = (*client)->ListAll(op::ResultsResource(), ns, {});
  if (!results.ok()) {
    return Fail("summary", results.status().WithContext("perfresults in " + ns).message());
  }
  auto reports = fleet::ParseReports(results->dump(), "perfresults in " + ns);
  if (!reports.ok()) return Fail("summary", reports.status().message());
  // PerfValidations are cluster-scoped: their Recorded condition says whether results are kept.
  auto validations = (*client)->ListAll(op::ValidationsResource(), "", {});
  if (!validations.ok()) {
    return Fail("summary", validations.status().WithContext("perfvalidations").message());
  }
  auto items = [](const nlohmann::json& list) {
    std::vector<nlohmann::json> out;
    if (list.contains("items") && list["items"].is_array()) {
      for (const auto& item : list["items"]) out.push_back(item);
    }
    return out;
  };
  const std::vector<nlohmann::json> node_list = items(*nodes);
  auto s = summary::Summarize(node_list, *reports, std::chrono::system_clock::now(),
                              std::chrono::hours(stale_hours));
  s.results_not_kept = summary::ResultsNotKept(items(*validations));
  s.rolling = summary::RollingNodes(items(*validations), std::chrono::system_clock::now());
  if (s.nodes.empty() && output.empty()) {
    std::cout << "No GPU nodes (nodes with allocatable nvidia.com/gpu).\n" << summary::Notice(s);
    return 0;
  }
  std::cout << summary::Format(s, output);
  return 0;
}

int ClusterPlan(const ClusterPlanArgs& args) {
  const std::string& output = args.output;
  const std::string& file = args.file;
  if (file.empty() == args.validation.empty()) {
    return Usage("plan", "plan takes a spec file or the name of a validation in the cluster");
  }
  auto client = Connect(args.cluster);
  if (!client.ok()) return Fail("plan", client.status());
  Result<spec::Loaded<v1alpha1::PerfValidation>> loaded = Status::Ok();
  if (!file.empty()) {
    loaded = spec::LoadValidation(file);
  } else {
    auto obj = (*client)->Get(op::ValidationsResource(), "", args.validation);
    if (!obj.ok())
      return Fail("plan", obj.status().WithContext("perfvalidation " + args.validation));
    loaded = op::ParseValidationObject(*obj);
  }
  if (!loaded.ok()) return Usage("plan", loaded.status().message());
  auto nodes = (*client)->ListAll(kube::NodesResource(), "", {});
  if (!nodes.ok()) return Fail("plan", nodes.status().WithContext("nodes"));
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& n : nodes->value("items", nlohmann::json::array())) {
    by_name[n["metadata"].value("name", "")] = n;
  }
  op::ClusterProfiles profiles;
  auto listed = (*client)->ListAll(op::ProfilesResource(), "", {});
  if (!listed.ok()) return Fail("plan", listed.status().WithContext("perfprofiles"));
  for (const auto& p : listed->value("items", nlohmann::json::array())) {
    profiles.by_name[p["metadata"].value("name", "")] = p;
  }
  profiles.listed = true;
  auto view = planview::Build(*loaded, by_name, profiles, false);
  // The operator would refuse the spec: invalid input.
  if (!view.ok()) return Usage("plan", view.status().message());
  std::cout << planview::Format(*view, output);
  return 0;
}

int Rerun(const RerunArgs& args) {
  const std::string& name = args.name;
  auto client = Connect(args.cluster);
  if (!client.ok()) return Fail("rerun", client.status());
  // A token that differs from any earlier one: the time to the millisecond.
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  const std::string token = std::to_string(ms);
  nlohmann::json patch = {{"metadata", {{"annotations", {{op::kRerunAnnotation, token}}}}}};
  auto done = (*client)->Patch(op::ValidationsResource(), "", name, kube::PatchType::kMerge, patch);
  if (!done.ok()) return Fail("rerun", done.status().WithContext("perfvalidation " + name));
  std::cout << "perfvalidation.perfgate.io/" << name << " rerun requested (" << token << ")\n";
  return 0;
}

// The diagnosis bundle of one node (the ConfigMap its worker wrote) into a folder.
int Bundle(const BundleArgs& args) {
  const std::string& validation = args.validation;
  const std::string& node = args.node;
  const std::string& ns = args.cluster.name_space;
  const std::string dir =
      args.out.empty() ? "perfgate-bundle-" + validation + "-" + node : args.out;
  auto client = Connect(args.cluster);
  if (!client.ok()) return Fail("bundle", client.status());
  std::string run = args.run;
  if (run.empty()) {
    auto obj = (*client)->Get(op::ValidationsResource(), "", validation);
    if (!obj.ok()) {
      return Fail("bundle", obj.status().WithContext("perfvalidation " + validation));
    }
    if (const auto& st = (*obj)["status"]; st.is_object() && st.contains("run")) {
      run = st["run"].get<std::string>();
    }
    if (run.empty()) return Fail("bundle", "perfvalidation " + validation + " has no run yet");
  }
  kube::ListOptions options;
  options.labelSelector = "perfgate.io/diagnosis=true," + std::string(op::kValidationLabel) + "=" +
                          LabelValue(validation) + "," + op::kNodeLabel + "=" + LabelValue(node) +
                          "," + op::kRunLabel + "=" + run;
  auto list = (*client)->ListAll(op::ConfigMapsResource(), ns, options);
  if (!list.ok()) {
    return Fail("bundle", list.status().WithContext("configmaps in namespace " + ns));
  }
  const auto& items = (*list)["items"];
  if (!items.is_array() || items.empty()) {
    return Fail("bundle", NotFound("no diagnosis bundle for node " + node + " in run " + run +
                                   " of " + validation + " (namespace " + ns +
                                   "): a worker gathers one only when a test fails there, unless "
                                   "spec.diagnostics.capture is Never"));
  }
  const nlohmann::json& cm = items[0];
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Fail("bundle", "cannot create " + dir + ": " + ec.message());
  const nlohmann::json data = cm.value("data", nlohmann::json::object());
  for (const auto& [name, content] : data.items()) {
    // ConfigMap keys hold no '/', but a key is not trusted with a path.
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      continue;
    }
    if (Status st = report::WriteFileAtomic(dir + "/" + name, content.get<std::string>());
        !st.ok()) {
      return Fail("bundle", st.message());
    }
    std::cout << dir << "/" << name << " (" << content.get<std::string>().size() << " bytes)\n";
  }
  const nlohmann::json summary =
      nlohmann::json::parse(data.value("summary.json", "{}"), nullptr, false);
  if (summary.is_object()) {
    for (const auto& f : summary.value("failures", nlohmann::json::array())) {
      std::cout << "failed: " << f.get<std::string>() << "\n";
    }
    for (const auto& h : summary.value("hints", nlohmann::json::array())) {
      std::cout << "hint: " << h.get<std::string>() << "\n";
    }
    for (const auto& p : summary.value("parts", nlohmann::json::array())) {
      if (!p.value("note", "").empty()) {
        std::cout << p.value("name", "") << ": " << p.value("note", "") << "\n";
      }
    }
  }
  return 0;
}

double ParseFraction(std::string text) {
  const bool percent = !text.empty() && text.back() == '%';
  if (percent) text.pop_back();
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used != text.size()) return std::nan("");
    return percent ? v / 100 : v;
  } catch (const std::exception&) {
    return std::nan("");
  }
}

namespace {

// Appends the figures of one source: a report file or folder, an export (.csv, .jsonl), or
// with a store a selector; `extra` added to each figure's config ("east=reports/east" adds
// cluster=east). Returns -1 when done, else the exit code.
int LoadSource(const std::string& command, const std::string& source, store::Store* db,
               const std::vector<std::string>& statistics, compare::Config extra,
               std::vector<compare::Figure>* figures) {
  Result<std::vector<compare::Figure>> got = Status::Ok();
  if (db != nullptr) {
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    auto selector = compare::ParseSelector(source, now_ms);
    if (!selector.ok()) return Usage(command, selector.status().message());
    got = compare::FromStore(*db, *selector, statistics, extra);
  } else {
    std::string path = source;
    // "east=reports/east": the files' cluster.
    if (const auto eq = path.find('=');
        eq != std::string::npos && eq > 0 && path.substr(0, eq).find('/') == std::string::npos) {
      extra["cluster"] = path.substr(0, eq);
      path = path.substr(eq + 1);
    }
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return Usage(command, path + ": no such file or folder");
    }
    if (compare::ExportFormatOf(path)) {
      got = compare::FromExport(path, statistics, extra);
    } else {
      auto reports = fleet::LoadReports({path});
      if (!reports.ok()) return Fail(command, reports.status().message());
      got = compare::FromReports(*reports, statistics, extra);
    }
  }
  if (!got.ok()) return Fail(command, got.status().message());
  figures->insert(figures->end(), got->begin(), got->end());
  return -1;
}

// Every source (with --store, selectors), side "A" and "B" when `sides`, then only the --test
// tests. -1 when done, else the exit code.
int LoadSources(const std::string& command, const SourceArgs& from, bool sides,
                const std::vector<std::string>& statistics, std::vector<compare::Figure>* figures) {
  std::unique_ptr<store::Store> db;
  if (!from.store.empty()) {
    auto opened = store::Open(from.store);
    if (!opened.ok()) return Fail(command, opened.status().message());
    db = std::move(opened).value();
  }
  for (std::size_t i = 0; i < from.sources.size(); ++i) {
    compare::Config extra;
    if (sides) extra["side"] = i == 0 ? "A" : "B";
    if (int code = LoadSource(command, from.sources[i], db.get(), statistics, extra, figures);
        code >= 0) {
      return code;
    }
  }
  if (!from.test.empty()) {
    const auto tests = Split(from.test, ',');
    std::erase_if(*figures, [&](const compare::Figure& f) {
      return std::find(tests.begin(), tests.end(), f.test) == tests.end();
    });
  }
  return -1;
}

// --statistic LIST, checked; an empty vector (after a message) when a name is unknown.
std::vector<std::string> Statistics(const std::string& command, const std::string& list) {
  std::vector<std::string> out;
  for (const auto& s : Split(list, ',')) {
    if (!compare::KnownStatistic(s)) {
      Usage(command, "--statistic " + s + " is not one of mean, median, p05, p95, min, max");
      return {};
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace

int Export(const ExportArgs& args) {
  std::string all;
  for (const char* s : store::kBaselineStatistics) all += (all.empty() ? "" : ",") + std::string(s);
  const std::vector<std::string> statistics =
      Statistics("export", args.from.statistic.empty() ? all : args.from.statistic);
  if (statistics.empty()) return exit_code::kInvalid;
  std::vector<compare::Figure> figures;
  if (int code = LoadSources("export", args.from, false, statistics, &figures); code >= 0) {
    return code;
  }
  const std::string text =
      compare::FormatExport(figures, args.output == "csv" ? compare::ExportFormat::kCsv
                                                          : compare::ExportFormat::kJsonLines);
  if (!args.out.empty() && args.out != "-") {
    if (Status st = report::WriteFileAtomic(args.out, text); !st.ok()) {
      return Fail("export", st.message());
    }
  } else {
    std::cout << text;
  }
  return exit_code::kOk;
}

int Compare(const CompareArgs& args) {
  compare::Options options;
  if (args.pairing == "paired") options.pairing = compare::Pairing::kPaired;
  if (args.pairing == "unpaired") options.pairing = compare::Pairing::kUnpaired;
  options.margin = args.margin;
  options.alpha = args.alpha;
  options.confidence = 1 - options.alpha;
  const std::vector<std::string> statistics =
      Statistics("compare", args.from.statistic.empty() ? "median" : args.from.statistic);
  if (statistics.empty()) return exit_code::kInvalid;
  const std::string& by = args.by;
  const auto& sources = args.from.sources;
  if (by.empty() && sources.size() != 2) {
    return Usage("compare",
                 "compare takes two sources, A and B (or --by KEY and one source or more)");
  }
  if (!by.empty() && sources.empty()) return Usage("compare", "compare --by needs a source");
  if (by.empty() && !args.reference.empty()) return Usage("compare", "--reference needs --by");

  std::vector<compare::Figure> figures;
  if (int code = LoadSources("compare", args.from, by.empty(), statistics, &figures); code >= 0) {
    return code;
  }
  std::vector<std::string> groups = {"A", "B"};
  if (!by.empty()) {
    groups = compare::GroupsBy(figures, by);
    if (groups.size() < 2) {
      return Fail("compare", "--by " + by + " forms " + std::to_string(groups.size()) +
                                 " group(s) in these results; a comparison needs two or more");
    }
    if (!args.reference.empty()) {
      auto it = std::find(groups.begin(), groups.end(), args.reference);
      if (it == groups.end()) {
        return Usage("compare", "--reference " + args.reference + " is not a value of " + by);
      }
      std::rotate(groups.begin(), it, it + 1);
    }
  }
  auto result = compare::Compare(figures, groups, by, options);
  if (!result.ok()) return Fail("compare", result.status().message());
  if (!args.html.empty()) {
    std::string source;
    for (const auto& p : sources) source += (source.empty() ? "" : " vs ") + p;
    if (!args.from.store.empty()) source += " in " + args.from.store;
    if (Status st =
            report::WriteFileAtomic(args.html, compare::FormatHtml(*result, source, NowRfc3339()));
        !st.ok()) {
      return Fail("compare", st.message());
    }
  }
  if (args.output == "json") {
    std::cout << compare::FormatJson(*result);
  } else if (args.output == "markdown") {
    std::cout << compare::FormatMarkdown(*result);
  } else {
    std::cout << compare::FormatTable(*result);
  }
  return result->Count(compare::Decision::kRegressed) > 0 ? exit_code::kFailed : exit_code::kOk;
}

}  // namespace perfgate::cli
