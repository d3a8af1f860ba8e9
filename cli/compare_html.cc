// perfgate compare --html: the comparison as one HTML page in the report's style.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli/compare.h"
#include "cli/html_report.h"
#include "cli/svg.h"
#include "common/report.h"

namespace perfgate::compare {
namespace {

using svg::Num;

std::string Esc(const std::string& s) { return report::XmlEscape(s); }

std::string Fixed3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// The verdict's class in the report's stylesheet: regressed reads as a failure, improved and
// equivalent as a pass, inconclusive as inconclusive.
const char* VerdictClass(Decision d) {
  switch (d) {
    case Decision::kRegressed:
      return "v-fail";
    case Decision::kImproved:
    case Decision::kEquivalent:
      return "v-pass";
    case Decision::kInconclusive:
      break;
  }
  return "v-inconclusive";
}

const char* DotColour(Decision d) {
  switch (d) {
    case Decision::kRegressed:
      return "#cf222e";
    case Decision::kImproved:
      return "#0969da";
    case Decision::kEquivalent:
      return "#2da44e";
    case Decision::kInconclusive:
      break;
  }
  return "#e16f24";
}

std::string Label(const Row& r, bool many) {
  std::string s = r.test + " · " + r.metric;
  if (r.statistic != "median") s += " " + r.statistic;
  if (many) s += " · " + r.group;
  return s;
}

// One line per row: the ratio and its interval on a log axis, the equivalence band shaded and
// 1 marked.
void IntervalPlot(std::ostringstream& os, const Comparison& c,
                  const std::vector<const Row*>& rows) {
  const double band_low = 1 / (1 + c.options.margin), band_high = 1 + c.options.margin;
  double lo = band_low, hi = band_high;
  for (const Row* r : rows) {
    lo = std::min({lo, r->ratio_low, r->ratio});
    hi = std::max({hi, r->ratio_high, r->ratio});
  }
  lo = std::max(lo / 1.01, 1e-6);
  hi *= 1.01;
  constexpr double kW = 1000, kLabel = 330, kRight = 980, kTop = 10, kRowH = 18;
  const double bottom = kTop + kRowH * static_cast<double>(rows.size());
  const double height = bottom + 28;
  // A log scale in ratios: base-2 logs keep equal factors equally wide either side of 1.
  const svg::Scale x{lo, hi, kLabel, kRight, true};
  const bool many = c.groups.size() > 2;
  os << "<svg data-plot=\"intervals\" data-marks=\"" << rows.size() << "\" viewBox=\"0 0 "
     << Num(kW) << " " << Num(height) << "\" width=\"" << Num(kW) << "\" height=\"" << Num(height)
     << "\" role=\"img\">\n";
  os << "<rect class=\"box\" x=\"" << Num(x(band_low)) << "\" y=\"" << Num(kTop) << "\" width=\""
     << Num(x(band_high) - x(band_low)) << "\" height=\"" << Num(bottom - kTop)
     << "\"><title>equivalence band: ratios within " << Fixed3(band_low) << " .. "
     << Fixed3(band_high) << "</title></rect>\n";
  for (double t : svg::NiceTicks(lo, hi, 6)) {
    if (t <= 0) continue;
    os << "<line class=\"grid\" x1=\"" << Num(x(t)) << "\" x2=\"" << Num(x(t)) << "\" y1=\""
       << Num(kTop) << "\" y2=\"" << Num(bottom) << "\"/><text x=\"" << Num(x(t)) << "\" y=\""
       << Num(bottom + 14) << "\" text-anchor=\"middle\">" << Fixed3(t) << "</text>\n";
  }
  os << "<line class=\"axis\" x1=\"" << Num(x(1)) << "\" x2=\"" << Num(x(1)) << "\" y1=\""
     << Num(kTop) << "\" y2=\"" << Num(bottom) << "\"/>\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = *rows[i];
    const double y = kTop + kRowH * (static_cast<double>(i) + 0.5);
    os << "<text x=\"" << Num(kLabel - 8) << "\" y=\"" << Num(y + 4) << "\" text-anchor=\"end\">"
       << Esc(Label(r, many)) << "</text>\n";
    if (!r.method.empty()) {
      os << "<line x1=\"" << Num(x(r.ratio_low)) << "\" x2=\"" << Num(x(r.ratio_high)) << "\" y1=\""
         << Num(y) << "\" y2=\"" << Num(y) << "\" stroke=\"" << DotColour(r.decision)
         << "\" stroke-width=\"2\"/>\n";
    }
    os << "<circle class=\"mark\" cx=\"" << Num(x(r.ratio)) << "\" cy=\"" << Num(y)
       << "\" r=\"4\" fill=\"" << DotColour(r.decision) << "\"><title>" << Esc(Label(r, many))
       << ": " << Esc(r.group) << "/" << Esc(r.reference) << " " << Fixed3(r.ratio);
    if (!r.method.empty()) {
      os << " [" << Fixed3(r.ratio_low) << ", " << Fixed3(r.ratio_high) << "]";
    }
    os << ", " << DecisionName(r.decision) << "</title></circle>\n";
  }
  os << "</svg>\n";
}

// The rows' table: each row's figures, ratio, interval, adjusted p and decision.
void RowsTable(std::ostringstream& os, const Comparison& c) {
  os << "<section id=\"rows\"><h2>Rows</h2>\n<table><tr><th>GPU model</th><th>test</th>"
        "<th>metric</th><th>stat</th><th>group</th><th>n</th><th>median "
     << Esc(c.groups[0])
     << "</th><th>median</th><th>ratio</th><th>interval</th><th>p (Holm)</th><th>verdict</th>"
        "</tr>\n";
  for (const auto& r : c.rows) {
    os << "<tr class=\"cmp-row\"><td>" << Esc(r.model) << "</td><td>" << Esc(r.test) << "</td><td>"
       << Esc(r.metric) << "</td><td>" << Esc(r.statistic) << "</td><td>" << Esc(r.group)
       << "</td><td class=\"num\">" << r.n_reference << "/" << r.n_group
       << "</td><td class=\"num\">" << Esc(report::FormatFigure(r.median_reference) + " " + r.unit)
       << "</td><td class=\"num\">" << Esc(report::FormatFigure(r.median_group) + " " + r.unit)
       << "</td><td class=\"num\">" << Fixed3(r.ratio) << "</td><td class=\"num\">"
       << (r.method.empty() ? "-" : Fixed3(r.ratio_low) + " .. " + Fixed3(r.ratio_high))
       << "</td><td class=\"num\">";
    if (r.method.empty()) {
      os << "-";
    } else {
      char p[32];
      std::snprintf(p, sizeof p, "%.2g", r.p_adjusted);
      os << p;
    }
    os << "</td><td class=\"" << VerdictClass(r.decision) << "\">" << DecisionName(r.decision)
       << (r.note.empty() ? "" : " <small>(" + Esc(r.note) + ")</small>") << "</td></tr>\n";
  }
  os << "</table></section>\n";
}

// Per row that regressed or improved, the keys that differ and what each explains.
void WhySection(std::ostringstream& os, const Comparison& c) {
  os << "<section id=\"why\"><h2>What differs where a figure changed</h2>\n";
  bool any = false;
  for (const auto& r : c.rows) {
    if (r.explanations.empty()) continue;
    any = true;
    os << "<h3>" << Esc(Label(r, true)) << " <small>(" << Esc(r.group) << "/" << Esc(r.reference)
       << " " << Fixed3(r.ratio) << ")</small></h3>\n<table><tr><th>key</th>"
       << "<th>" << Esc(r.reference) << "</th><th>" << Esc(r.group)
       << "</th><th>effect within matched groups</th><th>share of the gap</th></tr>\n";
    for (const auto& e : r.explanations) {
      os << "<tr class=\"why-row\"><td>" << Esc(e.key) << "</td><td>" << Esc(e.reference_values)
         << "</td><td>" << Esc(e.group_values) << "</td>";
      if (e.separable) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "x%.3f (%d node results)</td><td class=\"num\">%.0f%%",
                      e.effect, e.matched_nodes, e.share * 100);
        os << "<td>" << buf << "</td>";
      } else {
        os << "<td colspan=\"2\">cannot be separated from " << Esc(e.confounded_with) << "</td>";
      }
      os << "</tr>\n";
    }
    os << "</table>\n";
  }
  if (!any) os << "<p class=\"none\">No figure regressed or improved.</p>\n";
}

}  // namespace

std::string FormatHtml(const Comparison& c, const std::string& source,
                       const std::string& generated) {
  std::ostringstream os;
  std::string title = "perfgate compare: " + c.groups[0];
  for (std::size_t i = 1; i < c.groups.size(); ++i) title += " vs " + c.groups[i];
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" << Esc(title)
     << "</title>\n<style>" << htmlreport::Stylesheet() << "</style></head><body>\n";
  os << "<h1>" << Esc(title) << "</h1>\n<p class=\"sub\">" << Esc(source) << " · generated "
     << Esc(generated) << "</p>\n<p class=\"counts\">";
  for (Decision d : {Decision::kRegressed, Decision::kImproved, Decision::kEquivalent,
                     Decision::kInconclusive}) {
    os << "<span class=\"" << VerdictClass(d) << "\">" << c.Count(d) << " " << DecisionName(d)
       << "</span>";
  }
  char method[256];
  std::snprintf(method, sizeof method,
                "Margin %.3g%% (equivalent: the ratio shown within it by two one-sided tests at "
                "%.3g%%); regressed and improved: Holm-corrected rank tests at %.3g%% over %zu "
                "rows. ",
                c.options.margin * 100, c.options.alpha * 100, c.options.alpha * 100,
                c.rows.size());
  os << "</p>\n<p>" << Esc(method) << Esc(c.pairing_reason) << ".</p>\n";

  std::vector<const Row*> rows;
  for (const auto& r : c.rows) rows.push_back(&r);
  os << "<section id=\"intervals\"><h2>Ratios and their intervals</h2>\n<p>One line per row: "
        "the ratio (dot) with its "
     << std::lround(c.options.confidence * 100)
     << "% interval, on a log axis; the grey band is the equivalence margin, the dark line 1. "
        "Red regressed, blue improved, green equivalent, orange inconclusive.</p>\n";
  IntervalPlot(os, c, rows);
  os << "</section>\n";

  RowsTable(os, c);
  WhySection(os, c);
  os << "</section>\n</body></html>\n";
  return os.str();
}

}  // namespace perfgate::compare
