#include "tests/bench/error_rates.h"

#include <cmath>
#include <numbers>
#include <random>
#include <string>

#include "common/spec.h"
#include "common/stats.h"
#include "worker/runner.h"

namespace perfgate::sim {
namespace {

bool LowerIsRequired(verdict::Op op) { return op == verdict::Op::kGe || op == verdict::Op::kGt; }

// The factor a slow sample applies to the figure.
double SlowFactor(verdict::Op op) { return LowerIsRequired(op) ? 0.5 : 2.0; }

// P(X <= x) for the mixture at T = 1.
double MixtureCdf(double x, const Noise& noise, double slow) {
  auto normal_cdf = [&](double centre) {
    return 0.5 * std::erfc(-(x - centre) / (noise.cv * centre) / std::numbers::sqrt2);
  };
  return (1 - noise.slow_share) * normal_cdf(1.0) + noise.slow_share * normal_cdf(slow);
}

double MixtureQuantile(double q, const Noise& noise, double slow) {
  double lo = 0;
  double hi = 4;
  for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
    const double mid = (lo + hi) / 2;
    (MixtureCdf(mid, noise, slow) < q ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace

Result<worker::Plan> ProfilePlan(const std::string& profiles_dir, const std::string& name,
                                 const std::string& level, int gpus) {
  const std::string yaml =
      "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\n"
      "metadata: {name: sim}\nspec: {profile: " +
      name + ", level: " + level + ", gpusPerNode: " + std::to_string(gpus) + "}\n";
  auto loaded = spec::ParseValidation(yaml, "sim.yaml");
  if (!loaded.ok()) return loaded.status();
  worker::PlanOptions options;
  options.profile_dirs = {profiles_dir};
  return worker::BuildPlan(*loaded, options);
}

double TrueStatistic(verdict::Statistic statistic, verdict::Op op, const Noise& noise) {
  const double slow = SlowFactor(op);
  switch (statistic) {
    case verdict::Statistic::kMean:
      return 1 - noise.slow_share + noise.slow_share * slow;
    case verdict::Statistic::kMedian:
      return MixtureQuantile(0.5, noise, slow);
    case verdict::Statistic::kP05:
      return MixtureQuantile(0.05, noise, slow);
    case verdict::Statistic::kP95:
      return MixtureQuantile(0.95, noise, slow);
    default:
      return 0;
  }
}

Tally RunTrials(const Scenario& scenario, const verdict::Sampling& sampling,
                const verdict::ErrorBudget& budget, int first_trial, int trials,
                std::uint64_t seed) {
  const verdict::Threshold& th = scenario.threshold;
  const bool lower = LowerIsRequired(th.op);
  // The truth T whose statistic sits `margin` x bound on the passing side.
  const double target = th.bound * (lower ? 1 + scenario.margin : 1 - scenario.margin);
  const double truth = target / TrueStatistic(th.statistic, th.op, scenario.noise);
  const double slow = SlowFactor(th.op);
  const std::vector<verdict::Threshold> thresholds = {th};
  const std::map<std::string, std::string> no_units;
  Tally tally;
  for (int i = first_trial; i < first_trial + trials; ++i) {
    std::seed_seq seq{static_cast<std::uint64_t>(seed), static_cast<std::uint64_t>(i)};
    std::mt19937_64 rng(seq);
    std::normal_distribution<double> z(0.0, 1.0);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    verdict::MetricSamples samples;
    std::vector<double>& x = samples[th.metric];
    verdict::Assessment assessment;
    int n = 0;
    while (true) {
      ++n;
      double figure = truth * (1 + scenario.noise.cv * z(rng));
      if (scenario.noise.slow_share > 0 && u(rng) < scenario.noise.slow_share) figure *= slow;
      x.push_back(figure);
      if (!sampling.fixed) {
        assessment = verdict::Assess(thresholds, samples, sampling, budget, no_units, false);
      }
      if (!worker::StopReason(sampling, n, false, &assessment,
                              verdict::FailedForGood(thresholds, samples) >= 0)
               .empty()) {
        break;
      }
    }
    assessment = verdict::Assess(thresholds, samples, sampling, budget, no_units, true);
    const verdict::Verdict v = assessment.outcomes.front().verdict;
    ++tally.trials;
    tally.pass += v == verdict::Verdict::kPass;
    tally.fail += v == verdict::Verdict::kFail;
    tally.inconclusive += v != verdict::Verdict::kPass && v != verdict::Verdict::kFail;
    tally.samples += n;
  }
  return tally;
}

int MostConsistentErrors(int trials, double alpha, double risk) {
  int k = 0;
  while (k < trials && 1 - stats::BinomialCdf(k, trials, alpha) > risk) ++k;
  return k;
}

}  // namespace perfgate::sim
