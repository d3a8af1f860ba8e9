// The rolling period's parts that need no cluster: the period as spec.rolling.period spells it,
// the spec checks that make a validation InvalidSpec with the field named, and the order nodes
// take their turn in (never validated first, then the oldest verdict).
#include "operator/policy/rolling.h"

#include <gtest/gtest.h>

#include <google/protobuf/util/json_util.h>

#include <algorithm>

#include "common/labels.h"
#include "common/time.h"
#include "core/names.h"
#include "operator/reconcile/decide.h"
#include "tests/operator/status_schema.h"

namespace perfgate::op {
namespace {

using std::chrono::seconds;

v1alpha1::PerfValidationSpec Spec(const std::string& json) {
  v1alpha1::PerfValidationSpec spec;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &spec).ok()) << json;
  return spec;
}

TEST(RollingPeriod, ReadsUnitsAndSums) {
  EXPECT_EQ(*ParsePeriod("90s"), seconds(90));
  EXPECT_EQ(*ParsePeriod("15m"), seconds(900));
  EXPECT_EQ(*ParsePeriod("12h"), seconds(12 * 3600));
  EXPECT_EQ(*ParsePeriod("7d"), seconds(7 * 86400));
  EXPECT_EQ(*ParsePeriod("2w"), seconds(14 * 86400));
  EXPECT_EQ(*ParsePeriod("1d12h"), seconds(36 * 3600));
}

TEST(RollingPeriod, RefusesWhatIsNotADurationNamingTheField) {
  for (const char* bad : {"", "7", "d", "7x", "7d ", "-1d", "1.5d", "0s", "99999999999d"}) {
    auto p = ParsePeriod(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.status().message().find("spec.rolling.period"), std::string::npos)
        << p.status().message();
  }
}

TEST(RollingSpec, ChecksEachFieldAndWhatContradictsIt) {
  EXPECT_TRUE(CheckRolling(Spec("{}")).ok());
  EXPECT_FALSE(IsRolling(Spec("{}")));
  EXPECT_TRUE(CheckRolling(Spec(R"({"rolling": {"period": "7d", "maxConcurrent": 2}})")).ok());
  EXPECT_TRUE(CheckRolling(Spec(R"({"rolling": {"period": "7d", "maxConcurrent": 1},
                            "disruption": {"policy": "yield"}})"))
                  .ok());
  const std::pair<const char*, const char*> cases[] = {
      {R"({"rolling": {"maxConcurrent": 2}})", "spec.rolling.period"},
      {R"({"rolling": {"period": "7x", "maxConcurrent": 2}})", "spec.rolling.period"},
      {R"({"rolling": {"period": "7d"}})", "spec.rolling.maxConcurrent"},
      {R"({"rolling": {"period": "7d", "maxConcurrent": -1}})", "spec.rolling.maxConcurrent"},
      {R"({"rolling": {"period": "7d", "maxConcurrent": 2}, "schedule": "@daily"})",
       "spec.schedule"},
      {R"({"rolling": {"period": "7d", "maxConcurrent": 2}, "gang": {"shape": "all"}})",
       "spec.gang"},
      {R"({"rolling": {"period": "7d", "maxConcurrent": 2}, "disruption": {"policy": "drain"}})",
       "spec.disruption.policy"},
  };
  for (const auto& [json, field] : cases) {
    Status s = CheckRolling(Spec(json));
    ASSERT_FALSE(s.ok()) << json;
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_NE(s.message().find(field), std::string::npos) << json << ": " << s.message();
    EXPECT_FALSE(RollingOf(Spec(json)).has_value()) << json;
  }
  auto r = RollingOf(Spec(R"({"rolling": {"period": "1d12h", "maxConcurrent": 3}})"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->period, seconds(36 * 3600));
  EXPECT_EQ(r->max_concurrent, 3);
}

TEST(RollingOrder, NeverValidatedFirstThenOldest) {
  const Json status = {{"rolling",
                        {{"nodes",
                          {{"a", {{"lastValidated", "2026-12-03T10:00:00Z"}}},
                           {"b", {{"lastValidated", "2026-12-01T10:00:00Z"}}},
                           {"c", {{"nextDue", "2026-12-09T10:00:00Z"}}},
                           {"d", {{"lastValidated", "2026-12-02T10:00:00Z"}}}}}}}};
  std::vector<std::string> nodes = {"a", "b", "c", "d", "e"};
  OrderOldestFirst(status, &nodes);
  EXPECT_EQ(nodes, (std::vector<std::string>{"c", "e", "b", "d", "a"}));
}

const std::chrono::system_clock::time_point kT0 = *ParseRfc3339("2026-12-01T12:00:00Z");
const std::string kName = "weekly";

// Validation "weekly" (period 1h, two at a time) over its reconciles through Decide: what it
// observes, and its status as the last decision wrote it. Nothing else is remembered between
// reconciles, as after an operator restart.
struct World {
  Json spec = Json::parse(R"({
    "nodeSelector": {"nvidia.com/gpu.present": "true"},
    "sampling": {"warmup": 1, "minRepeats": 5, "maxRepeats": 20},
    "tests": [{"type": "hbm-stream"}],
    "rolling": {"period": "1h", "maxConcurrent": 2}})");
  std::map<std::string, Json> nodes;
  std::vector<Json> pods;
  std::vector<Json> results;
  Json status = Json::object();
  std::chrono::system_clock::time_point now = kT0;
  ReconcilerConfig config;

  explicit World(int n) {
    config.scheduling_timeout = seconds(300);
    config.worker_image = "ghcr.io/perfgate/perfgate-worker:test";
    for (int i = 0; i < n; ++i) {
      const std::string name = "node-" + std::to_string(i);
      nodes[name] = {
          {"metadata",
           {{"name", name},
            {"labels",
             {{"nvidia.com/gpu.present", "true"}, {"nvidia.com/gpu.product", "NVIDIA-H200"}}}}},
          {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}}}}};
    }
  }

  Snapshot Observe() const {
    Snapshot s;
    s.exists = true;
    s.validation = {
        {"apiVersion", "perfgate.io/v1alpha1"},
        {"kind", "PerfValidation"},
        {"metadata",
         {{"name", kName}, {"uid", "uid-1"}, {"generation", 1}, {"finalizers", {kFinalizer}}}},
        {"spec", spec},
        {"status", status}};
    s.name = kName;
    s.uid = "uid-1";
    s.run = RunId(1, "");
    s.has_finalizer = true;
    s.run_complete =
        status.value("run", "") == s.run && !status.value("completionTime", "").empty();
    auto parsed = ParseValidationObject(s.validation);
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
    if (parsed.ok()) s.spec = *parsed;
    s.nodes = nodes;
    for (const auto& p : pods) s.pods.push_back(ViewOfPod(p));
    s.results = results;
    return s;
  }

  // One reconcile, applied: pods created and deleted, results deleted, the status written.
  // Returns the nodes given a worker.
  std::vector<std::string> Step() {
    Decision d = op::Decide(Observe(), config, now);
    EXPECT_TRUE(d.retry.ok()) << d.retry.message();
    if (d.status) {
      EXPECT_TRUE(StatusFitsTheSchema(*d.status));
    }
    auto gone = [](const std::vector<std::string>& names, std::vector<Json>* objs) {
      std::erase_if(*objs, [&](const Json& o) {
        return std::find(names.begin(), names.end(), Name(o)) != names.end();
      });
    };
    gone(d.delete_pods, &pods);
    gone(d.delete_results, &results);
    std::vector<std::string> started;
    for (const auto& p : d.pods) {
      Json pod = p.pod;
      pod["status"] = {{"phase", "Running"}};
      pod["spec"]["nodeName"] = ViewOfPod(pod).node;
      started.push_back(ViewOfPod(pod).node);
      pods.push_back(pod);
    }
    if (d.status) status = *d.status;
    return started;
  }

  // The worker on `node` writes its PASS result; `exit`: and its pod ends.
  void Finish(const std::string& node, bool exit = true) {
    for (auto& p : pods) {
      const PodView v = ViewOfPod(p);
      if (v.node != node || v.terminal) continue;
      if (exit) p["status"]["phase"] = "Succeeded";
      results.push_back(
          {{"metadata",
            {{"name", v.name},
             {"creationTimestamp", FormatRfc3339(now)},
             {"labels",
              {{kValidationLabel, LabelValue(kName)}, {kNodeLabel, node}, {kRunLabel, v.run}}}}},
           {"spec",
            {{"validation", kName},
             {"nodeName", node},
             {"run", v.run},
             {"report",
              {{"verdict", "PASS"},
               {"tests", {{{"name", "hbm-stream"}, {"verdict", "PASS"}}}}}}}}});
    }
  }
  void EndPod(const std::string& node) {
    for (auto& p : pods) {
      if (ViewOfPod(p).node == node) p["status"]["phase"] = "Succeeded";
    }
  }
  Json Entry(const std::string& node) { return status["rolling"]["nodes"][node]; }
};

TEST(RollingDecide, AtMostMaxConcurrentThenDueNodesOldestFirstNoSooner) {
  World w(4);
  EXPECT_EQ(w.Step(), (std::vector<std::string>{"node-0", "node-1"}));
  EXPECT_TRUE(w.Step().empty()) << "a third worker while two run";
  // node-0's result is in but its pod has not ended: it still counts.
  w.now += seconds(60);
  w.Finish("node-0", /*exit=*/false);
  EXPECT_TRUE(w.Step().empty());
  EXPECT_EQ(w.Entry("node-0").value("lastValidated", ""), "2026-12-01T12:01:00Z");
  EXPECT_EQ(w.Entry("node-0").value("nextDue", ""), "2026-12-01T13:01:00Z");
  EXPECT_EQ(w.Entry("node-0").value("lastVerdict", ""), "PASS");
  w.EndPod("node-0");
  EXPECT_EQ(w.Step(), (std::vector<std::string>{"node-2"}));
  w.now += seconds(60);
  w.Finish("node-1");
  EXPECT_EQ(w.Step(), (std::vector<std::string>{"node-3"}));
  w.now += seconds(60);
  w.Finish("node-3");
  w.now += seconds(60);
  w.Finish("node-2");
  EXPECT_TRUE(w.Step().empty());
  ASSERT_FALSE(w.status.value("completionTime", "").empty()) << w.status.dump(2);
  EXPECT_EQ(w.status["rolling"].value("currentNodes", 0), 4);
  EXPECT_EQ(w.status["rolling"].value("overdueNodes", -1), 0);

  // Nothing is due before its period ends: no worker, however often it is looked at.
  w.now = *ParseRfc3339("2026-12-01T13:00:59Z");
  EXPECT_TRUE(w.Step().empty());
  EXPECT_TRUE(w.Step().empty());
  // node-0 (12:01) and node-1 (12:02) are due; node-3 (12:03) and node-2 (12:04) are not yet.
  w.now = *ParseRfc3339("2026-12-01T13:02:30Z");
  EXPECT_TRUE(w.Step().empty());  // reopens the run for them, their results deleted
  EXPECT_EQ(w.status.value("verdict", ""), "Running");
  EXPECT_EQ(w.results.size(), 2u);
  EXPECT_EQ(w.Step(), (std::vector<std::string>{"node-0", "node-1"}));
  // Both overdue until their new results are in; node-3 falls due meanwhile and waits its turn.
  w.now = *ParseRfc3339("2026-12-01T13:03:30Z");
  EXPECT_TRUE(w.Step().empty());  // node-3 reopened
  EXPECT_TRUE(w.Step().empty()) << "a third worker while two run";
  EXPECT_EQ(w.status["rolling"].value("overdueNodes", 0), 3);
  w.Finish("node-1");
  EXPECT_EQ(w.Step(), (std::vector<std::string>{"node-3"}));
  EXPECT_EQ(w.Entry("node-1").value("lastValidated", ""), "2026-12-01T13:03:30Z");
}

TEST(RollingDecide, TheOldestVerdictHasTheFirstTurnAndANewNodeIsDueAPeriodAfterItCame) {
  World w(3);
  w.spec["rolling"]["maxConcurrent"] = 1;
  // The status an earlier operator left: node-2 validated longest ago, node-0 never.
  w.status = {{"rolling",
               {{"nodes",
                 {{"node-1", {{"lastValidated", "2026-12-01T11:30:00Z"}, {"result", "gone"}}},
                  {"node-2", {{"lastValidated", "2026-12-01T11:00:00Z"}, {"result", "gone"}}}}}}}};
  EXPECT_EQ(w.Step(), (std::vector<std::string>{"node-0"}));
  EXPECT_EQ(w.Entry("node-0").value("nextDue", ""), "2026-12-01T13:00:00Z");
  EXPECT_EQ(w.Entry("node-2").value("nextDue", ""), "2026-12-01T12:00:00Z");
  EXPECT_EQ(w.status["rolling"].value("overdueNodes", 0), 1);  // node-2, due at 12:00
  bool named = false;
  for (const auto& c : w.status["conditions"]) {
    if (c.value("type", "") != "Current") continue;
    EXPECT_EQ(c.value("status", ""), "False");
    EXPECT_EQ(c.value("reason", ""), "Overdue");
    named = c.value("message", "").find("node-2") != std::string::npos;
  }
  EXPECT_TRUE(named) << w.status.dump(2);
  w.Finish("node-0");
  EXPECT_EQ(w.Step(), (std::vector<std::string>{"node-2"}));
  w.Finish("node-2");
  EXPECT_EQ(w.Step(), (std::vector<std::string>{"node-1"}));
}

}  // namespace
}  // namespace perfgate::op
