#include "kernels/nvml/readings.h"

#include <initializer_list>
#include <utility>

#include "kernels/nvml/kernel_log.h"
#include "kernels/unmeasured.h"

namespace perfgate::kernels::nvml {
namespace {

// Records a failed reading: NOT_SUPPORTED (and a missing entry point) leave the value empty;
// anything else is also listed, and marks the metrics built on it refused, since "could not
// read" must not look like "healthy".
class Reader {
 public:
  Reader(const Nvml& nvml, HealthReadings* out) : nvml_(nvml), out_(out) {}
  bool Ok(nvmlReturn_t rc, const char* what, std::initializer_list<const char*> metrics) {
    if (rc == kSuccess) return true;
    if (rc != kErrorNotSupported) {
      const std::string text = std::string(what) + ": " + nvml_.ErrorText(rc);
      out_->read_errors.push_back(text);
      for (const char* metric : metrics) out_->refused.emplace(metric, text);
    }
    return false;
  }

 private:
  const Nvml& nvml_;
  HealthReadings* out_;
};

std::optional<std::uint64_t> ReadEcc(const NvmlFunctions& f, Reader& r, nvmlDevice_t device,
                                     int error_type, int counter_type, const char* what,
                                     const char* metric) {
  if (f.DeviceGetTotalEccErrors == nullptr) return std::nullopt;
  unsigned long long count = 0;  // NOLINT(google-runtime-int): ABI
  if (!r.Ok(f.DeviceGetTotalEccErrors(device, error_type, counter_type, &count), what, {metric})) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(count);
}

// Counts processes from one NVML query, skipping ours. nullopt when unsupported.
std::optional<unsigned> CountProcesses(nvmlReturn_t (*query)(nvmlDevice_t, unsigned*,
                                                             nvmlProcessInfo_t*),
                                       Reader& r, nvmlDevice_t device, unsigned self_pid,
                                       bool assume_self, const char* what,
                                       std::vector<unsigned>* pids, bool* self_assumed) {
  if (query == nullptr) return std::nullopt;
  // Size first, then fetch; the list can grow in between, so retry with headroom.
  std::vector<nvmlProcessInfo_t> infos(16);
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto count = static_cast<unsigned>(infos.size());
    const nvmlReturn_t rc = query(device, &count, infos.data());
    if (rc == kErrorInsufficientSize) {
      infos.resize(count + 16);
      continue;
    }
    if (!r.Ok(rc, what, {"otherProcessCount"})) return std::nullopt;
    unsigned others = 0;
    bool self_seen = false;
    std::vector<unsigned> found;
    for (unsigned i = 0; i < count && i < infos.size(); ++i) {
      if (infos[i].pid == self_pid) {
        self_seen = true;
        continue;
      }
      ++others;
      found.push_back(infos[i].pid);
    }
    if (assume_self && !self_seen && others > 0) {
      --others;
      *self_assumed = true;
    }
    pids->insert(pids->end(), found.begin(), found.end());
    return others;
  }
  r.Ok(kErrorInsufficientSize, what, {"otherProcessCount"});
  return std::nullopt;
}

void ReadNvLinkErrors(const NvmlFunctions& f, Reader& r, nvmlDevice_t device, HealthReadings* h) {
  if (f.DeviceGetNvLinkErrorCounter == nullptr) return;
  static constexpr const char* kMetrics[] = {"nvlinkCrcErrorCount", "nvlinkReplayErrorCount",
                                             "nvlinkRecoveryErrorCount"};
  std::uint64_t sums[3] = {0, 0, 0};
  bool any = false;
  for (unsigned link = 0; link < kNvLinkMaxLinks; ++link) {
    // A link the GPU lacks answers INVALID_ARGUMENT or NOT_SUPPORTED to the state query.
    if (f.DeviceGetNvLinkState != nullptr) {
      nvmlEnableState_t state = 0;
      const nvmlReturn_t rc = f.DeviceGetNvLinkState(device, link, &state);
      if (rc == kErrorInvalidArgument || rc == kErrorNotSupported) continue;
    }
    static constexpr int kCounters[] = {kNvLinkErrorDlCrcFlit, kNvLinkErrorDlReplay,
                                        kNvLinkErrorDlRecovery};
    std::uint64_t values[3] = {0, 0, 0};
    bool link_read = false;
    for (int i = 0; i < 3; ++i) {
      unsigned long long value = 0;  // NOLINT(google-runtime-int): ABI
      const nvmlReturn_t rc = f.DeviceGetNvLinkErrorCounter(device, link, kCounters[i], &value);
      if (rc == kErrorInvalidArgument || rc == kErrorNotSupported) continue;
      if (!r.Ok(rc, "nvlinkErrorCounter", {kMetrics[i]})) continue;
      values[i] = value;
      sums[i] += value;
      link_read = true;
    }
    if (!link_read) continue;
    any = true;
    if (values[0] + values[1] + values[2] > 0) {
      h->nvlink_error_links.push_back(
          "link " + std::to_string(link) + ": crc " + std::to_string(values[0]) + ", replay " +
          std::to_string(values[1]) + ", recovery " + std::to_string(values[2]));
    }
  }
  if (!any) return;
  h->nvlink_crc_errors = sums[0];
  h->nvlink_replay_errors = sums[1];
  h->nvlink_recovery_errors = sums[2];
}

std::optional<unsigned> ReadRetiredPages(const NvmlFunctions& f, Reader& r, nvmlDevice_t device,
                                         int cause, const char* what) {
  // The table holds a few dozen pages per GPU; a larger answer still tells the count.
  std::vector<unsigned long long> addresses(256);  // NOLINT(google-runtime-int): ABI
  auto count = static_cast<unsigned>(addresses.size());
  const nvmlReturn_t rc = f.DeviceGetRetiredPages(device, cause, &count, addresses.data());
  if (rc == kErrorInsufficientSize) return count;
  if (!r.Ok(rc, what, {"retiredPagesCount", "retiredPagesDoubleBitCount"})) return std::nullopt;
  return count;
}

void ReadPredictiveCounters(const NvmlFunctions& f, Reader& r, nvmlDevice_t device,
                            HealthReadings* h) {
  if (f.DeviceGetPcieReplayCounter != nullptr) {
    unsigned replays = 0;
    if (r.Ok(f.DeviceGetPcieReplayCounter(device, &replays), "pcieReplayCounter",
             {"pcieReplayCount"})) {
      h->pcie_replays = replays;
    }
  }
  ReadNvLinkErrors(f, r, device, h);
  if (f.DeviceGetRetiredPages != nullptr) {
    h->retired_pages_single_bit = ReadRetiredPages(
        f, r, device, kPageRetirementMultipleSingleBitEcc, "retiredPages(multipleSingleBitEcc)");
    h->retired_pages_double_bit =
        ReadRetiredPages(f, r, device, kPageRetirementDoubleBitEcc, "retiredPages(doubleBitEcc)");
    if (!h->retired_pages_single_bit || !h->retired_pages_double_bit) {
      h->retired_pages_single_bit.reset();
      h->retired_pages_double_bit.reset();
    }
  }
  if (f.DeviceGetGpuFabricInfoV != nullptr) {
    nvmlGpuFabricInfoV_t info{};
    info.version = kGpuFabricInfoV3;
    if (r.Ok(f.DeviceGetGpuFabricInfoV(device, &info), "gpuFabricInfo", {"gpuFabricNotReady"}) &&
        info.state != kGpuFabricStateNotSupported) {
      h->fabric_state = info.state;
      h->fabric_status = info.status;
      h->fabric_health_summary = info.healthSummary;
    }
  }
}

// Memory health: the ECC mode and counts, remapped rows, retired pages pending.
void ReadMemoryHealth(const NvmlFunctions& f, Reader& r, nvmlDevice_t device, HealthReadings* h) {
  if (f.DeviceGetEccMode != nullptr) {
    nvmlEnableState_t current = 0;
    nvmlEnableState_t pending = 0;
    if (r.Ok(f.DeviceGetEccMode(device, &current, &pending), "eccMode", {})) {
      h->ecc_enabled = current != 0;
    }
  }
  h->ecc_corrected_volatile = ReadEcc(f, r, device, kMemoryErrorCorrected, kVolatileEcc,
                                      "eccCorrectedVolatile", "eccCorrectedVolatileCount");
  h->ecc_uncorrected_volatile = ReadEcc(f, r, device, kMemoryErrorUncorrected, kVolatileEcc,
                                        "eccUncorrectedVolatile", "eccUncorrectedVolatileCount");
  h->ecc_corrected_aggregate = ReadEcc(f, r, device, kMemoryErrorCorrected, kAggregateEcc,
                                       "eccCorrectedAggregate", "eccCorrectedAggregateCount");
  h->ecc_uncorrected_aggregate = ReadEcc(f, r, device, kMemoryErrorUncorrected, kAggregateEcc,
                                         "eccUncorrectedAggregate", "eccUncorrectedAggregateCount");

  if (f.DeviceGetRemappedRows != nullptr) {
    unsigned correctable = 0;
    unsigned uncorrectable = 0;
    unsigned pending = 0;
    unsigned failure = 0;
    if (r.Ok(f.DeviceGetRemappedRows(device, &correctable, &uncorrectable, &pending, &failure),
             "remappedRows",
             {"remappedRowsCorrectableCount", "remappedRowsUncorrectableCount", "rowRemapPending",
              "rowRemapFailure"})) {
      h->remapped_rows_correctable = correctable;
      h->remapped_rows_uncorrectable = uncorrectable;
      h->remap_pending = pending != 0;
      h->remap_failure = failure != 0;
    }
  }
  if (f.DeviceGetRetiredPagesPendingStatus != nullptr) {
    nvmlEnableState_t pending = 0;
    if (r.Ok(f.DeviceGetRetiredPagesPendingStatus(device, &pending), "retiredPagesPending",
             {"retiredPagesPending"})) {
      h->retired_pages_pending = pending != 0;
    }
  }
}

// NVLink: how many of the GPU's links are active and inactive (none known when one refused).
void ReadNvLinks(const NvmlFunctions& f, Reader& r, nvmlDevice_t device, HealthReadings* h) {
  if (f.DeviceGetNvLinkState != nullptr) {
    unsigned active = 0;
    unsigned inactive = 0;
    bool any = false;
    for (unsigned link = 0; link < kNvLinkMaxLinks; ++link) {
      nvmlEnableState_t state = 0;
      const nvmlReturn_t rc = f.DeviceGetNvLinkState(device, link, &state);
      // Links past the GPU's count answer INVALID_ARGUMENT or NOT_SUPPORTED: they do not exist.
      if (rc == kErrorInvalidArgument || rc == kErrorNotSupported) continue;
      if (!r.Ok(rc, "nvlinkState", {"nvlinkInactiveLinkCount"})) continue;
      any = true;
      (state != 0 ? active : inactive)++;
    }
    // One refused link could be the inactive one: no count at all then.
    if (any && h->refused.count("nvlinkInactiveLinkCount") == 0) {
      h->nvlink_active = active;
      h->nvlink_inactive = inactive;
    }
  }
}

}  // namespace

std::string FabricProblem(const HealthReadings& h) {
  if (!h.fabric_state) return "";
  switch (*h.fabric_state) {
    case kGpuFabricStateNotStarted:
      return "fabric registration not started (is nvidia-fabricmanager running?)";
    case kGpuFabricStateInProgress:
      return "fabric registration still in progress";
    case kGpuFabricStateCompleted:
      break;
    default:
      return "fabric state " + std::to_string(*h.fabric_state) + " unknown";
  }
  if (h.fabric_status != kSuccess) {
    return "fabric registration failed: " + ReturnName(h.fabric_status);
  }
  if (h.fabric_health_summary == kGpuFabricHealthSummaryUnhealthy) {
    return "fabric health summary: unhealthy";
  }
  if (h.fabric_health_summary == kGpuFabricHealthSummaryLimitedCapacity) {
    return "fabric health summary: limited capacity";
  }
  return "";
}

HealthReadings ReadHealth(const Nvml& nvml, nvmlDevice_t device, unsigned self_pid,
                          bool self_has_context) {
  HealthReadings h;
  Reader r(nvml, &h);
  const NvmlFunctions& f = nvml.fn();
  h.driver_version = nvml.DriverVersion();
  if (f.DeviceGetCount != nullptr) {
    unsigned count = 0;
    if (f.DeviceGetCount(&count) == kSuccess) h.nvml_device_count = count;
  }

  ReadMemoryHealth(f, r, device, &h);
  if (f.DeviceGetCurrentClocksEventReasons != nullptr) {
    unsigned long long mask = 0;  // NOLINT(google-runtime-int): ABI
    if (r.Ok(f.DeviceGetCurrentClocksEventReasons(device, &mask), "clocksEventReasons",
             {"hardwareSlowdown"})) {
      h.clocks_event_reasons = static_cast<std::uint64_t>(mask);
    }
  }
  auto read_uint = [&](nvmlReturn_t (*fn)(nvmlDevice_t, unsigned*), const char* what,
                       std::optional<unsigned>* slot, std::initializer_list<const char*> metrics) {
    if (fn == nullptr) return;
    unsigned value = 0;
    if (r.Ok(fn(device, &value), what, metrics)) *slot = value;
  };
  read_uint(f.DeviceGetCurrPcieLinkGeneration, "pcieLinkGeneration", &h.pcie_gen, {});
  read_uint(f.DeviceGetCurrPcieLinkWidth, "pcieLinkWidth", &h.pcie_width,
            {"pcieLinkWidthDegraded"});
  read_uint(f.DeviceGetMaxPcieLinkGeneration, "pcieMaxLinkGeneration", &h.pcie_max_gen, {});
  read_uint(f.DeviceGetMaxPcieLinkWidth, "pcieMaxLinkWidth", &h.pcie_max_width,
            {"pcieLinkWidthDegraded"});

  ReadNvLinks(f, r, device, &h);

  const std::optional<unsigned> compute =
      CountProcesses(f.DeviceGetComputeRunningProcesses, r, device, self_pid, self_has_context,
                     "computeProcesses", &h.other_process_ids, &h.self_assumed);
  bool unused = false;
  const std::optional<unsigned> graphics =
      CountProcesses(f.DeviceGetGraphicsRunningProcesses, r, device, self_pid, false,
                     "graphicsProcesses", &h.other_process_ids, &unused);
  // One list refused: the other's count alone could hide a process.
  if ((compute || graphics) && h.refused.count("otherProcessCount") == 0) {
    h.other_processes = compute.value_or(0) + graphics.value_or(0);
  }
  ReadPredictiveCounters(f, r, device, &h);
  return h;
}

std::vector<std::string> ClocksEventReasonNames(std::uint64_t mask) {
  static const std::pair<std::uint64_t, const char*> kNames[] = {
      {kClocksEventGpuIdle, "GpuIdle"},
      {kClocksEventApplicationsClocksSetting, "ApplicationsClocksSetting"},
      {kClocksEventSwPowerCap, "SwPowerCap"},
      {kClocksEventHwSlowdown, "HwSlowdown"},
      {kClocksEventSyncBoost, "SyncBoost"},
      {kClocksEventSwThermalSlowdown, "SwThermalSlowdown"},
      {kClocksEventHwThermalSlowdown, "HwThermalSlowdown"},
      {kClocksEventHwPowerBrakeSlowdown, "HwPowerBrakeSlowdown"},
      {kClocksEventDisplayClockSetting, "DisplayClockSetting"},
  };
  std::vector<std::string> names;
  std::uint64_t known = 0;
  for (const auto& [bit, name] : kNames) {
    known |= bit;
    if ((mask & bit) != 0) names.emplace_back(name);
  }
  if ((mask & ~known) != 0)
    names.push_back("Unknown(0x" + [&] {
      char buffer[24];
      std::snprintf(buffer, sizeof(buffer), "%llx",
                    static_cast<unsigned long long>(mask & ~known));  // NOLINT
      return std::string(buffer);
    }() + ")");
  return names;
}

bool IsHardwareSlowdown(std::uint64_t mask) {
  return (mask & (kClocksEventHwSlowdown | kClocksEventHwThermalSlowdown |
                  kClocksEventHwPowerBrakeSlowdown)) != 0;
}

namespace {
// Every link down while NVML shows one GPU: nothing for the links to reach, so no verdict on
// them (SKIPPED with the reason). Some links down, or all down with peers present, is counted.
bool NvLinkNotApplicable(const HealthReadings& h) {
  return h.nvlink_active && *h.nvlink_active == 0 && h.nvml_device_count == 1;
}
}  // namespace

std::map<std::string, double> HealthMetrics(const HealthReadings& h) {
  std::map<std::string, double> m;
  auto put = [&m](const char* name, const auto& value) {
    if (value) m[name] = static_cast<double>(*value);
  };
  put("eccUncorrectedVolatileCount", h.ecc_uncorrected_volatile);
  put("eccCorrectedVolatileCount", h.ecc_corrected_volatile);
  put("eccUncorrectedAggregateCount", h.ecc_uncorrected_aggregate);
  put("eccCorrectedAggregateCount", h.ecc_corrected_aggregate);
  put("remappedRowsUncorrectableCount", h.remapped_rows_uncorrectable);
  put("remappedRowsCorrectableCount", h.remapped_rows_correctable);
  put("rowRemapPending", h.remap_pending);
  put("rowRemapFailure", h.remap_failure);
  put("retiredPagesPending", h.retired_pages_pending);
  put("otherProcessCount", h.other_processes);
  if (h.nvlink_inactive && !NvLinkNotApplicable(h)) {
    m["nvlinkInactiveLinkCount"] = static_cast<double>(*h.nvlink_inactive);
  }
  if (h.xids) m["xidEventCount"] = static_cast<double>(h.xids->size());
  if (h.clocks_event_reasons) {
    m["hardwareSlowdown"] = IsHardwareSlowdown(*h.clocks_event_reasons) ? 1.0 : 0.0;
  }
  // Width, not generation: the link drops its generation when idle (read it under load in
  // h2d-d2h), but a healthy link keeps its full width.
  if (h.pcie_width && h.pcie_max_width) {
    m["pcieLinkWidthDegraded"] = *h.pcie_width < *h.pcie_max_width ? 1.0 : 0.0;
  }
  // Zero says NVML answered everything. When it refused something, the refused metrics are
  // ERROR with NVML's text (HealthMetricNotes), and so is this count: a refusal is a sandbox or
  // permission problem, not a broken GPU, so it must not FAIL a `<= 0` bound either.
  put("pcieReplayCount", h.pcie_replays);
  if (!NvLinkNotApplicable(h)) {
    put("nvlinkCrcErrorCount", h.nvlink_crc_errors);
    put("nvlinkReplayErrorCount", h.nvlink_replay_errors);
    put("nvlinkRecoveryErrorCount", h.nvlink_recovery_errors);
  }
  if (h.retired_pages_single_bit && h.retired_pages_double_bit) {
    m["retiredPagesCount"] =
        static_cast<double>(*h.retired_pages_single_bit + *h.retired_pages_double_bit);
    m["retiredPagesDoubleBitCount"] = static_cast<double>(*h.retired_pages_double_bit);
  }
  if (h.fabric_state) m["gpuFabricNotReady"] = FabricProblem(h).empty() ? 0.0 : 1.0;
  if (h.kernel_log_xids) {
    m["kernelLogXidCount"] = static_cast<double>(CountHardwareXids(*h.kernel_log_xids));
  }
  if (h.read_errors.empty()) m["nvmlReadErrorCount"] = 0;
  for (const auto& [metric, reason] : h.refused) m.erase(metric);
  return m;
}

std::map<std::string, std::string> HealthMetricNotes(const HealthReadings& h) {
  std::map<std::string, std::string> notes;
  for (const auto& [metric, reason] : h.refused) {
    notes[NotMeasuredKey(metric)] = "NVML refused the reading: " + reason;
  }
  if (!h.read_errors.empty()) {
    std::string errors;
    for (const std::string& e : h.read_errors) errors += (errors.empty() ? "" : "; ") + e;
    notes[NotMeasuredKey("nvmlReadErrorCount")] =
        std::to_string(h.read_errors.size()) + " reading(s) refused by NVML: " + errors;
  }
  if (h.refused.count("nvlinkInactiveLinkCount") == 0) {
    if (!h.nvlink_inactive) {
      notes[NotApplicableKey("nvlinkInactiveLinkCount")] =
          "this GPU has no NVLink links (NVML: not supported)";
    } else if (NvLinkNotApplicable(h)) {
      notes[NotApplicableKey("nvlinkInactiveLinkCount")] =
          "NVML shows one GPU and none of its " + std::to_string(*h.nvlink_inactive) +
          " NVLink links is active: with no peer GPU or NVSwitch fabric in reach (a one-GPU VM "
          "or pod) NVLink cannot apply; check it with every GPU of the node visible";
    }
  }
  for (const char* metric :
       {"nvlinkCrcErrorCount", "nvlinkReplayErrorCount", "nvlinkRecoveryErrorCount"}) {
    if (h.refused.count(metric) != 0) continue;
    if (!h.nvlink_crc_errors) {
      notes[NotApplicableKey(metric)] = "this GPU has no NVLink error counters (not supported)";
    } else if (NvLinkNotApplicable(h)) {
      notes[NotApplicableKey(metric)] = "NVLink cannot apply: NVML shows one GPU, no link active";
    }
  }
  if (!h.retired_pages_double_bit) {
    for (const char* metric : {"retiredPagesCount", "retiredPagesDoubleBitCount"}) {
      if (h.refused.count(metric) == 0) {
        notes[NotApplicableKey(metric)] =
            "page retirement not supported (A100 and later remap rows instead)";
      }
    }
  }
  if (!h.fabric_state && h.refused.count("gpuFabricNotReady") == 0) {
    notes[NotApplicableKey("gpuFabricNotReady")] =
        "no NVSwitch fabric (NVML: GPU fabric not supported)";
  }
  if (!h.kernel_log_xids && !h.kernel_log_note.empty()) {
    notes[NotApplicableKey("kernelLogXidCount")] = "kernel log not readable: " + h.kernel_log_note;
  }
  if (!h.xids && h.refused.count("xidEventCount") == 0) {
    notes[NotMeasuredKey("xidEventCount")] = "XID events not watched (NVML events unavailable)";
  }
  return notes;
}

std::map<std::string, std::string> HealthDetails(const HealthReadings& h) {
  std::map<std::string, std::string> d;
  const std::string kUnsupported = "not supported";
  auto opt = [&](const auto& value) -> std::string {
    return value ? std::to_string(*value) : kUnsupported;
  };
  d["driverVersion"] = h.driver_version.empty() ? "unknown" : h.driver_version;
  d["eccMode"] = h.ecc_enabled ? (*h.ecc_enabled ? "enabled" : "disabled") : kUnsupported;
  d["remappedRows"] = h.remapped_rows_uncorrectable
                          ? "uncorrectable " + opt(h.remapped_rows_uncorrectable) +
                                ", correctable " + opt(h.remapped_rows_correctable) + ", pending " +
                                (*h.remap_pending ? "yes" : "no") + ", failure " +
                                (*h.remap_failure ? "yes" : "no")
                          : kUnsupported;
  d["retiredPagesPending"] =
      h.retired_pages_pending ? (*h.retired_pages_pending ? "yes" : "no") : kUnsupported;
  d["pcieLink"] = "gen " + opt(h.pcie_gen) + " x" + opt(h.pcie_width) + " (max gen " +
                  opt(h.pcie_max_gen) + " x" + opt(h.pcie_max_width) +
                  "; generation drops when idle)";
  d["nvlink"] = h.nvlink_active ? std::to_string(*h.nvlink_active) + " active, " +
                                      std::to_string(*h.nvlink_inactive) + " inactive"
                                : kUnsupported;
  if (h.clocks_event_reasons) {
    std::string names;
    for (const std::string& name : ClocksEventReasonNames(*h.clocks_event_reasons)) {
      names += (names.empty() ? "" : ", ") + name;
    }
    d["clocksEventReasons"] = names.empty() ? "none" : names;
  } else {
    d["clocksEventReasons"] = kUnsupported;
  }
  if (h.xids) {
    std::string xids;
    for (std::uint64_t xid : *h.xids) xids += (xids.empty() ? "" : ", ") + std::to_string(xid);
    d["xidEvents"] = xids.empty() ? "none" : xids;
  } else {
    d["xidEvents"] = "not watched (NVML events unavailable)";
  }
  std::string pids;
  for (unsigned pid : h.other_process_ids) {
    pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
  }
  d["otherProcesses"] = h.other_processes ? (pids.empty() ? "none" : pids) : kUnsupported;
  if (h.self_assumed) {
    d["otherProcesses"] +=
        " (PIDs are not in this namespace: one compute process, not "
        "listed above by number, was taken to be this worker)";
  }
  if (!h.read_errors.empty()) {
    std::string errors;
    for (const std::string& e : h.read_errors) errors += (errors.empty() ? "" : "; ") + e;
    d["nvmlReadErrors"] = errors;
  }
  d["pcieReplays"] = opt(h.pcie_replays) + (h.pcie_replays ? " since driver load" : "");
  if (h.nvlink_crc_errors) {
    std::string links;
    for (const std::string& link : h.nvlink_error_links)
      links += (links.empty() ? "" : "; ") + link;
    d["nvlinkErrors"] = links.empty() ? "none" : links;
  }
  if (h.retired_pages_double_bit) {
    d["retiredPages"] = "double-bit " + std::to_string(*h.retired_pages_double_bit) +
                        ", multiple single-bit " + std::to_string(*h.retired_pages_single_bit);
  }
  if (h.fabric_state) {
    const std::string problem = FabricProblem(h);
    d["gpuFabric"] = problem.empty() ? "registered, healthy" : problem;
  }
  if (h.kernel_log_xids) {
    std::string xids;
    for (std::uint64_t xid : *h.kernel_log_xids) {
      xids += (xids.empty() ? "" : ", ") + std::to_string(xid) +
              (IsHardwareXid(xid) ? " (hardware)" : "");
    }
    d["kernelLogXids"] = xids.empty() ? "none" : xids;
  }
  return d;
}

Telemetry ReadTelemetry(const Nvml& nvml, nvmlDevice_t device) {
  const NvmlFunctions& f = nvml.fn();
  Telemetry t;
  unsigned value = 0;
  if (f.DeviceGetClockInfo != nullptr && f.DeviceGetClockInfo(device, kClockSm, &value) == 0) {
    t.sm_clock_mhz = value;
  }
  if (f.DeviceGetClockInfo != nullptr && f.DeviceGetClockInfo(device, kClockMem, &value) == 0) {
    t.memory_clock_mhz = value;
  }
  if (f.DeviceGetTemperature != nullptr &&
      f.DeviceGetTemperature(device, kTemperatureGpu, &value) == 0) {
    t.temperature_c = value;
  }
  if (f.DeviceGetPowerUsage != nullptr && f.DeviceGetPowerUsage(device, &value) == 0) {
    t.power_w = value / 1000.0;
  }
  unsigned long long mask = 0;  // NOLINT(google-runtime-int): ABI
  if (f.DeviceGetCurrentClocksEventReasons != nullptr &&
      f.DeviceGetCurrentClocksEventReasons(device, &mask) == 0) {
    t.clocks_event_reasons = static_cast<std::uint64_t>(mask);
  }
  if (f.DeviceGetCurrPcieLinkGeneration != nullptr &&
      f.DeviceGetCurrPcieLinkGeneration(device, &value) == 0) {
    t.pcie_gen = value;
  }
  if (f.DeviceGetCurrPcieLinkWidth != nullptr &&
      f.DeviceGetCurrPcieLinkWidth(device, &value) == 0) {
    t.pcie_width = value;
  }
  return t;
}

}  // namespace perfgate::kernels::nvml
