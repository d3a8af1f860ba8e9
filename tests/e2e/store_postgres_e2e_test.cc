// The operator recording into a real PostgreSQL server (docs/store.md, "In a cluster"): CTest's
// e2e_postgres runs this under tests/store/with-postgres.sh, which starts the server and gives
// PERFGATE_TEST_PG (a libpq connection string) and PERFGATE_TEST_PG_CTL (stop | start). Run
// alone, without a server, it is skipped; e2e_postgres fails, never skips, without one.
#include <cstdlib>

#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

TEST_F(E2E, PostgresStoreRecordsFlagsRegressionsAndCatchesUpAfterAnOutage) {
  const char* dsn = std::getenv("PERFGATE_TEST_PG");
  const char* ctl = std::getenv("PERFGATE_TEST_PG_CTL");
  if (dsn == nullptr || ctl == nullptr) {
    GTEST_SKIP() << "needs a PostgreSQL server: ctest -L postgres (tests/store/with-postgres.sh)";
  }
  const std::string url = std::string("postgresql:") + dsn;
  const std::string spool = sim_->workDir() + "/spool";
  // As the chart runs it: --store=postgres, the URL from $PERFGATE_STORE_DSN.
  ASSERT_EQ(setenv("PERFGATE_STORE_DSN", url.c_str(), 1), 0);
  op_.Kill(SIGTERM);
  op_.Start(*sim_, {"--store=postgres", "--cluster-name=e2e-pg", "--store-spool-dir=" + spool,
                    "--store-retry-seconds=1"});
  unsetenv("PERFGATE_STORE_DSN");
  auto stored = [&](const std::string& run) {
    auto store = store::Open(url);
    if (!store.ok()) return std::vector<store::ResultRecord>{};
    store::ResultQuery q;
    q.cluster = "e2e-pg";
    q.validation = "pg";
    q.run = run;
    auto got = (*store)->Results(q);
    return got.ok() ? *got : std::vector<store::ResultRecord>{};
  };
  // Applies `yaml` (a new generation of "pg") and waits for its new run to complete.
  auto run_again = [&](const std::string& yaml) {
    const std::string before = Validation("pg")["status"].value("run", "");
    Apply(yaml);
    return Eventually(
        [&] {
          const Json st = Validation("pg")["status"];
          return st.value("run", "") != before && !st.value("completionTime", "").empty();
        },
        90);
  };

  // A first run: every result recorded in PostgreSQL.
  Apply(SyntheticSpec("pg", ""));
  ASSERT_TRUE(WaitComplete("pg"));
  Json v = Validation("pg");
  const std::string first = v["status"].value("run", "");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "True") << v.dump(2);
  ASSERT_TRUE(Eventually([&] { return stored(first).size() == 4; }, 30));
  for (const auto& r : stored(first)) EXPECT_EQ(r.verdict, "PASS") << r.key.node;
  EXPECT_EQ(Condition(v, "Recorded").value("status", ""), "True") << v.dump(2);

  // node-2 8% slower, still above its bound of 90: PASS, and listed against its history (read
  // from PostgreSQL) and its peers, as with SQLite.
  ASSERT_TRUE(run_again(SyntheticSpec("pg", "node-2=92")));
  v = Validation("pg");
  EXPECT_EQ(v["status"].value("passedNodes", ""), "4/4") << v.dump(2);
  EXPECT_EQ(Condition(v, "Regressed").value("status", ""), "True") << v.dump(2);
  std::set<std::string> against;
  for (const auto& r : v["status"].value("regressions", Json::array())) {
    EXPECT_EQ(r.value("node", ""), "node-2") << r.dump();
    EXPECT_NEAR(r.value("ratio", 0.0), 0.92, 0.02) << r.dump();
    EXPECT_LT(r.value("high", 1.0), 0.97) << r.dump();
    against.insert(r.value("against", ""));
  }
  EXPECT_EQ(against, (std::set<std::string>{"history", "peers"})) << v.dump(2);
  const std::string second = v["status"].value("run", "");
  ASSERT_TRUE(Eventually([&] { return stored(second).size() == 4; }, 30));

  // The server stops: the next run still completes and passes; its results wait in the spool.
  ASSERT_EQ(std::system((std::string(ctl) + " stop").c_str()), 0);
  ASSERT_TRUE(run_again(SyntheticSpec("pg", "", "    onFailure: none\n")));
  v = Validation("pg");
  const std::string third = v["status"].value("run", "");
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "True") << v.dump(2);
  EXPECT_TRUE(Eventually(
      [&] {
        const Json c = Condition(Validation("pg"), "Recorded");
        return c.value("status", "") == "False" && c.value("reason", "") == "StoreUnavailable";
      },
      30))
      << Validation("pg").dump(2);

  // It starts again: the spool is written, Recorded turns True, nothing is lost or doubled.
  ASSERT_EQ(std::system((std::string(ctl) + " start").c_str()), 0);
  ASSERT_TRUE(Eventually(
      [&] { return Condition(Validation("pg"), "Recorded").value("status", "") == "True"; }, 60))
      << Validation("pg").dump(2);
  EXPECT_EQ(stored(third).size(), 4u);
  EXPECT_EQ(stored(first).size() + stored(second).size(), 8u);
  auto events = Kubectl(*sim_, {"get", "events", "-n", "default", "-o", "json"});
  EXPECT_NE(events.out.find("StoreUnavailable"), std::string::npos);
  EXPECT_NE(events.out.find("StoreRecovered"), std::string::npos);
}

}  // namespace
}  // namespace perfgate::e2e
