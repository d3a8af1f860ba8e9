// The operator's /metrics page: what a Prometheus scrape of it reads.
#include "operator/runtime/metrics.h"

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
  s.reconcile_errors = 1;
  s.pods_created = 4;
  s.queue_depth = 2;
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
  // Whether results are kept: 0 with --store=off.
  EXPECT_THAT(text, HasSubstr("# TYPE perfgate_store_enabled gauge\nperfgate_store_enabled 0\n"));
  MetricsSnapshot stored = Fleet();
  stored.store_enabled = true;
  EXPECT_THAT(RenderMetrics(stored), HasSubstr("perfgate_store_enabled 1\n"));
  // Bounded cardinality unless asked: no node names.
  EXPECT_THAT(text, Not(HasSubstr("node-0")));
}

// What yielding cost per validation, beside the GPU time its workers used: summed over its
// nodes' status.yields, the longest wait the longest of theirs; nothing for validations that
// never yielded or measured.
TEST(Metrics, YieldCostsAndGpuTimeUsedPerValidation) {
  MetricsSnapshot s = Fleet();
  s.validations.push_back(Json::parse(R"({"metadata": {"name": "idle"},
    "status": {"verdict": "Passed", "gpuSeconds": 96.5, "yields": {
      "node-0": {"count": 2, "lostGpuSeconds": 16, "longestWaitSeconds": 1.5},
      "node-1": {"count": 1, "lostGpuSeconds": 8, "longestWaitSeconds": 3}}}})"));
  const std::string text = RenderMetrics(s);
  EXPECT_THAT(text, HasSubstr("perfgate_validation_gpu_seconds{validation=\"idle\"} 96.5\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_validation_yields{validation=\"idle\"} 3\n"));
  EXPECT_THAT(text,
              HasSubstr("perfgate_validation_yield_lost_gpu_seconds{validation=\"idle\"} 24\n"));
  EXPECT_THAT(text,
              HasSubstr("perfgate_validation_yield_longest_wait_seconds{validation=\"idle\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_node_yields{validation=\"idle\",node=\"node-0\"} 2\n"));
  EXPECT_THAT(RenderMetrics(Fleet()), Not(HasSubstr("perfgate_validation_gpu_seconds{")));
  EXPECT_THAT(RenderMetrics(Fleet()), Not(HasSubstr("perfgate_validation_yields{")));
}

TEST(Metrics, PerNodeSeriesOnlyBehindTheFlag) {
  MetricsSnapshot s = Fleet();
  s.per_node = true;
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

Json Validation(const std::string& name, const Json& status) {
  return {{"metadata", {{"name", name}}}, {"status", status}};
}

TEST(Metrics, ProgressVerdictAndTimesPerValidation) {
  MetricsSnapshot s;
  s.validations = {Validation("nightly", {{"verdict", "Running"},
                                          {"nodes", 8},
                                          {"passed", 2},
                                          {"failed", 1},
                                          {"pending", 5},
                                          {"startTime", "2026-12-01T10:00:00Z"}}),
                   Validation("acceptance", {{"verdict", "Failed"},
                                             {"nodes", 2},
                                             {"passed", 1},
                                             {"errors", 1},
                                             {"startTime", "2026-12-01T09:00:00Z"},
                                             {"completionTime", "2026-12-01T09:30:00Z"}})};
  const std::string text = RenderMetrics(s);
  EXPECT_THAT(text,
              HasSubstr("perfgate_validation_nodes{validation=\"nightly\",state=\"pending\"} 5\n"));
  EXPECT_THAT(text,
              HasSubstr("perfgate_validation_nodes{validation=\"nightly\",state=\"passed\"} 2\n"));
  EXPECT_THAT(text,
              HasSubstr("perfgate_validation_nodes{validation=\"nightly\",state=\"failed\"} 1\n"));
  EXPECT_THAT(
      text, HasSubstr("perfgate_validation_nodes{validation=\"acceptance\",state=\"error\"} 1\n"));
  // Every verdict is a series, 1 for the current one: a change leaves no stale 1 behind.
  EXPECT_THAT(
      text,
      HasSubstr("perfgate_validation_verdict{validation=\"nightly\",verdict=\"Running\"} 1\n"));
  EXPECT_THAT(
      text,
      HasSubstr("perfgate_validation_verdict{validation=\"nightly\",verdict=\"Passed\"} 0\n"));
  EXPECT_THAT(
      text,
      HasSubstr("perfgate_validation_verdict{validation=\"acceptance\",verdict=\"Failed\"} 1\n"));
  // 2026-12-01T10:00:00Z and 09:30:00Z in seconds since the epoch.
  EXPECT_THAT(
      text,
      HasSubstr(
          "perfgate_validation_start_timestamp_seconds{validation=\"nightly\"} 1796119200\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_validation_completion_timestamp_seconds{validation="
                              "\"acceptance\"} 1796117400\n"));
  EXPECT_THAT(
      text,
      Not(HasSubstr("perfgate_validation_completion_timestamp_seconds{validation=\"nightly\"}")));
}

// A PerfResult as the cache keeps it with figures: one HBM threshold per GPU.
Json Result(const std::string& node, const std::string& done, std::vector<double> triad,
            const std::string& validation = "fleet") {
  Json tests = Json::array();
  for (size_t gpu = 0; gpu < triad.size(); ++gpu) {
    const bool pass = triad[gpu] >= 3000;
    tests.push_back({{"name", "hbm"},
                     {"type", "hbm-stream"},
                     {"device", "gpu" + std::to_string(gpu)},
                     {"verdict", pass ? "PASS" : "FAIL"},
                     {"thresholds",
                      {{{"threshold",
                         {{"metric", "triadBandwidthGBps"}, {"statistic", "median"}, {"op", ">="}}},
                        {"bound", 3000},
                        {"observed", triad[gpu]},
                        {"verdict", pass ? "PASS" : "FAIL"}}}}});
  }
  return {{"kind", "PerfResult"},
          {"metadata", {{"name", validation + "-" + node}}},
          {"spec",
           {{"nodeName", node},
            {"validation", validation},
            {"run", "g1"},
            {"report",
             {{"verdict", "PASS"},
              {"identity", {{"gpus", {{{"name", "NVIDIA H200"}}}}}},
              {"startTime", "2026-12-01T10:00:00Z"},
              {"completionTime", done},
              {"tests", tests}}}}}};
}

TEST(Metrics, ARollingValidationsOverdueCountAndEachNodesTimes) {
  MetricsSnapshot s;
  s.validations = {
      Validation("weekly", {{"verdict", "Passed"},
                            {"rolling",
                             {{"period", "7d"},
                              {"currentNodes", 1},
                              {"overdueNodes", 1},
                              {"nodes",
                               {{"node-0",
                                 {{"lastValidated", "2026-12-01T10:00:00Z"},
                                  {"nextDue", "2026-12-08T10:00:00Z"},
                                  {"lastVerdict", "PASS"}}},
                                {"node-1", {{"nextDue", "2026-11-30T09:30:00Z"}}}}}}}}),
      Validation("once", {{"verdict", "Passed"}})};
  const std::string text = RenderMetrics(s);
  EXPECT_THAT(text, HasSubstr("perfgate_validation_overdue_nodes{validation=\"weekly\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_node_rolling_validated_timestamp_seconds{validation="
                              "\"weekly\",node=\"node-0\"} 1796119200\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_node_validation_due_timestamp_seconds{validation="
                              "\"weekly\",node=\"node-0\"} 1796724000\n"));
  // Never validated: due, but no last time.
  EXPECT_THAT(text, HasSubstr("perfgate_node_validation_due_timestamp_seconds{validation="
                              "\"weekly\",node=\"node-1\"} 1796031000\n"));
  EXPECT_THAT(text, Not(HasSubstr("perfgate_node_rolling_validated_timestamp_seconds{validation="
                                  "\"weekly\",node=\"node-1\"}")));
  // A validation without spec.rolling has none of these series.
  EXPECT_THAT(text, Not(HasSubstr("validation=\"once\",node=")));
  EXPECT_THAT(text, Not(HasSubstr("perfgate_validation_overdue_nodes{validation=\"once\"}")));
}

TEST(Metrics, PerNodeFiguresFromEachNodesLatestResult) {
  MetricsSnapshot s;
  s.per_node = true;
  s.results = {Result("node-0", "2026-12-01T10:05:00Z", {4100, 4120}),
               // An older run of node-1 failed; its latest passed: only the latest counts.
               Result("node-1", "2026-11-01T10:05:00Z", {2500, 4100}, "old"),
               Result("node-1", "2026-12-01T10:02:30Z", {4090, 4105})};
  const std::string text = RenderMetrics(s);
  EXPECT_THAT(text,
              HasSubstr("perfgate_node_figure{node=\"node-0\",device=\"gpu1\",test=\"hbm\","
                        "metric=\"triadBandwidthGBps\",statistic=\"median\",op=\">=\"} 4120\n"));
  EXPECT_THAT(text,
              HasSubstr("perfgate_node_figure_bound{node=\"node-0\",device=\"gpu1\",test=\"hbm\","
                        "metric=\"triadBandwidthGBps\",statistic=\"median\",op=\">=\"} 3000\n"));
  EXPECT_THAT(text,
              HasSubstr("perfgate_node_figure{node=\"node-1\",device=\"gpu0\",test=\"hbm\","
                        "metric=\"triadBandwidthGBps\",statistic=\"median\",op=\">=\"} 4090\n"));
  EXPECT_THAT(text, Not(HasSubstr("2500")));
  EXPECT_THAT(text,
              HasSubstr("perfgate_node_test_verdict{node=\"node-1\",device=\"gpu0\",test=\"hbm\","
                        "verdict=\"PASS\"} 1\n"));
  EXPECT_THAT(
      text,
      HasSubstr("perfgate_node_last_validated_timestamp_seconds{node=\"node-1\"} 1796119350\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_node_run_seconds{node=\"node-0\"} 300\n"));
  // A result the reader cannot take costs only its own node's series.
  Json odd = Result("node-9", "2026-12-01T10:05:00Z", {4000});
  odd["spec"]["report"]["tests"][0]["verdict"] = "NOT-A-VERDICT";
  s.results.push_back(odd);
  const std::string with_odd = RenderMetrics(s);
  EXPECT_THAT(with_odd, Not(HasSubstr("node=\"node-9\"")));
  EXPECT_THAT(with_odd, HasSubstr("perfgate_node_run_seconds{node=\"node-0\"} 300\n"));
  // No run id and no sample in any label.
  EXPECT_THAT(text, Not(HasSubstr("g1")));
  // Without the flag, none of it.
  s.per_node = false;
  EXPECT_THAT(RenderMetrics(s), Not(HasSubstr("perfgate_node_figure")));
}

TEST(Metrics, AFigureLaggingItsPeersIsMarkedWithItsRatio) {
  MetricsSnapshot s;
  s.per_node = true;
  for (int i = 0; i < 12; ++i) {
    const double triad = i == 7 ? 3600 : 4100 + i;  // node-7 passes, 12% below its peers
    s.results.push_back(Result("node-" + std::to_string(i), "2026-12-01T10:05:00Z", {triad}));
  }
  const std::string text = RenderMetrics(s);
  EXPECT_THAT(text, HasSubstr("perfgate_node_figure_lagging_ratio{node=\"node-7\",device=\"gpu0\","
                              "test=\"hbm\",metric=\"triadBandwidthGBps\",statistic=\"median\","
                              "op=\">=\"} 0.87"));
  EXPECT_THAT(text, Not(HasSubstr("perfgate_node_figure_lagging_ratio{node=\"node-6\"")));
}

// Nodes of one GPU model that ran the consistency screen: node-2's GPUs agree with each other,
// but its gemm-bf16 digest is not the one the other nodes computed.
TEST(Metrics, TheNodeWhoseDigestsDifferFromItsPeersIsFlagged) {
  MetricsSnapshot s;
  s.per_node = true;
  for (int i = 0; i < 5; ++i) {
    Json r = Result("node-" + std::to_string(i), "2026-12-01T10:05:00Z", {4100});
    r["spec"]["report"]["tests"].push_back(
        {{"name", "consistency"},
         {"type", "consistency"},
         {"device", "gpus0-7"},
         {"verdict", "PASS"},
         {"parameters", {{"gemmSize", "2048"}}},
         {"details",
          {{"digest.gemm-bf16", i == 2 ? "0x00000000000000bb" : "0x00000000000000aa"},
           {"digest.reduce-fp32", "0x00000000000000cc"}}}});
    s.results.push_back(r);
  }
  const std::string text = RenderMetrics(s);
  EXPECT_THAT(text, HasSubstr("perfgate_node_digest_mismatch{node=\"node-2\",test=\"consistency\","
                              "computation=\"gemm-bf16\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("perfgate_node_digest_mismatch{node=\"node-1\"")));
  EXPECT_THAT(text, Not(HasSubstr("computation=\"reduce-fp32\"")));
}

TEST(Metrics, RegressionsArePerNodeSeriesFromTheStatusListWithoutTheFlag) {
  MetricsSnapshot s;
  const Json row = {{"node", "node-2"},
                    {"against", "history"},
                    {"test", "hbm-stream"},
                    {"device", "gpu3"},
                    {"metric", "triadBandwidthGBps"},
                    {"ratio", 0.92},
                    {"low", 0.9},
                    {"high", 0.94}};
  Json peers = row;
  peers["against"] = "peers";
  peers["ratio"] = 0.93;
  s.validations = {
      Validation("nightly", {{"verdict", "Passed"}, {"regressions", Json::array({row, peers})}}),
      Validation("smoke", {{"verdict", "Passed"}})};
  const std::string text = RenderMetrics(s);  // perNode off: these are bounded by the status
  EXPECT_THAT(text,
              HasSubstr("perfgate_node_regression_ratio{validation=\"nightly\",node=\"node-2\","
                        "against=\"history\",test=\"hbm-stream\",metric=\"triadBandwidthGBps\"} "
                        "0.92\n"));
  EXPECT_THAT(text,
              HasSubstr("perfgate_node_regression_ratio{validation=\"nightly\",node=\"node-2\","
                        "against=\"peers\",test=\"hbm-stream\",metric=\"triadBandwidthGBps\"} "
                        "0.93\n"));
  EXPECT_THAT(text, HasSubstr("perfgate_node_regression_interval_high{validation=\"nightly\","
                              "node=\"node-2\",against=\"history\",test=\"hbm-stream\","
                              "metric=\"triadBandwidthGBps\"} 0.94\n"));
  EXPECT_THAT(text, Not(HasSubstr("validation=\"smoke\",node=")));
  EXPECT_THAT(text, Not(HasSubstr("device=\"gpu3\"")));
}

}  // namespace
}  // namespace perfgate::op
