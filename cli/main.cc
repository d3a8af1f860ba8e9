// perfgate: the user's command for looking at results.
//   perfgate report PATH... [-o FILE] [--title TEXT]
//   perfgate report --validation NAME [--namespace NS] [--kubeconfig FILE] [-o FILE]
// Exit codes: 0 done, 1 the reports could not be read or written, 2 invalid arguments.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/fleet.h"
#include "cli/html_report.h"
#include "cli/summary.h"
#include "common/labels.h"
#include "common/report.h"
#include "common/time.h"
#include "kube/client.h"
#include "kube/config.h"

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
  perfgate rerun NAME
      Starts a new run of a validation (sets its perfgate.io/rerun annotation).
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
  if (command == "rerun") return Rerun(args);
  return Usage("unknown command " + command);
}
