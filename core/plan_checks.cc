#include "core/plan_checks.h"

#include <algorithm>
#include <set>

#include "kernels/cuda/profile_select.h"

namespace perfgate::worker {
namespace {

// GB/s, TFLOP/s: a count per second, which no measurement makes negative.
bool IsRate(const kernels::MetricInfo& m) {
  return m.unit.size() > 2 && m.unit.compare(m.unit.size() - 2, 2, "/s") == 0;
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
                         "fraction " + kernels::Params::Format(th.fraction()) +
                             " asks for more than the reference, the part's physical peak: "
                             "give a fraction in (0, 1]");
    }
    auto metric = std::find_if(metrics.begin(), metrics.end(),
                               [&](const kernels::MetricInfo& m) { return m.name == th.metric(); });
    if (metric == metrics.end() || !IsRate(*metric)) continue;
    const double bound = relative ? th.reference() * th.fraction() : th.value();
    const std::string op = th.op().empty() ? ">=" : th.op();
    const bool passes_always = (op == ">=" && bound <= 0) || (op == ">" && bound < 0);
    const bool never_passes = (op == "<=" || op == "<") && bound < 0;
    if (!passes_always && !never_passes) continue;
    const std::string field = relative ? ".reference" : ".value";
    return where.Error(
        tpath + field,
        "a \"" + op + "\" bound of " + kernels::Params::Format(bound) + " on " + th.metric() +
            " (" + metric->unit + ", never negative) " +
            (passes_always ? "passes whatever is measured" : "fails whatever is measured") +
            ": give a bound above 0");
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
