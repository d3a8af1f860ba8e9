// Capture on failure in kube-sim (docs/diagnostics.md): the worker of a node whose test fails
// puts a diagnosis summary into its PerfResult and its bundle into a ConfigMap owned by the
// result; `kubectl perfgate bundle` downloads the bundle's files. A passing node has none, and
// spec.diagnostics.capture: Never turns it off.
#include <cstdlib>
#include <filesystem>

#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

namespace fs = std::filesystem;

std::vector<Json> DiagnosisConfigMaps(kubesim::KubeSim& sim) {
  std::vector<Json> out;
  for (auto& cm : sim.List("", "configmaps", kNs)) {
    if (cm["metadata"].value("labels", Json::object()).value("perfgate.io/diagnosis", "") ==
        "true") {
      out.push_back(cm);
    }
  }
  return out;
}

std::string ReadFile(const std::string& path) { return kubesim::testing::Slurp(path); }

TEST_F(E2E, AFailingNodeCarriesItsDiagnosisAndThePluginDownloadsTheBundle) {
  PluginOnPath();
  Apply(SyntheticSpec("diag", "node-2=50", "    onFailure: none\n"));
  ASSERT_TRUE(WaitComplete("diag"));

  // The failing node's result says what failed, what was gathered and where it went.
  Json failing, passing;
  for (const auto& r : Results("diag")) {
    (r["spec"].value("nodeName", "") == "node-2" ? failing : passing) = r;
  }
  ASSERT_TRUE(failing.is_object());
  ASSERT_TRUE(passing.is_object());
  const Json diagnosis = failing["spec"]["report"].value("diagnosis", Json::object());
  ASSERT_FALSE(diagnosis.empty()) << failing.dump(2);
  EXPECT_NE(diagnosis["failures"][0].get<std::string>().find("synthetic [host]"), std::string::npos)
      << diagnosis.dump(2);
  std::map<std::string, Json> parts;
  for (const auto& p : diagnosis["parts"]) parts[p.value("name", "")] = p;
  EXPECT_GT(parts["failures.json"].value("bytes", 0), 0);
  // The simulated nodes' worker runs on this machine: without a driver the dump says so, and
  // nothing is invented; with one it is there.
  const bool has_nvml = parts["nvml.json"].value("bytes", 0) > 0;
  if (!has_nvml) {
    EXPECT_NE(parts["nvml.json"].value("note", "").find("NVML unavailable"), std::string::npos)
        << diagnosis.dump(2);
  }
  EXPECT_EQ(parts["nccl-topology.xml"].value("note", ""), "no NCCL test ran");
  const std::string config_map = failing["metadata"].value("name", "") + "-diagnosis";
  EXPECT_EQ(diagnosis["locations"][0], "configmap " + std::string(kNs) + "/" + config_map);
  // A passing node gathers nothing.
  EXPECT_FALSE(passing["spec"]["report"].contains("diagnosis")) << passing.dump(2);

  // The bundle: one ConfigMap, the failing node's, owned by its PerfResult. The worker writes
  // it just after the result, so it may come a moment after the validation completed.
  EXPECT_TRUE(kubesim::testing::Eventually([&] { return !DiagnosisConfigMaps(*sim_).empty(); }));
  const auto maps = DiagnosisConfigMaps(*sim_);
  ASSERT_EQ(maps.size(), 1U);
  EXPECT_EQ(maps[0]["metadata"]["name"], config_map);
  EXPECT_EQ(maps[0]["metadata"]["ownerReferences"][0]["kind"], "PerfResult");
  EXPECT_EQ(maps[0]["metadata"]["ownerReferences"][0]["uid"], failing["metadata"]["uid"]);

  // kubectl perfgate bundle downloads it.
  const std::string dir = sim_->workDir() + "/bundle-node-2";
  fs::remove_all(dir);
  auto got = Kubectl(*sim_, {"perfgate", "bundle", "diag", "node-2", "--out", dir});
  ASSERT_EQ(got.exitCode, 0) << got.out << got.err;
  for (const char* f : {"failures.json", "timeline.json", "spec.yaml", "summary.json"}) {
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f << "\n" << got.out;
  }
  const Json failures = Json::parse(ReadFile(dir + "/failures.json"), nullptr, false);
  ASSERT_TRUE(failures.is_object());
  ASSERT_EQ(failures["tests"].size(), 1U);
  EXPECT_EQ(failures["tests"][0]["name"], "synthetic");
  EXPECT_EQ(failures["tests"][0]["verdict"], "FAIL");
  EXPECT_FALSE(failures["tests"][0]["metrics"][0]["samples"].empty());
  EXPECT_NE(ReadFile(dir + "/spec.yaml").find("synthetic"), std::string::npos);
  EXPECT_NE(got.out.find("failed: synthetic [host]"), std::string::npos) << got.out;
  EXPECT_EQ(fs::exists(dir + "/nvml.json"), has_nvml);
  if (!has_nvml) {
    EXPECT_NE(got.out.find("nvml.json: NVML unavailable"), std::string::npos) << got.out;
  }

  // A passing node has no bundle, and the plugin says why.
  auto none = Kubectl(*sim_, {"perfgate", "bundle", "diag", "node-0", "--out", dir + "-0"});
  EXPECT_EQ(none.exitCode, 2);
  EXPECT_NE(none.err.find("no diagnosis bundle for node node-0"), std::string::npos) << none.err;

  // kubectl shows the summary too.
  auto yaml = Kubectl(
      *sim_, {"get", "pres", failing["metadata"].value("name", ""), "-n", kNs, "-o", "yaml"});
  ASSERT_EQ(yaml.exitCode, 0) << yaml.err;
  EXPECT_NE(yaml.out.find("diagnosis:"), std::string::npos);
  EXPECT_NE(yaml.out.find("configmap " + std::string(kNs)), std::string::npos);
}

TEST_F(E2E, CaptureNeverGathersNothing) {
  Apply(SyntheticSpec("nodiag", "node-1=50", "    onFailure: none\n",
                      "  diagnostics:\n"
                      "    capture: Never\n"));
  ASSERT_TRUE(WaitComplete("nodiag"));
  bool saw_failure = false;
  for (const auto& r : Results("nodiag")) {
    saw_failure |= r["spec"]["report"].value("verdict", "") == "FAIL";
    EXPECT_FALSE(r["spec"]["report"].contains("diagnosis")) << r.dump(2);
  }
  EXPECT_TRUE(saw_failure);
  EXPECT_TRUE(DiagnosisConfigMaps(*sim_).empty());
}

}  // namespace
}  // namespace perfgate::e2e
