// `run` and `list` on a command line: the options, checks and help that perfgate and the in-pod
// agent (perfgate-worker) share, so the two spell every option the same way.
#pragma once

#include <string>

#include "common/command_line.h"

namespace perfgate::worker {

// Adds `run SPEC [options]` to `app`; its callback sets `*action`. `program` starts messages.
void AddRunCommand(CLI::App& app, cmdline::Action* action, const std::string& program);

// Adds `list [-o table|json]` to `app`.
void AddListCommand(CLI::App& app, cmdline::Action* action);

}  // namespace perfgate::worker
