// One store test suite, run on both backends: SQLite on a real file, PostgreSQL on a real
// server (tests/store/with-postgres.sh starts one and passes PERFGATE_TEST_PG). Without that
// server the PostgreSQL tests fail with the reason; they never skip.
#include <libpq-fe.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "store/spool.h"
#include "store/store.h"
#include "tests/store/sample_results.h"

namespace perfgate::store {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::SampleMetricCount;
using testing::SampleResult;
using testing::SampleShape;

constexpr int64_t kDay = 86400;
constexpr int64_t kT0 = 1790000000;  // 2026-09-21

fs::path TempDir(const std::string& what) {
  static std::atomic<int> n{0};
  fs::path dir = fs::temp_directory_path() / ("perfgate-store-" + what + "-" +
                                              std::to_string(getpid()) + "-" + std::to_string(n++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

struct SqliteBackend {
  fs::path dir = TempDir("sqlite");
  ~SqliteBackend() { fs::remove_all(dir); }
  std::string Url() { return "sqlite://" + (dir / "results.db").string(); }
  // Runs SQL on the database behind the store's back.
  void Exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "results.db").string().c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
};

// Each test gets a fresh database on the server PERFGATE_TEST_PG names.
struct PostgresBackend {
  std::string conninfo;
  std::string database;
  PostgresBackend() {
    const char* env = std::getenv("PERFGATE_TEST_PG");
    if (env == nullptr || *env == '\0') {
      ADD_FAILURE() << "PERFGATE_TEST_PG is not set: run the PostgreSQL tests through "
                       "tests/store/with-postgres.sh (ctest does), which starts a server";
      return;
    }
    conninfo = env;
    static std::atomic<int> n{0};
    database = "perfgate_test_" + std::to_string(getpid()) + "_" + std::to_string(n++);
    Admin("CREATE DATABASE " + database);
  }
  ~PostgresBackend() {
    if (!database.empty()) Admin("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
  }
  void Admin(const std::string& sql, const std::string& on = "") {
    PGconn* c = PQconnectdb((conninfo + (on.empty() ? "" : " dbname=" + on)).c_str());
    if (PQstatus(c) != CONNECTION_OK) {
      ADD_FAILURE() << "cannot reach the test server (" << conninfo << "): " << PQerrorMessage(c);
    } else {
      PGresult* r = PQexec(c, sql.c_str());
      if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        ADD_FAILURE() << sql << ": " << PQresultErrorMessage(r);
      }
      PQclear(r);
    }
    PQfinish(c);
  }
  std::string Url() { return "postgresql:" + conninfo + " dbname=" + database; }
  void Exec(const std::string& sql) { Admin(sql, database); }
};

template <typename Backend>
class StoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<Store> OpenStore() {
    auto s = Open(backend_.Url());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  void SetUp() override {
    store_ = OpenStore();
    ASSERT_NE(store_, nullptr);
  }
  void Put(const NodeResult& r) {
    auto put = store_->Put(r);
    ASSERT_TRUE(put.ok()) << put.status().ToString();
    EXPECT_TRUE(*put);
  }
  Backend backend_;
  std::unique_ptr<Store> store_;
};

struct BackendNames {
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, SqliteBackend> ? "Sqlite" : "Postgres";
  }
};
using Backends = ::testing::Types<SqliteBackend, PostgresBackend>;
TYPED_TEST_SUITE(StoreTest, Backends, BackendNames);

TYPED_TEST(StoreTest, OpensAtTheLatestSchemaAndReopensWithoutLosingData) {
  auto v = this->store_->SchemaVersion();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, LatestSchemaVersion());
  EXPECT_GE(LatestSchemaVersion(), 2);
  this->Put(SampleResult("node-a", "acceptance", "run-1", kT0));
  this->store_.reset();
  auto again = this->OpenStore();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(*again->SchemaVersion(), LatestSchemaVersion());
  auto results = again->Results({});
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  ASSERT_EQ(results->size(), 1u);
  EXPECT_EQ((*results)[0].key.node, "node-a");
}

TYPED_TEST(StoreTest, AnOlderDatabaseIsMigratedInOrderAndANewerOneIsRefused) {
  this->Put(SampleResult("node-a", "acceptance", "run-1", kT0));
  this->store_.reset();
  // The database as the schema's first version left it.
  this->backend_.Exec(
      "DROP TABLE baseline_values; DROP TABLE baselines; "
      "DELETE FROM schema_version WHERE version >= 2");
  auto migrated = this->OpenStore();
  ASSERT_NE(migrated, nullptr);
  EXPECT_EQ(*migrated->SchemaVersion(), LatestSchemaVersion());
  EXPECT_EQ(migrated->Results({})->size(), 1u);
  ResultQuery all;
  auto b = migrated->CreateBaseline("after-migration", all, "everything", 0);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  migrated.reset();

  this->backend_.Exec("INSERT INTO schema_version (version) VALUES (999)");
  auto newer = Open(this->backend_.Url());
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(newer.status().message(), HasSubstr("schema version 999"));
  EXPECT_THAT(newer.status().message(), HasSubstr("upgrade perfgate"));
}

TYPED_TEST(StoreTest, AResultStoredTwiceIsStoredOnce) {
  const NodeResult r = SampleResult("node-a", "acceptance", "run-1", kT0);
  this->Put(r);
  auto second = this->store_->Put(r);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_FALSE(*second);
  EXPECT_EQ(this->store_->Results({})->size(), 1u);
  auto metrics = this->store_->Metrics({});
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  EXPECT_EQ(static_cast<int>(metrics->size()), SampleMetricCount({}));
  // The same node in another run is another result.
  this->Put(SampleResult("node-a", "acceptance", "run-2", kT0 + 60));
  EXPECT_EQ(this->store_->Results({})->size(), 2u);
}

TYPED_TEST(StoreTest, KeepsSummariesSamplesVerdictsAndIdentity) {
  const NodeResult r = SampleResult("node-a", "acceptance", "run-1", kT0);
  this->Put(r);
  MetricQuery q;
  q.node = "node-a";
  q.test = "host-stream";
  q.metric = "triadBandwidthGBps";
  auto got = this->store_->Metrics(q);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  const MetricRecord& m = (*got)[0];
  const auto& want = r.report.tests(0).metrics(0);
  EXPECT_EQ(m.key, r.key);
  EXPECT_EQ(m.profile, "h200-sxm-141gb");
  EXPECT_EQ(m.profile_version, "3");
  EXPECT_EQ(m.gpu_model, "NVIDIA H200");
  EXPECT_EQ(m.time_ms, kT0 * 1000);
  EXPECT_EQ(m.device, "host");
  EXPECT_EQ(m.test_verdict, "PASS");
  EXPECT_EQ(m.unit, "GB/s");
  EXPECT_TRUE(m.higher_is_better);
  EXPECT_EQ(m.summary.n(), want.summary().n());
  EXPECT_DOUBLE_EQ(m.summary.median(), want.summary().median());
  EXPECT_DOUBLE_EQ(m.summary.p05(), want.summary().p05());
  EXPECT_DOUBLE_EQ(m.summary.max(), want.summary().max());
  // Samples come back bit for bit.
  ASSERT_EQ(m.samples.size(), static_cast<std::size_t>(want.samples_size()));
  for (int i = 0; i < want.samples_size(); ++i) EXPECT_EQ(m.samples[i], want.samples(i));

  auto results = this->store_->Results({});
  ASSERT_TRUE(results.ok());
  const ResultRecord& rr = (*results)[0];
  EXPECT_EQ(rr.verdict, "PASS");
  EXPECT_EQ(rr.identity.at("gpu0.uuid"), "GPU-node-a-0");
  EXPECT_EQ(rr.identity.at("gpu1.pciBusId"), "00000000:18:00.0");
  EXPECT_EQ(rr.identity.at("gpu0.vbios"), "96.00.AF.00.01");
  EXPECT_EQ(rr.identity.at("gpu0.powerLimitW"), "700");
  EXPECT_EQ(rr.identity.at("gpu0.eccMode"), "Enabled");
  EXPECT_EQ(rr.identity.at("driverVersion"), "570.86.15");
  EXPECT_EQ(rr.identity.at("cudaVersion"), "12.8");
  EXPECT_EQ(rr.identity.at("ncclVersion"), "2.25.1");
  EXPECT_EQ(rr.identity.at("kernel"), "6.1.0-28-amd64");
  EXPECT_EQ(rr.identity.at("cpuModel"), "AMD EPYC 9654 96-Core Processor");
  EXPECT_EQ(rr.identity.at("gpusCount"), "2");
}

TYPED_TEST(StoreTest, HistoryOfANodeIsItsNewestResultsForOneMetric) {
  for (int i = 0; i < 5; ++i) {
    this->Put(SampleResult("node-a", "acceptance", "run-" + std::to_string(i), kT0 + i * kDay));
    this->Put(SampleResult("node-b", "acceptance", "run-" + std::to_string(i), kT0 + i * kDay));
  }
  SampleShape other;
  other.profile = "h100-sxm-80gb";
  this->Put(SampleResult("node-a", "other-profile", "run-9", kT0 + 9 * kDay, other));
  MetricQuery q;
  q.node = "node-a";
  q.profile = "h200-sxm-141gb";
  q.test = "gemm";
  q.device = "gpu1";
  q.metric = "metric2";
  q.latest_results = 3;
  auto got = this->store_->Metrics(q);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  std::vector<std::string> runs;
  for (const auto& m : *got) {
    runs.push_back(m.key.run);
    EXPECT_EQ(m.key.node, "node-a");
    EXPECT_EQ(m.metric, "metric2");
    EXPECT_DOUBLE_EQ(m.summary.median(), 1020);
  }
  EXPECT_THAT(runs, ElementsAre("run-4", "run-3", "run-2"));
}

TYPED_TEST(StoreTest, FleetOfAGpuModelAndResultsOfAValidationInATimeRange) {
  SampleShape h100;
  h100.gpu_model = "NVIDIA H100 80GB HBM3";
  for (int i = 0; i < 4; ++i) {
    const std::string node = "node-" + std::to_string(i);
    this->Put(SampleResult(node, "june", "r1", kT0 + i));
    this->Put(SampleResult(node + "-h100", "june", "r1", kT0 + i, h100));
    this->Put(SampleResult(node, "july", "r1", kT0 + 30 * kDay + i));
  }
  MetricQuery fleet;
  fleet.gpu_model = "NVIDIA H200";
  fleet.test = "host-stream";
  fleet.metric = "copyBandwidthGBps";
  auto got = this->store_->Metrics(fleet);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->size(), 8u);  // 4 nodes x 2 validations, no H100
  for (const auto& m : *got) EXPECT_EQ(m.gpu_model, "NVIDIA H200");

  ResultQuery june;
  june.validation = "june";
  EXPECT_EQ(this->store_->Results(june)->size(), 8u);
  ResultQuery range;
  range.since_ms = (kT0 + 30 * kDay) * 1000;
  range.until_ms = (kT0 + 30 * kDay + 2) * 1000;
  auto in_range = this->store_->Results(range);
  ASSERT_TRUE(in_range.ok());
  ASSERT_EQ(in_range->size(), 2u);
  EXPECT_EQ((*in_range)[0].key.node, "node-1");  // newest first
  EXPECT_EQ((*in_range)[1].key.node, "node-0");
}

TYPED_TEST(StoreTest, RetentionDropsByAgeAndByCountPerNode) {
  for (int i = 0; i < 6; ++i) {
    this->Put(SampleResult("node-a", "v", "run-" + std::to_string(i), kT0 + i * kDay));
  }
  this->Put(SampleResult("node-b", "v", "run-0", kT0 + 5 * kDay - 1));
  const int64_t now = (kT0 + 6 * kDay) * 1000;
  Retention by_age;
  by_age.max_age_ms = 4 * kDay * 1000 + 1;  // keeps run-2 .. run-5 of node-a
  auto pruned = this->store_->Prune(by_age, now);
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  EXPECT_EQ(*pruned, 2);
  Retention by_count;
  by_count.keep_per_node = 2;
  pruned = this->store_->Prune(by_count, now);
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  EXPECT_EQ(*pruned, 2);
  std::vector<std::string> left;
  auto remaining = this->store_->Results({});
  ASSERT_TRUE(remaining.ok()) << remaining.status().ToString();
  for (const auto& r : *remaining) left.push_back(r.key.node + "/" + r.key.run);
  EXPECT_THAT(left, ElementsAre("node-a/run-5", "node-b/run-0", "node-a/run-4"));
  // Their metrics went with them.
  EXPECT_EQ(static_cast<int>(this->store_->Metrics({})->size()), 3 * SampleMetricCount({}));
}

TYPED_TEST(StoreTest, ABaselineIsAFrozenMedianPerModelTestMetricAndStatistic) {
  SampleShape slow;
  slow.scale = 0.9;
  SampleShape fast;
  fast.scale = 1.1;
  this->Put(SampleResult("node-0", "golden", "r1", kT0, slow));
  this->Put(SampleResult("node-1", "golden", "r1", kT0));
  this->Put(SampleResult("node-2", "golden", "r1", kT0, fast));
  this->Put(SampleResult("node-3", "later", "r1", kT0 + kDay, slow));
  ResultQuery from;
  from.validation = "golden";
  auto b = this->store_->CreateBaseline("h200-june", from, "validation golden", kT0 * 1000);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  // Two host metrics + 3 gemm metrics, 6 statistics each.
  EXPECT_EQ(b->values.size(), 5u * 6u);

  auto again = this->store_->CreateBaseline("h200-june", from, "validation golden", kT0 * 1000);
  EXPECT_EQ(again.status().code(), Code::kAlreadyExists);
  // Results stored later change nothing in it.
  this->Put(SampleResult("node-4", "golden", "r2", kT0 + 2 * kDay, slow));

  auto shown = this->store_->GetBaseline("h200-june");
  ASSERT_TRUE(shown.ok()) << shown.status().ToString();
  EXPECT_EQ(shown->source, "validation golden");
  const BaselineValue* triad = nullptr;
  const BaselineValue* gemm = nullptr;
  for (const auto& v : shown->values) {
    if (v.test == "host-stream" && v.metric == "triadBandwidthGBps" && v.statistic == "median")
      triad = &v;
    if (v.test == "gemm" && v.metric == "metric1" && v.statistic == "p05") gemm = &v;
  }
  ASSERT_NE(triad, nullptr);
  EXPECT_EQ(triad->gpu_model, "NVIDIA H200");
  EXPECT_EQ(triad->profile_version, "3");
  EXPECT_DOUBLE_EQ(triad->value, 300);  // median of 270, 300, 330
  EXPECT_EQ(triad->count, 3);
  EXPECT_DOUBLE_EQ(triad->low, 270);
  EXPECT_DOUBLE_EQ(triad->high, 330);
  ASSERT_NE(gemm, nullptr);
  EXPECT_DOUBLE_EQ(gemm->value, 1010 * 0.993);  // the median of 3 nodes x 2 GPUs
  EXPECT_EQ(gemm->count, 6);

  EXPECT_THAT(*this->store_->ListBaselines(), ElementsAre("h200-june"));
  EXPECT_TRUE(*this->store_->DeleteBaseline("h200-june"));
  EXPECT_EQ(this->store_->GetBaseline("h200-june").status().code(), Code::kNotFound);
  ResultQuery nothing;
  nothing.validation = "no-such";
  EXPECT_EQ(this->store_->CreateBaseline("x", nothing, "validation no-such", 0).status().code(),
            Code::kFailedPrecondition);
}

TYPED_TEST(StoreTest, ASpooledResultIsWrittenOnceTheStoreIsThere) {
  const fs::path dir = TempDir("spool");
  Spool spool((dir / "spool").string());
  Status why;
  auto first = PutOrSpool(nullptr, spool, SampleResult("node-a", "v", "r1", kT0), &why);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, Stored::kSpooled);
  EXPECT_EQ(spool.Pending(), 1);
  auto second =
      PutOrSpool(this->store_.get(), spool, SampleResult("node-a", "v", "r2", kT0 + 1), &why);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*second, Stored::kWritten);
  EXPECT_EQ(spool.Pending(), 0);
  EXPECT_EQ(this->store_->Results({})->size(), 2u);
  fs::remove_all(dir);
}

// --- Outages -------------------------------------------------------------------------------

// Every stored result is whole: all its metric summaries are there.
void ExpectWhole(Store& store, int results) {
  auto stored = store.Results({});
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(static_cast<int>(stored->size()), results);
  auto metrics = store.Metrics({});
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  EXPECT_EQ(static_cast<int>(metrics->size()), results * SampleMetricCount({}));
}

TEST(SqliteOutage, AFullDiskIsAClearErrorAndNothingIsLostOnceThereIsSpace) {
  const fs::path dir = TempDir("full");
  const std::string path = (dir / "results.db").string();
  Spool spool((dir / "spool").string());
  int results = 0, spooled = 0;
  Status why;
  {
    // A cap of 160 KiB fills after a few dozen results.
    auto capped = Open("sqlite://" + path + "?max_size_mb=0.15625");
    ASSERT_TRUE(capped.ok()) << capped.status().ToString();
    for (int i = 0; i < 200 && spooled < 3; ++i) {
      auto put = PutOrSpool(capped->get(), spool,
                            SampleResult("node-" + std::to_string(i), "v", "r1", kT0 + i), &why);
      ASSERT_TRUE(put.ok()) << put.status().ToString();
      ++results;
      if (*put == Stored::kSpooled) ++spooled;
    }
    ASSERT_EQ(spooled, 3) << "the capped store never filled";
    EXPECT_EQ(why.code(), Code::kResourceExhausted);
    EXPECT_THAT(why.message(), HasSubstr("full"));
    EXPECT_THAT(why.message(), HasSubstr("storing node-"));
    EXPECT_EQ(spool.Pending(), 3);
    // What did go in is whole; the refused result left nothing behind.
    ExpectWhole(**capped, results - spooled);
  }
  // Space returns (no cap): the next write brings in the spooled ones first.
  auto roomy = Open("sqlite://" + path);
  ASSERT_TRUE(roomy.ok()) << roomy.status().ToString();
  auto put = PutOrSpool(roomy->get(), spool, SampleResult("node-late", "v", "r1", kT0 + 999), &why);
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(*put, Stored::kWritten);
  EXPECT_EQ(spool.Pending(), 0);
  ExpectWhole(**roomy, results + 1);
  fs::remove_all(dir);
}

int PgCtl(const std::string& action) {
  const char* ctl = std::getenv("PERFGATE_TEST_PG_CTL");
  if (ctl == nullptr) {
    ADD_FAILURE() << "PERFGATE_TEST_PG_CTL is not set: run through tests/store/with-postgres.sh";
    return -1;
  }
  return std::system((std::string(ctl) + " " + action).c_str());
}

TEST(PostgresOutage, AServerStoppedMidRunCatchesUpWhenItReturnsWithNothingLost) {
  PostgresBackend pg;
  ASSERT_FALSE(pg.database.empty());
  auto opened = Open(pg.Url());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Store& store = **opened;
  const fs::path dir = TempDir("pg-spool");
  Spool spool((dir / "spool").string());
  Status why;
  auto put = [&](int i) {
    return PutOrSpool(&store, spool, SampleResult("node-" + std::to_string(i), "v", "r1", kT0 + i),
                      &why);
  };
  ASSERT_EQ(*put(0), Stored::kWritten);
  ASSERT_EQ(*put(1), Stored::kWritten);

  ASSERT_EQ(PgCtl("stop"), 0);
  for (int i = 2; i < 5; ++i) {
    auto r = put(i);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, Stored::kSpooled);
  }
  EXPECT_EQ(why.code(), Code::kUnavailable);
  EXPECT_THAT(why.message(), HasSubstr("postgresql:"));
  EXPECT_EQ(spool.Pending(), 3);

  ASSERT_EQ(PgCtl("start"), 0);
  // The same store object reconnects; the spooled results go in before the new one.
  auto back = put(5);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, Stored::kWritten);
  EXPECT_EQ(spool.Pending(), 0);
  ExpectWhole(store, 6);
  // Draining again writes nothing twice.
  EXPECT_EQ(*put(5), Stored::kAlreadyStored);
  ExpectWhole(store, 6);
  fs::remove_all(dir);
}

TEST(PostgresOutage, OpeningAnUnreachableServerSaysWhichAndWhy) {
  auto s = Open("postgresql://perfgate@127.0.0.1:1/nothing?connect_timeout=2");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kUnavailable);
  EXPECT_THAT(s.status().message(), HasSubstr("127.0.0.1"));
}

TEST(StoreUrl, UnknownSchemesAndOptionsAreRefused) {
  EXPECT_EQ(Open("mysql://db/x").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Open("sqlite:///tmp/x.db?cache=huge").status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace perfgate::store
