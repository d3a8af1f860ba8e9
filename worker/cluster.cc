#include "worker/cluster.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/labels.h"
#include "common/report.h"

namespace perfgate::worker {
namespace {

namespace fs = std::filesystem;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

}  // namespace

void ClusterTargetFromEnv(ClusterTarget* target) {
  auto fill = [](std::string* field, const char* env) {
    if (field->empty()) *field = Env(env);
  };
  fill(&target->resultName, "PERFGATE_RESULT_NAME");
  fill(&target->nameSpace, "POD_NAMESPACE");
  fill(&target->nodeName, "NODE_NAME");
  fill(&target->run, "PERFGATE_RUN");
  fill(&target->validationName, "PERFGATE_VALIDATION");
  fill(&target->validationUid, "PERFGATE_VALIDATION_UID");
}

std::string PodPath(const std::string& path) {
  const std::string root = Env("PERFGATE_POD_ROOT");
  if (root.empty() || path.empty() || path[0] != '/') return path;
  return root + path;
}

std::string WorstFigure(const v1alpha1::Report& report) {
  const v1alpha1::TestResult* worst_test = nullptr;
  const v1alpha1::ThresholdResult* worst = nullptr;
  double worst_margin = 0;
  auto rank = [](v1alpha1::Verdict v) {
    switch (v) {
      case v1alpha1::FAIL:
        return 4;
      case v1alpha1::ERROR:
        return 3;
      case v1alpha1::INCONCLUSIVE:
        return 2;
      case v1alpha1::PASS:
        return 1;
      default:
        return 0;
    }
  };
  for (const auto& t : report.tests()) {
    if (t.verdict() == v1alpha1::ERROR && t.thresholds().empty()) {
      if (worst_test == nullptr || rank(worst_test->verdict()) < 3) {
        worst_test = &t;
        worst = nullptr;
      }
      continue;
    }
    for (const auto& th : t.thresholds()) {
      // Relative distance to the bound: smaller is closer to failing.
      double margin = th.bound() != 0 ? (th.observed() - th.bound()) / std::fabs(th.bound()) : 0;
      if (th.threshold().op() == "<=" || th.threshold().op() == "<") margin = -margin;
      bool better = worst_test == nullptr || rank(th.verdict()) > rank(worst_test->verdict()) ||
                    (rank(th.verdict()) == rank(worst_test->verdict()) && worst != nullptr &&
                     margin < worst_margin);
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
  return worst_test->name() + " " + worst->threshold().metric() + " " + stat + " " +
         report::FormatFigure(worst->observed()) + " (" + op + " " +
         report::FormatFigure(worst->bound()) + ")";
}

Result<std::string> PerfResultJson(const ClusterTarget& target, const v1alpha1::Report& report) {
  ASSIGN_OR_RETURN(std::string report_text, report::ToJson(report));
  nlohmann::json report_json = nlohmann::json::parse(report_text, nullptr, false);
  if (report_json.is_discarded()) return Internal("the report's JSON does not parse back");
  nlohmann::json obj = {{"apiVersion", "perfgate.io/v1alpha1"},
                        {"kind", "PerfResult"},
                        {"metadata",
                         {{"name", target.resultName},
                          {"namespace", target.nameSpace},
                          {"labels",
                           {{"perfgate.io/validation", LabelValue(target.validationName)},
                            {"perfgate.io/node", LabelValue(target.nodeName)},
                            {"perfgate.io/run", target.run}}}}},
                        {"spec",
                         {{"validation", target.validationName},
                          {"nodeName", target.nodeName},
                          {"run", target.run},
                          {"worst", WorstFigure(report)},
                          {"report", report_json}}}};
  // Owned, so it goes with its validation, but without blockOwnerDeletion: that needs update on
  // the validation's finalizers (OwnerReferencesPermissionEnforcement), which a worker that
  // may only create results does not have.
  if (!target.validationUid.empty()) {
    obj["metadata"]["ownerReferences"] =
        nlohmann::json::array({{{"apiVersion", "perfgate.io/v1alpha1"},
                                {"kind", "PerfValidation"},
                                {"name", target.validationName},
                                {"uid", target.validationUid}}});
  }
  return obj.dump();
}

void WriteTerminationMessage(const std::string& message) {
  std::string path = Env("PERFGATE_TERMINATION_LOG");
  if (path.empty()) path = PodPath("/dev/termination-log");
  std::error_code ec;
  if (!fs::exists(fs::path(path).parent_path(), ec)) return;
  std::ofstream out(path, std::ios::trunc);
  out << message.substr(0, 4096);
}

}  // namespace perfgate::worker
