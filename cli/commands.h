// The perfgate commands that read results and clusters (report, summary, plan against a
// cluster, rerun, bundle, compare, export), with their options parsed and checked by the
// command line (cli/app.h). Each writes its own messages, prefixed "perfgate CMD: ", and
// returns the exit code (common/exit_codes.h).
#pragma once

#include <string>
#include <vector>

namespace perfgate::cli {

// kubectl's flags: --kubeconfig, --context, -n/--namespace (where results live).
struct ClusterFlags {
  std::string kubeconfig;
  std::string context;
  std::string name_space = "perfgate-system";
};

struct ReportArgs {
  std::vector<std::string> paths;            // report files, PerfResults, folders
  std::string validation;                    // or: a validation's current run in the cluster
  std::string out = "perfgate-report.html";  // "-": stdout
  std::string title;
  ClusterFlags cluster;
};
int Report(const ReportArgs& args);

struct SummaryArgs {
  std::string output;  // "", wide, json or yaml
  int stale_hours = 720;
  ClusterFlags cluster;
};
int Summary(const SummaryArgs& args);

// plan resolved against a cluster: a spec file, or a validation by name.
struct ClusterPlanArgs {
  std::string file;
  std::string validation;
  std::string output;  // "", wide, json or yaml
  ClusterFlags cluster;
};
int ClusterPlan(const ClusterPlanArgs& args);

struct RerunArgs {
  std::string name;
  ClusterFlags cluster;
};
int Rerun(const RerunArgs& args);

struct BundleArgs {
  std::string validation;
  std::string node;
  std::string out;  // default perfgate-bundle-VALIDATION-NODE
  std::string run;  // default: the validation's current run
  ClusterFlags cluster;
};
int Bundle(const BundleArgs& args);

// Options compare and export share: where figures come from and which of them.
struct SourceArgs {
  std::vector<std::string> sources;
  std::string store;      // with a store, sources are selectors
  std::string statistic;  // comma-separated
  std::string test;       // comma-separated test names
};

struct CompareArgs {
  SourceArgs from;
  std::string output = "table";  // table, json or markdown
  std::string by;
  std::string reference;
  double margin = 0.03;
  double alpha = 0.05;
  std::string pairing;  // "", paired or unpaired
  std::string html;
};
int Compare(const CompareArgs& args);

struct ExportArgs {
  SourceArgs from;
  std::string output = "csv";  // csv or jsonl
  std::string out;             // "" or "-": stdout
};
int Export(const ExportArgs& args);

// "3%" or "0.03" -> 0.03; NaN when neither.
double ParseFraction(std::string text);

}  // namespace perfgate::cli
