// perfgate-profile-sim: every built-in profile, at each level, run on simulated nodes with the
// real decision rule, to show that a healthy node passes in its time budget and that a slow
// GPU fails.
//
// For each profile file in --profiles and each level, the plan is what the worker would run:
// BuildPlan on a spec naming the profile and level with --gpus GPUs per node, so the tests,
// thresholds, sampling, the node's error budget and each test's declared per-sample cost all
// come from the profile as shipped. Each test runs on its targets (every GPU for a per-GPU
// test) as the runner runs it: the runner's own stop rule (StopReason) after every sample,
// Assess with the node's budget, the final assessment at the stop. Sampling time is simulated
// as samples x the declared per-sample cost, so maxSeconds binds as it would on such a node.
//
// Figures: every statistical threshold's metric is drawn as truth x (1 + cv x N(0, 1)); point
// checks (max/min) read a value that meets them. A healthy node has every truth 10% clear of
// its bound (1.1 x bound for >=, 0.9 x bound for <=). A degraded node is healthy except for one
// statistical threshold on one GPU (one target), whose truth sits 5% on the wrong side; node k
// degrades threshold k mod (all statistical thresholds), so every threshold is tried. Noise
// models: CV 1%, 3%, 8%, and 3% with 2% of samples at half speed (a whole sample: every metric
// of that iteration halved, or doubled for a <= metric).
//
// A node's wall time is the sum over its tests of (warm-up + the most samples any of its
// targets took) x the per-sample cost: tests run in turn, a per-GPU test on all GPUs at once.
// The level's budget is 5 minutes for quick and 20 for full.
//
// Usage: perfgate-profile-sim [--profiles profiles] [--healthy 1000] [--degraded 600]
//        [--gpus 8] [--threads 2] [--seed 1] [--check]
// Output: a Markdown table per profile and level, as docs/benchmarks.md shows it
// (scripts/profile-table.sh writes it there, and checks that it is current). --check exits 1 unless
// every cell has healthy nodes PASSing within the budget in >= 99% of runs and degraded nodes
// FAILing in >= 95%.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/command_line.h"
#include "common/verdict.h"
#include "core/plan.h"
#include "tests/bench/error_rates.h"
#include "worker/runner.h"

namespace {

namespace fs = std::filesystem;
using perfgate::verdict::Verdict;
namespace verdict = perfgate::verdict;
namespace worker = perfgate::worker;

struct Options {
  std::string profiles = "profiles";
  int healthy = 1000;
  int degraded = 600;
  int gpus = 8;
  int threads = 2;
  unsigned long long seed = 1;
  bool check = false;
};

struct NoiseModel {
  std::string name;
  double cv = 0.01;
  bool half_speed = false;
};

const std::vector<NoiseModel> kNoise = {
    {"CV 1%", 0.01, false},
    {"CV 3%", 0.03, false},
    {"CV 8%", 0.08, false},
    {"CV 3%, 2% of samples at half speed", 0.03, true},
};

constexpr double kHealthyMargin = 0.10;
constexpr double kDegradedMargin = -0.05;
constexpr double kHalfSpeedShare = 0.02;

double BudgetSeconds(const std::string& level) { return level == "quick" ? 300 : 1200; }

// One statistical threshold somewhere in the plan: test, threshold.
struct Slot {
  int test = 0;
  int threshold = 0;
};

struct TestModel {
  const worker::PlannedTest* planned = nullptr;
  int targets = 1;
  double sample_seconds = 0;
  verdict::ErrorBudget budget;
};

struct NodeOutcome {
  Verdict verdict = Verdict::kPass;
  double seconds = 0;
};

// The truth of a threshold's metric `margin` clear of its bound (negative: on the wrong side).
double Truth(const verdict::Threshold& th, double margin) {
  const bool lower = th.op == verdict::Op::kGe || th.op == verdict::Op::kGt;
  return th.bound * (lower ? 1 + margin : 1 - margin);
}

NodeOutcome SimulateNode(const std::vector<TestModel>& tests, const NoiseModel& noise,
                         const Slot* degraded, int degraded_target, std::mt19937_64* rng) {
  std::normal_distribution<double> z(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  NodeOutcome node;
  bool any_fail = false;
  bool all_pass = true;
  for (int ti = 0; ti < static_cast<int>(tests.size()); ++ti) {
    const TestModel& tm = tests[ti];
    const worker::PlannedTest& t = *tm.planned;
    int most_samples = 0;
    for (int target = 0; target < tm.targets; ++target) {
      // Per metric: the truth of its statistical threshold, or a value meeting its point check.
      std::map<std::string, double> truth;
      std::map<std::string, bool> statistical;
      std::map<std::string, bool> lower_is_bad;
      for (int k = 0; k < static_cast<int>(t.thresholds.size()); ++k) {
        const verdict::Threshold& th = t.thresholds[k];
        const bool is_stat = verdict::IsStatistical(th.statistic);
        if (statistical[th.metric]) continue;  // the first statistical threshold sets it
        double margin = kHealthyMargin;
        if (degraded != nullptr && degraded->test == ti && degraded->threshold == k &&
            degraded_target == target) {
          margin = kDegradedMargin;
        }
        truth[th.metric] = is_stat ? Truth(th, margin) : th.bound;
        statistical[th.metric] = is_stat;
        lower_is_bad[th.metric] = th.op == verdict::Op::kGe || th.op == verdict::Op::kGt;
      }
      verdict::MetricSamples samples;
      verdict::Assessment assessment;
      int n = 0;
      while (true) {
        ++n;
        const bool slow = noise.half_speed && u(*rng) < kHalfSpeedShare;
        for (const auto& [metric, value] : truth) {
          double x = value;
          if (statistical[metric]) {
            x = value * (1 + noise.cv * z(*rng));
            if (slow) x *= lower_is_bad[metric] ? 0.5 : 2.0;
          }
          samples[metric].push_back(x);
        }
        const bool out_of_time = n * tm.sample_seconds >= t.sampling.max_seconds;
        if (!t.sampling.fixed) {
          assessment = verdict::Assess(t.thresholds, samples, t.sampling, tm.budget, {}, false);
        }
        if (!worker::StopReason(t.sampling, n, out_of_time, &assessment,
                                verdict::FailedForGood(t.thresholds, samples) >= 0)
                 .empty()) {
          break;
        }
      }
      assessment = verdict::Assess(t.thresholds, samples, t.sampling, tm.budget, {}, true);
      for (const verdict::Outcome& o : assessment.outcomes) {
        any_fail = any_fail || o.verdict == Verdict::kFail;
        all_pass = all_pass && o.verdict == Verdict::kPass;
      }
      most_samples = std::max(most_samples, n);
    }
    node.seconds += (t.sampling.warmup + most_samples) * tm.sample_seconds;
  }
  node.verdict = any_fail ? Verdict::kFail : all_pass ? Verdict::kPass : Verdict::kInconclusive;
  return node;
}

struct Cell {
  int healthy = 0;
  int healthy_pass = 0;
  int healthy_pass_in_budget = 0;
  int healthy_fail = 0;
  std::vector<double> healthy_seconds;
  int degraded = 0;
  int degraded_fail = 0;
  std::map<int, std::pair<int, int>> per_slot;  // slot -> (fails, nodes)
};

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

// The options, on the command line every perfgate program uses (common/command_line.h).
std::unique_ptr<CLI::App> Parse(Options* o, perfgate::cmdline::Action* action) {
  auto app = std::make_unique<CLI::App>(
      "The built-in profiles simulated on healthy and degraded nodes", "perfgate-profile-sim");
  app->add_option("--profiles", o->profiles, "the profiles' folder")->check(CLI::ExistingDirectory);
  app->add_option("--healthy", o->healthy, "healthy nodes per cell")->check(CLI::PositiveNumber);
  app->add_option("--degraded", o->degraded, "degraded nodes per cell")->check(CLI::PositiveNumber);
  app->add_option("--gpus", o->gpus, "GPUs per node")->check(CLI::PositiveNumber);
  app->add_option("--threads", o->threads, "worker threads")->check(CLI::PositiveNumber);
  app->add_option("--seed", o->seed, "the random seed");
  app->add_flag("--check", o->check, "exit 1 when a profile misses a goal");
  app->callback([action] { *action = [] { return 0; }; });
  return app;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  perfgate::cmdline::Action action;
  auto app = Parse(&o, &action);
  // --help and --version return 0 without reaching the callback: then there is nothing to run.
  if (const int code = perfgate::cmdline::ParseAndRun(*app, argc, argv, action);
      code != 0 || !action) {
    return code;
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(o.profiles)) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) {
    std::fprintf(stderr, "no profiles in %s\n", o.profiles.c_str());
    return 2;
  }
  bool all_met = true;
  std::printf(
      "Simulated nodes of %d GPUs: %d healthy (every figure 10%% clear of its bound) and "
      "%d degraded (one GPU 5%% below one bound) per cell.\n\n",
      o.gpus, o.healthy, o.degraded);
  for (const std::string& name : names) {
    for (const std::string level : {"quick", "full"}) {
      auto plan = perfgate::sim::ProfilePlan(o.profiles, name, level, o.gpus);
      if (!plan.ok()) {
        std::fprintf(stderr, "%s %s: %s\n", name.c_str(), level.c_str(),
                     plan.status().message().c_str());
        all_met = false;
        continue;
      }
      const int checks = worker::NodeChecks(*plan, o.gpus);
      std::vector<TestModel> tests;
      std::vector<Slot> slots;
      for (const worker::PlannedTest& t : plan->tests) {
        TestModel tm;
        tm.planned = &t;
        const auto scope = t.test->Info().scope;
        tm.targets = scope == perfgate::kernels::Scope::kGpu ? o.gpus : 1;
        tm.sample_seconds = t.test->SampleSeconds(t.params, o.gpus);
        tm.budget = verdict::SplitBudget(t.sampling.confidence, checks);
        for (int k = 0; k < static_cast<int>(t.thresholds.size()); ++k) {
          if (verdict::IsStatistical(t.thresholds[k].statistic)) {
            slots.push_back({static_cast<int>(tests.size()), k});
          }
        }
        tests.push_back(tm);
      }
      std::printf("#### %s, %s (%d statistical checks per node, budget %.0f min)\n\n", name.c_str(),
                  level.c_str(), checks, BudgetSeconds(level) / 60);
      std::printf(
          "| noise | healthy PASS | PASS within budget | healthy FAIL | node time median "
          "/ p99 | degraded FAIL | weakest threshold: FAIL | met |\n");
      std::printf("|---|---:|---:|---:|---:|---:|---|---|\n");
      for (std::size_t m = 0; m < kNoise.size(); ++m) {
        Cell cell;
        std::mutex mu;
        std::atomic<int> next{0};
        const int total = o.healthy + o.degraded;
        auto work = [&]() {
          for (int i = next++; i < total; i = next++) {
            std::mt19937_64 rng(o.seed * 1000003ULL + m * 7919ULL + static_cast<unsigned>(i));
            const bool is_degraded = i >= o.healthy && !slots.empty();
            const int slot = is_degraded ? (i - o.healthy) % static_cast<int>(slots.size()) : -1;
            const int target =
                is_degraded ? static_cast<int>(
                                  rng() % static_cast<unsigned>(tests[slots[slot].test].targets))
                            : 0;
            const NodeOutcome r =
                SimulateNode(tests, kNoise[m], is_degraded ? &slots[slot] : nullptr, target, &rng);
            std::lock_guard<std::mutex> lock(mu);
            if (!is_degraded) {
              ++cell.healthy;
              cell.healthy_pass += r.verdict == Verdict::kPass;
              cell.healthy_fail += r.verdict == Verdict::kFail;
              cell.healthy_pass_in_budget +=
                  r.verdict == Verdict::kPass && r.seconds <= BudgetSeconds(level);
              cell.healthy_seconds.push_back(r.seconds);
            } else {
              ++cell.degraded;
              cell.degraded_fail += r.verdict == Verdict::kFail;
              auto& [fails, nodes] = cell.per_slot[slot];
              fails += r.verdict == Verdict::kFail;
              ++nodes;
            }
          }
        };
        std::vector<std::thread> pool;
        for (int k = 0; k < o.threads; ++k) pool.emplace_back(work);
        for (auto& th : pool) th.join();

        auto pct = [](int a, int b) { return b == 0 ? 0.0 : 100.0 * a / b; };
        std::string weakest = "-";
        double weakest_rate = 101;
        for (const auto& [slot, counts] : cell.per_slot) {
          const double rate = pct(counts.first, counts.second);
          if (rate < weakest_rate) {
            weakest_rate = rate;
            const auto& t = *tests[slots[slot].test].planned;
            const auto& th = t.thresholds[slots[slot].threshold];
            char buf[256];
            std::snprintf(buf, sizeof(buf), "%s %s %s: %.1f%% of %d", t.name.c_str(),
                          verdict::StatisticName(th.statistic), th.metric.c_str(), rate,
                          counts.second);
            weakest = buf;
          }
        }
        const double in_budget = pct(cell.healthy_pass_in_budget, cell.healthy);
        const double degraded_fail = pct(cell.degraded_fail, cell.degraded);
        const bool met = in_budget >= 99.0 && degraded_fail >= 95.0;
        all_met = all_met && met;
        std::printf("| %s | %.1f%% | %.1f%% | %.2f%% | %.0f s / %.0f s | %.1f%% | %s | %s |\n",
                    kNoise[m].name.c_str(), pct(cell.healthy_pass, cell.healthy), in_budget,
                    pct(cell.healthy_fail, cell.healthy), Quantile(cell.healthy_seconds, 0.5),
                    Quantile(cell.healthy_seconds, 0.99), degraded_fail, weakest.c_str(),
                    met ? "yes" : "NO");
        std::fflush(stdout);
      }
      std::printf("\n");
    }
  }
  std::printf("%s\n", all_met ? "every profile meets its rates"
                              : "SOME PROFILE MISSES ITS RATES (rows marked NO)");
  return o.check && !all_met ? 1 : 0;
}
