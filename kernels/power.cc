// power: holds each GPU at its power limit with back-to-back bf16 GEMMs (8192^3, cuBLASLt) for
// durationSeconds, as DCGM's targeted power test does, while sampling NVML every
// sampleIntervalMs: power, SM clock, temperature and clock-event (throttle) reasons. After a
// warm-up it reports the median SM clock sustained under the cap (and as a share of the GPU's
// maximum), the median power against the limit, the hottest sample, and the share of samples
// in each throttle reason. A GPU whose sustained clock is below minSmClockFraction of its
// maximum FAILs (kDataLoss) with the reasons named (kernels/power_logic.h).
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kernels/cuda/gemm.h"
#include "kernels/cuda/test_support.h"
#include "kernels/nvml/nvml.h"
#include "kernels/nvml/readings.h"
#include "kernels/power_logic.h"
#include "kernels/test_factories.h"

namespace perfgate::kernels {
namespace {

class PowerRun final : public TestRun {
 public:
  PowerRun(std::unique_ptr<cuda::GemmRunner> gemm, std::shared_ptr<nvml::Nvml> nvml,
           nvml::nvmlDevice_t device, const Params& params, double limit_w, double max_clock_mhz,
           std::map<std::string, std::string> details)
      : gemm_(std::move(gemm)),
        nvml_(std::move(nvml)),
        device_(device),
        duration_seconds_(params.Double("durationSeconds")),
        warmup_seconds_(params.Double("warmupSeconds")),
        interval_ms_(params.Int("sampleIntervalMs")),
        min_fraction_(params.Double("minSmClockFraction")),
        limit_w_(limit_w),
        max_clock_mhz_(max_clock_mhz),
        details_(std::move(details)) {}

  Result<Sample> RunSample() override {
    std::atomic<bool> stop{false};
    Status load_status = Status::Ok();
    // The load: matmuls in batches of 4 (about 10 ms on an H100) until told to stop.
    std::thread load([&] {
      while (!stop.load()) {
        auto seconds = gemm_->Time(4);
        if (!seconds.ok()) {
          load_status = seconds.status();
          return;
        }
      }
    });
    std::vector<power::PowerSample> timeline;
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms_));
      const double t =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (t > duration_seconds_) break;
      const nvml::Telemetry tel = nvml::ReadTelemetry(*nvml_, device_);
      timeline.push_back(
          {t, tel.power_w, tel.sm_clock_mhz, tel.temperature_c, tel.clocks_event_reasons});
    }
    stop.store(true);
    load.join();
    RETURN_IF_ERROR(load_status);
    const power::PowerAnalysis a = power::AnalyzePowerTimeline(timeline, limit_w_, warmup_seconds_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      details_["clockEventReasons"] = power::ReasonSummary(a);
      details_["samples"] = std::to_string(a.samples) + " after the warm-up";
    }
    RETURN_IF_ERROR(power::CheckPower(a, max_clock_mhz_, limit_w_, min_fraction_));
    Sample sample{{"sustainedSmClockMhz", a.sustained_sm_clock_mhz},
                  {"maxTemperatureC", a.max_temperature_c}};
    if (max_clock_mhz_ > 0) sample["smClockFraction"] = a.sustained_sm_clock_mhz / max_clock_mhz_;
    if (a.power_to_limit > 0) sample["powerToLimitRatio"] = a.power_to_limit;
    auto percent = [&a](const char* reason) {
      auto it = a.reason_percent.find(reason);
      return it == a.reason_percent.end() ? 0.0 : it->second;
    };
    sample["swPowerCapPercent"] = percent("SwPowerCap");
    sample["swThermalSlowdownPercent"] = percent("SwThermalSlowdown");
    sample["hwSlowdownPercent"] = percent("HwSlowdown");
    sample["hwThermalSlowdownPercent"] = percent("HwThermalSlowdown");
    sample["hwPowerBrakePercent"] = percent("HwPowerBrakeSlowdown");
    return sample;
  }

  std::map<std::string, std::string> Details() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return details_;
  }

 private:
  std::unique_ptr<cuda::GemmRunner> gemm_;
  std::shared_ptr<nvml::Nvml> nvml_;
  nvml::nvmlDevice_t device_;
  double duration_seconds_;
  double warmup_seconds_;
  std::int64_t interval_ms_;
  double min_fraction_;
  double limit_w_;
  double max_clock_mhz_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> details_;
};

class PowerTest final : public Test {
 public:
  PowerTest() {
    info_.type = "power";
    info_.description =
        "sustained bf16 GEMM load at the power limit while sampling power, SM clock, "
        "temperature and throttle reasons; fails a clock well below its bound, naming the "
        "reasons";
    info_.scope = Scope::kGpu;
    info_.params = {
        DoubleParam("durationSeconds", "30", "seconds", "load per sample", 2, 3600),
        DoubleParam("warmupSeconds", "5", "seconds", "first part of the load left out", 0, 600),
        IntParam("sampleIntervalMs", 100, "ms", "NVML sampling interval", 10, 10000),
        DoubleParam("minSmClockFraction", "0", "",
                    "lowest sustained SM clock as a share of the GPU's maximum; 0: no bound", 0, 1),
    };
    auto m = [](const char* name, const char* unit, bool higher, const char* description) {
      return gpu::Metric(name, unit, higher, description);
    };
    info_.metrics = {
        m("sustainedSmClockMhz", "MHz", true, "median SM clock under load, after the warm-up"),
        m("smClockFraction", "ratio", true, "sustained SM clock / the GPU's maximum SM clock"),
        m("powerToLimitRatio", "ratio", true, "median power / enforced power limit"),
        m("maxTemperatureC", "C", false, "hottest sample"),
        m("swPowerCapPercent", "%", false, "share of samples held by the power cap"),
        m("swThermalSlowdownPercent", "%", false, "share of samples in SW thermal slowdown"),
        m("hwSlowdownPercent", "%", false, "share of samples in HW slowdown"),
        m("hwThermalSlowdownPercent", "%", false, "share of samples in HW thermal slowdown"),
        m("hwPowerBrakePercent", "%", false, "share of samples in HW power brake"),
    };
  }

  const TestInfo& Info() const override { return info_; }

  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    return params.Double("durationSeconds");
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& target) const override {
    ASSIGN_OR_RETURN(const int ordinal, gpu::SingleGpu(target));
    ASSIGN_OR_RETURN(const cuda::CudaDeviceFacts facts, cuda::QueryCudaDevice(ordinal));
    ASSIGN_OR_RETURN(std::shared_ptr<nvml::Nvml> nvml, nvml::SharedNvml());
    auto device = nvml->DeviceByPciBusId(facts.pci_bus_id);
    if (!device.ok()) return Unavailable("power: " + device.status().message());
    const nvml::NvmlFunctions& f = nvml->fn();
    unsigned value = 0;
    double limit_w = 0;
    double max_clock_mhz = 0;
    if (f.DeviceGetPowerManagementLimit != nullptr &&
        f.DeviceGetPowerManagementLimit(*device, &value) == nvml::kSuccess) {
      limit_w = value / 1000.0;
    }
    if (f.DeviceGetMaxClockInfo != nullptr &&
        f.DeviceGetMaxClockInfo(*device, nvml::kClockSm, &value) == nvml::kSuccess) {
      max_clock_mhz = value;
    }
    cuda::GemmConfig config;
    config.device = ordinal;
    config.dtype = gpu::GemmDtype::kBf16;
    ASSIGN_OR_RETURN(std::unique_ptr<cuda::GemmRunner> gemm, cuda::CreateGemmRunner(config));
    std::map<std::string, std::string> details;
    details["device"] = facts.name + " (" + facts.pci_bus_id + ")";
    details["load"] = "bf16 GEMM 8192^3: " + gemm->Description();
    details["powerLimit"] = limit_w > 0 ? gpu::FormatFixed(limit_w, 0) + " W" : "unknown";
    details["maxSmClock"] =
        max_clock_mhz > 0 ? gpu::FormatFixed(max_clock_mhz, 0) + " MHz" : "unknown";
    return std::unique_ptr<TestRun>(std::make_unique<PowerRun>(std::move(gemm), std::move(nvml),
                                                               *device, params, limit_w,
                                                               max_clock_mhz, std::move(details)));
  }

 private:
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakePowerTest() { return std::make_unique<PowerTest>(); }

}  // namespace perfgate::kernels
