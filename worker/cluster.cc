#include "worker/cluster.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/labels.h"
#include "common/node_verdict.h"
#include "common/report.h"
#include "common/strings.h"
#include "common/termination.h"

namespace perfgate::worker {
namespace {

namespace fs = std::filesystem;

// metadata.ownerReferences naming one perfgate.io object, without blockOwnerDeletion (see
// PerfResultJson).
nlohmann::json OwnerReference(const char* kind, const std::string& name, const std::string& uid) {
  return nlohmann::json::array(
      {{{"apiVersion", "perfgate.io/v1alpha1"}, {"kind", kind}, {"name", name}, {"uid", uid}}});
}

}  // namespace

void ClusterTargetFromEnv(ClusterTarget* target) {
  auto fill = [](std::string* field, const char* env) {
    if (field->empty()) *field = EnvVar(env);
  };
  fill(&target->result_name, "PERFGATE_RESULT_NAME");
  fill(&target->name_space, "POD_NAMESPACE");
  fill(&target->node_name, "NODE_NAME");
  fill(&target->run, "PERFGATE_RUN");
  fill(&target->validation_name, "PERFGATE_VALIDATION");
  fill(&target->validation_uid, "PERFGATE_VALIDATION_UID");
  const std::string timeout = EnvVar("PERFGATE_RESULT_WRITE_TIMEOUT_SECONDS");
  if (!timeout.empty()) {
    char* end = nullptr;
    const long seconds = std::strtol(timeout.c_str(), &end, 10);
    if (end != timeout.c_str() && *end == '\0' && seconds >= 0) {
      target->result_write_timeout = std::chrono::seconds(seconds);
    }
  }
}

std::string PodPath(const std::string& path) {
  const std::string root = EnvVar("PERFGATE_POD_ROOT");
  if (root.empty() || path.empty() || path[0] != '/') return path;
  return root + path;
}

std::string WorstFigure(const v1alpha1::Report& report) {
  const v1alpha1::TestResult* worst_test = nullptr;
  const v1alpha1::ThresholdResult* worst = nullptr;
  double worst_margin = 0;
  // Lower is worse (verdict::Severity); a skipped threshold has no figure to show.
  auto severity = [](v1alpha1::Verdict v) { return verdict::Severity(report::FromProto(v)); };
  const int error = verdict::Severity(verdict::Verdict::kError);
  for (const auto& t : report.tests()) {
    if (t.verdict() == v1alpha1::ERROR && t.thresholds().empty()) {
      if (worst_test == nullptr || severity(worst_test->verdict()) > error) {
        worst_test = &t;
        worst = nullptr;
      }
      continue;
    }
    for (const auto& th : t.thresholds()) {
      if (th.verdict() == v1alpha1::SKIPPED) continue;
      // Relative distance to the bound: smaller is closer to failing.
      double margin = th.bound() != 0 ? (th.observed() - th.bound()) / std::fabs(th.bound()) : 0;
      if (th.threshold().op() == "<=" || th.threshold().op() == "<") margin = -margin;
      const bool better = worst_test == nullptr ||
                          severity(th.verdict()) < severity(worst_test->verdict()) ||
                          (severity(th.verdict()) == severity(worst_test->verdict()) &&
                           worst != nullptr && margin < worst_margin);
      if (better) {
        worst_test = &t;
        worst = &th;
        worst_margin = margin;
      }
    }
  }
  if (worst_test == nullptr) return "";
  if (worst == nullptr) return worst_test->name() + ": " + worst_test->reason();
  std::string stat =
      worst->threshold().statistic().empty() ? "median" : worst->threshold().statistic();
  std::string op = worst->threshold().op().empty() ? ">=" : worst->threshold().op();
  // A bound relative to a baseline says which: "(>= 95.0 = 0.95 x baseline june)".
  std::string from;
  const std::string& source = worst->threshold().referencesource();
  if (source.rfind("baseline ", 0) == 0 && worst->threshold().has_fraction()) {
    char fraction[32];
    std::snprintf(fraction, sizeof fraction, "%g", worst->threshold().fraction());
    from = " = " + std::string(fraction) + " x " + source;
  }
  return worst_test->name() + " " + worst->threshold().metric() + " " + stat + " " +
         report::FormatFigure(worst->observed()) + " (" + op + " " +
         report::FormatFigure(worst->bound()) + from + ")";
}

Result<std::string> PerfResultJson(const ClusterTarget& target, const v1alpha1::Report& report) {
  ASSIGN_OR_RETURN(std::string report_text, report::ToJson(report));
  nlohmann::json report_json = nlohmann::json::parse(report_text, nullptr, false);
  if (report_json.is_discarded()) return Internal("the report's JSON does not parse back");
  nlohmann::json obj = {{"apiVersion", "perfgate.io/v1alpha1"},
                        {"kind", "PerfResult"},
                        {"metadata",
                         {{"name", target.result_name},
                          {"namespace", target.name_space},
                          {"labels",
                           {{"perfgate.io/validation", LabelValue(target.validation_name)},
                            {"perfgate.io/node", LabelValue(target.node_name)},
                            {"perfgate.io/run", target.run}}}}},
                        {"spec",
                         {{"validation", target.validation_name},
                          {"nodeName", target.node_name},
                          {"run", target.run},
                          {"worst", WorstFigure(report)},
                          {"report", report_json}}}};
  // Owned, so it goes with its validation, but without blockOwnerDeletion: that needs update on
  // the validation's finalizers (OwnerReferencesPermissionEnforcement), which a worker that
  // may only create results does not have.
  if (!target.validation_uid.empty()) {
    obj["metadata"]["ownerReferences"] =
        OwnerReference("PerfValidation", target.validation_name, target.validation_uid);
  }
  return obj.dump();
}

std::string DiagnosisConfigMapName(const std::string& result_name) {
  constexpr std::size_t kMaxName = 253;
  const std::string suffix = "-diagnosis";
  return result_name.substr(0, kMaxName - suffix.size()) + suffix;
}

Result<std::string> DiagnosisConfigMapJson(const ClusterTarget& target,
                                           const std::map<std::string, std::string>& files,
                                           const std::string& result_uid) {
  if (target.result_name.empty()) return InvalidArgument("no PerfResult name (--result)");
  nlohmann::json data = nlohmann::json::object();
  for (const auto& [name, content] : files) data[name] = content;
  nlohmann::json obj = {{"apiVersion", "v1"},
                        {"kind", "ConfigMap"},
                        {"metadata",
                         {{"name", DiagnosisConfigMapName(target.result_name)},
                          {"namespace", target.name_space},
                          {"labels",
                           {{"perfgate.io/validation", LabelValue(target.validation_name)},
                            {"perfgate.io/node", LabelValue(target.node_name)},
                            {"perfgate.io/run", target.run},
                            {"perfgate.io/diagnosis", "true"}}},
                          {"annotations", {{"perfgate.io/result", target.result_name}}}}},
                        {"data", std::move(data)}};
  // Without blockOwnerDeletion, as for the PerfResult (PerfResultJson).
  if (!result_uid.empty()) {
    obj["metadata"]["ownerReferences"] =
        OwnerReference("PerfResult", target.result_name, result_uid);
  } else if (!target.validation_uid.empty()) {
    obj["metadata"]["ownerReferences"] =
        OwnerReference("PerfValidation", target.validation_name, target.validation_uid);
  }
  return obj.dump();
}

bool RetryableWriteError(const Status& status) {
  switch (status.code()) {
    case Code::kUnavailable:        // 5xx, or no connection
    case Code::kDeadlineExceeded:   // no answer in time
    case Code::kResourceExhausted:  // 429
    case Code::kDataLoss:           // a 2xx whose body did not arrive whole
      return true;
    default:
      return false;
  }
}

Status RetryResultWrite(
    const std::function<Status()>& attempt, std::chrono::milliseconds timeout,
    const WriteBackoff& backoff, Clock& clock, uint64_t jitter_seed,
    const std::function<void(int, const Status&, std::chrono::milliseconds)>& on_retry) {
  const auto deadline = clock.Now() + timeout;
  std::mt19937_64 rng(jitter_seed);
  std::chrono::milliseconds step = backoff.initial;
  for (int n = 1;; ++n) {
    Status st = attempt();
    if (st.ok() || st.code() == Code::kAlreadyExists) return Status::Ok();
    if (!RetryableWriteError(st)) return st;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.Now());
    if (left.count() <= 0) {
      return Status(st.code(), st.message() + " (gave up after " + std::to_string(n) +
                                   " attempts in " + std::to_string(timeout.count() / 1000) +
                                   " s)");
    }
    std::uniform_int_distribution<int64_t> half(step.count() / 2, step.count());
    const auto wait = std::min(std::chrono::milliseconds(half(rng)), left);
    if (on_retry) on_retry(n, st, wait);
    clock.SleepFor(wait, nullptr);
    step = std::min(step * 2, backoff.max);
  }
}

std::string TerminationResult(const ClusterTarget& target, const v1alpha1::Report& report,
                              const std::string& note) {
  termination::NodeResult result;
  result.validation = target.validation_name;
  result.node_name = target.node_name;
  result.run = target.run;
  result.worst = WorstFigure(report);
  result.note = note;
  result.report = report;
  return termination::Encode(result);
}

void WriteTerminationMessage(const std::string& message) {
  std::string path = EnvVar("PERFGATE_TERMINATION_LOG");
  if (path.empty()) path = PodPath("/dev/termination-log");
  std::error_code ec;
  if (!fs::exists(fs::path(path).parent_path(), ec)) return;
  std::ofstream out(path, std::ios::trunc);
  out << message.substr(0, termination::kMaxMessageBytes);
}

}  // namespace perfgate::worker
