// nccl-rails on fake rails: two nodes as threads, each reading a recorded ConnectX-7 sysfs tree
// (tests/kernels/sysfs/cx7-ndr-clean) for its NICs, each rail a CPU stand-in communicator in
// this process. What a user sees: every rail measured on its own, a slow rail named with its
// PCI address, NUMA node, GPU and the peer node, and a pod outside a gang not applicable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/fabric/ports.h"
#include "kernels/fixtures/cpu_loopback.h"
#include "kernels/fixtures/fixtures.h"
#include "kernels/nccl/rails.h"
#include "kernels/unmeasured.h"

namespace perfgate::kernels::nccl {
namespace {

using ::testing::HasSubstr;

std::string Tree(const std::string& name) {
  return std::string(PERFGATE_SOURCE_DIR) + "/tests/kernels/sysfs/" + name;
}

// A port with it and the two after it free right now (rails meet at the gang's port + 1 + i).
int FreePort() {
  for (int tries = 0; tries < 20; ++tries) {
    auto l = TcpListener::Bind({"127.0.0.1", 0});
    if (!l.ok()) continue;
    const int port = l->port();
    auto a = TcpListener::Bind({"127.0.0.1", port + 1});
    auto b = TcpListener::Bind({"127.0.0.1", port + 2});
    if (a.ok() && b.ok()) return port;
  }
  return 0;
}

struct Node {
  std::map<std::string, std::string> env;
};

std::unique_ptr<Test> RailTestFor(const Node& node) {
  RailTestOptions options;
  options.type = "nccl-rails";
  options.backend = "cpu-loopback";
  static const std::shared_ptr<const config::HostFs> fs = config::RealHostFs();
  options.read_ports = [] { return fabric::ReadIbPorts(*fs, Tree("cx7-ndr-clean")); };
  options.where = "cx7-ndr-clean";
  options.env = [env = node.env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  options.launch = InProcessRailLauncher(CpuLoopbackRailBackend());
  options.plantable = true;
  return MakeRailTest(std::move(options));
}

Params RailParams(std::vector<std::string> behaviour = {}) {
  return Params({{"hcas", std::vector<std::string>{"mlx5_0", "mlx5_1"}},
                 {"bytes", std::int64_t{65536}},
                 {"latencyBytes", std::int64_t{8}},
                 {"warmupIterations", std::int64_t{1}},
                 {"iterations", std::int64_t{3}},
                 {"initTimeoutSeconds", std::int64_t{20}},
                 {"timeoutSeconds", std::int64_t{20}},
                 {"behaviour", std::move(behaviour)}});
}

struct Outcome {
  Status status;
  Sample sample;
  std::map<std::string, std::string> details;
};

// Runs one sample of nccl-rails on a gang of two nodes, node-a and node-b, as threads.
std::vector<Outcome> RunPair(const Params& params) {
  const int port = FreePort();
  EXPECT_NE(port, 0);
  auto node = [&](int rank) {
    Node n;
    n.env = {{"PERFGATE_GANG_SIZE", "2"},
             {"PERFGATE_GANG_RANK", std::to_string(rank)},
             {"PERFGATE_GANG_NODES", "node-a,node-b"},
             {"NCCL_COMM_ID", "127.0.0.1:" + std::to_string(port)},
             {"NODE_NAME", rank == 0 ? "node-a" : "node-b"}};
    return n;
  };
  std::vector<std::future<Outcome>> futures;
  for (int rank = 0; rank < 2; ++rank) {
    futures.push_back(std::async(std::launch::async, [&, rank] {
      Outcome out;
      auto test = RailTestFor(node(rank));
      Target target;
      target.devices = {0, 1};
      auto run = test->Prepare(params, target);
      if (!run.ok()) {
        out.status = run.status();
        return out;
      }
      auto sample = (*run)->RunSample();
      if (!sample.ok()) {
        out.status = sample.status();
      } else {
        out.sample = *sample;
      }
      out.details = (*run)->Details();
      return out;
    }));
  }
  std::vector<Outcome> out;
  for (auto& f : futures) out.push_back(f.get());
  return out;
}

TEST(NcclRails, EveryRailIsMeasuredOnItsOwnAndNamedWithItsPlacementAndPeer) {
  auto outcomes = RunPair(RailParams());
  ASSERT_EQ(outcomes.size(), 2U);
  for (const Outcome& o : outcomes) {
    ASSERT_TRUE(o.status.ok()) << o.status.message();
    for (const char* metric : {"railBusBandwidthGBps@mlx5_0", "railBusBandwidthGBps@mlx5_1",
                               "railLatencyMicroseconds@mlx5_0", "railLatencyMicroseconds@mlx5_1",
                               "slowestRailBusBandwidthGBps", "slowestRailLatencyMicroseconds"}) {
      ASSERT_EQ(o.sample.count(metric), 1U) << metric;
      EXPECT_GT(o.sample.at(metric), 0) << metric;
    }
    EXPECT_LE(o.sample.at("slowestRailBusBandwidthGBps"),
              o.sample.at("railBusBandwidthGBps@mlx5_1"));
    EXPECT_THAT(o.details.at("rail.mlx5_1"), HasSubstr("NCCL_IB_HCA==mlx5_1:1"));
    EXPECT_THAT(o.details.at("rail.mlx5_1"), HasSubstr("PCI 0000:40:00.0"));
    EXPECT_THAT(o.details.at("rail.mlx5_1.lastSample"), HasSubstr(" GB/s, "));
  }
  EXPECT_THAT(outcomes[0].details.at("rail.mlx5_0"), HasSubstr("paired with node-b"));
  EXPECT_THAT(outcomes[1].details.at("rail.mlx5_0"), HasSubstr("paired with node-a"));
}

TEST(NcclRails, ASlowRailIsNamedFirstWithItsNicPlacementAndPeerOnBothSides) {
  auto outcomes = RunPair(RailParams({"node-b/mlx5_1=slow:100"}));
  ASSERT_EQ(outcomes.size(), 2U);
  for (const Outcome& o : outcomes) {
    ASSERT_TRUE(o.status.ok()) << o.status.message();
    // 64 KiB per 100 ms is under 1 MB/s; the other rail is far faster.
    EXPECT_LT(o.sample.at("railBusBandwidthGBps@mlx5_1"), 0.001);
    EXPECT_GT(o.sample.at("railBusBandwidthGBps@mlx5_0"),
              10 * o.sample.at("railBusBandwidthGBps@mlx5_1"));
    EXPECT_EQ(o.sample.at("slowestRailBusBandwidthGBps"),
              o.sample.at("railBusBandwidthGBps@mlx5_1"));
    const std::string& named = o.details.at(CountedKey("slowestRailBusBandwidthGBps"));
    EXPECT_EQ(named.rfind("mlx5_1 (PCI 0000:40:00.0, NUMA 0, GPU 1) paired with ", 0), 0U) << named;
  }
  EXPECT_THAT(outcomes[1].details.at(CountedKey("slowestRailBusBandwidthGBps")),
              HasSubstr("paired with node-a"));
  EXPECT_THAT(outcomes[0].details.at(CountedKey("slowestRailBusBandwidthGBps")),
              HasSubstr("paired with node-b"));
}

TEST(NcclRails, WithoutHcasTheRailsAreThoseThePodsNcclIbHcaSelects) {
  static const std::shared_ptr<const config::HostFs> fs = config::RealHostFs();
  auto ports = fabric::ReadIbPorts(*fs, Tree("cx7-ndr-clean"));
  ASSERT_TRUE(ports.ok());
  using V = std::vector<std::string>;
  EXPECT_EQ(RailHcas("", *ports).size(), 8U);
  EXPECT_EQ(RailHcas("mlx5_3,mlx5_1", *ports), (V{"mlx5_3", "mlx5_1"}));
  EXPECT_EQ(RailHcas("=mlx5_0:1,mlx5_2:1", *ports), (V{"mlx5_0", "mlx5_2"}));
  EXPECT_EQ(RailHcas("^mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5", *ports),
            (V{"mlx5_6", "mlx5_7"}));
  EXPECT_EQ(RailHcas("mlx5", *ports).size(), 8U);  // a prefix, as NCCL reads it
}

TEST(NcclRails, ThePlanReportsEachRailNamedInHcas) {
  auto test = RailTestFor(Node{});
  std::vector<std::string> names;
  for (const auto& m : test->Metrics(RailParams())) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "slowestRailBusBandwidthGBps", "slowestRailLatencyMicroseconds",
                       "railBusBandwidthGBps@mlx5_0", "railLatencyMicroseconds@mlx5_0",
                       "railBusBandwidthGBps@mlx5_1", "railLatencyMicroseconds@mlx5_1"}));
}

TEST(NcclRails, APodOutsideAGangIsNotApplicable) {
  auto test = RailTestFor(Node{});
  auto run = test->Prepare(RailParams(), Target{});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(run.status().message(), HasSubstr("gang"));
}

TEST(NcclRails, AnHcaThatIsNotThereIsNamed) {
  Node n;
  n.env = {
      {"PERFGATE_GANG_SIZE", "2"}, {"PERFGATE_GANG_RANK", "0"}, {"NCCL_COMM_ID", "127.0.0.1:1"}};
  auto test = RailTestFor(n);
  Params params = RailParams();
  params = Params({{"hcas", std::vector<std::string>{"mlx5_9"}},
                   {"bytes", std::int64_t{65536}},
                   {"latencyBytes", std::int64_t{8}},
                   {"warmupIterations", std::int64_t{1}},
                   {"iterations", std::int64_t{3}},
                   {"initTimeoutSeconds", std::int64_t{1}},
                   {"timeoutSeconds", std::int64_t{1}},
                   {"behaviour", std::vector<std::string>{}}});
  auto run = test->Prepare(params, Target{});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Code::kNotFound);
  EXPECT_THAT(run.status().message(), HasSubstr("mlx5_9"));
}

TEST(NcclRails, AChildIsPinnedToItsHcaByExactNameAndItsJobSurvivesTheCommandLine) {
  RailJob job;
  job.backend = "cpu-loopback";
  job.hca = "mlx5_1";
  job.port = 1;
  job.device = 1;
  job.rank0 = "10.0.0.1:29502";
  job.rank = 1;
  job.world = 2;
  job.bytes = 1 << 20;
  job.planted_delay_seconds = 0.25;
  // "=": exact, so mlx5_1 does not also select mlx5_10..mlx5_17.
  EXPECT_EQ(job.IbHca(), "=mlx5_1:1");
  auto back = ParseRailJob(RailJobArgs(job));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(RailJobArgs(*back), RailJobArgs(job));
  EXPECT_FALSE(ParseRailJob({"--hca=mlx5_0", "--rank=2", "--world=2", "--rank0=a:1"}).ok());
}

TEST(NcclRails, AChildAnswersOverItsStdoutAndReportsAPeerThatNeverComes) {
  RailJob job;
  job.backend = "cpu-loopback";
  job.hca = "mlx5_0";
  job.rank0 = "127.0.0.1:" + std::to_string(FreePort());
  job.rank = 1;
  job.world = 2;
  job.init_timeout_seconds = 0.5;
  std::istringstream in("run 0\n");
  std::ostringstream out;
  const int rc =
      RailChildMain(RailJobArgs(job), {{"cpu-loopback", CpuLoopbackRailBackend()}}, in, out);
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(out.str(), HasSubstr("@perfgate-rail error "));
  std::ostringstream unknown;
  std::istringstream none;
  EXPECT_EQ(RailChildMain(RailJobArgs(job), {}, none, unknown), 1);
  EXPECT_THAT(unknown.str(), HasSubstr("cpu-loopback%20is%20not%20in%20this%20binary"));
}

// A rail whose process is gone (here: one that never was a rail child) is an error of that
// rail, not the end of the worker: no answer, and a request written to its closed stdin does
// not raise SIGPIPE.
TEST(NcclRails, ARailWhoseProcessEndedIsAnErrorAndTheWorkerLivesOn) {
  RailJob job;
  job.hca = "mlx5_0";
  job.rank0 = "127.0.0.1:1";
  job.init_timeout_seconds = 5;
  job.call_timeout_seconds = 5;
  auto rail = ProcessRailLauncher("/bin/false")(job);
  ASSERT_TRUE(rail.ok()) << rail.status().message();
  const Status ready = (*rail)->Ready();
  EXPECT_FALSE(ready.ok());
  EXPECT_THAT(ready.message(), HasSubstr("rail mlx5_0: its process ended without an answer"));
  auto measured = (*rail)->Measure(0);
  EXPECT_FALSE(measured.ok());
}

}  // namespace
}  // namespace perfgate::kernels::nccl
