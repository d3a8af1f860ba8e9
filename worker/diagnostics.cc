#include "worker/diagnostics.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "common/compare.h"
#include "common/report.h"
#include "common/stats.h"
#include "common/strings.h"
#include "kernels/devices.h"
#include "kernels/nvml/attributes.h"

namespace perfgate::worker {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
namespace nvml = kernels::nvml;

std::string Size(std::size_t bytes) {
  char text[32];
  if (bytes >= std::size_t{1024} * 1024) {
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  } else if (bytes >= 1024) {
    std::snprintf(text, sizeof text, "%.0f KiB", static_cast<double>(bytes) / 1024.0);
  } else {
    std::snprintf(text, sizeof text, "%zu B", bytes);
  }
  return text;
}

Json TelemetryJson(const nvml::Telemetry& t) {
  Json j = Json::object();
  if (t.sm_clock_mhz) j["smClockMHz"] = *t.sm_clock_mhz;
  if (t.memory_clock_mhz) j["memoryClockMHz"] = *t.memory_clock_mhz;
  if (t.temperature_c) j["temperatureC"] = *t.temperature_c;
  if (t.power_w) j["powerW"] = *t.power_w;
  if (t.clocks_event_reasons) {
    j["clocksEventReasons"] = nvml::ClocksEventReasonNames(*t.clocks_event_reasons);
  }
  if (t.pcie_gen) j["pcieGen"] = *t.pcie_gen;
  if (t.pcie_width) j["pcieWidth"] = *t.pcie_width;
  return j;
}

}  // namespace

std::vector<LaggingDevice> LaggingDevices(const v1alpha1::Report& report) {
  std::map<int, std::string> models;
  for (const auto& g : report.identity().gpus()) models[g.index()] = g.name();
  struct Member {
    const v1alpha1::TestResult* test;
    const v1alpha1::ThresholdResult* threshold;
  };
  // test, metric, statistic, op and GPU model -> one figure per GPU.
  std::map<std::string, std::vector<Member>> groups;
  for (const auto& t : report.tests()) {
    const int ordinal = report::DeviceOrdinal(t.device());
    if (ordinal < 0) continue;
    for (const auto& th : t.thresholds()) {
      if (!std::isfinite(th.observed())) continue;
      const auto& c = th.threshold();
      groups[t.name() + '\x1f' + c.metric() + '\x1f' + c.statistic() + '\x1f' + c.op() + '\x1f' +
             models[ordinal]]
          .push_back({&t, &th});
    }
  }
  std::vector<LaggingDevice> out;
  // A GPU is judged against at least seven siblings: fewer give no reliable spread, and a
  // capture on a guess costs a bundle.
  comparison::PeerRule rule;
  rule.min_peers = 7;
  for (const auto& [key, members] : groups) {
    std::vector<comparison::Member> values;
    for (const Member& m : members) values.push_back({m.test->device(), m.threshold->observed()});
    const std::string& op = members.front().threshold->threshold().op();
    const bool higher_is_better = op.find('>') != std::string::npos;
    std::vector<double> figures;
    for (const auto& v : values) figures.push_back(v.value);
    const double median = stats::Median(figures);  // what the line shows: all the GPUs'
    for (const comparison::Lag& lag : comparison::LaggingPeers(values, higher_is_better, rule)) {
      const Member& m = members[lag.index];
      if (m.test->verdict() == v1alpha1::FAIL) continue;  // a failure already, not a lag
      const auto& c = m.threshold->threshold();
      const double gap = std::fabs(m.threshold->observed() - median) / std::fabs(median);
      char pct[16];
      std::snprintf(pct, sizeof pct, "%.1f%%", 100 * gap);
      out.push_back({m.test->name(), m.test->device(),
                     m.test->name() + " [" + m.test->device() + "]: " + c.metric() + " " +
                         (c.statistic().empty() ? "median" : c.statistic()) + " " +
                         Sig4(m.threshold->observed()) + " is " + pct + " " +
                         (higher_is_better ? "below" : "above") + " its " +
                         std::to_string(members.size()) + " GPUs' median " + Sig4(median)});
    }
  }
  return out;
}

bool ShouldCapture(const v1alpha1::Diagnostics& diagnostics, const v1alpha1::Report& report) {
  if (diagnostics.capture() == "Never") return false;
  return std::any_of(report.tests().begin(), report.tests().end(),
                     [](const v1alpha1::TestResult& t) { return t.verdict() == v1alpha1::FAIL; }) ||
         !LaggingDevices(report).empty();
}

// --- Timeline -------------------------------------------------------------------------------

TimelineRecorder::TimelineRecorder(Reader reader, double interval_seconds, std::size_t max_points)
    : reader_(std::move(reader)),
      interval_seconds_(interval_seconds),
      max_points_(std::max<std::size_t>(max_points, 2)) {}

TimelineRecorder::~TimelineRecorder() { End(); }

void TimelineRecorder::Begin(const std::string& test, const std::vector<int>& ordinals) {
  End();
  if (ordinals.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
    timelines_[test] = TestTimeline{};
    timelines_[test].interval_seconds = interval_seconds_;
  }
  thread_ = std::thread([this, test, ordinals] { Loop(test, ordinals); });
}

void TimelineRecorder::End() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::map<std::string, TestTimeline> TimelineRecorder::Timelines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timelines_;
}

void TimelineRecorder::Loop(const std::string& test, const std::vector<int>& ordinals) {
  const auto start = std::chrono::steady_clock::now();
  double step = interval_seconds_;
  auto next = start;
  while (true) {
    const double at =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::map<int, nvml::Telemetry> read;
    std::string failure;
    for (int ordinal : ordinals) {
      auto t = reader_(ordinal);
      if (!t.ok()) {
        failure = "gpu" + std::to_string(ordinal) + ": " + t.status().message();
        break;
      }
      read[ordinal] = *t;
    }
    std::unique_lock<std::mutex> lock(mu_);
    TestTimeline& timeline = timelines_[test];
    if (!failure.empty()) {
      timeline.note = failure;
      return;
    }
    for (auto& [ordinal, t] : read) {
      auto& points = timeline.points[ordinal];
      points.push_back({at, t});
      if (points.size() >= max_points_) {
        // Keep the whole span at half the resolution.
        std::vector<TimelinePoint> kept;
        for (std::size_t i = 0; i < points.size(); i += 2) kept.push_back(points[i]);
        points = std::move(kept);
        if (ordinal == ordinals.front()) step *= 2;
      }
    }
    timeline.interval_seconds = step;
    next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(step));
    if (cv_.wait_until(lock, next, [this] { return stop_; })) return;
  }
}

TimelineRecorder::Reader NvmlTelemetryReader() {
  struct Devices {
    std::mutex mu;
    std::map<int, nvml::nvmlDevice_t> by_ordinal;
  };
  auto devices = std::make_shared<Devices>();
  return [devices](int ordinal) -> Result<nvml::Telemetry> {
    ASSIGN_OR_RETURN(auto lib, nvml::SharedNvml());
    std::lock_guard<std::mutex> lock(devices->mu);
    auto it = devices->by_ordinal.find(ordinal);
    if (it == devices->by_ordinal.end()) {
      ASSIGN_OR_RETURN(auto gpus, kernels::ListCudaDevices());
      for (const auto& g : gpus) {
        if (g.ordinal != ordinal) continue;
        ASSIGN_OR_RETURN(auto device, lib->DeviceByPciBusId(g.pci_bus_id));
        it = devices->by_ordinal.emplace(ordinal, device).first;
      }
      if (it == devices->by_ordinal.end()) {
        return NotFound("no CUDA device " + std::to_string(ordinal));
      }
    }
    return nvml::ReadTelemetry(*lib, it->second);
  };
}

std::vector<std::string> TimelineHints(const std::string& test, const TestTimeline& timeline) {
  std::vector<std::string> hints;
  if (!timeline.note.empty()) {
    hints.push_back(test + ": no timeline (" + timeline.note + ")");
    return hints;
  }
  for (const auto& [ordinal, points] : timeline.points) {
    if (points.empty()) continue;
    std::size_t hw = 0, power = 0, thermal = 0;
    double hottest = -1, slowest = -1;
    for (const auto& p : points) {
      const auto& t = p.telemetry;
      if (t.clocks_event_reasons) {
        const std::uint64_t m = *t.clocks_event_reasons;
        hw += nvml::IsHardwareSlowdown(m) ? 1 : 0;
        power += (m & nvml::kClocksEventSwPowerCap) != 0 ? 1 : 0;
        thermal += (m & nvml::kClocksEventSwThermalSlowdown) != 0 ? 1 : 0;
      }
      if (t.temperature_c) hottest = std::max(hottest, *t.temperature_c);
      if (t.sm_clock_mhz && (slowest < 0 || *t.sm_clock_mhz < slowest)) slowest = *t.sm_clock_mhz;
    }
    const std::string who = test + " gpu" + std::to_string(ordinal) + ": ";
    const std::string of = " in " + std::to_string(points.size()) + " samples";
    if (hw > 0) {
      hints.push_back(who + "hardware slowdown (HW, thermal or power brake) in " +
                      std::to_string(hw) + " of " + std::to_string(points.size()) + " samples");
    }
    if (power > 0) {
      hints.push_back(who + "held at its power cap in " + std::to_string(power) + " of " +
                      std::to_string(points.size()) + " samples");
    }
    if (thermal > 0) {
      hints.push_back(who + "thermal slowdown in " + std::to_string(thermal) + " of " +
                      std::to_string(points.size()) + " samples");
    }
    if (hottest >= 0 || slowest >= 0) {
      hints.push_back(who + (hottest >= 0 ? "hottest " + Sig4(hottest) + " C" : "") +
                      (hottest >= 0 && slowest >= 0 ? ", " : "") +
                      (slowest >= 0 ? "lowest SM clock " + Sig4(slowest) + " MHz" : "") + of);
    }
  }
  return hints;
}

// --- NVML dump ------------------------------------------------------------------------------

NvmlDump DumpNvml(const nvml::Nvml& lib) {
  NvmlDump out;
  Json dump = Json::object();
  dump["driverVersion"] = lib.DriverVersion();
  if (const std::optional<int> v = nvml::CudaDriverVersion(lib)) dump["cudaDriverVersion"] = *v;
  const Result<unsigned> count = nvml::DeviceCount(lib);
  if (!count.ok()) {
    dump["error"] = count.status().message();
    out.json = dump.dump(1);
    return out;
  }
  dump["gpus"] = Json::array();
  for (unsigned i = 0; i < *count; ++i) {
    Json gpu = {{"index", i}};
    const Result<nvml::nvmlDevice_t> handle = nvml::DeviceAt(lib, i);
    if (!handle.ok()) {
      gpu["error"] = handle.status().message();
      dump["gpus"].push_back(gpu);
      continue;
    }
    const nvml::nvmlDevice_t device = *handle;
    const nvml::GpuAttributes a = nvml::ReadAttributes(lib, device);
    if (a.name) gpu["name"] = *a.name;
    if (a.uuid) gpu["uuid"] = *a.uuid;
    if (a.pci_bus_id) gpu["pciBusId"] = *a.pci_bus_id;
    if (a.vbios) gpu["vbios"] = *a.vbios;
    if (a.serial) gpu["serial"] = *a.serial;
    if (a.power_limit_mw) gpu["powerLimitW"] = *a.power_limit_mw / 1000.0;
    if (a.power_default_limit_mw) gpu["defaultPowerLimitW"] = *a.power_default_limit_mw / 1000.0;
    gpu["telemetry"] = TelemetryJson(nvml::ReadTelemetry(lib, device));
    const nvml::HealthReadings health =
        nvml::ReadHealth(lib, device, static_cast<unsigned>(getpid()), false);
    const auto metrics = nvml::HealthMetrics(health);
    gpu["health"] = Json(std::map<std::string, double>(metrics.begin(), metrics.end()));
    const auto details = nvml::HealthDetails(health);
    gpu["details"] = Json(std::map<std::string, std::string>(details.begin(), details.end()));
    const std::string who =
        "gpu" + std::to_string(i) +
        (gpu.contains("pciBusId") ? " (" + gpu["pciBusId"].get<std::string>() + ")" : "");
    // Counters that point at a fault on their own (the health test's thresholds say how many
    // are too many; any is worth a look).
    static const char* kFaultCounters[] = {"eccUncorrectedVolatileCount",
                                           "remappedRowsUncorrectableCount",
                                           "rowRemapFailure",
                                           "rowRemapPending",
                                           "retiredPagesPending",
                                           "pcieReplayCount",
                                           "pcieLinkWidthDegraded",
                                           "nvlinkCrcErrorCount",
                                           "nvlinkReplayErrorCount",
                                           "nvlinkRecoveryErrorCount",
                                           "nvlinkInactiveLinkCount",
                                           "hardwareSlowdown",
                                           "xidEventCount"};
    for (const char* name : kFaultCounters) {
      auto it = metrics.find(name);
      if (it != metrics.end() && it->second > 0) {
        out.hints.push_back(who + ": " + name + " " + Sig4(it->second));
      }
    }
    if (const std::string fabric = nvml::FabricProblem(health); !fabric.empty()) {
      out.hints.push_back(who + ": NVSwitch fabric " + fabric);
    }
    dump["gpus"].push_back(gpu);
  }
  out.json = dump.dump(1);
  return out;
}

// --- Nsight Systems -------------------------------------------------------------------------

std::string FindOnPath(const std::string& name, const std::string& path_env) {
  std::size_t start = 0;
  while (start <= path_env.size()) {
    const auto colon = path_env.find(':', start);
    const std::string dir = path_env.substr(start, colon - start);
    if (!dir.empty()) {
      std::string candidate = dir + "/" + name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return "";
}

std::vector<std::string> NsysCommand(const std::string& nsys, const std::string& worker,
                                     const std::string& spec_path, const std::string& test,
                                     const std::string& out_prefix, bool fixtures) {
  std::vector<std::string> cmd = {
      nsys,         "profile", "--output",       out_prefix,   "--force-overwrite",
      "true",       "--trace", "cuda,nvtx,osrt", "--duration", "60",
      worker,       "run",     spec_path,        "--only",     test,
      "--no-store", "--quiet"};
  if (fixtures) cmd.emplace_back("--enable-fixtures");
  return cmd;
}

ProfileOutcome RunNsys(const std::vector<std::string>& command, const std::string& out_prefix) {
  ProfileOutcome out;
  const pid_t pid = fork();
  if (pid < 0) {
    out.note = "skipped: fork failed";
    return out;
  }
  if (pid == 0) {
    std::vector<char*> argv;
    argv.reserve(command.size() + 1);
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    // The profiled run is a local run: it must not write this node's PerfResult again.
    unsetenv("PERFGATE_RESULT_NAME");  // NOLINT(concurrency-mt-unsafe): the child only
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string file = out_prefix + ".nsys-rep";
  std::error_code ec;
  if (fs::exists(file, ec)) {
    out.path = file;
    out.note = "profiled the failing test once (" + Size(fs::file_size(file, ec)) + ")";
  } else {
    out.note = "nsys wrote no report (exit status " +
               std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")";
  }
  return out;
}

// --- The bundle -----------------------------------------------------------------------------

namespace {

// The part of `report` a vendor needs: the identity, the verdict and the recommended action with
// its evidence (what an RMA asks for), the failing tests whole (samples, thresholds, parameters,
// details) and those of GPUs that pass but lag their siblings; named in `summary` too.
v1alpha1::Report FailingPart(const v1alpha1::Report& report, v1alpha1::Diagnosis* summary) {
  v1alpha1::Report failing;
  failing.set_validation(report.validation());
  failing.set_profile(report.profile());
  failing.set_profileversion(report.profileversion());
  *failing.mutable_identity() = report.identity();
  failing.set_verdict(report.verdict());
  failing.set_reason(report.reason());
  *failing.mutable_action() = report.action();
  for (const auto& t : report.tests()) {
    if (t.verdict() != v1alpha1::FAIL) continue;
    *failing.add_tests() = t;
    summary->add_failures(t.name() + " [" + t.device() + "]: " + t.reason());
  }
  const std::vector<LaggingDevice> lagging = LaggingDevices(report);
  for (const auto& t : report.tests()) {
    const bool lags = std::any_of(lagging.begin(), lagging.end(), [&](const LaggingDevice& l) {
      return l.test == t.name() && l.device == t.device();
    });
    if (lags) *failing.add_tests() = t;
  }
  for (const auto& l : lagging) summary->add_lagging(l.what);
  return failing;
}

// The GPU telemetry sampled during each test of `failing`, by test and GPU; what the samples
// hint at goes into `summary`.
Json TimelinesOf(const v1alpha1::Report& failing,
                 const std::map<std::string, TestTimeline>& timelines,
                 v1alpha1::Diagnosis* summary) {
  Json timeline = Json::object();
  std::set<std::string> tests;
  for (const auto& t : failing.tests()) tests.insert(t.name());
  for (const auto& name : tests) {
    auto it = timelines.find(name);
    if (it == timelines.end()) {
      timeline[name] = {{"note", "not sampled: a host test, or no GPU to sample"}};
      continue;
    }
    for (auto& h : TimelineHints(name, it->second)) summary->add_hints(std::move(h));
    Json t = {{"intervalSeconds", it->second.interval_seconds}};
    if (!it->second.note.empty()) t["note"] = it->second.note;
    for (const auto& [ordinal, points] : it->second.points) {
      Json series = Json::array();
      for (const auto& p : points) {
        Json j = TelemetryJson(p.telemetry);
        j["t"] = p.seconds;
        series.push_back(std::move(j));
      }
      t["gpus"]["gpu" + std::to_string(ordinal)] = std::move(series);
    }
    timeline[name] = std::move(t);
  }
  return timeline;
}

}  // namespace

Bundle AssembleBundle(const DiagnosisInputs& in, std::size_t part_bytes, std::size_t total_bytes) {
  Bundle bundle;
  v1alpha1::Diagnosis& summary = bundle.summary;
  std::size_t left = total_bytes;

  // Adds `name` with `content` (cut to the bounds), or notes why it is absent.
  auto add = [&](const std::string& name, Result<std::string> content) {
    auto* part = summary.add_parts();
    part->set_name(name);
    if (!content.ok()) {
      part->set_note(content.status().message());
      return;
    }
    std::string text = std::move(*content);
    const std::size_t whole = text.size();
    const std::size_t cap = std::min(part_bytes, left);
    if (cap == 0) {
      part->set_note("left out: the bundle's " + Size(total_bytes) + " were spent");
      part->set_truncated(true);
      return;
    }
    if (whole > cap) {
      const std::string tail = "\n... cut: " + Size(cap) + " of " + Size(whole) + " kept\n";
      text = text.substr(0, cap > tail.size() ? cap - tail.size() : 0) + tail;
      text = text.substr(0, cap);
      part->set_truncated(true);
      part->set_note("cut from " + Size(whole) + " to " + Size(text.size()));
    }
    left -= text.size();
    part->set_bytes(static_cast<int>(text.size()));
    bundle.files.push_back({name, std::move(text)});
  };

  // The failing tests, whole (samples, thresholds, parameters, details).
  const v1alpha1::Report failing =
      in.report != nullptr ? FailingPart(*in.report, &summary) : v1alpha1::Report();
  add("failures.json", report::ToJson(failing));

  add("timeline.json", TimelinesOf(failing, in.timelines, &summary).dump(1));

  if (in.nvml.ok()) {
    for (const auto& h : in.nvml->hints) summary.add_hints(h);
    add("nvml.json", in.nvml->json);
  } else {
    add("nvml.json", in.nvml.status());
  }
  add("nccl-topology.xml", in.nccl_topology);
  add("spec.yaml", in.spec_text.empty() ? Result<std::string>(NotFound("no spec text"))
                                        : Result<std::string>(in.spec_text));

  auto* profile = summary.add_parts();
  profile->set_name("profile.nsys-rep");
  profile->set_note(in.profile.note.empty() ? "skipped" : in.profile.note);
  if (!in.profile.path.empty()) {
    std::error_code ec;
    profile->set_bytes(static_cast<int>(fs::file_size(in.profile.path, ec)));
  }

  std::size_t total = 0;
  for (const auto& f : bundle.files) total += f.content.size();
  summary.set_bytes(static_cast<int>(total));
  return bundle;
}

Status WriteBundle(const Bundle& bundle, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal("cannot create " + dir + ": " + ec.message());
  for (const auto& f : bundle.files) {
    RETURN_IF_ERROR(report::WriteFileAtomic(dir + "/" + f.name, f.content));
  }
  return report::WriteFileAtomic(dir + "/summary.json", DiagnosisJson(bundle.summary));
}

std::string DiagnosisJson(const v1alpha1::Diagnosis& summary) {
  std::string text;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  if (!google::protobuf::util::MessageToJsonString(summary, &text, options).ok()) return "{}";
  return text;
}

}  // namespace perfgate::worker
