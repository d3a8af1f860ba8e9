// perfgate: the user's command for looking at results.
//   perfgate report PATH... [-o FILE] [--title TEXT]
//   perfgate report --validation NAME [--namespace NS] [--kubeconfig FILE] [-o FILE]
//   perfgate compare A B [--store URL] [--margin 3%] [--paired|--unpaired] [-o table|json|markdown]
//   perfgate compare --by KEY SOURCE... [--store URL] [--reference VALUE]
//   perfgate export SOURCE... [--store URL] [-o csv|jsonl] [--out FILE]
// Exit codes: 0 done, 1 the reports could not be read or written, 2 invalid arguments;
// compare: 0 nothing regressed, 1 a metric regressed, 2 invalid arguments, 3 the inputs could
// not be read or hold nothing to compare.
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
#include "common/labels.h"
#include "common/report.h"
#include "common/strings.h"
#include "common/time.h"
#include "core/fleet.h"
#include "core/resolve.h"
#include "kube/client.h"
#include "kube/config.h"
#include "store/store.h"

namespace {

using namespace perfgate;

constexpr const char* kUsage = R"(usage (also as the kubectl plugin: kubectl perfgate ...):
  perfgate summary [-o wide|json|yaml] [--stale 720h]
      Every GPU node with its latest result: counts by GPU model and verdict, the nodes that
      did not pass and why, figures that lag their peers, nodes never validated or validated
      longer ago than --stale (hours, default 720h = 30 days).
  perfgate report PATH... [-o FILE] [--title TEXT]
      An HTML report (one file, opens offline) from report JSON files (perfgate-worker run
      --report-json), PerfResult objects or lists of them (kubectl get perfresults -o json),
      or folders of such files.
  perfgate report --validation NAME [-o FILE]
      The same from a validation's PerfResults in the cluster (its current run).
  perfgate plan -f SPEC.yaml [-o wide|json|yaml]
  perfgate plan NAME [-o wide|json|yaml]
      What a validation (a spec file, or one in the cluster by name) would run on which nodes,
      resolved as the operator resolves it against the cluster's nodes and PerfProfiles: the
      profile picked for the nodes' GPU model, the tests with their sampling and thresholds,
      and the estimated time per node and in all (from each test's declared time per sample:
      typical for a healthy node, and the worst case). Exit code 1 when the operator would
      refuse the spec, with its message.
  perfgate rerun NAME
      Starts a new run of a validation (sets its perfgate.io/rerun annotation).
  perfgate bundle VALIDATION NODE [-o DIR] [--run RUN]
      The diagnosis bundle the worker gathered on NODE when a test failed there
      (docs/diagnostics.md): its files (failures, power/clock/throttle timeline, NVML dump,
      NCCL topology, spec, summary) written into DIR (default perfgate-bundle-VALIDATION-NODE),
      its summary printed. RUN: the validation's current run unless given.
  perfgate compare A B [--margin 3%] [--paired|--unpaired] [-o table|json|markdown]
                   [--html FILE]
      Compares two sets of results per GPU model, test, metric and statistic: medians, the
      ratio B/A with its interval, a rank test (Holm-corrected across rows) and an
      equivalence test against the margin; each row regressed, improved, equivalent or
      inconclusive, and for a gap the identity and configuration keys that explain it. A and
      B are report files or folders, or with --store URL selectors such as
      cluster=east,validation=h200-acceptance,since=7d,driver=570.124.06.
  perfgate compare --by KEY SOURCE... [--reference VALUE]
      The same across the groups a key forms (cluster, driverVersion, any identity key),
      each against the reference group (default: the first by name). Files get a cluster
      from a label: east=reports/east/. A source may also be an export (.csv, .jsonl).
  perfgate export SOURCE... [-o csv|jsonl] [--out FILE] [--statistic LIST] [--test LIST]
      One row per node, test, metric and statistic (default all six) of the sources compare
      reads (files, folders, exports, or with --store selectors), with the node's identity
      and configuration keys: CSV (default) or JSON Lines, to stdout or --out FILE. Exit
      codes as compare's (0 done).
Compare options:
  --store URL         sqlite:///path.db or postgresql://...: A and B are selectors
  --margin M          equivalence margin, 3% or 0.03 (default 3%)
  --alpha A           family-wise error of regressed/improved rows (default 0.05)
  --statistic LIST    statistics of each metric to compare (default median; also mean, p05,
                      p95, min, max)
  --test LIST         only these tests (names as in the spec, comma-separated): fewer rows,
                      a milder correction
  --paired, --unpaired  override the pairing picked from the data (paired: the same nodes)
  -o, --output FORMAT table (default), json or markdown
  --html FILE         also an HTML page: the rows, an interval plot, what differs
  Exit codes: 0 nothing regressed, 1 a metric regressed, 2 invalid arguments, 3 the inputs
  could not be read or hold nothing to compare.
Cluster options (as kubectl's):
  --kubeconfig FILE   --context NAME   -n, --namespace NS (where results live; default
  perfgate-system)
Report options:
  -o, --output FILE   where to write the report (default perfgate-report.html; - for stdout)
  --title TEXT        the report's title
Exit codes: 0 done, 1 the cluster or the files could not be read or written, 2 invalid
arguments.
)";

int Usage(const std::string& error) {
  std::cerr << "perfgate: " << error << "\n\n" << kUsage;
  return 2;
}

int Fail(const std::string& command, const std::string& error) {
  std::cerr << "perfgate " << command << ": " << error << "\n";
  return 1;
}

// Arguments: positional ones and --flag VALUE / --flag=VALUE options (the ones in `known`;
// kubectl passes its global flags through to plugins in either form).
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;
  std::string error;

  std::string Get(const std::string& name, const std::string& fallback = "") const {
    auto it = options.find(name);
    return it == options.end() ? fallback : it->second;
  }
};

Args Parse(const std::vector<std::string>& argv, const std::map<std::string, std::string>& known) {
  Args out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string a = argv[i];
    if (a.size() < 2 || a[0] != '-') {
      out.positional.push_back(a);
      continue;
    }
    std::string value;
    bool has_value = false;
    if (const auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    }
    auto it = known.find(a);
    if (it == known.end()) {
      out.error = "unknown option " + a;
      return out;
    }
    if (!has_value) {
      if (i + 1 >= argv.size()) {
        out.error = a + " needs a value";
        return out;
      }
      value = argv[++i];
    }
    out.options[it->second] = value;
  }
  return out;
}

const std::map<std::string, std::string> kClusterFlags = {{"--kubeconfig", "kubeconfig"},
                                                          {"--context", "context"},
                                                          {"-n", "namespace"},
                                                          {"--namespace", "namespace"}};

std::map<std::string, std::string> With(std::map<std::string, std::string> more) {
  more.insert(kClusterFlags.begin(), kClusterFlags.end());
  return more;
}

// A client as kubectl would pick its config: --kubeconfig, else $KUBECONFIG, else in-cluster,
// else ~/.kube/config; --context selects a context of that file.
Result<std::shared_ptr<kube::Client>> Connect(const Args& args) {
  const std::string context = args.Get("context");
  Result<kube::RestConfig> config = Status::Ok();
  if (context.empty()) {
    config = kube::LoadDefaultConfig(args.Get("kubeconfig"));
  } else {
    std::string path = args.Get("kubeconfig");
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

const kube::GroupVersionResource kValidations{"perfgate.io", "v1alpha1", "perfvalidations"};
const kube::GroupVersionResource kResults{"perfgate.io", "v1alpha1", "perfresults"};

// The validation's PerfResults of its current run (status.run).
Result<std::vector<fleet::NodeReport>> FromCluster(kube::Client& client,
                                                   const std::string& validation,
                                                   const std::string& ns) {
  auto obj = client.Get(kValidations, "", validation);
  if (!obj.ok()) return obj.status().WithContext("perfvalidation " + validation);
  std::string run;
  if (const auto& st = (*obj)["status"]; st.is_object() && st.contains("run")) {
    run = st["run"].get<std::string>();
  }
  if (run.empty()) return NotFound("perfvalidation " + validation + " has not started a run yet");
  kube::ListOptions options;
  options.labelSelector =
      "perfgate.io/validation=" + LabelValue(validation) + ",perfgate.io/run=" + run;
  auto list = client.ListAll(kResults, ns, options);
  if (!list.ok()) return list.status().WithContext("perfresults in namespace " + ns);
  auto reports = fleet::ParseReports(list->dump(), "perfresults of " + validation);
  if (reports.ok() && reports->empty()) {
    return NotFound("perfvalidation " + validation + " run " + run +
                    " has no PerfResults in namespace " + ns + " yet");
  }
  return reports;
}

int Report(const std::vector<std::string>& argv) {
  const Args args = Parse(argv, With({{"-o", "output"},
                                      {"--output", "output"},
                                      {"--title", "title"},
                                      {"--validation", "validation"}}));
  if (!args.error.empty()) return Usage(args.error);
  const std::string validation = args.Get("validation");
  const std::string ns = args.Get("namespace", "perfgate-system");
  const std::string output = args.Get("output", "perfgate-report.html");
  if (args.positional.empty() == validation.empty()) {
    return Usage("give report files or folders, or --validation NAME (not both)");
  }
  Result<std::vector<fleet::NodeReport>> reports = Status::Ok();
  if (validation.empty()) {
    reports = fleet::LoadReports(args.positional);
  } else {
    auto client = Connect(args);
    if (!client.ok()) return Fail("report", client.status().message());
    reports = FromCluster(**client, validation, ns);
  }
  if (!reports.ok()) return Fail("report", reports.status().message());
  htmlreport::Options options;
  options.title =
      args.Get("title", validation.empty() ? "perfgate report" : "perfgate: " + validation);
  if (validation.empty()) {
    for (const auto& p : args.positional) {
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

int Summary(const std::vector<std::string>& argv) {
  const Args args =
      Parse(argv, With({{"-o", "output"}, {"--output", "output"}, {"--stale", "stale"}}));
  if (!args.error.empty()) return Usage(args.error);
  if (!args.positional.empty()) return Usage("summary takes no arguments");
  const std::string output = args.Get("output");
  if (!output.empty() && output != "wide" && output != "json" && output != "yaml") {
    return Usage("-o must be wide, json or yaml");
  }
  std::string stale = args.Get("stale", "720h");
  if (!stale.empty() && stale.back() == 'h') stale.pop_back();
  int stale_hours = 0;
  try {
    std::size_t used = 0;
    stale_hours = std::stoi(stale, &used);
    if (used != stale.size() || stale_hours <= 0) throw std::invalid_argument(stale);
  } catch (const std::exception&) {
    return Usage("--stale must be a number of hours, e.g. 720h");
  }
  auto client = Connect(args);
  if (!client.ok()) return Fail("summary", client.status().message());
  auto nodes = (*client)->ListAll(kube::NodesResource(), "", {});
  if (!nodes.ok()) return Fail("summary", nodes.status().WithContext("nodes").message());
  const std::string ns = args.Get("namespace", "perfgate-system");
  auto results = (*client)->ListAll(kResults, ns, {});
  if (!results.ok()) {
    return Fail("summary", results.status().WithContext("perfresults in " + ns).message());
  }
  auto reports = fleet::ParseReports(results->dump(), "perfresults in " + ns);
  if (!reports.ok()) return Fail("summary", reports.status().message());
  std::vector<nlohmann::json> node_list;
  if ((*nodes)["items"].is_array()) {
    for (const auto& n : (*nodes)["items"]) node_list.push_back(n);
  }
  const auto s = summary::Summarize(node_list, *reports, std::chrono::system_clock::now(),
                                    std::chrono::hours(stale_hours));
  if (s.nodes.empty() && output.empty()) {
    std::cout << "No GPU nodes (nodes with allocatable nvidia.com/gpu).\n";
    return 0;
  }
  std::cout << summary::Format(s, output);
  return 0;
}

const kube::GroupVersionResource kProfiles{"perfgate.io", "v1alpha1", "perfprofiles"};

int Plan(const std::vector<std::string>& argv) {
  const Args args = Parse(argv, With({{"-o", "output"},
                                      {"--output", "output"},
                                      {"-f", "filename"},
                                      {"--filename", "filename"}}));
  if (!args.error.empty()) return Usage(args.error);
  const std::string output = args.Get("output");
  if (!output.empty() && output != "wide" && output != "json" && output != "yaml") {
    return Usage("-o must be wide, json or yaml");
  }
  const std::string file = args.Get("filename");
  if (file.empty() == (args.positional.size() != 1) || args.positional.size() > 1) {
    return Usage("plan takes -f SPEC.yaml or the name of a validation in the cluster");
  }
  auto client = Connect(args);
  if (!client.ok()) return Fail("plan", client.status().message());
  Result<spec::Loaded<v1alpha1::PerfValidation>> loaded = Status::Ok();
  if (!file.empty()) {
    loaded = spec::LoadValidation(file);
  } else {
    auto obj = (*client)->Get(kValidations, "", args.positional[0]);
    if (!obj.ok()) {
      return Fail("plan",
                  obj.status().WithContext("perfvalidation " + args.positional[0]).message());
    }
    loaded = op::ParseValidationObject(*obj);
  }
  if (!loaded.ok()) return Fail("plan", loaded.status().message());
  auto nodes = (*client)->ListAll(kube::NodesResource(), "", {});
  if (!nodes.ok()) return Fail("plan", nodes.status().WithContext("nodes").message());
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& n : nodes->value("items", nlohmann::json::array())) {
    by_name[n["metadata"].value("name", "")] = n;
  }
  op::ClusterProfiles profiles;
  auto listed = (*client)->ListAll(kProfiles, "", {});
  if (!listed.ok()) return Fail("plan", listed.status().WithContext("perfprofiles").message());
  for (const auto& p : listed->value("items", nlohmann::json::array())) {
    profiles.by_name[p["metadata"].value("name", "")] = p;
  }
  profiles.listed = true;
  auto view = planview::Build(*loaded, by_name, profiles, false);
  if (!view.ok()) return Fail("plan", view.status().message());
  std::cout << planview::Format(*view, output);
  return 0;
}

int Rerun(const std::vector<std::string>& argv) {
  const Args args = Parse(argv, kClusterFlags);
  if (!args.error.empty()) return Usage(args.error);
  if (args.positional.size() != 1) return Usage("rerun takes one validation name");
  const std::string name = args.positional[0];
  auto client = Connect(args);
  if (!client.ok()) return Fail("rerun", client.status().message());
  // A token that differs from any earlier one: the time to the millisecond.
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  const std::string token = std::to_string(ms);
  nlohmann::json patch = {{"metadata", {{"annotations", {{"perfgate.io/rerun", token}}}}}};
  auto done = (*client)->Patch(kValidations, "", name, kube::PatchType::kMerge, patch);
  if (!done.ok())
    return Fail("rerun", done.status().WithContext("perfvalidation " + name).message());
  std::cout << "perfvalidation.perfgate.io/" << name << " rerun requested (" << token << ")\n";
  return 0;
}

// The diagnosis bundle of one node (the ConfigMap its worker wrote) into a folder.
int Bundle(const std::vector<std::string>& argv) {
  const Args args = Parse(argv, With({{"-o", "output"}, {"--output", "output"}, {"--run", "run"}}));
  if (!args.error.empty()) return Usage(args.error);
  if (args.positional.size() != 2) return Usage("bundle takes a validation and a node name");
  const std::string& validation = args.positional[0];
  const std::string& node = args.positional[1];
  const std::string ns = args.Get("namespace", "perfgate-system");
  const std::string dir = args.Get("output", "perfgate-bundle-" + validation + "-" + node);
  auto client = Connect(args);
  if (!client.ok()) return Fail("bundle", client.status().message());
  std::string run = args.Get("run");
  if (run.empty()) {
    auto obj = (*client)->Get(kValidations, "", validation);
    if (!obj.ok()) {
      return Fail("bundle", obj.status().WithContext("perfvalidation " + validation).message());
    }
    if (const auto& st = (*obj)["status"]; st.is_object() && st.contains("run")) {
      run = st["run"].get<std::string>();
    }
    if (run.empty()) return Fail("bundle", "perfvalidation " + validation + " has no run yet");
  }
  kube::ListOptions options;
  options.labelSelector =
      "perfgate.io/diagnosis=true,perfgate.io/validation=" + LabelValue(validation) +
      ",perfgate.io/node=" + LabelValue(node) + ",perfgate.io/run=" + run;
  auto list = (*client)->ListAll({"", "v1", "configmaps"}, ns, options);
  if (!list.ok()) {
    return Fail("bundle", list.status().WithContext("configmaps in namespace " + ns).message());
  }
  const auto& items = (*list)["items"];
  if (!items.is_array() || items.empty()) {
    return Fail("bundle", "no diagnosis bundle for node " + node + " in run " + run + " of " +
                              validation + " (namespace " + ns +
                              "): a worker gathers one only when a test fails there, unless "
                              "spec.diagnostics.capture is Never");
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

// "3%" or "0.03" -> 0.03; NaN when neither.
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

// Appends the figures of one source: a report file or folder, an export (.csv, .jsonl), or
// with a store a selector; `extra` added to each figure's config ("east=reports/east" adds
// cluster=east). Returns -1 when done, else the exit code (2 a bad selector, 3 unreadable).
int LoadSource(const std::string& command, const std::string& source, store::Store* db,
               const std::vector<std::string>& statistics, compare::Config extra,
               std::vector<compare::Figure>* figures) {
  Result<std::vector<compare::Figure>> got = Status::Ok();
  if (db != nullptr) {
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    auto selector = compare::ParseSelector(source, now_ms);
    if (!selector.ok()) return Usage(selector.status().message());
    got = compare::FromStore(*db, *selector, statistics, extra);
  } else {
    std::string path = source;
    // "east=reports/east": the files' cluster.
    if (const auto eq = path.find('=');
        eq != std::string::npos && eq > 0 && path.substr(0, eq).find('/') == std::string::npos) {
      extra["cluster"] = path.substr(0, eq);
      path = path.substr(eq + 1);
    }
    if (compare::ExportFormatOf(path)) {
      got = compare::FromExport(path, statistics, extra);
    } else {
      auto reports = fleet::LoadReports({path});
      if (!reports.ok()) return Fail(command, reports.status().message()) + 2;
      got = compare::FromReports(*reports, statistics, extra);
    }
  }
  if (!got.ok()) return Fail(command, got.status().message()) + 2;
  figures->insert(figures->end(), got->begin(), got->end());
  return -1;
}

// Every positional source of `args` (with --store, selectors), side "A" and "B" when `sides`,
// then only the --test tests. -1 when done, else the exit code.
int LoadSources(const std::string& command, const Args& args, bool sides,
                const std::vector<std::string>& statistics, std::vector<compare::Figure>* figures) {
  std::unique_ptr<store::Store> db;
  if (const std::string url = args.Get("store"); !url.empty()) {
    auto opened = store::Open(url);
    if (!opened.ok()) return Fail(command, opened.status().message()) + 2;
    db = std::move(opened).value();
  }
  for (std::size_t i = 0; i < args.positional.size(); ++i) {
    compare::Config extra;
    if (sides) extra["side"] = i == 0 ? "A" : "B";
    if (int code = LoadSource(command, args.positional[i], db.get(), statistics, extra, figures);
        code >= 0) {
      return code;
    }
  }
  if (const std::string only = args.Get("test"); !only.empty()) {
    const auto tests = Split(only, ',');
    std::erase_if(*figures, [&](const compare::Figure& f) {
      return std::find(tests.begin(), tests.end(), f.test) == tests.end();
    });
  }
  return -1;
}

// --statistic LIST, checked; an empty vector (after a usage message) when a name is unknown.
std::vector<std::string> Statistics(const std::string& list) {
  std::vector<std::string> out;
  for (const auto& s : Split(list, ',')) {
    if (!compare::KnownStatistic(s)) {
      Usage("--statistic " + s + " is not one of mean, median, p05, p95, min, max");
      return {};
    }
    out.push_back(s);
  }
  return out;
}

int Export(const std::vector<std::string>& argv) {
  const Args args = Parse(argv, {{"-o", "output"},
                                 {"--output", "output"},
                                 {"--out", "out"},
                                 {"--store", "store"},
                                 {"--statistic", "statistic"},
                                 {"--test", "test"}});
  if (!args.error.empty()) return Usage(args.error);
  const std::string output = args.Get("output", "csv");
  if (output != "csv" && output != "jsonl") return Usage("-o must be csv or jsonl");
  if (args.positional.empty()) return Usage("export needs a source (files, folders, selectors)");
  std::string all;
  for (const char* s : store::kBaselineStatistics) all += (all.empty() ? "" : ",") + std::string(s);
  const std::vector<std::string> statistics = Statistics(args.Get("statistic", all));
  if (statistics.empty()) return 2;
  std::vector<compare::Figure> figures;
  if (int code = LoadSources("export", args, false, statistics, &figures); code >= 0) return code;
  const std::string text = compare::FormatExport(
      figures, output == "csv" ? compare::ExportFormat::kCsv : compare::ExportFormat::kJsonLines);
  if (const std::string out = args.Get("out"); !out.empty() && out != "-") {
    if (Status st = report::WriteFileAtomic(out, text); !st.ok()) {
      return Fail("export", st.message()) + 2;
    }
  } else {
    std::cout << text;
  }
  return 0;
}

int Compare(std::vector<std::string> argv) {
  compare::Options options;
  for (auto it = argv.begin(); it != argv.end();) {
    if (*it == "--paired" || *it == "--unpaired") {
      if (options.pairing != compare::Pairing::kAuto) {
        return Usage("give one of --paired and --unpaired");
      }
      options.pairing = *it == "--paired" ? compare::Pairing::kPaired : compare::Pairing::kUnpaired;
      it = argv.erase(it);
    } else {
      ++it;
    }
  }
  const Args args = Parse(argv, {{"-o", "output"},
                                 {"--output", "output"},
                                 {"--store", "store"},
                                 {"--by", "by"},
                                 {"--reference", "reference"},
                                 {"--margin", "margin"},
                                 {"--alpha", "alpha"},
                                 {"--statistic", "statistic"},
                                 {"--html", "html"},
                                 {"--test", "test"}});
  if (!args.error.empty()) return Usage(args.error);
  const std::string output = args.Get("output", "table");
  if (output != "table" && output != "json" && output != "markdown") {
    return Usage("-o must be table, json or markdown");
  }
  options.margin = ParseFraction(args.Get("margin", "3%"));
  if (!(options.margin > 0 && options.margin < 1)) {
    return Usage("--margin must be a fraction in (0, 1) such as 3% or 0.03");
  }
  options.alpha = ParseFraction(args.Get("alpha", "0.05"));
  if (!(options.alpha > 0 && options.alpha < 0.5)) {
    return Usage("--alpha must be in (0, 0.5), e.g. 0.05");
  }
  options.confidence = 1 - options.alpha;
  const std::vector<std::string> statistics = Statistics(args.Get("statistic", "median"));
  if (statistics.empty()) return 2;
  const std::string by = args.Get("by");
  if (by.empty() && args.positional.size() != 2) {
    return Usage("compare takes two sources, A and B (or --by KEY and one source or more)");
  }
  if (!by.empty() && args.positional.empty()) return Usage("compare --by needs a source");
  if (by.empty() && args.options.count("reference")) return Usage("--reference needs --by");

  std::vector<compare::Figure> figures;
  if (int code = LoadSources("compare", args, by.empty(), statistics, &figures); code >= 0) {
    return code;
  }
  std::vector<std::string> groups = {"A", "B"};
  if (!by.empty()) {
    groups = compare::GroupsBy(figures, by);
    if (groups.size() < 2) {
      return Fail("compare", "--by " + by + " forms " + std::to_string(groups.size()) +
                                 " group(s) in these results; a comparison needs two or more") +
             2;
    }
    if (const std::string ref = args.Get("reference"); !ref.empty()) {
      auto it = std::find(groups.begin(), groups.end(), ref);
      if (it == groups.end()) return Usage("--reference " + ref + " is not a value of " + by);
      std::rotate(groups.begin(), it, it + 1);
    }
  }
  auto result = compare::Compare(figures, groups, by, options);
  if (!result.ok()) return Fail("compare", result.status().message()) + 2;
  if (const std::string html = args.Get("html"); !html.empty()) {
    std::string source;
    for (const auto& p : args.positional) source += (source.empty() ? "" : " vs ") + p;
    if (!args.Get("store").empty()) source += " in " + args.Get("store");
    if (Status st =
            report::WriteFileAtomic(html, compare::FormatHtml(*result, source, NowRfc3339()));
        !st.ok()) {
      return Fail("compare", st.message()) + 2;
    }
  }
  if (output == "json") {
    std::cout << compare::FormatJson(*result);
  } else if (output == "markdown") {
    std::cout << compare::FormatMarkdown(*result);
  } else {
    std::cout << compare::FormatTable(*result);
  }
  return result->Count(compare::Decision::kRegressed) > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "report") return Report(args);
  if (command == "summary") return Summary(args);
  if (command == "plan") return Plan(args);
  if (command == "rerun") return Rerun(args);
  if (command == "bundle") return Bundle(args);
  if (command == "compare") return Compare(args);
  if (command == "export") return Export(args);
  return Usage("unknown command " + command);
}
