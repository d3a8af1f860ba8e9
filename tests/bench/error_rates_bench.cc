// perfgate-error-rates: both error rates of every statistic a threshold can name, measured by
// Monte Carlo under the sampling the built-in profiles ship, with the product's own rule
// (Assess) and stop rule (StopReason). Prints the Markdown tables of docs/methodology.md,
// "Both error rates, measured".
//
// Configurations: every distinct sampling plan (minRepeats, maxRepeats, fixed or sequential,
// confidence) that the statistical thresholds of --profile use, at each level, each under the
// profile's node budget (SplitBudget over the node's statistical checks on --gpus GPUs); and
// the quick level's plan for a spec with a single check, where fail_alpha is the whole
// 1 - confidence and the Monte Carlo can resolve it.
//
// Rows: median, mean and p05 against a ">=" bound, p95 against a "<=" bound; figures
// T x (1 + cv N(0, 1)) at CV 1%, 3%, 8%, each with and without 2% of samples at half speed
// (a "<=" figure doubled). Columns: the true statistic (of that mixture) on the bound, 1% and
// 3% beyond it (a PASS is wrong there), and 1%, 3% and 10% clear of it (a FAIL is wrong there).
// On the bound both count: the threshold is met, so a FAIL is wrong, and it is the edge of not
// being met, where a PASS's error is largest. Each cell: the wrong verdict's rate, then
// INCONCLUSIVE's.
//
// Usage: perfgate-error-rates [--profiles profiles] [--profile h200-sxm-141gb] [--gpus 8]
//        [--trials 2000] [--threads 2] [--seed 1] [--check]
// --check exits 1 when any wrong-verdict count exceeds what its promise allows at Monte Carlo
// risk 0.001 (MostConsistentErrors); such cells are printed in bold.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/command_line.h"
#include "core/plan.h"
#include "tests/bench/error_rates.h"

namespace {

namespace verdict = perfgate::verdict;
namespace sim = perfgate::sim;
namespace worker = perfgate::worker;

struct Options {
  std::string profiles = "profiles";
  std::string profile = "h200-sxm-141gb";
  int gpus = 8;
  int trials = 2000;
  int threads = 2;
  unsigned long long seed = 1;
  bool check = false;
  std::string statistic;  // only this statistic's rows ("" = all)
};

// The options, on the command line every perfgate program uses (common/command_line.h).
std::unique_ptr<CLI::App> Parse(Options* o, perfgate::cmdline::Action* action) {
  auto app = std::make_unique<CLI::App>(
      "Both error rates of each statistic under the profiles' own sampling",
      "perfgate-error-rates");
  app->add_option("--profiles", o->profiles, "the profiles' folder")->check(CLI::ExistingDirectory);
  app->add_option("--profile", o->profile, "the profile whose sampling is simulated");
  app->add_option("--gpus", o->gpus, "GPUs per node")->check(CLI::PositiveNumber);
  app->add_option("--trials", o->trials, "trials per cell")->check(CLI::PositiveNumber);
  app->add_option("--threads", o->threads, "worker threads")->check(CLI::PositiveNumber);
  app->add_option("--seed", o->seed, "the random seed");
  app->add_flag("--check", o->check, "exit 1 when a rate is above its promise");
  app->add_option("--statistic", o->statistic,
                  "only this statistic's rows; each cell keeps the seed it has in the whole "
                  "table, so its figures are the ones a full run prints")
      ->check(CLI::IsMember({"median", "mean", "p05", "p95"}));
  app->callback([action] { *action = [] { return 0; }; });
  return app;
}

// One table: a sampling plan under one node budget.
struct Config {
  std::string title;
  verdict::Sampling sampling;
  verdict::ErrorBudget budget;
};

struct Row {
  verdict::Statistic statistic;
  verdict::Op op;
  sim::Noise noise;
};

// The columns: where the truth sits, and which wrong verdict is counted there.
struct Column {
  double margin;
  bool counts_pass;  // a PASS is wrong here
  bool counts_fail;  // a FAIL is wrong here
  const char* header;
};
const std::vector<Column> kColumns = {
    {0.0, true, true, "on the bound: PASS · FAIL (INC)"},
    {-0.01, true, false, "1% short: PASS (INC)"},
    {-0.03, true, false, "3% short: PASS (INC)"},
    {0.01, false, true, "1% clear: FAIL (INC)"},
    {0.03, false, true, "3% clear: FAIL (INC)"},
    {0.10, false, true, "10% clear: FAIL (INC)"},
};

std::vector<Row> Rows() {
  std::vector<Row> rows;
  const std::vector<std::pair<verdict::Statistic, verdict::Op>> stats = {
      {verdict::Statistic::kMedian, verdict::Op::kGe},
      {verdict::Statistic::kMean, verdict::Op::kGe},
      {verdict::Statistic::kP05, verdict::Op::kGe},
      {verdict::Statistic::kP95, verdict::Op::kLe}};
  for (const auto& [statistic, op] : stats) {
    for (double slow : {0.0, 0.02}) {
      for (double cv : {0.01, 0.03, 0.08}) rows.push_back({statistic, op, {cv, slow}});
    }
  }
  return rows;
}

bool Selected(const Row& row, const Options& o) {
  return o.statistic.empty() || o.statistic == verdict::StatisticName(row.statistic);
}

std::string Pct(int count, int trials) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f%%", 100.0 * count / trials);
  return buf;
}

std::string SamplingText(const verdict::Sampling& s) {
  char buf[160];
  if (s.fixed) {
    std::snprintf(buf, sizeof(buf), "fixed at %d samples", s.max_repeats);
  } else {
    std::snprintf(buf, sizeof(buf), "sequential, minRepeats %d, maxRepeats %d", s.min_repeats,
                  s.max_repeats);
  }
  return buf;
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
  std::vector<Config> configs;
  verdict::Sampling quick_sampling;
  bool have_quick = false;
  for (const std::string level : {"quick", "full"}) {
    auto plan = sim::ProfilePlan(o.profiles, o.profile, level, o.gpus);
    if (!plan.ok()) {
      std::fprintf(stderr, "%s %s: %s\n", o.profile.c_str(), level.c_str(),
                   plan.status().message().c_str());
      return 2;
    }
    const int checks = worker::NodeChecks(*plan, o.gpus);
    std::set<std::tuple<int, int, bool, double>> seen;
    for (const worker::PlannedTest& t : plan->tests) {
      if (worker::StatisticalThresholds(t) == 0) continue;
      const verdict::Sampling& s = t.sampling;
      if (!seen.insert({s.min_repeats, s.max_repeats, s.fixed, s.confidence}).second) continue;
      std::string tests;
      for (const worker::PlannedTest& u : plan->tests) {
        if (worker::StatisticalThresholds(u) == 0 || u.sampling.min_repeats != s.min_repeats ||
            u.sampling.max_repeats != s.max_repeats || u.sampling.fixed != s.fixed) {
          continue;
        }
        tests += (tests.empty() ? "" : ", ") + u.name;
      }
      const verdict::ErrorBudget budget = verdict::SplitBudget(s.confidence, checks);
      char title[512];
      std::snprintf(title, sizeof(title),
                    "%s, %s (%s): %s, confidence %.2f over the node's %d statistical checks: "
                    "wrong PASS at most %.3g%%, wrong FAIL at most %.3g%% per threshold",
                    o.profile.c_str(), level.c_str(), tests.c_str(), SamplingText(s).c_str(),
                    s.confidence, checks, 100 * budget.pass_alpha, 100 * budget.fail_alpha);
      configs.push_back({title, s, budget});
      if (!have_quick && level == std::string("quick") && !s.fixed) {
        quick_sampling = s;
        have_quick = true;
      }
    }
  }
  if (have_quick) {
    const verdict::ErrorBudget one = verdict::SplitBudget(quick_sampling.confidence, 1);
    char title[512];
    std::snprintf(title, sizeof(title),
                  "a spec with one check, the quick level's sampling (%s), confidence %.2f: "
                  "wrong PASS at most %.3g%%, wrong FAIL at most %.3g%%",
                  SamplingText(quick_sampling).c_str(), quick_sampling.confidence,
                  100 * one.pass_alpha, 100 * one.fail_alpha);
    configs.push_back({title, quick_sampling, one});
  }

  const std::vector<Row> rows = Rows();
  const std::size_t per_config = rows.size() * kColumns.size();
  const std::size_t cells = configs.size() * per_config;
  std::vector<sim::Tally> tallies(cells);
  std::atomic<std::size_t> next{0};
  auto work = [&]() {
    for (std::size_t c = next++; c < cells; c = next++) {
      const Config& config = configs[c / per_config];
      const Row& row = rows[(c % per_config) / kColumns.size()];
      if (!Selected(row, o)) continue;
      const Column& col = kColumns[c % kColumns.size()];
      sim::Scenario scenario;
      scenario.threshold.metric = "figure";
      scenario.threshold.statistic = row.statistic;
      scenario.threshold.op = row.op;
      scenario.threshold.bound = 100;
      scenario.noise = row.noise;
      scenario.margin = col.margin;
      tallies[c] = sim::RunTrials(scenario, config.sampling, config.budget, 0, o.trials,
                                  o.seed * 1000003ULL + c);
    }
  };
  std::vector<std::thread> pool;
  for (int k = 0; k < o.threads; ++k) pool.emplace_back(work);
  for (auto& t : pool) t.join();

  constexpr double kRisk = 0.001;
  std::printf(
      "%d trials per cell, seed %llu. Each cell: the wrong verdict's rate, then INCONCLUSIVE's "
      "in brackets. Bold: above its promise by more than %d trials' Monte Carlo allows at risk "
      "%g.\n\n",
      o.trials, o.seed, o.trials, kRisk);
  std::vector<std::string> above;
  for (std::size_t ci = 0; ci < configs.size(); ++ci) {
    const Config& config = configs[ci];
    const int pass_allowed = sim::MostConsistentErrors(o.trials, config.budget.pass_alpha, kRisk);
    const int fail_allowed = sim::MostConsistentErrors(o.trials, config.budget.fail_alpha, kRisk);
    std::printf("#### %s\n\n| statistic | noise |", config.title.c_str());
    for (const Column& col : kColumns) std::printf(" %s |", col.header);
    std::printf("\n|---|---|");
    for (std::size_t k = 0; k < kColumns.size(); ++k) std::printf("---:|");
    std::printf("\n");
    for (std::size_t ri = 0; ri < rows.size(); ++ri) {
      const Row& row = rows[ri];
      if (!Selected(row, o)) continue;
      char noise[96];
      std::snprintf(noise, sizeof(noise), "CV %.0f%%%s", row.noise.cv * 100,
                    row.noise.slow_share > 0 ? ", 2% at half speed" : "");
      std::printf("| %s %s | %s |", verdict::StatisticName(row.statistic), verdict::OpName(row.op),
                  noise);
      for (std::size_t k = 0; k < kColumns.size(); ++k) {
        const sim::Tally& t = tallies[ci * per_config + ri * kColumns.size() + k];
        const Column& col = kColumns[k];
        auto wrong = [&](int count, int allowed, const char* what) {
          const std::string text = Pct(count, t.trials);
          if (count <= allowed) return text;
          above.push_back(config.title.substr(0, config.title.find(':')) + ": " +
                          verdict::StatisticName(row.statistic) + " " + noise + ", " + col.header +
                          ": " + what + " " + text);
          return "**" + text + "**";
        };
        std::string cell;
        if (col.counts_pass) cell += wrong(t.pass, pass_allowed, "PASS");
        if (col.counts_pass && col.counts_fail) cell += " · ";
        if (col.counts_fail) cell += wrong(t.fail, fail_allowed, "FAIL");
        cell += " (" + Pct(t.inconclusive, t.trials) + ")";
        std::printf(" %s |", cell.c_str());
      }
      std::printf("\n");
    }
    std::printf("\n");
  }
  if (above.empty()) {
    std::printf("every measured rate is within its promise\n");
  } else {
    std::printf("RATES ABOVE THEIR PROMISE:\n");
    for (const std::string& a : above) std::printf("- %s\n", a.c_str());
  }
  return o.check && !above.empty() ? 1 : 0;
}
