// The HTML report's content: every plot drawn in full, failing nodes first with their reason,
// lagging nodes named, and text from the reports escaped.
#include "cli/html_report.h"

#include <gtest/gtest.h>

#include <regex>

#include "cli/svg.h"
#include "tests/cli/fleet_fixture.h"

namespace perfgate::htmlreport {
namespace {

struct Plot {
  std::string kind;
  int expected = 0;
  int marks = 0;
};

// Each <svg data-plot> with the marks it declares and the elements of class "mark" it holds.
std::vector<Plot> Plots(const std::string& html) {
  std::vector<Plot> out;
  const std::regex open(R"re(<svg data-plot="([a-z]+)" data-marks="(\d+)")re");
  const std::regex mark(R"re(class="mark[ "])re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), open); it != std::sregex_iterator();
       ++it) {
    const std::size_t begin = static_cast<std::size_t>(it->position());
    const std::size_t end = html.find("</svg>", begin);
    const std::string body = html.substr(begin, end - begin);
    Plot p{(*it)[1], std::stoi((*it)[2]), 0};
    p.marks = static_cast<int>(std::distance(std::sregex_iterator(body.begin(), body.end(), mark),
                                             std::sregex_iterator()));
    out.push_back(p);
  }
  return out;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HtmlReport, DrawsEveryPlotInFull) {
  const auto fleet = testing::Fleet(40, 2, 2);
  const std::string html = Render(fleet, {});
  const auto plots = Plots(html);
  int strips = 0, heatmaps = 0, lines = 0;
  for (const auto& p : plots) {
    EXPECT_EQ(p.marks, p.expected) << p.kind;
    strips += p.kind == "strip";
    heatmaps += p.kind == "heatmap";
    lines += p.kind == "lines";
  }
  // HBM triad and copy, GEMM bf16 and fp8, ECC, P2P worst pair, NCCL at 8 GiB, host triad.
  EXPECT_EQ(strips, 8);
  EXPECT_EQ(heatmaps, 2);  // the fleet's median and the weakest pair's node
  EXPECT_EQ(lines, 1);
  for (const auto& p : plots) {
    if (p.kind == "strip" && p.expected != 40) {
      EXPECT_EQ(p.expected, 320);  // 40 nodes x 8 GPUs
    } else if (p.kind == "heatmap") {
      EXPECT_EQ(p.expected, 56);  // 8 x 7 ordered pairs
    } else if (p.kind == "lines") {
      EXPECT_EQ(p.expected, 41);  // 40 nodes and the median
    }
  }
}

TEST(HtmlReport, ListsFailingNodesFirstWithTheirReason) {
  const std::string html = Render(testing::Fleet(20, 2, 0), {});
  const auto first = html.find("<tr class=\"problem-row\">");
  ASSERT_NE(first, std::string::npos);
  const std::string row = html.substr(first, html.find("</tr>", first) - first);
  EXPECT_NE(row.find("node-000"), std::string::npos);
  EXPECT_NE(row.find("FAIL"), std::string::npos);
  EXPECT_NE(row.find("hbm-stream [gpu3]"), std::string::npos);
  EXPECT_EQ(Count(html, "<tr class=\"problem-row\">"), 2);
  EXPECT_EQ(Count(html, "<tr class=\"node-row\">"), 20);
  EXPECT_NE(html.find("FAIL 2</span>"), std::string::npos);
  EXPECT_NE(html.find("PASS 18</span>"), std::string::npos);
  // node-001's slow pair makes it the weakest pair's node.
  EXPECT_NE(html.find("The weakest pair&apos;s node: node-001"), std::string::npos);
}

TEST(HtmlReport, NamesNodesThatLagWhilePassing) {
  const std::string html = Render(testing::Fleet(50, 0, 2), {});
  EXPECT_EQ(Count(html, "<tr class=\"lag-row\">"), 2 * 8 * 2);
  EXPECT_EQ(Count(html, "class=\"mark lag\""), 2 * 8 * 2);
  EXPECT_NE(html.find("<td>node-001</td><td>gpu7</td><td>gemm</td>"), std::string::npos);
  const std::string healthy = Render(testing::Fleet(50, 0, 0), {});
  EXPECT_EQ(Count(healthy, "<tr class=\"lag-row\">"), 0);
  EXPECT_NE(healthy.find("No figure lags its peers"), std::string::npos);
}

TEST(HtmlReport, NamesTheNodeWhoseConsistencyDigestsDifferFromItsPeers) {
  auto fleet = testing::Fleet(5, 0, 0);
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    auto* t = fleet[i].report.add_tests();
    t->set_name("consistency");
    t->set_type("consistency");
    (*t->mutable_details())["digest.gemm-bf16"] =
        i == 3 ? "0x00000000000000bb" : "0x00000000000000aa";
  }
  const std::string html = Render(fleet, {});
  EXPECT_EQ(Count(html, "<tr class=\"digest-row\">"), 1);
  EXPECT_NE(html.find("<tr class=\"digest-row\"><td>" + fleet[3].node +
                      "</td><td>consistency</td><td>gemm-bf16</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">4 of 5</td>"), std::string::npos);
  // A fleet that never ran the screen has no such section.
  EXPECT_EQ(Render(testing::Fleet(5, 0, 0), {}).find("id=\"digests\""), std::string::npos);
}

TEST(HtmlReport, ShowsTheDiagnosisOfAFailingNodeAndOfAPassingOneWhoseGpuLags) {
  auto fleet = testing::Fleet(4, 1, 0);  // node-000 fails
  for (auto& r : fleet) r.validation = "fleet";
  auto* failing = fleet[0].report.mutable_diagnosis();
  failing->add_hints("gpu3: HwSlowdown in 12 of 40 samples");
  failing->add_locations("configmap perfgate-system/fleet-g1-node-000-diagnosis");
  fleet[2].report.mutable_diagnosis()->add_lagging(
      "gemm [gpu5]: tflops median 612 is 9.0% below its 8 GPUs' median 672.5");
  const std::string html = Render(fleet, {});
  const auto first = html.find("<tr class=\"problem-row\">");
  ASSERT_NE(first, std::string::npos);
  const std::string row = html.substr(first, html.find("</tr>", first) - first);
  EXPECT_NE(row.find("<li>hint: gpu3: HwSlowdown in 12 of 40 samples</li>"), std::string::npos)
      << row;
  EXPECT_NE(row.find("<code>kubectl perfgate bundle fleet node-000</code>"), std::string::npos)
      << row;
  EXPECT_NE(html.find("<li>lagging: gemm [gpu5]: tflops median 612 is 9.0% below its 8 GPUs&apos; "
                      "median 672.5</li>"),
            std::string::npos);
  // Nodes without a diagnosis carry none.
  EXPECT_EQ(Count(html, "<details class=\"diagnosis\">"), 3);  // node-000 twice, node-002 once
}

TEST(HtmlReport, EscapesWhatTheReportsSay) {
  auto fleet = testing::Fleet(3, 1, 0);
  fleet[0].node = "<script>alert(1)</script>";
  fleet[0].report.set_reason("bound \"x\" & <y>");
  Options o;
  o.title = "A & B <fleet>";
  const std::string html = Render(fleet, o);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("<title>A &amp; B &lt;fleet&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("bound &quot;x&quot; &amp; &lt;y&gt;"), std::string::npos);
}

TEST(HtmlReport, OneNodeWithoutGpusStillReads) {
  std::vector<fleet::NodeReport> one(1);
  one[0].node = "laptop";
  one[0].report.set_verdict(v1alpha1::PASS);
  auto* t = one[0].report.add_tests();
  t->set_name("host-stream");
  t->set_device("host");
  auto* m = t->add_metrics();
  m->set_name("triadBandwidthGBps");
  m->mutable_summary()->set_n(3);
  m->mutable_summary()->set_median(9.5);
  const std::string html = Render(one, {});
  const auto plots = Plots(html);
  ASSERT_EQ(plots.size(), 1u);
  EXPECT_EQ(plots[0].expected, 1);
  EXPECT_EQ(plots[0].marks, 1);
  EXPECT_EQ(html.find("id=\"gpus\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"p2p\""), std::string::npos);
}

}  // namespace
}  // namespace perfgate::htmlreport

namespace perfgate::svg {
namespace {

TEST(Svg, TicksAreRoundAndCoverTheRange) {
  EXPECT_EQ(NiceTicks(0, 1.05, 5), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1}));
  EXPECT_EQ(NiceTicks(3480, 4420, 6), (std::vector<double>{3600, 3800, 4000, 4200, 4400}));
  EXPECT_EQ(NiceTicks(5, 5, 4), (std::vector<double>{5}));
}

TEST(Svg, ScalesMapLinearlyOrOnPowersOfTwo) {
  const Scale linear{0, 10, 100, 200};
  EXPECT_DOUBLE_EQ(linear(5), 150);
  const Scale log2{1024, 1024.0 * 1024 * 1024, 0, 200, true};
  EXPECT_DOUBLE_EQ(log2(1024.0 * 1024), 100);  // 2^20 halfway between 2^10 and 2^30
  const Scale flipped{0, 100, 262, 10};
  EXPECT_DOUBLE_EQ(flipped(100), 10);
  EXPECT_EQ(Num(12.345), "12.3");
  EXPECT_EQ(Sequential(0), "#eef4fb");
  EXPECT_EQ(Sequential(1), "#08306b");
}

}  // namespace
}  // namespace perfgate::svg
