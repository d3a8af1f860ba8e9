// Host-side logic of the NCCL tests: shapes and busbw arithmetic against nccl-tests'
// definitions, the predictable pattern against a brute-force reference, the gang's
// environment, NCCL's log parser and the watchdog (fake clock).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/nccl/collective.h"
#include "kernels/nccl/gang.h"
#include "kernels/nccl/nccl_debug.h"
#include "kernels/nccl/pattern.h"
#include "kernels/nccl/watchdog.h"

namespace perfgate::kernels::nccl {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t kGiB = 1LL << 30;

// ---- shapes and bandwidth ---------------------------------------------------------------------

TEST(CollectiveShape, EightGiBOnEightRanksMatchesNcclTestsCounts) {
  const std::int64_t elements = 8 * kGiB / 4;
  const CallShape ar = ShapeFor(Collective::kAllReduce, 8 * kGiB, 8);
  EXPECT_EQ(ar.nccl_count, elements);
  EXPECT_EQ(ar.bytes, 8 * kGiB);
  const CallShape ag = ShapeFor(Collective::kAllGather, 8 * kGiB, 8);
  EXPECT_EQ(ag.send_count, elements / 8);  // per rank
  EXPECT_EQ(ag.recv_count, elements);      // gathered
  EXPECT_EQ(ag.bytes, 8 * kGiB);
  const CallShape rs = ShapeFor(Collective::kReduceScatter, 8 * kGiB, 8);
  EXPECT_EQ(rs.recv_count, elements / 8);
  EXPECT_EQ(rs.send_count, elements);
  EXPECT_EQ(rs.bytes, 8 * kGiB);
  const CallShape a2a = ShapeFor(Collective::kAllToAll, 8 * kGiB, 8);
  EXPECT_EQ(a2a.nccl_count, elements / 8);  // per peer
  EXPECT_EQ(a2a.send_count, elements);
}

TEST(CollectiveShape, SplitArraysRoundToWholeElementsPerRank) {
  // 8 bytes on 3 ranks: 2 elements cannot be split in three, so each rank gets one.
  const CallShape ag = ShapeFor(Collective::kAllGather, 8, 3);
  EXPECT_EQ(ag.send_count, 1);
  EXPECT_EQ(ag.recv_count, 3);
  EXPECT_EQ(ag.bytes, 12);
  // 100 bytes = 25 elements on 4 ranks: 6 per rank, 24 in all.
  const CallShape rs = ShapeFor(Collective::kReduceScatter, 100, 4);
  EXPECT_EQ(rs.recv_count, 6);
  EXPECT_EQ(rs.bytes, 96);
}

TEST(CollectiveBandwidth, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllToAll, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kSendRecv, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllReduce, 1), 0.0);
  EXPECT_FALSE(BusBandwidthMeaningful(1));
  EXPECT_TRUE(BusBandwidthMeaningful(2));
  // 8 GiB in 0.1 s is 85.9 GB/s (1 GB = 1e9 bytes).
  EXPECT_NEAR(AlgBandwidthGBps(8 * kGiB, 0.1), 85.899, 1e-3);
}

TEST(CollectiveSweep, EightBytesToEightGiBByTwoIsThirtyOneSizes) {
  auto sizes = SweepSizes(8, 8 * kGiB, 2);
  ASSERT_TRUE(sizes.ok());
  ASSERT_EQ(sizes->size(), 31U);
  EXPECT_EQ(sizes->front(), 8);
  EXPECT_EQ(sizes->back(), 8 * kGiB);
  auto uneven = SweepSizes(1000, 5000, 4);
  ASSERT_TRUE(uneven.ok());
  EXPECT_EQ(*uneven, (std::vector<std::int64_t>{1000, 4000, 5000}));  // max always in
  EXPECT_FALSE(SweepSizes(0, 8, 2).ok());
  EXPECT_FALSE(SweepSizes(16, 8, 2).ok());
  EXPECT_FALSE(SweepSizes(8, 16, 1).ok());
}

TEST(CollectiveMetrics, NamesCarryTheSize) {
  EXPECT_EQ(BusBandwidthMetric(8 * kGiB, false), "busBandwidthGBps@8GiB");
  EXPECT_EQ(AlgBandwidthMetric(64LL << 20, true), "inPlaceAlgBandwidthGBps@64MiB");
  EXPECT_EQ(TimeMetric(8), "timeMicroseconds@8B");
  EXPECT_EQ(SizeLabel(3 * 1024), "3KiB");
  EXPECT_EQ(SizeLabel(1000), "1000B");
  EXPECT_EQ(CollectiveByName("reduce_scatter"), Collective::kReduceScatter);
  EXPECT_EQ(CollectiveByName("reduce"), std::nullopt);
}

// ---- the pattern against a brute-force collective ---------------------------------------------

// What each rank holds after the collective, computed the long way from every rank's input.
std::vector<std::vector<std::uint32_t>> Reference(const CallShape& s, std::uint32_t seed) {
  const int n = s.world_size;
  const auto c = static_cast<std::size_t>(s.nccl_count);
  std::vector<std::vector<std::uint32_t>> in(n), out(n);
  for (int r = 0; r < n; ++r) {
    for (std::int64_t i = 0; i < s.send_count; ++i) in[r].push_back(InputValue(r, i, seed));
    out[r].assign(static_cast<std::size_t>(s.recv_count), 0);
  }
  for (int r = 0; r < n; ++r) {
    for (std::size_t j = 0; j < out[r].size(); ++j) {
      std::uint32_t v = 0;
      switch (s.op) {
        case Collective::kAllReduce:
          for (int p = 0; p < n; ++p) v += in[p][j];
          break;
        case Collective::kAllGather:
          v = in[j / c][j % c];
          break;
        case Collective::kReduceScatter:
          for (int p = 0; p < n; ++p) v += in[p][r * c + j];
          break;
        case Collective::kAllToAll:
          v = in[j / c][r * c + j % c];
          break;
        case Collective::kBroadcast:
          v = in[0][j];
          break;
        case Collective::kSendRecv:
          v = in[(r + n - 1) % n][j];
          break;
      }
      out[r][j] = v;
    }
  }
  return out;
}

TEST(Pattern, ClosedFormsMatchBruteForceForEveryCollective) {
  for (const auto& info : kCollectives) {
    for (int n : {1, 2, 3, 5}) {
      const CallShape s = ShapeFor(info.op, 4 * 37 * n, n);
      const std::uint32_t seed = 11;
      const auto expected = Reference(s, seed);
      for (int r = 0; r < n; ++r) {
        const PatternCall call{info.rules->result, n, r, s.nccl_count, seed};
        for (std::size_t j = 0; j < expected[r].size(); ++j) {
          ASSERT_EQ(ExpectedValue(call, j), expected[r][j])
              << info.name << " n=" << n << " rank " << r << " element " << j;
        }
      }
    }
  }
}

TEST(Pattern, WrongRankWrongOffsetAndStaleDataDoNotMatch) {
  EXPECT_NE(InputValue(0, 5, 1), InputValue(1, 5, 1));
  EXPECT_NE(InputValue(0, 5, 1), InputValue(0, 6, 1));
  EXPECT_NE(InputValue(0, 5, 1), InputValue(0, 5, 2));
  // The sum wraps modulo 2^32 instead of losing precision: 4096 ranks are still exact.
  std::uint32_t sum = 0;
  for (int p = 0; p < 4096; ++p) sum += InputValue(p, 7, 3);
  EXPECT_EQ(SumOverRanks(4096, 7, 3), sum);
}

// ---- gang environment --------------------------------------------------------------------------

EnvLookup Env(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Gang, NoEnvironmentIsASingleNodeRun) {
  auto gang = GangFromEnv(Env({}));
  ASSERT_TRUE(gang.ok());
  EXPECT_FALSE(gang->multi_node());
  auto layout = LayoutFor(*gang, 8);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->world_size, 8);
  EXPECT_EQ(layout->ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Gang, PodRankTimesGpusGivesGlobalRanks) {
  auto gang = GangFromEnv(Env({{"PERFGATE_GANG_SIZE", "4"},
                               {"PERFGATE_GANG_RANK", "2"},
                               {"PERFGATE_GANG_GPUS_PER_NODE", "8"},
                               {"PERFGATE_GANG_ID", "val-a-pairs-0"},
                               {"NCCL_COMM_ID", "val-a-r0.perfgate-gang.perfgate-system:29500"}}));
  ASSERT_TRUE(gang.ok()) << gang.status().ToString();
  EXPECT_TRUE(gang->multi_node());
  EXPECT_EQ(gang->rank0->host, "val-a-r0.perfgate-gang.perfgate-system");
  EXPECT_EQ(gang->rank0->port, 29500);
  auto layout = LayoutFor(*gang, 8);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->world_size, 32);
  EXPECT_EQ(layout->ranks.front(), 16);
  EXPECT_EQ(layout->ranks.back(), 23);
  // A pod that sees fewer GPUs than the gang expects would leave NCCL waiting for ranks.
  auto short_pod = LayoutFor(*gang, 7);
  ASSERT_FALSE(short_pod.ok());
  EXPECT_THAT(short_pod.status().message(), HasSubstr("PERFGATE_GANG_GPUS_PER_NODE=8"));
}

TEST(Gang, MalformedEnvironmentNamesTheVariable) {
  auto no_comm = GangFromEnv(Env({{"PERFGATE_GANG_SIZE", "2"}, {"PERFGATE_GANG_RANK", "1"}}));
  ASSERT_FALSE(no_comm.ok());
  EXPECT_THAT(no_comm.status().message(), HasSubstr("NCCL_COMM_ID"));
  auto bad_rank = GangFromEnv(
      Env({{"PERFGATE_GANG_SIZE", "2"}, {"PERFGATE_GANG_RANK", "2"}, {"NCCL_COMM_ID", "h:1"}}));
  ASSERT_FALSE(bad_rank.ok());
  EXPECT_THAT(bad_rank.status().message(), HasSubstr("PERFGATE_GANG_RANK=2 is out of range"));
  auto no_rank = GangFromEnv(Env({{"PERFGATE_GANG_SIZE", "2"}, {"NCCL_COMM_ID", "h:1"}}));
  EXPECT_FALSE(no_rank.ok());
  auto bad_port = GangFromEnv(Env({{"NCCL_COMM_ID", "host:http"}}));
  ASSERT_FALSE(bad_port.ok());
  EXPECT_THAT(bad_port.status().message(), HasSubstr("NCCL_COMM_ID"));
}

TEST(Gang, HostPortParsesNamesAndIpv6) {
  auto v6 = ParseHostPort("[fd00::1]:29500");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "fd00::1");
  EXPECT_EQ(v6->ToString(), "[fd00::1]:29500");
  EXPECT_FALSE(ParseHostPort("fd00::1:29500").ok());  // ambiguous without brackets
  EXPECT_FALSE(ParseHostPort("host:0").ok());
  EXPECT_TRUE(ParseHostPort("127.0.0.1:0", true).ok());
  EXPECT_FALSE(ParseHostPort(":80").ok());
}

TEST(Gang, NcclEnvironmentKeepsOnlyNetworkVariables) {
  auto env = NcclEnvironment({"NCCL_IB_HCA=mlx5_0,mlx5_1", "PATH=/bin", "NCCL_SOCKET_IFNAME=eth0",
                              "MY_NCCL_X=1", "FI_PROVIDER=efa", "UCX_TLS=rc", "XFI_Y=2"});
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"FI_PROVIDER", "efa"},
                                                     {"NCCL_IB_HCA", "mlx5_0,mlx5_1"},
                                                     {"NCCL_SOCKET_IFNAME", "eth0"},
                                                     {"UCX_TLS", "rc"}}));
}

TEST(Gang, ConnectRetriesCoverTheInitDeadline) {
  EXPECT_EQ(SocketRetriesFor(10), 34);  // never below NCCL's default
  const int n = SocketRetriesFor(600);
  EXPECT_GE(0.05 * n * (n + 1), 600);
  EXPECT_LT(0.05 * (n - 1) * n, 600);
}

// ---- NCCL's log ---------------------------------------------------------------------------------

constexpr char kSingleNodeLog[] =
    "h200:1234:1234 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
    "h200:1234:1250 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 16, bw 40.000000/40.000000, "
    "type NVL/PIX, sameChannels 1\n"
    "h200:1234:1250 [0] NCCL INFO NVLS multicast support is available on dev 0 (NVLS_NCHANNELS "
    "16)\n"
    "h200:1234:1250 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
    "h200:1234:1250 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/read\n"
    "h200:1234:1250 [0] NCCL INFO comm 0x55d rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 "
    "MNNVL 0\n";

constexpr char kInfinibandLog[] =
    "a:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
    "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE ; OOB eth0:10.0.0.1<0>\n"
    "a:1:1 [0] NCCL INFO Using network IB\n"
    "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
    "a:1:9 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
    "a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n"
    "a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n";

constexpr char kSocketLog[] =
    "a:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
    "a:1:1 [0] NCCL INFO NET/IB : No device found.\n"
    "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
    "a:1:1 [0] NCCL INFO Using network Socket\n"
    "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n"
    "a:1:9 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n";

TEST(NcclLog, SingleNodeIsNvlinkWithVersion) {
  const TransportReport r = ParseNcclDebugLog(kSingleNodeLog);
  EXPECT_EQ(r.version, "2.28.9+cuda13.0");
  EXPECT_TRUE(r.nvlink);
  EXPECT_TRUE(r.nvls);
  EXPECT_EQ(r.nodes, 1);
  EXPECT_FALSE(r.InterNodeSockets());
  EXPECT_THAT(r.Summary(), HasSubstr("NVLink (P2P/CUMEM)"));
}

TEST(NcclLog, InfinibandWithGpuDirectIsRecognised) {
  const TransportReport r = ParseNcclDebugLog(kInfinibandLog);
  EXPECT_EQ(r.network, "IB");
  EXPECT_TRUE(r.gdr);
  EXPECT_TRUE(r.roce);
  EXPECT_EQ(r.nodes, 2);
  EXPECT_FALSE(r.InterNodeSockets());
  EXPECT_THAT(r.Summary(), HasSubstr("RoCE with GPUDirect RDMA (NET/IB) between nodes"));
}

TEST(NcclLog, SocketFallbackIsFlagged) {
  const TransportReport r = ParseNcclDebugLog(kSocketLog);
  EXPECT_EQ(r.network, "Socket");
  EXPECT_TRUE(r.InterNodeSockets());
  EXPECT_THAT(r.Summary(), HasSubstr("plain TCP sockets (NET/Socket) between nodes"));
  // Even before a channel line, "Using network Socket" on two nodes is a fallback.
  const TransportReport early = ParseNcclDebugLog(
      "a NCCL INFO Using network Socket\na NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 x\n");
  EXPECT_TRUE(early.InterNodeSockets());
}

TEST(NcclLog, NothingLoggedSaysUnknown) {
  const TransportReport r = ParseNcclDebugLog("unrelated\nNCCL WARN something\n");
  EXPECT_TRUE(r.Empty());
  EXPECT_THAT(r.Summary(), HasSubstr("unknown"));
}

TEST(NcclLog, DebugFileNameExpandsHostAndPid) {
  EXPECT_EQ(ExpandNcclDebugFile("/tmp/nccl.%h.%p.log", "node7", 42), "/tmp/nccl.node7.42.log");
  EXPECT_EQ(ExpandNcclDebugFile("/tmp/100%", "h", 1), "/tmp/100%");
}

// ---- watchdog -----------------------------------------------------------------------------------

// Time moves only by sleeping; a sleep of 0 (a poll without a pause) costs a millisecond.
class FakeClock final : public perfgate::Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(now_ns_));
  }
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::time_point(std::chrono::nanoseconds(now_ns_));
  }
  bool SleepFor(std::chrono::nanoseconds duration, const perfgate::Cancellation*) override {
    now_ns_ += duration.count() > 0 ? duration.count() : 1'000'000;
    return true;
  }

 private:
  int64_t now_ns_ = 1000'000'000'000;
};

TEST(Watchdog, NeverDoneIsAbortedOnceAtTheDeadlineWithTheReason) {
  FakeClock clock;
  int aborts = 0;
  std::string abort_reason;
  const Status st = WaitWithWatchdog(
      "NCCL init of rank(s) 0 of 2", WatchdogOptions{30, 0.5},
      []() -> Result<bool> { return false; },
      [&](const std::string& reason) {
        ++aborts;
        abort_reason = reason;
      },
      clock);
  EXPECT_EQ(st.code(), Code::kDeadlineExceeded);
  EXPECT_EQ(aborts, 1);
  EXPECT_EQ(abort_reason, st.message());
  EXPECT_THAT(st.message(), HasSubstr("NCCL init of rank(s) 0 of 2: not done after 30 s"));
  EXPECT_THAT(st.message(), HasSubstr("aborted by the watchdog"));
  EXPECT_GE(clock.NowSeconds(), 1030);
  EXPECT_LT(clock.NowSeconds(), 1031);
}

TEST(Watchdog, DoneBeforeTheDeadlineIsNotAborted) {
  FakeClock clock;
  int polls = 0;
  int aborts = 0;
  const Status st = WaitWithWatchdog(
      "x", WatchdogOptions{30, 1}, [&]() -> Result<bool> { return ++polls == 5; },
      [&](const std::string&) { ++aborts; }, clock);
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(polls, 5);
  EXPECT_EQ(aborts, 0);
}

TEST(Watchdog, PollErrorIsReturnedWithContext) {
  FakeClock clock;
  const Status st = WaitWithWatchdog(
      "NCCL all_reduce", WatchdogOptions{30, 1},
      []() -> Result<bool> { return Unavailable("remote process exited"); },
      [](const std::string&) {}, clock);
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_THAT(st.message(), HasSubstr("NCCL all_reduce: remote process exited"));
}

}  // namespace
}  // namespace perfgate::kernels::nccl
