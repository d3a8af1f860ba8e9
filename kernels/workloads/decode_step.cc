// decode-step: one token of batched inference decoding on a GPU, memory-bound as real decoding
// is. Per layer: the batch's activations through the four weight matrices (QKV, attention-out,
// MLP up, MLP down: 12 h^2 weights, cuBLASLt with n = batch) and one attention pass over every
// sequence's K and V cache (kvTokens cached tokens x 2 h values each). Per sample:
//   stepMs           GPU time of one step (averaged over stepsPerSample)
//   tokensPerSecond  = batch / step seconds
//   achievedGBps     = (weights + KV cache bytes) / step seconds / 1e9
//                      weights = 12 h^2 x layers x 2 bytes, KV = 2 h x kvTokens x batch x layers x
//                      2
//   hbmShare         = achievedGBps / the node's HBM figure
// and the speed-of-light model: predictedStepMs, efficiency, memoryGapMs. Outputs of the last
// layer's QKV matmul and attention pass are checked against exact values the host computes
// from the input patterns (decode_pattern.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "kernels/cuda/test_support.h"
#include "kernels/workloads/node_figures.h"
#include "kernels/workloads/transformer.h"
#include "kernels/workloads/workload_backend.h"
#include "kernels/workloads/workload_factories.h"
#include "kernels/workloads/workload_model.h"

namespace perfgate::kernels {
namespace {

workloads::DecodeShape DecodeShapeOf(const Params& params) {
  workloads::DecodeShape s;
  s.hidden = params.Int("hidden");
  s.layers = static_cast<int>(params.Int("layers"));
  s.batch = params.Int("batch");
  s.kv_tokens = params.Int("kvTokens");
  return s;
}

// The attention pass sums multiples of 1/512 below 4.5 per token in fp32: exact up to about
// 7000 cached tokens (the sums stay below 2^24 / 512), beyond that each of the
// kvTokens / 8 additions per warp may round, relative 2^-24 of at most 4.5 x kvTokens.
constexpr double kAttentionRelTolerance = 1e-5;
constexpr double kAttentionExactTokens = 7000;
double AttentionTolerance(double reference, double kv_tokens) {
  const double rounding =
      kv_tokens > kAttentionExactTokens ? 0x1p-24 * (kv_tokens / 8) * 4.5 * kv_tokens : 0.0;
  return kAttentionRelTolerance * std::max(std::fabs(reference), 1.0) + rounding;
}

class DecodeStepRun final : public TestRun {
 public:
  DecodeStepRun(std::unique_ptr<workloads::DecodeStepRunner> runner, workloads::DecodeShape shape,
                const gpu::GemmDtypeInfo& dtype, int steps, int verify_samples,
                model::NodeFigures node, std::map<std::string, std::string> details)
      : runner_(std::move(runner)),
        shape_(shape),
        dtype_(dtype),
        steps_(steps),
        verify_samples_(verify_samples),
        node_(node),
        details_(std::move(details)) {}

  Result<Sample> RunSample() override {
    double step = 0;
    for (int i = 0; i < steps_; ++i) {
      ASSIGN_OR_RETURN(const double s, runner_->Step());
      step += s / steps_;
    }
    RETURN_IF_ERROR(Verify());
    const double bytes = workloads::DecodeWeightBytes(shape_, dtype_.input_bytes) +
                         workloads::DecodeKvBytes(shape_, dtype_.input_bytes);
    Sample sample;
    sample["stepMs"] = step * 1e3;
    sample["tokensPerSecond"] = step > 0 ? static_cast<double>(shape_.batch) / step : 0;
    const double gbps = gpu::BandwidthGBps(bytes, step);
    sample["achievedGBps"] = gbps;
    if (node_.hbm_gbps > 0) sample["hbmShare"] = gbps / node_.hbm_gbps;
    model::Measured measured;
    measured.step_s = step;
    const model::Workload workload = workloads::DecodeWorkload(shape_, dtype_.input_bytes);
    // The whole step is memory-bound work (the model says which phases are); their measured
    // time is the step's.
    const model::Prediction p = model::Predict(workload, node_);
    if (p.parts.compute_s <= 0) measured.memory_s = step;
    const model::Assessment a = model::Assess(workload, node_, measured);
    sample["predictedStepMs"] = a.prediction.step_s * 1e3;
    sample["efficiency"] = a.efficiency;
    sample["memoryGapMs"] = a.memory_gap_s * 1e3;
    sample["computeGapMs"] = a.compute_gap_s * 1e3;
    last_summary_ = a.Summary();
    return sample;
  }

  std::map<std::string, std::string> Details() const override {
    auto details = details_;
    if (!last_summary_.empty()) details["speedOfLight"] = last_summary_;
    return details;
  }

 private:
  Status Verify() {
    ASSIGN_OR_RETURN(const workloads::DecodeCheck check, runner_->Check(verify_samples_));
    gpu::Mismatch m;
    for (std::size_t i = 0; i < check.values.size(); ++i) {
      ++m.checked;
      const double ref = check.references[i];
      // Even samples: a QKV matmul output, rounded to the dtype; odd: an attention output
      // (fp32, AttentionTolerance).
      const double tolerance = i % 2 == 0
                                   ? 2.0 * dtype_.output_roundoff * std::fabs(ref) + 1e-6
                                   : AttentionTolerance(ref, static_cast<double>(shape_.kv_tokens));
      const double got = check.values[i];
      if (std::isfinite(got) && std::fabs(got - ref) <= tolerance) continue;
      if (m.wrong++ == 0) {
        char buffer[160];
        std::snprintf(buffer, sizeof(buffer), "%s output %zu = %.9g, exact %.9g",
                      i % 2 == 0 ? "qkv" : "attention", i, got, ref);
        m.first = buffer;
      }
    }
    return gpu::MismatchStatus(m, "decode-step outputs");
  }

  std::unique_ptr<workloads::DecodeStepRunner> runner_;
  workloads::DecodeShape shape_;
  gpu::GemmDtypeInfo dtype_;
  int steps_;
  int verify_samples_;
  model::NodeFigures node_;
  std::map<std::string, std::string> details_;
  std::string last_summary_;
};

class DecodeStepTest final : public Test {
 public:
  DecodeStepTest() {
    info_.type = "decode-step";
    info_.description =
        "inference decode step on a GPU: batched matrix-vector products over a model's weights "
        "and reads of each sequence's KV cache; tokens per second and HBM bandwidth against "
        "the node's speed of light";
    info_.scope = Scope::kGpu;
    info_.params = {
        IntParam("hidden", 4096, "", "hidden size h (a multiple of 128: heads of 128)", 128, 65536),
        IntParam("layers", 8, "", "transformer layers", 1, 1024),
        IntParam("batch", 16, "sequences", "sequences decoded together", 1, 4096),
        IntParam("kvTokens", 4096, "tokens", "cached tokens per sequence", 1, 1 << 20),
        ChoiceParam("dtype", ParamType::kString, "bf16", "weights and KV cache type",
                    {"bf16", "fp16"}),
        IntParam("stepsPerSample", 10, "", "decode steps averaged per sample", 1, 10000),
        IntParam("verifySamples", 16, "", "outputs checked against exact values per sample", 2,
                 4096),
        DoubleParam("matmulTflops", "0", "TFLOP/s",
                    "the node's dense matmul figure for the model; 0: measured at set-up", 0, 1e6),
        DoubleParam("hbmGBps", "0", "GB/s",
                    "the node's HBM bandwidth for the model; 0: measured at set-up", 0, 1e6),
    };
    info_.metrics = {
        gpu::Metric("tokensPerSecond", "tokens/s", true, "batch / step seconds"),
        gpu::Metric("stepMs", "ms", false, "GPU time of one decode step"),
        gpu::Metric("achievedGBps", "GB/s", true,
                    "(weights + KV cache bytes) / step seconds / 1e9"),
        gpu::Metric("hbmShare", "ratio", true, "achievedGBps / the node's HBM figure"),
        gpu::Metric("predictedStepMs", "ms", false, "speed of light from the node's figures"),
        gpu::Metric("efficiency", "ratio", true, "predicted / measured step time"),
        gpu::Metric("memoryGapMs", "ms", false, "gap explained by memory-bound phases"),
        gpu::Metric("computeGapMs", "ms", false, "gap explained by compute-bound phases"),
    };
  }

  const TestInfo& Info() const override { return info_; }

  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    const workloads::DecodeShape s = DecodeShapeOf(params);
    const double bytes = workloads::DecodeWeightBytes(s, 2) + workloads::DecodeKvBytes(s, 2);
    return bytes / nominal::kHbmBytesPerSecond * static_cast<double>(params.Int("stepsPerSample"));
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& target) const override {
    ASSIGN_OR_RETURN(const int ordinal, gpu::SingleGpu(target));
    const workloads::DecodeShape shape = DecodeShapeOf(params);
    if (shape.hidden % 128 != 0) {
      return InvalidArgument("decode-step: hidden must be a multiple of 128");
    }
    const gpu::GemmDtypeInfo dtype = *gpu::FindGemmDtype(params.String("dtype"));
    workloads::DecodeStepConfig config;
    config.device = ordinal;
    config.dtype = dtype.dtype;
    config.hidden = shape.hidden;
    config.layers = shape.layers;
    config.batch = shape.batch;
    config.kv_tokens = shape.kv_tokens;
    ASSIGN_OR_RETURN(auto runner, workloads::CreateDecodeStepRunner(config));
    ASSIGN_OR_RETURN(const workloads::Figure matmul,
                     workloads::MatmulFigure(params.Double("matmulTflops"), ordinal, dtype.dtype));
    ASSIGN_OR_RETURN(const workloads::Figure hbm,
                     workloads::HbmFigure(params.Double("hbmGBps"), ordinal));
    RETURN_IF_ERROR(runner->Step().status());  // warm-up
    std::map<std::string, std::string> details;
    details["shape"] = "h " + std::to_string(shape.hidden) + ", " + std::to_string(shape.layers) +
                       " layers, batch " + std::to_string(shape.batch) + ", " +
                       std::to_string(shape.kv_tokens) + " cached tokens per sequence, " +
                       params.String("dtype");
    details["bytesPerStep"] =
        "weights " +
        gpu::FormatBytes(static_cast<std::int64_t>(workloads::DecodeWeightBytes(shape, 2))) +
        ", KV cache " +
        gpu::FormatBytes(static_cast<std::int64_t>(workloads::DecodeKvBytes(shape, 2)));
    details["run"] = runner->Description();
    char figures[200];
    std::snprintf(figures, sizeof(figures), "matmul %.1f TFLOP/s (%s), HBM %.0f GB/s (%s)",
                  matmul.value, matmul.source.c_str(), hbm.value, hbm.source.c_str());
    details["nodeFigures"] = figures;
    model::NodeFigures node;
    node.matmul_tflops = matmul.value;
    node.hbm_gbps = hbm.value;
    return std::unique_ptr<TestRun>(std::make_unique<DecodeStepRun>(
        std::move(runner), shape, dtype, static_cast<int>(params.Int("stepsPerSample")),
        static_cast<int>(params.Int("verifySamples")), node, std::move(details)));
  }

 private:
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakeDecodeStepTest() { return std::make_unique<DecodeStepTest>(); }

}  // namespace perfgate::kernels
