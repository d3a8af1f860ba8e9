// p2p: copy bandwidth between every ordered pair of the node's GPUs, with peer access
// (NVLink/NVSwitch or PCIe peer-to-peer, the copy engine writes straight into the peer) and
// without it (the driver stages through host memory).
//   GB/s = bytes * copies / seconds / 1e9, per ordered pair (src -> dst)
// The headline is the worst pair: one slow link is what a collective waits on. Each copy's
// destination is checked against the source's pattern on the device; any difference is a
// failure. With one GPU there is no pair: FailedPrecondition (SKIPPED).
#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>

#include "kernels/cuda/formulas.h"
#include "kernels/cuda/p2p.h"
#include "kernels/cuda/test_support.h"
#include "kernels/test_factories.h"

namespace perfgate::kernels {
namespace {

class P2pRun final : public TestRun {
 public:
  P2pRun(std::unique_ptr<cuda::PeerCopier> copier, std::vector<int> ordinals, std::int64_t bytes,
         int copies, std::map<std::string, std::string> details)
      : copier_(std::move(copier)),
        ordinals_(std::move(ordinals)),
        bytes_(bytes),
        copies_(copies),
        details_(std::move(details)) {}

  Result<Sample> RunSample() override {
    const int n = copier_->size();
    double worst = std::numeric_limits<double>::infinity();
    double worst_no_peer = std::numeric_limits<double>::infinity();
    double sum = 0;
    int pairs = 0;
    int missing_peer = 0;
    std::string worst_pair;
    std::map<std::string, std::string> matrix;
    for (int src = 0; src < n; ++src) {
      for (int dst = 0; dst < n; ++dst) {
        if (src == dst) continue;
        const std::string pair =
            "gpu" + std::to_string(ordinals_[src]) + "->gpu" + std::to_string(ordinals_[dst]);
        ASSIGN_OR_RETURN(const double staged, copier_->Time(src, dst, false, copies_));
        RETURN_IF_ERROR(copier_->Verify(src, dst));
        const double staged_gbps = Gbps(staged);
        worst_no_peer = std::min(worst_no_peer, staged_gbps);
        double best_gbps = staged_gbps;
        std::string text = "no peer " + gpu::FormatFixed(staged_gbps, 1) + " GB/s";
        if (copier_->CanAccessPeer(src, dst)) {
          ASSIGN_OR_RETURN(const double direct, copier_->Time(src, dst, true, copies_));
          RETURN_IF_ERROR(copier_->Verify(src, dst));
          best_gbps = Gbps(direct);
          text.insert(0, "peer " + gpu::FormatFixed(best_gbps, 1) + " GB/s, ");
        } else {
          ++missing_peer;
          text.insert(0, "peer access unavailable, ");
        }
        matrix["pair " + pair] = text;
        if (best_gbps < worst) {
          worst = best_gbps;
          worst_pair = pair;
        }
        sum += best_gbps;
        ++pairs;
      }
    }
    Sample sample;
    sample["worstPairBandwidthGBps"] = worst;
    sample["worstPairNoPeerBandwidthGBps"] = worst_no_peer;
    sample["meanPairBandwidthGBps"] = pairs > 0 ? sum / pairs : 0;
    sample["peerAccessMissingPairCount"] = missing_peer;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, value] : matrix) details_[key] = value;
    details_["worstPair"] = worst_pair;
    return sample;
  }

  std::map<std::string, std::string> Details() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return details_;
  }

 private:
  double Gbps(double seconds) const {
    return gpu::BandwidthGBps(static_cast<double>(bytes_) * copies_, seconds);
  }
  std::unique_ptr<cuda::PeerCopier> copier_;
  std::vector<int> ordinals_;
  std::int64_t bytes_;
  int copies_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> details_;
};

class P2pTest final : public Test {
 public:
  P2pTest() {
    info_.type = "p2p";
    info_.description =
        "device<->device copy bandwidth for every GPU pair, with and without peer access; the "
        "worst pair is the headline";
    info_.scope = Scope::kAllGpus;
    info_.params = {
        IntParam("bytes", 256LL << 20, "bytes", "size of each copy", 1 << 20, 8.0 * (1LL << 30)),
        IntParam("copiesPerPair", 5, "", "copies timed together per pair and mode", 1, 1000),
    };
    info_.metrics = {
        gpu::Metric("worstPairBandwidthGBps", "GB/s", true,
                    "slowest ordered pair, through peer access where the pair has it"),
        gpu::Metric("worstPairNoPeerBandwidthGBps", "GB/s", true,
                    "slowest ordered pair with peer access off (staged through the host)"),
        gpu::Metric("meanPairBandwidthGBps", "GB/s", true, "mean over ordered pairs"),
        gpu::Metric("peerAccessMissingPairCount", "count", false,
                    "ordered pairs without peer access"),
    };
  }

  const TestInfo& Info() const override { return info_; }

  // Every ordered pair, one way and both ways, copiesPerPair copies of `bytes` each.
  double SampleSeconds(const Params& params, int gpus) const override {
    const double pairs = static_cast<double>(gpus) * (gpus - 1);
    return pairs * 2 * static_cast<double>(params.Int("copiesPerPair")) *
           static_cast<double>(params.Int("bytes")) / nominal::kNvlinkBytesPerSecond;
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& target) const override {
    // CUDA first: without a driver the answer is "no CUDA device", not "one GPU".
    for (int ordinal : target.devices.empty() ? std::vector<int>{0} : target.devices) {
      RETURN_IF_ERROR(cuda::RequireCudaDevice(ordinal));
    }
    if (target.devices.size() < 2) {
      return FailedPrecondition("p2p needs at least two GPUs; " + target.Name() + " has " +
                                std::to_string(target.devices.size()));
    }
    ASSIGN_OR_RETURN(auto copier, cuda::CreatePeerCopier(target.devices, params.Int("bytes")));
    std::map<std::string, std::string> details;
    details["copy"] = gpu::FormatBytes(params.Int("bytes")) + " x " +
                      std::to_string(params.Int("copiesPerPair")) +
                      " copies per ordered pair and mode, cudaMemcpyPeerAsync on the source's "
                      "stream";
    return std::unique_ptr<TestRun>(std::make_unique<P2pRun>(
        std::move(copier), target.devices, params.Int("bytes"),
        static_cast<int>(params.Int("copiesPerPair")), std::move(details)));
  }

 private:
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakeP2pTest() { return std::make_unique<P2pTest>(); }

}  // namespace perfgate::kernels
