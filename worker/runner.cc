#include "worker/runner.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/action.h"
#include "common/node_verdict.h"
#include "common/report.h"
#include "common/stats.h"
#include "common/strings.h"
#include "common/time.h"
#include "kernels/nvml/identity.h"
#include "kernels/unmeasured.h"
#include "worker/diagnostics.h"

namespace perfgate::worker {
namespace {

// An end the samples cannot bound yet is infinite; JSON (and a CRD `number`) has no
// infinity, so it is left out and flagged.
void ToProto(const stats::Interval& in, v1alpha1::Interval* out) {
  if (std::isfinite(in.low)) {
    out->set_low(in.low);
  } else {
    out->set_lowunbounded(true);
  }
  if (std::isfinite(in.high)) {
    out->set_high(in.high);
  } else {
    out->set_highunbounded(true);
  }
  out->set_confidence(in.confidence);
  out->set_method(in.method);
}

void ToProto(const stats::Summary& s, v1alpha1::Summary* out) {
  out->set_n(s.n);
  out->set_mean(s.mean);
  out->set_median(s.median);
  out->set_stddev(s.stddev);
  out->set_min(s.min);
  out->set_max(s.max);
  out->set_p05(s.p05);
  out->set_p95(s.p95);
  out->set_cv(s.cv);
  ToProto(s.mean_ci, out->mutable_meanci());
  ToProto(s.median_ci, out->mutable_medianci());
  out->set_outliers(s.outliers);
}

// Progress while a plan runs. In a log (`columns` 0): plain lines, one when a test starts, one
// when it ends, and one for each target that did not pass. On a terminal (`columns` its
// width): the same ends and problems, and below them one status line rewritten in place with
// what each target of the running test is doing.
class Progress {
 public:
  Progress(std::ostream* out, int columns) : out_(out), columns_(columns) {}

  // A line that stays.
  void Line(const std::string& s) {
    if (out_ == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (columns_ > 0) *out_ << "\r\033[K";
    *out_ << s << "\n";
    Draw();
  }
  // A test starts: its line in a log, the status line's head on a terminal.
  void StartTest(const std::string& head, const std::string& detail) {
    if (out_ == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    head_ = head;
    states_.clear();
    if (columns_ == 0) {
      *out_ << head << ": " << detail << std::endl;
    } else {
      Draw();
    }
  }
  // What a target of the running test is doing now ("sample 5"): the terminal only.
  void Target(const std::string& target, const std::string& state) {
    if (out_ == nullptr || columns_ == 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    states_[target] = state;
    Draw();
  }
  // The running test ended: its line replaces the status line.
  void EndTest(const std::string& s) {
    if (out_ == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    head_.clear();
    states_.clear();
    if (columns_ > 0) *out_ << "\r\033[K";
    *out_ << s << std::endl;
  }

 private:
  // The status line, cut to the terminal's width so that it never wraps (caller holds mu_).
  void Draw() {
    if (columns_ == 0 || head_.empty()) {
      out_->flush();
      return;
    }
    std::string line = head_;
    const char* sep = ": ";
    for (const auto& [target, state] : states_) {
      line += sep + target + " " + state;
      sep = ", ";
    }
    if (static_cast<int>(line.size()) >= columns_) line = line.substr(0, columns_ - 1);
    *out_ << "\r\033[K" << line << std::flush;
  }

  std::ostream* out_;
  int columns_;
  std::mutex mu_;
  std::string head_;
  std::map<std::string, std::string> states_;
};

struct TargetContext {
  const PlannedTest* test;
  kernels::Target target;
  verdict::ErrorBudget budget;
  const RunOptions* options;
  Progress* progress;
};

// "started on 8 GPUs (warm-up 3, then 5..30 samples within 60 s)".
std::string TestStartText(const PlannedTest& t, const std::vector<kernels::Target>& targets) {
  const verdict::Sampling& sampling = t.sampling;
  std::string on = "the host";
  if (targets.size() > 1) {
    on = std::to_string(targets.size()) + " GPUs";
  } else if (targets.front().scope != kernels::Scope::kHost) {
    on = targets.front().Name();
  }
  return "started on " + on + " (warm-up " + std::to_string(sampling.warmup) + ", then " +
         (sampling.fixed ? std::to_string(sampling.max_repeats)
                         : std::to_string(sampling.min_repeats) + ".." +
                               std::to_string(sampling.max_repeats)) +
         " samples within " + Sig4(sampling.max_seconds) + " s)";
}

// "PASS on 8 in 12.3 s" or "FAIL: 1 FAIL, 7 PASS in 12.3 s": the worst verdict first.
std::string TestEndText(const std::vector<v1alpha1::TestResult>& results, double seconds) {
  static constexpr v1alpha1::Verdict kWorstFirst[] = {
      v1alpha1::FAIL, v1alpha1::ERROR, v1alpha1::INCONCLUSIVE, v1alpha1::SKIPPED, v1alpha1::PASS};
  std::string counts;
  std::string worst;
  int kinds = 0;
  for (const auto v : kWorstFirst) {
    const auto n = std::count_if(results.begin(), results.end(),
                                 [&](const v1alpha1::TestResult& r) { return r.verdict() == v; });
    if (n == 0) continue;
    if (worst.empty()) worst = report::VerdictName(v);
    counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + report::VerdictName(v);
    ++kinds;
  }
  std::string text = kinds == 1
                         ? worst + (results.size() > 1 ? " on all " + std::to_string(results.size())
                                                       : std::string())
                         : worst + ": " + counts;
  return text + " in " + Sig4(seconds) + " s";
}

// What the warm-up left: its samples' counts when they already FAIL a bound for good (the test
// is then decided), and how many warm-up samples ran.
struct Warmup {
  verdict::MetricSamples decided_counts;
  std::string note;  // " (in warm-up: 2 of 3 samples)" when the warm-up decided
  int samples = 0;
};

// A warm-up sample's figures are left out, but not its counts (unit "count": errors found,
// settings that differ): an error is not a figure that settles. Counts that already FAIL a
// bound for good end the test here, decided on the warm-up samples.
Result<Warmup> RunWarmup(const PlannedTest& t, kernels::TestRun& run) {
  Warmup w;
  verdict::MetricSamples counts;
  while (w.samples < t.sampling.warmup) {
    auto s = run.RunSample();
    if (!s.ok()) return s.status();
    ++w.samples;
    for (const auto& m : t.metrics) {
      auto v = s->find(m.name);
      if (kernels::IsCount(m) && v != s->end()) counts[m.name].push_back(v->second);
    }
    if (verdict::FailedForGood(t.thresholds, counts) >= 0) {
      w.decided_counts = std::move(counts);
      w.note = " (in warm-up: " + std::to_string(w.samples) + " of " +
               std::to_string(t.sampling.warmup) + " samples)";
      break;
    }
  }
  return w;
}

// Samples until the sampling rule stops: into `samples`; the number taken, and why it stopped
// in `*stop`.
Result<int> RunSamples(const TargetContext& ctx, kernels::TestRun& run,
                       const std::map<std::string, std::string>& units,
                       verdict::MetricSamples* samples, std::string* stop) {
  const PlannedTest& t = *ctx.test;
  const double sampling_start = ctx.options->clock->NowSeconds();
  verdict::Assessment assessment;
  int n = 0;
  const std::string& shown = t.thresholds.empty()
                                 ? (t.metrics.empty() ? "" : t.metrics.front().name)
                                 : t.thresholds.front().metric;
  while (stop->empty()) {
    auto s = run.RunSample();
    if (!s.ok()) return s.status();
    ++n;
    for (const auto& [metric, value] : *s) (*samples)[metric].push_back(value);
    std::string state = "sample " + std::to_string(n);
    if (s->count(shown) != 0) {
      auto unit = units.find(shown);
      state += " " + Sig4(s->at(shown)) + " " + (unit != units.end() ? unit->second : "");
    }
    ctx.progress->Target(ctx.target.Name(), state);

    const bool out_of_time =
        ctx.options->clock->NowSeconds() - sampling_start >= t.sampling.max_seconds;
    if (!t.sampling.fixed) {
      assessment = verdict::Assess(t.thresholds, *samples, t.sampling, ctx.budget, units, false);
    }
    *stop = StopReason(t.sampling, n, out_of_time, &assessment,
                       verdict::FailedForGood(t.thresholds, *samples) >= 0);
  }
  return n;
}

// Each measured metric's summary and (up to the cap) its samples, into `r`.
void AddMetrics(const PlannedTest& t, const verdict::MetricSamples& samples, int sample_cap,
                v1alpha1::TestResult* r) {
  for (const auto& m : t.metrics) {
    auto it = samples.find(m.name);
    if (it == samples.end()) continue;
    auto* mr = r->add_metrics();
    mr->set_name(m.name);
    mr->set_unit(m.unit);
    mr->set_higherisbetter(m.higher_is_better);
    ToProto(stats::Summarize(it->second, 0.95), mr->mutable_summary());
    for (std::size_t i = 0; i < it->second.size() && static_cast<int>(i) < sample_cap; ++i) {
      mr->add_samples(it->second[i]);
    }
  }
}

// What the test said of its metrics, into the bounds' outcomes: a metric left out is SKIPPED
// where it does not apply here and ERROR where the reading was refused (instead of "no
// samples"); a FAILed bound on a count names what was counted.
void ExplainOutcomes(const PlannedTest& t, const std::map<std::string, std::string>& details,
                     const std::string& warmup_note, verdict::Assessment* assessment) {
  for (std::size_t i = 0; i < assessment->outcomes.size() && i < t.thresholds.size(); ++i) {
    auto& o = assessment->outcomes[i];
    const std::string& metric = t.thresholds[i].metric;
    if (o.samples == 0) {
      if (auto na = details.find(kernels::NotApplicableKey(metric)); na != details.end()) {
        o.verdict = verdict::Verdict::kSkipped;
        o.reason = metric + " does not apply here: " + na->second;
      } else if (auto nm = details.find(kernels::NotMeasuredKey(metric)); nm != details.end()) {
        o.verdict = verdict::Verdict::kError;
        o.reason = metric + " could not be measured: " + nm->second;
      }
    }
    if (!warmup_note.empty() && o.samples == 0 && o.verdict == verdict::Verdict::kError) {
      o.verdict = verdict::Verdict::kInconclusive;
      o.reason = "not measured: a count failed its bound in warm-up";
    }
    if (o.verdict != verdict::Verdict::kFail) continue;
    o.reason += warmup_note;
    auto counted = details.find(kernels::CountedKey(metric));
    if (counted != details.end()) o.reason += ": " + counted->second;
  }
}

// Each bound's outcome into `r`, and the test's verdict and reason from them.
verdict::Judgement JudgeBounds(const PlannedTest& t, const verdict::Assessment& assessment,
                               v1alpha1::TestResult* r) {
  std::vector<verdict::Judgement> judged;
  for (std::size_t i = 0; i < assessment.outcomes.size() && i < t.thresholds.size(); ++i) {
    const auto& o = assessment.outcomes[i];
    auto* tr = r->add_thresholds();
    *tr->mutable_threshold() = t.threshold_specs[i];
    tr->set_bound(t.thresholds[i].bound);
    tr->set_observed(o.observed);
    ToProto(o.interval, tr->mutable_interval());
    tr->set_verdict(report::ToProto(o.verdict));
    tr->set_reason(o.reason);
    judged.push_back({o.verdict, o.reason});
  }
  verdict::Judgement test = verdict::JudgeThresholds(judged);
  if (test.verdict == verdict::Verdict::kInconclusive && !assessment.stop_detail.empty()) {
    test.reason += " (" + assessment.stop_detail + ")";
  }
  if (t.thresholds.empty()) test.reason = "measured; no thresholds to meet";
  return test;
}

v1alpha1::TestResult RunOnTarget(const TargetContext& ctx) {
  const PlannedTest& t = *ctx.test;
  const auto now = [&clock = *ctx.options->clock] { return clock.NowSeconds(); };
  const std::string label = t.name + " [" + ctx.target.Name() + "]";
  v1alpha1::TestResult r;
  r.set_name(t.name);
  r.set_type(t.type);
  r.set_device(ctx.target.Name());
  for (const auto& [k, v] : t.params.values())
    (*r.mutable_parameters())[k] = kernels::Params::Format(v);
  const double start = now();

  auto finish_error = [&](v1alpha1::Verdict v, const std::string& reason, const char* stop) {
    r.set_verdict(v);
    r.set_reason(reason);
    r.set_stopreason(stop);
    r.set_seconds(now() - start);
    ctx.progress->Line(label + ": " + report::VerdictName(v) + ": " + reason);
    return r;
  };

  auto prepared = t.test->Prepare(t.params, ctx.target);
  if (!prepared.ok()) {
    const Status& st = prepared.status();
    if (st.code() == Code::kFailedPrecondition) {
      return finish_error(v1alpha1::SKIPPED, "not applicable: " + st.message(), "error");
    }
    if (st.code() == Code::kUnavailable && t.optional) {
      return finish_error(v1alpha1::SKIPPED, "optional and cannot run here: " + st.message(),
                          "error");
    }
    return finish_error(v1alpha1::ERROR, st.message(), "error");
  }
  std::unique_ptr<kernels::TestRun> run = std::move(prepared).value();
  // A sample that went wrong: FAIL for a wrong answer (DataLoss), else ERROR; what the run
  // recorded so far (a screen's digests, the errors it named) stays in the result.
  auto sample_error = [&](const Status& st) {
    for (const auto& [k, v] : run->Details()) (*r.mutable_details())[k] = v;
    return finish_error(st.code() == Code::kDataLoss ? v1alpha1::FAIL : v1alpha1::ERROR,
                        st.message(), "error");
  };

  std::map<std::string, std::string> units;
  for (const auto& m : t.metrics) units[m.name] = m.unit;
  ctx.progress->Target(ctx.target.Name(), "warm-up");
  Result<Warmup> warmup = RunWarmup(t, *run);
  if (!warmup.ok()) return sample_error(warmup.status());
  r.set_warmupsamples(warmup->samples);
  verdict::MetricSamples samples = std::move(warmup->decided_counts);
  std::string stop = warmup->note.empty() ? "" : "decided";
  Result<int> n = RunSamples(ctx, *run, units, &samples, &stop);
  if (!n.ok()) return sample_error(n.status());
  verdict::Assessment assessment =
      verdict::Assess(t.thresholds, samples, t.sampling, ctx.budget, units, true);
  r.set_samples(*n);
  r.set_stopreason(stop);
  AddMetrics(t, samples, ctx.options->sample_cap, &r);
  ExplainOutcomes(t, run->Details(), warmup->note, &assessment);
  const verdict::Judgement test = JudgeBounds(t, assessment, &r);
  const v1alpha1::Verdict verdict = report::ToProto(test.verdict);
  for (const auto& [k, v] : run->Details()) (*r.mutable_details())[k] = v;
  r.set_verdict(verdict);
  r.set_reason(test.reason);
  r.set_seconds(now() - start);
  if (verdict == v1alpha1::PASS) {
    ctx.progress->Target(ctx.target.Name(), report::VerdictName(verdict));
  } else {
    ctx.progress->Line(label + ": " + report::VerdictName(verdict) + " after " +
                       std::to_string(*n) + " samples (" + stop + ")" +
                       (test.reason.empty() ? "" : ": " + test.reason));
  }
  return r;
}

std::string ReadFirstMatch(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      return std::string(Trim(std::string_view(line).substr(colon + 1)));
    }
  }
  return "";
}

}  // namespace

void FillIdentity(v1alpha1::Identity* id) {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) id->set_hostname(host);
  id->set_cpumodel(ReadFirstMatch("/proc/cpuinfo", "model name"));
  id->set_cpucores(static_cast<int>(std::thread::hardware_concurrency()));
  std::string mem = ReadFirstMatch("/proc/meminfo", "MemTotal");  // "24634344 kB"
  if (!mem.empty()) id->set_memorygib(std::stod(mem) / (1024.0 * 1024.0));
  utsname u{};
  if (uname(&u) == 0) id->set_kernel(std::string(u.sysname) + " " + u.release + " " + u.machine);
  id->set_cudaversion(kernels::cuda::CudaRuntimeVersion());
  id->set_workerversion(PERFGATE_VERSION);
  auto gpus = kernels::ListCudaDevices();
  if (!gpus.ok()) return;
  for (const auto& g : *gpus) {
    auto info = kernels::ReadGpuIdentity(g.ordinal);
    if (!info.ok()) continue;
    auto* gi = id->add_gpus();
    gi->set_index(info->index);
    gi->set_name(info->name);
    gi->set_uuid(info->uuid);
    gi->set_pcibusid(info->pci_bus_id);
    gi->set_vbios(info->vbios);
    gi->set_serial(info->serial);
    gi->set_computecapability(info->compute_capability);
    gi->set_smcount(info->sm_count);
    gi->set_memorygib(info->memory_gib);
    gi->set_smclockmhz(info->sm_clock_mhz);
    gi->set_memoryclockmhz(info->memory_clock_mhz);
    gi->set_powerlimitw(info->power_limit_w);
    gi->set_eccmode(info->ecc_mode);
    gi->set_migmode(info->mig_mode);
    gi->set_persistencemode(info->persistence_mode);
    // The driver's own version (NVML), else the CUDA version it supports.
    if (id->driverversion().empty()) {
      id->set_driverversion(!info->driver_version.empty()
                                ? info->driver_version
                                : "CUDA " + kernels::cuda::CudaDriverVersion());
    }
  }
}

std::string StopReason(const verdict::Sampling& sampling, int n, bool out_of_time,
                       const verdict::Assessment* assessment, bool failed_for_good) {
  // A bound failed for good (an error count above it) fails the test whatever comes next.
  if (failed_for_good) return "decided";
  const bool at_cap = n >= sampling.max_repeats;
  if (sampling.fixed) return at_cap ? "fixed" : "";
  if (assessment->stop) return assessment->stop_reason;
  // A threshold decided FAIL fails the test whatever the others say: stop there.
  const bool failed = std::any_of(
      assessment->outcomes.begin(), assessment->outcomes.end(),
      [](const verdict::Outcome& o) { return o.decided && o.verdict == verdict::Verdict::kFail; });
  if (failed && n >= sampling.min_repeats) return "decided";
  if (at_cap) return "maxRepeats";
  if (out_of_time) return "maxSeconds";
  return "";
}

// The GPUs every GPU test runs on, once for the plan; with why they cannot be used ("" when they
// can, or when no test needs a GPU).
struct PlanGpus {
  std::vector<kernels::GpuDevice> gpus;
  std::string problem;
};

PlanGpus ListPlanGpus(const Plan& plan, const RunOptions& options) {
  PlanGpus out;
  bool any_gpu = false;
  for (const auto& t : plan.tests) any_gpu |= t.test->Info().scope != kernels::Scope::kHost;
  if (!any_gpu) return out;
  Result<std::vector<kernels::GpuDevice>> gpus = options.list_gpus();
  if (!gpus.ok()) {
    out.problem = gpus.status().message();
    return out;
  }
  out.gpus = std::move(gpus).value();
  if (plan.gpus_per_node > 0 && static_cast<int>(out.gpus.size()) < plan.gpus_per_node) {
    out.problem = "expected " + std::to_string(plan.gpus_per_node) + " GPUs, found " +
                  std::to_string(out.gpus.size());
  }
  return out;
}

// Where one test runs: the host, each GPU, or all GPUs together; none when the GPUs cannot be
// used.
std::vector<kernels::Target> TargetsOf(const PlannedTest& t, const PlanGpus& gpus) {
  const auto scope = t.test->Info().scope;
  if (scope == kernels::Scope::kHost) return {{kernels::Scope::kHost, {}}};
  if (!gpus.problem.empty()) return {};
  std::vector<int> all;
  for (const auto& g : gpus.gpus) all.push_back(g.ordinal);
  if (scope != kernels::Scope::kGpu) return {{scope, all}};
  std::vector<kernels::Target> out;
  for (int d : all) out.push_back({scope, {d}});
  return out;
}

// A test that cannot run for want of GPUs: SKIPPED when optional, else ERROR.
v1alpha1::TestResult WithoutGpus(const PlannedTest& t, const std::string& problem) {
  v1alpha1::TestResult r;
  r.set_name(t.name);
  r.set_type(t.type);
  r.set_device("gpu");
  r.set_stopreason("error");
  if (t.optional) {
    r.set_verdict(v1alpha1::SKIPPED);
    r.set_reason("optional and cannot run here: " + problem);
  } else {
    r.set_verdict(v1alpha1::ERROR);
    r.set_reason(problem);
  }
  return r;
}

// One test on each of its targets, the targets in parallel.
std::vector<v1alpha1::TestResult> RunOnTargets(const PlannedTest& t,
                                               const std::vector<kernels::Target>& targets,
                                               const verdict::ErrorBudget& budget,
                                               const RunOptions& options, Progress* progress) {
  std::vector<v1alpha1::TestResult> results(targets.size());
  std::vector<std::thread> threads;
  if (options.timeline != nullptr) {
    std::vector<int> ordinals;
    for (const auto& target : targets) {
      if (target.scope == kernels::Scope::kHost) continue;
      ordinals.insert(ordinals.end(), target.devices.begin(), target.devices.end());
    }
    options.timeline->Begin(t.name, ordinals);
  }
  for (std::size_t k = 0; k < targets.size(); ++k) {
    TargetContext ctx{&t, targets[k], budget, &options, progress};
    if (targets.size() == 1) {
      results[k] = RunOnTarget(ctx);
    } else {
      threads.emplace_back([ctx, &results, k] { results[k] = RunOnTarget(ctx); });
    }
  }
  for (auto& th : threads) th.join();
  if (options.timeline != nullptr) options.timeline->End();
  return results;
}

// The node's counts and verdict from its tests: rule 1 of common/node_verdict.h.
void JudgeNode(const Plan& plan, v1alpha1::Report* report) {
  int counts[6] = {0};
  std::vector<verdict::TestEvidence> evidence;
  for (const auto& r : report->tests()) {
    counts[r.verdict()]++;
    evidence.push_back(
        {report::FromProto(r.verdict()), r.name() + " [" + r.device() + "]", r.reason()});
  }
  report->set_passed(counts[v1alpha1::PASS]);
  report->set_failed(counts[v1alpha1::FAIL]);
  report->set_inconclusive(counts[v1alpha1::INCONCLUSIVE]);
  report->set_skipped(counts[v1alpha1::SKIPPED]);
  report->set_errors(counts[v1alpha1::ERROR]);
  const verdict::Judgement node =
      verdict::JudgeTests(evidence, {plan.policy.allowinconclusive(), plan.policy.failonskipped()});
  report->set_verdict(report::ToProto(node.verdict));
  if (!node.reason.empty()) report->set_reason(node.reason);
}

v1alpha1::Report RunPlan(const Plan& plan, const RunOptions& in_options) {
  RunOptions options = in_options;
  if (!options.clock) options.clock = RealClock();
  Progress progress(options.progress, options.progress_columns);
  v1alpha1::Report report;
  report.set_validation(plan.validation);
  report.set_profile(plan.profile);
  report.set_profileversion(plan.profile_version);
  report.set_starttime(NowRfc3339());
  report.set_samplecap(options.sample_cap);
  if (options.identity) {
    options.identity(report.mutable_identity());
  } else {
    FillIdentity(report.mutable_identity());
  }
  if (!plan.profile_note.empty()) progress.Line(plan.profile_note);

  // Targets per test, and the node's number of statistical checks for the error budget.
  const PlanGpus gpus = ListPlanGpus(plan, options);
  std::vector<std::vector<kernels::Target>> targets;
  int checks = 0;
  for (const auto& t : plan.tests) {
    targets.push_back(TargetsOf(t, gpus));
    checks += StatisticalThresholds(t) * static_cast<int>(targets.back().size());
  }

  for (std::size_t i = 0; i < plan.tests.size(); ++i) {
    const PlannedTest& t = plan.tests[i];
    const std::string head =
        "[" + std::to_string(i + 1) + "/" + std::to_string(plan.tests.size()) + "] " + t.name;
    const double test_start = options.clock->NowSeconds();
    if (targets[i].empty()) {
      auto* r = report.add_tests();
      *r = WithoutGpus(t, gpus.problem);
      progress.EndTest(head + ": " + report::VerdictName(r->verdict()) + ": " + r->reason());
      continue;
    }
    progress.StartTest(head, TestStartText(t, targets[i]));
    const verdict::ErrorBudget budget = verdict::SplitBudget(t.sampling.confidence, checks);
    std::vector<v1alpha1::TestResult> results =
        RunOnTargets(t, targets[i], budget, options, &progress);
    progress.EndTest(head + ": " + TestEndText(results, options.clock->NowSeconds() - test_start));
    for (auto& r : results) *report.add_tests() = std::move(r);
  }
  JudgeNode(plan, &report);
  *report.mutable_action() = action::Recommend(report);
  report.set_completiontime(NowRfc3339());
  return report;
}

int ExitCode(const v1alpha1::Report& report) {
  switch (report.verdict()) {
    case v1alpha1::PASS:
      return 0;
    case v1alpha1::FAIL:
      return 1;
    default:
      return 3;
  }
}

}  // namespace perfgate::worker
