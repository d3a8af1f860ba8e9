// health: GPU health counters through NVML (dlopen of libnvidia-ml.so.1), joined to the CUDA
// device by PCI bus id. Each sample reads:
//   ECC errors, volatile and aggregate, corrected and uncorrected (counts)
//   row remapping: correctable/uncorrectable rows, pending, failure (A100 and later)
//   retired pages pending (before A100; NOT_SUPPORTED after, then left out, not zero)
//   clock-event (throttle) reasons: hardwareSlowdown = HW slowdown, HW thermal, power brake
//   PCIe width against the maximum (the generation drops when idle; h2d-d2h reads it loaded)
//   NVLink links inactive, other processes on the GPU, XID events since Prepare
//   counters that predict trouble: PCIe replays, NVLink CRC/replay/recovery errors per link,
//   retired pages by cause, NVSwitch fabric registration, hardware XIDs in the kernel log
//   from before the run (where /dev/kmsg is readable; SKIPPED with the reason otherwise)
// Thresholds in profiles turn these into verdicts (e.g. eccUncorrectedVolatileCount <= 0).
// Without NVML the test cannot say the GPU is healthy: Unavailable (ERROR where GPUs are
// expected). A metric that cannot apply here (NVLink on a GPU without links, or with every
// link down where NVML shows one GPU) is left out with a notApplicable.<metric> detail, and
// its threshold is SKIPPED with that reason. A reading NVML refuses other than with
// NOT_SUPPORTED leaves its metrics (and nvmlReadErrorCount) out with a notMeasured.<metric>
// detail: their thresholds are ERROR with NVML's text, so "could not read" neither passes as
// "healthy" nor fails the GPU.
#include <unistd.h>

#include <memory>
#include <mutex>
#include <string>

#include "kernels/cuda/test_support.h"
#include "kernels/nvml/kernel_log.h"
#include "kernels/nvml/nvml.h"
#include "kernels/nvml/readings.h"
#include "kernels/test_factories.h"
#include "kernels/unmeasured.h"

namespace perfgate::kernels {
namespace {

class HealthRun final : public TestRun {
 public:
  HealthRun(std::shared_ptr<nvml::Nvml> nvml, nvml::nvmlDevice_t device,
            std::optional<nvml::XidWatch> xids, Result<std::vector<std::uint64_t>> log_xids,
            std::map<std::string, std::string> details)
      : nvml_(std::move(nvml)),
        device_(device),
        xids_(std::move(xids)),
        log_xids_(std::move(log_xids)),
        details_(std::move(details)) {
    if (auto it = details_.find("xidWatch"); it != details_.end()) {
      xid_watch_error_ = "XID events cannot be watched: " + it->second;
    }
  }

  Result<Sample> RunSample() override {
    // Prepare selected the device (cudaSetDevice creates the primary context since CUDA 12),
    // so this process is among the GPU's processes.
    nvml::HealthReadings readings =
        nvml::ReadHealth(*nvml_, device_, static_cast<unsigned>(getpid()), true);
    if (xids_) {
      readings.xids = xids_->Poll();
      if (!xids_->error().empty()) {
        readings.refused.emplace("xidEventCount", xids_->error());
        readings.read_errors.push_back(xids_->error());
      }
    } else {
      readings.refused.emplace("xidEventCount", xid_watch_error_);
    }
    if (log_xids_.ok()) {
      readings.kernel_log_xids = *log_xids_;
    } else {
      readings.kernel_log_note = log_xids_.status().message();
    }
    Sample sample = nvml::HealthMetrics(readings);
    std::lock_guard<std::mutex> lock(mu_);
    // Notes describe this sample only: a reading refused once and answered later is measured.
    std::erase_if(details_, [](const auto& entry) {
      return entry.first.starts_with(kNotApplicablePrefix) ||
             entry.first.starts_with(kNotMeasuredPrefix);
    });
    for (auto& [key, value] : nvml::HealthDetails(readings)) details_[key] = value;
    for (auto& [key, value] : nvml::HealthMetricNotes(readings)) details_[key] = value;
    return sample;
  }

  std::map<std::string, std::string> Details() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return details_;
  }

 private:
  std::shared_ptr<nvml::Nvml> nvml_;
  nvml::nvmlDevice_t device_;
  std::optional<nvml::XidWatch> xids_;
  // XIDs of this GPU in the kernel log when the test started (before its own load).
  Result<std::vector<std::uint64_t>> log_xids_;
  std::string xid_watch_error_ = "XID events cannot be watched";
  mutable std::mutex mu_;
  std::map<std::string, std::string> details_;
};

class HealthTest final : public Test {
 public:
  HealthTest() {
    info_.type = "health";
    info_.description =
        "GPU health through NVML: ECC, remapped rows, retired pages, throttle reasons, PCIe "
        "width, NVLink state, XID events during the run, other processes";
    info_.scope = Scope::kGpu;
    auto count = [](const char* name, const char* description) {
      return gpu::Metric(name, "count", false, description);
    };
    info_.metrics = {
        count("eccUncorrectedVolatileCount", "uncorrected ECC errors since driver load"),
        count("eccCorrectedVolatileCount", "corrected ECC errors since driver load"),
        count("eccUncorrectedAggregateCount", "uncorrected ECC errors, lifetime"),
        count("eccCorrectedAggregateCount", "corrected ECC errors, lifetime"),
        count("remappedRowsUncorrectableCount", "rows remapped for uncorrectable errors"),
        count("remappedRowsCorrectableCount", "rows remapped for correctable errors"),
        gpu::Metric("rowRemapPending", "bool", false, "a remap waits for a GPU reset"),
        gpu::Metric("rowRemapFailure", "bool", false, "a remap failed (RMA candidate)"),
        gpu::Metric("retiredPagesPending", "bool", false,
                    "page retirement waits for a reset (pre-A100 GPUs)"),
        count("xidEventCount", "XID critical errors seen since the test started"),
        count("otherProcessCount", "compute/graphics processes on the GPU besides this one"),
        count("nvlinkInactiveLinkCount", "NVLink links present but not active"),
        gpu::Metric("hardwareSlowdown", "bool", false,
                    "HW slowdown, HW thermal or power-brake clock event active"),
        gpu::Metric("pcieLinkWidthDegraded", "bool", false, "PCIe link narrower than its maximum"),
        count("nvmlReadErrorCount", "readings NVML refused (other than not supported)"),
        count("pcieReplayCount", "PCIe TLPs replayed after a link-level error, since driver load"),
        count("nvlinkCrcErrorCount", "NVLink flit CRC errors, all links, since driver load"),
        count("nvlinkReplayErrorCount", "NVLink data-link replays, all links, since driver load"),
        count("nvlinkRecoveryErrorCount",
              "NVLink link recoveries (link retrained), all links, since driver load"),
        count("retiredPagesCount", "retired framebuffer pages, any cause (pre-A100 GPUs)"),
        count("retiredPagesDoubleBitCount",
              "pages retired for double-bit ECC errors (pre-A100 GPUs)"),
        gpu::Metric("gpuFabricNotReady", "bool", false,
                    "NVSwitch fabric registration not completed, failed or unhealthy"),
        count("kernelLogXidCount",
              "hardware XIDs (ECC, NVLink, fallen off the bus, GSP) for this GPU in the kernel "
              "log before the run"),
    };
  }

  const TestInfo& Info() const override { return info_; }

  // A few dozen NVML queries.
  double SampleSeconds(const Params& /*params*/, int /*gpus*/) const override { return 0.05; }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& /*params*/,
                                           const Target& target) const override {
    ASSIGN_OR_RETURN(const int ordinal, gpu::SingleGpu(target));
    ASSIGN_OR_RETURN(const cuda::CudaDeviceFacts facts, cuda::QueryCudaDevice(ordinal));
    ASSIGN_OR_RETURN(std::shared_ptr<nvml::Nvml> nvml, nvml::SharedNvml());
    auto device = nvml->DeviceByPciBusId(facts.pci_bus_id);
    if (!device.ok()) return Unavailable("health: " + device.status().message());
    std::map<std::string, std::string> details;
    details["device"] = facts.name + " (" + facts.pci_bus_id + ", " + facts.uuid + ")";
    std::optional<nvml::XidWatch> xids;
    if (auto watch = nvml::XidWatch::Start(nvml, *device); watch.ok()) {
      xids.emplace(std::move(watch).value());
    } else {
      details["xidWatch"] = watch.status().message();
    }
    Result<std::vector<std::uint64_t>> log_xids = Unavailable("not read");
    if (auto log = nvml::ReadKernelLog(); log.ok()) {
      log_xids = nvml::XidsForDevice(*log, facts.pci_bus_id);
    } else {
      log_xids = log.status();
    }
    return std::unique_ptr<TestRun>(std::make_unique<HealthRun>(
        std::move(nvml), *device, std::move(xids), std::move(log_xids), std::move(details)));
  }

 private:
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakeHealthTest() { return std::make_unique<HealthTest>(); }

}  // namespace perfgate::kernels
