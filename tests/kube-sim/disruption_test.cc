// kube-sim's PodDisruptionBudgets (policy/v1) and pods/eviction subresource against the real
// kubectl and raw HTTP: a budget's status computed from the pods it selects, an eviction that
// deletes (201, DisruptionTarget condition), one a budget forbids (429 with kube-apiserver's
// message and cause, the pod untouched) and one of a missing pod (404).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/kube-sim/kube_sim.h"
#include "tests/kube-sim/test_util.h"

namespace perfgate::kubesim {
namespace {

using testing::Eventually;
using ::testing::HasSubstr;
using testing::Kubectl;
using testing::ShellQuote;
using testing::Slurp;

Json GpuPod(const std::string& name, const std::string& app) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "ml"}, {"labels", {{"app", app}}}}},
          {"spec",
           {{"restartPolicy", "Never"},
            {"terminationGracePeriodSeconds", 1},
            {"containers",
             {{{"name", "main"},
               {"image", "busybox:1.36"},
               {"command", {"/bin/sh", "-c", "sleep 60"}},
               {"resources", {{"limits", {{"nvidia.com/gpu", "4"}}}}}}}}}}};
}

class DisruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Options o;
    o.nodes = 2;
    o.gpusPerNode = 8;
    sim_ = std::make_unique<KubeSim>(o);
    ASSERT_TRUE(sim_->Start().ok());
    auto r = Kubectl(*sim_, {"create", "namespace", "ml"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    for (const char* name : {"train-0", "train-1"}) {
      ASSERT_TRUE(sim_->Create("", "pods", GpuPod(name, "train")).ok());
    }
    ASSERT_TRUE(Eventually([&] {
      for (const char* name : {"train-0", "train-1"}) {
        auto p = sim_->Get("", "pods", "ml", name);
        if (!p.ok() || p->value("status", Json::object()).value("phase", "") != "Running") {
          return false;
        }
      }
      return true;
    }));
  }

  // POST .../pods/NAME/eviction with curl: the HTTP code and the body as the server sent them.
  std::pair<int, Json> Evict(const std::string& name) {
    const std::string out = sim_->workDir() + "/evict.out";
    const std::string body = R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":")" +
                             name + R"(","namespace":"ml"}})";
    const std::string cmd =
        "curl -sk -o " + ShellQuote(out) + " -w '%{http_code}' -X POST -H " +
        ShellQuote("Authorization: Bearer " + sim_->adminToken()) +
        " -H 'Content-Type: application/json' -d " + ShellQuote(body) + " " +
        ShellQuote(sim_->url() + "/api/v1/namespaces/ml/pods/" + name + "/eviction") + " > " +
        ShellQuote(out + ".code");
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    return {std::atoi(Slurp(out + ".code").c_str()),
            Json::parse(Slurp(out), nullptr, /*allow_exceptions=*/false)};
  }

  Json Pdb(const std::string& name) {
    auto p = sim_->Get("policy", "poddisruptionbudgets", "ml", name);
    return p.ok() ? p->value("status", Json::object()) : Json::object();
  }

  std::unique_ptr<KubeSim> sim_;
};

TEST_F(DisruptionTest, BudgetStatusCountsTheReadyPodsItSelects) {
  auto r = Kubectl(*sim_, {"apply", "-f", "-"}, R"(apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: train, namespace: ml}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: train}}
)");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(Eventually([&] { return Pdb("train").value("expectedPods", 0) == 2; }));
  const Json st = Pdb("train");
  EXPECT_EQ(st.value("currentHealthy", -1), 2);
  EXPECT_EQ(st.value("desiredHealthy", -1), 1);
  EXPECT_EQ(st.value("disruptionsAllowed", -1), 1);
  EXPECT_EQ(st["conditions"][0]["type"], "DisruptionAllowed");
  EXPECT_EQ(st["conditions"][0]["status"], "True");
  EXPECT_EQ(st["conditions"][0]["reason"], "SufficientPods");

  // maxUnavailable as a percentage: 50% of 2 rounds up to 1 unavailable, so 1 desired.
  r = Kubectl(*sim_, {"apply", "-f", "-"}, R"(apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: half, namespace: ml}
spec:
  maxUnavailable: "50%"
  selector: {matchLabels: {app: other}}
)");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(Eventually([&] { return Pdb("half").contains("expectedPods"); }));
  EXPECT_EQ(Pdb("half").value("expectedPods", -1), 0);
  EXPECT_EQ(Pdb("half").value("disruptionsAllowed", -1), 0);
  r = Kubectl(*sim_, {"get", "pdb", "-n", "ml", "train"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

TEST_F(DisruptionTest, EvictionDeletesThePodWithADisruptionTargetCondition) {
  auto [code, body] = Evict("train-0");
  EXPECT_EQ(code, 201);
  EXPECT_EQ(body.value("kind", ""), "Status");
  EXPECT_EQ(body.value("status", ""), "Success");
  // Marked, then gracefully deleted: gone once its process ends.
  auto p = sim_->Get("", "pods", "ml", "train-0");
  if (p.ok()) {
    bool marked = false;
    for (const auto& c : (*p)["status"].value("conditions", Json::array())) {
      marked |= c.value("type", "") == "DisruptionTarget" &&
                c.value("reason", "") == "EvictionByEvictionAPI" &&
                c.value("message", "") == "Eviction API: evicting";
    }
    EXPECT_TRUE(marked) << p->dump();
    EXPECT_FALSE((*p)["metadata"].value("deletionTimestamp", "").empty());
  }
  EXPECT_TRUE(Eventually([&] { return !sim_->Get("", "pods", "ml", "train-0").ok(); }));
}

TEST_F(DisruptionTest, ABudgetThatForbidsItAnswers429AndKeepsThePod) {
  auto r = Kubectl(*sim_, {"apply", "-f", "-"}, R"(apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: train, namespace: ml}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: train}}
)");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto [code, body] = Evict("train-0");
  EXPECT_EQ(code, 429);
  EXPECT_EQ(body.value("reason", ""), "TooManyRequests");
  EXPECT_EQ(body.value("message", ""),
            "Cannot evict pod as it would violate the pod's disruption budget.");
  ASSERT_EQ(body["details"]["causes"].size(), 1u) << body.dump();
  EXPECT_EQ(body["details"]["causes"][0]["reason"], "DisruptionBudget");
  EXPECT_EQ(body["details"]["causes"][0]["message"],
            "The disruption budget train needs 2 healthy pods and has 2 currently");
  auto p = sim_->Get("", "pods", "ml", "train-0");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)["metadata"].value("deletionTimestamp", ""), "");

  // kubectl says what kube-apiserver says.
  r = Kubectl(
      *sim_, {"create", "--raw", "/api/v1/namespaces/ml/pods/train-1/eviction", "-f", "-"},
      R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"train-1","namespace":"ml"}})");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("Error from server (TooManyRequests): Cannot evict pod as it would "
                               "violate the pod's disruption budget."));

  // Relaxed: one may go, the second is refused again.
  r = Kubectl(*sim_, {"patch", "pdb", "-n", "ml", "train", "--type=merge", "-p",
                      R"({"spec":{"minAvailable":1}})"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(Evict("train-0").first, 201);
  EXPECT_EQ(Evict("train-1").first, 429);
}

TEST_F(DisruptionTest, EvictingAMissingPodIs404) {
  auto [code, body] = Evict("nope");
  EXPECT_EQ(code, 404);
  EXPECT_EQ(body.value("reason", ""), "NotFound");
  EXPECT_EQ(body.value("message", ""), "pods \"nope\" not found");
}

}  // namespace
}  // namespace perfgate::kubesim
