// The operator's /metrics page: what a Prometheus scrape of it reads.
#include "operator/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace perfgate::op {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

Json NodeWithVerdict(const std::string& name, const std::string& verdict, const std::string& by) {
  Json n = {{"metadata", {{"name", name}}}};
  if (!verdict.empty()) {
    n["metadata"]["labels"]["perfgate.io/verdict"] = verdict;
    n["metadata"]["annotations"]["perfgate.io/verdict-by"] = by;
  }
  return n;
}

MetricsSnapshot Fleet() {
  MetricsSnapshot s;
  s.reconciles = 12;
  s.reconcileErrors = 1;
  s.podsCreated = 4;
  s.queueDepth = 2;
  s.leading = true;
  s.validations = {{{"status", {{"verdict", "Passed"}}}},
                   {{"status", {{"verdict", "Failed"}}}},
                   {{"status", {{"verdict", "InvalidSpec"}}}},
                   {{"metadata", {{"name", "new"}}}}};  // no status yet: Running
  s.nodes = {NodeWithVerdict("node-0", "passed", "smoke"),
             NodeWithVerdict("node-1", "failed", "slow"),
             NodeWithVerdict("node-2", "passed", "smoke"), NodeWithVerdict("cpu-0", "", "")};
  return s;
}

TEST(Metrics, CountersAndGaugesByVerdict) {
  const std::string text = RenderMetrics(Fleet());
  EXPECT_THAT(text,
              HasSubstr("# TYPE perfgate_reconcile_total counter\nperfgate_reconcile_total 12\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_reconcile_errors_total 1\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_worker_pods_created_total 4\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_workqueue_depth 2\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_validations{verdict=\"Passed\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_validations{verdict=\"Failed\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_validations{verdict=\"Running\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_validations{verdict=\"Suspended\"} 0\n"));
  // Each way of not passing is its own series, so an ERROR is not counted as a FAIL.
  EXPECT_THAT(text, HasSubstr("perfgate_validations{verdict=\"InvalidSpec\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_validations{verdict=\"Error\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_validations{verdict=\"Inconclusive\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_nodes{verdict=\"passed\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_nodes{verdict=\"failed\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_nodes{verdict=\"error\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_leader 1\n"));
  // Bounded cardinality unless asked: no node names.
  EXPECT_THAT(text, Not(HasSubstr("node-0")));
}

TEST(Metrics, PerNodeSeriesOnlyBehindTheFlag) {
  MetricsSnapshot s = Fleet();
  s.perNode = true;
  s.nodes.push_back(NodeWithVerdict("odd\"name", "error", "a\\b"));
  const std::string text = RenderMetrics(s);
  EXPECT_THAT(text, HasSubstr("# TYPE perfgate_node_verdict gauge\n"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "perfgate_node_verdict{node=\"node-1\",verdict=\"failed\",validation=\"slow\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_node_verdict{node=\"odd\\\"name\",verdict=\"error\","
                              "validation=\"a\\\\b\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("node=\"cpu-0\"")));  // never tested by perfgate
}

}  // namespace
}  // namespace perfgate::op
