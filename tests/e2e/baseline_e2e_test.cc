// Thresholds relative to a PerfBaseline (docs/store.md, "Baselines in a cluster"): a baseline
// built from a known-good run the operator recorded, put in the cluster as `perfgate
// baseline create -o json` writes it, decides the next run by its figure.
#include <cstdio>

#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

// Runs perfgate with `args`; its stdout (stderr goes to the test's log).
std::pair<int, std::string> Perfgate(const std::string& args) {
  const std::string cmd = std::string(PERFGATE_CLI_DIR) + "/perfgate " + args;
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// SyntheticSpec with its bound `fraction` of baseline `baseline` instead of the value 90.
std::string BaselineSpec(const std::string& name, const std::string& behaviour,
                         const std::string& baseline, const std::string& fraction) {
  std::string yaml = SyntheticSpec(name, behaviour, "    onFailure: none\n");
  const std::string absolute = "          value: 90\n";
  yaml.replace(yaml.find(absolute), absolute.size(),
               "          baseline: " + baseline + "\n          fraction: " + fraction + "\n");
  return yaml;
}

TEST_F(E2E, ThresholdRelativeToAPerfBaselineDecidesByTheBaselinesFigure) {
  const std::string url = "sqlite://" + sim_->workDir() + "/store/results.db";
  op_.Kill(SIGTERM);
  op_.Start(*sim_, {"--store=" + url, "--cluster-name=e2e", "--store-retry-seconds=1"});

  // A known-good run, recorded by the operator.
  Apply(SyntheticSpec("known-good", ""));
  ASSERT_TRUE(WaitComplete("known-good"));
  ASSERT_EQ(Validation("known-good")["status"].value("passedNodes", ""), "4/4");
  ASSERT_TRUE(Eventually(
      [&] {
        auto store = store::Open(url);
        if (!store.ok()) return false;
        store::ResultQuery q;
        q.validation = "known-good";
        auto stored = (*store)->Results(q);
        return stored.ok() && stored->size() == 4;
      },
      30));

  // The baseline, from that run, as a PerfBaseline object.
  auto [rc, text] =
      Perfgate("baseline create golden --from validation=known-good --store " + url + " -o json");
  ASSERT_EQ(rc, 0) << text;
  Json object = Json::parse(text, nullptr, false);
  ASSERT_FALSE(object.is_discarded()) << text;
  EXPECT_EQ(object.value("kind", ""), "PerfBaseline");
  EXPECT_EQ(object["metadata"].value("name", ""), "golden");
  EXPECT_EQ(object["spec"]["from"].value("validation", ""), "known-good");
  double median = 0;
  for (auto& v : object["spec"]["values"]) {
    if (v.value("test", "") == "synthetic" && v.value("metric", "") == "bandwidthGBps" &&
        v.value("statistic", "") == "median") {
      median = v.value("value", 0.0);
      EXPECT_EQ(v.value("count", 0), 4) << v.dump();  // one figure per node
    }
    // kube-sim's workers see no CUDA device, so their results carry no GPU model; a GPU node's
    // would carry its own. The figures are labelled with the simulated nodes' model. (The store's
    // copy keeps none: only the cluster's object can give this model a figure, so passing
    // below also shows that the PerfBaseline object is what the operator read.)
    EXPECT_EQ(v.value("gpuModel", ""), "") << v.dump();
    v["gpuModel"] = "NVIDIA H200";
  }
  EXPECT_NEAR(median, 100, 2) << text;
  auto applied = Kubectl(*sim_, {"apply", "-f", "-"}, object.dump());
  ASSERT_EQ(applied.exitCode, 0) << applied.err;
  auto listed = Kubectl(*sim_, {"get", "pbl"});
  EXPECT_NE(listed.out.find("golden"), std::string::npos) << listed.out << listed.err;

  // 0.95 x the baseline: nodes at about 100 pass, node-2 at 90 fails against about 95.
  Apply(BaselineSpec("relative", "node-2=90", "golden", "0.95"));
  ASSERT_TRUE(WaitComplete("relative"));
  Json v = Validation("relative");
  EXPECT_EQ(v["status"].value("passedNodes", ""), "3/4") << v.dump(2);
  EXPECT_EQ(Condition(v, "Passed").value("status", ""), "False");
  const Json failing = v["status"].value("failingNodes", Json::array());
  ASSERT_EQ(failing.size(), 1u) << v.dump(2);
  EXPECT_EQ(failing[0].value("node", ""), "node-2");
  // The bound names where it came from.
  EXPECT_THAT(failing[0].value("figure", ""),
              ::testing::ContainsRegex(
                  "median (8[5-9]|9[0-4])[0-9.]* \\(>= 9[4-6][0-9.]* = 0\\.95[0-9]* x baseline "
                  "golden\\)"))
      << failing[0].dump();
  int from_baseline = 0;
  for (const auto& r : Results("relative")) {
    const Json th = r["spec"]["report"]["tests"][0]["thresholds"][0];
    EXPECT_EQ(th["threshold"].value("referenceSource", ""), "baseline golden") << th.dump();
    EXPECT_NEAR(th.value("bound", 0.0), 0.95 * median, 1e-6) << th.dump();
    EXPECT_EQ(th["threshold"].value("baseline", ""), "") << th.dump();  // resolved in the plan
    from_baseline++;
  }
  EXPECT_EQ(from_baseline, 4);

  // A baseline neither the cluster nor the store has: InvalidSpec naming the field and both.
  const std::string msg =
      ApplyExpectingInvalidSpec("unknown", BaselineSpec("unknown", "", "absent", "0.95"));
  EXPECT_THAT(msg, ::testing::HasSubstr("spec.tests[0].thresholds[0].baseline"));
  EXPECT_THAT(msg, ::testing::HasSubstr("no PerfBaseline \"absent\" in the cluster"));
  EXPECT_THAT(msg, ::testing::HasSubstr("not found in sqlite://"));
}

}  // namespace
}  // namespace perfgate::e2e
