#include "core/plan_checks.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "kernels/cuda/profile_select.h"

namespace perfgate::worker {
namespace {

std::string Number(double x) { return kernels::Params::Format(x); }

// "never negative", "0 or 1", "always 0": the values a metric can take, for messages.
std::string RangeText(const kernels::ValueRange& r) {
  const bool low = std::isfinite(r.lowest);
  const bool high = std::isfinite(r.highest);
  if (low && high && r.lowest == r.highest) return "always " + Number(r.lowest);
  if (low && high) {
    if (r.lowest == 0 && r.highest == 1) return "0 or 1";
    return "from " + Number(r.lowest) + " to " + Number(r.highest);
  }
  if (low) return r.lowest == 0 ? "never negative" : "never below " + Number(r.lowest);
  return "never above " + Number(r.highest);
}

}  // namespace

Status CheckThresholdsBind(const v1alpha1::TestSpec& test,
                           const std::vector<kernels::MetricInfo>& metrics, const std::string& path,
                           const spec::SourceMap& where) {
  for (int i = 0; i < test.thresholds_size(); ++i) {
    const v1alpha1::Threshold& th = test.thresholds(i);
    const std::string tpath = path + ".thresholds[" + std::to_string(i) + "]";
    if (!th.baseline().empty()) continue;  // a measured figure, not a peak; known only later
    const bool relative = th.has_reference() || th.has_fraction();
    if (relative && th.has_fraction() && th.fraction() > 1) {
      return where.Error(tpath + ".fraction",
                         "fraction " + Number(th.fraction()) +
                             " asks for more than the reference, the part's physical peak: "
                             "give a fraction in (0, 1]");
    }
    auto metric = std::find_if(metrics.begin(), metrics.end(),
                               [&](const kernels::MetricInfo& m) { return m.name == th.metric(); });
    if (metric == metrics.end()) continue;
    const kernels::ValueRange range = kernels::ReachableRange(*metric);
    const double lo = range.lowest;
    const double hi = range.highest;
    const double bound = relative ? th.reference() * th.fraction() : th.value();
    const std::string op = th.op().empty() ? ">=" : th.op();
    // Whether every value the metric can take meets the bound, or none does; either way the
    // figures cannot decide the threshold.
    bool passes_always = false;
    bool never_passes = false;
    std::string fix;
    if (op == ">=") {
      passes_always = lo >= bound;
      never_passes = hi < bound;
      fix = passes_always ? "above " + Number(lo) : "at or below " + Number(hi);
    } else if (op == ">") {
      passes_always = lo > bound;
      never_passes = hi <= bound;
      fix = passes_always ? "at or above " + Number(lo) : "below " + Number(hi);
    } else if (op == "<=") {
      passes_always = hi <= bound;
      never_passes = lo > bound;
      fix = passes_always ? "below " + Number(hi) : "at or above " + Number(lo);
    } else if (op == "<") {
      passes_always = hi < bound;
      never_passes = lo >= bound;
      fix = passes_always ? "at or below " + Number(hi) : "above " + Number(lo);
    }
    if (!passes_always && !never_passes) continue;
    const std::string advice =
        lo == hi ? "no bound can bind a metric that cannot vary: drop the threshold"
                 : "give a bound " + fix;
    const std::string field = relative ? ".reference" : ".value";
    return where.Error(
        tpath + field,
        "a \"" + op + "\" bound of " + Number(bound) + " on " + th.metric() + " (" + metric->unit +
            ", " + RangeText(range) + ") " +
            (passes_always ? "passes whatever is measured" : "fails whatever is measured") + ": " +
            advice);
  }
  return Status::Ok();
}

Status CheckProfileFitsGpus(const v1alpha1::PerfProfile& profile,
                            const std::vector<std::string>& gpu_names,
                            const spec::SourceMap& where) {
  const auto& models = profile.spec().gpumodels();
  if (models.empty()) return Status::Ok();
  const kernels::ProfileCandidate candidate{profile.metadata().name(),
                                            {models.begin(), models.end()}};
  std::set<std::string> misfits;
  for (const auto& name : gpu_names) {
    if (!kernels::ProfileMatchesGpu(name, candidate)) misfits.insert(name);
  }
  if (misfits.empty()) return Status::Ok();
  std::string gpus;
  for (const auto& m : misfits) gpus += (gpus.empty() ? "\"" : ", \"") + m + "\"";
  std::string wanted;
  for (const auto& m : models) wanted += (wanted.empty() ? "" : ", ") + m;
  return where.Error("spec.profile", "profile \"" + candidate.name + "\" is for GPU models " +
                                         wanted + ", and the GPU here is " + gpus +
                                         ": name this model's profile, or use profile: auto");
}

}  // namespace perfgate::worker
