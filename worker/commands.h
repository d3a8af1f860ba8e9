// What a person (perfgate run, plan, list, baseline, store) and the in-pod agent
// (perfgate-worker run) ask of this machine, with their options already parsed and checked.
// Each returns the process's exit code (common/exit_codes.h) and writes its own messages.
#pragma once

#include <string>
#include <vector>

namespace perfgate::worker {

struct RunArgs {
  std::string spec;
  std::string report_json;                // --report-json PATH
  std::string junit;                      // --junit PATH
  std::vector<std::string> only;          // --only NAME (a test's name or type)
  std::vector<std::string> profile_dirs;  // --profiles DIR; empty: the built-in ones
  bool quiet = false;
  bool fixtures = false;  // --enable-fixtures: test-only synthetic tests
  std::string store_url;  // --store URL; empty: the local SQLite store
  bool record = true;     // --no-store: false
  std::string result;     // --result NAME: cluster mode (the PerfResult to write)
  std::string diagnostics_dir;
  std::string program = "perfgate";  // the name messages start with
};

// Runs the spec here: the table on stdout, progress on stderr, the reports asked for, then
// (locally) the run recorded and compared with earlier ones; in cluster mode the node's
// PerfResult written. Blocking.
int Run(const RunArgs& args);

struct PlanArgs {
  std::string spec;
  std::vector<std::string> profile_dirs;
  bool fixtures = false;
  int gpus = 0;  // --gpus N; 0: spec.gpusPerNode, else the GPUs here, else 8
  std::string program = "perfgate";
};

// What the spec would run and cost on this machine; measures nothing.
int PlanHere(const PlanArgs& args);

// Every test with its parameters and metrics: a listing, or JSON.
int ListTests(bool as_json, bool fixtures);

// Where the built-in profiles are looked for: $PERFGATE_PROFILES (colon-separated), then
// beside the binary (../share/perfgate/profiles), then the source tree, then ./profiles.
std::vector<std::string> DefaultProfileDirs();

}  // namespace perfgate::worker
