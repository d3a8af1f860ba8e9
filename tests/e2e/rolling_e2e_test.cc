// A rolling period end to end (docs/operator.md, "Rolling re-validation"): twelve nodes, a
// period of seconds, at most two workers at once. Every node is validated once in the period
// and again once it falls due, the oldest first, never sooner, across an operator restart; a
// node whose GPUs a customer's pod holds when it falls due shows as overdue until it is idle.
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <regex>
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
        // Each node's lastValidated as the status says it, every value it took.
        if (auto v = sim_->Get("perfgate.io", "perfvalidations", "", "rolling"); v.ok()) {
          const Json nodes = v->value("status", Json::object())
                                 .value("rolling", Json::object())
                                 .value("nodes", Json::object());
          std::lock_guard<std::mutex> lock(mu_);
          for (const auto& [node, e] : nodes.items()) {
            const std::string t = e.value("lastValidated", "");
            auto& seen = validated_[node];
            if (!t.empty() && (seen.empty() || seen.back() != t)) seen.push_back(t);
          }
        }
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
  // Each node's lastValidated times, oldest first (nodes never validated left out).
  std::map<std::string, std::vector<std::string>> Validated() {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& [node, times] : validated_) {
      if (!times.empty()) out[node] = times;
    }
    return out;
  }
  // How many nodes were validated at least `times` times.
  int ValidatedAtLeast(size_t times) {
    int n = 0;
    for (const auto& [node, t] : Validated()) n += t.size() >= times;
    return n;
  }

  std::mutex mu_;
  std::map<std::string, std::vector<Steady::time_point>> creates_;
  std::map<std::string, std::vector<std::string>> validated_;
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
  ASSERT_TRUE(Eventually([&] { return ValidatedAtLeast(1) >= 4; }, 30))
      << Validation("rolling").dump(2);
  op_.Kill(SIGTERM);
  op_.Start(*sim_);
  ASSERT_TRUE(Eventually([&] { return ValidatedAtLeast(1) == kNodes; }, 40))
      << Validation("rolling").dump(2);
  std::map<std::string, std::string> first;
  for (const auto& [node, times] : Validated()) first[node] = times.front();
  std::cerr << "first pass: " << SecondsBetween(started, Steady::now()) << " s\n";

  // The node validated last (due furthest away) is busy with a customer's pod when it falls
  // due: overdue, and named so, until its GPUs are idle.
  std::string busy = first.begin()->first;
  for (const auto& [node, t] : first) {
    if (t > first.at(busy)) busy = node;
  }
  const std::string done = StartGpuPod("customer", busy, 8);
  ASSERT_EQ(Validated()[busy].size(), 1u) << "tested again before the customer's pod came";
  ASSERT_TRUE(Eventually(
      [&] {
        const Json c = Condition(Validation("rolling"), "Current");
        return c.value("status", "") == "False" && c.value("reason", "") == "Overdue" &&
               c.value("message", "").find(busy) != std::string::npos;
      },
      30))
      << Validation("rolling").dump(2);
  EXPECT_GE(Rollup().value("overdueNodes", 0), 1);
  EXPECT_TRUE(Eventually([&] {
    static const std::regex kOverdue(
        "perfgate_validation_overdue_nodes\\{validation=\"rolling\"\\} [1-9]");
    return std::regex_search(Metrics(op_), kOverdue);
  }));
  const auto summary = Kubectl(*sim_, {"perfgate", "summary"});
  const std::regex row("\n" + busy + " +rolling .* overdue\n");
  EXPECT_TRUE(std::regex_search(summary.out, row)) << summary.out << summary.err;
  // Given back: it is validated too.
  std::ofstream(done).put('\n');

  // Every node validated a second time (the busy one once its GPUs were idle), none before
  // its due time, the oldest first.
  ASSERT_TRUE(Eventually([&] { return ValidatedAtLeast(2) == kNodes; }, 60))
      << Validation("rolling").dump(2);
  std::cerr << "second pass done: " << SecondsBetween(started, Steady::now()) << " s\n";
  const Json v = Validation("rolling");
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
      if (a == busy || b == busy || !(ta < tb)) continue;
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
