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
  // GPUs NVML shows this process (nvmlDeviceGetCount): one in a one-GPU VM or a one-GPU pod,
  // where no NVLink link has a peer to come up with. 0 when unknown.
  unsigned nvml_device_count = 0;
  // "eccErrors: NVML_ERROR_NO_PERMISSION (...)" for readings that failed other than with
  // NOT_SUPPORTED: a failure to read is not a healthy reading.
  std::vector<std::string> read_errors;
  // Metric -> the refusal behind its missing value ("computeProcesses: NVML_ERROR_NO_PERMISSION
  // (...)"). A metric listed here is never reported, not even partly (one of two process
  // lists, some of the links): a refused reading must not pass as a zero.
  std::map<std::string, std::string> refused;

  // Counters that predict trouble. PCIe replays: TLPs the link layer resent after a bad CRC,
  // since driver load.
  std::optional<std::uint64_t> pcie_replays;
  // NVLink data-link error counters summed over the GPU's links (since driver load or the
  // last reset), and the links with any, as "link 3: crc 12, replay 0, recovery 1".
  std::optional<std::uint64_t> nvlink_crc_errors;
  std::optional<std::uint64_t> nvlink_replay_errors;
  std::optional<std::uint64_t> nvlink_recovery_errors;
  std::vector<std::string> nvlink_error_links;
  // Retired pages by cause (before A100; NOT_SUPPORTED after, then empty).
  std::optional<unsigned> retired_pages_single_bit;
  std::optional<unsigned> retired_pages_double_bit;
  // NVSwitch fabric registration (Hopper and later on NVSwitch systems; empty elsewhere).
  std::optional<unsigned char> fabric_state;
  nvmlReturn_t fabric_status = kSuccess;
  unsigned char fabric_health_summary = kGpuFabricHealthSummaryNotSupported;
  // XIDs for this GPU found in the kernel log before the run; empty when the log is not
  // readable (kernel_log_note says why).
  std::optional<std::vector<std::uint64_t>> kernel_log_xids;
  std::string kernel_log_note;
};

// The GPU's fabric registration is not done or not healthy: "state in progress", "status
// NVML_ERROR_... ", "health summary unhealthy". "" when ready (or not an NVSwitch GPU).
std::string FabricProblem(const HealthReadings& h);

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
// Reasons that mean the hardware protected itself (HW slowdown, HW thermal, power brake): a
// healthy GPU under acceptance load must not show them. Idle, power cap, application clocks and
// SW thermal slowdown (the driver trimming clocks near its temperature target, which a hot but
// healthy H200 shows under sustained load) are normal operation; they stay in the details.
bool IsHardwareSlowdown(std::uint64_t mask);

// Metric values (see health.cc for the list): only readings that exist are present.
std::map<std::string, double> HealthMetrics(const HealthReadings& h);
// Why a declared metric is absent, as Details() entries the runner reads (kernels/unmeasured.h):
// "notApplicable.<metric>" (SKIPPED: NVLink on a GPU without links, or with every link down
// where NVML shows one GPU) and "notMeasured.<metric>" (ERROR: NVML refused the reading).
std::map<std::string, std::string> HealthMetricNotes(const HealthReadings& h);
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
