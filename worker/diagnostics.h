// Capture on failure (docs/diagnostics.md): while tests run, the worker samples the power,
// clocks, temperature and throttle reasons of the GPUs under test; when a test fails, or a GPU
// lags the node's others, it gathers a bounded bundle (the failing tests, their timeline, an NVML
// dump of every GPU, NCCL's topology, optionally an Nsight Systems profile) and puts its summary in
// the report.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "kernels/nvml/nvml.h"
#include "kernels/nvml/readings.h"
#include "perfgate/v1alpha1/report.pb.h"
#include "perfgate/v1alpha1/validation.pb.h"

namespace perfgate::worker {

// The bundle's bounds: each file at most kDiagnosisPartBytes, all of them together at most
// kDiagnosisTotalBytes (a ConfigMap holds 1 MiB, metadata included).
inline constexpr std::size_t kDiagnosisPartBytes = std::size_t{256} * 1024;
inline constexpr std::size_t kDiagnosisTotalBytes = std::size_t{900} * 1024;
// Timeline points kept per GPU and test; beyond it every other point is dropped and the
// sampling interval doubles, so a long test keeps its whole span at a coarser step.
inline constexpr std::size_t kTimelineMaxPoints = 256;

// A GPU whose figure lags the node's other GPUs of the same model, although it passes: each
// figure a threshold checks is compared across the devices that ran the test, as the fleet
// report compares nodes (comparison::LaggingPeers: at least 3% worse than the other GPUs'
// median, robust z at least 3.5 and the Bonferroni bound). Needs 8 GPUs of the model (fewer
// give no reliable spread). `what`: "gemm [gpu3]: tflops median 612 is 9.0% below its 8 GPUs'
// median 672.5".
struct LaggingDevice {
  std::string test;
  std::string device;
  std::string what;
};
std::vector<LaggingDevice> LaggingDevices(const v1alpha1::Report& report);

// Whether `diagnostics` asks for a capture for `report`: capture is not Never, and a test
// FAILed or a GPU lags its siblings (LaggingDevices).
bool ShouldCapture(const v1alpha1::Diagnostics& diagnostics, const v1alpha1::Report& report);

struct TimelinePoint {
  double seconds = 0;  // since the test started
  kernels::nvml::Telemetry telemetry;
};

struct TestTimeline {
  // GPU ordinal -> points in time order.
  std::map<int, std::vector<TimelinePoint>> points;
  // Why there are no points ("NVML unavailable: ..."); "" when sampled.
  std::string note;
  double interval_seconds = 0;  // the step of the points kept
};

// Samples the GPUs of the running test on a thread of its own, every `interval_seconds`,
// until End(). A reading that fails ends that test's sampling with the failure as its note:
// nothing is invented. Thread-safe.
class TimelineRecorder {
 public:
  using Reader = std::function<Result<kernels::nvml::Telemetry>(int ordinal)>;
  TimelineRecorder(Reader reader, double interval_seconds,
                   std::size_t max_points = kTimelineMaxPoints);
  ~TimelineRecorder();
  TimelineRecorder(const TimelineRecorder&) = delete;
  TimelineRecorder& operator=(const TimelineRecorder&) = delete;

  // A test starts on `ordinals` (nothing is sampled for a host test: none).
  void Begin(const std::string& test, const std::vector<int>& ordinals);
  // The test ended; waits for the sampling thread.
  void End();
  // Test name -> its timeline, of the tests begun so far.
  std::map<std::string, TestTimeline> Timelines() const;

 private:
  void Loop(const std::string& test, const std::vector<int>& ordinals);

  Reader reader_;
  double interval_seconds_;
  std::size_t max_points_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
  std::map<std::string, TestTimeline> timelines_;
};

// The reader of the real GPUs: NVML's telemetry of the CUDA device `ordinal`. Fails with
// "NVML unavailable: ..." where there is no driver.
TimelineRecorder::Reader NvmlTelemetryReader();

// An NVML dump of every GPU NVML shows: identity, power limits, telemetry, every health
// counter and its details; and hints for counters that point at a fault. JSON text.
struct NvmlDump {
  std::string json;
  std::vector<std::string> hints;
};
NvmlDump DumpNvml(const kernels::nvml::Nvml& lib);

// Hints from a failing test's timeline: hardware slowdowns, power cap, thermal throttling,
// the hottest reading and the lowest SM clock per GPU.
std::vector<std::string> TimelineHints(const std::string& test, const TestTimeline& timeline);

// The Nsight Systems profile of the failing test, or why there is none.
struct ProfileOutcome {
  std::string path;  // the .nsys-rep file written, "" when none
  std::string note;  // "skipped: ..." or what nsys said
};
// `nsys` found on `path_env` (a PATH value); "" when not there.
std::string FindOnPath(const std::string& name, const std::string& path_env);
// The nsys command line profiling `test` alone from `spec_path` into `out_prefix`.
std::vector<std::string> NsysCommand(const std::string& nsys, const std::string& worker,
                                     const std::string& spec_path, const std::string& test,
                                     const std::string& out_prefix, bool fixtures);
// Runs it (blocking, at most about 60 s of profiling). Never fails the run.
ProfileOutcome RunNsys(const std::vector<std::string>& command, const std::string& out_prefix);

struct BundleFile {
  std::string name;
  std::string content;
};

// What a bundle is made of; any part may be missing, with its reason.
struct DiagnosisInputs {
  const v1alpha1::Report* report = nullptr;
  std::string spec_text;  // the spec (plan) the worker ran
  std::map<std::string, TestTimeline> timelines;
  Result<NvmlDump> nvml = Status(Code::kUnavailable, "NVML was not read");
  // NCCL_TOPO_DUMP_FILE's contents when NCCL ran and wrote it; else why not.
  Result<std::string> nccl_topology = Status(Code::kNotFound, "no NCCL test ran");
  ProfileOutcome profile;
};

struct Bundle {
  std::vector<BundleFile> files;  // text files, within the bounds
  v1alpha1::Diagnosis summary;    // without locations
};

// Assembles the bundle: failures.json (the failing tests and those of lagging GPUs), timeline.json,
// nvml.json, nccl-topology.xml, spec.yaml and summary.json, in that order of priority, each cut to
// `part_bytes` and all together to `total_bytes` (what was cut or left out is said in the summary's
// parts and in the file).
Bundle AssembleBundle(const DiagnosisInputs& in, std::size_t part_bytes = kDiagnosisPartBytes,
                      std::size_t total_bytes = kDiagnosisTotalBytes);

// Writes the bundle's files and summary.json into `dir` (created). Blocking.
Status WriteBundle(const Bundle& bundle, const std::string& dir);

// The summary as the bundle's summary.json.
std::string DiagnosisJson(const v1alpha1::Diagnosis& summary);

}  // namespace perfgate::worker
