// burn: sustained GEMM load with result checking, in the manner of gpu-burn. One sample is a
// window of `windowSeconds` (the spec's sampling sets how many windows: quick profiles use a
// few, full ones more). Within a window the GPU computes the same product into
// `outputBuffers` matrices over and over; after each pass every output element is compared
// with the first result (taken at set-up and itself checked against a double-precision
// reference), by one kernel that reads the first result once for all buffers. Passes are
// queued back to back, about 250 ms of them per host wait, so the GPU idles only for the
// comparisons. A deterministic algorithm repeats its bits, so any element off by more than two
// output ulps is a computation error: counted in computeErrorCount, which the profile bounds
// (<= 0: any error FAILs the GPU), and named per window in Details.
//   tflops            = 2*m*n*k * matmuls in the window / GPU seconds / 1e12
//   tflopsDropPercent = (first window's tflops - this window's) / first window's * 100
// Clocks, temperature, power and clock-event (throttle) reasons are sampled through NVML at
// most every 250 ms; a window reports their mean (clocks, power), maximum (temperature) and
// whether any reading showed a hardware slowdown.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>

#include "kernels/burn_logic.h"
#include "kernels/cuda/formulas.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/test_support.h"
#include "kernels/nvml/nvml.h"
#include "kernels/nvml/readings.h"
#include "kernels/test_factories.h"
#include "kernels/unmeasured.h"

namespace perfgate::kernels {
namespace {

using Clock = std::chrono::steady_clock;

// What NVML showed during one window: the mean SM clock and power, the hottest reading, and
// every clock event reason seen.
struct WindowTelemetry {
  double clock_sum = 0;
  double power_sum = 0;
  double temperature_max = 0;
  int clock_n = 0;
  int power_n = 0;
  int temperature_n = 0;
  std::uint64_t reasons = 0;
  bool reasons_read = false;

  void Add(const nvml::Telemetry& t) {
    if (t.sm_clock_mhz) {
      clock_sum += *t.sm_clock_mhz;
      ++clock_n;
    }
    if (t.power_w) {
      power_sum += *t.power_w;
      ++power_n;
    }
    if (t.temperature_c) {
      temperature_max = std::max(temperature_max, *t.temperature_c);
      ++temperature_n;
    }
    if (t.clocks_event_reasons) {
      reasons |= *t.clocks_event_reasons;
      reasons_read = true;
    }
  }
  void Fill(Sample* sample) const {
    if (clock_n > 0) (*sample)["smClockMHz"] = clock_sum / clock_n;
    if (power_n > 0) (*sample)["powerW"] = power_sum / power_n;
    if (temperature_n > 0) (*sample)["temperatureC"] = temperature_max;
    if (reasons_read) (*sample)["hardwareSlowdown"] = nvml::IsHardwareSlowdown(reasons) ? 1 : 0;
  }
};

class BurnRun final : public TestRun {
 public:
  BurnRun(std::unique_ptr<cuda::GemmRunner> runner, gpu::GemmDtypeInfo dtype, std::int64_t m,
          std::int64_t n, std::int64_t k, double window_seconds, std::shared_ptr<nvml::Nvml> nvml,
          nvml::nvmlDevice_t nvml_device, std::map<std::string, std::string> details)
      : runner_(std::move(runner)),
        dtype_(dtype),
        flops_per_matmul_(gpu::GemmFlops(m, n, k)),
        elements_(m * n),
        window_seconds_(window_seconds),
        nvml_(std::move(nvml)),
        nvml_device_(nvml_device),
        details_(std::move(details)) {}

  Result<Sample> RunSample() override {
    const Clock::time_point start = Clock::now();
    const auto window = std::chrono::duration<double>(window_seconds_);
    double gpu_seconds = 0;
    std::int64_t matmuls = 0;
    std::int64_t wrong = 0;
    Clock::time_point last_probe = start - std::chrono::seconds(1);
    WindowTelemetry seen;
    const double tolerance = gpu::BurnRelativeTolerance(dtype_);
    double busy_seconds = 0;
    int passes = 1;
    while (Clock::now() - start < window) {
      // Passes queued back to back, the host waiting once per call: the GPU idles only for
      // the comparisons and one gap per call, not for a round trip after every pass.
      const Clock::time_point call_start = Clock::now();
      ASSIGN_OR_RETURN(const cuda::CheckedPasses done,
                       runner_->RunCheckedPasses(passes, tolerance));
      gpu_seconds += done.matmul_seconds;
      busy_seconds += done.total_seconds;
      matmuls += done.matmuls;
      wrong += done.wrong;
      const double per_pass = Seconds(Clock::now() - call_start) / passes;
      passes = gpu::BurnPassesPerCall(per_pass, window_seconds_ - Seconds(Clock::now() - start),
                                      kCallSeconds);
      if (nvml_ != nullptr && Clock::now() - last_probe >= std::chrono::milliseconds(250)) {
        last_probe = Clock::now();
        seen.Add(nvml::ReadTelemetry(*nvml_, nvml_device_));
      }
    }
    const double tflops =
        gpu::Tflops(flops_per_matmul_ * static_cast<double>(matmuls), gpu_seconds);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++windows_;
      total_wrong_ += wrong;
      if (wrong > 0) {
        counted_ += (counted_.empty() ? "" : "; ") + std::string("window ") +
                    std::to_string(windows_) + ": " + std::to_string(wrong) + " of " +
                    std::to_string(elements_ * matmuls) +
                    " output elements differ from the first result";
      }
      if (!first_tflops_) first_tflops_ = tflops;
      details_["window " + std::to_string(windows_)] =
          gpu::FormatFixed(tflops, 1) + " TFLOP/s, " + std::to_string(matmuls) + " matmuls, " +
          std::to_string(wrong) + " wrong elements, matmuls " +
          gpu::FormatFixed(busy_seconds > 0 ? 100 * gpu_seconds / busy_seconds : 0, 1) +
          "% of the GPU time (the rest: comparisons)" +
          (seen.reasons_read ? ", clock events: " + JoinReasons(seen.reasons) : "");
    }
    Sample sample;
    sample["tflops"] = tflops;
    sample["tflopsDropPercent"] =
        *first_tflops_ > 0 ? (*first_tflops_ - tflops) / *first_tflops_ * 100.0 : 0.0;
    sample["computeErrorCount"] = static_cast<double>(wrong);
    seen.Fill(&sample);
    return sample;
  }

  std::map<std::string, std::string> Details() const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto d = details_;
    d["computeErrors"] = std::to_string(total_wrong_) + " wrong elements over " +
                         std::to_string(windows_) + " windows";
    if (!counted_.empty()) {
      d[CountedKey("computeErrorCount")] =
          counted_ + " (tolerance " +
          gpu::FormatFixed(gpu::BurnRelativeTolerance(dtype_) * 100, 3) + "% of max(|x|, 1))";
    }
    return d;
  }

 private:
  // Work queued per host wait: short enough for NVML's 250 ms cadence and the window's end.
  static constexpr double kCallSeconds = 0.25;

  static double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

  static std::string JoinReasons(std::uint64_t mask) {
    std::string out;
    for (const std::string& name : nvml::ClocksEventReasonNames(mask)) {
      out += (out.empty() ? "" : "|") + name;
    }
    return out.empty() ? "none" : out;
  }

  std::unique_ptr<cuda::GemmRunner> runner_;
  gpu::GemmDtypeInfo dtype_;
  double flops_per_matmul_;
  std::int64_t elements_;
  double window_seconds_;
  std::shared_ptr<nvml::Nvml> nvml_;
  nvml::nvmlDevice_t nvml_device_ = nullptr;
  std::optional<double> first_tflops_;
  mutable std::mutex mu_;
  int windows_ = 0;
  std::int64_t total_wrong_ = 0;
  std::string counted_;  // the windows with wrong elements, for Details
  std::map<std::string, std::string> details_;
};

class BurnTest final : public Test {
 public:
  BurnTest() {
    info_.type = "burn";
    info_.description =
        "sustained GEMM load; every result compared with the first (gpu-burn style); "
        "throughput over time, clocks, temperature, power and throttle reasons via NVML";
    info_.scope = Scope::kGpu;
    std::vector<std::string> dtypes;
    for (const auto& d : gpu::GemmDtypes()) dtypes.emplace_back(d.name);
    info_.params = {
        ChoiceParam("dtype", ParamType::kString, "bf16", "matmul input type", dtypes),
        IntParam("m", 8192, "", "rows of C", 256, 65536),
        IntParam("n", 8192, "", "columns of C", 256, 65536),
        IntParam("k", 8192, "", "inner dimension", 256, 65536),
        DoubleParam("windowSeconds", "10", "seconds", "length of one sample", 0.5, 3600),
        IntParam("outputBuffers", 8, "",
                 "output matrices written in turn and all compared after each pass", 1, 256),
        IntParam("algoCandidates", 4, "", "cuBLASLt candidates timed at set-up", 1, 32),
    };
    info_.metrics = {
        gpu::Metric("tflops", "TFLOP/s", true, "2*m*n*k*matmuls / GPU seconds / 1e12"),
        gpu::Metric("tflopsDropPercent", "%", false, "throughput lost since the first window"),
        gpu::Metric("computeErrorCount", "count", false,
                    "elements differing from the first result (each window's in Details)"),
        gpu::Metric("smClockMHz", "MHz", true, "mean SM clock (NVML)"),
        gpu::Metric("powerW", "W", true, "mean board power (NVML)"),
        gpu::Metric("temperatureC", "C", false, "highest GPU temperature (NVML)"),
        gpu::Metric("hardwareSlowdown", "bool", false,
                    "1 when HW slowdown, HW thermal or power-brake slowdown was seen (NVML)"),
    };
  }

  const TestInfo& Info() const override { return info_; }

  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    return params.Double("windowSeconds");
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& target) const override {
    ASSIGN_OR_RETURN(const int ordinal, gpu::SingleGpu(target));
    ASSIGN_OR_RETURN(const cuda::CudaDeviceFacts facts, cuda::QueryCudaDevice(ordinal));
    auto dtype = gpu::FindGemmDtype(params.String("dtype"));
    if (!dtype) return InvalidArgument("burn: unknown dtype " + params.String("dtype"));
    if (!gpu::GemmDtypeSupported(*dtype, facts.cc_major, facts.cc_minor)) {
      return FailedPrecondition("burn: " + params.String("dtype") + " not supported on " +
                                facts.name);
    }
    cuda::GemmConfig config;
    config.device = ordinal;
    config.dtype = dtype->dtype;
    config.m = params.Int("m");
    config.n = params.Int("n");
    config.k = params.Int("k");
    config.algo_candidates = static_cast<int>(params.Int("algoCandidates"));
    config.output_buffers = static_cast<int>(params.Int("outputBuffers"));
    config.seed = 0xb124;
    config.deterministic = true;
    ASSIGN_OR_RETURN(auto runner, cuda::CreateGemmRunner(config));
    // The first result becomes the reference: check it against the exact one first, so a
    // GPU that is wrong from the start does not pass by agreeing with itself.
    ASSIGN_OR_RETURN(const double warm, runner->Time(1));
    (void)warm;
    ASSIGN_OR_RETURN(const cuda::GemmSample check, runner->Sample(256));
    RETURN_IF_ERROR(
        gpu::MismatchStatus(gpu::CheckGemmSample(*dtype, config.k, check.values, check.references),
                            "burn reference result"));
    RETURN_IF_ERROR(runner->Snapshot());

    std::map<std::string, std::string> details;
    details["device"] = facts.name + " (" + facts.pci_bus_id + ")";
    details["gemm"] = params.String("dtype") + " " + std::to_string(config.m) + "x" +
                      std::to_string(config.n) + "x" + std::to_string(config.k) + ", " +
                      runner->Description();
    std::shared_ptr<nvml::Nvml> nvml;
    nvml::nvmlDevice_t nvml_device = nullptr;
    auto loaded = nvml::SharedNvml();
    if (loaded.ok()) {
      auto device = (*loaded)->DeviceByPciBusId(facts.pci_bus_id);
      if (device.ok()) {
        nvml = *loaded;
        nvml_device = *device;
      } else {
        details["telemetry"] = device.status().message();
      }
    } else {
      details["telemetry"] = loaded.status().message();
    }
    return std::unique_ptr<TestRun>(std::make_unique<BurnRun>(
        std::move(runner), *dtype, config.m, config.n, config.k, params.Double("windowSeconds"),
        std::move(nvml), nvml_device, std::move(details)));
  }

 private:
  TestInfo info_;
};

}  // namespace

namespace burn {

std::unique_ptr<TestRun> MakeBurnRun(std::unique_ptr<cuda::GemmRunner> runner,
                                     const gpu::GemmDtypeInfo& dtype, std::int64_t m,
                                     std::int64_t n, std::int64_t k, double window_seconds) {
  return std::make_unique<BurnRun>(std::move(runner), dtype, m, n, k, window_seconds, nullptr,
                                   nullptr, std::map<std::string, std::string>{});
}

}  // namespace burn

std::unique_ptr<Test> MakeBurnTest() { return std::make_unique<BurnTest>(); }

}  // namespace perfgate::kernels
