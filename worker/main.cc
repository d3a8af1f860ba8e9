// perfgate-worker: the in-pod agent. It runs a plan on this node (`run`, the same code and
// options as `perfgate run`) and lists the tests it can run; a person types `perfgate`.
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "common/command_line.h"
#include "common/exit_codes.h"
#include "kernels/registry.h"
#include "worker/command_line.h"

namespace {

// SIGTERM (the kubelet stopping the pod: a preemption, an eviction, a delete) ends the worker at
// once, writing nothing more: a PerfResult goes out in one request once the whole plan is done,
// and the report files are written whole or not at all, so nothing half-done is left; the
// samples taken so far go with the process. A handler, not the default action: in its
// container the worker is PID 1, and PID 1 ignores a signal it has no handler for, so without
// one it would hold the GPUs until the grace period's SIGKILL.
extern "C" void StopAtOnce(int sig) { ::_exit(128 + sig); }

}  // namespace

int main(int argc, char** argv) {
  struct sigaction stop = {};
  stop.sa_handler = StopAtOnce;
  sigemptyset(&stop.sa_mask);
  ::sigaction(SIGTERM, &stop, nullptr);
  // nccl-rails' child, one per rail (kernels/nccl/rails.h): not a command people type.
  if (argc > 1 && std::string(argv[1]) == "rail-child") {
    return perfgate::kernels::nccl::RailChildMain(std::vector<std::string>(argv + 2, argv + argc),
                                                  perfgate::kernels::RailBackends(), std::cin,
                                                  std::cout);
  }
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
