// gemm: cuBLASLt matrix-multiply throughput per dtype, C = A^T B with A k x m, B k x n.
//   FLOPs per matmul = 2 * m * n * k (one multiply and one add per term)
//   TFLOP/s = FLOPs * iterations / GPU seconds / 1e12
// Inputs are N(0,1) random (zeros or constants flatter the GPU: fewer bits toggle). The algorithm
// is the fastest of cuBLASLt's top heuristic candidates, timed on the device at set-up. After each
// sample, a spread of outputs (last row and column included) is compared with a double precision
// reference computed on the device from the same stored inputs; the tolerance fits the dtype
// (formulas.h, GemmAbsTolerance). fp8 (e4m3 inputs, bf16 output) needs cc >= 8.9: on older GPUs it
// is left out and Details() says so.
#include <memory>

#include "kernels/cuda/formulas.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/test_support.h"
#include "kernels/test_factories.h"

namespace perfgate::kernels {
namespace {

std::vector<std::string> DtypeNames() {
  std::vector<std::string> names;
  for (const auto& d : gpu::GemmDtypes()) names.emplace_back(d.name);
  return names;
}

struct DtypeRun {
  gpu::GemmDtypeInfo info;
  std::unique_ptr<cuda::GemmRunner> runner;
};

class GemmRun final : public TestRun {
 public:
  GemmRun(std::vector<DtypeRun> runs, std::int64_t m, std::int64_t n, std::int64_t k,
          int iterations, int verify_samples, std::map<std::string, std::string> details)
      : runs_(std::move(runs)),
        m_(m),
        n_(n),
        k_(k),
        iterations_(iterations),
        verify_samples_(verify_samples),
        details_(std::move(details)) {}

  Result<Sample> RunSample() override {
    Sample sample;
    for (DtypeRun& run : runs_) {
      ASSIGN_OR_RETURN(const double seconds, run.runner->Time(iterations_));
      ASSIGN_OR_RETURN(const cuda::GemmSample check, run.runner->Sample(verify_samples_));
      RETURN_IF_ERROR(
          gpu::MismatchStatus(gpu::CheckGemmSample(run.info, k_, check.values, check.references),
                              "gemm " + std::string(run.info.name) + " output"));
      sample[std::string(run.info.metric)] =
          gpu::Tflops(gpu::GemmFlops(m_, n_, k_) * iterations_, seconds);
    }
    return sample;
  }

  std::map<std::string, std::string> Details() const override { return details_; }

 private:
  std::vector<DtypeRun> runs_;
  std::int64_t m_, n_, k_;
  int iterations_;
  int verify_samples_;
  std::map<std::string, std::string> details_;
};

class GemmTest final : public Test {
 public:
  GemmTest() {
    info_.type = "gemm";
    info_.description =
        "cuBLASLt matrix throughput per dtype (bf16, fp16, fp8 e4m3, tf32, fp64) on random "
        "normal inputs, outputs checked against a double-precision reference";
    info_.scope = Scope::kGpu;
    info_.params = {
        IntParam("m", 8192, "", "rows of C", 16, 65536),
        IntParam("n", 8192, "", "columns of C", 16, 65536),
        IntParam("k", 8192, "", "inner dimension", 16, 65536),
        ChoiceParam("dtypes", ParamType::kStringList, "[bf16, fp16, fp8, tf32, fp64]",
                    "input types; fp8 is skipped below compute capability 8.9", DtypeNames()),
        IntParam("iterationsPerSample", 20, "", "matmuls timed together per sample", 1, 10000),
        IntParam("algoCandidates", 4, "",
                 "cuBLASLt heuristic candidates timed at set-up (fastest kept)", 1, 32),
        IntParam("verifySamples", 256, "", "outputs checked per sample and dtype", 1, 65536),
    };
    for (const auto& d : gpu::GemmDtypes()) {
      info_.metrics.push_back(MetricFor(d));
    }
  }

  const TestInfo& Info() const override { return info_; }

  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    const double flops = 2.0 * static_cast<double>(params.Int("m")) *
                         static_cast<double>(params.Int("n")) *
                         static_cast<double>(params.Int("k"));
    double seconds = 0;
    for (const auto& dtype : params.StringList("dtypes")) {
      seconds += flops / nominal::MatmulFlopsPerSecond(dtype);
    }
    return seconds * static_cast<double>(params.Int("iterationsPerSample"));
  }

  std::vector<MetricInfo> Metrics(const Params& params) const override {
    std::vector<MetricInfo> metrics;
    for (const std::string& name : params.StringList("dtypes")) {
      if (auto d = gpu::FindGemmDtype(name)) metrics.push_back(MetricFor(*d));
    }
    return metrics;
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& target) const override {
    ASSIGN_OR_RETURN(const int ordinal, gpu::SingleGpu(target));
    ASSIGN_OR_RETURN(const cuda::CudaDeviceFacts facts, cuda::QueryCudaDevice(ordinal));
    std::map<std::string, std::string> details;
    details["device"] = facts.name + " (" + facts.pci_bus_id + "), cc " +
                        std::to_string(facts.cc_major) + "." + std::to_string(facts.cc_minor) +
                        ", " + std::to_string(facts.sm_count) + " SMs";
    details["shape"] = std::to_string(params.Int("m")) + " x " + std::to_string(params.Int("n")) +
                       " x " + std::to_string(params.Int("k")) + " (m x n x k), layout TN";
    std::vector<DtypeRun> runs;
    for (const std::string& name : params.StringList("dtypes")) {
      auto info = gpu::FindGemmDtype(name);
      if (!info) return InvalidArgument("gemm: unknown dtype " + name);
      if (!gpu::GemmDtypeSupported(*info, facts.cc_major, facts.cc_minor)) {
        details[name] = "not run: needs compute capability " + std::to_string(info->min_cc / 10) +
                        "." + std::to_string(info->min_cc % 10);
        continue;
      }
      cuda::GemmConfig config;
      config.device = ordinal;
      config.dtype = info->dtype;
      config.m = params.Int("m");
      config.n = params.Int("n");
      config.k = params.Int("k");
      config.algo_candidates = static_cast<int>(params.Int("algoCandidates"));
      config.seed = 0x6e6d + static_cast<std::uint64_t>(info->dtype);
      auto runner = cuda::CreateGemmRunner(config);
      if (!runner.ok()) return runner.status().WithContext("gemm " + name);
      details[name] = (*runner)->Description();
      runs.push_back({*info, std::move(runner).value()});
    }
    if (runs.empty()) {
      return FailedPrecondition("gemm: none of the requested dtypes runs on " + facts.name);
    }
    return std::unique_ptr<TestRun>(std::make_unique<GemmRun>(
        std::move(runs), params.Int("m"), params.Int("n"), params.Int("k"),
        static_cast<int>(params.Int("iterationsPerSample")),
        static_cast<int>(params.Int("verifySamples")), std::move(details)));
  }

 private:
  static MetricInfo MetricFor(const gpu::GemmDtypeInfo& d) {
    return gpu::Metric(std::string(d.metric), "TFLOP/s", true,
                       std::string(d.name) + " matmul: 2*m*n*k*iterations / seconds / 1e12");
  }
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakeGemmTest() { return std::make_unique<GemmTest>(); }

}  // namespace perfgate::kernels
