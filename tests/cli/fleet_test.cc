// Reading many nodes' reports, and what the fleet view computes from them: figures, nodes that
// lag their peers, P2P matrices and NCCL curves.
#include "core/fleet.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/report.h"
#include "tests/cli/fleet_fixture.h"

namespace perfgate::fleet {
namespace {

namespace fs = std::filesystem;
using testing::Quirk;

std::string ReportJson(const std::string& node, Quirk quirk = Quirk::kHealthy) {
  auto json = report::ToJson(testing::NodeReport(node, 8, 11, quirk));
  EXPECT_TRUE(json.ok());
  return *json;
}

std::string PerfResultJson(const std::string& node, const std::string& run, bool with_kind) {
  std::string out = "{";
  if (with_kind) out += R"("apiVersion": "perfgate.io/v1alpha1", "kind": "PerfResult", )";
  out += R"("metadata": {"name": "r-)" + node +
         R"("}, "spec": {"validation": "v1", "nodeName": ")" + node + R"(", "run": ")" + run +
         R"(", "report": )" + ReportJson("host-" + node) + "}}";
  return out;
}

TEST(ParseReports, ReadsAReportAndNamesTheNodeByItsHostname) {
  auto r = ParseReports(ReportJson("gpu-box-7"), "r.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].node, "gpu-box-7");
  EXPECT_EQ((*r)[0].validation, "h200-fleet-acceptance");
  EXPECT_EQ((*r)[0].report.identity().gpus_size(), 8);
}

TEST(ParseReports, ReadsAPerfResultByItsNodeNameAndRun) {
  auto r = ParseReports(PerfResultJson("node-a", "g4", true), "pres.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].node, "node-a");
  EXPECT_EQ((*r)[0].run, "g4");
  EXPECT_EQ((*r)[0].validation, "v1");
}

TEST(ParseReports, ReadsAnApiServerListWhoseItemsHaveNoKind) {
  const std::string list = R"({"kind": "PerfResultList", "apiVersion": "perfgate.io/v1alpha1",
      "items": [)" + PerfResultJson("a", "g1", false) +
                           "," + PerfResultJson("b", "g1", false) + "]}";
  auto r = ParseReports(list, "list");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[1].node, "b");
}

TEST(ParseReports, RefusesOtherDocumentsNamingTheSource) {
  auto r = ParseReports(R"({"kind": "Pod", "metadata": {}})", "pod.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("pod.json"), std::string::npos);
  EXPECT_NE(r.status().message().find("kind Pod"), std::string::npos);
  EXPECT_FALSE(ParseReports("not json", "x").ok());
  auto list = ParseReports(R"({"kind": "List", "items": [{"kind": "Node"}]})", "l.json");
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.status().message().find("items[0]"), std::string::npos);
  auto no_report = ParseReports(R"({"kind": "PerfResult", "spec": {}})", "p.json");
  ASSERT_FALSE(no_report.ok());
  EXPECT_NE(no_report.status().message().find("spec.report"), std::string::npos);
}

TEST(LoadReports, ReadsFoldersInNameOrderAndNamesWhatIsMissing) {
  const fs::path dir = fs::path(::testing::TempDir()) / "fleet-load";
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  std::ofstream(dir / "b.json") << ReportJson("b");
  std::ofstream(dir / "sub" / "a.json") << ReportJson("a");
  std::ofstream(dir / "notes.txt") << "ignored";
  auto r = LoadReports({dir.string()});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].node, "b");  // "b.json" sorts before "sub/a.json"
  EXPECT_EQ((*r)[1].node, "a");

  auto missing = LoadReports({(dir / "nope").string()});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
  fs::create_directories(dir / "empty");
  EXPECT_FALSE(LoadReports({(dir / "empty").string()}).ok());
  std::ofstream(dir / "sub" / "bad.json") << "{\"kind\": \"Secret\"}";
  auto bad = LoadReports({dir.string()});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.json"), std::string::npos);
}

TEST(Figures, OneFigurePerThresholdAndUncheckedMetricLeavingSweepsOut) {
  const auto fleet = testing::Fleet(1, 0, 0);
  const auto figures = Figures(fleet);
  // Per GPU: HBM triad (threshold) and copy (no threshold), GEMM bf16 and fp8, ECC count;
  // then the P2P worst pair, NCCL busbw at 8 GiB (the only checked size) and host triad.
  EXPECT_EQ(figures.size(), 8u * 5 + 3);
  int sweep = 0;
  for (const auto& f : figures) sweep += f.metric.find('@') != std::string::npos;
  EXPECT_EQ(sweep, 1);
  for (const auto& f : figures) {
    if (f.metric == "triadBandwidthGBps" && f.device == "gpu0") {
      EXPECT_EQ(f.op, ">=");
      EXPECT_EQ(f.bound, 3840);
      EXPECT_EQ(f.model, "NVIDIA H200");
      EXPECT_EQ(f.verdict, v1alpha1::PASS);
    }
  }
}

TEST(FindLagging, NamesTheNodesEightPercentSlowThatStillPass) {
  const auto fleet = testing::Fleet(100, 0, 3);
  const auto lagging = FindLagging(Figures(fleet));
  std::set<std::string> nodes;
  for (const auto& l : lagging) {
    nodes.insert(l.figure.node);
    EXPECT_EQ(l.figure.test, "gemm");
    EXPECT_EQ(l.figure.verdict, v1alpha1::PASS);
    EXPECT_NEAR(l.ratio, 0.92, 0.02);
    EXPECT_LE(l.z, -3.5);
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"node-000", "node-001", "node-002"}));
  EXPECT_EQ(lagging.size(), 3u * 8 * 2);  // every GPU, bf16 and fp8
  // A node whose HBM fails its bound is a failure, not a lag.
  for (const auto& l : FindLagging(Figures(testing::Fleet(100, 1, 0)))) {
    EXPECT_NE(l.figure.node, "node-000") << l.figure.metric;
  }
}

TEST(FindLagging, NeedsTwoPeersAndAClearGap) {
  // One peer cannot say which of the two is slow.
  EXPECT_TRUE(FindLagging(Figures(testing::Fleet(2, 0, 1))).empty());
  // Six peers can: the slow node's GEMM figures are judged against the other nodes' spread.
  std::set<std::string> few;
  for (const auto& l : FindLagging(Figures(testing::Fleet(7, 0, 1)))) few.insert(l.figure.node);
  EXPECT_EQ(few, (std::set<std::string>{"node-000"}));
  // A healthy fleet's spread is noise: nothing lags.
  EXPECT_TRUE(FindLagging(Figures(testing::Fleet(200, 0, 0))).empty());
  // Lower is better: a count above identical peers lags.
  std::vector<Figure> counts(10);
  for (int i = 0; i < 10; ++i) {
    counts[i].node = "n" + std::to_string(i);
    counts[i].metric = "latencyUs";
    counts[i].higher_is_better = false;
    counts[i].value = i == 4 ? 12 : 10;
  }
  const auto lag = FindLagging(counts);
  ASSERT_EQ(lag.size(), 1u);
  EXPECT_EQ(lag[0].figure.node, "n4");
  EXPECT_NEAR(lag[0].ratio, 1.2, 1e-9);
}

// Nodes of one model, driver and CUDA version, each with a consistency result whose details
// hold its GPUs' majority digests; `odd` nodes computed other bits in gemm-bf16.
std::vector<NodeReport> ScreenedFleet(int nodes, const std::set<int>& odd) {
  std::vector<NodeReport> fleet = testing::Fleet(nodes, 0, 0);
  for (int i = 0; i < nodes; ++i) {
    auto* t = fleet[i].report.add_tests();
    t->set_name("consistency");
    t->set_type("consistency");
    t->set_device("gpus0-7");
    (*t->mutable_parameters())["gemmSize"] = "2048";
    auto& details = *t->mutable_details();
    details["digest.gemm-bf16"] = odd.count(i) != 0 ? "0x00000000000000bb" : "0x00000000000000aa";
    details["digest.reduce-fp32"] = "0x00000000000000cc";
    details["digest.reduce-fp32.gpu3"] = "0x00000000000000dd";  // one GPU's: not the node's
    details["computations"] = "gemm-bf16, reduce-fp32";
  }
  return fleet;
}

TEST(FindDigestOutliers, NamesTheOneNodeWhoseDigestsDifferFromItsPeers) {
  const auto fleet = ScreenedFleet(5, {2});
  const auto outliers = FindDigestOutliers(fleet);
  ASSERT_EQ(outliers.size(), 1u);
  EXPECT_EQ(outliers[0].node, fleet[2].node);
  EXPECT_EQ(outliers[0].computation, "gemm-bf16");
  EXPECT_EQ(outliers[0].test, "consistency");
  EXPECT_EQ(outliers[0].model, "NVIDIA H200");
  EXPECT_EQ(outliers[0].cuda, "12.8");
  EXPECT_EQ(outliers[0].digest, "0x00000000000000bb");
  EXPECT_EQ(outliers[0].peer_digest, "0x00000000000000aa");
  EXPECT_EQ(outliers[0].agreeing, 4);
  EXPECT_EQ(outliers[0].nodes, 5);
  EXPECT_TRUE(FindDigestOutliers(ScreenedFleet(5, {})).empty());
}

TEST(FindDigestOutliers, ComparesOnlyLikeWithLikeAndNeedsAMajority) {
  // Two nodes against two: no majority, nobody named; two nodes: too few to tell.
  EXPECT_TRUE(FindDigestOutliers(ScreenedFleet(4, {0, 1})).empty());
  EXPECT_TRUE(FindDigestOutliers(ScreenedFleet(2, {0})).empty());
  // Another driver, or other parameters, is another group: its bits may differ.
  auto fleet = ScreenedFleet(5, {2});
  fleet[2].report.mutable_identity()->set_driverversion("999.1");
  EXPECT_TRUE(FindDigestOutliers(fleet).empty());
  fleet = ScreenedFleet(5, {2});
  (*fleet[2]
        .report.mutable_tests(fleet[2].report.tests_size() - 1)
        ->mutable_parameters())["gemmSize"] = "4096";
  EXPECT_TRUE(FindDigestOutliers(fleet).empty());
}

TEST(P2pMatrices, ReadsEveryOrderedPairPreferringPeerFigures) {
  std::vector<NodeReport> fleet(1);
  fleet[0].node = "n";
  fleet[0].report = testing::NodeReport("n", 8, 3, Quirk::kSlowP2pPair);
  auto* t = fleet[0].report.mutable_tests(fleet[0].report.tests_size() - 3);
  ASSERT_EQ(t->type(), "p2p");
  (*t->mutable_details())["pair gpu0->gpu1"] = "no peer 20.5 GB/s";
  const auto m = P2pMatrices(fleet);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].gpus, 8);
  EXPECT_NEAR(m[0].gbps[2][5], 121, 0.1);
  EXPECT_NEAR(m[0].gbps[0][1], 20.5, 1e-9);
  EXPECT_GT(m[0].gbps[5][2], 300);
  EXPECT_TRUE(std::isnan(m[0].gbps[3][3]));
}

TEST(NcclCurves, OnePointPerSweptSizeInOrder) {
  const auto curves = NcclCurves(testing::Fleet(2, 0, 0));
  ASSERT_EQ(curves.size(), 2u);
  ASSERT_EQ(curves[0].points.size(), 24u);  // 1 KiB .. 8 GiB, doubling
  EXPECT_EQ(curves[0].points.front().first, 1024);
  EXPECT_EQ(curves[0].points.back().first, 8.0 * 1024 * 1024 * 1024);
  EXPECT_GT(curves[0].points.back().second, curves[0].points.front().second);
}

TEST(ParseSize, ReadsTheSweepLabels) {
  EXPECT_EQ(ParseSize("8B"), 8);
  EXPECT_EQ(ParseSize("4KiB"), 4096);
  EXPECT_EQ(ParseSize("128MiB"), 128.0 * 1024 * 1024);
  EXPECT_EQ(ParseSize("2GiB"), 2.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(ParseSize("MiB"), -1);
  EXPECT_EQ(ParseSize("12MB"), -1);
}

}  // namespace
}  // namespace perfgate::fleet
