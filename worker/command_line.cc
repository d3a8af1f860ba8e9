#include "worker/command_line.h"

#include <iostream>
#include <memory>

#include "worker/commands.h"

namespace perfgate::worker {

void AddRunCommand(CLI::App& app, cmdline::Action* action, const std::string& program) {
  auto args = std::make_shared<RunArgs>();
  args->program = program;
  CLI::App* run = app.add_subcommand(
      "run", "Runs a PerfValidation spec (YAML or JSON) here and prints the verdict");
  run->add_option("spec", args->spec, "the spec file")->required();
  run->add_option("--report-json", args->report_json,
                  "also write the report (perfgate.v1alpha1.Report as JSON) to PATH");
  run->add_option("--junit", args->junit, "also write JUnit XML (a testcase per test and device)");
  run->add_option("--only", args->only, "run only the test with this name or type (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run->add_option("--profiles", args->profile_dirs,
                  "where <profile>.yaml files are (repeatable; default: the built-in ones)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::ExistingDirectory);
  run->add_flag("--quiet", args->quiet, "no progress lines, only the table");
  run->add_flag("--enable-fixtures", args->fixtures,
                "allow test-only fixture tests (synthetic samples); never in production");
  run->add_option("--store", args->store_url,
                  "the results store, sqlite:///PATH or postgresql://... (default: SQLite in "
                  "~/.local/share/perfgate/results.db)");
  auto* no_store = run->add_flag_callback(
      "--no-store", [args] { args->record = false; },
      "do not record this run or compare it with earlier ones");
  no_store->excludes(run->get_option("--store"));
  run->add_option("--result", args->result,
                  "cluster mode (in a perfgate pod): write this node's PerfResult NAME (also "
                  "env PERFGATE_RESULT_NAME) and exit 0 once it is written");
  run->add_option("--diagnostics", args->diagnostics_dir,
                  "when a test fails, write its diagnosis bundle under DIR (also env "
                  "PERFGATE_DIAGNOSTICS_DIR)");
  run->callback([action, args] { *action = [args] { return Run(*args); }; });
}

void AddListCommand(CLI::App& app, cmdline::Action* action) {
  struct ListArgs {
    std::string output = "table";
    bool json = false;
    bool fixtures = false;
  };
  auto args = std::make_shared<ListArgs>();
  CLI::App* list = app.add_subcommand("list", "Every test with its parameters and metrics");
  cmdline::AddChoice(list, "-o,--output", &args->output, {"table", "json"}, "the format");
  // The old spelling, kept for a release.
  list->add_flag("--json", args->json, "same as -o json")->group("");
  list->add_flag("--enable-fixtures", args->fixtures, "include the test-only fixture tests");
  list->callback([action, args] {
    *action = [args] {
      if (args->json) std::cerr << "perfgate list: --json is now -o json\n";
      return ListTests(args->json || args->output == "json", args->fixtures);
    };
  });
}

}  // namespace perfgate::worker
