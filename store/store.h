// The results store: every node result kept (its metric summaries and samples, verdicts and
// the identity it ran on), queried for a node's history, a GPU model's fleet, a validation's
// results; named baselines built from chosen results. One interface, two backends behind one
// schema (store/schema.cc): SQLite in a file (the default) and PostgreSQL for fleets.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "perfgate/v1alpha1/report.pb.h"

namespace perfgate::store {

// What identifies a node result: storing the same key twice stores it once.
struct ResultKey {
  std::string cluster;     // "local" for a run on this machine
  std::string validation;  // the PerfValidation's name
  std::string run;         // the run of that validation (locally: its start time)
  std::string node;
  bool operator==(const ResultKey&) const = default;
};

struct NodeResult {
  ResultKey key;
  v1alpha1::Report report;
};

// The GPU model a report ran on: the first GPU's name; "" on a machine without GPUs.
std::string GpuModel(const v1alpha1::Report& report);
// The identity and configuration a report ran on as key/value rows ("gpu0.uuid", "kernel",
// "driverVersion", ...): only what the report holds, so a new key needs no schema change.
std::map<std::string, std::string> IdentityRows(const v1alpha1::Report& report);
// The result's time in milliseconds since the epoch: its completion time, else its start
// time, else 0.
int64_t ResultTimeMs(const v1alpha1::Report& report);

// One metric of one test on one device of one stored node result.
struct MetricRecord {
  ResultKey key;
  std::string profile;
  std::string profile_version;
  std::string gpu_model;
  int64_t time_ms = 0;
  std::string test;  // display name
  std::string test_type;
  std::string device;  // "host", "gpu0", ...
  std::string test_verdict;
  std::string metric;
  std::string unit;
  bool higher_is_better = true;
  v1alpha1::Summary summary;  // n, mean, median, stddev, min, max, p05, p95, cv, outliers
  std::vector<double> samples;
};

// Filters of a metric query; an unset field matches everything.
struct MetricQuery {
  std::optional<std::string> cluster, validation, run, node;
  std::optional<std::string> profile, profile_version, gpu_model;
  std::optional<std::string> test, device, metric;
  std::optional<int64_t> since_ms, until_ms;  // time_ms in [since, until)
  // Only the newest this many matching node results (0: all), newest first.
  int latest_results = 0;
  bool with_samples = true;
};

// One stored node result without its metrics.
struct ResultRecord {
  ResultKey key;
  std::string profile;
  std::string profile_version;
  std::string gpu_model;
  int64_t time_ms = 0;
  std::string verdict;  // PASS, FAIL, ...
  std::string reason;
  std::map<std::string, std::string> identity;
};

struct ResultQuery {
  std::optional<std::string> cluster, validation, run, node, gpu_model;
  std::vector<std::string> nodes;      // any of these (a set of known-good nodes); empty: all
  std::optional<std::string> verdict;  // PASS, FAIL, ...
  std::optional<int64_t> since_ms, until_ms;
  int limit = 0;  // newest first; 0: all
};

// Results to drop: older than max_age_ms (0: no age limit), and beyond the newest
// keep_per_node results of each cluster and node (0: no count limit).
struct Retention {
  int64_t max_age_ms = 0;
  int keep_per_node = 0;
};

// A frozen summary: per GPU model, profile version, test, metric and statistic, the median
// over the chosen results' devices of that statistic, with how many went into it.
struct BaselineValue {
  std::string gpu_model;
  std::string profile_version;
  std::string test;
  std::string metric;
  std::string statistic;  // mean | median | p05 | p95 | min | max
  double value = 0;
  int count = 0;             // metric summaries (devices x results) it was built from
  double low = 0, high = 0;  // the spread of those: lowest and highest
};
struct Baseline {
  std::string name;
  int64_t created_ms = 0;
  std::string source;  // what it was built from, in words ("validation h200-acceptance")
  std::vector<BaselineValue> values;
};

// The figure of baseline `b` for this GPU model, profile version, test (display name), metric and
// statistic; kNotFound naming what the baseline does hold when it has none. `same_model` says
// whether the baseline's model is `gpu_model` (null: the same string).
Result<double> BaselineFigure(
    const Baseline& b, const std::string& gpu_model, const std::string& profile_version,
    const std::string& test, const std::string& metric, const std::string& statistic,
    const std::function<bool(const std::string& baseline_model)>& same_model = nullptr);

// The statistics a baseline freezes and a baseline threshold may name.
inline constexpr const char* kBaselineStatistics[] = {"mean", "median", "p05", "p95", "min", "max"};

// A store. Calls are blocking and not thread-safe: one caller at a time per Store.
// Errors: kUnavailable when the database cannot be reached (try again later),
// kResourceExhausted when its disk is full; a failed write leaves nothing half-written.
class Store {
 public:
  virtual ~Store() = default;

  // Writes one node result with everything it holds. Returns true if it was written, false if
  // a result with the same key was already stored (it is left as it is).
  virtual Result<bool> Put(const NodeResult& result) = 0;
  // Metric summaries matching `query`, newest result first, then by test, device, metric.
  virtual Result<std::vector<MetricRecord>> Metrics(const MetricQuery& query) = 0;
  // Node results matching `query`, newest first.
  virtual Result<std::vector<ResultRecord>> Results(const ResultQuery& query) = 0;
  // Deletes what `retention` drops; returns how many node results were deleted.
  virtual Result<int> Prune(const Retention& retention, int64_t now_ms) = 0;

  // Builds the baseline `name` from the results that `from` selects (metric filters are
  // ignored) and stores it. kAlreadyExists if one of that name exists (baselines are frozen:
  // delete it first), kFailedPrecondition if `from` selects nothing.
  virtual Result<Baseline> CreateBaseline(const std::string& name, const ResultQuery& from,
                                          const std::string& source, int64_t now_ms) = 0;
  // kNotFound when there is none.
  virtual Result<Baseline> GetBaseline(const std::string& name) = 0;
  virtual Result<std::vector<std::string>> ListBaselines() = 0;
  // Returns whether there was one.
  virtual Result<bool> DeleteBaseline(const std::string& name) = 0;

  // The schema version the database is at (the newest this build knows after Open).
  virtual Result<int> SchemaVersion() = 0;
  // "sqlite:///path" / "postgresql://host/db" with any password left out.
  virtual std::string Describe() const = 0;
};

// The newest schema version this build writes.
int LatestSchemaVersion();

// Opens the store a URL names, creating the database's tables (or migrating them) as needed:
//   sqlite:///absolute/path.db, sqlite://relative/path.db, or a plain path: SQLite in that file
//     (its folder is created); ?max_size_mb=N caps the file (writes past it fail as a full disk)
//   postgresql://[user[:password]@]host[:port]/dbname[?param=value...] or postgres://...,
//     or a libpq keyword string "postgresql:host=/run/pg dbname=perfgate": PostgreSQL.
// kInvalidArgument for an unknown scheme, kUnavailable when the database cannot be reached.
Result<std::unique_ptr<Store>> Open(const std::string& url);

// The local store's default place: $XDG_DATA_HOME/perfgate/results.db, else
// $HOME/.local/share/perfgate/results.db.
std::string DefaultLocalPath();

}  // namespace perfgate::store
