// Health and telemetry readings through NVML, decoded into plain values. Readings that the GPU
// does not support (retired pages on A100 and later, NVLink on PCIe cards) stay empty and are
// reported as "not supported", never as zero.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/nvml/nvml.h"

namespace perfgate::kernels::nvml {

struct HealthReadings {
  std::optional<std::uint64_t> ecc_corrected_volatile;
  std::optional<std::uint64_t> ecc_uncorrected_volatile;
  std::optional<std::uint64_t> ecc_corrected_aggregate;
  std::optional<std::uint64_t> ecc_uncorrected_aggregate;
  std::optional<bool> ecc_enabled;
  // Row remapping (A100 and later).
  std::optional<unsigned> remapped_rows_correctable;
  std::optional<unsigned> remapped_rows_uncorrectable;
  std::optional<bool> remap_pending;
  std::optional<bool> remap_failure;
  // Page retirement (before A100; NOT_SUPPORTED after).
  std::optional<bool> retired_pages_pending;
  std::optional<std::uint64_t> clocks_event_reasons;
  std::optional<unsigned> pcie_gen;
  std::optional<unsigned> pcie_width;
  std::optional<unsigned> pcie_max_gen;
  std::optional<unsigned> pcie_max_width;
  // Links that exist on this GPU, by state; both empty when NVLink is not supported.
  std::optional<unsigned> nvlink_active;
  std::optional<unsigned> nvlink_inactive;
  // Compute and graphics processes other than this one.
  std::optional<unsigned> other_processes;
  std::vector<unsigned> other_process_ids;
  // Our PID was not among NVML's (PID namespace): one compute process was counted as ours.
  bool self_assumed = false;
  // XIDs during the run, from XidWatch; empty optional when events could not be registered.
  std::optional<std::vector<std::uint64_t>> xids;
  std::string driver_version;
  // "eccErrors: NVML_ERROR_NO_PERMISSION (...)" for readings that failed other than with
  // NOT_SUPPORTED: a failure to read is not a healthy reading.
  std::vector<std::string> read_errors;
};

// Reads every health counter of `device`. Never fails as a whole: unsupported readings stay
// empty, other failures are listed in read_errors. Blocking (a few ms); thread-safe.
// Our own process is left out of other_processes: by `self_pid` where NVML reports PIDs in our
// namespace; in a container NVML reports host PIDs, so when `self_has_context` (this process
// holds a CUDA context on the device, hence is listed) and no entry matches, one compute
// process is taken to be ours and Details say so.
HealthReadings ReadHealth(const Nvml& nvml, nvmlDevice_t device, unsigned self_pid,
                          bool self_has_context);

// The names of the set bits ("HwSlowdown", "SwPowerCap", ...), in bit order.
std::vector<std::string> ClocksEventReasonNames(std::uint64_t mask);
// Reasons that mean the hardware protected itself (HW slowdown, thermal, power brake, SW
// thermal): a healthy GPU under acceptance load must not show them. Idle, power cap and
// application clocks are normal operation.
bool IsHardwareSlowdown(std::uint64_t mask);

// Metric values (see health.cc for the list): only readings that exist are present.
std::map<std::string, double> HealthMetrics(const HealthReadings& h);
// Report lines: driver, ECC mode, PCIe link, NVLink, throttle reasons, XIDs, other PIDs,
// "not supported" entries, read errors.
std::map<std::string, std::string> HealthDetails(const HealthReadings& h);

// Telemetry sampled while a load runs (burn, copies).
struct Telemetry {
  std::optional<double> sm_clock_mhz;
  std::optional<double> memory_clock_mhz;
  std::optional<double> temperature_c;
  std::optional<double> power_w;
  std::optional<std::uint64_t> clocks_event_reasons;
  std::optional<unsigned> pcie_gen;
  std::optional<unsigned> pcie_width;
};
// Blocking (about a millisecond); thread-safe.
Telemetry ReadTelemetry(const Nvml& nvml, nvmlDevice_t device);

}  // namespace perfgate::kernels::nvml
