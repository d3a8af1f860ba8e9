// perfgate: the user's command for looking at results.
//   perfgate report PATH... [-o FILE] [--title TEXT]
//   perfgate report --validation NAME [--namespace NS] [--kubeconfig FILE] [-o FILE]
// Exit codes: 0 done, 1 the reports could not be read or written, 2 invalid arguments.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cli/fleet.h"
#include "cli/html_report.h"
#include "common/labels.h"
#include "common/report.h"
#include "common/time.h"
#include "kube/client.h"
#include "kube/config.h"

namespace {

using namespace perfgate;

constexpr const char* kUsage = R"(usage:
  perfgate report PATH... [-o FILE] [--title TEXT]
      An HTML report (one file, opens offline) from report JSON files (perfgate-worker run
      --report-json), PerfResult objects or lists of them (kubectl get perfresults -o json),
      or folders of such files.
  perfgate report --validation NAME [--namespace NS] [--kubeconfig FILE] [-o FILE]
      The same from a validation's PerfResults in a cluster (its current run).
Options:
  -o, --output FILE   where to write the report (default perfgate-report.html; - for stdout)
  --title TEXT        the report's title
)";

int Usage(const std::string& error) {
  std::cerr << "perfgate: " << error << "\n\n" << kUsage;
  return 2;
}

// The validation's PerfResults of its current run (status.run), as one list.
Result<std::vector<fleet::NodeReport>> FromCluster(const std::string& validation,
                                                   const std::string& ns,
                                                   const std::string& kubeconfig) {
  ASSIGN_OR_RETURN(kube::RestConfig config, kube::LoadDefaultConfig(kubeconfig));
  ASSIGN_OR_RETURN(auto client, kube::NewClient(config));
  const kube::GroupVersionResource validations{"perfgate.io", "v1alpha1", "perfvalidations"};
  const kube::GroupVersionResource results{"perfgate.io", "v1alpha1", "perfresults"};
  auto obj = client->Get(validations, "", validation);
  if (!obj.ok()) return obj.status().WithContext("perfvalidation " + validation);
  std::string run;
  if (const auto& st = (*obj)["status"]; st.is_object() && st.contains("run")) {
    run = st["run"].get<std::string>();
  }
  if (run.empty()) return NotFound("perfvalidation " + validation + " has not started a run yet");
  kube::ListOptions options;
  options.labelSelector =
      "perfgate.io/validation=" + LabelValue(validation) + ",perfgate.io/run=" + run;
  auto list = client->ListAll(results, ns, options);
  if (!list.ok()) return list.status().WithContext("perfresults in namespace " + ns);
  auto reports = fleet::ParseReports(list->dump(), "perfresults of " + validation);
  if (reports.ok() && reports->empty()) {
    return NotFound("perfvalidation " + validation + " run " + run + " has no PerfResults in " +
                    "namespace " + ns + " yet");
  }
  return reports;
}

int Report(const std::vector<std::string>& args) {
  std::vector<std::string> paths;
  std::string output = "perfgate-report.html", title, validation, ns = "perfgate-system",
              kubeconfig;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* into) {
      if (i + 1 >= args.size()) return false;
      *into = args[++i];
      return true;
    };
    if (a == "-o" || a == "--output") {
      if (!value(&output)) return Usage(a + " needs a file");
    } else if (a == "--title") {
      if (!value(&title)) return Usage("--title needs a text");
    } else if (a == "--validation") {
      if (!value(&validation)) return Usage("--validation needs a name");
    } else if (a == "--namespace" || a == "-n") {
      if (!value(&ns)) return Usage(a + " needs a namespace");
    } else if (a == "--kubeconfig") {
      if (!value(&kubeconfig)) return Usage("--kubeconfig needs a file");
    } else if (a.size() > 1 && a[0] == '-') {
      return Usage("unknown option " + a);
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty() == validation.empty()) {
    return Usage("give report files or folders, or --validation NAME (not both)");
  }
  auto reports =
      validation.empty() ? fleet::LoadReports(paths) : FromCluster(validation, ns, kubeconfig);
  if (!reports.ok()) {
    std::cerr << "perfgate report: " << reports.status().message() << "\n";
    return 1;
  }
  htmlreport::Options options;
  options.title = !title.empty()        ? title
                  : !validation.empty() ? "perfgate: " + validation
                                        : "perfgate report";
  if (validation.empty()) {
    for (const auto& p : paths) options.source += (options.source.empty() ? "" : ", ") + p;
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
    std::cerr << "perfgate report: " << st.message() << "\n";
    return 1;
  }
  std::cerr << "perfgate report: " << reports->size() << " node reports -> " << output << "\n";
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
  return Usage("unknown command " + command);
}
