// The exit codes of every perfgate command: one table, written once.
#pragma once

namespace perfgate::exit_code {

// Passed; done; nothing regressed.
inline constexpr int kOk = 0;
// A threshold failed (run); a metric regressed (compare).
inline constexpr int kFailed = 1;
// Invalid input: an unknown command or option, a bad value, a missing or malformed file or spec.
inline constexpr int kInvalid = 2;
// Could not decide or could not read: INCONCLUSIVE or ERROR, an unreachable cluster or store,
// results that could not be read or written.
inline constexpr int kError = 3;

// The table as help text prints it.
inline constexpr const char* kTable =
    "exit codes: 0 passed or done, 1 a threshold failed or a metric regressed, 2 invalid input "
    "(command, option, file, spec), 3 inconclusive, error, or results/cluster unreadable";

}  // namespace perfgate::exit_code
