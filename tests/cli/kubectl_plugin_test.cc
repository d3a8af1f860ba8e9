// kubectl perfgate against kube-sim, through the real kubectl's plugin mechanism: the fleet
// summary, the report of a validation, a spec's plan, and a rerun.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/report.h"
#include "common/time.h"
#include "tests/cli/fleet_fixture.h"
#include "tests/kube-sim/test_util.h"

namespace perfgate {
namespace {

using kubesim::testing::Kubectl;
using Json = nlohmann::json;

class KubectlPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    // kubectl finds kubectl-perfgate (a link to perfgate) on the PATH.
    const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
    setenv("PATH", (std::string(PERFGATE_CLI_DIR) + ":" + (path ? path : "")).c_str(), 1);
    kubesim::Options o;
    o.nodes = 12;
    o.gpuProduct = "NVIDIA-H200";
    // A folder of the test's own, kept after Stop(): the dead-server test runs kubectl then.
    o.workDir = ::testing::TempDir() + "/kubectl-plugin-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(o.workDir);
    std::filesystem::create_directories(o.workDir);
    sim_ = std::make_unique<kubesim::KubeSim>(o);
    ASSERT_TRUE(sim_->Start().ok());
    auto crds = Kubectl(*sim_, {"apply", "-f", PERFGATE_CRDS_DIR});
    ASSERT_EQ(crds.exitCode, 0) << crds.err;
    ASSERT_EQ(Kubectl(*sim_, {"create", "namespace", "perfgate-system"}).exitCode, 0);
    auto v = Kubectl(*sim_, {"apply", "-f", "-"},
                     "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nmetadata:\n"
                     "  name: fleet\nspec:\n  profile: h200-sxm-141gb\n");
    ASSERT_EQ(v.exitCode, 0) << v.err;
    auto obj = sim_->Get("perfgate.io", "perfvalidations", "", "fleet");
    ASSERT_TRUE(obj.ok());
    (*obj)["status"] = {{"run", "g1"}, {"verdict", "Failed"}};
    ASSERT_TRUE(sim_->Update("perfgate.io", "perfvalidations", *obj, true).ok());

    // Results for node-0 .. node-9 (node-10 and node-11 never validated): node-0 and node-1
    // fail, node-2 is 8% slow in GEMM, node-9's result is 60 days old.
    const auto now = std::chrono::system_clock::now();
    auto fleet = testing::Fleet(10, 2, 1);
    for (int i = 0; i < 10; ++i) {
      auto& r = fleet[i].report;
      const std::string node = "node-" + std::to_string(i);
      r.mutable_identity()->set_hostname(node);
      r.set_completiontime(
          FormatRfc3339(now - (i == 9 ? std::chrono::hours(24 * 60) : std::chrono::hours(1))));
      if (i == 4) {  // passes, but the worker captured a diagnosis: one GPU lags the others
        r.mutable_diagnosis()->add_lagging(
            "gemm [gpu3]: tflops median 612 is 9.0% below its 8 GPUs' median 672.5");
        r.mutable_diagnosis()->add_locations("configmap perfgate-system/fleet-g1-node-4-diagnosis");
      }
      auto json = report::ToJson(r);
      ASSERT_TRUE(json.ok());
      Json pres = {{"apiVersion", "perfgate.io/v1alpha1"},
                   {"kind", "PerfResult"},
                   {"metadata",
                    {{"name", "fleet-g1-" + node},
                     {"namespace", "perfgate-system"},
                     {"labels",
                      {{"perfgate.io/validation", "fleet"},
                       {"perfgate.io/node", node},
                       {"perfgate.io/run", "g1"}}}}},
                   {"spec",
                    {{"validation", "fleet"},
                     {"nodeName", node},
                     {"run", "g1"},
                     {"worst", "hbm-stream gpu0 triadBandwidthGBps median 4310 >= 3840"},
                     {"report", Json::parse(*json)}}}};
      auto created = sim_->Create("perfgate.io", "perfresults", pres);
      ASSERT_TRUE(created.ok()) << created.status().message();
    }
  }
  void TearDown() override { sim_->Stop(); }

  std::unique_ptr<kubesim::KubeSim> sim_;
};

TEST_F(KubectlPlugin, SummaryCountsNodesByModelAndVerdictAndNamesTheOnesToLookAt) {
  auto r = Kubectl(*sim_, {"perfgate", "summary"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // 12 GPU nodes: 8 pass, 2 fail, 2 never validated, 1 stale (node-9).
  EXPECT_NE(r.out.find("NVIDIA H200  12     8     2     0             0      2      1"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Not passing:"), std::string::npos);
  EXPECT_NE(r.out.find("node-0  FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node-1  FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Lagging their peers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node-2  gpu0    gemm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Never validated:\nNODE     MODEL\nnode-10  NVIDIA H200\nnode-11"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Validated too long ago:\nNODE    VERDICT  LAST VALIDATED\nnode-9"),
            std::string::npos)
      << r.out;
  // The fixture's validation does not say results are not kept: no note.
  EXPECT_EQ(r.out.find("results are not kept"), std::string::npos) << r.out;

  auto json = Kubectl(*sim_, {"perfgate", "summary", "-o", "json"});
  ASSERT_EQ(json.exitCode, 0) << json.err;
  const Json doc = Json::parse(json.out);
  ASSERT_EQ(doc["nodes"].size(), 12u);
  EXPECT_EQ(doc["nodes"][2]["verdict"], "NEVER");  // node-10, sorted by name
  EXPECT_EQ(doc["byModel"]["NVIDIA H200"]["FAIL"], 2);
  EXPECT_EQ(doc["lagging"].size(), 16u);  // node-2: 8 GPUs x bf16 and fp8
  EXPECT_EQ(doc["resultsNotKept"], false);
  EXPECT_FALSE(doc.contains("notice"));
  for (const Json& n : doc["nodes"]) {
    if (n["node"] != "node-4") continue;
    EXPECT_EQ(n["verdict"], "PASS");
    EXPECT_EQ(n["why"],
              "lagging: gemm [gpu3]: tflops median 612 is 9.0% below its 8 GPUs' median 672.5; "
              "bundle: kubectl perfgate bundle fleet node-4");
  }

  auto yaml = Kubectl(*sim_, {"perfgate", "summary", "-o", "yaml", "--stale", "2000h"});
  ASSERT_EQ(yaml.exitCode, 0) << yaml.err;
  EXPECT_NE(yaml.out.find("byModel:\n  NVIDIA H200:\n"), std::string::npos) << yaml.out;
  EXPECT_EQ(yaml.out.find("STALE"), std::string::npos) << "60 days is within 2000 hours";
}

// An operator without a results store (store.mode off) says so in each validation's Recorded
// condition; the summary passes it on when every validation says it, in the table and as data.
TEST_F(KubectlPlugin, SummarySaysWhenTheOperatorKeepsNoResults) {
  auto recorded = [&](const std::string& name, const char* status, const char* reason) {
    auto obj = sim_->Get("perfgate.io", "perfvalidations", "", name);
    ASSERT_TRUE(obj.ok()) << name;
    (*obj)["status"]["conditions"] = {{{"type", "Complete"}, {"status", "True"}},
                                      {{"type", "Recorded"},
                                       {"status", status},
                                       {"reason", reason},
                                       {"message", "results are not kept: ..."}}};
    ASSERT_TRUE(sim_->Update("perfgate.io", "perfvalidations", *obj, true).ok());
  };
  recorded("fleet", "False", "StoreOff");
  const std::string line =
      "results are not kept (store.mode=off): history and regressions are not compared; set "
      "store.mode=sqlite or postgres to keep them";
  auto r = Kubectl(*sim_, {"perfgate", "summary"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("\nNote: " + line + ".\n"), std::string::npos) << r.out;
  auto json = Kubectl(*sim_, {"perfgate", "summary", "-o", "json"});
  ASSERT_EQ(json.exitCode, 0) << json.err;
  const Json doc = Json::parse(json.out);
  EXPECT_EQ(doc["resultsNotKept"], true);
  EXPECT_EQ(doc["notice"], line);
  auto yaml = Kubectl(*sim_, {"perfgate", "summary", "-o", "yaml"});
  ASSERT_EQ(yaml.exitCode, 0) << yaml.err;
  EXPECT_NE(yaml.out.find("resultsNotKept: true\n"), std::string::npos) << yaml.out;

  // One validation whose results are recorded (an operator with a store ran it): no note.
  auto v = Kubectl(*sim_, {"apply", "-f", "-"},
                   "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nmetadata:\n"
                   "  name: kept\nspec:\n  profile: h200-sxm-141gb\n");
  ASSERT_EQ(v.exitCode, 0) << v.err;
  recorded("kept", "True", "Recorded");
  auto mixed = Kubectl(*sim_, {"perfgate", "summary"});
  ASSERT_EQ(mixed.exitCode, 0) << mixed.err;
  EXPECT_EQ(mixed.out.find("results are not kept"), std::string::npos) << mixed.out;
  auto mixed_json = Kubectl(*sim_, {"perfgate", "summary", "-o", "json"});
  ASSERT_EQ(mixed_json.exitCode, 0) << mixed_json.err;
  EXPECT_EQ(Json::parse(mixed_json.out)["resultsNotKept"], false);
}

TEST_F(KubectlPlugin, ReportOfAValidationAndARerun) {
  const std::string html = sim_->workDir() + "/fleet.html";
  auto r = Kubectl(*sim_, {"perfgate", "report", "--validation", "fleet", "--out", html});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string text = kubesim::testing::Slurp(html);
  int rows = 0;
  for (auto at = text.find("<tr class=\"node-row\">"); at != std::string::npos;
       at = text.find("<tr class=\"node-row\">", at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 10);
  EXPECT_NE(text.find("<title>perfgate: fleet</title>"), std::string::npos);

  // The old spelling -o FILE still writes the file, with a notice naming --out.
  auto old = Kubectl(*sim_, {"perfgate", "report", "--validation", "fleet", "-o", html + ".old"});
  ASSERT_EQ(old.exitCode, 0) << old.err;
  EXPECT_NE(old.err.find("is now --out"), std::string::npos) << old.err;
  EXPECT_TRUE(std::filesystem::exists(html + ".old"));

  // A validation that does not exist is invalid input (exit 2), named.
  auto missing = Kubectl(*sim_, {"perfgate", "report", "--validation", "nope", "--out", html});
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_NE(missing.err.find("perfvalidation nope"), std::string::npos) << missing.err;

  auto rerun = Kubectl(*sim_, {"perfgate", "rerun", "fleet"});
  ASSERT_EQ(rerun.exitCode, 0) << rerun.err;
  auto obj = sim_->Get("perfgate.io", "perfvalidations", "", "fleet");
  ASSERT_TRUE(obj.ok());
  EXPECT_TRUE((*obj)["metadata"]["annotations"].contains("perfgate.io/rerun"));
  auto none = Kubectl(*sim_, {"perfgate", "rerun", "nope"});
  EXPECT_EQ(none.exitCode, 2);
  EXPECT_NE(none.err.find("perfvalidation nope"), std::string::npos) << none.err;
}

// kubectl perfgate plan: a spec file and a validation by name, resolved against the cluster's
// nodes and PerfProfiles as the operator resolves them, with the estimated time.
TEST_F(KubectlPlugin, PlanShowsTheProfileTestsNodesAndTime) {
  auto profiles = Kubectl(*sim_, {"apply", "-f", PERFGATE_PROFILES_DIR});
  ASSERT_EQ(profiles.exitCode, 0) << profiles.err;
  const std::string spec_file = sim_->workDir() + "/spec.yaml";
  {
    std::ofstream out(spec_file);
    out << "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nmetadata:\n"
           "  name: acceptance\nspec:\n  profile: auto\n  policy:\n    parallelism: 4\n";
  }
  auto table = Kubectl(*sim_, {"perfgate", "plan", "-f", spec_file});
  ASSERT_EQ(table.exitCode, 0) << table.err;
  // The nodes' model picked the H200 profile; 12 nodes of 8 GPUs, 4 at a time.
  EXPECT_NE(table.out.find("acceptance  h200-sxm-141gb v6"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("  12     8     4  "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("GPU models: NVIDIA-H200: node-0"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("\nhbm-stream "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("8 GPUs at once"), std::string::npos) << table.out;

  auto json = Kubectl(*sim_, {"perfgate", "plan", "-f", spec_file, "-o", "json"});
  ASSERT_EQ(json.exitCode, 0) << json.err;
  const Json doc = Json::parse(json.out);
  EXPECT_EQ(doc["profile"], "h200-sxm-141gb");
  EXPECT_EQ(doc["nodes"].size(), 12u);
  EXPECT_EQ(doc["gpusPerNode"], 8);
  EXPECT_EQ(doc["parallelism"], 4);
  ASSERT_FALSE(doc["tests"].empty());
  double per_node = 0;
  for (const auto& t : doc["tests"]) {
    EXPECT_GT(t["typicalSeconds"].get<double>(), 0) << t.dump();
    EXPECT_GE(t["worstSeconds"].get<double>(), t["typicalSeconds"].get<double>()) << t.dump();
    per_node += t["typicalSeconds"].get<double>();
  }
  const Json& estimate = doc["estimate"];
  EXPECT_NEAR(estimate["perNodeTypicalSeconds"].get<double>(), per_node, 1e-6);
  // 12 nodes, 4 at a time: three rounds of a node's time.
  EXPECT_NEAR(estimate["typicalSeconds"].get<double>(), 3 * per_node, 1e-6);

  // A validation in the cluster, by name (the fixture's names its profile), as YAML and wide.
  auto wide = Kubectl(*sim_, {"perfgate", "plan", "fleet", "-o", "wide"});
  ASSERT_EQ(wide.exitCode, 0) << wide.err;
  EXPECT_NE(wide.out.find("THRESHOLD"), std::string::npos) << wide.out;
  EXPECT_NE(wide.out.find("median triadBandwidthGBps >= "), std::string::npos) << wide.out;
  EXPECT_NE(wide.out.find("node-11  NVIDIA-H200"), std::string::npos) << wide.out;
  auto yaml = Kubectl(*sim_, {"perfgate", "plan", "fleet", "-o", "yaml"});
  ASSERT_EQ(yaml.exitCode, 0) << yaml.err;
  EXPECT_NE(yaml.out.find("profile: h200-sxm-141gb\n"), std::string::npos) << yaml.out;

  // A spec the operator would refuse: its message, exit 2 (invalid input).
  {
    std::ofstream out(spec_file);
    out << "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nmetadata:\n"
           "  name: wrong\nspec:\n  profile: b200-sxm-180gb\n";
  }
  auto refused = Kubectl(*sim_, {"perfgate", "plan", "-f", spec_file});
  EXPECT_EQ(refused.exitCode, 2);
  EXPECT_NE(refused.err.find("is for GPU models"), std::string::npos) << refused.err;
  auto missing = Kubectl(*sim_, {"perfgate", "plan", "nope"});
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_NE(missing.err.find("perfvalidation nope"), std::string::npos) << missing.err;
}

TEST_F(KubectlPlugin, ADeadApiServerIsNamed) {
  sim_->Stop();
  // A cluster that cannot be reached: exit 3, and the command names itself.
  auto r = Kubectl(*sim_, {"perfgate", "summary"});
  EXPECT_EQ(r.exitCode, 3);
  EXPECT_NE(r.err.find("perfgate summary: "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace perfgate
