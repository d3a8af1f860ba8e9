#include "cli/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/compare.h"
#include "common/report.h"
#include "common/stats.h"
#include "common/strings.h"
#include "common/time.h"

namespace perfgate::compare {
namespace {

using Json = nlohmann::json;

// Keys that name a result or a single device rather than a configuration: never an
// explanation.
bool LabelKey(const std::string& key) {
  static const std::set<std::string> kLabels = {
      "side",     "cluster",   "validation",   "run",           "node",     "hostname",
      "gpu.uuid", "gpu.index", "gpu.pciBusId", "workerVersion", "gpusCount"};
  return kLabels.count(key) > 0;
}

std::string Join(const std::set<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ",") + v;
  return out;
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// A figure for people: 4 significant digits, no exponent for everyday sizes.
std::string Number(double v) {
  char buf[64];
  if (v != 0 && (std::fabs(v) >= 1e6 || std::fabs(v) < 1e-3)) {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.4g", v);
  }
  return buf;
}

std::string PValue(double p) {
  char buf[32];
  if (p < 1e-4) {
    std::snprintf(buf, sizeof buf, "%.1e", p);
  } else {
    std::snprintf(buf, sizeof buf, "%.4f", p);
  }
  return buf;
}

// One node's figure in one row: the median over its devices and results.
struct NodeValue {
  std::vector<double> values;
  std::shared_ptr<const Config> config;
};

using RowKey = std::tuple<std::string, std::string, std::string, std::string>;

struct RowFigures {
  std::string unit;
  bool higher_is_better = true;
  std::map<std::string, std::map<std::string, NodeValue>> by_group;  // group -> node -> value
};

enum class Role { kReference, kGroup, kOther };

// A node's figure on the log scale; nodes of other groups help to measure a key's effect
// within matched groups.
struct Observation {
  double log_value = 0;
  Role role = Role::kOther;
  const Config* config = nullptr;
};

std::string ValueOf(const Config& c, const std::string& key) {
  auto it = c.find(key);
  return it == c.end() ? std::string() : it->second;
}

// The effect (log) of key `k` within matched groups, observations that agree on every other
// differing key: the precision-weighted mean of each group's treated-minus-untreated gap
// (t[i]: observation i carries a value of k only the group has); the nodes matched go into
// e->matched_nodes. False when no matched group has both.
bool MatchedEffect(const std::vector<Observation>& obs, const std::vector<std::string>& differing,
                   const std::string& k, const std::vector<bool>& t, Explanation* e,
                   double* effect) {
  std::map<std::string, std::vector<std::size_t>> strata;
  for (std::size_t i = 0; i < obs.size(); ++i) {
    std::string stratum;
    for (const auto& other : differing) {
      if (other != k) stratum += ValueOf(*obs[i].config, other) + '\x1f';
    }
    strata[stratum].push_back(i);
  }
  double weighted = 0, weights = 0;
  for (const auto& [name, members] : strata) {
    double st = 0, su = 0;
    int nt = 0, nu = 0;
    for (std::size_t i : members) {
      if (t[i]) {
        st += obs[i].log_value;
        ++nt;
      } else {
        su += obs[i].log_value;
        ++nu;
      }
    }
    if (nt == 0 || nu == 0) continue;
    const double w = 1.0 / (1.0 / nt + 1.0 / nu);  // the precision of the difference of means
    weighted += w * (st / nt - su / nu);
    weights += w;
    e->matched_nodes += nt + nu;
  }
  if (weights <= 0) return false;
  *effect = weighted / weights;
  return true;
}

// The keys whose values differ between the reference and the group, with the explanation of
// each (docs/compare.md, "Which keys explain a gap").
std::vector<Explanation> Explain(const std::vector<Observation>& obs, const std::string& by) {
  std::set<std::string> keys;
  for (const auto& o : obs) {
    for (const auto& [k, v] : *o.config) {
      if (!LabelKey(k) && k != by) keys.insert(k);
    }
  }
  double sum_g = 0, sum_r = 0;
  int n_g = 0, n_r = 0;
  for (const auto& o : obs) {
    if (o.role == Role::kOther) continue;
    (o.role == Role::kGroup ? sum_g : sum_r) += o.log_value;
    ++(o.role == Role::kGroup ? n_g : n_r);
  }
  if (n_g == 0 || n_r == 0) return {};
  const double gap = sum_g / n_g - sum_r / n_r;
  std::vector<std::string> differing;
  std::map<std::string, std::set<std::string>> ref_values, group_values;
  for (const auto& k : keys) {
    for (const auto& o : obs) {
      if (o.role != Role::kOther) {
        (o.role == Role::kGroup ? group_values : ref_values)[k].insert(ValueOf(*o.config, k));
      }
    }
    if (ref_values[k] != group_values[k]) differing.push_back(k);
  }
  // treated[k][i]: observation i carries a value of k that only the group has.
  std::map<std::string, std::vector<bool>> treated;
  for (const auto& k : differing) {
    auto& t = treated[k];
    for (const auto& o : obs) t.push_back(ref_values[k].count(ValueOf(*o.config, k)) == 0);
  }
  std::vector<Explanation> out;
  for (const auto& k : differing) {
    Explanation e;
    e.key = k;
    e.reference_values = Join(ref_values[k]);
    e.group_values = Join(group_values[k]);
    const auto& t = treated[k];
    int treated_in_group = 0;
    for (std::size_t i = 0; i < obs.size(); ++i) {
      treated_in_group += obs[i].role == Role::kGroup && t[i];
    }
    double effect = 0;
    if (MatchedEffect(obs, differing, k, t, &e, &effect) && treated_in_group > 0) {
      e.separable = true;
      e.effect = std::exp(effect);
      const double explained = effect * treated_in_group / n_g;
      e.share = gap != 0 ? explained / gap : 0;
    } else {
      std::string with;
      for (const auto& other : differing) {
        if (other != k && treated[other] == t) with += (with.empty() ? "" : ", ") + other;
      }
      e.confounded_with = with.empty() ? "the other differing keys" : with;
    }
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const Explanation& a, const Explanation& b) {
    if (a.separable != b.separable) return a.separable;
    if (std::fabs(a.share) != std::fabs(b.share)) return std::fabs(a.share) > std::fabs(b.share);
    return a.key < b.key;
  });
  return out;
}

std::set<std::string> NodesOf(const std::vector<Figure>& figures, const std::string& by,
                              const std::string& group) {
  std::set<std::string> out;
  for (const auto& f : figures) {
    if (ValueOf(*f.config, by) == group) out.insert(f.node);
  }
  return out;
}

}  // namespace

bool KnownStatistic(const std::string& name) {
  return std::find(std::begin(store::kBaselineStatistics), std::end(store::kBaselineStatistics),
                   name) != std::end(store::kBaselineStatistics);
}

namespace {

// Identity rows with the per-GPU ones folded: "gpu0.vbios", "gpu1.vbios" -> "gpu.vbios" with
// the distinct values joined.
Config Fold(const std::map<std::string, std::string>& identity) {
  Config out;
  std::map<std::string, std::set<std::string>> per_gpu;
  for (const auto& [key, value] : identity) {
    // "gpu12.vbios" -> "gpu.vbios"
    std::size_t digits = 3;
    while (digits < key.size() && key.rfind("gpu", 0) == 0 && key[digits] >= '0' &&
           key[digits] <= '9') {
      ++digits;
    }
    if (digits > 3 && digits < key.size() && key[digits] == '.') {
      per_gpu["gpu" + key.substr(digits)].insert(value);
    } else {
      out[key] = value;
    }
  }
  for (const auto& [key, values] : per_gpu) out[key] = Join(values);
  return out;
}

}  // namespace

Config ConfigOf(const v1alpha1::Report& report) {
  Config out = Fold(store::IdentityRows(report));
  out["validation"] = report.validation();
  if (!report.profile().empty()) out["profile"] = report.profile();
  if (!report.profileversion().empty()) out["profileVersion"] = report.profileversion();
  return out;
}

std::vector<Figure> FromReports(const std::vector<fleet::NodeReport>& reports,
                                const std::vector<std::string>& statistics, const Config& extra) {
  std::vector<Figure> out;
  for (const auto& r : reports) {
    Config config = ConfigOf(r.report);
    config["node"] = r.node;
    if (!r.validation.empty()) config["validation"] = r.validation;
    if (!r.run.empty()) config["run"] = r.run;
    for (const auto& [k, v] : extra) config[k] = v;
    const auto shared = std::make_shared<const Config>(std::move(config));
    const std::string model = fleet::GpuModel(r.report);
    for (const auto& t : r.report.tests()) {
      for (const auto& m : t.metrics()) {
        if (m.summary().n() == 0) continue;
        for (const auto& statistic : statistics) {
          Figure f;
          f.node = r.node;
          f.model = model;
          f.test = t.name();
          f.metric = m.name();
          f.unit = m.unit();
          f.statistic = statistic;
          f.higher_is_better = m.higherisbetter();
          f.value = report::StatisticValue(m.summary(), statistic);
          f.config = shared;
          if (std::isfinite(f.value)) out.push_back(std::move(f));
        }
      }
    }
  }
  return out;
}

Result<Selector> ParseSelector(const std::string& text, int64_t now_ms) {
  Selector out;
  out.text = text;
  auto time_of = [&](const std::string& key, const std::string& v) -> Result<int64_t> {
    if (auto t = ParseRfc3339(v)) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count();
    }
    // A duration back from now: 36h, 7d.
    std::size_t used = 0;
    double n = -1;
    try {
      n = std::stod(v, &used);
    } catch (const std::exception&) {
      n = -1;
    }
    const std::string unit = v.substr(std::min(used, v.size()));
    const double hours = unit == "h" ? 1 : unit == "d" ? 24 : -1;
    if (n < 0 || hours < 0) {
      return InvalidArgument("selector " + key + "=" + v +
                             ": not an RFC 3339 time or a duration such as 24h or 7d");
    }
    return now_ms - static_cast<int64_t>(n * hours * 3600 * 1000);
  };
  for (const std::string& part : Split(text, ',')) {
    if (part.empty()) continue;
    const auto eq = part.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("selector \"" + text + "\": \"" + part + "\" is not key=value");
    }
    const std::string key(Trim(part.substr(0, eq)));
    const std::string value(Trim(part.substr(eq + 1)));
    if (key == "cluster") {
      out.query.cluster = value;
    } else if (key == "validation") {
      out.query.validation = value;
    } else if (key == "run") {
      out.query.run = value;
    } else if (key == "node") {
      out.query.nodes.push_back(value);
    } else if (key == "gpu" || key == "model") {
      out.query.gpu_model = value;
    } else if (key == "since") {
      ASSIGN_OR_RETURN(out.query.since_ms, time_of(key, value));
    } else if (key == "until") {
      ASSIGN_OR_RETURN(out.query.until_ms, time_of(key, value));
    } else if (key == "driver" || key == "cuda" || key == "nccl") {
      out.identity[key + "Version"] = value;
    } else {
      out.identity[key] = value;
    }
  }
  return out;
}

Result<std::vector<Figure>> FromStore(store::Store& store, const Selector& selector,
                                      const std::vector<std::string>& statistics,
                                      const Config& extra) {
  ASSIGN_OR_RETURN(auto results, store.Results(selector.query));
  std::vector<Figure> out;
  int matched = 0;
  for (const auto& r : results) {
    Config config = Fold(r.identity);
    bool keep = true;
    for (const auto& [key, value] : selector.identity) {
      if (ValueOf(config, key) != value) keep = false;
    }
    if (!keep) continue;
    ++matched;
    config["cluster"] = r.key.cluster;
    config["validation"] = r.key.validation;
    config["run"] = r.key.run;
    config["node"] = r.key.node;
    config["profile"] = r.profile;
    config["profileVersion"] = r.profile_version;
    for (const auto& [k, v] : extra) config[k] = v;
    const auto shared = std::make_shared<const Config>(std::move(config));
    store::MetricQuery mq;
    mq.cluster = r.key.cluster;
    mq.validation = r.key.validation;
    mq.run = r.key.run;
    mq.node = r.key.node;
    mq.with_samples = false;
    ASSIGN_OR_RETURN(auto metrics, store.Metrics(mq));
    for (const auto& m : metrics) {
      if (m.summary.n() == 0) continue;
      for (const auto& statistic : statistics) {
        Figure f;
        f.node = r.key.node;
        f.model = m.gpu_model;
        f.test = m.test;
        f.metric = m.metric;
        f.unit = m.unit;
        f.statistic = statistic;
        f.higher_is_better = m.higher_is_better;
        f.value = report::StatisticValue(m.summary, statistic);
        f.config = shared;
        if (std::isfinite(f.value)) out.push_back(std::move(f));
      }
    }
  }
  if (matched == 0) {
    return NotFound("store " + store.Describe() + ": no results match \"" + selector.text + "\"");
  }
  return out;
}

const char* DecisionName(Decision d) {
  switch (d) {
    case Decision::kRegressed:
      return "regressed";
    case Decision::kImproved:
      return "improved";
    case Decision::kEquivalent:
      return "equivalent";
    case Decision::kInconclusive:
      break;
  }
  return "inconclusive";
}

int Comparison::Count(Decision d) const {
  return static_cast<int>(
      std::count_if(rows.begin(), rows.end(), [d](const Row& r) { return r.decision == d; }));
}

std::vector<std::string> GroupsBy(const std::vector<Figure>& figures, const std::string& by) {
  std::set<std::string> out;
  for (const auto& f : figures) {
    if (auto v = ValueOf(*f.config, by); !v.empty()) out.insert(v);
  }
  return {out.begin(), out.end()};
}

namespace {

// The figures of `groups` (by `key`), by row (model, test, metric, statistic), group and node.
std::map<RowKey, RowFigures> RowsOf(const std::vector<Figure>& figures,
                                    const std::vector<std::string>& groups,
                                    const std::string& key) {
  std::map<RowKey, RowFigures> rows;
  for (const auto& f : figures) {
    const std::string g = ValueOf(*f.config, key);
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) continue;
    auto& row = rows[{f.model, f.test, f.metric, f.statistic}];
    row.unit = f.unit;
    row.higher_is_better = f.higher_is_better;
    auto& nv = row.by_group[g][f.node];
    nv.values.push_back(f.value);
    if (!nv.config) nv.config = f.config;
  }
  return rows;
}

// Whether each group is compared with the reference (groups[0]) paired: when the same nodes
// were measured in both, unless options.pairing says; why, into out->pairing_reason.
std::map<std::string, bool> DecidePairing(const std::vector<Figure>& figures,
                                          const std::string& key, Comparison* out) {
  const std::vector<std::string>& groups = out->groups;
  const auto ref_nodes = NodesOf(figures, key, groups[0]);
  std::map<std::string, bool> paired;
  std::string reasons;
  bool all_paired = true;
  for (std::size_t gi = 1; gi < groups.size(); ++gi) {
    const auto nodes = NodesOf(figures, key, groups[gi]);
    std::vector<std::string> common;
    std::set_intersection(ref_nodes.begin(), ref_nodes.end(), nodes.begin(), nodes.end(),
                          std::back_inserter(common));
    bool p = nodes == ref_nodes && nodes.size() >= 2;
    std::string why = p ? "the same " + std::to_string(nodes.size()) + " nodes in " + groups[0] +
                              " and " + groups[gi]
                        : std::to_string(common.size()) + " of " +
                              std::to_string(ref_nodes.size()) + " nodes of " + groups[0] +
                              " also in " + groups[gi] + " (" + std::to_string(nodes.size()) +
                              " nodes)";
    if (out->options.pairing == Pairing::kPaired) {
      p = true;
      why += "; --paired: the " + std::to_string(common.size()) + " nodes in both";
    } else if (out->options.pairing == Pairing::kUnpaired) {
      p = false;
      why += "; --unpaired";
    }
    paired[groups[gi]] = p;
    all_paired = all_paired && p;
    reasons += (reasons.empty() ? "" : "; ") + std::string(p ? "paired: " : "unpaired: ") + why;
  }
  out->paired = all_paired;
  out->pairing_reason = reasons;
  return paired;
}

// One row: group `gi` against the reference, each node by the median of its figures; the ratio
// and its interval, the test's p and the equivalence p (decided later, over every row), and
// what the groups differ in.
Row CompareRow(const RowKey& rk, const RowFigures& rf, const Comparison& c, std::size_t gi,
               bool paired) {
  const std::vector<std::string>& groups = c.groups;
  Row row;
  std::tie(row.model, row.test, row.metric, row.statistic) = rk;
  row.unit = rf.unit;
  row.higher_is_better = rf.higher_is_better;
  row.reference = groups[0];
  row.group = groups[gi];
  row.paired = paired;
  std::map<std::string, double> a, b;
  for (const auto& [node, nv] : rf.by_group.at(groups[0])) a[node] = stats::Median(nv.values);
  for (const auto& [node, nv] : rf.by_group.at(groups[gi])) b[node] = stats::Median(nv.values);
  row.n_reference = static_cast<int>(a.size());
  row.n_group = static_cast<int>(b.size());
  std::vector<double> av, bv;
  for (const auto& [n, v] : a) av.push_back(v);
  for (const auto& [n, v] : b) bv.push_back(v);
  row.median_reference = stats::Median(av);
  row.median_group = stats::Median(bv);
  const bool all_same = std::all_of(av.begin(), av.end(), [&](double v) { return v == av[0]; }) &&
                        std::all_of(bv.begin(), bv.end(), [&](double v) { return v == av[0]; });
  if (all_same) {
    row.decision = Decision::kEquivalent;
    row.note = "identical figures";
    row.interval_confidence = 1;
    row.p_equivalence = 0;
    return row;
  }
  std::vector<Observation> obs;
  std::vector<double> la, lb, d;
  for (const auto& [node, v] : a) {
    if (v > 0) la.push_back(std::log(v));
  }
  for (const auto& [node, v] : b) {
    if (v <= 0) continue;
    lb.push_back(std::log(v));
    if (auto at = a.find(node); at != a.end() && at->second > 0) {
      d.push_back(std::log(v) - std::log(at->second));
    }
  }
  for (const auto& [g, nodes] : rf.by_group) {
    const Role role = g == groups[0]    ? Role::kReference
                      : g == groups[gi] ? Role::kGroup
                                        : Role::kOther;
    for (const auto& [node, nv] : nodes) {
      const double v = stats::Median(nv.values);
      if (v > 0) obs.push_back({std::log(v), role, nv.config.get()});
    }
  }
  if (la.empty() || lb.empty() || (row.paired && d.empty())) {
    row.note = row.paired ? "no node with positive figures in both" : "no positive figures";
    return row;
  }
  // The ratio group / reference as every comparison gives it (common/compare.h).
  stats::Shift ratio;
  stats::RankTest test;
  if (row.paired) {
    row.n_pairs = static_cast<int>(d.size());
    ratio = comparison::PairedRatio(d, c.options.confidence);
    test = stats::WilcoxonSignedRankTest(d);
    row.p_equivalence = stats::PairedEquivalencePValue(d, c.options.margin);
    row.method = "wilcoxon-signed-rank " + test.method;
  } else {
    ratio = comparison::Ratio(bv, av, c.options.confidence);
    test = stats::MannWhitneyTest(lb, la);
    row.p_equivalence = stats::EquivalencePValue(lb, la, c.options.margin);
    row.method = "mann-whitney " + test.method;
  }
  row.ratio = ratio.estimate;
  row.ratio_low = ratio.interval.low;
  row.ratio_high = ratio.interval.high;
  row.interval_confidence = ratio.interval.confidence;
  row.p = test.p_two_sided;
  row.explanations = Explain(obs, c.by);
  return row;
}

// Sizes in a sweep ("busBandwidthGBps@128MiB") in order of size, not of text.
void SortRows(const std::vector<std::string>& groups, std::vector<Row>* rows) {
  auto order = [&](const Row& r) {
    const auto at = r.metric.find('@');
    const double size = at == std::string::npos ? -1 : fleet::ParseSize(r.metric.substr(at + 1));
    const auto g = std::find(groups.begin(), groups.end(), r.group) - groups.begin();
    return std::make_tuple(r.model, r.test, r.metric.substr(0, at), size, r.metric, r.statistic, g);
  };
  std::stable_sort(rows->begin(), rows->end(),
                   [&](const Row& a, const Row& b) { return order(a) < order(b); });
}

// Each tested row's decision, its p adjusted over every tested row (Holm), and a note where
// the sizes cannot reach the corrected level at all.
void DecideRows(const Options& options, std::vector<Row>* rows) {
  std::vector<double> p;
  std::vector<std::size_t> tested;
  for (std::size_t i = 0; i < rows->size(); ++i) {
    if (!(*rows)[i].method.empty()) {
      p.push_back((*rows)[i].p);
      tested.push_back(i);
    }
  }
  const auto adjusted = stats::HolmAdjust(p);
  for (std::size_t j = 0; j < tested.size(); ++j) {
    Row& row = (*rows)[tested[j]];
    row.p_adjusted = adjusted[j];
    const bool better = row.higher_is_better ? row.ratio > 1 : row.ratio < 1;
    if (row.p_equivalence < options.alpha) {
      row.decision = Decision::kEquivalent;
    } else if (row.p_adjusted < options.alpha) {
      row.decision = better ? Decision::kImproved : Decision::kRegressed;
    } else {
      row.decision = Decision::kInconclusive;
    }
    if (row.decision == Decision::kEquivalent || row.decision == Decision::kInconclusive) {
      row.explanations.clear();
    }
    // The smallest two-sided p the sizes allow (every rank on one side): 2 / 2^n paired,
    // 2 / C(m + n, m) unpaired. Holm's first step multiplies it by the number of rows.
    double smallest = 1;
    if (row.paired) {
      smallest = std::min(1.0, std::ldexp(2.0, -row.n_pairs));
    } else {
      const int m = row.n_reference, n = row.n_group;
      smallest = std::min(1.0, 2 * std::exp(std::lgamma(m + 1.0) + std::lgamma(n + 1.0) -
                                            std::lgamma(m + n + 1.0)));
    }
    if (row.decision == Decision::kInconclusive &&
        smallest * static_cast<double>(tested.size()) >= options.alpha) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "%d %s cannot reach the corrected level: the smallest p is %.2g, times %zu "
                    "rows",
                    row.paired ? row.n_pairs : row.n_reference + row.n_group,
                    row.paired ? "pairs" : "nodes", smallest, tested.size());
      row.note = buf;
    }
  }
}

}  // namespace

Result<Comparison> Compare(const std::vector<Figure>& figures,
                           const std::vector<std::string>& groups, const std::string& by,
                           const Options& options) {
  if (groups.size() < 2) return InvalidArgument("a comparison needs two groups or more");
  if (!(options.margin > 0) || !(options.alpha > 0 && options.alpha < 1)) {
    return InvalidArgument("the margin must be above 0 and alpha in (0, 1)");
  }
  const std::string key = by.empty() ? "side" : by;
  Comparison out;
  out.groups = groups;
  out.by = by;
  out.options = options;
  const std::map<RowKey, RowFigures> rows = RowsOf(figures, groups, key);
  std::map<std::string, bool> paired = DecidePairing(figures, key, &out);
  for (const auto& [rk, rf] : rows) {
    if (!rf.by_group.contains(groups[0])) continue;
    for (std::size_t gi = 1; gi < groups.size(); ++gi) {
      if (!rf.by_group.contains(groups[gi])) continue;
      out.rows.push_back(CompareRow(rk, rf, out, gi, paired[groups[gi]]));
    }
  }
  SortRows(groups, &out.rows);
  if (out.rows.empty()) {
    return FailedPrecondition("nothing to compare: no GPU model, test and metric has figures in " +
                              groups[0] + " and in another group");
  }
  DecideRows(options, &out.rows);
  return out;
}

namespace {

// A left-aligned column table: each column as wide as its widest cell, two spaces between.
std::string Columns(const std::vector<std::vector<std::string>>& cells) {
  std::vector<std::size_t> width;
  for (const auto& line : cells) {
    if (width.size() < line.size()) width.resize(line.size(), 0);
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  }
  std::string out;
  for (const auto& line : cells) {
    std::string text;
    for (std::size_t i = 0; i < line.size(); ++i) {
      text += line[i];
      if (i + 1 < line.size()) text += std::string(width[i] - line[i].size() + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  return out;
}

std::string RatioText(const Row& r) {
  if (r.method.empty()) return Fixed(r.ratio, 3);
  return Fixed(r.ratio, 3) + " [" + Fixed(r.ratio_low, 3) + ", " + Fixed(r.ratio_high, 3) + "]";
}

std::string Percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", f * 100);
  return buf;
}

std::string ExplanationText(const Explanation& e) {
  std::string text = e.key + " (" + e.reference_values + " -> " + e.group_values + "): ";
  if (!e.separable) return text + "cannot be separated from " + e.confounded_with;
  char buf[160];
  std::snprintf(
      buf, sizeof buf,
      "explains %.0f%% of the gap (%s between %d node results that match on every other key)",
      e.share * 100, Percent(e.effect - 1).c_str(), e.matched_nodes);
  return text + buf;
}

std::string Header(const Comparison& c) {
  std::string out;
  char buf[256];
  std::snprintf(
      buf, sizeof buf, "margin %.3g%%, Holm-corrected rank tests at %.3g%% over %zu rows; %s\n",
      c.options.margin * 100, c.options.alpha * 100, c.rows.size(), c.pairing_reason.c_str());
  out += buf;
  return out;
}

std::string Footer(const Comparison& c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%d regressed, %d improved, %d equivalent, %d inconclusive\n",
                c.Count(Decision::kRegressed), c.Count(Decision::kImproved),
                c.Count(Decision::kEquivalent), c.Count(Decision::kInconclusive));
  return buf;
}

std::string RowName(const Row& r) {
  return r.test + " " + r.metric + (r.statistic == "median" ? "" : " " + r.statistic);
}

}  // namespace

std::string FormatTable(const Comparison& c) {
  std::string out = Header(c);
  std::vector<std::vector<std::string>> cells;
  if (c.groups.size() > 2) {
    // The matrix: one line per GPU model, test, metric and statistic; the reference's median,
    // then each group's median with its ratio to the reference and the verdict.
    std::vector<std::string> head = {"GPU MODEL", "TEST", "METRIC", "STAT"};
    for (const auto& g : c.groups) head.push_back(g == c.groups[0] ? g + " (reference)" : g);
    cells.push_back(head);
    for (std::size_t i = 0; i < c.rows.size();) {
      const Row& first = c.rows[i];
      std::vector<std::string> line = {first.model.empty() ? "-" : first.model, first.test,
                                       first.metric, first.statistic,
                                       Number(first.median_reference) + " " + first.unit};
      line.resize(4 + c.groups.size(), "-");
      for (; i < c.rows.size() && c.rows[i].model == first.model && c.rows[i].test == first.test &&
             c.rows[i].metric == first.metric && c.rows[i].statistic == first.statistic;
           ++i) {
        const Row& r = c.rows[i];
        const auto g = std::find(c.groups.begin(), c.groups.end(), r.group) - c.groups.begin();
        line[4 + g] =
            Number(r.median_group) + " x" + Fixed(r.ratio, 3) + " " + DecisionName(r.decision);
      }
      cells.push_back(std::move(line));
    }
    out += Columns(cells);
  } else {
    const std::string ci = " [" + Fixed(c.options.confidence * 100, 0) + "% CI]";
    cells.push_back({"GPU MODEL", "TEST", "METRIC", "STAT", "N", "MEDIAN " + c.groups[0],
                     "MEDIAN " + c.groups[1], c.groups[1] + "/" + c.groups[0] + ci, "P(HOLM)",
                     "VERDICT"});
    for (const auto& r : c.rows) {
      cells.push_back({r.model.empty() ? "-" : r.model, r.test, r.metric, r.statistic,
                       std::to_string(r.n_reference) + "/" + std::to_string(r.n_group),
                       Number(r.median_reference) + " " + r.unit,
                       Number(r.median_group) + " " + r.unit, RatioText(r),
                       r.method.empty() ? "-" : PValue(r.p_adjusted), DecisionName(r.decision)});
    }
    out += Columns(cells);
  }
  std::string notes;
  for (const auto& r : c.rows) {
    if (!r.note.empty() && !r.method.empty()) notes += "  " + RowName(r) + ": " + r.note + "\n";
  }
  if (!notes.empty()) out += "\nNotes:\n" + notes;
  bool any = false;
  for (const auto& r : c.rows) {
    if (r.explanations.empty()) continue;
    if (!any) out += "\nKeys that differ, by how much of the gap each explains:\n";
    any = true;
    out += "  " + RowName(r) + " (" + r.group + " vs " + r.reference + ", " + Percent(r.ratio - 1) +
           "):\n";
    for (const auto& e : r.explanations) out += "    " + ExplanationText(e) + "\n";
  }
  out += "\n" + Footer(c);
  return out;
}

std::string FormatMarkdown(const Comparison& c) {
  std::string out = "**perfgate compare** " + c.groups[0];
  for (std::size_t i = 1; i < c.groups.size(); ++i) out += " vs " + c.groups[i];
  out += ": " + Footer(c) + "\n" + Header(c) + "\n";
  out += "| GPU model | test | metric | stat | group | n | median " + c.groups[0] +
         " | median | ratio [" + Fixed(c.options.confidence * 100, 0) +
         "% CI] | p (Holm) | verdict |\n";
  out += "|---|---|---|---|---|---|---|---|---|---|---|\n";
  auto cell = [](const std::string& s) {
    std::string e;
    for (char ch : s) e += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return e;
  };
  for (const auto& r : c.rows) {
    const std::string verdict =
        r.decision == Decision::kRegressed ? "**regressed**" : DecisionName(r.decision);
    out += "| " + cell(r.model) + " | " + cell(r.test) + " | " + cell(r.metric) + " | " +
           r.statistic + " | " + cell(r.group) + " | " + std::to_string(r.n_reference) + "/" +
           std::to_string(r.n_group) + " | " + Number(r.median_reference) + " " + r.unit + " | " +
           Number(r.median_group) + " " + r.unit + " | " + RatioText(r) + " | " +
           (r.method.empty() ? "-" : PValue(r.p_adjusted)) + " | " + verdict + " |\n";
  }
  for (const auto& r : c.rows) {
    if (r.explanations.empty()) continue;
    out += "\n**" + cell(RowName(r)) + "** (" + r.group + " vs " + r.reference + ", " +
           Percent(r.ratio - 1) + "):\n\n";
    for (const auto& e : r.explanations) out += "- " + cell(ExplanationText(e)) + "\n";
  }
  return out;
}

std::string FormatJson(const Comparison& c) {
  Json rows = Json::array();
  for (const auto& r : c.rows) {
    Json ex = Json::array();
    for (const auto& e : r.explanations) {
      Json j = {{"key", e.key},
                {"referenceValues", e.reference_values},
                {"groupValues", e.group_values},
                {"separable", e.separable},
                {"matchedNodes", e.matched_nodes}};
      if (e.separable) {
        j["effectRatio"] = e.effect;
        j["shareOfGap"] = e.share;
      } else {
        j["confoundedWith"] = e.confounded_with;
      }
      ex.push_back(std::move(j));
    }
    Json row = {{"gpuModel", r.model},
                {"test", r.test},
                {"metric", r.metric},
                {"unit", r.unit},
                {"statistic", r.statistic},
                {"higherIsBetter", r.higher_is_better},
                {"reference", r.reference},
                {"group", r.group},
                {"nodesReference", r.n_reference},
                {"nodesGroup", r.n_group},
                {"pairs", r.n_pairs},
                {"medianReference", r.median_reference},
                {"medianGroup", r.median_group},
                {"ratio", r.ratio},
                {"ratioLow", r.ratio_low},
                {"ratioHigh", r.ratio_high},
                {"intervalConfidence", r.interval_confidence},
                {"paired", r.paired},
                {"method", r.method},
                {"p", r.p},
                {"pHolm", r.p_adjusted},
                {"pEquivalence", r.p_equivalence},
                {"verdict", DecisionName(r.decision)},
                {"explanations", std::move(ex)}};
    if (!r.note.empty()) row["note"] = r.note;
    rows.push_back(std::move(row));
  }
  Json out = {{"groups", c.groups},
              {"by", c.by},
              {"paired", c.paired},
              {"pairing", c.pairing_reason},
              {"margin", c.options.margin},
              {"alpha", c.options.alpha},
              {"confidence", c.options.confidence},
              {"correction", "holm"},
              {"counts",
               {{"regressed", c.Count(Decision::kRegressed)},
                {"improved", c.Count(Decision::kImproved)},
                {"equivalent", c.Count(Decision::kEquivalent)},
                {"inconclusive", c.Count(Decision::kInconclusive)}}},
              {"rows", std::move(rows)}};
  return out.dump(2) + "\n";
}

namespace {

// The export's fixed columns, in order; config keys follow.
const std::vector<std::string> kExportColumns = {"node",      "model", "test", "metric",
                                                 "statistic", "value", "unit", "higherIsBetter"};

bool ExportedKey(const std::string& key) { return key != "node" && key != "side"; }

std::string FullPrecision(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// RFC 4180: a field with a comma, a quote or a line break is quoted, its quotes doubled.
std::string CsvField(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// The records of a CSV text, each with the line it starts on. A quoted field may span lines.
Result<std::vector<std::pair<int, std::vector<std::string>>>> CsvRecords(
    const std::string& text, const std::string& source) {
  std::vector<std::pair<int, std::vector<std::string>>> out;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false, any = false;
  int line = 1, start = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"' && field.empty()) {
      quoted = any = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        record.push_back(std::move(field));
        out.emplace_back(start, std::move(record));
      }
      record.clear();
      field.clear();
      any = false;
      start = ++line;
    } else {
      field += c;
      any = true;
    }
  }
  if (quoted) return InvalidArgument(source + ":" + std::to_string(start) + ": unclosed quote");
  if (any || !field.empty()) {
    record.push_back(std::move(field));
    out.emplace_back(start, std::move(record));
  }
  return out;
}

// An export's rows as column -> text, with the line each came from.
using ExportRows = std::vector<std::pair<int, std::map<std::string, std::string>>>;

// The rows of a CSV export: its header must have every column of kExportColumns.
Result<ExportRows> CsvRows(const std::string& text, const std::string& source) {
  ExportRows rows;
  ASSIGN_OR_RETURN(auto records, CsvRecords(text, source));
  if (records.empty()) return InvalidArgument(source + ": an empty CSV export");
  const auto& header = records.front().second;
  for (const auto& c : kExportColumns) {
    if (std::find(header.begin(), header.end(), c) == header.end()) {
      return InvalidArgument(source + ": not a perfgate export (no column " + c + ")");
    }
  }
  for (std::size_t r = 1; r < records.size(); ++r) {
    const auto& [line, fields] = records[r];
    if (fields.size() != header.size()) {
      return InvalidArgument(source + ":" + std::to_string(line) + ": " +
                             std::to_string(fields.size()) + " fields, the header has " +
                             std::to_string(header.size()));
    }
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < fields.size(); ++i) row[header[i]] = fields[i];
    rows.emplace_back(line, std::move(row));
  }
  return rows;
}

// The rows of a JSON-lines export: one object per line of strings, numbers and bools.
Result<ExportRows> JsonLinesRows(const std::string& text, const std::string& source) {
  ExportRows rows;
  int line = 0;
  for (const auto& l : Split(text, '\n')) {
    ++line;
    if (Trim(l).empty()) continue;
    const Json j = Json::parse(l, nullptr, false);
    const std::string where = source + ":" + std::to_string(line);
    if (j.is_discarded() || !j.is_object()) return InvalidArgument(where + ": not a JSON object");
    std::map<std::string, std::string> row;
    for (const auto& [k, v] : j.items()) {
      if (v.is_string()) {
        row[k] = v.get<std::string>();
      } else if (v.is_boolean()) {
        row[k] = v.get<bool>() ? "true" : "false";
      } else if (v.is_number()) {
        row[k] = FullPrecision(v.get<double>());
      } else {
        return InvalidArgument(where + ": " + k + " is neither a string, a number nor a bool");
      }
    }
    rows.emplace_back(line, std::move(row));
  }
  return rows;
}

}  // namespace

std::optional<ExportFormat> ExportFormatOf(const std::string& path) {
  auto ends = [&](const std::string& suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends(".csv")) return ExportFormat::kCsv;
  if (ends(".jsonl")) return ExportFormat::kJsonLines;
  return std::nullopt;
}

Result<std::vector<Figure>> FromExport(const std::string& path,
                                       const std::vector<std::string>& statistics,
                                       const Config& extra) {
  const auto format = ExportFormatOf(path);
  if (!format) return InvalidArgument(path + ": not a .csv or .jsonl export");
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return ParseExport(text.str(), *format, path, statistics, extra);
}

std::string FormatExport(const std::vector<Figure>& figures, ExportFormat format) {
  std::set<std::string> keys;
  for (const auto& f : figures) {
    if (!f.config) continue;
    for (const auto& [k, v] : *f.config) {
      if (ExportedKey(k)) keys.insert(k);
    }
  }
  // A config key named like a fixed column would be ambiguous: it is prefixed.
  auto column = [](const std::string& k) {
    const bool fixed =
        std::find(kExportColumns.begin(), kExportColumns.end(), k) != kExportColumns.end();
    return fixed ? "config." + k : k;
  };
  std::ostringstream out;
  if (format == ExportFormat::kCsv) {
    std::string header;
    for (const auto& c : kExportColumns) header += (header.empty() ? "" : ",") + CsvField(c);
    for (const auto& k : keys) header += "," + CsvField(column(k));
    out << header << "\r\n";
  }
  for (const auto& f : figures) {
    const std::vector<std::string> fixed = {f.node,      f.model,
                                            f.test,      f.metric,
                                            f.statistic, FullPrecision(f.value),
                                            f.unit,      f.higher_is_better ? "true" : "false"};
    if (format == ExportFormat::kCsv) {
      std::string line;
      for (std::size_t i = 0; i < fixed.size(); ++i) line += (i ? "," : "") + CsvField(fixed[i]);
      for (const auto& k : keys) line += "," + CsvField(f.config ? ValueOf(*f.config, k) : "");
      out << line << "\r\n";
    } else {
      nlohmann::ordered_json row = nlohmann::ordered_json::object();  // columns in order
      for (std::size_t i = 0; i < fixed.size(); ++i) row[kExportColumns[i]] = fixed[i];
      row["value"] = f.value;
      row["higherIsBetter"] = f.higher_is_better;
      for (const auto& k : keys) {
        if (const std::string v = f.config ? ValueOf(*f.config, k) : ""; !v.empty()) {
          row[column(k)] = v;
        }
      }
      out << row.dump() << "\n";
    }
  }
  return out.str();
}

Result<std::vector<Figure>> ParseExport(const std::string& text, ExportFormat format,
                                        const std::string& source,
                                        const std::vector<std::string>& statistics,
                                        const Config& extra) {
  ExportRows rows;
  if (format == ExportFormat::kCsv) {
    ASSIGN_OR_RETURN(rows, CsvRows(text, source));
  } else {
    ASSIGN_OR_RETURN(rows, JsonLinesRows(text, source));
  }
  std::vector<Figure> out;
  std::map<Config, std::shared_ptr<const Config>> configs;  // one per distinct config
  for (auto& [line, row] : rows) {
    const std::string where = source + ":" + std::to_string(line);
    for (const char* c : {"node", "test", "metric", "statistic", "value"}) {
      if (row[c].empty()) return InvalidArgument(where + ": no " + c);
    }
    if (std::find(statistics.begin(), statistics.end(), row["statistic"]) == statistics.end()) {
      continue;
    }
    Figure f;
    f.node = row["node"];
    f.model = row["model"];
    f.test = row["test"];
    f.metric = row["metric"];
    f.statistic = row["statistic"];
    f.unit = row["unit"];
    f.higher_is_better = row["higherIsBetter"] != "false";
    try {
      std::size_t used = 0;
      f.value = std::stod(row["value"], &used);
      if (used != row["value"].size()) throw std::invalid_argument("trailing text");
    } catch (const std::exception&) {
      return InvalidArgument(where + ": value \"" + row["value"] + "\" is not a number");
    }
    Config config;
    for (const auto& [k, v] : row) {
      if (v.empty()) continue;
      if (k.rfind("config.", 0) == 0) {
        config[k.substr(7)] = v;
      } else if (std::find(kExportColumns.begin(), kExportColumns.end(), k) ==
                 kExportColumns.end()) {
        config[k] = v;
      }
    }
    config["node"] = f.node;
    for (const auto& [k, v] : extra) config[k] = v;
    auto& shared = configs[config];
    if (!shared) shared = std::make_shared<const Config>(config);
    f.config = shared;
    if (std::isfinite(f.value)) out.push_back(std::move(f));
  }
  return out;
}

}  // namespace perfgate::compare
