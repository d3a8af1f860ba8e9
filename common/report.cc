#include "common/report.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <vector>

namespace perfgate::report {
namespace {

std::string Fixed(double v) { return FormatFigure(v); }

}  // namespace

int DeviceOrdinal(const std::string& device) {
  if (device.rfind("gpu", 0) != 0 || device.size() == 3 || device.size() > 12) return -1;
  for (std::size_t i = 3; i < device.size(); ++i) {
    if (device[i] < '0' || device[i] > '9') return -1;
  }
  return std::stoi(device.substr(3));
}

v1alpha1::Verdict ToProto(verdict::Verdict v) {
  switch (v) {
    case verdict::Verdict::kPass:
      return v1alpha1::PASS;
    case verdict::Verdict::kFail:
      return v1alpha1::FAIL;
    case verdict::Verdict::kInconclusive:
      return v1alpha1::INCONCLUSIVE;
    case verdict::Verdict::kSkipped:
      return v1alpha1::SKIPPED;
    case verdict::Verdict::kError:
      return v1alpha1::ERROR;
  }
  return v1alpha1::ERROR;
}

verdict::Verdict FromProto(v1alpha1::Verdict v) {
  switch (v) {
    case v1alpha1::PASS:
      return verdict::Verdict::kPass;
    case v1alpha1::FAIL:
      return verdict::Verdict::kFail;
    case v1alpha1::INCONCLUSIVE:
      return verdict::Verdict::kInconclusive;
    case v1alpha1::SKIPPED:
      return verdict::Verdict::kSkipped;
    default:
      return verdict::Verdict::kError;
  }
}

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 forbids most control characters.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

double StatisticValue(const v1alpha1::Summary& s, const std::string& statistic) {
  if (statistic == "mean") return s.mean();
  if (statistic == "p05") return s.p05();
  if (statistic == "p95") return s.p95();
  if (statistic == "min") return s.min();
  if (statistic == "max") return s.max();
  if (statistic == "ciLow") return s.meanci().low();
  if (statistic == "ciHigh") return s.meanci().high();
  return s.median();
}

std::string FormatFigure(double v) {
  if (std::isnan(v)) return "-";
  std::ostringstream os;
  const double a = std::fabs(v);
  if (std::isinf(v) || a >= 1e6 || (a > 0 && a < 1e-4)) {
    os << std::setprecision(4) << v;
  } else {
    os << std::fixed << std::setprecision(a >= 100 ? 1 : a >= 1 ? 2 : 4) << v;
  }
  return os.str();
}

std::string VerdictName(v1alpha1::Verdict v) {
  if (v == v1alpha1::VERDICT_UNSPECIFIED) return "UNSPECIFIED";
  return v1alpha1::Verdict_Name(v);
}

std::string FormatColumns(const std::vector<std::vector<std::string>>& rows, std::size_t gap) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(widths[i] + gap - row[i].size(), ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  }
  return out;
}

std::string FormatTable(const v1alpha1::Report& report) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"TEST", "DEVICE", "METRIC", "STATISTIC", "VALUE", "BOUND", "N", "VERDICT"});
  for (const auto& t : report.tests()) {
    if (t.thresholds_size() > 0) {
      for (const auto& th : t.thresholds()) {
        std::string unit;
        for (const auto& m : t.metrics()) {
          if (m.name() == th.threshold().metric()) unit = m.unit();
        }
        rows.push_back({t.name(), t.device(), th.threshold().metric(), th.threshold().statistic(),
                        Fixed(th.observed()) + " " + unit,
                        th.threshold().op() + " " + Fixed(th.bound()), std::to_string(t.samples()),
                        VerdictName(th.verdict())});
      }
    } else if (t.metrics_size() > 0) {
      for (const auto& m : t.metrics()) {
        rows.push_back({t.name(), t.device(), m.name(), "median",
                        Fixed(StatisticValue(m.summary(), "median")) + " " + m.unit(), "-",
                        std::to_string(m.summary().n()), VerdictName(t.verdict())});
      }
    } else {
      rows.push_back({t.name(), t.device(), "-", "-", "-", "-", std::to_string(t.samples()),
                      VerdictName(t.verdict())});
    }
  }
  std::ostringstream os;
  os << FormatColumns(rows);
  bool header = false;
  for (const auto& t : report.tests()) {
    if (t.verdict() == v1alpha1::PASS) continue;
    if (!header) {
      os << "\n";
      header = true;
    }
    os << VerdictName(t.verdict()) << "  " << t.name() << " [" << t.device() << "]: " << t.reason()
       << "\n";
  }
  os << "\nverdict: " << VerdictName(report.verdict());
  if (!report.reason().empty()) os << " (" << report.reason() << ")";
  os << "\n";
  if (!report.action().step().empty() && report.action().step() != "none") {
    os << "recommended action: " << report.action().step() << "\n";
    for (const auto& e : report.action().evidence()) os << "  " << e << "\n";
  }
  return os.str();
}

Result<std::string> ToJson(const v1alpha1::Report& report) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  std::string out;
  auto st = google::protobuf::util::MessageToJsonString(report, &out, options);
  if (!st.ok()) return Internal("report to JSON: " + std::string(st.message()));
  return out;
}

Result<v1alpha1::Report> FromJson(const std::string& text) {
  v1alpha1::Report report;
  auto st = google::protobuf::util::JsonStringToMessage(text, &report);
  if (!st.ok()) return InvalidArgument("report JSON: " + std::string(st.message()));
  return report;
}

std::string ToJUnit(const v1alpha1::Report& report) {
  int failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
  for (const auto& t : report.tests()) {
    failures += t.verdict() == v1alpha1::FAIL;
    errors += t.verdict() == v1alpha1::ERROR || t.verdict() == v1alpha1::INCONCLUSIVE;
    skipped += t.verdict() == v1alpha1::SKIPPED;
    seconds += t.seconds();
  }
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<testsuites>\n";
  os << "  <testsuite name=\"perfgate." << XmlEscape(report.validation()) << "\" tests=\""
     << report.tests_size() << "\" failures=\"" << failures << "\" errors=\"" << errors
     << "\" skipped=\"" << skipped << "\" time=\"" << Fixed(seconds) << "\" hostname=\""
     << XmlEscape(report.identity().hostname()) << "\">\n";
  for (const auto& t : report.tests()) {
    os << "    <testcase classname=\"perfgate." << XmlEscape(t.type()) << "\" name=\""
       << XmlEscape(t.name() + " [" + t.device() + "]") << "\" time=\"" << Fixed(t.seconds())
       << "\">\n";
    const std::string reason = XmlEscape(t.reason());
    switch (t.verdict()) {
      case v1alpha1::FAIL:
        os << "      <failure type=\"FAIL\" message=\"" << reason << "\"/>\n";
        break;
      case v1alpha1::ERROR:
      case v1alpha1::INCONCLUSIVE:
        os << "      <error type=\"" << VerdictName(t.verdict()) << "\" message=\"" << reason
           << "\"/>\n";
        break;
      case v1alpha1::SKIPPED:
        os << "      <skipped message=\"" << reason << "\"/>\n";
        break;
      default:
        break;
    }
    std::ostringstream out;
    for (const auto& m : t.metrics()) {
      const auto& s = m.summary();
      out << m.name() << " (" << m.unit() << "): n=" << s.n() << " median=" << Fixed(s.median())
          << " mean=" << Fixed(s.mean()) << " p05=" << Fixed(s.p05()) << " p95=" << Fixed(s.p95())
          << " cv=" << Fixed(s.cv()) << "\n";
    }
    for (const auto& th : t.thresholds()) out << th.reason() << "\n";
    if (!out.str().empty()) os << "      <system-out>" << XmlEscape(out.str()) << "</system-out>\n";
    os << "    </testcase>\n";
  }
  os << "  </testsuite>\n</testsuites>\n";
  return os.str();
}

Status WriteFileAtomic(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Unavailable(path + ": cannot write: " + std::strerror(errno));
    out << text;
    if (!out.flush()) return Unavailable(path + ": write failed: " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Unavailable(path + ": cannot rename into place: " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace perfgate::report
