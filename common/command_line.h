// The command line every perfgate program parses the same way (CLI11): one help style, one
// error format and exit code (common/exit_codes.h), and shell completion and a man page
// generated from the same tree of subcommands and options, so they never drift from it.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace perfgate::cmdline {

// What a subcommand's callback sets: the work to do once parsing succeeded.
using Action = std::function<int()>;

// An option that takes one of `choices`; completion offers them.
CLI::Option* AddChoice(CLI::App* app, const std::string& name, std::string* value,
                       const std::vector<std::string>& choices, const std::string& description);

// Parses argv into `app` (whose callbacks set `*action`) and runs the action. Help and
// --version print and return 0; a parse error prints "PROGRAM [SUB]: message" and a pointer
// to --help on stderr and returns exit_code::kInvalid; an unknown first word names itself, and
// no words at all print the help (exit_code::kInvalid) where a subcommand is required.
// Blocking.
int ParseAndRun(CLI::App& app, int argc, const char* const* argv, const Action& action);

// Completion scripts for `program` (and the other names in `aliases`) generated from `app`.
std::string BashCompletion(const CLI::App& app, const std::vector<std::string>& names);
std::string ZshCompletion(const CLI::App& app, const std::vector<std::string>& names);

// A man page (roff) for `app`: every subcommand with its options, the exit codes.
std::string ManPage(const CLI::App& app, const std::string& date);

}  // namespace perfgate::cmdline
