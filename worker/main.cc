// perfgate-worker: the in-pod agent. It runs a plan on this node (`run`, the same code and
// options as `perfgate run`) and lists the tests it can run; a person types `perfgate`.
#include <iostream>
#include <string>

#include "common/command_line.h"
#include "common/exit_codes.h"
#include "worker/command_line.h"

int main(int argc, char** argv) {
  namespace pw = perfgate::worker;
  CLI::App app{"the in-pod agent of perfgate: runs a validation plan on this node",
               "perfgate-worker"};
  app.set_version_flag("--version", std::string("perfgate-worker ") + PERFGATE_VERSION);
  app.require_subcommand(1);
  app.footer(std::string("People use `perfgate` (run, plan, list, report, compare, ...).\n") +
             perfgate::exit_code::kTable);
  perfgate::cmdline::Action action;
  pw::AddRunCommand(app, &action, "perfgate-worker");
  pw::AddListCommand(app, &action);
  // Commands that moved to perfgate: a one-line notice naming the new spelling.
  for (const char* moved : {"plan", "baseline", "store"}) {
    CLI::App* sub = app.add_subcommand(moved, std::string("moved: perfgate ") + moved);
    sub->group("");
    sub->allow_extras();
    sub->prefix_command();
    sub->callback([&action, name = std::string(moved)] {
      action = [name] {
        std::cerr << "perfgate-worker " << name << " is now `perfgate " << name
                  << "` (the perfgate command); run that instead\n";
        return perfgate::exit_code::kInvalid;
      };
    });
  }
  return perfgate::cmdline::ParseAndRun(app, argc, argv, action);
}
