// perfgate compare: rows a user reads off two sets of node results (a driver upgrade on the same
// nodes, three clusters, a store), and the real binary's output and exit codes.
#include "cli/compare.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/report.h"
#include "tests/cli/fleet_fixture.h"

namespace perfgate::compare {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kMedian = {"median"};

std::vector<Figure> AbFigures(const testing::AbPair& pair) {
  auto figures = FromReports(pair.a, kMedian, {{"side", "A"}});
  auto b = FromReports(pair.b, kMedian, {{"side", "B"}});
  figures.insert(figures.end(), b.begin(), b.end());
  return figures;
}

const Row* Find(const Comparison& c, const std::string& test, const std::string& metric,
                const std::string& group = "B") {
  for (const auto& r : c.rows) {
    if (r.test == test && r.metric == metric && r.group == group) return &r;
  }
  return nullptr;
}

TEST(Compare, DriverUpgradeOnTheSameNodesIsPairedAndBlamesTheDriver) {
  // 24 nodes measured twice; in B 16 run a new driver with HBM 6% slower, and 8 a new kernel
  // that changes nothing (8 of them have both).
  const auto pair = testing::DriverUpgrade(24, 16, 8, 0.94);
  auto c = Compare(AbFigures(pair), {"A", "B"}, "", Options{});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->paired);
  EXPECT_NE(c->pairing_reason.find("the same 24 nodes"), std::string::npos) << c->pairing_reason;
  for (const char* metric : {"triadBandwidthGBps", "copyBandwidthGBps"}) {
    const Row* r = Find(*c, "hbm-stream", metric);
    ASSERT_NE(r, nullptr) << metric;
    EXPECT_EQ(r->decision, Decision::kRegressed) << metric;
    EXPECT_TRUE(r->paired);
    EXPECT_EQ(r->n_pairs, 24);
    EXPECT_EQ(r->method.rfind("wilcoxon-signed-rank", 0), 0u) << r->method;
    // Two thirds of the nodes 6% slower: the ratio between 0.94 and 0.98, its interval below 1.
    EXPECT_GT(r->ratio, 0.94);
    EXPECT_LT(r->ratio, 0.98);
    EXPECT_LT(r->ratio_high, 1.0);
    EXPECT_GE(r->ratio_low, 0.93);
    EXPECT_LT(r->p_adjusted, 0.05);
    ASSERT_GE(r->explanations.size(), 2u);
    EXPECT_EQ(r->explanations[0].key, "driverVersion");
    EXPECT_TRUE(r->explanations[0].separable);
    EXPECT_NEAR(r->explanations[0].share, 1.0, 0.15);
    EXPECT_NEAR(r->explanations[0].effect, 0.94, 0.01);
    EXPECT_EQ(r->explanations[0].group_values, "570.124.06,575.51.03");
    // The kernel changed too, on nodes with and without the new driver: not blamed.
    EXPECT_EQ(r->explanations[1].key, "kernel");
    EXPECT_LT(std::fabs(r->explanations[1].share), 0.15);
  }
  // Everything else is equal within noise, and said so.
  for (const auto& r : c->rows) {
    if (r.test == "hbm-stream") continue;
    EXPECT_EQ(r.decision, Decision::kEquivalent) << r.test << " " << r.metric;
    EXPECT_TRUE(r.explanations.empty());
  }
  EXPECT_EQ(c->Count(Decision::kRegressed), 2);
  const auto table = FormatTable(*c);
  EXPECT_NE(table.find("paired: the same 24 nodes in A and B"), std::string::npos);
  EXPECT_NE(table.find("driverVersion (570.124.06 -> 570.124.06,575.51.03): explains"),
            std::string::npos)
      << table;
  // The HTML page: one interval per row, and the rows' verdicts in the report's colours.
  const auto html = FormatHtml(*c, "a vs b", "2026-12-01T00:00:00Z");
  EXPECT_NE(
      html.find("data-plot=\"intervals\" data-marks=\"" + std::to_string(c->rows.size()) + "\""),
      std::string::npos);
  EXPECT_NE(html.find("<td class=\"v-fail\">regressed"), std::string::npos);
}

TEST(Compare, UnpairedOverrideComparesTheGroups) {
  const auto pair = testing::DriverUpgrade(24, 24, 0, 0.94);
  Options options;
  options.pairing = Pairing::kUnpaired;
  auto c = Compare(AbFigures(pair), {"A", "B"}, "", options);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->paired);
  EXPECT_NE(c->pairing_reason.find("--unpaired"), std::string::npos);
  const Row* r = Find(*c, "hbm-stream", "triadBandwidthGBps");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->method.rfind("mann-whitney", 0), 0u);
  EXPECT_EQ(r->decision, Decision::kRegressed);
  EXPECT_NEAR(r->ratio, 0.94, 0.01);
  EXPECT_LT(r->ratio_low, 0.94);
  EXPECT_GT(r->ratio_high, 0.94);
}

TEST(Compare, APlantedFivePercentShiftIsRegressedAndTheRestEquivalent) {
  const auto pair = testing::DriverUpgrade(16, 16, 0, 0.95);
  auto c = Compare(AbFigures(pair), {"A", "B"}, "", Options{});
  ASSERT_TRUE(c.ok()) << c.status().message();
  for (const auto& r : c->rows) {
    const bool hbm = r.test == "hbm-stream";
    EXPECT_EQ(r.decision, hbm ? Decision::kRegressed : Decision::kEquivalent)
        << r.test << " " << r.metric;
    if (hbm) {
      EXPECT_LT(r.ratio_low, 0.951);
      EXPECT_GT(r.ratio_high, 0.949);
      EXPECT_LT(r.ratio_high, 1 / 1.03);  // beyond the margin
    }
  }
}

TEST(Compare, IdenticalFleetsFlagNothingInAtLeast95PercentOfRepetitions) {
  // The same 12 nodes measured twice with no change, 40 times with fresh noise: Holm across
  // the 31 rows keeps the chance of any regressed or improved row at 5%.
  int flagged = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const auto pair = testing::DriverUpgrade(12, 0, 0, 1.0, 1000 + seed);
    auto c = Compare(AbFigures(pair), {"A", "B"}, "", Options{});
    ASSERT_TRUE(c.ok()) << c.status().message();
    ASSERT_TRUE(c->paired);
    if (c->Count(Decision::kRegressed) + c->Count(Decision::kImproved) > 0) ++flagged;
  }
  EXPECT_LE(flagged, 2);  // 5% of 40
}

TEST(Compare, TooFewPairsSayWhyNothingCanBeDecided) {
  // 6 pairs: the smallest two-sided signed-rank p is 2/64, above 5% / 31 rows.
  const auto pair = testing::DriverUpgrade(6, 6, 0, 0.90);
  auto c = Compare(AbFigures(pair), {"A", "B"}, "", Options{});
  ASSERT_TRUE(c.ok());
  const Row* r = Find(*c, "hbm-stream", "triadBandwidthGBps");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->decision, Decision::kInconclusive);
  EXPECT_NE(r->note.find("cannot reach"), std::string::npos) << r->note;
}

TEST(Compare, ThreeClustersByClusterRankTheDriverFirst) {
  const auto all = testing::ThreeClusters(8, 0.94);
  std::vector<Figure> figures;
  for (const char* cluster : {"east", "west", "central"}) {
    std::vector<fleet::NodeReport> some;
    for (const auto& r : all) {
      if (r.node.rfind(cluster, 0) == 0) some.push_back(r);
    }
    auto f = FromReports(some, kMedian, {{"cluster", cluster}});
    figures.insert(figures.end(), f.begin(), f.end());
  }
  EXPECT_EQ(GroupsBy(figures, "cluster"), (std::vector<std::string>{"central", "east", "west"}));
  auto c = Compare(figures, {"east", "west", "central"}, "cluster", Options{});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->paired);
  const Row* slow = Find(*c, "hbm-stream", "triadBandwidthGBps", "central");
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->decision, Decision::kRegressed);
  ASSERT_EQ(slow->explanations.size(), 2u);
  // Driver and kernel both differ between east and central; west has central's kernel with
  // east's driver, so within matched groups the driver explains the gap and the kernel does not.
  EXPECT_EQ(slow->explanations[0].key, "driverVersion");
  EXPECT_NEAR(slow->explanations[0].share, 1.0, 0.15);
  EXPECT_EQ(slow->explanations[1].key, "kernel");
  EXPECT_LT(std::fabs(slow->explanations[1].share), 0.15);
  const Row* same = Find(*c, "hbm-stream", "triadBandwidthGBps", "west");
  ASSERT_NE(same, nullptr);
  EXPECT_EQ(same->decision, Decision::kEquivalent);
  // The matrix: one line per metric with every cluster's median.
  const auto table = FormatTable(*c);
  EXPECT_NE(table.find("east (reference)"), std::string::npos) << table;
  EXPECT_NE(table.find("regressed"), std::string::npos);

  // With only east and central, driver and kernel change together: neither can be blamed alone.
  auto two = Compare(figures, {"east", "central"}, "cluster", Options{});
  ASSERT_TRUE(two.ok());
  const Row* r = Find(*two, "hbm-stream", "triadBandwidthGBps", "central");
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->explanations.size(), 2u);
  EXPECT_FALSE(r->explanations[0].separable);
  EXPECT_EQ(r->explanations[0].confounded_with, "kernel");
}

TEST(Compare, ReadsAStoreBySelector) {
  const fs::path dir = fs::temp_directory_path() / ("perfgate-compare-" + std::to_string(getpid()));
  fs::remove_all(dir);
  auto db = store::Open("sqlite://" + (dir / "results.db").string());
  ASSERT_TRUE(db.ok()) << db.status().message();
  for (const auto& r : testing::ThreeClusters(8, 0.94)) {
    store::NodeResult nr;
    nr.key = {r.node.substr(0, r.node.find('-')), r.validation, r.run, r.node};
    nr.report = r.report;
    ASSERT_TRUE((*db)->Put(nr).ok());
  }
  auto a = ParseSelector("cluster=east,validation=h200-fleet-acceptance", 0);
  auto b = ParseSelector("driver=575.51.03", 0);
  ASSERT_TRUE(a.ok() && b.ok());
  auto fa = FromStore(**db, *a, kMedian, {{"side", "A"}});
  auto fb = FromStore(**db, *b, kMedian, {{"side", "B"}});
  ASSERT_TRUE(fa.ok()) << fa.status().message();
  ASSERT_TRUE(fb.ok()) << fb.status().message();
  std::vector<Figure> figures = *fa;
  figures.insert(figures.end(), fb->begin(), fb->end());
  auto c = Compare(figures, {"A", "B"}, "", Options{});
  ASSERT_TRUE(c.ok()) << c.status().message();
  const Row* r = Find(*c, "hbm-stream", "triadBandwidthGBps");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->n_reference, 8);
  EXPECT_EQ(r->n_group, 8);
  EXPECT_EQ(r->decision, Decision::kRegressed);
  // The whole store by cluster gives the same verdict as the files.
  auto all = FromStore(**db, *ParseSelector("", 0), kMedian, {});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(GroupsBy(*all, "cluster"), (std::vector<std::string>{"central", "east", "west"}));
  auto none = FromStore(**db, *ParseSelector("cluster=north", 0), kMedian, {});
  EXPECT_EQ(none.status().code(), Code::kNotFound);
  EXPECT_FALSE(ParseSelector("since=yesterday", 0).ok());
  EXPECT_FALSE(ParseSelector("cluster", 0).ok());
  fs::remove_all(dir);
}

// What an export holds reads back into the same comparison: every row's ratio, interval,
// tests, verdict and explaining keys, in both formats.
TEST(Compare, ExportsReadBackIntoTheSameComparison) {
  const auto pair = testing::DriverUpgrade(24, 16, 8, 0.94);
  const std::vector<std::string> all(std::begin(store::kBaselineStatistics),
                                     std::end(store::kBaselineStatistics));
  auto original = Compare(AbFigures(pair), {"A", "B"}, "", Options{});
  ASSERT_TRUE(original.ok()) << original.status().message();
  ASSERT_EQ(original->Count(Decision::kRegressed), 2);  // rows with explanations to carry over
  for (const auto format : {ExportFormat::kCsv, ExportFormat::kJsonLines}) {
    std::vector<Figure> figures;
    for (const auto& [side, reports] : {std::pair{"A", &pair.a}, std::pair{"B", &pair.b}}) {
      const std::string text = FormatExport(FromReports(*reports, all, {}), format);
      auto back = ParseExport(text, format, side, kMedian, {{"side", side}});
      ASSERT_TRUE(back.ok()) << back.status().message();
      figures.insert(figures.end(), back->begin(), back->end());
    }
    auto again = Compare(figures, {"A", "B"}, "", Options{});
    ASSERT_TRUE(again.ok()) << again.status().message();
    ASSERT_EQ(again->rows.size(), original->rows.size());
    EXPECT_EQ(again->paired, original->paired);
    for (std::size_t i = 0; i < again->rows.size(); ++i) {
      const Row& a = original->rows[i];
      const Row& b = again->rows[i];
      EXPECT_EQ(b.test + b.metric, a.test + a.metric);
      EXPECT_EQ(b.ratio, a.ratio) << a.metric;
      EXPECT_EQ(b.ratio_low, a.ratio_low) << a.metric;
      EXPECT_EQ(b.ratio_high, a.ratio_high) << a.metric;
      EXPECT_EQ(b.p_adjusted, a.p_adjusted) << a.metric;
      EXPECT_EQ(b.decision, a.decision) << a.metric;
      ASSERT_EQ(b.explanations.size(), a.explanations.size()) << a.metric;
      for (std::size_t e = 0; e < a.explanations.size(); ++e) {
        EXPECT_EQ(b.explanations[e].key, a.explanations[e].key);
        EXPECT_EQ(b.explanations[e].share, a.explanations[e].share);
      }
    }
    // Everything a user sees, byte for byte.
    EXPECT_EQ(FormatJson(*again), FormatJson(*original));
  }
}

TEST(Compare, AMalformedExportNamesItsLine) {
  const std::string csv =
      "node,model,test,metric,statistic,value,unit,higherIsBetter\r\n"
      "n1,H200,hbm,bw,median,1.5,GB/s,true\r\n"
      "n2,H200,hbm,bw,median,fast,GB/s,true\r\n";
  auto got = ParseExport(csv, ExportFormat::kCsv, "x.csv", kMedian, {});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("x.csv:3: value \"fast\" is not a number"),
            std::string::npos)
      << got.status().message();
  got = ParseExport("node,test\r\nn1,hbm\r\n", ExportFormat::kCsv, "y.csv", kMedian, {});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("not a perfgate export"), std::string::npos);
  got = ParseExport("\n{\"node\": \"n1\"}\n", ExportFormat::kJsonLines, "z.jsonl", kMedian, {});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("z.jsonl:2: no test"), std::string::npos)
      << got.status().message();
  got = ParseExport("[1]\n", ExportFormat::kJsonLines, "z.jsonl", kMedian, {});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("z.jsonl:1: not a JSON object"), std::string::npos)
      << got.status().message();
}

// The real binary, as CI runs it.
struct CliRun {
  int code = -1;
  std::string out;
};

CliRun Perfgate(const std::string& args) {
  CliRun run;
  const std::string cmd = std::string(PERFGATE_CLI_DIR) + "/perfgate " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe) != nullptr) run.out += buf.data();
  const int status = pclose(pipe);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

void WriteAll(const fs::path& dir, const std::vector<fleet::NodeReport>& reports) {
  fs::create_directories(dir);
  for (const auto& r : reports) {
    auto json = report::ToJson(r.report);
    ASSERT_TRUE(json.ok());
    ASSERT_TRUE(report::WriteFileAtomic((dir / (r.node + ".json")).string(), *json).ok());
  }
}

TEST(PerfgateCompare, ExitCodesGateCi) {
  const fs::path dir = fs::temp_directory_path() / ("perfgate-cli-" + std::to_string(getpid()));
  fs::remove_all(dir);
  const auto slow = testing::DriverUpgrade(16, 16, 0, 0.95);
  WriteAll(dir / "a", slow.a);
  WriteAll(dir / "b", slow.b);
  const auto same = testing::DriverUpgrade(16, 0, 0, 1.0, 5);
  WriteAll(dir / "same-a", same.a);
  WriteAll(dir / "same-b", same.b);
  const std::string a = (dir / "a").string(), b = (dir / "b").string();

  CliRun r = Perfgate("compare " + a + " " + b);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("paired: the same 16 nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 regressed, 0 improved, 29 equivalent"), std::string::npos) << r.out;

  r = Perfgate("compare " + (dir / "same-a").string() + " " + (dir / "same-b").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("0 regressed"), std::string::npos) << r.out;

  r = Perfgate("compare " + a + " " + b + " -o json --unpaired --margin 2%");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("\"paired\": false"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"margin\": 0.02"), std::string::npos);
  EXPECT_NE(r.out.find("\"verdict\": \"regressed\""), std::string::npos);

  r = Perfgate("compare " + a + " " + b + " -o markdown");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("| **regressed** |"), std::string::npos) << r.out;

  // Eight nodes cannot reach the corrected level over 31 rows; over the two HBM rows they can.
  const auto eight = testing::DriverUpgrade(8, 8, 0, 0.95, 9);
  WriteAll(dir / "eight-a", eight.a);
  WriteAll(dir / "eight-b", eight.b);
  const std::string ea = (dir / "eight-a").string(), eb = (dir / "eight-b").string();
  r = Perfgate("compare " + ea + " " + eb);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("8 pairs cannot reach the corrected level"), std::string::npos) << r.out;
  r = Perfgate("compare " + ea + " " + eb + " --test hbm-stream");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("2 regressed, 0 improved, 0 equivalent"), std::string::npos) << r.out;

  r = Perfgate("compare " + a);
  EXPECT_EQ(r.code, 2);
  r = Perfgate("compare " + a + " " + b + " --margin lots");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--margin"), std::string::npos);
  // A source that does not exist is invalid input, named.
  r = Perfgate("compare " + a + " " + (dir / "missing").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("missing: no such file or folder"), std::string::npos) << r.out;
  r = Perfgate("compare --by cluster east=" + a + " west=" + b);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("MEDIAN east"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(PerfgateExport, CsvAndJsonLinesReadBackIntoTheSameComparison) {
  const fs::path dir = fs::temp_directory_path() / ("perfgate-export-" + std::to_string(getpid()));
  fs::remove_all(dir);
  auto slow = testing::DriverUpgrade(16, 16, 0, 0.95);
  // A configuration value with a comma and quotes must survive both formats.
  const std::string odd = "6.8.0-lab \"custom\", patched";
  slow.a.front().report.mutable_identity()->set_kernel(odd);
  slow.b.front().report.mutable_identity()->set_kernel(odd);
  WriteAll(dir / "a", slow.a);
  WriteAll(dir / "b", slow.b);
  std::size_t summaries = 0;  // metric summaries with samples in A, six statistics each
  for (const auto& r : slow.a) {
    for (const auto& t : r.report.tests()) {
      for (const auto& m : t.metrics()) summaries += m.summary().n() > 0 ? 6 : 0;
    }
  }
  ASSERT_GT(summaries, 0u);
  const std::string a = (dir / "a").string(), b = (dir / "b").string();
  const CliRun original = Perfgate("compare " + a + " " + b + " -o json");
  ASSERT_EQ(original.code, 1) << original.out;

  for (const std::string ext : {"csv", "jsonl"}) {
    const fs::path ea = dir / ("a." + ext), eb = dir / ("b." + ext);
    CliRun r = Perfgate("export " + a + " -o " + ext + " --out " + ea.string());
    ASSERT_EQ(r.code, 0) << r.out;
    r = Perfgate("export " + b + " -o " + ext + " --out " + eb.string());
    ASSERT_EQ(r.code, 0) << r.out;
    const std::string text = ReadAll(ea);
    std::size_t lines = 0;
    for (char c : text) lines += c == '\n';
    if (ext == "csv") {
      EXPECT_EQ(text.rfind("node,model,test,metric,statistic,value,unit,higherIsBetter,", 0), 0u)
          << text.substr(0, 200);
      const std::string header = text.substr(0, text.find('\r'));
      for (const char* key : {",driverVersion,", ",kernel,", ",validation"}) {
        EXPECT_NE(header.find(key), std::string::npos) << key << " in " << header;
      }
      EXPECT_EQ(lines, summaries + 1);
      EXPECT_NE(text.find(",\"6.8.0-lab \"\"custom\"\", patched\","), std::string::npos);
    } else {
      EXPECT_EQ(text.rfind("{\"", 0), 0u);
      EXPECT_EQ(lines, summaries);
      EXPECT_NE(text.find("\"kernel\":\"6.8.0-lab \\\"custom\\\", patched\""), std::string::npos);
      EXPECT_NE(text.find("\"higherIsBetter\":true"), std::string::npos);
    }
    // Compared from the exports: the same rows, verdicts and explaining keys as from the
    // reports, and the same exit code.
    r = Perfgate("compare " + ea.string() + " " + eb.string() + " -o json");
    EXPECT_EQ(r.code, original.code) << r.out;
    EXPECT_EQ(r.out, original.out) << ext;
  }
  // Reports against an export mixes too; a broken export is named.
  CliRun r = Perfgate("compare " + a + " " + (dir / "b.csv").string() + " -o json");
  EXPECT_EQ(r.out, original.out);
  std::ofstream(dir / "bad.csv") << "node,test\nn1,hbm\n";
  r = Perfgate("compare " + a + " " + (dir / "bad.csv").string());
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("bad.csv: not a perfgate export (no column model)"), std::string::npos)
      << r.out;
  r = Perfgate("export " + a + " -o xml");
  EXPECT_EQ(r.code, 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace perfgate::compare
