#include "cli/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>

#include "cli/svg.h"
#include "common/node_verdict.h"
#include "common/report.h"
#include "common/stats.h"

namespace perfgate::htmlreport {
namespace {

using fleet::Figure;
using fleet::NodeReport;
using report::FormatFigure;
using svg::Num;

std::string Esc(const std::string& s) { return report::XmlEscape(s); }

std::string VerdictClass(v1alpha1::Verdict v) {
  std::string name = report::VerdictName(v);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return "v-" + name;
}

// A stable pseudo-random fraction in [0, 1) from a text (the vertical jitter of a dot).
double Jitter(const std::string& key) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return static_cast<double>(h % 10007) / 10007.0;
}

constexpr const char* kStyle = R"css(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2329;
       margin: 24px auto; max-width: 1100px; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px;
     border-bottom: 1px solid #d8dee4; padding-bottom: 4px; }
.sub { color: #57606a; margin-top: 0; }
.counts span { display: inline-block; margin-right: 12px; padding: 2px 10px; border-radius: 10px;
               font-weight: 600; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid #eaeef2; vertical-align: top; }
th { background: #f6f8fa; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.v-pass { color: #1a7f37; } .v-fail { color: #cf222e; } .v-error { color: #57606a; }
.v-inconclusive { color: #bc4c00; } .v-skipped { color: #57606a; }
span.v-pass { background: #dafbe1; } span.v-fail { background: #ffebe9; }
span.v-error { background: #eaeef2; } span.v-inconclusive { background: #fff1e5; }
figure { margin: 18px 0; } figcaption { font-weight: 600; margin-bottom: 2px; }
figcaption small { font-weight: 400; color: #57606a; }
svg text { font: 11px system-ui, sans-serif; fill: #57606a; }
svg .axis { stroke: #8c959f; } svg .grid { stroke: #eaeef2; }
svg .bound { stroke: #cf222e; stroke-dasharray: 5 3; stroke-width: 1.5; }
svg .box { fill: #f6f8fa; stroke: #afb8c1; }
svg circle.mark { stroke: none; opacity: 0.75; } svg circle.lag { stroke: #1d2329; stroke-width: 1.5; }
svg path.node-line { fill: none; stroke: #8c959f; stroke-width: 1; opacity: 0.35; }
svg path.median-line { fill: none; stroke: #0969da; stroke-width: 2.5; }
.none { color: #57606a; font-style: italic; }
)css";

std::string DotColour(v1alpha1::Verdict v) {
  switch (v) {
    case v1alpha1::PASS:
      return "#2da44e";
    case v1alpha1::FAIL:
      return "#cf222e";
    case v1alpha1::INCONCLUSIVE:
      return "#e16f24";
    case v1alpha1::ERROR:
      return "#6e7781";
    default:
      return "#0969da";
  }
}

// An axis label: whole numbers without decimals, others as figures are written.
std::string Tick(double v) {
  if (std::fabs(v) < 1e15 && v == std::round(v)) {
    return std::to_string(static_cast<long long>(std::llround(v)));
  }
  return FormatFigure(v);
}

std::string WithUnit(double v, const std::string& unit) {
  return FormatFigure(v) + (unit.empty() ? std::string() : " " + unit);
}

void Header(std::ostringstream& os, const std::vector<NodeReport>& reports, const Options& o) {
  std::map<v1alpha1::Verdict, int> counts;
  int gpus = 0;
  std::set<std::string> models;
  for (const auto& r : reports) {
    ++counts[r.report.verdict()];
    gpus += r.report.identity().gpus_size();
    if (std::string m = fleet::GpuModel(r.report); !m.empty()) models.insert(m);
  }
  os << "<header><h1>" << Esc(o.title) << "</h1>\n<p class=\"sub\">" << reports.size()
     << (reports.size() == 1 ? " node" : " nodes") << ", " << gpus << " GPUs";
  for (const auto& m : models) os << " · " << Esc(m);
  if (!o.source.empty()) os << " · from " << Esc(o.source);
  if (!o.generated.empty()) os << " · " << Esc(o.generated);
  os << "</p>\n<p class=\"counts\">";
  for (auto v : {v1alpha1::PASS, v1alpha1::FAIL, v1alpha1::INCONCLUSIVE, v1alpha1::ERROR}) {
    os << "<span class=\"" << VerdictClass(v) << "\">" << report::VerdictName(v) << " " << counts[v]
       << "</span>";
  }
  os << "</p></header>\n";
}

std::string Why(const NodeReport& r) {
  if (!r.report.reason().empty()) return r.report.reason();
  for (const auto& t : r.report.tests()) {
    if (t.verdict() == r.report.verdict() && !t.reason().empty()) {
      return t.name() + " [" + t.device() + "]: " + t.reason();
    }
  }
  return "";
}

// What the worker's diagnosis says (docs/diagnostics.md), folded under the reason: GPUs that lag
// their siblings, hints, and where the bundle is.
void Diagnosis(std::ostringstream& os, const NodeReport& r) {
  const auto& d = r.report.diagnosis();
  if (d.lagging().empty() && d.hints().empty() && d.locations().empty()) return;
  os << "<details class=\"diagnosis\"><summary>Diagnosis</summary><ul>";
  for (const auto& l : d.lagging()) os << "<li>lagging: " << Esc(l) << "</li>";
  for (const auto& h : d.hints()) os << "<li>hint: " << Esc(h) << "</li>";
  for (const auto& where : d.locations()) os << "<li>bundle: " << Esc(where) << "</li>";
  if (const std::string command = fleet::BundleCommand(r); !command.empty()) {
    os << "<li>download: <code>" << Esc(command) << "</code></li>";
  }
  os << "</ul></details>";
}

void NodeRows(std::ostringstream& os, const std::vector<const NodeReport*>& rows,
              const char* row_class) {
  os << "<table><thead><tr><th>Node</th><th>GPU model</th><th>Verdict</th><th>Why</th></tr>"
        "</thead><tbody>\n";
  for (const NodeReport* r : rows) {
    os << "<tr class=\"" << row_class << "\"><td>" << Esc(r->node) << "</td><td>"
       << Esc(fleet::GpuModel(r->report)) << "</td><td class=\""
       << VerdictClass(r->report.verdict()) << "\">" << report::VerdictName(r->report.verdict())
       << "</td><td>" << Esc(Why(*r));
    Diagnosis(os, *r);
    os << "</td></tr>\n";
  }
  os << "</tbody></table>\n";
}

std::vector<const NodeReport*> WorstFirst(const std::vector<NodeReport>& reports) {
  std::vector<const NodeReport*> order;
  for (const auto& r : reports) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const NodeReport* a, const NodeReport* b) {
    const int sa = verdict::Severity(report::FromProto(a->report.verdict()));
    const int sb = verdict::Severity(report::FromProto(b->report.verdict()));
    return sa != sb ? sa < sb : a->node < b->node;
  });
  return order;
}

// The nodes that did not pass, worst first.
void NodeTables(std::ostringstream& os, const std::vector<NodeReport>& reports) {
  const std::vector<const NodeReport*> order = WorstFirst(reports);
  std::vector<const NodeReport*> problems;
  for (const NodeReport* r : order) {
    if (r->report.verdict() != v1alpha1::PASS) problems.push_back(r);
  }
  os << "<section id=\"problems\"><h2>Nodes that did not pass</h2>\n";
  if (problems.empty()) {
    os << "<p class=\"none\">Every node passed.</p>\n";
  } else {
    NodeRows(os, problems, "problem-row");
  }
  os << "</section>\n";
}

// Every node, worst first, folded.
void AllNodes(std::ostringstream& os, const std::vector<NodeReport>& reports) {
  const std::vector<const NodeReport*> order = WorstFirst(reports);
  os << "<section id=\"nodes\"><h2>Nodes</h2>\n<details><summary>All " << reports.size()
     << " nodes, worst first</summary>\n";
  NodeRows(os, order, "node-row");
  os << "</details></section>\n";
}

void LaggingTable(std::ostringstream& os, const std::vector<fleet::Lagging>& lagging) {
  os << "<section id=\"lagging\"><h2>Nodes that lag their peers</h2>\n";
  if (lagging.empty()) {
    os << "<p class=\"none\">No figure lags its peers (a robust z of 3.5 or more, corrected for "
          "the number of figures, and 3% or more worse than the median of 8 or more nodes of one "
          "GPU model).</p></section>\n";
    return;
  }
  os << "<p>Figures at least 3.5 robust standard deviations (more in large groups: a healthy "
        "group flags nothing 99% of the time) and 3% worse than the median of their peers (same "
        "test, metric and GPU model). They may still pass their bounds.</p>\n"
        "<table><thead><tr><th>Node</th><th>Device</th><th>Test</th><th>Metric</th>"
        "<th>Figure</th><th>Peers' median</th><th>Ratio</th><th>Robust z</th><th>Verdict</th>"
        "</tr></thead><tbody>\n";
  for (const auto& l : lagging) {
    const Figure& f = l.figure;
    os << "<tr class=\"lag-row\"><td>" << Esc(f.node) << "</td><td>" << Esc(f.device) << "</td><td>"
       << Esc(f.test) << "</td><td>" << Esc(f.metric) << " (" << Esc(f.statistic)
       << ")</td><td class=\"num\">" << Esc(WithUnit(f.value, f.unit)) << "</td><td class=\"num\">"
       << Esc(WithUnit(l.peer_median, f.unit)) << "</td><td class=\"num\">" << FormatFigure(l.ratio)
       << "</td><td class=\"num\">" << FormatFigure(l.z) << "</td><td class=\""
       << VerdictClass(f.verdict) << "\">" << report::VerdictName(f.verdict) << "</td></tr>\n";
  }
  os << "</tbody></table></section>\n";
}

// The nodes whose consistency digests differ from their peers' (fleet::FindDigestOutliers);
// nothing at all where no node ran the consistency test.
void DigestTable(std::ostringstream& os, const std::vector<fleet::DigestOutlier>& outliers,
                 bool screened) {
  if (!screened) return;
  os << "<section id=\"digests\"><h2>Nodes whose outputs differ from their peers&apos;</h2>\n";
  if (outliers.empty()) {
    os << "<p class=\"none\">No node&apos;s consistency digests differ from those of most nodes "
          "of its GPU model, driver and CUDA version (at least three nodes, same "
          "parameters).</p></section>\n";
    return;
  }
  os << "<p>The consistency screen&apos;s digest of a computation, where more than half of the "
        "nodes of the same GPU model, driver and CUDA version computed another with the same "
        "parameters: the node&apos;s GPUs agree with each other, but not with the other "
        "nodes.</p>\n"
        "<table><thead><tr><th>Node</th><th>Test</th><th>Computation</th><th>GPU model</th>"
        "<th>Driver</th><th>CUDA</th><th>Digest</th><th>Peers&apos; digest</th><th>Peers</th>"
        "</tr></thead><tbody>\n";
  for (const auto& d : outliers) {
    os << "<tr class=\"digest-row\"><td>" << Esc(d.node) << "</td><td>" << Esc(d.test)
       << "</td><td>" << Esc(d.computation) << "</td><td>" << Esc(d.model) << "</td><td>"
       << Esc(d.driver) << "</td><td>" << Esc(d.cuda) << "</td><td>" << Esc(d.digest) << "</td><td>"
       << Esc(d.peer_digest) << "</td><td class=\"num\">" << d.agreeing << " of " << d.nodes
       << "</td></tr>\n";
  }
  os << "</tbody></table></section>\n";
}

// One strip plot: every figure of a group as a dot on the value axis, the quartile box behind
// them and the bound as a dashed line.
void StripPlot(std::ostringstream& os, const std::vector<const Figure*>& figs,
               const std::set<std::string>& lagging_keys) {
  const Figure& first = *figs.front();
  std::vector<double> values;
  std::map<double, int> bounds;
  for (const Figure* f : figs) {
    values.push_back(f->value);
    if (!f->op.empty() && std::isfinite(f->bound)) ++bounds[f->bound];
  }
  std::sort(values.begin(), values.end());
  double lo = values.front(), hi = values.back();
  for (const auto& [b, n] : bounds) {
    lo = std::min(lo, b);
    hi = std::max(hi, b);
  }
  if (hi == lo) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.05;
    lo -= pad;
    hi += pad;
  }
  const double pad = (hi - lo) * 0.05;
  lo -= pad;
  hi += pad;
  constexpr double kW = 760, kH = 110, kLeft = 20, kRight = 740, kTop = 10, kBottom = 80;
  const svg::Scale x{lo, hi, kLeft, kRight};
  int failing = 0, lag = 0;
  for (const Figure* f : figs) failing += f->verdict == v1alpha1::FAIL;

  os << "<figure class=\"strip\"><figcaption>" << Esc(first.test) << " · " << Esc(first.metric)
     << " <small>(" << Esc(first.statistic);
  if (!first.op.empty()) os << " " << Esc(first.op) << " bound";
  os << (first.model.empty() ? std::string() : ", " + Esc(first.model))
     << ")</small></figcaption>\n";
  os << "<svg data-plot=\"strip\" data-marks=\"" << figs.size() << "\" viewBox=\"0 0 " << Num(kW)
     << " " << Num(kH) << "\" width=\"" << Num(kW) << "\" height=\"" << Num(kH)
     << "\" role=\"img\">\n";
  for (double t : svg::NiceTicks(lo, hi, 6)) {
    os << "<line class=\"grid\" x1=\"" << Num(x(t)) << "\" x2=\"" << Num(x(t)) << "\" y1=\""
       << Num(kTop) << "\" y2=\"" << Num(kBottom) << "\"/><text x=\"" << Num(x(t)) << "\" y=\""
       << Num(kBottom + 14) << "\" text-anchor=\"middle\">" << Esc(Tick(t)) << "</text>\n";
  }
  const double q1 = stats::Quantile(values, 0.25), q3 = stats::Quantile(values, 0.75);
  const double median = stats::Quantile(values, 0.5);
  os << "<rect class=\"box\" x=\"" << Num(x(q1)) << "\" y=\"" << Num(kTop + 8) << "\" width=\""
     << Num(std::max(1.0, x(q3) - x(q1))) << "\" height=\"" << Num(kBottom - kTop - 16)
     << "\"/><line class=\"axis\" x1=\"" << Num(x(median)) << "\" x2=\"" << Num(x(median))
     << "\" y1=\"" << Num(kTop + 8) << "\" y2=\"" << Num(kBottom - 8) << "\"/>\n";
  for (const auto& [b, n] : bounds) {
    os << "<line class=\"bound\" x1=\"" << Num(x(b)) << "\" x2=\"" << Num(x(b)) << "\" y1=\""
       << Num(kTop) << "\" y2=\"" << Num(kBottom) << "\"><title>bound " << Esc(first.op) << " "
       << Esc(WithUnit(b, first.unit)) << "</title></line>\n";
  }
  for (const Figure* f : figs) {
    const std::string key = f->node + "\x1f" + f->device;
    const bool lags = lagging_keys.count(key) > 0;
    lag += lags;
    const double y = kTop + 4 + Jitter(key + first.metric) * (kBottom - kTop - 8);
    os << "<circle class=\"mark" << (lags ? " lag" : "") << "\" cx=\"" << Num(x(f->value))
       << "\" cy=\"" << Num(y) << "\" r=\"3\" fill=\"" << DotColour(f->verdict) << "\"><title>"
       << Esc(f->node) << " " << Esc(f->device) << ": " << Esc(WithUnit(f->value, f->unit)) << " ("
       << report::VerdictName(f->verdict) << (lags ? ", lags its peers" : "")
       << ")</title></circle>\n";
  }
  os << "</svg>\n<div class=\"sub\">" << figs.size() << " figures · median "
     << Esc(WithUnit(median, first.unit));
  if (!bounds.empty()) {
    os << " · bound " << Esc(first.op) << " " << Esc(WithUnit(bounds.begin()->first, first.unit));
    if (bounds.size() > 1) os << " (and " << bounds.size() - 1 << " other bounds)";
  }
  os << " · " << failing << " failing · " << lag << " lagging</div></figure>\n";
}

void FigureSection(std::ostringstream& os, const std::vector<Figure>& figures,
                   const std::vector<fleet::Lagging>& lagging) {
  // Groups in the order the reports list them.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Figure*>> groups;
  for (const Figure& f : figures) {
    const std::string key = fleet::GroupKey(f) + "\x1f" + f.model;
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&f);
  }
  std::map<std::string, std::set<std::string>> lag_keys;
  for (const auto& l : lagging) {
    lag_keys[fleet::GroupKey(l.figure) + "\x1f" + l.figure.model].insert(l.figure.node + "\x1f" +
                                                                         l.figure.device);
  }
  os << "<section id=\"figures\"><h2>Figures across the fleet</h2>\n<p>One dot per node and "
        "device: green passed, red failed, orange inconclusive, blue for a metric no threshold "
        "checks; a black ring marks a figure that "
        "lags its peers. The box spans the middle half, the dashed red line is the bound.</p>\n";
  if (order.empty()) os << "<p class=\"none\">No figures.</p>\n";
  for (const auto& key : order) StripPlot(os, groups[key], lag_keys[key]);
  os << "</section>\n";
}

void Heatmap(std::ostringstream& os, const fleet::P2pMatrix& m, const std::string& caption) {
  double hi = -INFINITY;
  int cells = 0;
  for (int s = 0; s < m.gpus; ++s) {
    for (int d = 0; d < m.gpus; ++d) {
      if (std::isnan(m.gbps[s][d])) continue;
      hi = std::max(hi, m.gbps[s][d]);
      ++cells;
    }
  }
  const double cell = m.gpus <= 8 ? 48 : 28, left = 50, top = 24;
  const double size = left + cell * m.gpus + 10;
  os << "<figure class=\"heatmap\"><figcaption>" << Esc(caption)
     << " <small>(GB/s, source GPU by row, destination by column)</small></figcaption>\n"
     << "<svg data-plot=\"heatmap\" data-marks=\"" << cells << "\" viewBox=\"0 0 " << Num(size)
     << " " << Num(size) << "\" width=\"" << Num(size) << "\" height=\"" << Num(size)
     << "\" role=\"img\">\n";
  for (int i = 0; i < m.gpus; ++i) {
    os << "<text x=\"" << Num(left + cell * (i + 0.5)) << "\" y=\"" << Num(top - 8)
       << "\" text-anchor=\"middle\">gpu" << i << "</text><text x=\"" << Num(left - 6) << "\" y=\""
       << Num(top + cell * (i + 0.5) + 4) << "\" text-anchor=\"end\">gpu" << i << "</text>\n";
  }
  for (int s = 0; s < m.gpus; ++s) {
    for (int d = 0; d < m.gpus; ++d) {
      const double v = m.gbps[s][d];
      if (std::isnan(v)) continue;
      // From zero, so noise between equal links stays one colour and a slow link stands out.
      const double t = hi > 0 ? v / hi : 1.0;
      os << "<rect class=\"mark\" x=\"" << Num(left + cell * d) << "\" y=\"" << Num(top + cell * s)
         << "\" width=\"" << Num(cell - 1) << "\" height=\"" << Num(cell - 1) << "\" fill=\""
         << svg::Sequential(0.15 + 0.85 * t) << "\"><title>gpu" << s << " -> gpu" << d << ": "
         << FormatFigure(v) << " GB/s</title></rect>";
      if (m.gpus <= 8) {
        os << "<text x=\"" << Num(left + cell * (d + 0.5)) << "\" y=\""
           << Num(top + cell * (s + 0.5) + 4)
           << "\" text-anchor=\"middle\" style=\"fill:" << (t > 0.5 ? "#ffffff" : "#1d2329")
           << "\">" << Esc(Tick(std::round(v))) << "</text>";
      }
      os << "\n";
    }
  }
  os << "</svg></figure>\n";
}

void P2pSection(std::ostringstream& os, const std::vector<fleet::P2pMatrix>& matrices) {
  if (matrices.empty()) return;
  os << "<section id=\"p2p\"><h2>Peer-to-peer bandwidth</h2>\n";
  // The fleet's median per pair, among nodes with the most common GPU count.
  std::map<int, int> by_count;
  for (const auto& m : matrices) ++by_count[m.gpus];
  const int gpus =
      std::max_element(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      })->first;
  fleet::P2pMatrix median{"", gpus, {}};
  median.gbps.assign(gpus, std::vector<double>(gpus, std::nan("")));
  const fleet::P2pMatrix* weakest = nullptr;
  double weakest_pair = INFINITY;
  for (int s = 0; s < gpus; ++s) {
    for (int d = 0; d < gpus; ++d) {
      std::vector<double> v;
      for (const auto& m : matrices) {
        if (m.gpus == gpus && !std::isnan(m.gbps[s][d])) v.push_back(m.gbps[s][d]);
      }
      std::sort(v.begin(), v.end());
      if (!v.empty()) median.gbps[s][d] = stats::Quantile(v, 0.5);
    }
  }
  for (const auto& m : matrices) {
    for (const auto& row : m.gbps) {
      for (double v : row) {
        if (!std::isnan(v) && v < weakest_pair) {
          weakest_pair = v;
          weakest = &m;
        }
      }
    }
  }
  int nodes = by_count[gpus];
  Heatmap(os, median,
          "Fleet median of " + std::to_string(nodes) + (nodes == 1 ? " node" : " nodes") +
              " with " + std::to_string(gpus) + " GPUs");
  if (weakest != nullptr && matrices.size() > 1) {
    Heatmap(os, *weakest, "The weakest pair's node: " + weakest->node);
  }
  os << "</section>\n";
}

std::string SizeText(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  return Tick(bytes) + " " + kUnits[u];
}

std::string PathOf(const std::vector<std::pair<double, double>>& pts, const svg::Scale& x,
                   const svg::Scale& y) {
  std::string d;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    d += (i == 0 ? "M" : "L") + Num(x(pts[i].first)) + " " + Num(y(pts[i].second));
  }
  return d;
}

void NcclSection(std::ostringstream& os, const std::vector<fleet::NcclCurve>& curves) {
  if (curves.empty()) return;
  std::vector<std::string> tests;
  std::map<std::string, std::vector<const fleet::NcclCurve*>> by_test;
  for (const auto& c : curves) {
    if (!by_test.count(c.test)) tests.push_back(c.test);
    by_test[c.test].push_back(&c);
  }
  os << "<section id=\"nccl\"><h2>NCCL bus bandwidth against message size</h2>\n<p>A grey "
        "line per node (median of its samples at each size), the fleet's median in blue.</p>\n";
  for (const auto& test : tests) {
    const auto& cs = by_test[test];
    double x0 = INFINITY, x1 = 0, y1 = 0;
    std::map<double, std::vector<double>> at;
    for (const auto* c : cs) {
      for (const auto& [b, v] : c->points) {
        x0 = std::min(x0, b);
        x1 = std::max(x1, b);
        y1 = std::max(y1, v);
        at[b].push_back(v);
      }
    }
    if (x1 <= x0) x1 = x0 * 2;
    if (y1 <= 0) y1 = 1;
    constexpr double kW = 760, kH = 300, kLeft = 56, kRight = 740, kTop = 10, kBottom = 262;
    const svg::Scale x{x0, x1, kLeft, kRight, true};
    const svg::Scale y{0, y1 * 1.05, kBottom, kTop};
    os << "<figure class=\"lines\"><figcaption>" << Esc(test)
       << " <small>(bus bandwidth, GB/s)</small></figcaption>\n<svg data-plot=\"lines\" "
          "data-marks=\""
       << cs.size() + 1 << "\" viewBox=\"0 0 " << Num(kW) << " " << Num(kH) << "\" width=\""
       << Num(kW) << "\" height=\"" << Num(kH) << "\" role=\"img\">\n";
    for (double t : svg::NiceTicks(0, y1 * 1.05, 5)) {
      os << "<line class=\"grid\" x1=\"" << Num(kLeft) << "\" x2=\"" << Num(kRight) << "\" y1=\""
         << Num(y(t)) << "\" y2=\"" << Num(y(t)) << "\"/><text x=\"" << Num(kLeft - 6) << "\" y=\""
         << Num(y(t) + 4) << "\" text-anchor=\"end\">" << Esc(Tick(t)) << "</text>\n";
    }
    // A size label every factor of 4 or more, so they do not overlap.
    double last = 0;
    for (const auto& [b, v] : at) {
      if (last > 0 && b < last * 4) continue;
      last = b;
      os << "<text x=\"" << Num(x(b)) << "\" y=\"" << Num(kBottom + 16)
         << "\" text-anchor=\"middle\">" << Esc(SizeText(b)) << "</text>\n";
    }
    os << "<line class=\"axis\" x1=\"" << Num(kLeft) << "\" x2=\"" << Num(kRight) << "\" y1=\""
       << Num(kBottom) << "\" y2=\"" << Num(kBottom) << "\"/>\n";
    for (const auto* c : cs) {
      os << "<path class=\"mark node-line\" d=\"" << PathOf(c->points, x, y) << "\"><title>"
         << Esc(c->node) << "</title></path>\n";
    }
    std::vector<std::pair<double, double>> med;
    for (auto& [b, v] : at) {
      std::sort(v.begin(), v.end());
      med.emplace_back(b, stats::Quantile(v, 0.5));
    }
    os << "<path class=\"mark median-line\" d=\"" << PathOf(med, x, y)
       << "\"><title>fleet median</title></path>\n</svg></figure>\n";
  }
  os << "</section>\n";
}

void GpuTable(std::ostringstream& os, const std::vector<NodeReport>& reports) {
  int gpus = 0;
  for (const auto& r : reports) gpus += r.report.identity().gpus_size();
  if (gpus == 0) return;
  os << "<section id=\"gpus\"><h2>GPUs</h2>\n<details><summary>" << gpus
     << " GPUs: model, UUID, PCI bus, VBIOS, power limit, driver</summary>\n<table><thead><tr>"
        "<th>Node</th><th>GPU</th><th>Model</th><th>UUID</th><th>PCI bus</th><th>VBIOS</th>"
        "<th>Power limit</th><th>ECC</th><th>Driver</th><th>CUDA</th></tr></thead><tbody>\n";
  for (const auto& r : reports) {
    const auto& id = r.report.identity();
    for (const auto& g : id.gpus()) {
      os << "<tr class=\"gpu-row\"><td>" << Esc(r.node) << "</td><td class=\"num\">" << g.index()
         << "</td><td>" << Esc(g.name()) << "</td><td>" << Esc(g.uuid()) << "</td><td>"
         << Esc(g.pcibusid()) << "</td><td>" << Esc(g.vbios()) << "</td><td class=\"num\">"
         << (g.powerlimitw() > 0 ? FormatFigure(g.powerlimitw()) + " W" : "") << "</td><td>"
         << Esc(g.eccmode()) << "</td><td>" << Esc(id.driverversion()) << "</td><td>"
         << Esc(id.cudaversion()) << "</td></tr>\n";
    }
  }
  os << "</tbody></table></details></section>\n";
}

}  // namespace

const char* Stylesheet() { return kStyle; }

std::string Render(const std::vector<NodeReport>& reports, const Options& options) {
  const std::vector<Figure> figures = fleet::Figures(reports);
  const std::vector<fleet::Lagging> lagging = fleet::FindLagging(figures);
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>"
     << Esc(options.title) << "</title>\n<style>" << kStyle << "</style></head><body>\n";
  Header(os, reports, options);
  NodeTables(os, reports);
  LaggingTable(os, lagging);
  const bool screened = std::any_of(reports.begin(), reports.end(), [](const NodeReport& r) {
    return std::any_of(r.report.tests().begin(), r.report.tests().end(),
                       [](const auto& t) { return t.type() == "consistency"; });
  });
  DigestTable(os, fleet::FindDigestOutliers(reports), screened);
  FigureSection(os, figures, lagging);
  P2pSection(os, fleet::P2pMatrices(reports));
  NcclSection(os, fleet::NcclCurves(reports));
  AllNodes(os, reports);
  GpuTable(os, reports);
  os << "</body></html>\n";
  return os.str();
}

}  // namespace perfgate::htmlreport
