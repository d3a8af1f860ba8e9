// The CPU stand-in (CpuLoopbackCommunicator) and the shared harness on it: ranks as threads and
// as processes on loopback TCP, every collective verified, wrong results failing, and the
// watchdog aborting a rendezvous whose peer never comes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "kernels/fixtures/cpu_loopback.h"
#include "kernels/fixtures/fixtures.h"
#include "kernels/nccl/harness.h"
#include "kernels/registry.h"
#include "tests/gpu_presence.h"
#include "tests/kernels/gpu_test_params.h"

namespace perfgate::kernels::nccl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct World {
  int size = 1;
  TcpListener rank0;
  std::string address;
};

World MakeWorld(int size) {
  World w;
  w.size = size;
  auto listener = TcpListener::Bind({"127.0.0.1", 0});
  EXPECT_TRUE(listener.ok()) << listener.status().ToString();
  w.rank0 = std::move(*listener);
  w.address = "127.0.0.1:" + std::to_string(w.rank0.port());
  return w;
}

CpuLoopbackOptions RankOptions(World& w, int rank, double init_timeout = 20) {
  CpuLoopbackOptions o;
  o.comm.world_size = w.size;
  o.comm.ranks = {rank};
  o.comm.rank0_address = w.address;
  o.comm.init_timeout_seconds = init_timeout;
  o.comm.call_timeout_seconds = 20;
  if (rank == 0) o.rank0_listener = std::move(w.rank0);
  return o;
}

// Runs fn(rank) on `size` threads, each with its own communicator, and returns their results.
template <typename T>
std::vector<T> OnRanks(int size, const std::function<T(int)>& fn) {
  std::vector<std::future<T>> futures;
  for (int r = 0; r < size; ++r) futures.push_back(std::async(std::launch::async, fn, r));
  std::vector<T> out;
  for (auto& f : futures) out.push_back(f.get());
  return out;
}

// Every collective, out of place and in place where defined, at a few sizes: elements wrong.
std::string RunAll(Communicator& comm, std::int64_t corrupt_expected) {
  std::string problems;
  for (const auto& info : kCollectives) {
    for (std::int64_t bytes : {4, 1000, 64 * 1024}) {
      for (bool in_place : {false, true}) {
        if (in_place && !info.in_place_supported) continue;
        Call call;
        call.shape = ShapeFor(info.op, bytes, comm.world_size());
        call.in_place = in_place;
        call.seed = static_cast<std::uint32_t>(bytes) + (in_place ? 1 : 0);
        Status st = comm.Reserve(std::max(call.shape.send_count, call.shape.recv_count));
        if (st.ok()) st = comm.Fill(call);
        if (st.ok()) st = comm.Run(call, 1).status();
        if (!st.ok()) return st.ToString();
        auto wrong = comm.CountWrong(call);
        if (!wrong.ok()) return wrong.status().ToString();
        if (*wrong != corrupt_expected) {
          problems += std::string(info.name) + " " + std::to_string(bytes) +
                      (in_place ? " in-place" : "") + ": " + std::to_string(*wrong) + " wrong; ";
        }
      }
    }
  }
  return problems;
}

class LoopbackWorld : public ::testing::TestWithParam<int> {};

TEST_P(LoopbackWorld, EveryCollectiveVerifiesOnEveryRank) {
  const int n = GetParam();
  World w = MakeWorld(n);
  std::vector<CpuLoopbackOptions> options;
  for (int r = 0; r < n; ++r) options.push_back(RankOptions(w, r));
  auto results = OnRanks<std::string>(n, [&](int r) -> std::string {
    auto comm = CreateCpuLoopbackCommunicator(std::move(options[r]));
    if (!comm.ok()) return comm.status().ToString();
    if ((*comm)->world_size() != n || (*comm)->ranks() != std::vector<int>{r}) return "shape";
    return RunAll(**comm, 0);
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r], "") << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Ranks, LoopbackWorld, ::testing::Values(1, 2, 3, 4));

TEST(Loopback, CorruptedResultsAreCounted) {
  World w = MakeWorld(2);
  std::vector<CpuLoopbackOptions> options;
  options.push_back(RankOptions(w, 0));
  options.push_back(RankOptions(w, 1));
  options[1].corrupt_elements = 1;  // rank 1 plays a broken GPU
  auto results = OnRanks<std::string>(2, [&](int r) -> std::string {
    auto comm = CreateCpuLoopbackCommunicator(std::move(options[r]));
    if (!comm.ok()) return comm.status().ToString();
    return RunAll(**comm, r == 1 ? 1 : 0);
  });
  EXPECT_EQ(results[0], "");
  EXPECT_EQ(results[1], "");
}

TEST(Loopback, PeerThatNeverComesIsAbortedByTheWatchdogWithinTheDeadline) {
  World w = MakeWorld(2);
  const auto start = std::chrono::steady_clock::now();
  auto comm = CreateCpuLoopbackCommunicator(RankOptions(w, 0, 0.5));  // rank 1 never starts
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), Code::kDeadlineExceeded);
  EXPECT_THAT(comm.status().message(), HasSubstr("aborted by the watchdog"));
  EXPECT_THAT(comm.status().message(), HasSubstr("ranks never came: 1"));
  EXPECT_GE(seconds, 0.5);
  EXPECT_LT(seconds, 10);  // deadline plus scheduling slack, far from "forever"
}

TEST(Loopback, RankWhoseRankZeroNeverListensIsAborted) {
  World w = MakeWorld(2);
  const std::string address = w.address;
  w.rank0 = TcpListener();  // closes the port: nobody listens there any more
  CpuLoopbackOptions o;
  o.comm.world_size = 2;
  o.comm.ranks = {1};
  o.comm.rank0_address = address;
  o.comm.init_timeout_seconds = 0.5;
  auto comm = CreateCpuLoopbackCommunicator(std::move(o));
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), Code::kDeadlineExceeded);
  EXPECT_THAT(comm.status().message(), HasSubstr("connecting to rank 0"));
}

TEST(Loopback, PeerThatDiesMidCollectiveFailsTheOtherRank) {
  World w = MakeWorld(2);
  std::vector<CpuLoopbackOptions> options;
  options.push_back(RankOptions(w, 0));
  options.push_back(RankOptions(w, 1));
  auto results = OnRanks<Status>(2, [&](int r) -> Status {
    auto comm = CreateCpuLoopbackCommunicator(std::move(options[r]));
    if (!comm.ok()) return comm.status();
    if (r == 1) return Status::Ok();  // leaves: its destructor closes the connections
    Call call;
    call.shape = ShapeFor(Collective::kAllReduce, 1 << 20, 2);
    RETURN_IF_ERROR((*comm)->Reserve(call.shape.send_count));
    RETURN_IF_ERROR((*comm)->Fill(call));
    // The peer is gone: a closed connection or the watchdog, never a hang.
    for (int i = 0; i < 1000; ++i) RETURN_IF_ERROR((*comm)->Run(call, 1).status());
    return Internal("a collective with a dead peer kept succeeding");
  });
  EXPECT_FALSE(results[0].ok());
  EXPECT_THAT(results[0].message(), Not(HasSubstr("kept succeeding")));
}

TEST(Loopback, RanksAsSeparateProcesses) {
  constexpr int kRanks = 3;
  World w = MakeWorld(kRanks);
  std::vector<pid_t> children;
  for (int r = 1; r < kRanks; ++r) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      w.rank0 = TcpListener();
      auto comm = CreateCpuLoopbackCommunicator(RankOptions(w, r));
      const bool ok = comm.ok() && RunAll(**comm, 0).empty();
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  auto comm = CreateCpuLoopbackCommunicator(RankOptions(w, 0));
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_EQ(RunAll(**comm, 0), "");
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child rank failed";
  }
}

// ---- the harness on the stand-in ---------------------------------------------------------------

CommunicatorFactory ThreadFactory(World& w, int rank, std::int64_t corrupt = 0) {
  auto opts = std::make_shared<CpuLoopbackOptions>(RankOptions(w, rank));
  opts->corrupt_elements = corrupt;
  return [opts](const CommunicatorRequest& request) -> Result<std::unique_ptr<Communicator>> {
    opts->comm.init_timeout_seconds = request.init_timeout_seconds;
    opts->comm.call_timeout_seconds = request.call_timeout_seconds;
    return CreateCpuLoopbackCommunicator(std::move(*opts));
  };
}

// `extra` overrides or adds parameters.
Params SmallSweep(const kernels::Test& test, const std::string& collective,
                  const std::map<std::string, kernels::ParamValue>& extra = {}) {
  std::map<std::string, kernels::ParamValue> values = {{"collective", collective},
                                                       {"minBytes", std::int64_t{8}},
                                                       {"maxBytes", std::int64_t{64 * 1024}},
                                                       {"stepFactor", std::int64_t{8}},
                                                       {"warmupIterations", std::int64_t{1}},
                                                       {"iterations", std::int64_t{2}}};
  for (const auto& [k, v] : extra) values[k] = v;
  return testing::DefaultParams(test.Info(), values);
}

TEST(Harness, TwoRanksReportAlgbwAndBusbwPerSizeWithTheFormula) {
  World w = MakeWorld(2);
  std::vector<CommunicatorFactory> factories{ThreadFactory(w, 0), ThreadFactory(w, 1)};
  auto samples = OnRanks<Result<Sample>>(2, [&](int r) -> Result<Sample> {
    auto test = MakeCpuLoopbackTest(factories[r]);
    ASSIGN_OR_RETURN(auto run, test->Prepare(SmallSweep(*test, "all_reduce"), Target{}));
    ASSIGN_OR_RETURN(Sample s, run->RunSample());
    const auto details = run->Details();
    if (details.at("wrongElementsTotal") != "0") return Internal("wrong elements reported");
    if (details.at("formula").find("2(n-1)/n") == std::string::npos) return Internal("formula");
    return s;
  });
  for (auto& s : samples) {
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    for (const char* size : {"8B", "64B", "512B", "4KiB", "32KiB"}) {
      const std::string at = std::string("@") + size;
      ASSERT_EQ(s->count("algBandwidthGBps" + at), 1U) << at;
      ASSERT_EQ(s->count("busBandwidthGBps" + at), 1U) << at;
      ASSERT_EQ(s->count("inPlaceBusBandwidthGBps" + at), 1U) << at;
      EXPECT_GT(s->at("timeMicroseconds" + at), 0);
      // all_reduce on 2 ranks: busbw = algbw * 2(n-1)/n = algbw.
      EXPECT_DOUBLE_EQ(s->at("busBandwidthGBps" + at), s->at("algBandwidthGBps" + at) * 1.0);
    }
  }
}

TEST(Harness, OneRankReportsAlgbwOnlyAndSaysWhy) {
  auto test = MakeCpuLoopbackTest([](const CommunicatorRequest&) {
    CpuLoopbackOptions o;
    o.comm.world_size = 1;
    o.comm.ranks = {0};
    return CreateCpuLoopbackCommunicator(std::move(o));
  });
  auto run = test->Prepare(SmallSweep(*test, "all_gather"), Target{});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto s = (*run)->RunSample();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->count("algBandwidthGBps@32KiB"), 1U);
  EXPECT_EQ(s->count("busBandwidthGBps@32KiB"), 0U);
  EXPECT_THAT((*run)->Details().at("busBandwidth"), HasSubstr("needs two ranks or more"));
}

TEST(Harness, WrongResultsFailWithDataLossNamingWhere) {
  World w = MakeWorld(2);
  std::vector<CommunicatorFactory> factories{ThreadFactory(w, 0), ThreadFactory(w, 1, 3)};
  auto statuses = OnRanks<Status>(2, [&](int r) -> Status {
    auto test = MakeCpuLoopbackTest(factories[r]);
    ASSIGN_OR_RETURN(auto run, test->Prepare(SmallSweep(*test, "reduce_scatter"), Target{}));
    return run->RunSample().status();
  });
  EXPECT_TRUE(statuses[0].ok()) << statuses[0].ToString();
  EXPECT_EQ(statuses[1].code(), Code::kDataLoss);
  EXPECT_THAT(statuses[1].message(), HasSubstr("differ from the expected values on rank(s) 1"));
  EXPECT_THAT(statuses[1].message(), HasSubstr("reduce_scatter 8B out-of-place"));
}

TEST(Harness, FewerRanksThanMinRanksDoesNotApply) {
  auto test = MakeCpuLoopbackTest();  // no gang here: one rank
  auto run =
      test->Prepare(SmallSweep(*test, "all_reduce", {{"minRanks", std::int64_t{2}}}), Target{});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(run.status().message(),
              HasSubstr("needs 2 ranks or more (minRanks), this run has 1"));
}

// A communicator that works but reports NCCL's socket fallback between nodes.
class SocketFallbackCommunicator final : public Communicator {
 public:
  int world_size() const override { return 2; }
  std::vector<int> ranks() const override { return {0}; }
  Status Reserve(std::int64_t) override { return Status::Ok(); }
  Status Fill(const Call&) override { return Status::Ok(); }
  Result<double> Run(const Call&, int iterations) override { return 1e-3 * iterations; }
  Result<std::int64_t> CountWrong(const Call&) override { return std::int64_t{0}; }
  std::map<std::string, std::string> Details() const override {
    return {{"transport", "plain TCP sockets (NET/Socket) between nodes"}};
  }
  bool InterNodeSockets() const override { return true; }
};

TEST(Harness, MultiNodeSocketFallbackIsAFailureWithTheReason) {
  ::setenv("PERFGATE_GANG_SIZE", "2", 1);
  ::setenv("PERFGATE_GANG_RANK", "0", 1);
  ::setenv("NCCL_COMM_ID", "127.0.0.1:29500", 1);
  auto test = MakeCpuLoopbackTest([](const CommunicatorRequest&) {
    return Result<std::unique_ptr<Communicator>>(std::make_unique<SocketFallbackCommunicator>());
  });
  auto run = test->Prepare(SmallSweep(*test, "all_reduce"), Target{});
  ::unsetenv("PERFGATE_GANG_SIZE");
  ::unsetenv("PERFGATE_GANG_RANK");
  ::unsetenv("NCCL_COMM_ID");
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto s = (*run)->RunSample();
  EXPECT_EQ(s.status().code(), Code::kDataLoss);
  EXPECT_THAT(s.status().message(), HasSubstr("fell back to plain TCP sockets"));
}

// In a gang pod, a test with acrossNodes: false stays on this node: the real factory makes a
// one-rank communicator at once instead of waiting for rank 0 (nobody listens at 127.0.0.1:9
// here), and the report says so. With acrossNodes left at true it would meet the gang.
TEST(Harness, AcrossNodesFalseStaysOnThisNodeInAGang) {
  ::setenv("PERFGATE_GANG_SIZE", "3", 1);
  ::setenv("PERFGATE_GANG_RANK", "1", 1);
  ::setenv("NCCL_COMM_ID", "127.0.0.1:9", 1);
  auto test = MakeCpuLoopbackTest();
  auto run =
      test->Prepare(SmallSweep(*test, "all_reduce",
                               {{"acrossNodes", false}, {"initTimeoutSeconds", std::int64_t{1}}}),
                    Target{});
  auto gang_run = test->Prepare(
      SmallSweep(*test, "all_reduce", {{"initTimeoutSeconds", std::int64_t{1}}}), Target{});
  ::unsetenv("PERFGATE_GANG_SIZE");
  ::unsetenv("PERFGATE_GANG_RANK");
  ::unsetenv("NCCL_COMM_ID");
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ((*run)->Details().at("worldSize"), "1");
  EXPECT_THAT((*run)->Details().at("scope"), HasSubstr("this node's GPUs only"));
  EXPECT_EQ((*run)->Details().count("gang"), 0U);
  EXPECT_TRUE((*run)->RunSample().ok());
  // The same test across the gang waits for rank 0 and is aborted by the watchdog.
  ASSERT_FALSE(gang_run.ok());
  EXPECT_EQ(gang_run.status().code(), Code::kDeadlineExceeded) << gang_run.status().ToString();
}

// ---- what the worker lists ----------------------------------------------------------------------

TEST(Registry, SixCollectivesWithSizedMetricsAndTheStandInOnlyAsFixture) {
  for (const char* type : {"nccl-all-reduce", "nccl-all-gather", "nccl-reduce-scatter",
                           "nccl-alltoall", "nccl-broadcast", "nccl-sendrecv"}) {
    const kernels::Test* t = FindTest(type, false);
    ASSERT_NE(t, nullptr) << type;
    EXPECT_EQ(t->Info().scope, Scope::kAllGpus);
    const auto metrics = t->Metrics(testing::DefaultParams(t->Info()));
    bool found = false;
    for (const auto& m : metrics) found |= m.name == "busBandwidthGBps@8GiB";
    EXPECT_TRUE(found) << type << " has no busBandwidthGBps@8GiB at default parameters";
  }
  EXPECT_EQ(FindTest("nccl-cpu-loopback", false), nullptr);
  const kernels::Test* fixture = FindTest("nccl-cpu-loopback", true);
  ASSERT_NE(fixture, nullptr);
  EXPECT_TRUE(fixture->Info().fixture);
}

TEST(Registry, NcclTestWithoutAGpuIsUnavailableWithCudasText) {
  const kernels::Test* t = FindTest("nccl-all-reduce", false);
  ASSERT_NE(t, nullptr);
  Target target;
  target.scope = Scope::kAllGpus;
  target.devices = {0};
  SKIP_WITH_CUDA_DEVICE();
  auto run = t->Prepare(testing::DefaultParams(t->Info()), target);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Code::kUnavailable);
  EXPECT_THAT(run.status().message(), HasSubstr("no CUDA device"));
}

}  // namespace
}  // namespace perfgate::kernels::nccl
