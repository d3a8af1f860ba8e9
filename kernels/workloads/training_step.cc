// training-step: a data-parallel transformer training step on every GPU of the node. Each GPU
// runs the forward and backward matmuls of `layers` transformer layers (transformer.h: QKV,
// attention-out, MLP up and down, shapes split by the tensor-parallel degree) with cuBLASLt,
// and all-reduces the weight gradients with NCCL across the node's GPUs in buckets of
// `bucketMB`, each bucket's all-reduce on a second stream as soon as the backward pass has
// filled it (as PyTorch DDP does). Per sample:
//   computeMs  the matmuls alone;  commMs  the all-reduces alone;  stepMs  both, overlapped
//   tflops        = 72 T h^2 / t x layers / step seconds / 1e12    (per GPU)
//   overlapShare  = (compute + comm - step) / comm: the share of communication hidden behind
//                   compute (1: all of it, 0: none; clamped to [0, 1])
//   busBandwidthGBps = 2 (n-1)/n x gradient bytes / comm seconds   (nccl-tests' bus bandwidth)
// and the speed-of-light model (workload_model.h) on the node's figures: predictedStepMs,
// efficiency = predicted / measured, and the gap each part explains. A step's gradients are
// checked: after the step every rank holds the sum over ranks of the gradients the matmuls
// alone produced, within the dtype's rounding.
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

using workloads::TransformerShape;

TransformerShape TrainingShapeOf(const Params& params) {
  TransformerShape s;
  s.hidden = params.Int("hidden");
  s.sequence = params.Int("sequence");
  s.micro_batch = params.Int("microBatch");
  s.tensor_parallel = params.Int("tensorParallel");
  s.layers = static_cast<int>(params.Int("layers"));
  return s;
}

class TrainingStepRun final : public TestRun {
 public:
  TrainingStepRun(std::unique_ptr<workloads::TrainingStepRunner> runner,
                  workloads::TrainingMatmuls matmuls, const gpu::GemmDtypeInfo& dtype, int ranks,
                  int steps, int verify_samples, model::NodeFigures node, bool measure_bus,
                  std::map<std::string, std::string> details)
      : runner_(std::move(runner)),
        matmuls_(std::move(matmuls)),
        dtype_(dtype),
        ranks_(ranks),
        steps_(steps),
        indices_(gpu::SampleIndices(runner_->gradient_elements(), verify_samples)),
        node_(node),
        measure_bus_(measure_bus),
        details_(std::move(details)) {}

  Result<Sample> RunSample() override {
    RETURN_IF_ERROR(VerifyOneStep());
    double compute = 0;
    double comm = 0;
    double step = 0;
    for (int i = 0; i < steps_; ++i) {
      ASSIGN_OR_RETURN(const double c, runner_->ComputeOnly());
      ASSIGN_OR_RETURN(const double k, runner_->CommOnly());
      ASSIGN_OR_RETURN(const double s, runner_->Step());
      compute += c / steps_;
      comm += k / steps_;
      step += s / steps_;
    }
    const double gradient_bytes =
        static_cast<double>(runner_->gradient_elements()) * dtype_.input_bytes;
    Sample sample;
    sample["stepMs"] = step * 1e3;
    sample["computeMs"] = compute * 1e3;
    sample["commMs"] = comm * 1e3;
    const double flops =
        workloads::MatmulFlops(matmuls_.forward) + workloads::MatmulFlops(matmuls_.backward);
    sample["tflops"] = gpu::Tflops(flops, step);
    if (comm > 0) sample["overlapShare"] = model::OverlapShare(compute, comm, step);
    double bus = 0;
    if (ranks_ > 1 && comm > 0) {
      bus = 2.0 * (ranks_ - 1) / ranks_ * gradient_bytes / comm / 1e9;
      sample["busBandwidthGBps"] = bus;
    }
    model::NodeFigures node = node_;
    if (measure_bus_) node.bus_gbps = bus;
    model::Measured measured;
    measured.step_s = step;
    measured.compute_s = compute;
    measured.comm_s = comm;
    const model::Assessment a =
        model::Assess(workloads::TrainingWorkload(matmuls_, runner_->gradient_elements(),
                                                  dtype_.input_bytes, ranks_),
                      node, measured);
    sample["predictedStepMs"] = a.prediction.step_s * 1e3;
    sample["efficiency"] = a.efficiency;
    sample["computeGapMs"] = a.compute_gap_s * 1e3;
    sample["memoryGapMs"] = a.memory_gap_s * 1e3;
    sample["commGapMs"] = a.comm_gap_s * 1e3;
    sample["lostOverlapMs"] = a.lost_overlap_s * 1e3;
    last_summary_ = a.Summary();
    return sample;
  }

  std::map<std::string, std::string> Details() const override {
    auto details = details_;
    if (!last_summary_.empty()) details["speedOfLight"] = last_summary_;
    return details;
  }

 private:
  // One step's gradients: every rank's all-reduced gradient equals the sum over ranks of what
  // its matmuls alone produced (ComputeOnly, deterministic: same algorithm, same inputs).
  Status VerifyOneStep() {
    ASSIGN_OR_RETURN(const double unused_compute, runner_->ComputeOnly());
    (void)unused_compute;
    ASSIGN_OR_RETURN(const auto local, runner_->ReadGradients(indices_));
    ASSIGN_OR_RETURN(const double unused_step, runner_->Step());
    (void)unused_step;
    ASSIGN_OR_RETURN(const auto reduced, runner_->ReadGradients(indices_));
    gpu::Mismatch m;
    for (std::size_t i = 0; i < indices_.size(); ++i) {
      double sum = 0;
      double magnitude = 0;
      for (const auto& rank : local) {
        sum += rank[i];
        magnitude += std::fabs(rank[i]);
      }
      // Each partial sum of the reduction is rounded to the dtype: at most `ranks` roundings.
      const double tolerance = 2.0 * ranks_ * dtype_.output_roundoff * magnitude + 1e-6;
      for (std::size_t r = 0; r < reduced.size(); ++r) {
        ++m.checked;
        const double got = reduced[r][i];
        if (std::isfinite(got) && std::fabs(got - sum) <= tolerance) continue;
        if (m.wrong++ == 0) {
          char buffer[200];
          std::snprintf(buffer, sizeof(buffer),
                        "rank %zu gradient[%lld] = %.6g, sum of ranks' gradients %.6g", r,
                        static_cast<long long>(indices_[i]), got, sum);  // NOLINT
          m.first = buffer;
        }
      }
    }
    return gpu::MismatchStatus(m, "training-step all-reduced gradients");
  }

  std::unique_ptr<workloads::TrainingStepRunner> runner_;
  workloads::TrainingMatmuls matmuls_;
  gpu::GemmDtypeInfo dtype_;
  int ranks_;
  int steps_;
  std::vector<std::int64_t> indices_;
  model::NodeFigures node_;
  bool measure_bus_;
  std::map<std::string, std::string> details_;
  std::string last_summary_;
};

class TrainingStepTest final : public Test {
 public:
  TrainingStepTest() {
    info_.type = "training-step";
    info_.description =
        "data-parallel transformer training step on every GPU: forward and backward cuBLASLt "
        "matmuls of a layer, gradient all-reduce bucketed and overlapped with NCCL; step time, "
        "TFLOP/s, hidden communication and efficiency against the node's speed of light";
    info_.scope = Scope::kAllGpus;
    info_.params = {
        IntParam("hidden", 4096, "", "hidden size h", 128, 65536),
        IntParam("sequence", 4096, "tokens", "sequence length", 1, 1 << 20),
        IntParam("microBatch", 1, "", "sequences per GPU per step", 1, 4096),
        IntParam("tensorParallel", 1, "",
                 "tensor-parallel degree t: each GPU runs its 1/t share of the matmuls", 1, 64),
        IntParam("layers", 1, "", "transformer layers per step", 1, 256),
        ChoiceParam("dtype", ParamType::kString, "bf16", "matmul and gradient type",
                    {"bf16", "fp16"}),
        IntParam("bucketMB", 25, "MiB", "gradient bucket size (PyTorch DDP's default is 25)", 1,
                 4096),
        IntParam("stepsPerSample", 5, "", "steps (and compute-alone, comm-alone runs) averaged", 1,
                 1000),
        IntParam("verifySamples", 256, "", "gradient elements checked per rank per sample", 1,
                 1 << 20),
        DoubleParam("matmulTflops", "0", "TFLOP/s",
                    "the node's dense matmul figure for the model; 0: measured at set-up", 0, 1e6),
        DoubleParam("hbmGBps", "0", "GB/s",
                    "the node's HBM bandwidth for the model; 0: measured at set-up", 0, 1e6),
        DoubleParam("busBandwidthGBps", "0", "GB/s",
                    "NCCL all-reduce bus bandwidth at the bucket size for the model; 0: this "
                    "sample's communication alone",
                    0, 1e6),
    };
    info_.metrics = {
        gpu::Metric("stepMs", "ms", false, "forward + backward + overlapped all-reduce"),
        gpu::Metric("computeMs", "ms", false, "the step's matmuls alone"),
        gpu::Metric("commMs", "ms", false, "the step's all-reduces alone"),
        gpu::Metric("tflops", "TFLOP/s", true, "72 T h^2 / t x layers / step seconds / 1e12"),
        gpu::Metric("overlapShare", "ratio", true,
                    "(compute + comm - step) / comm: communication hidden behind compute"),
        gpu::Metric("busBandwidthGBps", "GB/s", true,
                    "2 (n-1)/n x gradient bytes / comm seconds (more than one GPU)"),
        gpu::Metric("predictedStepMs", "ms", false, "speed of light from the node's figures"),
        gpu::Metric("efficiency", "ratio", true, "predicted / measured step time"),
        gpu::Metric("computeGapMs", "ms", false, "gap explained by slower matmuls"),
        gpu::Metric("memoryGapMs", "ms", false, "gap explained by memory-bound phases"),
        gpu::Metric("commGapMs", "ms", false, "gap explained by slower communication"),
        gpu::Metric("lostOverlapMs", "ms", false, "gap the parts do not explain: lost overlap"),
    };
  }

  const TestInfo& Info() const override { return info_; }

  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    const workloads::TrainingMatmuls mm = workloads::TrainingStepMatmuls(TrainingShapeOf(params));
    const double flops = workloads::MatmulFlops(mm.forward) + workloads::MatmulFlops(mm.backward);
    const double step = flops / nominal::MatmulFlopsPerSecond(params.String("dtype"));
    // Per step: compute alone, comm alone (at most a step), and both; plus the verified step.
    return 3.0 * step * static_cast<double>(params.Int("stepsPerSample") + 1);
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& target) const override {
    if (target.devices.empty()) {
      RETURN_IF_ERROR(cuda::RequireCudaDevice(0));
      return InvalidArgument("training-step: the target names no GPU");
    }
    RETURN_IF_ERROR(cuda::RequireCudaDevice(target.devices.front()));
    const TransformerShape shape = TrainingShapeOf(params);
    if (shape.hidden % shape.tensor_parallel != 0) {
      return InvalidArgument("training-step: hidden must be a multiple of tensorParallel");
    }
    const gpu::GemmDtypeInfo dtype = *gpu::FindGemmDtype(params.String("dtype"));
    workloads::TrainingMatmuls matmuls = workloads::TrainingStepMatmuls(shape);
    workloads::TrainingStepConfig config;
    config.devices = target.devices;
    config.dtype = dtype.dtype;
    config.forward = matmuls.forward;
    config.backward = matmuls.backward;
    config.bucket_bytes = params.Int("bucketMB") << 20;
    ASSIGN_OR_RETURN(auto runner, workloads::CreateTrainingStepRunner(config));
    ASSIGN_OR_RETURN(const workloads::Figure matmul,
                     workloads::MatmulFigure(params.Double("matmulTflops"), target.devices.front(),
                                             dtype.dtype));
    ASSIGN_OR_RETURN(const workloads::Figure hbm,
                     workloads::HbmFigure(params.Double("hbmGBps"), target.devices.front()));
    model::NodeFigures node;
    node.matmul_tflops = matmul.value;
    node.hbm_gbps = hbm.value;
    node.bus_gbps = params.Double("busBandwidthGBps");
    // Warm-up: algorithms load, NCCL sets up its channels.
    RETURN_IF_ERROR(runner->Step().status());
    std::map<std::string, std::string> details;
    details["shape"] = "h " + std::to_string(shape.hidden) + ", T " +
                       std::to_string(shape.tokens()) + " tokens (sequence " +
                       std::to_string(shape.sequence) + " x micro-batch " +
                       std::to_string(shape.micro_batch) + "), tensor-parallel " +
                       std::to_string(shape.tensor_parallel) + ", " + std::to_string(shape.layers) +
                       " layer(s), " + params.String("dtype");
    details["gradients"] = gpu::FormatBytes(runner->gradient_elements() * dtype.input_bytes) +
                           " per GPU in " + std::to_string(runner->buckets()) + " buckets";
    details["run"] = runner->Description();
    char figures[256];
    std::snprintf(figures, sizeof(figures), "matmul %.1f TFLOP/s (%s), HBM %.0f GB/s (%s), bus %s",
                  matmul.value, matmul.source.c_str(), hbm.value, hbm.source.c_str(),
                  node.bus_gbps > 0 ? (std::to_string(node.bus_gbps) + " GB/s (spec)").c_str()
                                    : "this sample's communication alone");
    details["nodeFigures"] = figures;
    const int ranks = static_cast<int>(target.devices.size());
    return std::unique_ptr<TestRun>(
        std::make_unique<TrainingStepRun>(std::move(runner), std::move(matmuls), dtype, ranks,
                                          static_cast<int>(params.Int("stepsPerSample")),
                                          static_cast<int>(params.Int("verifySamples")), node,
                                          !(node.bus_gbps > 0), std::move(details)));
  }

 private:
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakeTrainingStepTest() { return std::make_unique<TrainingStepTest>(); }

}  // namespace perfgate::kernels
