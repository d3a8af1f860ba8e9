#include "store/sql_store.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/report.h"
#include "common/stats.h"

namespace perfgate::store {
namespace {

using sql::Row;
using sql::Value;

// The schema, one migration per version, applied in order. {id} is the dialect's
// auto-numbered primary key. A released migration is never edited: add the next one.
struct Migration {
  int version;
  const char* text;
};
constexpr Migration kMigrations[] = {
    {1, R"sql(
CREATE TABLE results (
  id {id},
  cluster TEXT NOT NULL,
  validation TEXT NOT NULL,
  run TEXT NOT NULL,
  node TEXT NOT NULL,
  profile TEXT NOT NULL,
  profile_version TEXT NOT NULL,
  gpu_model TEXT NOT NULL,
  time_ms BIGINT NOT NULL,
  start_time TEXT NOT NULL,
  completion_time TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  sample_cap INTEGER NOT NULL,
  UNIQUE (cluster, validation, run, node)
);
CREATE INDEX results_node_time ON results (node, time_ms);
CREATE INDEX results_model_time ON results (gpu_model, time_ms);
CREATE INDEX results_validation ON results (validation, run);
CREATE INDEX results_time ON results (time_ms);
CREATE TABLE result_identity (
  result_id BIGINT NOT NULL REFERENCES results (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (result_id, name)
);
CREATE TABLE test_results (
  result_id BIGINT NOT NULL REFERENCES results (id) ON DELETE CASCADE,
  test TEXT NOT NULL,
  device TEXT NOT NULL,
  test_type TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  stop_reason TEXT NOT NULL,
  warmup_samples INTEGER NOT NULL,
  samples INTEGER NOT NULL,
  seconds DOUBLE PRECISION NOT NULL,
  parameters TEXT NOT NULL,
  details TEXT NOT NULL,
  PRIMARY KEY (result_id, test, device)
);
CREATE TABLE metric_summaries (
  result_id BIGINT NOT NULL REFERENCES results (id) ON DELETE CASCADE,
  test TEXT NOT NULL,
  device TEXT NOT NULL,
  metric TEXT NOT NULL,
  test_type TEXT NOT NULL,
  test_verdict TEXT NOT NULL,
  unit TEXT NOT NULL,
  higher_is_better INTEGER NOT NULL,
  n INTEGER NOT NULL,
  mean DOUBLE PRECISION NOT NULL,
  median DOUBLE PRECISION NOT NULL,
  stddev DOUBLE PRECISION NOT NULL,
  min_value DOUBLE PRECISION NOT NULL,
  max_value DOUBLE PRECISION NOT NULL,
  p05 DOUBLE PRECISION NOT NULL,
  p95 DOUBLE PRECISION NOT NULL,
  cv DOUBLE PRECISION NOT NULL,
  mean_ci_low DOUBLE PRECISION,
  mean_ci_high DOUBLE PRECISION,
  median_ci_low DOUBLE PRECISION,
  median_ci_high DOUBLE PRECISION,
  outliers INTEGER NOT NULL,
  samples TEXT NOT NULL,
  PRIMARY KEY (result_id, test, device, metric)
);
CREATE TABLE threshold_verdicts (
  result_id BIGINT NOT NULL REFERENCES results (id) ON DELETE CASCADE,
  test TEXT NOT NULL,
  device TEXT NOT NULL,
  position INTEGER NOT NULL,
  metric TEXT NOT NULL,
  statistic TEXT NOT NULL,
  op TEXT NOT NULL,
  bound DOUBLE PRECISION NOT NULL,
  observed DOUBLE PRECISION NOT NULL,
  interval_low DOUBLE PRECISION,
  interval_high DOUBLE PRECISION,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  PRIMARY KEY (result_id, test, device, position)
);
)sql"},
    {2, R"sql(
CREATE TABLE baselines (
  name TEXT PRIMARY KEY,
  created_ms BIGINT NOT NULL,
  source TEXT NOT NULL
);
CREATE TABLE baseline_values (
  baseline TEXT NOT NULL REFERENCES baselines (name) ON DELETE CASCADE,
  gpu_model TEXT NOT NULL,
  profile_version TEXT NOT NULL,
  test TEXT NOT NULL,
  metric TEXT NOT NULL,
  statistic TEXT NOT NULL,
  value DOUBLE PRECISION NOT NULL,
  summaries INTEGER NOT NULL,
  low DOUBLE PRECISION NOT NULL,
  high DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (baseline, gpu_model, profile_version, test, metric, statistic)
);
)sql"},
};

std::string ForDialect(std::string text, sql::Dialect d) {
  const std::string id =
      d == sql::Dialect::kSqlite ? "INTEGER PRIMARY KEY" : "BIGSERIAL PRIMARY KEY";
  for (auto at = text.find("{id}"); at != std::string::npos; at = text.find("{id}", at)) {
    text.replace(at, 4, id);
  }
  return text;
}

std::string SamplesText(const google::protobuf::RepeatedField<double>& samples) {
  std::string out;
  char buf[40];
  for (double s : samples) {
    std::snprintf(buf, sizeof buf, "%.17g", s);
    if (!out.empty()) out += ',';
    out += buf;
  }
  return out;
}

std::vector<double> ParseSamples(const std::string& text) {
  std::vector<double> out;
  const char* p = text.c_str();
  while (*p != '\0') {
    char* end = nullptr;
    const double v = std::strtod(p, &end);
    if (end == p) break;
    out.push_back(v);
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

Value Low(const v1alpha1::Interval& i) {
  if (i.lowunbounded()) return {};
  return i.low();
}
Value High(const v1alpha1::Interval& i) {
  if (i.highunbounded()) return {};
  return i.high();
}

std::string MapJson(const google::protobuf::Map<std::string, std::string>& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : m) j[k] = v;
  return j.dump();
}

// Inserts rows of `columns` values each, many rows per statement.
class BatchInsert {
 public:
  BatchInsert(sql::Connection& conn, std::string head, int columns)
      : conn_(conn), head_(std::move(head)), columns_(columns) {}
  Status Add(std::vector<Value> row) {
    for (auto& v : row) params_.push_back(std::move(v));
    if (++rows_ == kRowsPerStatement) return Flush();
    return Status::Ok();
  }
  Status Flush() {
    if (rows_ == 0) return Status::Ok();
    std::string one = "(";
    for (int c = 0; c < columns_; ++c) one += c ? ",?" : "?";
    one += ")";
    std::string sql = head_ + " VALUES ";
    for (int r = 0; r < rows_; ++r) sql += (r ? "," : "") + one;
    auto done = conn_.Query(sql, params_);
    params_.clear();
    rows_ = 0;
    return done.status();
  }

 private:
  static constexpr int kRowsPerStatement = 100;
  sql::Connection& conn_;
  std::string head_;
  int columns_;
  int rows_ = 0;
  std::vector<Value> params_;
};

// Result-level filters shared by metric, result and baseline queries.
struct Filter {
  std::optional<std::string> cluster, validation, run, node, gpu_model, profile, profile_version,
      verdict;
  std::vector<std::string> nodes;
  std::optional<int64_t> since_ms, until_ms;
};

Filter FromQuery(const ResultQuery& q) {
  Filter f;
  f.cluster = q.cluster;
  f.validation = q.validation;
  f.run = q.run;
  f.node = q.node;
  f.gpu_model = q.gpu_model;
  f.nodes = q.nodes;
  f.verdict = q.verdict;
  f.since_ms = q.since_ms;
  f.until_ms = q.until_ms;
  return f;
}

Filter FromQuery(const MetricQuery& q) {
  Filter f;
  f.cluster = q.cluster;
  f.validation = q.validation;
  f.run = q.run;
  f.node = q.node;
  f.gpu_model = q.gpu_model;
  f.profile = q.profile;
  f.profile_version = q.profile_version;
  f.since_ms = q.since_ms;
  f.until_ms = q.until_ms;
  return f;
}

struct Where {
  std::string sql;
  std::vector<Value> params;
  void Eq(const std::string& column, const std::optional<std::string>& v) {
    if (!v) return;
    sql += " AND " + column + " = ?";
    params.emplace_back(*v);
  }
};

void AddFilter(const Filter& f, const std::string& r, Where* w) {
  w->Eq(r + ".cluster", f.cluster);
  w->Eq(r + ".validation", f.validation);
  w->Eq(r + ".run", f.run);
  w->Eq(r + ".node", f.node);
  w->Eq(r + ".gpu_model", f.gpu_model);
  w->Eq(r + ".profile", f.profile);
  w->Eq(r + ".profile_version", f.profile_version);
  w->Eq(r + ".verdict", f.verdict);
  if (!f.nodes.empty()) {
    w->sql += " AND " + r + ".node IN (";
    for (std::size_t i = 0; i < f.nodes.size(); ++i) {
      w->sql += i ? ",?" : "?";
      w->params.emplace_back(f.nodes[i]);
    }
    w->sql += ")";
  }
  if (f.since_ms) {
    w->sql += " AND " + r + ".time_ms >= ?";
    w->params.emplace_back(*f.since_ms);
  }
  if (f.until_ms) {
    w->sql += " AND " + r + ".time_ms < ?";
    w->params.emplace_back(*f.until_ms);
  }
}

void AddMetricFilter(const MetricQuery& q, const std::string& m, Where* w) {
  w->Eq(m + ".test", q.test);
  w->Eq(m + ".device", q.device);
  w->Eq(m + ".metric", q.metric);
}

// One metric_summaries row: a test's metric and its summary.
std::vector<Value> MetricRow(int64_t id, const v1alpha1::TestResult& t, const std::string& verdict,
                             const v1alpha1::MetricResult& m) {
  const auto& s = m.summary();
  return {id,
          t.name(),
          t.device(),
          m.name(),
          t.type(),
          verdict,
          m.unit(),
          static_cast<int64_t>(m.higherisbetter() ? 1 : 0),
          static_cast<int64_t>(s.n()),
          s.mean(),
          s.median(),
          s.stddev(),
          s.min(),
          s.max(),
          s.p05(),
          s.p95(),
          s.cv(),
          Low(s.meanci()),
          High(s.meanci()),
          Low(s.medianci()),
          High(s.medianci()),
          static_cast<int64_t>(s.outliers()),
          SamplesText(m.samples())};
}

// The rows of a result's tests, their metrics and their thresholds' verdicts.
Status InsertTests(sql::Connection& conn, int64_t id, const v1alpha1::Report& rep) {
  BatchInsert tests(conn,
                    "INSERT INTO test_results (result_id, test, device, test_type, verdict, "
                    "reason, stop_reason, warmup_samples, samples, seconds, parameters, "
                    "details)",
                    12);
  BatchInsert metrics(
      conn,
      "INSERT INTO metric_summaries (result_id, test, device, metric, test_type, "
      "test_verdict, unit, higher_is_better, n, mean, median, stddev, min_value, max_value, "
      "p05, p95, cv, mean_ci_low, mean_ci_high, median_ci_low, median_ci_high, outliers, "
      "samples)",
      23);
  BatchInsert thresholds(conn,
                         "INSERT INTO threshold_verdicts (result_id, test, device, position, "
                         "metric, statistic, op, bound, observed, interval_low, "
                         "interval_high, verdict, reason)",
                         13);
  for (const auto& t : rep.tests()) {
    const std::string verdict = report::VerdictName(t.verdict());
    RETURN_IF_ERROR(
        tests.Add({id, t.name(), t.device(), t.type(), verdict, t.reason(), t.stopreason(),
                   static_cast<int64_t>(t.warmupsamples()), static_cast<int64_t>(t.samples()),
                   t.seconds(), MapJson(t.parameters()), MapJson(t.details())}));
    for (const auto& m : t.metrics()) RETURN_IF_ERROR(metrics.Add(MetricRow(id, t, verdict, m)));
    for (int i = 0; i < t.thresholds_size(); ++i) {
      const auto& th = t.thresholds(i);
      RETURN_IF_ERROR(
          thresholds.Add({id, t.name(), t.device(), static_cast<int64_t>(i),
                          th.threshold().metric(), th.threshold().statistic(), th.threshold().op(),
                          th.bound(), th.observed(), Low(th.interval()), High(th.interval()),
                          report::VerdictName(th.verdict()), th.reason()}));
    }
  }
  RETURN_IF_ERROR(tests.Flush());
  RETURN_IF_ERROR(metrics.Flush());
  RETURN_IF_ERROR(thresholds.Flush());
  return Status::Ok();
}

class SqlStore final : public Store {
 public:
  explicit SqlStore(std::unique_ptr<sql::Connection> conn) : conn_(std::move(conn)) {}

  Status Migrate() {
    RETURN_IF_ERROR(
        conn_->ExecScript("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
    for (const Migration& m : kMigrations) {
      Status st = Transaction(
          [&]() -> Status {
            // Another process may have migrated while this one waited for the lock.
            ASSIGN_OR_RETURN(int at, CurrentVersion());
            if (at >= m.version) return Status::Ok();
            RETURN_IF_ERROR(conn_->ExecScript(ForDialect(m.text, conn_->dialect())));
            return conn_
                ->Query("INSERT INTO schema_version (version) VALUES (?)",
                        {static_cast<int64_t>(m.version)})
                .status();
          },
          /*exclusive=*/true);
      if (!st.ok()) {
        return st.WithContext(conn_->Describe() + ": migrating to schema version " +
                              std::to_string(m.version));
      }
    }
    ASSIGN_OR_RETURN(int at, CurrentVersion());
    if (at > LatestSchemaVersion()) {
      return FailedPrecondition(conn_->Describe() + " is at schema version " + std::to_string(at) +
                                ", newer than this build's " +
                                std::to_string(LatestSchemaVersion()) + ": upgrade perfgate");
    }
    return Status::Ok();
  }

  Result<bool> Put(const NodeResult& result) override {
    const auto& rep = result.report;
    if (result.key.node.empty() || result.key.run.empty()) {
      return InvalidArgument("a stored result needs a node and a run");
    }
    bool written = false;
    Status st = Transaction([&]() -> Status {
      ASSIGN_OR_RETURN(
          auto ids,
          conn_->Query(
              "INSERT INTO results (cluster, validation, run, node, profile, profile_version, "
              "gpu_model, time_ms, start_time, completion_time, verdict, reason, sample_cap) "
              "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) "
              "ON CONFLICT (cluster, validation, run, node) DO NOTHING RETURNING id",
              {result.key.cluster, result.key.validation, result.key.run, result.key.node,
               rep.profile(), rep.profileversion(), GpuModel(rep), ResultTimeMs(rep),
               rep.starttime(), rep.completiontime(), report::VerdictName(rep.verdict()),
               rep.reason(), static_cast<int64_t>(rep.samplecap())}));
      if (ids.empty()) return Status::Ok();
      const int64_t id = sql::AsInt(ids[0][0]);

      BatchInsert identity(*conn_, "INSERT INTO result_identity (result_id, name, value)", 3);
      for (const auto& [k, v] : IdentityRows(rep)) RETURN_IF_ERROR(identity.Add({id, k, v}));
      RETURN_IF_ERROR(identity.Flush());

      RETURN_IF_ERROR(InsertTests(*conn_, id, rep));
      written = true;
      return Status::Ok();
    });
    if (!st.ok()) {
      return st.WithContext("storing " + result.key.node + " of " + result.key.validation +
                            " run " + result.key.run);
    }
    return written;
  }

  Result<std::vector<MetricRecord>> Metrics(const MetricQuery& q) override {
    Where w;
    const Filter f = FromQuery(q);
    AddFilter(f, "r", &w);
    AddMetricFilter(q, "m", &w);
    if (q.latest_results > 0) {
      w.sql += " AND r.id IN (SELECT r2.id FROM results r2 WHERE 1=1";
      Where inner;
      AddFilter(f, "r2", &inner);
      Where metric;
      AddMetricFilter(q, "m2", &metric);
      w.sql += inner.sql;
      w.params.insert(w.params.end(), inner.params.begin(), inner.params.end());
      if (!metric.sql.empty()) {
        w.sql += " AND EXISTS (SELECT 1 FROM metric_summaries m2 WHERE m2.result_id = r2.id" +
                 metric.sql + ")";
        w.params.insert(w.params.end(), metric.params.begin(), metric.params.end());
      }
      w.sql += " ORDER BY r2.time_ms DESC, r2.id DESC LIMIT ?)";
      w.params.emplace_back(static_cast<int64_t>(q.latest_results));
    }
    const std::string sql =
        std::string(
            "SELECT r.cluster, r.validation, r.run, r.node, r.profile, r.profile_version, "
            "r.gpu_model, r.time_ms, m.test, m.test_type, m.device, m.test_verdict, m.metric, "
            "m.unit, m.higher_is_better, m.n, m.mean, m.median, m.stddev, m.min_value, "
            "m.max_value, m.p05, m.p95, m.cv, m.outliers, ") +
        (q.with_samples ? "m.samples" : "''") +
        " FROM metric_summaries m JOIN results r ON r.id = m.result_id WHERE 1=1" + w.sql +
        " ORDER BY r.time_ms DESC, r.id DESC, m.test, m.device, m.metric";
    ASSIGN_OR_RETURN(auto rows, conn_->Query(sql, w.params));
    std::vector<MetricRecord> out;
    out.reserve(rows.size());
    for (const Row& row : rows) {
      MetricRecord m;
      m.key = {sql::AsText(row[0]), sql::AsText(row[1]), sql::AsText(row[2]), sql::AsText(row[3])};
      m.profile = sql::AsText(row[4]);
      m.profile_version = sql::AsText(row[5]);
      m.gpu_model = sql::AsText(row[6]);
      m.time_ms = sql::AsInt(row[7]);
      m.test = sql::AsText(row[8]);
      m.test_type = sql::AsText(row[9]);
      m.device = sql::AsText(row[10]);
      m.test_verdict = sql::AsText(row[11]);
      m.metric = sql::AsText(row[12]);
      m.unit = sql::AsText(row[13]);
      m.higher_is_better = sql::AsInt(row[14]) != 0;
      auto& s = m.summary;
      s.set_n(static_cast<int32_t>(sql::AsInt(row[15])));
      s.set_mean(sql::AsDouble(row[16]));
      s.set_median(sql::AsDouble(row[17]));
      s.set_stddev(sql::AsDouble(row[18]));
      s.set_min(sql::AsDouble(row[19]));
      s.set_max(sql::AsDouble(row[20]));
      s.set_p05(sql::AsDouble(row[21]));
      s.set_p95(sql::AsDouble(row[22]));
      s.set_cv(sql::AsDouble(row[23]));
      s.set_outliers(static_cast<int32_t>(sql::AsInt(row[24])));
      m.samples = ParseSamples(sql::AsText(row[25]));
      out.push_back(std::move(m));
    }
    return out;
  }

  Result<std::vector<ResultRecord>> Results(const ResultQuery& q) override {
    Where w;
    AddFilter(FromQuery(q), "r", &w);
    std::string sql =
        "SELECT r.id, r.cluster, r.validation, r.run, r.node, r.profile, r.profile_version, "
        "r.gpu_model, r.time_ms, r.verdict, r.reason FROM results r WHERE 1=1" +
        w.sql + " ORDER BY r.time_ms DESC, r.id DESC";
    if (q.limit > 0) {
      sql += " LIMIT ?";
      w.params.emplace_back(static_cast<int64_t>(q.limit));
    }
    ASSIGN_OR_RETURN(auto rows, conn_->Query(sql, w.params));
    std::vector<ResultRecord> out;
    for (const Row& row : rows) {
      ResultRecord r;
      r.key = {sql::AsText(row[1]), sql::AsText(row[2]), sql::AsText(row[3]), sql::AsText(row[4])};
      r.profile = sql::AsText(row[5]);
      r.profile_version = sql::AsText(row[6]);
      r.gpu_model = sql::AsText(row[7]);
      r.time_ms = sql::AsInt(row[8]);
      r.verdict = sql::AsText(row[9]);
      r.reason = sql::AsText(row[10]);
      ASSIGN_OR_RETURN(auto identity,
                       conn_->Query("SELECT name, value FROM result_identity WHERE result_id = ?",
                                    {sql::AsInt(row[0])}));
      for (const Row& kv : identity) r.identity[sql::AsText(kv[0])] = sql::AsText(kv[1]);
      out.push_back(std::move(r));
    }
    return out;
  }

  Result<int> Prune(const Retention& retention, int64_t now_ms) override {
    int deleted = 0;
    Status st = Transaction([&]() -> Status {
      if (retention.max_age_ms > 0) {
        ASSIGN_OR_RETURN(auto rows,
                         conn_->Query("DELETE FROM results WHERE time_ms < ? RETURNING id",
                                      {now_ms - retention.max_age_ms}));
        deleted += static_cast<int>(rows.size());
      }
      if (retention.keep_per_node > 0) {
        ASSIGN_OR_RETURN(
            auto rows,
            conn_->Query("DELETE FROM results WHERE id IN (SELECT id FROM (SELECT id, ROW_NUMBER() "
                         "OVER (PARTITION BY cluster, node ORDER BY time_ms DESC, id DESC) AS "
                         "newer FROM results) ranked WHERE newer > ?) RETURNING id",
                         {static_cast<int64_t>(retention.keep_per_node)}));
        deleted += static_cast<int>(rows.size());
      }
      return Status::Ok();
    });
    if (!st.ok()) return st.WithContext("pruning " + conn_->Describe());
    return deleted;
  }

  Result<Baseline> CreateBaseline(const std::string& name, const ResultQuery& from,
                                  const std::string& source, int64_t now_ms) override {
    if (name.empty()) return InvalidArgument("a baseline needs a name");
    ASSIGN_OR_RETURN(auto existing,
                     conn_->Query("SELECT name FROM baselines WHERE name = ?", {name}));
    if (!existing.empty()) {
      return Status(Code::kAlreadyExists, "baseline \"" + name + "\" exists in " +
                                              conn_->Describe() +
                                              " (baselines are frozen: delete it first)");
    }
    Where w;
    AddFilter(FromQuery(from), "r", &w);
    ASSIGN_OR_RETURN(
        auto rows,
        conn_->Query("SELECT r.gpu_model, r.profile_version, m.test, m.metric, m.mean, m.median, "
                     "m.p05, m.p95, m.min_value, m.max_value FROM metric_summaries m JOIN "
                     "results r ON r.id = m.result_id WHERE m.n > 0" +
                         w.sql,
                     w.params));
    if (rows.empty()) {
      return FailedPrecondition("baseline \"" + name + "\": " + source +
                                " selects no measured results in " + conn_->Describe());
    }
    using GroupKey = std::tuple<std::string, std::string, std::string, std::string>;
    std::map<GroupKey, std::array<std::vector<double>, 6>> groups;
    for (const Row& row : rows) {
      auto& g = groups[{sql::AsText(row[0]), sql::AsText(row[1]), sql::AsText(row[2]),
                        sql::AsText(row[3])}];
      for (int s = 0; s < 6; ++s) g[s].push_back(sql::AsDouble(row[4 + s]));
    }
    Baseline b;
    b.name = name;
    b.created_ms = now_ms;
    b.source = source;
    for (auto& [key, stats] : groups) {
      for (int s = 0; s < 6; ++s) {
        BaselineValue v;
        std::tie(v.gpu_model, v.profile_version, v.test, v.metric) = key;
        v.statistic = kBaselineStatistics[s];
        v.value = stats::Median(stats[s]);
        v.count = static_cast<int>(stats[s].size());
        v.low = *std::min_element(stats[s].begin(), stats[s].end());
        v.high = *std::max_element(stats[s].begin(), stats[s].end());
        b.values.push_back(std::move(v));
      }
    }
    Status st = Transaction([&]() -> Status {
      RETURN_IF_ERROR(conn_
                          ->Query("INSERT INTO baselines (name, created_ms, source) VALUES (?,?,?)",
                                  {name, now_ms, source})
                          .status());
      BatchInsert values(*conn_,
                         "INSERT INTO baseline_values (baseline, gpu_model, profile_version, test, "
                         "metric, statistic, value, summaries, low, high)",
                         10);
      for (const auto& v : b.values) {
        RETURN_IF_ERROR(
            values.Add({name, v.gpu_model, v.profile_version, v.test, v.metric, v.statistic,
                        v.value, static_cast<int64_t>(v.count), v.low, v.high}));
      }
      return values.Flush();
    });
    if (!st.ok()) return st.WithContext("storing baseline " + name);
    return b;
  }

  Result<Baseline> GetBaseline(const std::string& name) override {
    ASSIGN_OR_RETURN(
        auto head, conn_->Query("SELECT created_ms, source FROM baselines WHERE name = ?", {name}));
    if (head.empty()) {
      return NotFound("no baseline \"" + name + "\" in " + conn_->Describe());
    }
    Baseline b;
    b.name = name;
    b.created_ms = sql::AsInt(head[0][0]);
    b.source = sql::AsText(head[0][1]);
    ASSIGN_OR_RETURN(auto rows,
                     conn_->Query("SELECT gpu_model, profile_version, test, metric, statistic, "
                                  "value, summaries, low, high FROM baseline_values WHERE "
                                  "baseline = ? ORDER BY gpu_model, profile_version, test, "
                                  "metric, statistic",
                                  {name}));
    for (const Row& row : rows) {
      BaselineValue v;
      v.gpu_model = sql::AsText(row[0]);
      v.profile_version = sql::AsText(row[1]);
      v.test = sql::AsText(row[2]);
      v.metric = sql::AsText(row[3]);
      v.statistic = sql::AsText(row[4]);
      v.value = sql::AsDouble(row[5]);
      v.count = static_cast<int>(sql::AsInt(row[6]));
      v.low = sql::AsDouble(row[7]);
      v.high = sql::AsDouble(row[8]);
      b.values.push_back(std::move(v));
    }
    return b;
  }

  Result<std::vector<std::string>> ListBaselines() override {
    ASSIGN_OR_RETURN(auto rows, conn_->Query("SELECT name FROM baselines ORDER BY name", {}));
    std::vector<std::string> out;
    for (const Row& row : rows) out.push_back(sql::AsText(row[0]));
    return out;
  }

  Result<bool> DeleteBaseline(const std::string& name) override {
    bool deleted = false;
    Status st = Transaction([&]() -> Status {
      RETURN_IF_ERROR(
          conn_->Query("DELETE FROM baseline_values WHERE baseline = ?", {name}).status());
      ASSIGN_OR_RETURN(auto rows,
                       conn_->Query("DELETE FROM baselines WHERE name = ? RETURNING name", {name}));
      deleted = !rows.empty();
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return deleted;
  }

  Result<int> SchemaVersion() override { return CurrentVersion(); }
  std::string Describe() const override { return conn_->Describe(); }

 private:
  Result<int> CurrentVersion() {
    ASSIGN_OR_RETURN(auto rows, conn_->Query("SELECT MAX(version) FROM schema_version", {}));
    if (rows.empty() || sql::IsNull(rows[0][0])) return 0;
    return static_cast<int>(sql::AsInt(rows[0][0]));
  }

  // `exclusive`: one migrating process at a time (SQLite: a write lock from the start;
  // PostgreSQL: an advisory lock held to the end of the transaction).
  template <typename Fn>
  Status Transaction(Fn&& fn, bool exclusive = false) {
    const bool sqlite = conn_->dialect() == sql::Dialect::kSqlite;
    RETURN_IF_ERROR(conn_->Query(sqlite && exclusive ? "BEGIN IMMEDIATE" : "BEGIN", {}).status());
    Status st = Status::Ok();
    if (exclusive && !sqlite) {
      st = conn_->Query("SELECT pg_advisory_xact_lock(7207101)", {}).status();
    }
    if (st.ok()) st = fn();
    if (st.ok()) {
      auto commit = conn_->Query("COMMIT", {});
      if (commit.ok()) return Status::Ok();
      st = commit.status();
    }
    (void)conn_->Query("ROLLBACK", {});
    return st;
  }

  std::unique_ptr<sql::Connection> conn_;
};

}  // namespace

int LatestSchemaVersion() { return kMigrations[std::size(kMigrations) - 1].version; }

Result<std::unique_ptr<Store>> MakeSqlStore(std::unique_ptr<sql::Connection> conn) {
  auto store = std::make_unique<SqlStore>(std::move(conn));
  RETURN_IF_ERROR(store->Migrate());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace perfgate::store
