// perfgate: the one command a person types. Every subcommand, its options and help live in one
// registry (app.cc); completion and the man page are generated from it.
#pragma once

#include <memory>
#include <string>

#include "common/command_line.h"

namespace perfgate::cli {

// The perfgate command line for `program` ("perfgate", or "kubectl-perfgate" as the kubectl
// plugin, where plan resolves against the cluster by default); subcommands set `*action`.
std::unique_ptr<CLI::App> BuildApp(const std::string& program, cmdline::Action* action);

// main(): builds the app for argv[0]'s name and runs it.
int Main(int argc, char** argv);

}  // namespace perfgate::cli
