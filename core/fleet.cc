#include "core/fleet.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string_view>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/report.h"
#include "common/stats.h"

namespace perfgate::fleet {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string StringAt(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Result<NodeReport> FromPerfResult(const Json& obj, const std::string& source) {
  const Json* spec = obj.contains("spec") && obj["spec"].is_object() ? &obj["spec"] : nullptr;
  if (spec == nullptr || !spec->contains("report") || !(*spec)["report"].is_object()) {
    return InvalidArgument(source + ": a PerfResult without spec.report");
  }
  ASSIGN_OR_RETURN(v1alpha1::Report report, report::FromJson((*spec)["report"].dump()));
  NodeReport out;
  out.node = StringAt(*spec, "nodeName");
  out.validation = StringAt(*spec, "validation");
  out.run = StringAt(*spec, "run");
  out.worst = StringAt(*spec, "worst");
  out.source = source;
  out.report = std::move(report);
  if (out.node.empty()) out.node = out.report.identity().hostname();
  if (out.validation.empty()) out.validation = out.report.validation();
  return out;
}

Result<NodeReport> FromReport(const Json& obj, const std::string& source) {
  auto report = report::FromJson(obj.dump());
  if (!report.ok()) return InvalidArgument(source + ": " + report.status().message());
  NodeReport out;
  out.report = std::move(report).value();
  out.node = out.report.identity().hostname();
  out.validation = out.report.validation();
  out.source = source;
  return out;
}

Status AppendFile(const fs::path& path, std::vector<NodeReport>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path.string() + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  ASSIGN_OR_RETURN(std::vector<NodeReport> reports, ParseReports(text.str(), path.string()));
  for (auto& r : reports) out->push_back(std::move(r));
  return Status::Ok();
}

}  // namespace

Result<std::vector<NodeReport>> ParseReports(const std::string& text, const std::string& source) {
  const Json doc = Json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgument(source + ": not a JSON object");
  }
  const std::string kind = StringAt(doc, "kind");
  std::vector<NodeReport> out;
  if (kind == "PerfResult") {
    ASSIGN_OR_RETURN(NodeReport r, FromPerfResult(doc, source));
    out.push_back(std::move(r));
  } else if (kind == "List" || kind == "PerfResultList") {
    if (!doc.contains("items") || !doc["items"].is_array()) {
      return InvalidArgument(source + ": a " + kind + " without items");
    }
    for (std::size_t i = 0; i < doc["items"].size(); ++i) {
      const Json& item = doc["items"][i];
      const std::string where = source + " items[" + std::to_string(i) + "]";
      // The API server's lists leave out their items' kind; kubectl's put it back.
      const std::string item_kind = item.is_object() ? StringAt(item, "kind") : "-";
      if (item_kind != "PerfResult" && !item_kind.empty()) {
        return InvalidArgument(where + ": not a PerfResult");
      }
      ASSIGN_OR_RETURN(NodeReport r, FromPerfResult(item, where));
      out.push_back(std::move(r));
    }
  } else if (kind.empty() && doc.contains("tests")) {
    ASSIGN_OR_RETURN(NodeReport r, FromReport(doc, source));
    out.push_back(std::move(r));
  } else {
    return InvalidArgument(source +
                           ": neither a perfgate report, a PerfResult nor a List of PerfResults" +
                           (kind.empty() ? std::string() : " (kind " + kind + ")"));
  }
  return out;
}

Result<std::vector<NodeReport>> LoadReports(const std::vector<std::string>& paths) {
  std::vector<NodeReport> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    const fs::path path(p);
    if (fs::is_directory(path, ec)) {
      std::vector<fs::path> files;
      for (auto it = fs::recursive_directory_iterator(path, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && it->path().extension() == ".json") files.push_back(*it);
      }
      if (ec) return NotFound(p + ": " + ec.message());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) RETURN_IF_ERROR(AppendFile(f, &out));
    } else if (fs::exists(path, ec)) {
      RETURN_IF_ERROR(AppendFile(path, &out));
    } else {
      return NotFound(p + ": no such file or folder");
    }
  }
  if (out.empty()) return NotFound("no node reports found in the given paths");
  return out;
}

std::string GpuModel(const v1alpha1::Report& report) {
  for (const auto& gpu : report.identity().gpus()) {
    if (!gpu.name().empty()) return gpu.name();
  }
  return "";
}

std::vector<Figure> Figures(const std::vector<NodeReport>& reports) {
  std::vector<Figure> out;
  for (const NodeReport& r : reports) {
    const std::string model = GpuModel(r.report);
    for (const auto& t : r.report.tests()) {
      std::map<std::string, const v1alpha1::MetricResult*> metrics;
      for (const auto& m : t.metrics()) metrics[m.name()] = &m;
      std::map<std::string, bool> checked;
      Figure base;
      base.node = r.node;
      base.model = model;
      base.test = t.name();
      base.device = t.device();
      for (const auto& th : t.thresholds()) {
        Figure f = base;
        f.metric = th.threshold().metric();
        f.statistic = th.threshold().statistic().empty() ? "median" : th.threshold().statistic();
        f.op = th.threshold().op();
        f.value = th.observed();
        f.bound = th.bound();
        f.verdict = th.verdict();
        if (auto it = metrics.find(f.metric); it != metrics.end()) {
          f.unit = it->second->unit();
          f.higher_is_better = it->second->higherisbetter();
        } else {
          f.higher_is_better = f.op.find('>') != std::string::npos;
        }
        checked[f.metric] = true;
        if (std::isfinite(f.value)) out.push_back(std::move(f));
      }
      for (const auto& m : t.metrics()) {
        if (checked.count(m.name()) || m.name().find('@') != std::string::npos) continue;
        // A summary without a count (a report written by hand) with samples: their median.
        if (m.summary().n() == 0 && m.samples().empty()) continue;
        Figure f = base;
        f.metric = m.name();
        f.unit = m.unit();
        f.statistic = "median";
        f.value = m.summary().n() > 0 ? m.summary().median()
                                      : stats::Median({m.samples().begin(), m.samples().end()});
        f.higher_is_better = m.higherisbetter();
        if (std::isfinite(f.value)) out.push_back(std::move(f));
      }
    }
  }
  return out;
}

std::vector<DigestOutlier> FindDigestOutliers(const std::vector<NodeReport>& reports) {
  constexpr std::string_view kPrefix = "digest.";
  // group key (model, driver, CUDA, test, parameters, computation) -> node -> its digest
  struct Group {
    DigestOutlier like;  // model, driver, cuda, test, computation
    std::map<std::string, std::string> digests;
  };
  std::map<std::string, Group> groups;
  for (const NodeReport& r : reports) {
    const std::string model = GpuModel(r.report);
    const auto& id = r.report.identity();
    for (const auto& t : r.report.tests()) {
      if (t.type() != "consistency") continue;
      std::string params;
      for (const auto& [k, v] :
           std::map<std::string, std::string>(t.parameters().begin(), t.parameters().end())) {
        params += k + "=" + v + "\x1f";
      }
      for (const auto& [key, digest] : t.details()) {
        if (key.rfind(kPrefix, 0) != 0) continue;
        const std::string computation = key.substr(kPrefix.size());
        if (computation.find('.') != std::string::npos) continue;  // one GPU's: "X.gpu3"
        Group& g = groups[model + "\x1f" + id.driverversion() + "\x1f" + id.cudaversion() + "\x1f" +
                          t.name() + "\x1f" + params + computation];
        g.like.model = model;
        g.like.driver = id.driverversion();
        g.like.cuda = id.cudaversion();
        g.like.test = t.name();
        g.like.computation = computation;
        g.digests[r.node] = digest;
      }
    }
  }
  std::vector<DigestOutlier> out;
  for (const auto& [key, g] : groups) {
    const auto n = static_cast<int>(g.digests.size());
    if (n < 3) continue;
    std::map<std::string, int> counts;
    for (const auto& [node, digest] : g.digests) ++counts[digest];
    const auto majority =
        std::max_element(counts.begin(), counts.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    if (2 * majority->second <= n) continue;
    for (const auto& [node, digest] : g.digests) {
      if (digest == majority->first) continue;
      DigestOutlier o = g.like;
      o.node = node;
      o.digest = digest;
      o.peer_digest = majority->first;
      o.agreeing = majority->second;
      o.nodes = n;
      out.push_back(std::move(o));
    }
  }
  std::sort(out.begin(), out.end(), [](const DigestOutlier& a, const DigestOutlier& b) {
    return std::tie(a.node, a.test, a.computation) < std::tie(b.node, b.test, b.computation);
  });
  return out;
}

std::string BundleCommand(const NodeReport& r) {
  if (r.report.diagnosis().locations().empty() || r.validation.empty()) return "";
  return "kubectl perfgate bundle " + r.validation + " " + r.node;
}

std::string GroupKey(const Figure& f) {
  return f.test + "\x1f" + f.metric + "\x1f" + f.statistic + "\x1f" + f.op;
}

std::vector<Lagging> FindLagging(const std::vector<Figure>& figures,
                                 const comparison::PeerRule& rule) {
  // A figure that failed its own bound is already a failure, not a lag, and no reference for its
  // peers either: one node at half speed would stretch the interval of the others' median.
  std::map<std::string, std::vector<const Figure*>> groups;
  for (const Figure& f : figures) {
    if (f.verdict != v1alpha1::FAIL) groups[GroupKey(f) + "\x1f" + f.model].push_back(&f);
  }
  std::vector<Lagging> out;
  for (const auto& [key, members] : groups) {
    std::vector<comparison::Member> values;
    for (const Figure* f : members) values.push_back({f->node, f->value});
    for (const comparison::Lag& lag :
         comparison::LaggingPeers(values, members.front()->higher_is_better, rule)) {
      const Figure& f = *members[lag.index];
      out.push_back({f, lag.peer_median, lag.ratio, -lag.robust_z, lag.peers, lag.interval});
    }
  }
  std::sort(out.begin(), out.end(), [](const Lagging& a, const Lagging& b) {
    if (a.z != b.z) return a.z < b.z;
    return a.figure.node < b.figure.node;
  });
  return out;
}

namespace {

// The GB/s figure after `word` ("peer 389.1 GB/s"), NaN when absent.
double FigureAfter(const std::string& text, const std::string& word) {
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    if (at > 0 && text[at - 1] != ' ') continue;  // "no peer" is not "peer"
    try {
      return std::stod(text.substr(at + word.size()));
    } catch (const std::exception&) {
      return std::nan("");
    }
  }
  return std::nan("");
}

}  // namespace

std::vector<P2pMatrix> P2pMatrices(const std::vector<NodeReport>& reports) {
  std::vector<P2pMatrix> out;
  for (const NodeReport& r : reports) {
    for (const auto& t : r.report.tests()) {
      if (t.type() != "p2p") continue;
      std::map<std::pair<int, int>, double> pairs;
      int gpus = 0;
      for (const auto& [key, text] : t.details()) {
        if (key.rfind("pair ", 0) != 0) continue;
        const std::string pair = key.substr(5);
        const std::size_t arrow = pair.find("->");
        if (arrow == std::string::npos) continue;
        const int src = report::DeviceOrdinal(pair.substr(0, arrow));
        const int dst = report::DeviceOrdinal(pair.substr(arrow + 2));
        if (src < 0 || dst < 0 || src > 1023 || dst > 1023) continue;
        double gbps = FigureAfter(text, "peer ");
        if (std::isnan(gbps)) gbps = FigureAfter(text, "no peer ");
        pairs[{src, dst}] = gbps;
        gpus = std::max({gpus, src + 1, dst + 1});
      }
      if (pairs.empty()) continue;
      P2pMatrix m;
      m.node = r.node;
      m.gpus = gpus;
      m.gbps.assign(gpus, std::vector<double>(gpus, std::nan("")));
      for (const auto& [pair, gbps] : pairs) m.gbps[pair.first][pair.second] = gbps;
      out.push_back(std::move(m));
    }
  }
  return out;
}

double ParseSize(const std::string& label) {
  std::size_t digits = 0;
  while (digits < label.size() && label[digits] >= '0' && label[digits] <= '9') ++digits;
  if (digits == 0 || digits > 15) return -1;
  const double n = std::stod(label.substr(0, digits));
  const std::string unit = label.substr(digits);
  if (unit == "B") return n;
  if (unit == "KiB") return n * 1024;
  if (unit == "MiB") return n * 1024 * 1024;
  if (unit == "GiB") return n * 1024 * 1024 * 1024;
  return -1;
}

std::vector<NcclCurve> NcclCurves(const std::vector<NodeReport>& reports) {
  static const std::string kPrefix = "busBandwidthGBps@";
  std::vector<NcclCurve> out;
  for (const NodeReport& r : reports) {
    for (const auto& t : r.report.tests()) {
      NcclCurve curve;
      curve.node = r.node;
      curve.test = t.name();
      for (const auto& m : t.metrics()) {
        if (m.name().rfind(kPrefix, 0) != 0 || m.summary().n() == 0) continue;
        const double bytes = ParseSize(m.name().substr(kPrefix.size()));
        if (bytes > 0 && std::isfinite(m.summary().median())) {
          curve.points.emplace_back(bytes, m.summary().median());
        }
      }
      if (curve.points.empty()) continue;
      std::sort(curve.points.begin(), curve.points.end());
      out.push_back(std::move(curve));
    }
  }
  return out;
}

}  // namespace perfgate::fleet
