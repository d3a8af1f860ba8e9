// The chaos soak (CTest label `soak`, docs/benchmarks.md): 50 validations over 20 simulated
// nodes, applied five at a time with random, overlapping node selections, while the operator is
// killed (SIGKILL) and restarted, workers crash where the fixture plants a crash, and the API
// server fails, throttles, slows down and drops its watches. Ground truth comes from the
// synthetic fixture: the four slow nodes FAIL, a planted crash is ERROR, every other node
// PASSes. It prints the figures and asserts the zeros: no result lost, no pod created twice,
// no node ever held by two validations' workers at once.
#include <random>

#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

constexpr int kNodes = 20;
constexpr int kValidations = 50;
constexpr int kWave = 5;       // applied together in one kubectl apply
constexpr int kInFlight = 10;  // the next wave waits until fewer run
const std::set<std::string> kSlow = {"node-2", "node-7", "node-11", "node-16"};

std::string NodeName(int i) { return "node-" + std::to_string(i); }

class ChaosSoak : public E2E {
 protected:
  void SetUp() override {
    // The fixture's four nodes, and sixteen more.
    E2E::SetUp();
    for (int i = 4; i < kNodes; ++i) {
      kubesim::NodeSpec n;
      n.name = NodeName(i);
      n.gpus = 8;
      ASSERT_TRUE(sim_->AddNode(n).ok());
    }
  }
};

struct Planned {
  std::string name;
  std::vector<std::string> nodes;
  std::map<std::string, std::string> truth;  // node -> PASS, FAIL or ERROR
};

std::string SpecOf(const Planned& p) {
  std::string behaviour;
  std::string nodes;
  for (const auto& n : p.nodes) {
    nodes += (nodes.empty() ? "" : ", ") + n;
    std::string b;
    if (p.truth.at(n) == "ERROR") b = n + "=crash";
    if (p.truth.at(n) == "FAIL") b = n + "=50";
    if (!b.empty()) behaviour += (behaviour.empty() ? "" : ", ") + b;
  }
  std::string y = SyntheticSpec(p.name, behaviour, "    onFailure: taint\n", "", "0.2");
  const std::string selector = "  nodeSelector:\n    nvidia.com/gpu.present: \"true\"\n";
  y.replace(y.find(selector), selector.size(), "  nodes: [" + nodes + "]\n");
  return y;
}

bool Terminal(const Json& pod) {
  const std::string phase = pod.value("status", Json::object()).value("phase", "");
  return phase == "Succeeded" || phase == "Failed";
}

TEST_F(ChaosSoak, FiftyValidationsOverTwentyNodesLoseNothing) {
  std::mt19937 rng(20261202);
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };

  std::vector<Planned> plan;
  for (int i = 0; i < kValidations; ++i) {
    Planned p;
    p.name = "soak-" + std::to_string(i);
    std::set<int> chosen;
    const int count = 3 + pick(4);  // 3..6 nodes
    while (static_cast<int>(chosen.size()) < count) chosen.insert(pick(kNodes));
    for (int c : chosen) {
      const std::string n = NodeName(c);
      p.nodes.push_back(n);
      p.truth[n] = kSlow.count(n) ? "FAIL" : "PASS";
    }
    if (chance(0.2)) p.truth[p.nodes[pick(static_cast<int>(p.nodes.size()))]] = "ERROR";
    plan.push_back(p);
  }

  // Watches every worker pod: a node with two validations' workers not yet finished at once
  // was claimed twice.
  std::atomic<bool> stop_watching{false};
  std::set<std::string> claimed_twice;
  std::set<std::string> pods_seen;
  std::thread watcher([&] {
    while (!stop_watching) {
      std::map<std::string, std::set<std::string>> live;  // node -> validations
      for (const auto& p : sim_->List("", "pods", kNs)) {
        const Json labels = p["metadata"].value("labels", Json::object());
        const std::string v = labels.value("perfgate.io/validation", "");
        const std::string node = labels.value("perfgate.io/node", "");
        if (v.empty() || node.empty()) continue;
        pods_seen.insert(p["metadata"].value("name", ""));
        if (Terminal(p)) continue;
        live[node].insert(v);
      }
      for (const auto& [node, vs] : live) {
        if (vs.size() > 1) {
          std::string who;
          for (const auto& v : vs) who += " " + v;
          if (claimed_twice.insert(node).second) std::cerr << node << " held by" << who << "\n";
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });

  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto completed = [&](const std::string& name) {
    auto v = sim_->Get("perfgate.io", "perfvalidations", "", name);
    return v.ok() && !v->value("status", Json::object()).value("completionTime", "").empty();
  };

  int kills = 0;
  int restarts_after_lost_lease = 0;
  int fault_episodes = 0;
  double next_kill = 20 + pick(20);
  double next_fault = 5 + pick(10);
  double fault_ends = -1;
  size_t applied = 0;
  const double limit_s = 900;
  while (elapsed() < limit_s) {
    int done = 0;
    int running = 0;
    for (size_t i = 0; i < applied; ++i) (completed(plan[i].name) ? done : running)++;
    if (done == kValidations) break;
    if (applied < plan.size() && running < kInFlight) {
      std::string yaml;
      for (int k = 0; k < kWave && applied < plan.size(); ++k, ++applied) {
        yaml += (yaml.empty() ? "" : "---\n") + SpecOf(plan[applied]);
      }
      Apply(yaml);
    }
    // The operator, killed now and then; restarted at once, as its Deployment would.
    if (elapsed() > next_kill && kills < 4) {
      op_.Kill(SIGKILL);
      op_.Start(*sim_);
      ++kills;
      next_kill = elapsed() + 30 + pick(30);
      std::cerr << "t=" << elapsed() << " s: operator killed and restarted\n";
    } else if (op_.Exited()) {
      // It gave up its lease in a fault episode: start it again.
      op_.Start(*sim_);
      ++restarts_after_lost_lease;
      std::cerr << "t=" << elapsed() << " s: the operator had exited; restarted\n";
    }
    // API faults: one episode of a few seconds at a time.
    if (fault_ends > 0 && elapsed() > fault_ends) {
      sim_->SetFailureFraction(0);
      sim_->SetLatencyMs(0);
      fault_ends = -1;
    }
    if (fault_ends < 0 && elapsed() > next_fault) {
      ++fault_episodes;
      const int kind = pick(5);
      if (kind == 0) sim_->SetFailureFraction(0.3, 500);
      if (kind == 1) sim_->ThrottleNextRequests(30, 1);
      if (kind == 2) sim_->DropWatches();
      if (kind == 3) sim_->SetLatencyMs(150);
      if (kind == 4) sim_->FailNextRequests(20, 503);
      fault_ends = elapsed() + 3 + pick(4);
      next_fault = fault_ends + 5 + pick(10);
      std::cerr << "t=" << elapsed() << " s: API fault " << kind << "\n";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  sim_->SetFailureFraction(0);
  sim_->SetLatencyMs(0);
  stop_watching = true;
  watcher.join();
  const double wall = elapsed();

  int validations_completed = 0;
  int verdicts_total = 0;
  int verdicts_equal = 0;
  int validations_equal = 0;
  int results_lost = 0;
  for (const auto& p : plan) {
    validations_completed += completed(p.name);
    std::map<std::string, std::string> got;
    std::map<std::string, std::string> why;
    for (const auto& r : Results(p.name)) {
      got[r["spec"].value("nodeName", "")] = r["spec"]["report"].value("verdict", "");
      why[r["spec"].value("nodeName", "")] =
          r["spec"].value("writtenBy", "worker") + ": " + r["spec"]["report"].value("reason", "");
    }
    bool all = true;
    for (const auto& [node, truth] : p.truth) {
      ++verdicts_total;
      const auto it = got.find(node);
      const std::string verdict = it == got.end() ? "" : it->second;
      if (verdict == truth) {
        ++verdicts_equal;
      } else {
        all = false;
        std::cerr << p.name << " " << node << ": " << (verdict.empty() ? "no result" : verdict)
                  << ", truth " << truth << " (" << why[node] << ")\n";
        // What the operators said about it.
        for (const auto& f : std::filesystem::directory_iterator(sim_->workDir())) {
          if (f.path().filename().string().rfind("operator-", 0) != 0) continue;
          std::istringstream log(kubesim::testing::Slurp(f.path().string()));
          for (std::string line; std::getline(log, line);) {
            if (line.find(p.name + ":") != std::string::npos &&
                line.find(node) != std::string::npos) {
              std::cerr << "  " << f.path().filename().string() << ": " << line << "\n";
            }
          }
        }
      }
      // A measured verdict that did not make it into a result.
      if (truth != "ERROR" && verdict != "PASS" && verdict != "FAIL") ++results_lost;
    }
    validations_equal += all;
  }
  // Pods are never deleted while their validation lives: every create beyond the pods that
  // exist made one twice.
  int pod_creates = 0;
  int claims_refused = 0;
  for (const auto& r : sim_->Requests()) {
    if (r.resource == "pods" && r.verb == "create" && r.code == 201) ++pod_creates;
    if (r.resource == "leases" && r.verb == "create" && r.code == 409) ++claims_refused;
  }
  int pods_total = 0;
  for (const auto& p : plan) pods_total += static_cast<int>(Pods(p.name).size());
  // A pod the operator deleted (one never scheduled) was still seen once.
  const int duplicate_pods = pod_creates - static_cast<int>(pods_seen.size());

  std::cerr << "soak: " << wall << " s wall; " << kills << " operator kills, "
            << restarts_after_lost_lease << " restarts after a lost lease, " << fault_episodes
            << " API fault episodes\n"
            << "soak: validations completed " << validations_completed << "/" << kValidations
            << ", verdicts equal to ground truth " << verdicts_equal << "/" << verdicts_total
            << " (validations " << validations_equal << "/" << kValidations << ")"
            << ", results lost " << results_lost << ", duplicate pods " << duplicate_pods
            << " (pod creates " << pod_creates << ", pods seen " << pods_seen.size() << ", left "
            << pods_total << ")"
            << ", nodes ever claimed twice " << claimed_twice.size() << ", claims refused (409) "
            << claims_refused << "\n";
  EXPECT_EQ(validations_completed, kValidations);
  EXPECT_EQ(results_lost, 0);
  EXPECT_EQ(duplicate_pods, 0);
  EXPECT_EQ(claimed_twice.size(), 0u);
  EXPECT_EQ(verdicts_equal, verdicts_total);
}

}  // namespace
}  // namespace perfgate::e2e
