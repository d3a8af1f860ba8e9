#include "cli/app.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <vector>

#include "cli/commands.h"
#include "common/exit_codes.h"
#include "common/time.h"
#include "worker/command_line.h"
#include "worker/commands.h"
#include "worker/history.h"

namespace perfgate::cli {
namespace {

using cmdline::Action;
using cmdline::AddChoice;

constexpr const char* kDescription =
    "perfgate: GPU node acceptance tests and their results, locally and in a cluster";

void AddClusterFlags(CLI::App* cmd, ClusterFlags* flags) {
  cmd->add_option("--kubeconfig", flags->kubeconfig, "the kubeconfig file (as kubectl's)");
  cmd->add_option("--context", flags->context, "the kubeconfig context (as kubectl's)");
  cmd->add_option("-n,--namespace", flags->name_space,
                  "where perfgate's results live (default perfgate-system)");
}

// An option whose old spelling was -o FILE (report) or -o DIR (bundle): -o now names a format
// everywhere, --out a file; a value that is no format is taken as the old spelling, with a notice.
void TakeOldOutput(const std::string& command, std::string* format, std::string* out,
                   const std::vector<std::string>& formats) {
  if (format->empty()) return;
  for (const auto& f : formats) {
    if (*format == f) return;
  }
  std::cerr << "perfgate " << command << ": -o " << *format << " is now --out " << *format << "\n";
  *out = *format;
  format->clear();
}

// An option that takes a fraction in (low, high), written 3% or 0.03, into `*value`.
void AddFraction(CLI::App* cmd, const std::string& name, double* value, double low, double high,
                 const std::string& description) {
  cmd->add_option_function<std::string>(
      name,
      [=](const std::string& text) {
        const double v = ParseFraction(text);
        if (!(v > low && v < high)) {
          std::ostringstream range;
          range << "(" << low << ", " << high << ")";
          throw CLI::ValidationError(name + " must be a fraction in " + range.str() +
                                     " such as 3% or 0.03, got " + text);
        }
        *value = v;
      },
      description);
}

void AddPlan(CLI::App& app, Action* action, bool cluster_by_default) {
  struct Args {
    worker::PlanArgs here;
    ClusterPlanArgs cluster;
    std::string target;
    bool in_cluster = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("plan", "What a spec would run and how long it takes; measures nothing");
  cmd->footer(
      "A spec file is priced for this machine. With a cluster (--cluster, --kubeconfig, "
      "--context, a validation's name, or run as kubectl perfgate) it is resolved as the "
      "operator resolves it against the cluster's nodes and PerfProfiles.");
  cmd->add_option("target", args->target,
                  "a spec file, or the name of a validation in the cluster");
  cmd->add_option("-f,--filename", args->cluster.file, "the spec file (as kubectl's -f)");
  cmd->add_flag("--cluster", args->in_cluster, "resolve against the cluster");
  AddChoice(cmd, "-o,--output", &args->cluster.output, {"table", "wide", "json", "yaml"},
            "the format (cluster plans; a local plan prints its table)");
  cmd->add_option("--gpus", args->here.gpus,
                  "price a node of N GPUs (default: spec.gpusPerNode, else the GPUs here, else 8)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--profiles", args->here.profile_dirs, "where <profile>.yaml files are")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--enable-fixtures", args->here.fixtures, "allow the test-only fixture tests");
  AddClusterFlags(cmd, &args->cluster.cluster);
  cmd->callback([action, args, cluster_by_default] {
    *action = [args, cluster_by_default]() -> int {
      Args& a = *args;
      if (!a.target.empty() && !a.cluster.file.empty()) {
        std::cerr << "perfgate plan: give a spec file or -f FILE, not both\n";
        return exit_code::kInvalid;
      }
      std::string file = a.cluster.file.empty() ? a.target : a.cluster.file;
      if (file.empty()) {
        std::cerr << "perfgate plan: give a spec file or a validation's name\n";
        return exit_code::kInvalid;
      }
      std::error_code ec;
      const bool is_file = std::filesystem::exists(file, ec);
      const bool cluster = a.in_cluster || cluster_by_default ||
                           !a.cluster.cluster.kubeconfig.empty() ||
                           !a.cluster.cluster.context.empty() || !is_file;
      if (!cluster) {
        if (!a.cluster.output.empty() && a.cluster.output != "table") {
          std::cerr << "perfgate plan: -o " << a.cluster.output
                    << " is for a plan resolved against a cluster (--cluster); a spec priced "
                       "here prints its table\n";
          return exit_code::kInvalid;
        }
        a.here.spec = file;
        return worker::PlanHere(a.here);
      }
      if (is_file) {
        a.cluster.file = file;
      } else if (a.cluster.file.empty() && file.find('/') == std::string::npos &&
                 file.find('.') == std::string::npos) {
        a.cluster.validation = file;  // a validation's name
      } else {
        std::cerr << "perfgate plan: " << file << ": no such file\n";
        return exit_code::kInvalid;
      }
      if (a.cluster.output == "table") a.cluster.output.clear();
      return ClusterPlan(a.cluster);
    };
  });
}

void AddReport(CLI::App& app, Action* action) {
  struct Args {
    ReportArgs report;
    std::string format;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "report", "An HTML report (one file, opens offline) of results or a validation's run");
  cmd->add_option("paths", args->report.paths, "report JSON files, PerfResults, folders")
      ->check(CLI::ExistingPath);
  cmd->add_option("--validation", args->report.validation, "a validation in the cluster");
  cmd->add_option("--out", args->report.out,
                  "where to write it (default perfgate-report.html; - for stdout)");
  cmd->add_option("-o,--output", args->format, "the format: html");
  cmd->add_option("--title", args->report.title, "the report's title");
  AddClusterFlags(cmd, &args->report.cluster);
  cmd->callback([action, args] {
    *action = [args] {
      TakeOldOutput("report", &args->format, &args->report.out, {"html"});
      return Report(args->report);
    };
  });
}

void AddCompareAndExport(CLI::App& app, Action* action) {
  auto sources = [](CLI::App* cmd, SourceArgs* from) {
    cmd->add_option("sources", from->sources,
                    "report files or folders, exports (.csv, .jsonl; cluster=PATH labels a "
                    "cluster), or with --store selectors such as validation=NAME,since=7d");
    cmd->add_option("--store", from->store, "sqlite:///path.db or postgresql://...");
    cmd->add_option("--statistic", from->statistic,
                    "statistics to compare, comma-separated: mean, median, p05, p95, min, max");
    cmd->add_option("--test", from->test,
                    "only these tests (names as in the spec, comma-separated)");
  };
  auto cmp = std::make_shared<CompareArgs>();
  CLI::App* compare = app.add_subcommand(
      "compare", "Compares two sets of results (A B), or the groups a key forms (--by KEY)");
  compare->footer(
      "Per GPU model, test, metric and statistic: medians, the ratio B/A with its interval, a "
      "rank test (Holm-corrected) and an equivalence test against --margin. Exit 1 when a "
      "metric regressed.");
  sources(compare, &cmp->from);
  AddChoice(compare, "-o,--output", &cmp->output, {"table", "json", "markdown"}, "the format");
  compare->add_option("--by", cmp->by,
                      "compare the groups this key forms (cluster, driverVersion, ...)");
  compare->add_option("--reference", cmp->reference, "the reference group's value (with --by)");
  AddFraction(compare, "--margin", &cmp->margin, 0, 1,
              "equivalence margin, 3% or 0.03 (default 3%)");
  AddFraction(compare, "--alpha", &cmp->alpha, 0, 0.5,
              "family-wise error of regressed/improved rows (default 0.05)");
  auto* paired = compare->add_flag_callback(
      "--paired", [cmp] { cmp->pairing = "paired"; }, "pair the same nodes in A and B");
  auto* unpaired = compare->add_flag_callback(
      "--unpaired", [cmp] { cmp->pairing = "unpaired"; }, "never pair");
  paired->excludes(unpaired);
  compare->add_option("--html", cmp->html, "also an HTML page of the comparison");
  compare->callback([action, cmp] { *action = [cmp] { return Compare(*cmp); }; });

  auto exp = std::make_shared<ExportArgs>();
  CLI::App* export_cmd = app.add_subcommand(
      "export", "Results as rows (node, test, metric, statistic, identity): CSV or JSON Lines");
  sources(export_cmd, &exp->from);
  export_cmd->get_option("sources")->required();
  AddChoice(export_cmd, "-o,--output", &exp->output, {"csv", "jsonl"}, "the format");
  export_cmd->add_option("--out", exp->out, "write to FILE (default stdout)");
  export_cmd->callback([action, exp] { *action = [exp] { return Export(*exp); }; });
}

void AddBaselineAndStore(CLI::App& app, Action* action) {
  CLI::App* baseline = app.add_subcommand("baseline", "Named baselines in the results store");
  baseline->require_subcommand(1);
  struct Verb {
    const char* name;
    const char* description;
  };
  for (const Verb& v :
       {Verb{"create", "A baseline NAME from the stored results --from selects (PASS results)"},
        Verb{"show", "The baseline NAME's figures"}, Verb{"list", "Every baseline's name"},
        Verb{"delete", "Deletes the baseline NAME"}}) {
    auto args = std::make_shared<worker::BaselineArgs>();
    args->verb = v.name;
    CLI::App* cmd = baseline->add_subcommand(v.name, v.description);
    if (args->verb != "list")
      cmd->add_option("name", args->name, "the baseline's name")->required();
    cmd->add_option("--store", args->store_url,
                    "the results store (default: the local SQLite one)");
    if (args->verb == "create") {
      cmd->add_option("--from", args->from,
                      "the selection: validation=NAME, run=ID, cluster=NAME, since=TIME, "
                      "until=TIME (RFC 3339), comma-separated")
          ->required();
      cmd->add_option("--nodes", args->nodes, "only these nodes, comma-separated");
      cmd->add_flag("--any-verdict", args->any_verdict, "also results that did not pass");
    }
    if (args->verb == "create" || args->verb == "show") {
      AddChoice(cmd, "-o,--output", &args->output, {"yaml", "json"},
                "the baseline as a PerfBaseline object, for kubectl apply -f -");
    }
    cmd->callback([action, args] {
      *action = [args] { return worker::Baseline(*args, std::cout, std::cerr); };
    });
  }
  CLI::App* store = app.add_subcommand("store", "The results store's retention");
  store->require_subcommand(1);
  auto prune = std::make_shared<worker::PruneArgs>();
  CLI::App* cmd = store->add_subcommand("prune", "Deletes old node results");
  auto* age = cmd->add_option("--older-than-days", prune->older_than_days,
                              "delete results older than N days")
                  ->check(CLI::PositiveNumber);
  auto* keep = cmd->add_option("--keep-per-node", prune->keep_per_node,
                               "keep only each node's newest N results")
                   ->check(CLI::PositiveNumber);
  cmd->add_option("--store", prune->store_url, "the results store (default: the local SQLite one)");
  cmd->callback([action, prune, age, keep] {
    *action = [prune, age, keep] {
      if (age->count() == 0 && keep->count() == 0) {
        std::cerr << "perfgate store prune: give --older-than-days or --keep-per-node\n";
        return exit_code::kInvalid;
      }
      return worker::PruneStore(*prune, std::cout, std::cerr);
    };
  });
}

void AddClusterCommands(CLI::App& app, Action* action) {
  auto summary = std::make_shared<SummaryArgs>();
  CLI::App* cmd = app.add_subcommand(
      "summary", "Every GPU node in the cluster with its latest result, and what to look at");
  cmd->footer(
      "Counts by GPU model and verdict, the nodes that did not pass and why, figures that lag "
      "their peers, nodes never validated or validated longer ago than --stale.");
  AddChoice(cmd, "-o,--output", &summary->output, {"table", "wide", "json", "yaml"}, "the format");
  cmd->add_option_function<std::string>(
      "--stale",
      [summary](std::string text) {
        if (!text.empty() && text.back() == 'h') text.pop_back();
        std::size_t used = 0;
        int hours = 0;
        try {
          hours = std::stoi(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size() || hours <= 0) {
          throw CLI::ValidationError("--stale must be a number of hours, e.g. 720h");
        }
        summary->stale_hours = hours;
      },
      "results older than this are stale (hours, default 720h = 30 days)");
  AddClusterFlags(cmd, &summary->cluster);
  cmd->callback([action, summary] {
    *action = [summary] {
      if (summary->output == "table") summary->output.clear();
      return Summary(*summary);
    };
  });

  auto rerun = std::make_shared<RerunArgs>();
  cmd = app.add_subcommand("rerun", "Starts a new run of a validation");
  cmd->add_option("name", rerun->name, "the validation")->required();
  AddClusterFlags(cmd, &rerun->cluster);
  cmd->callback([action, rerun] { *action = [rerun] { return Rerun(*rerun); }; });

  struct BundleCmd {
    BundleArgs bundle;
    std::string format;
  };
  auto bundle = std::make_shared<BundleCmd>();
  cmd = app.add_subcommand("bundle",
                           "The diagnosis bundle a worker gathered on a node where a test failed");
  cmd->add_option("validation", bundle->bundle.validation, "the validation")->required();
  cmd->add_option("node", bundle->bundle.node, "the node")->required();
  cmd->add_option("--out", bundle->bundle.out,
                  "the folder (default perfgate-bundle-VALIDATION-NODE)");
  cmd->add_option("-o,--output", bundle->format, "same as --out (old spelling)")->group("");
  cmd->add_option("--run", bundle->bundle.run, "the run (default: the validation's current one)");
  AddClusterFlags(cmd, &bundle->bundle.cluster);
  cmd->callback([action, bundle] {
    *action = [bundle] {
      TakeOldOutput("bundle", &bundle->format, &bundle->bundle.out, {});
      return Bundle(bundle->bundle);
    };
  });
}

}  // namespace

std::unique_ptr<CLI::App> BuildApp(const std::string& program, Action* action) {
  auto app = std::make_unique<CLI::App>(kDescription, program);
  app->set_version_flag("--version", std::string("perfgate ") + PERFGATE_VERSION);
  app->require_subcommand(1);
  app->footer(std::string(exit_code::kTable) +
              "\nAs the kubectl plugin (kubectl-perfgate on the PATH): kubectl perfgate ...");
  worker::AddRunCommand(*app, action, "perfgate");
  AddPlan(*app, action, program == "kubectl-perfgate");
  worker::AddListCommand(*app, action);
  AddReport(*app, action);
  AddCompareAndExport(*app, action);
  AddBaselineAndStore(*app, action);
  AddClusterCommands(*app, action);
  app->add_subcommand("version", "Prints the version")->callback([action] {
    *action = [] {
      std::cout << "perfgate " << PERFGATE_VERSION << "\n";
      return exit_code::kOk;
    };
  });
  auto shell = std::make_shared<std::string>();
  CLI::App* completion =
      app->add_subcommand("completion", "Prints the bash or zsh completion script");
  completion->footer("bash: source <(perfgate completion bash); the package installs both.");
  AddChoice(completion, "shell", shell.get(), {"bash", "zsh"}, "bash or zsh")->required();
  const CLI::App* top = app.get();
  completion->callback([action, shell, top] {
    *action = [shell, top] {
      const std::vector<std::string> names = {"perfgate", "kubectl-perfgate"};
      std::cout << (*shell == "bash" ? cmdline::BashCompletion(*top, names)
                                     : cmdline::ZshCompletion(*top, names));
      return exit_code::kOk;
    };
  });
  app->add_subcommand("man", "Prints the manual page (roff)")->callback([action, top] {
    *action = [top] {
      // SOURCE_DATE_EPOCH (reproducible builds) dates the page when it is set.
      auto when = std::chrono::system_clock::now();
      const char* epoch = std::getenv("SOURCE_DATE_EPOCH");  // NOLINT(concurrency-mt-unsafe)
      if (epoch != nullptr && *epoch != '\0') {
        when = std::chrono::system_clock::time_point(std::chrono::seconds(std::atoll(epoch)));
      }
      std::cout << cmdline::ManPage(*top, FormatRfc3339(when).substr(0, 10));
      return exit_code::kOk;
    };
  });
  return app;
}

int Main(int argc, char** argv) {
  const std::string program =
      argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "perfgate";
  Action action;
  auto app = BuildApp(program == "kubectl-perfgate" ? program : "perfgate", &action);
  return cmdline::ParseAndRun(*app, argc, argv, action);
}

}  // namespace perfgate::cli
