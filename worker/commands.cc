// perfgate run / plan / list on this machine, shared by the perfgate command and the in-pod
// agent (perfgate-worker run).
#include "worker/commands.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/exit_codes.h"
#include "common/report.h"
#include "common/spec.h"
#include "common/strings.h"
#include "core/plan.h"
#include "kernels/registry.h"
#include "worker/cluster.h"
#include "worker/diagnostics.h"
#include "worker/history.h"
#include "worker/runner.h"

namespace perfgate::worker {
namespace {

namespace fs = std::filesystem;
using perfgate::Status;
using perfgate::kernels::ParamType;

std::string ExeDir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "." : p.parent_path().string();
}

const char* TypeName(ParamType t) {
  switch (t) {
    case ParamType::kInt:
      return "int";
    case ParamType::kDouble:
      return "number";
    case ParamType::kString:
      return "string";
    case ParamType::kBool:
      return "bool";
    case ParamType::kStringList:
      return "list of string";
    case ParamType::kIntList:
      return "list of int";
  }
  return "?";
}

const char* ScopeName(perfgate::kernels::Scope s) {
  switch (s) {
    case perfgate::kernels::Scope::kHost:
      return "host";
    case perfgate::kernels::Scope::kGpu:
      return "each GPU";
    case perfgate::kernels::Scope::kAllGpus:
      return "all GPUs together";
  }
  return "?";
}

int ListAll(bool as_json, bool fixtures) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto* t : perfgate::kernels::AllTests(fixtures)) {
    const auto& info = t->Info();
    if (as_json) {
      nlohmann::json j = {
          {"type", info.type}, {"description", info.description}, {"scope", ScopeName(info.scope)}};
      for (const auto& p : info.params) {
        j["parameters"].push_back({{"name", p.name},
                                   {"type", TypeName(p.type)},
                                   {"default", p.default_value},
                                   {"unit", p.unit},
                                   {"description", p.description}});
      }
      for (const auto& m : info.metrics) {
        j["metrics"].push_back(
            {{"name", m.name}, {"unit", m.unit}, {"higherIsBetter", m.higher_is_better}});
      }
      out.push_back(j);
      continue;
    }
    std::cout << info.type << "  (" << ScopeName(info.scope) << ")\n  " << info.description << "\n";
    if (!info.params.empty()) std::cout << "  parameters:\n";
    for (const auto& p : info.params) {
      std::cout << "    " << p.name << " (" << TypeName(p.type)
                << (p.unit.empty() ? "" : ", " + p.unit) << ", default " << p.default_value
                << "): " << p.description << "\n";
    }
    std::cout << "  metrics:\n";
    for (const auto& m : info.metrics) {
      std::cout << "    " << m.name << " (" << m.unit << ", "
                << (m.higher_is_better ? "higher is better" : "lower is better") << ")"
                << (m.description.empty() ? "" : ": " + m.description) << "\n";
    }
    std::cout << "\n";
  }
  if (as_json) std::cout << out.dump(2) << "\n";
  return 0;
}

// The width of the terminal `fd` is, for progress rewritten in place; 0 when it is not a
// terminal (a log, a pipe, a pod) or a dumb one, for plain lines.
int TerminalColumns(int fd) {
  if (isatty(fd) == 0) return 0;
  const char* term = std::getenv("TERM");  // NOLINT(concurrency-mt-unsafe)
  if (term == nullptr || std::string(term) == "dumb") return 0;
  winsize size{};
  if (ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col >= 20) return size.ws_col;
  return 80;
}

// The spec at `spec_path` planned as a run here would plan it: profiles from `profile_dirs`
// (default: built-in), `profile: auto` picked by this machine's GPUs.
perfgate::Result<perfgate::worker::Plan> PlanSpec(
    const perfgate::Result<perfgate::spec::Loaded<perfgate::v1alpha1::PerfValidation>>& loaded,
    const std::string& spec_path, const std::vector<std::string>& profile_dirs, bool fixtures,
    const std::string& store_url = "") {
  if (!loaded.ok()) return loaded.status();
  perfgate::worker::PlanOptions plan_options;
  plan_options.baseline_value = perfgate::worker::LocalBaselineLookup(store_url);
  plan_options.profile_dirs = profile_dirs.empty() ? DefaultProfileDirs() : profile_dirs;
  plan_options.enable_fixtures = fixtures;
  plan_options.gpu_names = []() -> perfgate::Result<std::vector<std::string>> {
    ASSIGN_OR_RETURN(auto gpus, perfgate::kernels::ListCudaDevices());
    std::vector<std::string> names;
    for (const auto& g : gpus) names.push_back(g.name);
    return names;
  };
  ASSIGN_OR_RETURN(auto plan, perfgate::worker::BuildPlan(*loaded, plan_options));
  if (plan.validation.empty()) plan.validation = fs::path(spec_path).stem().string();
  return plan;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// What capture on failure keeps while the run goes on (docs/diagnostics.md).
struct Capture {
  bool enabled = false;
  std::string nccl_topology_file;
  std::unique_ptr<perfgate::worker::TimelineRecorder> timeline;
};

Capture StartCapture(const perfgate::v1alpha1::Diagnostics& diagnostics) {
  Capture c;
  c.enabled = diagnostics.capture() != "Never";
  if (!c.enabled) return c;
  // NCCL writes the topology it detected here when it initialises a communicator.
  const char* set = std::getenv("NCCL_TOPO_DUMP_FILE");  // NOLINT(concurrency-mt-unsafe)
  if (set != nullptr && *set != '\0') {
    c.nccl_topology_file = set;
  } else {
    std::error_code ec;
    c.nccl_topology_file = (fs::temp_directory_path(ec) /
                            ("perfgate-nccl-topology-" + std::to_string(getpid()) + ".xml"))
                               .string();
    setenv("NCCL_TOPO_DUMP_FILE", c.nccl_topology_file.c_str(), 1);  // NOLINT
  }
  c.timeline = std::make_unique<perfgate::worker::TimelineRecorder>(
      perfgate::worker::NvmlTelemetryReader(), 1.0);
  return c;
}

// Gathers the bundle of a failed run, puts its summary (with where the bundle goes) in
// `report`, and writes it to `dir` when one is configured. Returns the bundle.
perfgate::worker::Bundle GatherDiagnosis(const Capture& capture,
                                         const perfgate::v1alpha1::Diagnostics& diagnostics,
                                         const std::string& spec_path, bool fixtures,
                                         const std::string& dir, const std::string& config_map,
                                         perfgate::v1alpha1::Report* report) {
  namespace w = perfgate::worker;
  w::DiagnosisInputs in;
  in.report = report;
  in.spec_text = ReadText(spec_path);
  if (capture.timeline) {
    capture.timeline->End();
    in.timelines = capture.timeline->Timelines();
  }
  auto nvml = perfgate::kernels::nvml::SharedNvml();
  if (nvml.ok()) {
    in.nvml = w::DumpNvml(**nvml);
  } else {
    in.nvml = nvml.status();
  }
  bool nccl_ran = false;
  for (const auto& t : report->tests()) nccl_ran |= t.type().rfind("nccl", 0) == 0;
  std::error_code ec;
  if (fs::exists(capture.nccl_topology_file, ec)) {
    in.nccl_topology = ReadText(capture.nccl_topology_file);
  } else if (nccl_ran) {
    in.nccl_topology =
        perfgate::NotFound("NCCL ran but wrote no topology to " + capture.nccl_topology_file);
  } else {
    in.nccl_topology = perfgate::NotFound("no NCCL test ran");
  }
  // The test profiled: the first failing one, else the first whose GPU lags its siblings.
  std::string first_failing;
  for (const auto& t : report->tests()) {
    if (t.verdict() == perfgate::v1alpha1::FAIL && first_failing.empty()) first_failing = t.name();
  }
  if (first_failing.empty()) {
    auto lagging = w::LaggingDevices(*report);
    if (!lagging.empty()) first_failing = lagging.front().test;
  }
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
  const std::string nsys = w::FindOnPath("nsys", path != nullptr ? path : "");
  if (!diagnostics.profile()) {
    in.profile.note = "skipped: spec.diagnostics.profile is not set";
  } else if (nsys.empty()) {
    in.profile.note = "skipped: nsys (Nsight Systems) is not on the worker's PATH";
  } else if (dir.empty()) {
    in.profile.note = "skipped: no diagnostics volume to keep the profile in";
  } else {
    fs::create_directories(dir, ec);
    const std::string prefix = dir + "/profile";
    in.profile = w::RunNsys(w::NsysCommand(nsys, fs::read_symlink("/proc/self/exe", ec).string(),
                                           spec_path, first_failing, prefix, fixtures),
                            prefix);
  }
  w::Bundle bundle = w::AssembleBundle(in);
  if (!dir.empty()) bundle.summary.add_locations(dir);
  if (!config_map.empty()) bundle.summary.add_locations("configmap " + config_map);
  if (!dir.empty()) {
    perfgate::Status st = w::WriteBundle(bundle, dir);
    if (!st.ok()) {
      std::cerr << "perfgate: cannot write the diagnosis bundle: " << st.message() << "\n";
      bundle.summary.mutable_locations()->erase(bundle.summary.locations().begin());
    }
  }
  *report->mutable_diagnosis() = bundle.summary;
  return bundle;
}

// Keeps the tests of `plan` named (or of a type named) in `only`; false when none is.
bool KeepOnly(const std::vector<std::string>& only, perfgate::worker::Plan* plan) {
  if (only.empty()) return true;
  std::set<std::string> wanted(only.begin(), only.end());
  std::vector<perfgate::worker::PlannedTest> kept;
  for (auto& t : plan->tests) {
    if (wanted.count(t.name) || wanted.count(t.type)) kept.push_back(std::move(t));
  }
  if (kept.empty()) return false;
  plan->tests = std::move(kept);
  return true;
}

// "perfgate: running NAME (N tests, profile P V)", and what spec.gang means on one machine.
void SayWhatRuns(const RunArgs& args, const perfgate::worker::Plan& plan,
                 const perfgate::v1alpha1::PerfValidationSpec& spec) {
  std::cerr << args.program << ": running " << plan.validation << " (" << plan.tests.size()
            << " tests"
            << (plan.profile.empty() ? ""
                                     : ", profile " + plan.profile + " " + plan.profile_version)
            << ")\n";
  // spec.gang is the operator's: a local run (no PERFGATE_GANG_SIZE) is one node.
  if (!spec.gang().shape().empty() && perfgate::EnvVar("PERFGATE_GANG_SIZE").empty()) {
    std::cerr << args.program
              << ": spec.gang applies when the operator runs this spec across "
                 "nodes; here the NCCL tests run over this machine's GPUs only\n";
  }
}

// The diagnosis bundle of a run that asks for one (spec.diagnostics), into the report; none
// when it does not.
std::optional<perfgate::worker::Bundle> Diagnose(const RunArgs& args, const Capture& capture,
                                                 const perfgate::v1alpha1::Diagnostics& diagnostics,
                                                 const std::string& spec_path,
                                                 const perfgate::worker::ClusterTarget& cluster,
                                                 const perfgate::worker::Plan& plan,
                                                 perfgate::v1alpha1::Report* report) {
  if (!perfgate::worker::ShouldCapture(diagnostics, *report)) return std::nullopt;
  const bool in_cluster = !cluster.result_name.empty();
  std::string dir = args.diagnostics_dir;
  if (dir.empty()) dir = perfgate::EnvVar("PERFGATE_DIAGNOSTICS_DIR");
  // One folder per result (cluster) or per run (local).
  if (!dir.empty()) {
    dir += "/" + (in_cluster ? cluster.result_name : plan.validation + "-" + report->starttime());
  }
  const std::string config_map =
      in_cluster
          ? cluster.name_space + "/" + perfgate::worker::DiagnosisConfigMapName(cluster.result_name)
          : "";
  perfgate::worker::Bundle bundle =
      GatherDiagnosis(capture, diagnostics, spec_path, args.fixtures, dir, config_map, report);
  if (!args.quiet) {
    std::cerr << args.program << ": diagnosis gathered (" << report->diagnosis().bytes()
              << " bytes)";
    for (const auto& where : report->diagnosis().locations()) std::cerr << "; " << where;
    std::cerr << "\n";
  }
  return bundle;
}

// --report-json and --junit; an error names the file that could not be written.
Status WriteReportFiles(const RunArgs& args, const perfgate::v1alpha1::Report& report) {
  if (!args.report_json.empty()) {
    auto json = perfgate::report::ToJson(report);
    Status st =
        json.ok() ? perfgate::report::WriteFileAtomic(args.report_json, *json) : json.status();
    if (!st.ok()) return perfgate::Internal("cannot write the JSON report: " + st.message());
  }
  if (!args.junit.empty()) {
    Status st = perfgate::report::WriteFileAtomic(args.junit, perfgate::report::ToJUnit(report));
    if (!st.ok()) return perfgate::Internal("cannot write the JUnit report: " + st.message());
  }
  return Status::Ok();
}

// In a cluster: the verdict in the termination message, the PerfResult, and the diagnosis
// bundle's ConfigMap when there is one. Exit code 0 once the result is written.
int WriteClusterResult(const RunArgs& args, perfgate::worker::ClusterTarget cluster,
                       const perfgate::worker::Plan& plan, const perfgate::v1alpha1::Report& report,
                       const perfgate::worker::Bundle* bundle) {
  if (cluster.validation_name.empty()) cluster.validation_name = plan.validation;
  // The verdict goes to the termination message first, so that it survives even if the API
  // stays down past the write's retries or the pod is killed while retrying.
  perfgate::worker::WriteTerminationMessage(
      perfgate::worker::TerminationResult(cluster, report, ""));
  std::string result_uid;
  Status st = perfgate::worker::WritePerfResult(cluster, report, &result_uid);
  if (!st.ok()) {
    const std::string message = "cannot write the PerfResult: " + st.message();
    perfgate::worker::WriteTerminationMessage(
        perfgate::worker::TerminationResult(cluster, report, message));
    std::cerr << args.program << ": " << message << "\n";
    return exit_code::kError;
  }
  if (bundle == nullptr) return 0;
  std::map<std::string, std::string> files;
  for (const auto& f : bundle->files) files[f.name] = f.content;
  files["summary.json"] = perfgate::worker::DiagnosisJson(report.diagnosis());
  auto object = perfgate::worker::DiagnosisConfigMapJson(cluster, files, result_uid);
  Status written =
      object.ok() ? perfgate::worker::WriteDiagnosisConfigMap(cluster, *object) : object.status();
  // The result stands without its bundle: say so, and exit 0 as the result was written.
  if (!written.ok()) {
    std::cerr << args.program
              << ": cannot write the diagnosis bundle's ConfigMap: " << written.message() << "\n";
  }
  return 0;
}

int RunSpec(const RunArgs& args) {
  std::string spec_path = args.spec;
  perfgate::worker::HistoryOptions history;
  history.store_url = args.store_url;
  history.record = args.record;
  auto Fail = [&](int code, const std::string& message) {
    std::cerr << args.program << ": " << message << "\n";
    return code;
  };

  // Cluster mode: the operator reads a failed worker's termination message.
  perfgate::worker::ClusterTarget cluster;
  cluster.result_name = args.result;
  perfgate::worker::ClusterTargetFromEnv(&cluster);
  const bool in_cluster = !cluster.result_name.empty();
  if (in_cluster) spec_path = perfgate::worker::PodPath(spec_path);

  auto loaded = perfgate::spec::LoadValidation(spec_path);
  auto plan = PlanSpec(loaded, spec_path, args.profile_dirs, args.fixtures, history.store_url);
  if (!plan.ok()) {
    if (in_cluster) perfgate::worker::WriteTerminationMessage(plan.status().message());
    return Fail(exit_code::kInvalid, plan.status().message());
  }
  if (!KeepOnly(args.only, &*plan)) {
    return Fail(exit_code::kInvalid, "--only matched no test in " + spec_path);
  }
  perfgate::worker::RunOptions run_options;
  run_options.progress = args.quiet ? nullptr : &std::cerr;
  run_options.progress_columns = TerminalColumns(STDERR_FILENO);
  if (!args.quiet) SayWhatRuns(args, *plan, loaded->doc.spec());
  const perfgate::v1alpha1::Diagnostics& diagnostics = loaded->doc.spec().diagnostics();
  Capture capture = StartCapture(diagnostics);
  run_options.timeline = capture.timeline.get();
  perfgate::v1alpha1::Report report = perfgate::worker::RunPlan(*plan, run_options);
  const std::optional<perfgate::worker::Bundle> bundle =
      Diagnose(args, capture, diagnostics, spec_path, cluster, *plan, &report);
  std::cout << "\n" << perfgate::report::FormatTable(report);
  if (Status st = WriteReportFiles(args, report); !st.ok()) {
    return Fail(exit_code::kError, st.message());
  }
  if (in_cluster)
    return WriteClusterResult(args, cluster, *plan, report, bundle ? &*bundle : nullptr);
  perfgate::worker::RecordLocalRun(report, history, std::cout, std::cerr);
  return perfgate::worker::ExitCode(report);
}

}  // namespace

std::vector<std::string> DefaultProfileDirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("PERFGATE_PROFILES")) {
    std::string s = env;
    std::size_t start = 0;
    while (start <= s.size()) {
      auto colon = s.find(':', start);
      std::string d = s.substr(start, colon - start);
      if (!d.empty()) dirs.push_back(d);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  const std::string exe = ExeDir();
  dirs.push_back(exe + "/../share/perfgate/profiles");
  dirs.push_back(PERFGATE_SOURCE_PROFILES);
  dirs.push_back("profiles");
  return dirs;
}

int Run(const RunArgs& args) { return RunSpec(args); }

int ListTests(bool as_json, bool fixtures) { return ListAll(as_json, fixtures); }

int PlanHere(const PlanArgs& args) {
  auto plan = PlanSpec(perfgate::spec::LoadValidation(args.spec), args.spec, args.profile_dirs,
                       args.fixtures);
  if (!plan.ok()) {
    std::cerr << args.program << ": " << plan.status().message() << "\n";
    return exit_code::kInvalid;
  }
  int gpus = args.gpus;
  if (gpus == 0) gpus = plan->gpus_per_node;
  if (gpus == 0) {
    auto here = perfgate::kernels::ListCudaDevices();
    gpus = here.ok() && !here->empty() ? static_cast<int>(here->size()) : kAssumedGpus;
  }
  std::cout << FormatPlanPrice(*plan, PricePlan(*plan, gpus));
  return exit_code::kOk;
}

}  // namespace perfgate::worker
