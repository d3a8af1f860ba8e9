// Monte Carlo error rates of one threshold under the worker's own sequential procedure: the
// product's Assess after every sample, the runner's StopReason, the final Assess at the stop.
// Used by the error-rate unit test (tests/common/error_rates_test.cc) and the benchmark that
// prints the table in docs/methodology.md (tests/bench/error_rates.cc). Nothing of the rule is
// re-implemented here: only the figures are drawn.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "common/verdict.h"
#include "core/plan.h"

namespace perfgate::sim {

// The plan the worker would run for a spec naming built-in profile `name` (a file in
// `profiles_dir`) at `level` on nodes of `gpus` GPUs: the tests, thresholds, sampling and the
// node's statistical checks exactly as shipped.
Result<worker::Plan> ProfilePlan(const std::string& profiles_dir, const std::string& name,
                                 const std::string& level, int gpus);

// The figures' distribution around a truth T: T x (1 + cv x N(0, 1)), and with probability
// slow_share a slow sample: a ">=" figure (a bandwidth) halved, a "<=" figure (a latency)
// doubled.
struct Noise {
  double cv = 0.03;
  double slow_share = 0;
};

// The value of `statistic` (median, mean, p05, p95) of that distribution for T = 1, as the
// threshold's `op` sees it (which side is slow). Quantiles by bisection on the exact mixture
// CDF. 0 for a statistic that is not a property of the distribution (min, max, ciLow, ciHigh).
double TrueStatistic(verdict::Statistic statistic, verdict::Op op, const Noise& noise);

// One threshold, its figures' noise, and where its true statistic sits: `margin` x bound clear
// of the bound on the passing side (0.03: 3% clear), on the failing side when negative, on
// the bound at 0.
struct Scenario {
  verdict::Threshold threshold;
  Noise noise;
  double margin = 0;
};

struct Tally {
  int trials = 0;
  int pass = 0;
  int fail = 0;
  int inconclusive = 0;  // anything neither PASS nor FAIL
  long long samples = 0;
};

// Runs `trials` independent tests of `scenario` as the worker runs one (sampling with its
// minRepeats, maxRepeats and fixed/sequential plan; maxSeconds is not simulated: the sample
// cap binds), each threshold judged under `budget`. Trial i draws from its own generator seeded
// from (seed, i), so the tally does not depend on how trials are spread over threads.
// `first_trial` lets callers split one cell's trials over threads.
Tally RunTrials(const Scenario& scenario, const verdict::Sampling& sampling,
                const verdict::ErrorBudget& budget, int first_trial, int trials,
                std::uint64_t seed);

// The most wrong verdicts in `trials` that are consistent with a true rate of at most
// `alpha`: the smallest k with P(Binomial(trials, alpha) > k) <= risk. A count above it says,
// at error `risk`, that the rate exceeds alpha.
int MostConsistentErrors(int trials, double alpha, double risk);

}  // namespace perfgate::sim
