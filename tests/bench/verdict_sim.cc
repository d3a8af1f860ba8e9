// perfgate-verdict-sim: simulated node validations under GPU-like noise, scored by rule.
//
// Each simulated node has `gpus` tests (one per GPU, run side by side), each test measures
// `metrics` metrics per sample, and each metric has one threshold "median >= bound"; the node
// confidence is split over all gpus x metrics checks with SplitConfidence. A healthy node has
// every bound at 90% of its true median; a degraded node has one GPU whose metrics all have
// a true median 5% (or 10%) below the bound, the other GPUs healthy. Rules compared:
//   perfgate        the sequential rule (common/verdict.h), min/max repeats as given
//   perfgate-fixed  perfgate's fixed mode: N samples, one order-statistic interval per check
//   one-run         one sample per check, FAIL if below the bound
//   mean-of-N       the mean of N samples against the bound, no interval
//   retry-3         one-run, repeated for the whole node up to 3 times until it passes
// Every rule sees the same noise process and discards the same `warmup` first iterations.
// Noise models, each at CV 1%, 3% and 8% (normal): clean; 2% of iterations at half speed; a
// drift to -3% at perfgate's last possible iteration (the same slope per iteration for every
// rule); the first three iterations 20% slow; all three together.
//
// Usage: perfgate-verdict-sim [--nodes 10000] [--threads 2] [--min-repeats 5]
//        [--max-repeats 150] [--confidence 0.99] [--warmup 2] [--fixed-n 100] [--mean-n 10]
//        [--gpus 8] [--metrics 4] [--cv 1,3,8] [--seed 1] [--check-assess 200]
//        [--degraded-metrics all|one]
// Output: a Markdown table on stdout.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/stats.h"
#include "common/verdict.h"

namespace {

using perfgate::verdict::Verdict;

struct Options {
  int nodes = 10000;
  int threads = 2;
  int min_repeats = 5;
  int max_repeats = 150;
  double confidence = 0.99;
  int warmup = 2;
  int fixed_n = 100;
  int mean_n = 10;
  int gpus = 8;
  int metrics = 4;
  std::vector<double> cvs = {0.01, 0.03, 0.08};
  unsigned long long seed = 1;
  int check_assess = 200;
  bool degrade_all_metrics = true;
};

struct NoiseModel {
  std::string name;
  double cv = 0.01;
  bool slow_iterations = false;  // 2% of iterations at half speed
  bool drift = false;            // -3% linearly over perfgate's longest run, then flat
  bool warmup_slow = false;      // the first three iterations 20% slow
};

struct NodeKind {
  std::string name;
  double degraded_ratio = 0;  // 0: healthy; else the bad GPU's true median / bound
};

constexpr double kHealthyBoundFraction = 0.9;

// One GPU's iterations: every metric of an iteration shares its slow events (a preemption or
// a clock dip hits the whole sample) and has its own Gaussian noise.
class IterationSource {
 public:
  IterationSource(const NoiseModel& model, std::vector<double> medians, int horizon,
                  std::mt19937_64* rng)
      : model_(model), medians_(std::move(medians)), horizon_(horizon), rng_(rng) {}

  // Fills `out` with the next iteration's values, one per metric.
  void Next(std::vector<double>* out) {
    double factor = 1;
    if (model_.warmup_slow && index_ < 3) factor *= 0.8;
    if (model_.slow_iterations && uniform_(*rng_) < 0.02) factor *= 0.5;
    if (model_.drift) {
      factor *= 1 - 0.03 * std::min(1.0, static_cast<double>(index_) / std::max(1, horizon_ - 1));
    }
    out->resize(medians_.size());
    for (size_t m = 0; m < medians_.size(); ++m) {
      (*out)[m] = medians_[m] * factor * (1 + model_.cv * normal_(*rng_));
    }
    ++index_;
  }

 private:
  NoiseModel model_;
  std::vector<double> medians_;
  int horizon_;
  std::mt19937_64* rng_;
  int index_ = 0;
  std::normal_distribution<double> normal_{0.0, 1.0};
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
};

enum class Rule { kPerfgate, kPerfgateFixed, kOneRun, kMeanOfN, kRetry3 };
constexpr Rule kRules[] = {Rule::kPerfgate, Rule::kPerfgateFixed, Rule::kOneRun, Rule::kMeanOfN,
                           Rule::kRetry3};

std::string RuleName(Rule r, const Options& o) {
  switch (r) {
    case Rule::kPerfgate:
      return "perfgate (min " + std::to_string(o.min_repeats) + ", max " +
             std::to_string(o.max_repeats) + ")";
    case Rule::kPerfgateFixed:
      return "perfgate fixed N=" + std::to_string(o.fixed_n);
    case Rule::kOneRun:
      return "one run";
    case Rule::kMeanOfN:
      return "mean of N=" + std::to_string(o.mean_n);
    case Rule::kRetry3:
      return "retry until pass (3)";
  }
  return "?";
}

// Decision tables that do not depend on the data, computed once with the same functions
// verdict::Assess calls.
struct Tables {
  double threshold_confidence = 0;
  std::vector<int> fail_count;  // per n: samples below the bound that decide FAIL
  std::vector<int> pass_count;  // per n: samples at or above it that decide PASS
  int fixed_low_rank = 0;       // perfgate-fixed: the order-statistic interval's ranks
  int fixed_high_rank = 0;
  bool fixed_bounded = false;
};

Tables MakeTables(const Options& o) {
  Tables t;
  t.threshold_confidence = perfgate::verdict::SplitConfidence(o.confidence, o.gpus * o.metrics);
  const double side = perfgate::verdict::SideAlpha(t.threshold_confidence);
  t.fail_count.assign(o.max_repeats + 1, 0);
  t.pass_count.assign(o.max_repeats + 1, 0);
  for (int n = 1; n <= o.max_repeats; ++n) {
    t.fail_count[n] = perfgate::stats::BernoulliMixtureCriticalCount(n, 0.5, side);
    t.pass_count[n] = perfgate::stats::BernoulliMixtureCriticalCount(n, 0.5, side);
  }
  // The interval of ranks 1..N is the interval of ranks.
  std::vector<double> ranks(o.fixed_n);
  for (int i = 0; i < o.fixed_n; ++i) ranks[i] = i + 1;
  const auto iv = perfgate::stats::QuantileInterval(ranks, 0.5, t.threshold_confidence);
  t.fixed_low_rank = static_cast<int>(iv.low);
  t.fixed_high_rank = static_cast<int>(iv.high);
  t.fixed_bounded = iv.confidence >= t.threshold_confidence;
  return t;
}

struct TestOutcome {
  Verdict verdict = Verdict::kPass;  // FAIL if any check fails, else INCONCLUSIVE if any
  int samples = 0;
};

Verdict Combine(Verdict a, Verdict b) {
  if (a == Verdict::kFail || b == Verdict::kFail) return Verdict::kFail;
  if (a == Verdict::kInconclusive || b == Verdict::kInconclusive) return Verdict::kInconclusive;
  return Verdict::kPass;
}

// Runs one GPU's test under `rule`; `values` (if non-null) records the measured samples per
// metric, for the cross-check against verdict::Assess.
TestOutcome RunTest(Rule rule, const Options& o, const Tables& t, IterationSource* src,
                    const std::vector<double>& bounds,
                    std::vector<std::vector<double>>* values = nullptr) {
  const int metrics = static_cast<int>(bounds.size());
  std::vector<double> it;
  for (int w = 0; w < o.warmup; ++w) src->Next(&it);
  TestOutcome out;
  switch (rule) {
    case Rule::kPerfgate: {
      std::vector<int> below(metrics, 0);
      for (int n = 1; n <= o.max_repeats; ++n) {
        src->Next(&it);
        for (int m = 0; m < metrics; ++m) {
          below[m] += it[m] < bounds[m];
          if (values) (*values)[m].push_back(it[m]);
        }
        if (n < o.min_repeats && n < o.max_repeats) continue;
        Verdict v = Verdict::kPass;
        bool all_decided = true;
        for (int m = 0; m < metrics; ++m) {
          const Verdict vm = perfgate::verdict::SequentialQuantileVerdict(
              below[m], n - below[m], t.fail_count[n], t.pass_count[n]);
          all_decided = all_decided && vm != Verdict::kInconclusive;
          v = Combine(v, vm);
        }
        if (all_decided || n == o.max_repeats) {
          out.verdict = v;
          out.samples = n;
          return out;
        }
      }
      break;
    }
    case Rule::kPerfgateFixed: {
      std::vector<int> below(metrics, 0);
      for (int n = 1; n <= o.fixed_n; ++n) {
        src->Next(&it);
        for (int m = 0; m < metrics; ++m) below[m] += it[m] < bounds[m];
      }
      out.samples = o.fixed_n;
      out.verdict = Verdict::kPass;
      for (int m = 0; m < metrics; ++m) {
        Verdict vm = Verdict::kInconclusive;
        // Interval [X_(l), X_(h)] wholly at or above the bound: fewer than l samples below.
        if (t.fixed_bounded && below[m] < t.fixed_low_rank) vm = Verdict::kPass;
        if (t.fixed_bounded && below[m] >= t.fixed_high_rank) vm = Verdict::kFail;
        out.verdict = Combine(out.verdict, vm);
      }
      return out;
    }
    case Rule::kOneRun:
    case Rule::kRetry3: {
      src->Next(&it);
      out.samples = 1;
      for (int m = 0; m < metrics; ++m) {
        out.verdict = Combine(out.verdict, it[m] < bounds[m] ? Verdict::kFail : Verdict::kPass);
      }
      return out;
    }
    case Rule::kMeanOfN: {
      std::vector<double> sum(metrics, 0);
      for (int n = 1; n <= o.mean_n; ++n) {
        src->Next(&it);
        for (int m = 0; m < metrics; ++m) sum[m] += it[m];
      }
      out.samples = o.mean_n;
      for (int m = 0; m < metrics; ++m) {
        out.verdict =
            Combine(out.verdict, sum[m] / o.mean_n < bounds[m] ? Verdict::kFail : Verdict::kPass);
      }
      return out;
    }
  }
  return out;
}

// The drift is a physical process (a GPU heating up), so every rule sees the same slope per
// iteration: -3% reached at the last iteration perfgate's sequential rule may take.
int DriftHorizon(const Options& o) { return o.warmup + o.max_repeats; }

struct NodePlan {
  std::vector<std::vector<double>> medians;  // per GPU, per metric: true medians
  std::vector<double> bounds;                // per metric (same on every GPU)
};

NodePlan MakeNodePlan(const Options& o, const NodeKind& kind) {
  NodePlan p;
  // Metric m has a true median of 100 * (m + 1) on a healthy GPU, so units differ by metric.
  for (int m = 0; m < o.metrics; ++m) p.bounds.push_back(kHealthyBoundFraction * 100 * (m + 1));
  for (int g = 0; g < o.gpus; ++g) {
    std::vector<double> med;
    for (int m = 0; m < o.metrics; ++m) {
      double median = 100.0 * (m + 1);
      const bool degrade = kind.degraded_ratio > 0 && g == 0 && (o.degrade_all_metrics || m == 0);
      if (degrade) median = kind.degraded_ratio * p.bounds[m];
      med.push_back(median);
    }
    p.medians.push_back(med);
  }
  return p;
}

struct Tally {
  long long fail = 0, inconclusive = 0, pass = 0;
  long long test_samples = 0, tests = 0;
  long long node_max_samples = 0;
  void Add(const Tally& t) {
    fail += t.fail;
    inconclusive += t.inconclusive;
    pass += t.pass;
    test_samples += t.test_samples;
    tests += t.tests;
    node_max_samples += t.node_max_samples;
  }
};

Tally RunNodes(Rule rule, const Options& o, const Tables& t, const NoiseModel& model,
               const NodeKind& kind, int first, int count, unsigned long long seed) {
  Tally tally;
  const NodePlan plan = MakeNodePlan(o, kind);
  for (int node = first; node < first + count; ++node) {
    std::mt19937_64 rng(seed * 1000003ULL + static_cast<unsigned long long>(node));
    Verdict node_verdict = Verdict::kPass;
    int max_samples = 0;
    const int attempts = rule == Rule::kRetry3 ? 3 : 1;
    for (int a = 0; a < attempts; ++a) {
      node_verdict = Verdict::kPass;
      for (int g = 0; g < o.gpus; ++g) {
        IterationSource src(model, plan.medians[g], DriftHorizon(o), &rng);
        const TestOutcome out = RunTest(rule, o, t, &src, plan.bounds);
        node_verdict = Combine(node_verdict, out.verdict);
        tally.test_samples += out.samples;
        max_samples = std::max(max_samples, out.samples);
      }
      if (node_verdict == Verdict::kPass) break;
    }
    tally.tests += o.gpus;
    tally.node_max_samples += max_samples;
    if (node_verdict == Verdict::kFail) {
      ++tally.fail;
    } else if (node_verdict == Verdict::kInconclusive) {
      ++tally.inconclusive;
    } else {
      ++tally.pass;
    }
  }
  return tally;
}

Tally RunCell(Rule rule, const Options& o, const Tables& t, const NoiseModel& model,
              const NodeKind& kind, unsigned long long seed) {
  const int threads = std::max(1, o.threads);
  std::vector<Tally> parts(threads);
  std::vector<std::thread> pool;
  const int per = (o.nodes + threads - 1) / threads;
  for (int i = 0; i < threads; ++i) {
    const int first = i * per;
    const int count = std::max(0, std::min(per, o.nodes - first));
    pool.emplace_back(
        [&, i, first, count] { parts[i] = RunNodes(rule, o, t, model, kind, first, count, seed); });
  }
  for (auto& th : pool) th.join();
  Tally total;
  for (const Tally& p : parts) total.Add(p);
  return total;
}

// Replays tests of the fast path through verdict::Assess, sample by sample, and counts tests
// where the stopping point or the verdict differ. Returns the number of mismatches.
int CheckAgainstAssess(const Options& o, const Tables& t, const std::vector<NoiseModel>& models,
                       const std::vector<NodeKind>& kinds) {
  int mismatches = 0;
  int checked = 0;
  std::vector<perfgate::verdict::Threshold> ths;
  const NodePlan healthy = MakeNodePlan(o, kinds[0]);
  for (int m = 0; m < o.metrics; ++m) {
    perfgate::verdict::Threshold th;
    th.metric = "m" + std::to_string(m);
    th.bound = healthy.bounds[m];
    ths.push_back(th);
  }
  perfgate::verdict::Sampling sampling;
  sampling.min_repeats = o.min_repeats;
  sampling.max_repeats = o.max_repeats;
  sampling.warmup = o.warmup;
  for (const NoiseModel& model : models) {
    for (const NodeKind& kind : kinds) {
      const NodePlan plan = MakeNodePlan(o, kind);
      for (int i = 0; i < o.check_assess / static_cast<int>(models.size() * kinds.size()) + 1;
           ++i) {
        std::mt19937_64 rng(o.seed * 7919ULL + static_cast<unsigned long long>(i));
        IterationSource src(model, plan.medians[0], DriftHorizon(o), &rng);
        std::vector<std::vector<double>> values(o.metrics);
        const TestOutcome fast = RunTest(Rule::kPerfgate, o, t, &src, plan.bounds, &values);
        // Replay: assess after every sample; stop where the runner would.
        perfgate::verdict::MetricSamples samples;
        perfgate::verdict::Assessment a;
        int n = 0;
        for (n = 1; n <= static_cast<int>(values[0].size()); ++n) {
          for (int m = 0; m < o.metrics; ++m) {
            samples["m" + std::to_string(m)].assign(values[m].begin(), values[m].begin() + n);
          }
          a = perfgate::verdict::Assess(ths, samples, sampling, t.threshold_confidence, {},
                                        n == o.max_repeats);
          if (a.stop) break;
        }
        Verdict v = Verdict::kPass;
        for (const auto& out : a.outcomes) v = Combine(v, out.verdict);
        ++checked;
        if (a.samples != fast.samples || v != fast.verdict) ++mismatches;
      }
    }
  }
  std::fprintf(stderr, "cross-check against verdict::Assess: %d tests, %d mismatches\n", checked,
               mismatches);
  return mismatches;
}

std::vector<double> ParseList(const std::string& s) {
  std::vector<double> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::atof(item.c_str()));
  return out;
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--nodes") {
      o->nodes = std::atoi(value().c_str());
    } else if (a == "--threads") {
      o->threads = std::atoi(value().c_str());
    } else if (a == "--min-repeats") {
      o->min_repeats = std::atoi(value().c_str());
    } else if (a == "--max-repeats") {
      o->max_repeats = std::atoi(value().c_str());
    } else if (a == "--confidence") {
      o->confidence = std::atof(value().c_str());
    } else if (a == "--warmup") {
      o->warmup = std::atoi(value().c_str());
    } else if (a == "--fixed-n") {
      o->fixed_n = std::atoi(value().c_str());
    } else if (a == "--mean-n") {
      o->mean_n = std::atoi(value().c_str());
    } else if (a == "--gpus") {
      o->gpus = std::atoi(value().c_str());
    } else if (a == "--metrics") {
      o->metrics = std::atoi(value().c_str());
    } else if (a == "--cv") {
      o->cvs.clear();
      for (double cv : ParseList(value())) o->cvs.push_back(cv / 100);
    } else if (a == "--seed") {
      o->seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--check-assess") {
      o->check_assess = std::atoi(value().c_str());
    } else if (a == "--degraded-metrics") {
      o->degrade_all_metrics = value() != "one";
    } else {
      std::fprintf(stderr, "unknown option %s (see the comment at the top of verdict_sim.cc)\n",
                   a.c_str());
      return false;
    }
  }
  return o->nodes > 0 && o->min_repeats >= 1 && o->max_repeats >= o->min_repeats &&
         o->fixed_n >= 1 && o->mean_n >= 1 && o->gpus >= 1 && o->metrics >= 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) return 2;
  const Tables t = MakeTables(o);

  std::vector<NoiseModel> models;
  for (double cv : o.cvs) {
    char cvs[16];
    std::snprintf(cvs, sizeof(cvs), "%g%%", cv * 100);
    const std::string base = std::string("CV ") + cvs;
    models.push_back({base, cv, false, false, false});
    models.push_back({base + " + 2% half-speed", cv, true, false, false});
    models.push_back({base + " + drift -3%", cv, false, true, false});
    models.push_back({base + " + 3 warm-up 20% slow", cv, false, false, true});
    models.push_back({base + " + all three", cv, true, true, true});
  }
  const std::vector<NodeKind> kinds = {
      {"healthy (bound 90% of median)", 0}, {"5% below bound", 0.95}, {"10% below bound", 0.90}};

  const auto start = std::chrono::steady_clock::now();
  int mismatches = 0;
  if (o.check_assess > 0) mismatches = CheckAgainstAssess(o, t, models, kinds);

  std::printf(
      "nodes per cell: %d; node = %d GPUs x %d metrics = %d checks (median >= bound); "
      "node confidence %g -> per-check %.6f; warm-up discarded: %d; degraded: %s\n\n",
      o.nodes, o.gpus, o.metrics, o.gpus * o.metrics, o.confidence, t.threshold_confidence,
      o.warmup, o.degrade_all_metrics ? "one GPU, all its metrics" : "one GPU, one metric");
  std::printf(
      "| noise | node | rule | FAIL %% | INCONCLUSIVE %% | PASS %% | mean samples/test | "
      "mean max samples/node |\n|---|---|---|---:|---:|---:|---:|---:|\n");
  unsigned long long cell_seed = o.seed;
  for (const NoiseModel& model : models) {
    for (const NodeKind& kind : kinds) {
      for (Rule rule : kRules) {
        ++cell_seed;
        const Tally r = RunCell(rule, o, t, model, kind, cell_seed);
        const double nodes = static_cast<double>(o.nodes);
        std::printf("| %s | %s | %s | %.2f | %.2f | %.2f | %.1f | %.1f |\n", model.name.c_str(),
                    kind.name.c_str(), RuleName(rule, o).c_str(), 100.0 * r.fail / nodes,
                    100.0 * r.inconclusive / nodes, 100.0 * r.pass / nodes,
                    static_cast<double>(r.test_samples) / static_cast<double>(r.tests),
                    static_cast<double>(r.node_max_samples) / nodes);
        std::fflush(stdout);
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "done in %.1f s\n", seconds);
  return mismatches == 0 ? 0 : 1;
}
