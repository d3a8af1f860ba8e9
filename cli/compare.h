// `perfgate compare`: two sets of node results (A and B), or one set split by a key (cluster,
// driver version, ...), compared per GPU model, test, metric and statistic: medians, the ratio
// with its interval, a rank test corrected across the rows (Holm), an equivalence test against
// a margin, and the identity and configuration keys that explain a gap. Method:
// docs/compare.md.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "core/fleet.h"
#include "store/store.h"

namespace perfgate::compare {

// The identity and configuration a node result ran on ("driverVersion", "gpu.vbios", ...), plus
// "cluster", "validation", "run" and "node".
using Config = std::map<std::string, std::string>;

// One figure: a statistic of one metric of one test on one device of one node result.
struct Figure {
  std::string node;
  std::string model;  // GPU model, "" without GPUs
  std::string test;
  std::string metric;
  std::string unit;
  std::string statistic;  // mean | median | p05 | p95 | min | max
  bool higher_is_better = true;
  double value = 0;
  std::shared_ptr<const Config> config;
};

// The statistics a comparison may use (a metric summary's).
bool KnownStatistic(const std::string& name);

// The identity and configuration rows of a report: the store's identity rows with per-GPU keys
// folded into one ("gpu0.vbios", "gpu1.vbios" -> "gpu.vbios", distinct values joined by ","),
// plus validation, profile and profileVersion.
Config ConfigOf(const v1alpha1::Report& report);

// Figures of node reports read from files, each with `extra` added to its config (its "side",
// "A" or "B", and a "cluster" the files came from when the user names one).
std::vector<Figure> FromReports(const std::vector<fleet::NodeReport>& reports,
                                const std::vector<std::string>& statistics, const Config& extra);

// A store query as a user writes it: comma-separated key=value pairs. cluster, validation,
// run, node, gpu (GPU model), since and until (RFC 3339, or a duration back from now: 24h,
// 7d) select results; any other key matches the result's identity and configuration rows
// (driver, cuda and nccl are short for driverVersion, cudaVersion, ncclVersion).
struct Selector {
  store::ResultQuery query;
  std::map<std::string, std::string> identity;
  std::string text;  // as given, for messages
};
Result<Selector> ParseSelector(const std::string& text, int64_t now_ms);

// Figures of the stored results a selector picks. kNotFound when it picks none.
Result<std::vector<Figure>> FromStore(store::Store& store, const Selector& selector,
                                      const std::vector<std::string>& statistics,
                                      const Config& extra);

// Export: one row per figure, as CSV (RFC 4180, a header row) or JSON Lines (one object per
// row). Columns: node, model, test, metric, statistic, value, unit, higherIsBetter, then each
// config key the figures carry (cluster, validation, run, driverVersion, gpu.vbios, ...;
// "node" and "side" left out), sorted by name. Values keep 17 significant digits, so an
// export reads back to the same figures. Columns documented in docs/compare.md.
enum class ExportFormat { kCsv, kJsonLines };
std::string FormatExport(const std::vector<Figure>& figures, ExportFormat format);

// The figures of an export (either format) for `statistics`, each with `extra` added to its
// config. `source` names the text in errors; a malformed row is an error naming its line.
Result<std::vector<Figure>> ParseExport(const std::string& text, ExportFormat format,
                                        const std::string& source,
                                        const std::vector<std::string>& statistics,
                                        const Config& extra);

// ParseExport of a file, its format from its name (ExportFormatOf). kNotFound when it cannot
// be read.
Result<std::vector<Figure>> FromExport(const std::string& path,
                                       const std::vector<std::string>& statistics,
                                       const Config& extra);

// The export format a file name says (".csv", ".jsonl"), or nullopt for anything else.
std::optional<ExportFormat> ExportFormatOf(const std::string& path);

enum class Pairing { kAuto, kPaired, kUnpaired };

struct Options {
  double margin = 0.03;      // equivalence range: ratios within [1 / (1 + m), 1 + m]
  double alpha = 0.05;       // family-wise error of "regressed"/"improved"; TOST level
  double confidence = 0.95;  // the ratio's interval
  Pairing pairing = Pairing::kAuto;
};

enum class Decision { kRegressed, kImproved, kEquivalent, kInconclusive };
const char* DecisionName(Decision d);  // "regressed", ...

// A key whose values differ between the reference and the group, with how much of the gap
// it explains: its effect measured only between nodes that agree on every other differing key
// (matched groups), times the share of the group's nodes that carry the group's own values.
struct Explanation {
  std::string key;
  std::string reference_values;  // distinct values, joined by ","
  std::string group_values;
  bool separable = false;       // some matched group holds both values
  double effect = 0;            // ratio between matched nodes with the group's values and others
  double share = 0;             // fraction of the log gap explained (1 = all of it)
  int matched_nodes = 0;        // nodes in the matched groups the effect was measured in
  std::string confounded_with;  // when not separable: the keys that change together with it
};

struct Row {
  std::string model, test, metric, unit, statistic;
  bool higher_is_better = true;
  std::string reference, group;                   // "A" and "B", or two values of the --by key
  int n_reference = 0, n_group = 0, n_pairs = 0;  // nodes (pairs when paired)
  double median_reference = 0, median_group = 0;
  double ratio = 1, ratio_low = 1, ratio_high = 1;  // group / reference
  double interval_confidence = 0;
  bool paired = false;
  std::string method;        // "wilcoxon-signed-rank exact", "mann-whitney normal", ...
  double p = 1;              // two-sided rank test
  double p_adjusted = 1;     // Holm across every row of the comparison
  double p_equivalence = 1;  // TOST against the margin
  Decision decision = Decision::kInconclusive;
  std::string note;                       // why no test could be made, when none could
  std::vector<Explanation> explanations;  // for regressed and improved rows
};

struct Comparison {
  std::vector<std::string> groups;  // the reference first
  std::string by;                   // the key groups were formed by; "" for A and B
  bool paired = false;
  std::string pairing_reason;
  Options options;
  std::vector<Row> rows;
  int Count(Decision d) const;
};

// Compares the figures of `groups[1..]` with those of `groups[0]` (figures of other groups are
// ignored). A figure's group is its config value of `by`, or with `by` empty the value of its
// "side" key. Each node's figure per row is the median over its devices and results.
// kFailedPrecondition when there is nothing to compare (no row with figures on both sides).
Result<Comparison> Compare(const std::vector<Figure>& figures,
                           const std::vector<std::string>& groups, const std::string& by,
                           const Options& options);

// The groups a key forms over `figures`, sorted by value; "" values left out.
std::vector<std::string> GroupsBy(const std::vector<Figure>& figures, const std::string& by);

// Output: a column table, JSON (stable names, documented in docs/compare.md), Markdown.
std::string FormatTable(const Comparison& c);
std::string FormatJson(const Comparison& c);
std::string FormatMarkdown(const Comparison& c);

// One self-contained HTML page in the HTML report's style: the rows as a table, an interval
// plot (<svg data-plot="intervals" data-marks="N">, one element of class "mark" per row: the
// ratio's dot, its interval drawn through it, against the equivalence band) and the keys that
// explain each gap. `source` says what was compared, `generated` when (RFC 3339).
std::string FormatHtml(const Comparison& c, const std::string& source,
                       const std::string& generated);

}  // namespace perfgate::compare
