// hbm-stream: device memory bandwidth with BabelStream's five kernels over three arrays of
// doubles (N elements each, 8 bytes per element):
//   copy  c = a          bytes = 2 * 8 * N
//   scale b = s * c      bytes = 2 * 8 * N
//   add   c = a + b      bytes = 3 * 8 * N
//   triad a = b + s * c  bytes = 3 * 8 * N
//   dot   sum(a * b)     bytes = 2 * 8 * N
// bandwidth (GB/s) = bytes / kernel seconds / 1e9, each kernel timed alone with CUDA events,
// averaged over the rounds of one sample. Arrays default to 1 GiB each so no level of cache
// (H200's L2 is 60 MB) holds them. Each sample starts from fresh arrays, so every element of
// a, b and c equals a scalar the host replays (ExpectStreamValues); a spread of elements and
// the dot product are checked against it, and any difference is a failure (DataLoss).
#include <memory>

#include "kernels/cuda/formulas.h"
#include "kernels/cuda/hbm_stream.h"
#include "kernels/cuda/test_support.h"
#include "kernels/test_factories.h"

namespace perfgate::kernels {
namespace {

// The device computes triad with a fused multiply-add and sums the dot in a tree, the host in
// order without fusion: both differ by a few ulps, far below these bounds, while any real
// corruption is orders of magnitude above them.
constexpr double kArrayRelTolerance = 1e-9;
constexpr double kDotRelTolerance = 1e-8;

class HbmStreamRun final : public TestRun {
 public:
  HbmStreamRun(std::unique_ptr<cuda::HbmStream> stream, std::int64_t elements, int rounds,
               int verify_samples, std::map<std::string, std::string> details)
      : stream_(std::move(stream)),
        elements_(elements),
        rounds_(rounds),
        indices_(gpu::SampleIndices(elements, verify_samples)),
        details_(std::move(details)) {}

  Result<Sample> RunSample() override {
    RETURN_IF_ERROR(stream_->Reset());
    ASSIGN_OR_RETURN(const cuda::HbmStreamTimings t, stream_->RunRounds(rounds_));
    RETURN_IF_ERROR(Verify(t.last_dot));
    Sample sample;
    for (std::size_t op = 0; op < gpu::kStreamOps.size(); ++op) {
      const double bytes = gpu::StreamOpBytes(gpu::kStreamOps[op], elements_, sizeof(double));
      sample[std::string(gpu::kStreamOps[op].metric)] =
          gpu::BandwidthGBps(bytes, t.seconds[op] / rounds_);
    }
    return sample;
  }

  std::map<std::string, std::string> Details() const override { return details_; }

 private:
  Status Verify(double dot) {
    const gpu::StreamExpected e = gpu::ExpectStreamValues(rounds_, elements_);
    std::vector<double> a;
    std::vector<double> b;
    std::vector<double> c;
    RETURN_IF_ERROR(stream_->ReadBack(indices_, &a, &b, &c));
    RETURN_IF_ERROR(gpu::MismatchStatus(
        gpu::CheckAllNear(a, indices_, e.a, kArrayRelTolerance, "a"), "hbm-stream array a"));
    RETURN_IF_ERROR(gpu::MismatchStatus(
        gpu::CheckAllNear(b, indices_, e.b, kArrayRelTolerance, "b"), "hbm-stream array b"));
    RETURN_IF_ERROR(gpu::MismatchStatus(
        gpu::CheckAllNear(c, indices_, e.c, kArrayRelTolerance, "c"), "hbm-stream array c"));
    return gpu::MismatchStatus(gpu::CheckAllNear({dot}, {0}, e.dot, kDotRelTolerance, "dot"),
                               "hbm-stream dot");
  }

  std::unique_ptr<cuda::HbmStream> stream_;
  std::int64_t elements_;
  int rounds_;
  std::vector<std::int64_t> indices_;
  std::map<std::string, std::string> details_;
};

class HbmStreamTest final : public Test {
 public:
  HbmStreamTest() {
    info_.type = "hbm-stream";
    info_.description =
        "device memory bandwidth: BabelStream copy, scale, add, triad, dot on three arrays of "
        "doubles, results checked against host-replayed values";
    info_.scope = Scope::kGpu;
    info_.params = {
        IntParam("arrayBytes", 1LL << 30, "bytes",
                 "size of each of the three arrays; keep it far above the L2 cache", 1 << 20,
                 64.0 * (1LL << 30)),
        IntParam("roundsPerSample", 10, "",
                 "rounds of the five kernels per sample; each kernel's time is averaged", 1, 1000),
        IntParam("blockSize", 1024, "threads", "threads per block (power of two)", 32, 1024),
        IntParam("blocksPerSm", 0, "", "blocks per SM in the grid-stride launch; 0 fills the SM", 0,
                 64),
        IntParam("verifySamples", 4096, "", "elements of each array checked after each sample", 1,
                 1 << 20),
    };
    for (const gpu::StreamOpInfo& op : gpu::kStreamOps) {
      info_.metrics.push_back(gpu::Metric(std::string(op.metric), "GB/s", true,
                                          std::string(op.name) + ": " +
                                              std::to_string(op.arrays_touched) +
                                              " x 8 bytes x elements / kernel seconds / 1e9"));
    }
  }

  const TestInfo& Info() const override { return info_; }

  // Each round runs the five kernels, which move twelve array lengths (the bytes table above).
  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    return static_cast<double>(params.Int("roundsPerSample")) * 12 *
           static_cast<double>(params.Int("arrayBytes")) / nominal::kHbmBytesPerSecond;
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& target) const override {
    ASSIGN_OR_RETURN(const int ordinal, gpu::SingleGpu(target));
    cuda::HbmStreamConfig config;
    config.device = ordinal;
    config.elements = params.Int("arrayBytes") / static_cast<std::int64_t>(sizeof(double));
    config.block_size = static_cast<int>(params.Int("blockSize"));
    config.blocks_per_sm = static_cast<int>(params.Int("blocksPerSm"));
    ASSIGN_OR_RETURN(auto stream, cuda::CreateHbmStream(config));
    std::map<std::string, std::string> details;
    details["arrayBytes"] = gpu::FormatBytes(config.elements * 8) + " x 3 arrays (" +
                            std::to_string(config.elements) + " doubles each)";
    details["launch"] = stream->LaunchDescription();
    details["verification"] =
        std::to_string(params.Int("verifySamples")) +
        " elements of a, b, c and the dot product per sample against host-replayed values";
    if (auto facts = cuda::QueryCudaDevice(ordinal); facts.ok()) {
      details["device"] = facts->name + " (" + facts->pci_bus_id + "), L2 " +
                          gpu::FormatBytes(facts->l2_cache_bytes) + ", bus " +
                          std::to_string(facts->memory_bus_width_bits) + " bits";
    }
    return std::unique_ptr<TestRun>(std::make_unique<HbmStreamRun>(
        std::move(stream), config.elements, static_cast<int>(params.Int("roundsPerSample")),
        static_cast<int>(params.Int("verifySamples")), std::move(details)));
  }

 private:
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakeHbmStreamTest() { return std::make_unique<HbmStreamTest>(); }

}  // namespace perfgate::kernels
