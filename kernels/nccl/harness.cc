#include "kernels/nccl/harness.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <utility>

#include "kernels/cuda/device.h"
#include "kernels/nccl/gang.h"
#include "kernels/nccl/nccl_communicator.h"
#include "kernels/nccl/nccl_debug.h"
#include "kernels/test_factories.h"

namespace perfgate::kernels::nccl {
namespace {

MetricInfo Metric(std::string name, std::string unit, bool higher_is_better,
                  std::string description) {
  return {std::move(name), std::move(unit), higher_is_better, std::move(description)};
}

struct SweepConfig {
  std::vector<std::int64_t> sizes;
  int warmup = 5;
  int iterations = 20;
  bool in_place = true;
  bool verify = true;
};

Result<SweepConfig> ReadSweep(const Params& params) {
  SweepConfig c;
  ASSIGN_OR_RETURN(c.sizes, SweepSizes(params.Int("minBytes"), params.Int("maxBytes"),
                                       params.Int("stepFactor")));
  c.warmup = static_cast<int>(params.Int("warmupIterations"));
  c.iterations = static_cast<int>(params.Int("iterations"));
  c.in_place = params.Bool("inPlace");
  c.verify = params.Bool("verify");
  return c;
}

std::string RankList(const std::vector<int>& ranks) {
  if (ranks.empty()) return "";
  if (ranks.size() == 1) return std::to_string(ranks.front());
  return std::to_string(ranks.front()) + ".." + std::to_string(ranks.back());
}

class CollectiveRun final : public TestRun {
 public:
  CollectiveRun(Collective op, SweepConfig config, std::unique_ptr<Communicator> comm,
                bool multi_node, std::map<std::string, std::string> details)
      : op_(op),
        config_(std::move(config)),
        comm_(std::move(comm)),
        multi_node_(multi_node),
        details_(std::move(details)) {}

  Result<Sample> RunSample() override {
    const int n = comm_->world_size();
    const bool in_place = config_.in_place && Info(op_).in_place_supported;
    Sample sample;
    std::map<std::string, std::string> notes;
    std::int64_t wrong_total = 0;
    std::string first_wrong;
    for (std::size_t s = 0; s < config_.sizes.size(); ++s) {
      const std::int64_t nominal = config_.sizes[s];
      Call call;
      call.shape = ShapeFor(op_, nominal, n);
      for (int mode = 0; mode < (in_place ? 2 : 1); ++mode) {
        call.in_place = mode == 1;
        call.seed = static_cast<std::uint32_t>(samples_ * 2 * config_.sizes.size() + 2 * s + mode);
        RETURN_IF_ERROR(comm_->Fill(call));
        if (config_.warmup > 0) {
          ASSIGN_OR_RETURN(double warm, comm_->Run(call, config_.warmup));
          (void)warm;
        }
        ASSIGN_OR_RETURN(const double seconds, comm_->Run(call, config_.iterations));
        const double per_call = seconds / config_.iterations;
        const double algbw = AlgBandwidthGBps(call.shape.bytes, per_call);
        sample[AlgBandwidthMetric(nominal, call.in_place)] = algbw;
        if (BusBandwidthMeaningful(n)) {
          sample[BusBandwidthMetric(nominal, call.in_place)] = algbw * BusBandwidthFactor(op_, n);
        }
        if (!call.in_place) sample[TimeMetric(nominal)] = per_call * 1e6;
        if (!config_.verify) continue;
        if (call.in_place) {
          // In place, each iteration consumed the previous one's output: check a fresh call.
          call.seed ^= 0x80000000U;
          RETURN_IF_ERROR(comm_->Fill(call));
          ASSIGN_OR_RETURN(const double once, comm_->Run(call, 1));
          (void)once;
        }
        ASSIGN_OR_RETURN(const std::int64_t wrong, comm_->CountWrong(call));
        if (wrong > 0) {
          const std::string where = std::string(Info(op_).name) + " " + SizeLabel(nominal) +
                                    (call.in_place ? " in-place" : " out-of-place");
          notes["wrongElements " + where] = std::to_string(wrong);
          if (first_wrong.empty()) first_wrong = where;
          wrong_total += wrong;
        }
      }
    }
    ++samples_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [k, v] : notes) details_[k] = v;
      details_["wrongElementsTotal"] = std::to_string(wrong_total_ += wrong_total);
      for (const auto& [k, v] : comm_->Details()) details_[k] = v;
    }
    if (wrong_total > 0) {
      return DataLoss(std::to_string(wrong_total) + " result element(s) differ from the expected " +
                      "values on rank(s) " + RankList(comm_->ranks()) + ", first at " +
                      first_wrong +
                      " (inputs are exactly predictable; a wrong element is a "
                      "broken GPU, link or library)");
    }
    if (multi_node_ && comm_->InterNodeSockets()) {
      const auto d = comm_->Details();
      const auto t = d.find("transport");
      return DataLoss("multi-node run fell back to plain TCP sockets between nodes: " +
                      (t == d.end() ? std::string("NET/Socket") : t->second) +
                      " (expected InfiniBand/RoCE or another RDMA network; check the RDMA "
                      "resources, NCCL_IB_HCA and NCCL_SOCKET_IFNAME given to the pods)");
    }
    return sample;
  }

  std::map<std::string, std::string> Details() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return details_;
  }

 private:
  Collective op_;
  SweepConfig config_;
  std::unique_ptr<Communicator> comm_;
  bool multi_node_;
  std::int64_t samples_ = 0;
  std::int64_t wrong_total_ = 0;
  mutable std::mutex mu_;
  std::map<std::string, std::string> details_;
};

class CollectiveTest final : public Test {
 public:
  // One collective, described here.
  CollectiveTest(Collective op, CommunicatorFactory factory)
      : op_(op), factory_(std::move(factory)) {
    const CollectiveInfo& c = nccl::Info(op);
    info_.type = std::string(c.test_type);
    info_.description = "NCCL " + std::string(c.name) +
                        " over all of the node's GPUs (and across a gang's nodes): size sweep, "
                        "algbw and busbw = algbw * " +
                        std::string(c.bus_factor_text) + " as in nccl-tests, results verified";
    info_.scope = Scope::kAllGpus;
    info_.params = SweepParams();
    AddMetrics(c.bus_factor_text);
  }
  // The collective is the parameter `collective`; `info` says the rest.
  CollectiveTest(TestInfo info, CommunicatorFactory factory)
      : factory_(std::move(factory)), info_(std::move(info)) {
    AddMetrics("factor(n)");
  }

  const TestInfo& Info() const override { return info_; }

  // Every size of the sweep, warm-up and timed calls, out of place and (where NCCL has it) in
  // place; a call costs its latency plus twice its size over one NVLink direction.
  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    auto config = ReadSweep(params);
    if (!config.ok()) return 0;
    const int modes = config->in_place && nccl::Info(OpOf(params)).in_place_supported ? 2 : 1;
    double seconds = 0;
    for (std::int64_t size : config->sizes) {
      seconds += nominal::kCollectiveLatencySeconds +
                 2 * static_cast<double>(size) / nominal::kNvlinkBytesPerSecond;
    }
    return seconds * modes * (config->warmup + config->iterations);
  }

  std::vector<MetricInfo> Metrics(const Params& params) const override {
    auto config = ReadSweep(params);
    if (!config.ok()) return info_.metrics;
    const Collective op = OpOf(params);
    const std::string factor(nccl::Info(op).bus_factor_text);
    const bool in_place = config->in_place && nccl::Info(op).in_place_supported;
    std::vector<MetricInfo> out;
    const std::string bus_text = "busbw = algbw * " + factor;
    for (std::int64_t size : config->sizes) {
      const std::string at = " at " + SizeLabel(size);
      out.push_back(Metric(AlgBandwidthMetric(size, false), "GB/s", true, "algbw" + at));
      out.push_back(Metric(BusBandwidthMetric(size, false), "GB/s", true,
                           bus_text + at + " (two ranks or more)"));
      out.push_back(Metric(TimeMetric(size), "us", false, "time per call" + at));
      if (in_place) {
        out.push_back(Metric(AlgBandwidthMetric(size, true), "GB/s", true, "algbw in place" + at));
        out.push_back(Metric(BusBandwidthMetric(size, true), "GB/s", true,
                             "busbw in place" + at + " (two ranks or more)"));
      }
    }
    return out;
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& target) const override {
    const Collective op = OpOf(params);
    ASSIGN_OR_RETURN(SweepConfig config, ReadSweep(params));
    CommunicatorRequest request;
    request.target = target;
    request.init_timeout_seconds = static_cast<double>(params.Int("initTimeoutSeconds"));
    request.call_timeout_seconds = static_cast<double>(params.Int("timeoutSeconds"));
    request.within_node = !params.Bool("acrossNodes");
    request.params = &params;
    ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm, factory_(request));
    const int n = comm->world_size();
    if (n < params.Int("minRanks")) {
      return FailedPrecondition("needs " + std::to_string(params.Int("minRanks")) +
                                " ranks or more (minRanks), this run has " + std::to_string(n));
    }
    std::int64_t elements = 1;
    for (std::int64_t size : config.sizes) {
      const CallShape s = ShapeFor(op, size, n);
      elements = std::max({elements, s.send_count, s.recv_count});
    }
    RETURN_IF_ERROR(comm->Reserve(elements));

    std::map<std::string, std::string> details;
    const CollectiveInfo& c = nccl::Info(op);
    details["collective"] = std::string(c.name) + ", uint32 sum, root 0 where rooted";
    details["formula"] = "algbw = S / t; busbw = algbw * " + std::string(c.bus_factor_text) +
                         " (nccl-tests doc/PERFORMANCE.md); 1 GB = 1e9 bytes";
    details["sweep"] = SizeLabel(config.sizes.front()) + " .. " + SizeLabel(config.sizes.back()) +
                       " x" + std::to_string(params.Int("stepFactor")) + ", " +
                       std::to_string(config.warmup) + " warm-up + " +
                       std::to_string(config.iterations) + " timed iterations per size and mode";
    details["worldSize"] = std::to_string(n);
    details["localRanks"] = RankList(comm->ranks());
    if (!BusBandwidthMeaningful(n)) {
      details["busBandwidth"] = "not reported: busbw needs two ranks or more, this run has " +
                                std::to_string(n) + "; algbw only";
    }
    if (config.in_place && !c.in_place_supported) {
      details["inPlace"] = "not measured: NCCL defines no in-place " + std::string(c.name);
    }
    details["verification"] =
        config.verify ? "every result element, every size and mode" : "off (verify: false)";
    auto gang = GangOf(request);
    const bool multi_node = gang.ok() && gang->multi_node();
    if (request.within_node) details["scope"] = "this node's GPUs only (acrossNodes: false)";
    if (gang.ok() && multi_node) {
      details["gang"] = (gang->id.empty() ? std::string() : gang->id + ", ") + "pod rank " +
                        std::to_string(gang->rank) + " of " + std::to_string(gang->size);
    }
    for (const auto& [k, v] : comm->Details()) details[k] = v;
    return std::unique_ptr<TestRun>(std::make_unique<CollectiveRun>(
        op, std::move(config), std::move(comm), multi_node, std::move(details)));
  }

 private:
  void AddMetrics(std::string_view bus_factor_text) {
    info_.metrics = {
        Metric("algBandwidthGBps@<size>", "GB/s", true,
               "S / t per call at each size of the sweep, out of place (S as nccl-tests)"),
        Metric("busBandwidthGBps@<size>", "GB/s", true,
               "algbw * " + std::string(bus_factor_text) +
                   ", out of place; only with two ranks or more"),
        Metric("timeMicroseconds@<size>", "us", false, "time per call, out of place"),
        Metric("inPlaceAlgBandwidthGBps@<size>", "GB/s", true, "algbw, in place"),
        Metric("inPlaceBusBandwidthGBps@<size>", "GB/s", true,
               "busbw, in place; only with two ranks or more"),
    };
  }

  Collective OpOf(const Params& params) const {
    if (op_) return *op_;
    return CollectiveByName(params.String("collective")).value_or(Collective::kAllReduce);
  }

  std::optional<Collective> op_;
  CommunicatorFactory factory_;
  TestInfo info_;
};

std::string DebugDirectory() {
  const char* tmp = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): read-only
  return tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp";
}

}  // namespace

CommunicatorFactory NcclFactory() {
  return [](const CommunicatorRequest& request) -> Result<std::unique_ptr<Communicator>> {
    // CUDA first: without a driver the answer is "no CUDA device", whatever the gang says.
    for (int d : request.target.devices.empty() ? std::vector<int>{0} : request.target.devices) {
      RETURN_IF_ERROR(cuda::RequireCudaDevice(d));
    }
    ASSIGN_OR_RETURN(GangConfig gang, GangOf(request));
    ASSIGN_OR_RETURN(RankLayout layout,
                     LayoutFor(gang, static_cast<int>(request.target.devices.size())));
    CommunicatorOptions options;
    options.devices = request.target.devices;
    options.world_size = layout.world_size;
    options.ranks = layout.ranks;
    if (gang.multi_node()) options.rank0_address = gang.rank0->ToString();
    options.init_timeout_seconds = request.init_timeout_seconds;
    options.call_timeout_seconds = request.call_timeout_seconds;
    const std::string log = PrepareNcclDebugLog(DebugDirectory());
    if (gang.multi_node()) PrepareNcclConnectRetries(request.init_timeout_seconds);
    return CreateNcclCommunicator(options, log);
  };
}

Result<GangConfig> GangOf(const CommunicatorRequest& request) {
  if (request.within_node) return GangConfig{};
  return GangFromEnv(ProcessEnv());
}

std::unique_ptr<Test> MakeCollectiveTest(Collective op, CommunicatorFactory factory) {
  return std::make_unique<CollectiveTest>(op, std::move(factory));
}

std::unique_ptr<Test> MakeCollectiveChoiceTest(TestInfo info, CommunicatorFactory factory) {
  return std::make_unique<CollectiveTest>(std::move(info), std::move(factory));
}

std::vector<ParamInfo> SweepParams() {
  return {
      IntParam("minBytes", 8, "bytes", "smallest size of the sweep (nccl-tests -b)", 4,
               64.0 * kGiB),
      IntParam("maxBytes", 8 * kGiB, "bytes", "largest size of the sweep (nccl-tests -e)", 4,
               64.0 * kGiB),
      IntParam("stepFactor", 2, "", "each size is the previous times this (nccl-tests -f)", 2,
               1 << 20),
      IntParam("warmupIterations", 5, "",
               "untimed iterations per size and mode before the timed ones (nccl-tests -w)", 0,
               1000),
      IntParam("iterations", 20, "", "timed iterations per size and mode (nccl-tests -n)", 1,
               100000),
      BoolParam("inPlace", true,
                "also measure the in-place form (all_reduce, all_gather, reduce_scatter, "
                "broadcast; NCCL defines none for alltoall and sendrecv)"),
      BoolParam("verify", true,
                "check every result against the predictable inputs; a wrong element fails"),
      BoolParam("acrossNodes", true,
                "in a gang, one communicator across the gang's nodes; false: this node's GPUs "
                "only, even in a gang (a bound on NVLink, as the built-in profiles give, must "
                "not be applied to the network between nodes)"),
      IntParam("minRanks", 1, "",
               "fewer ranks than this (one per GPU) and the test does not apply here (SKIPPED, "
               "as p2p on one GPU): a busbw bound needs two",
               1, 1 << 20),
      IntParam("initTimeoutSeconds", 600, "seconds",
               "watchdog deadline for the rendezvous and communicator init: pods of a gang may "
               "start minutes apart",
               1, 86400),
      IntParam("timeoutSeconds", 300, "seconds",
               "watchdog deadline for each wait on a collective; past it the communicator is "
               "aborted",
               1, 86400),
  };
}

}  // namespace perfgate::kernels::nccl
