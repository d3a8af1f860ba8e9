// A rolling period end to end (docs/operator.md, "Rolling re-validation"): twelve nodes, a
// period of seconds, at most two workers at once. Every node is validated once in the period
// and again once it falls due, the oldest first, never sooner, across an operator restart; a
// node whose GPUs a customer's pod holds when it falls due shows as overdue until it is idle.
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>

#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

using kubesim::testing::ShellQuote;
using Steady = std::chrono::steady_clock;

constexpr int kNodes = 12;
constexpr int kPeriodSeconds = 15;

double SecondsBetween(Steady::time_point from, Steady::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// kubectl finds kubectl-perfgate (a link to perfgate) on the PATH.
void PluginOnPath() {
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
  const std::string dir = PERFGATE_CLI_DIR;
  if (path != nullptr && std::string(path).find(dir) != std::string::npos) return;
  setenv("PATH", (dir + ":" + (path != nullptr ? path : "")).c_str(), 1);  // NOLINT
}

class Rolling : public E2E {
 protected:
  void SetUp() override {
    E2E::SetUp();
    // node-0 to node-3 come with the fixture.
    for (int i = 4; i < kNodes; ++i) {
      kubesim::NodeSpec node;
      node.name = "node-" + std::to_string(i);
      ASSERT_TRUE(sim_->AddNode(node).ok());
    }
    auto r = Kubectl(*sim_, {"create", "namespace", "ml"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    // Every worker pod created, by node, as it is created.
    sim_->SetAdmissionHook([this](const kubesim::RequestRecord& who, const Json& object) {
      if (who.verb != "create" || who.resource != "pods") return Status();
      const Json labels = object.value("metadata", Json::object()).value("labels", Json::object());
      if (labels.value("perfgate.io/validation", "") != "rolling") return Status();
      std::lock_guard<std::mutex> lock(mu_);
      creates_[labels.value("perfgate.io/node", "")].push_back(Steady::now());
      return Status();
    });
    // The worker pods alive at once, looked at every few milliseconds.
    watcher_ = std::thread([this] {
      while (watching_) {
        int live = 0;
        for (const auto& p : Pods("rolling")) {
          const std::string phase = p.value("status", Json::object()).value("phase", "");
          live += phase != "Succeeded" && phase != "Failed";
        }
        most_ = std::max(most_.load(), live);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  void TearDown() override {
    watching_ = false;
    if (watcher_.joinable()) watcher_.join();
    E2E::TearDown();
  }

  std::map<std::string, std::vector<Steady::time_point>> Creates() {
    std::lock_guard<std::mutex> lock(mu_);
    return creates_;
  }
  Json Rollup() { return Validation("rolling")["status"].value("rolling", Json::object()); }
  // Nodes with a lastValidated in status.rolling.nodes, and each one's.
  std::map<std::string, std::string> LastValidated() {
    std::map<std::string, std::string> out;
    const Json nodes = Rollup().value("nodes", Json::object());
    for (const auto& [node, e] : nodes.items()) {
      if (!e.value("lastValidated", "").empty()) out[node] = e["lastValidated"];
    }
    return out;
  }

  // Someone else's pod holding all GPUs of `node` until the file it returns appears.
  std::string StartCustomerPod(const std::string& node) {
    const std::string done = sim_->workDir() + "/customer.done";
    Json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", "customer"}, {"namespace", "ml"}}},
        {"spec",
         {{"restartPolicy", "Never"},
          {"terminationGracePeriodSeconds", 2},
          {"nodeSelector", {{"kubernetes.io/hostname", node}}},
          {"containers",
           {{{"name", "train"},
             {"image", "example.com/train:1"},
             {"command",
              {"/bin/sh", "-c", "while [ ! -e " + ShellQuote(done) + " ]; do sleep 0.1; done"}},
             {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}}}}};
    EXPECT_TRUE(sim_->Create("", "pods", pod).ok());
    EXPECT_TRUE(Eventually([&] {
      auto p = sim_->Get("", "pods", "ml", "customer");
      return p.ok() && p->value("status", Json::object()).value("phase", "") == "Running";
    }));
    return done;
  }

  std::mutex mu_;
  std::map<std::string, std::vector<Steady::time_point>> creates_;
  std::atomic<bool> watching_{true};
  std::atomic<int> most_{0};
  std::thread watcher_;
};

TEST_F(Rolling, EveryNodeOncePerPeriodOldestFirstAtMostTwoAcrossARestart) {
  PluginOnPath();
  const auto started = Steady::now();
  Apply(SyntheticSpec("rolling", "", "    onFailure: none\n",
                      "  rolling:\n"
                      "    period: " +
                          std::to_string(kPeriodSeconds) +
                          "s\n"
                          "    maxConcurrent: 2\n"));
  // Midway through the first pass the operator is restarted.
  ASSERT_TRUE(Eventually([&] { return LastValidated().size() >= 4; }, 30))
      << Validation("rolling").dump(2);
  op_.Kill(SIGTERM);
  op_.Start(*sim_);
  ASSERT_TRUE(Eventually([&] { return LastValidated().size() == kNodes; }, 40))
      << Validation("rolling").dump(2);
  const std::map<std::string, std::string> first = LastValidated();
  std::cerr << "first pass: " << SecondsBetween(started, Steady::now()) << " s\n";

  // The node validated first is busy with a customer's pod when it falls due: overdue.
  std::string oldest = first.begin()->first;
  for (const auto& [node, t] : first) {
    if (t < first.at(oldest)) oldest = node;
  }
  const std::string done = StartCustomerPod(oldest);
  ASSERT_TRUE(Eventually([&] { return Rollup().value("overdueNodes", 0) == 1; }, 30))
      << Validation("rolling").dump(2);
  Json v = Validation("rolling");
  EXPECT_EQ(Condition(v, "Current").value("status", ""), "False") << v.dump(2);
  EXPECT_EQ(Condition(v, "Current").value("reason", ""), "Overdue");
  EXPECT_NE(Condition(v, "Current").value("message", "").find(oldest), std::string::npos);
  EXPECT_TRUE(Eventually([&] {
    return Metrics(op_).find("perfgate_validation_overdue_nodes{validation=\"rolling\"} 1") !=
           std::string::npos;
  }));
  const auto summary = Kubectl(*sim_, {"perfgate", "summary"});
  EXPECT_NE(summary.out.find("overdue"), std::string::npos) << summary.out << summary.err;
  // Given back: it is validated too.
  std::ofstream(done).put('\n');

  // Every node validated a second time, none before its due time, the oldest first.
  ASSERT_TRUE(Eventually(
      [&] {
        const auto now = LastValidated();
        if (now.size() != kNodes) return false;
        for (const auto& [node, t] : now) {
          if (t == first.at(node)) return false;
        }
        return Rollup().value("overdueNodes", -1) == 0;
      },
      60))
      << Validation("rolling").dump(2);
  std::cerr << "second pass done: " << SecondsBetween(started, Steady::now()) << " s\n";
  v = Validation("rolling");
  EXPECT_EQ(Condition(v, "Current").value("status", ""), "True") << v.dump(2);
  EXPECT_EQ(v["status"]["rolling"].value("currentNodes", 0), kNodes);
  const auto creates = Creates();
  for (int i = 0; i < kNodes; ++i) {
    const std::string node = "node-" + std::to_string(i);
    ASSERT_TRUE(creates.contains(node)) << node;
    const auto& times = creates.at(node);
    ASSERT_GE(times.size(), 2u) << node;
    // The first result's time is whole seconds: due up to a second before its period ends.
    for (size_t k = 1; k < times.size(); ++k) {
      EXPECT_GE(SecondsBetween(times[k - 1], times[k]), kPeriodSeconds - 1.0)
          << node << " tested again before it was due";
    }
    EXPECT_EQ(v["status"]["rolling"]["nodes"][node].value("lastVerdict", ""), "PASS");
  }
  for (const auto& [a, ta] : first) {
    for (const auto& [b, tb] : first) {
      if (a == oldest || b == oldest || !(ta < tb)) continue;
      EXPECT_LE(creates.at(a)[1], creates.at(b)[1])
          << a << " (validated " << ta << ") went after " << b << " (validated " << tb << ")";
    }
  }
  EXPECT_LE(most_.load(), 2) << "more than spec.rolling.maxConcurrent workers at once";
}

TEST_F(E2E, ARollingPeriodIsCheckedAsTheSpecIsRead) {
  std::string msg = ApplyExpectingInvalidSpec(
      "badperiod", SyntheticSpec("badperiod", "", "    onFailure: none\n",
                                 "  rolling:\n    period: 7x\n    maxConcurrent: 2\n"));
  EXPECT_NE(msg.find("spec.rolling.period"), std::string::npos) << msg;
  msg = ApplyExpectingInvalidSpec(
      "nok", SyntheticSpec("nok", "", "    onFailure: none\n",
                           "  rolling:\n    period: 7d\n    maxConcurrent: 0\n"));
  EXPECT_NE(msg.find("spec.rolling.maxConcurrent"), std::string::npos) << msg;
  msg = ApplyExpectingInvalidSpec(
      "both", SyntheticSpec("both", "", "    onFailure: none\n",
                            "  schedule: \"@daily\"\n  rolling:\n    period: 7d\n"
                            "    maxConcurrent: 1\n"));
  EXPECT_NE(msg.find("spec.schedule"), std::string::npos) << msg;
}

}  // namespace
}  // namespace perfgate::e2e
