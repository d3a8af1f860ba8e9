#include "core/plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <regex>
#include <set>

#include "common/report.h"
#include "common/strings.h"
#include "core/plan_checks.h"
#include "kernels/cuda/profile_select.h"
#include "kernels/registry.h"

namespace perfgate::worker {
namespace {

namespace fs = std::filesystem;
using kernels::ParamType;
using kernels::ParamValue;

std::string TypeName(ParamType t) {
  switch (t) {
    case ParamType::kInt:
      return "an integer";
    case ParamType::kDouble:
      return "a number";
    case ParamType::kString:
      return "a string";
    case ParamType::kBool:
      return "true or false";
    case ParamType::kStringList:
      return "a list of strings";
    case ParamType::kIntList:
      return "a list of integers";
  }
  return "?";
}

// "[a, b]" or "a, b" as its elements; "[]" and "" have none.
std::vector<std::string> SplitList(std::string_view text) {
  std::string_view body = Trim(text);
  if (!body.empty() && body.front() == '[') body.remove_prefix(1);
  if (!body.empty() && body.back() == ']') body.remove_suffix(1);
  if (Trim(body).empty()) return {};
  return Split(body, ',');
}

// Declared defaults are written as a user would write them.
ParamValue DefaultValue(const kernels::ParamInfo& p) {
  switch (p.type) {
    case ParamType::kInt:
      return static_cast<std::int64_t>(std::stoll(p.default_value));
    case ParamType::kDouble:
      return std::stod(p.default_value);
    case ParamType::kString:
      return p.default_value;
    case ParamType::kBool:
      return p.default_value == "true";
    case ParamType::kStringList:
      return SplitList(p.default_value);
    case ParamType::kIntList: {
      std::vector<std::int64_t> v;
      for (const auto& s : SplitList(p.default_value)) v.push_back(std::stoll(s));
      return v;
    }
  }
  return std::int64_t{0};
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

Status CheckRange(const kernels::ParamInfo& info, double v) {
  if (v < info.min || v > info.max) {
    return InvalidArgument("value " + kernels::Params::Format(v) + " is out of range [" +
                           kernels::Params::Format(info.min) + ", " +
                           kernels::Params::Format(info.max) + "]");
  }
  return Status::Ok();
}

Status CheckChoice(const kernels::ParamInfo& info, const std::string& s) {
  if (info.choices.empty() ||
      std::find(info.choices.begin(), info.choices.end(), s) != info.choices.end()) {
    return Status::Ok();
  }
  return InvalidArgument("unsupported value \"" + s +
                         "\": supported values: " + Join(info.choices));
}

Result<std::int64_t> ToInt(const google::protobuf::Value& v) {
  if (v.kind_case() != google::protobuf::Value::kNumberValue ||
      v.number_value() != std::floor(v.number_value()) || std::fabs(v.number_value()) > 9e15) {
    return InvalidArgument("");
  }
  return static_cast<std::int64_t>(v.number_value());
}

std::string DescribeValue(const google::protobuf::Value& v) {
  switch (v.kind_case()) {
    case google::protobuf::Value::kNumberValue:
      return "the number " + kernels::Params::Format(v.number_value());
    case google::protobuf::Value::kStringValue:
      return "the string \"" + v.string_value() + "\"";
    case google::protobuf::Value::kBoolValue:
      return v.bool_value() ? "true" : "false";
    case google::protobuf::Value::kListValue:
      return "a list";
    case google::protobuf::Value::kStructValue:
      return "a mapping";
    default:
      return "null";
  }
}

struct Context {
  const spec::SourceMap& where;
  const PlanOptions& options;
};

// spec.gang: what the CRD schema cannot say (the local run checks it too, so a spec that works
// here is not refused by the operator later).
Status CheckGang(const v1alpha1::Gang& g, const Context& ctx) {
  const auto bad_value = [&](const std::string& path, const std::string& value,
                             const std::string& supported) {
    return ctx.where.Error(path,
                           "unsupported value \"" + value + "\": supported values: " + supported);
  };
  if (!g.shape().empty() && g.shape() != "all" && g.shape() != "pairs") {
    return bad_value("spec.gang.shape", g.shape(), "all, pairs");
  }
  if (!g.narrow().empty() && g.narrow() != "pairs" && g.narrow() != "none") {
    return bad_value("spec.gang.narrow", g.narrow(), "pairs, none");
  }
  if (g.port() < 0 || g.port() > 65535) {
    return ctx.where.Error("spec.gang.port", "must be 0 (29500) or a TCP port up to 65535");
  }
  static const std::regex kQuantity(R"(^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$)");
  if (!g.shmsize().empty() && !std::regex_match(g.shmsize(), kQuantity)) {
    return ctx.where.Error("spec.gang.shmSize",
                           "\"" + g.shmsize() + "\" is not a quantity such as 16Gi or 8589934592");
  }
  const auto& net = g.network();
  for (const auto& [field, value] :
       {std::pair<std::string, std::string>{"socketIfname", net.socketifname()},
        {"ibHca", net.ibhca()}}) {
    if (std::any_of(value.begin(), value.end(),
                    [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; })) {
      return ctx.where.Error(
          "spec.gang.network." + field,
          "\"" + value + "\" has white space: NCCL reads a comma-separated list");
    }
  }
  static const std::regex kResource(
      R"(^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$)");
  for (const auto& [name, count] : net.resources()) {
    const std::string path = "spec.gang.network.resources." + name;
    if (!std::regex_match(name, kResource)) {
      return ctx.where.Error(path,
                             "not an extended resource name (domain/name, e.g. "
                             "rdma/rdma_shared_device_a or vpc.amazonaws.com/efa)");
    }
    if (name == "nvidia.com/gpu") {
      return ctx.where.Error(path, "GPUs are set by spec.gpusPerNode, not here");
    }
    if (count < 1) return ctx.where.Error(path, "must be 1 or more");
  }
  // A qualified name, as Kubernetes checks annotation keys: [prefix/]name.
  static const std::regex kAnnotation(
      R"(^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$)");
  for (const auto& [key, value] : net.podannotations()) {
    if (!std::regex_match(key, kAnnotation) || key.size() > 316) {
      return ctx.where.Error("spec.gang.network.podAnnotations." + key,
                             "not an annotation key ([prefix/]name)");
    }
  }
  static const std::regex kEnv(R"(^(NCCL|FI|UCX)_[A-Z0-9_]+$)");
  for (const auto& [name, value] : net.env()) {
    const std::string path = "spec.gang.network.env." + name;
    if (!std::regex_match(name, kEnv)) {
      return ctx.where.Error(path, "only NCCL_*, FI_* and UCX_* variables may be set here");
    }
    if (name == "NCCL_COMM_ID") {
      return ctx.where.Error(path, "set by the operator: it is how the ranks meet (docs/nccl.md)");
    }
    if ((name == "NCCL_SOCKET_IFNAME" && !net.socketifname().empty()) ||
        (name == "NCCL_IB_HCA" && !net.ibhca().empty())) {
      return ctx.where.Error(path,
                             "also set by spec.gang.network." +
                                 std::string(name == "NCCL_IB_HCA" ? "ibHca" : "socketIfname") +
                                 ": set it in one place");
    }
  }
  return Status::Ok();
}

Status MergeSampling(const v1alpha1::Sampling& s, const std::string& path, const Context& ctx,
                     verdict::Sampling* out) {
  if (s.has_warmup()) {
    if (s.warmup() < 0) return ctx.where.Error(path + ".warmup", "must be 0 or more");
    out->warmup = s.warmup();
  }
  if (s.has_minrepeats()) {
    if (s.minrepeats() < 1) return ctx.where.Error(path + ".minRepeats", "must be 1 or more");
    out->min_repeats = s.minrepeats();
  }
  if (s.has_maxrepeats()) {
    if (s.maxrepeats() < 1) return ctx.where.Error(path + ".maxRepeats", "must be 1 or more");
    out->max_repeats = s.maxrepeats();
  }
  if (s.has_maxseconds()) {
    if (!(s.maxseconds() > 0)) return ctx.where.Error(path + ".maxSeconds", "must be more than 0");
    out->max_seconds = s.maxseconds();
  }
  if (s.has_confidence()) {
    if (!(s.confidence() > 0 && s.confidence() < 1)) {
      return ctx.where.Error(path + ".confidence", "must be between 0 and 1, e.g. 0.95");
    }
    out->confidence = s.confidence();
  }
  if (!s.method().empty()) {
    if (s.method() != "sequential" && s.method() != "fixed") {
      return ctx.where.Error(path + ".method", "unsupported value \"" + s.method() +
                                                   "\": supported values: sequential, fixed");
    }
    out->fixed = s.method() == "fixed";
  }
  if (out->max_repeats < out->min_repeats) {
    return ctx.where.Error(path + ".maxRepeats", "maxRepeats (" + std::to_string(out->max_repeats) +
                                                     ") is less than minRepeats (" +
                                                     std::to_string(out->min_repeats) + ")");
  }
  return Status::Ok();
}

// Test `t`'s parameters (at `path`): declared by its type, typed, in range; defaults for the
// rest.
Result<kernels::Params> PlanParams(const v1alpha1::TestSpec& t, const kernels::TestInfo& info,
                                   const std::string& path, const Context& ctx) {
  std::map<std::string, ParamValue> values;
  for (const auto& p : info.params) values[p.name] = DefaultValue(p);
  for (const auto& [key, value] : t.parameters().fields()) {
    const std::string ppath = path + ".parameters." + key;
    const std::string& param_name = key;  // clang 14 cannot capture structured bindings
    auto it = std::find_if(info.params.begin(), info.params.end(),
                           [&](const kernels::ParamInfo& p) { return p.name == param_name; });
    if (it == info.params.end()) {
      std::vector<std::string> names;
      for (const auto& p : info.params) names.push_back(p.name);
      return ctx.where.Error(ppath, "unknown parameter \"" + key + "\" for test type " + t.type() +
                                        " (parameters: " + (names.empty() ? "none" : Join(names)) +
                                        ")");
    }
    auto converted = ConvertParam(*it, value);
    if (!converted.ok()) return ctx.where.Error(ppath, converted.status().message());
    values[key] = std::move(converted).value();
  }
  return kernels::Params(std::move(values));
}

// Threshold `i` of test `t` (at `path`) checked against the metrics the test produces and
// resolved (its statistic, operator and bound; a baseline's bound comes later), into `out`.
Status PlanThreshold(const v1alpha1::TestSpec& t, int i, const std::string& path,
                     const Context& ctx, PlannedTest* out) {
  const auto& th = t.thresholds(i);
  const std::string tpath = path + ".thresholds[" + std::to_string(i) + "]";
  verdict::Threshold resolved;
  resolved.metric = th.metric();
  if (th.metric().empty()) return ctx.where.Error(tpath + ".metric", "required field is missing");
  bool known = false;
  std::vector<std::string> names;
  for (const auto& m : out->metrics) {
    names.push_back(m.name);
    known |= m.name == th.metric();
  }
  if (!known) {
    return ctx.where.Error(tpath + ".metric", "test type " + t.type() +
                                                  " does not produce metric \"" + th.metric() +
                                                  "\" (it produces: " + Join(names) + ")");
  }
  v1alpha1::Threshold written = th;
  if (written.statistic().empty()) written.set_statistic("median");
  if (written.op().empty()) written.set_op(">=");
  if (!verdict::ParseStatistic(written.statistic(), &resolved.statistic)) {
    return ctx.where.Error(tpath + ".statistic",
                           "unsupported value \"" + th.statistic() +
                               "\": supported values: mean, median, p05, p95, min, max, "
                               "ciLow, ciHigh");
  }
  if (!verdict::ParseOp(written.op(), &resolved.op)) {
    return ctx.where.Error(tpath + ".op",
                           "unsupported value \"" + th.op() + "\": supported values: >=, >, <=, <");
  }
  if (resolved.statistic == verdict::Statistic::kMean &&
      (resolved.op == verdict::Op::kLe || resolved.op == verdict::Op::kLt)) {
    return ctx.where.Error(tpath + ".statistic",
                           "mean with " + written.op() +
                               " cannot keep its false-PASS promise: one rare slow sample of any "
                               "size lifts a mean, and no number of samples rules that out; "
                               "bound the median or p95 instead");
  }
  const bool relative = th.has_reference() || th.has_fraction() || !th.baseline().empty();
  if (th.has_value() == relative) {
    return ctx.where.Error(
        tpath, "give either value, or reference and fraction, or baseline and fraction");
  }
  if (!th.baseline().empty()) {
    // Resolved once the profile version is known (ResolveBaselines).
    if (th.has_reference()) {
      return ctx.where.Error(tpath + ".reference", "give reference or baseline, not both");
    }
    if (!th.has_fraction()) {
      return ctx.where.Error(tpath + ".fraction", "a baseline bound needs a fraction");
    }
    if (!(th.fraction() > 0)) return ctx.where.Error(tpath + ".fraction", "must be more than 0");
    resolved.bound = 0;
  } else if (relative) {
    if (!th.has_reference() || !th.has_fraction()) {
      return ctx.where.Error(tpath + (th.has_reference() ? ".fraction" : ".reference"),
                             "a relative bound needs both reference and fraction");
    }
    if (!(th.fraction() > 0)) return ctx.where.Error(tpath + ".fraction", "must be more than 0");
    resolved.bound = th.reference() * th.fraction();
  } else {
    resolved.bound = th.value();
  }
  out->threshold_specs.push_back(written);
  out->thresholds.push_back(resolved);
  return Status::Ok();
}

Result<PlannedTest> PlanTest(const v1alpha1::TestSpec& t, const std::string& path,
                             const verdict::Sampling& base_sampling, const Context& ctx) {
  PlannedTest out;
  out.type = t.type();
  out.name = t.name().empty() ? t.type() : t.name();
  out.optional = t.optional();
  if (t.type().empty()) return ctx.where.Error(path + ".type", "required field is missing");
  out.test = kernels::FindTest(t.type(), ctx.options.enable_fixtures);
  if (out.test == nullptr) {
    if (kernels::FindTest(t.type(), true) != nullptr) {
      return ctx.where.Error(path + ".type",
                             "test type \"" + t.type() +
                                 "\" is a test fixture (invented samples); the worker refuses it "
                                 "unless started with --enable-fixtures");
    }
    std::vector<std::string> known;
    for (const auto* k : kernels::AllTests()) known.push_back(k->Info().type);
    return ctx.where.Error(path + ".type",
                           "unknown test type \"" + t.type() + "\": known types: " + Join(known));
  }
  const kernels::TestInfo& info = out.test->Info();

  ASSIGN_OR_RETURN(out.params, PlanParams(t, info, path, ctx));
  out.metrics = out.test->Metrics(out.params);

  out.sampling = base_sampling;
  if (t.has_sampling())
    RETURN_IF_ERROR(MergeSampling(t.sampling(), path + ".sampling", ctx, &out.sampling));

  for (int i = 0; i < t.thresholds_size(); ++i) {
    RETURN_IF_ERROR(PlanThreshold(t, i, path, ctx, &out));
  }
  RETURN_IF_ERROR(CheckThresholdsBind(t, out.metrics, path, ctx.where));
  return out;
}

// Thresholds relative to a baseline take its figure for the plan's profile version.
Status ResolveBaselines(Plan* plan, const PlanOptions& options,
                        const std::vector<std::pair<const spec::SourceMap*, std::string>>& at) {
  for (std::size_t i = 0; i < plan->tests.size(); ++i) {
    PlannedTest& t = plan->tests[i];
    for (std::size_t j = 0; j < t.threshold_specs.size(); ++j) {
      const v1alpha1::Threshold& th = t.threshold_specs[j];
      if (th.baseline().empty()) continue;
      const std::string path = at[i].second + ".thresholds[" + std::to_string(j) + "].baseline";
      if (!options.baseline_value) {
        return at[i].first->Error(path,
                                  "baselines live in the results store, and none is "
                                  "available here");
      }
      auto v = options.baseline_value(th.baseline(), plan->profile_version, t.name, th.metric(),
                                      th.statistic());
      if (!v.ok()) return at[i].first->Error(path, v.status().message());
      t.thresholds[j].bound = *v * th.fraction();
    }
  }
  return Status::Ok();
}

// A confidence or a percentage for messages: "0.95", "10".
std::string FormatNumber(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", x);
  return buf;
}

std::string SamplesText(int n) {
  return n == std::numeric_limits<int>::max() ? "more than the cap" : std::to_string(n);
}

// How far the feasibility message looks for the samples a threshold would need.
constexpr int kMostSamplesPlanned = 100000;

// The GPUs the error budget is planned for: the spec's gpusPerNode, else the GPUs here, else
// an HGX node's eight.
int PlanningGpus(const Plan& plan, const PlanOptions& options) {
  if (plan.gpus_per_node > 0) return plan.gpus_per_node;
  if (options.gpu_names) {
    auto names = options.gpu_names();
    if (names.ok() && !names->empty()) return static_cast<int>(names->size());
  }
  return kAssumedGpus;
}

// Every statistical threshold must be decidable both ways within its test's maxRepeats: one
// that can never PASS makes every node fail closed, one that can never FAIL is no gate.
Status CheckFeasible(const Plan& plan, int gpus,
                     const std::vector<std::pair<const spec::SourceMap*, std::string>>& at) {
  const int checks = NodeChecks(plan, gpus);
  for (std::size_t i = 0; i < plan.tests.size(); ++i) {
    const PlannedTest& t = plan.tests[i];
    const verdict::ErrorBudget budget = verdict::SplitBudget(t.sampling.confidence, checks);
    for (std::size_t j = 0; j < t.thresholds.size(); ++j) {
      const verdict::Threshold& th = t.thresholds[j];
      const verdict::Reach r = verdict::FewestSamples(th, t.sampling, budget);
      if (r.pass_samples <= t.sampling.max_repeats && r.fail_samples <= t.sampling.max_repeats) {
        continue;
      }
      const bool pass_side = r.pass_samples > t.sampling.max_repeats;
      // The samples it would need with no cap.
      verdict::Sampling uncapped = t.sampling;
      uncapped.max_repeats = kMostSamplesPlanned;
      const verdict::Reach need = verdict::FewestSamples(th, uncapped, budget);
      const std::string what = std::string(verdict::StatisticName(th.statistic)) + " " + th.metric +
                               " " + verdict::OpName(th.op) + " " + report::FormatFigure(th.bound);
      return at[i].first->Error(
          at[i].second + ".thresholds[" + std::to_string(j) + "]",
          "test " + t.name + ": threshold " + what + " can never " + (pass_side ? "PASS" : "FAIL") +
              " within maxRepeats " + std::to_string(t.sampling.max_repeats) + " at confidence " +
              FormatNumber(t.sampling.confidence) + " over the node's " + std::to_string(checks) +
              " statistical checks (" + std::to_string(gpus) + " GPUs): it needs at least " +
              SamplesText(pass_side ? need.pass_samples : need.fail_samples) +
              " samples; raise maxRepeats or lower the confidence");
    }
  }
  return Status::Ok();
}

fs::path ProfilePath(const std::vector<std::string>& dirs, const std::string& name) {
  for (const auto& d : dirs) {
    fs::path p = fs::path(d) / (name + ".yaml");
    std::error_code ec;
    if (fs::exists(p, ec)) return p;
  }
  return {};
}

}  // namespace

verdict::Sampling DefaultSampling() { return verdict::Sampling{}; }

Result<ParamValue> ConvertParam(const kernels::ParamInfo& info,
                                const google::protobuf::Value& value) {
  auto wrong = [&]() {
    return InvalidArgument("expected " + TypeName(info.type) + ", got " + DescribeValue(value));
  };
  switch (info.type) {
    case ParamType::kInt: {
      auto i = ToInt(value);
      if (!i.ok()) return wrong();
      RETURN_IF_ERROR(CheckRange(info, static_cast<double>(*i)));
      return ParamValue(*i);
    }
    case ParamType::kDouble:
      if (value.kind_case() != google::protobuf::Value::kNumberValue) return wrong();
      RETURN_IF_ERROR(CheckRange(info, value.number_value()));
      return ParamValue(value.number_value());
    case ParamType::kString:
      if (value.kind_case() != google::protobuf::Value::kStringValue) return wrong();
      RETURN_IF_ERROR(CheckChoice(info, value.string_value()));
      return ParamValue(value.string_value());
    case ParamType::kBool:
      if (value.kind_case() != google::protobuf::Value::kBoolValue) return wrong();
      return ParamValue(value.bool_value());
    case ParamType::kStringList: {
      if (value.kind_case() != google::protobuf::Value::kListValue) return wrong();
      std::vector<std::string> out;
      for (const auto& e : value.list_value().values()) {
        if (e.kind_case() != google::protobuf::Value::kStringValue) return wrong();
        RETURN_IF_ERROR(CheckChoice(info, e.string_value()));
        out.push_back(e.string_value());
      }
      return ParamValue(std::move(out));
    }
    case ParamType::kIntList: {
      if (value.kind_case() != google::protobuf::Value::kListValue) return wrong();
      std::vector<std::int64_t> out;
      for (const auto& e : value.list_value().values()) {
        auto i = ToInt(e);
        if (!i.ok()) return wrong();
        RETURN_IF_ERROR(CheckRange(info, static_cast<double>(*i)));
        out.push_back(*i);
      }
      return ParamValue(std::move(out));
    }
  }
  return wrong();
}

Result<std::vector<spec::Loaded<v1alpha1::PerfProfile>>> LoadProfiles(
    const std::vector<std::string>& dirs) {
  std::vector<spec::Loaded<v1alpha1::PerfProfile>> out;
  std::set<std::string> names;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      if (e.path().extension() == ".yaml") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      ASSIGN_OR_RETURN(auto p, spec::LoadProfile(f.string()));
      if (names.insert(p.doc.metadata().name()).second) out.push_back(std::move(p));
    }
  }
  return out;
}

namespace {

// The spec's fields outside its tests and sampling: the level (returned, "quick" when unset),
// the policy's values and the gang's. An error names the field where it was written.
Result<std::string> CheckSpecFields(const v1alpha1::PerfValidationSpec& s, const Context& ctx) {
  if (s.gpuspernode() < 0) return ctx.where.Error("spec.gpusPerNode", "must be 0 or more");
  const std::string level = s.level().empty() ? "quick" : s.level();
  if (level != "quick" && level != "full") {
    return ctx.where.Error(
        "spec.level", "unsupported value \"" + s.level() + "\": supported values: quick, full");
  }
  const auto& on_failure = s.policy().onfailure();
  if (!on_failure.empty() && on_failure != "none" && on_failure != "taint" &&
      on_failure != "taintAndCordon") {
    return ctx.where.Error(
        "spec.policy.onFailure",
        "unsupported value \"" + on_failure + "\": supported values: none, taint, taintAndCordon");
  }
  if (s.policy().parallelism() < 0) {
    return ctx.where.Error("spec.policy.parallelism", "must be 0 or more");
  }
  if (s.policy().nodetimeoutseconds() < 0) {
    return ctx.where.Error("spec.policy.nodeTimeoutSeconds", "must be 0 or more");
  }
  if (s.policy().keepresults() < 0) {
    return ctx.where.Error("spec.policy.keepResults", "must be 0 or more");
  }
  RETURN_IF_ERROR(CheckGang(s.gang(), ctx));
  return level;
}

// `profile: auto` (or neither a profile nor tests): the profile for the GPU model, among the
// cluster's or the folders' profiles; why it was picked goes in plan->profile_note.
Result<std::string> PickProfileByGpu(const PlanOptions& options, const Context& ctx, Plan* plan) {
  if (!options.gpu_names) {
    return ctx.where.Error("spec.profile", "no profile named and no GPU to pick one by");
  }
  auto names = options.gpu_names();
  if (!names.ok()) {
    return ctx.where.Error("spec.profile",
                           "cannot pick a profile by GPU model: " + names.status().message());
  }
  ASSIGN_OR_RETURN(
      auto all, options.profile_list ? options.profile_list() : LoadProfiles(options.profile_dirs));
  std::vector<kernels::ProfileCandidate> candidates;
  for (const auto& p : all) {
    const auto& models = p.doc.spec().gpumodels();
    candidates.push_back({p.doc.metadata().name(), {models.begin(), models.end()}});
  }
  if (names->empty()) return ctx.where.Error("spec.profile", "no GPU to pick a profile by");
  auto picked = kernels::SelectProfileName(names->front(), candidates);
  if (!picked.ok()) {
    return ctx.where.Error("spec.profile",
                           picked.status().message() + "; name a profile or give tests");
  }
  plan->profile_note = "picked profile " + *picked + " for GPU " + names->front();
  return *picked;
}

// The profile named `profile`: the cluster's (options.profile_lookup), else the file of that
// name in the profile folders.
Result<spec::Loaded<v1alpha1::PerfProfile>> FindProfile(const std::string& profile,
                                                        const PlanOptions& options,
                                                        const Context& ctx) {
  if (options.profile_lookup) {
    auto found = options.profile_lookup(profile);
    if (!found.ok()) return ctx.where.Error("spec.profile", found.status().message());
    return std::move(*found);
  }
  fs::path file = ProfilePath(options.profile_dirs, profile);
  if (file.empty()) {
    std::string dirs;
    for (const auto& d : options.profile_dirs) dirs += (dirs.empty() ? "" : ", ") + d;
    return ctx.where.Error("spec.profile", "profile \"" + profile + "\" not found in " +
                                               (dirs.empty() ? "(no profile folders)" : dirs));
  }
  return spec::LoadProfile(file.string());
}

}  // namespace

Result<Plan> BuildPlan(const spec::Loaded<v1alpha1::PerfValidation>& loaded,
                       const PlanOptions& options) {
  const auto& doc = loaded.doc;
  const auto& s = doc.spec();
  Context ctx{loaded.where, options};
  Plan plan;
  plan.validation = doc.metadata().name();
  plan.policy = s.policy();
  plan.gpus_per_node = s.gpuspernode();
  ASSIGN_OR_RETURN(const std::string level, CheckSpecFields(s, ctx));

  // Profile: named, "auto", or picked from the GPU when the spec has no inline tests.
  std::string profile = s.profile();
  verdict::Sampling sampling = DefaultSampling();
  spec::Loaded<v1alpha1::PerfProfile> profile_doc;
  v1alpha1::ProfileLevel profile_level;
  if (profile == "auto" || (profile.empty() && s.tests_size() == 0)) {
    ASSIGN_OR_RETURN(profile, PickProfileByGpu(options, ctx, &plan));
  }
  if (!profile.empty()) {
    ASSIGN_OR_RETURN(profile_doc, FindProfile(profile, options, ctx));
    const v1alpha1::PerfProfileSpec& ps = profile_doc.doc.spec();
    profile_level = level == "full" ? ps.full() : ps.quick();
    Context pctx{profile_doc.where, options};
    RETURN_IF_ERROR(
        MergeSampling(profile_level.sampling(), "spec." + level + ".sampling", pctx, &sampling));
    plan.profile = profile_doc.doc.metadata().name();
    plan.profile_version = ps.version();
    // A profile named by hand must be for the GPUs it certifies (no GPU here: nothing to check).
    if (plan.profile_note.empty() && options.gpu_names) {
      if (auto gpus = options.gpu_names(); gpus.ok()) {
        RETURN_IF_ERROR(CheckProfileFitsGpus(profile_doc.doc, *gpus, ctx.where));
      }
    }
  }
  RETURN_IF_ERROR(MergeSampling(s.sampling(), "spec.sampling", ctx, &sampling));

  std::set<std::string> names;
  // Where each planned test was written, for the feasibility check's messages.
  std::vector<std::pair<const spec::SourceMap*, std::string>> written_at;
  for (int i = 0; i < s.tests_size(); ++i) {
    const std::string path = "spec.tests[" + std::to_string(i) + "]";
    ASSIGN_OR_RETURN(PlannedTest t, PlanTest(s.tests(i), path, sampling, ctx));
    if (!names.insert(t.name).second) {
      return ctx.where.Error(path + ".name", "duplicate test name \"" + t.name +
                                                 "\" (give each test of the same type a name)");
    }
    plan.tests.push_back(std::move(t));
    written_at.emplace_back(&loaded.where, path);
  }
  // The profile's tests, except those an inline test of the same name overrides; errors
  // point into the profile file.
  Context pctx{profile_doc.where, options};
  for (int i = 0; i < profile_level.tests_size(); ++i) {
    const std::string path = "spec." + level + ".tests[" + std::to_string(i) + "]";
    ASSIGN_OR_RETURN(PlannedTest t, PlanTest(profile_level.tests(i), path, sampling, pctx));
    if (!names.insert(t.name).second) continue;
    plan.tests.push_back(std::move(t));
    written_at.emplace_back(&profile_doc.where, path);
  }
  // A plan the operator resolved names its profile in annotations (the tests are inline).
  const auto& ann = doc.metadata().annotations();
  if (plan.profile.empty() && ann.count("perfgate.io/profile") != 0) {
    plan.profile = ann.at("perfgate.io/profile");
    if (ann.count("perfgate.io/profile-version") != 0) {
      plan.profile_version = ann.at("perfgate.io/profile-version");
    }
  }
  if (plan.tests.empty()) {
    return ctx.where.Error("spec.tests", "the spec has no tests (give tests or a profile)");
  }
  RETURN_IF_ERROR(ResolveBaselines(&plan, options, written_at));
  RETURN_IF_ERROR(CheckFeasible(plan, PlanningGpus(plan, options), written_at));
  return plan;
}

int StatisticalThresholds(const PlannedTest& test) {
  int n = 0;
  for (const auto& th : test.thresholds) n += verdict::IsStatistical(th.statistic) ? 1 : 0;
  return n;
}

int NodeChecks(const Plan& plan, int gpus) {
  int checks = 0;
  for (const PlannedTest& t : plan.tests) {
    const bool per_gpu = t.test->Info().scope == kernels::Scope::kGpu;
    checks += StatisticalThresholds(t) * (per_gpu ? gpus : 1);
  }
  return checks;
}

PlanPrice PricePlan(const Plan& plan, int gpus) {
  PlanPrice price;
  price.gpus = gpus;
  price.checks = NodeChecks(plan, gpus);
  for (const PlannedTest& t : plan.tests) {
    TestPrice tp;
    tp.name = t.name;
    tp.sampling = t.sampling;
    const auto scope = t.test->Info().scope;
    tp.targets = scope == kernels::Scope::kHost  ? "host"
                 : scope == kernels::Scope::kGpu ? std::to_string(gpus) + " GPUs at once"
                                                 : "all " + std::to_string(gpus) + " GPUs";
    tp.sample_seconds = t.test->SampleSeconds(t.params, gpus);
    const verdict::ErrorBudget budget = verdict::SplitBudget(t.sampling.confidence, price.checks);
    const int floor = t.sampling.fixed ? t.sampling.max_repeats : t.sampling.min_repeats;
    tp.typical_samples = floor;
    for (std::size_t i = 0; i < t.thresholds.size(); ++i) {
      const verdict::Threshold& th = t.thresholds[i];
      ThresholdPrice p;
      p.text = std::string(verdict::StatisticName(th.statistic)) + " " + th.metric + " " +
               verdict::OpName(th.op) + " " + report::FormatFigure(th.bound);
      p.statistical = verdict::IsStatistical(th.statistic);
      p.reach = verdict::FewestSamples(th, t.sampling, budget);
      p.typical_samples =
          verdict::TypicalPassSamples(th, t.sampling, budget, kHealthyMargin, kHealthyCv);
      tp.typical_samples = std::max(tp.typical_samples, p.typical_samples);
      tp.thresholds.push_back(std::move(p));
    }
    tp.typical_samples = std::min(tp.typical_samples, t.sampling.max_repeats);
    const double warm = t.sampling.warmup * tp.sample_seconds;
    auto within = [&](int n) {
      // Sampling stops at maxSeconds, after at least one sample.
      return warm +
             std::max(tp.sample_seconds, std::min(n * tp.sample_seconds, t.sampling.max_seconds));
    };
    tp.typical_seconds = within(tp.typical_samples);
    tp.worst_seconds = within(t.sampling.max_repeats);
    price.typical_seconds += tp.typical_seconds;
    price.worst_seconds += tp.worst_seconds;
    price.tests.push_back(std::move(tp));
  }
  return price;
}

std::string FormatPlanPrice(const Plan& plan, const PlanPrice& price) {
  auto seconds = [](double x) {
    char buf[32];
    if (x < 60) {
      std::snprintf(buf, sizeof(buf), "%.1f s", x);
    } else {
      std::snprintf(buf, sizeof(buf), "%.0f min %02.0f s", std::floor(x / 60), std::fmod(x, 60));
    }
    return std::string(buf);
  };
  auto count = [](int n) {
    return n == std::numeric_limits<int>::max() ? std::string("never") : std::to_string(n);
  };
  std::string out;
  out += "plan: " + (plan.validation.empty() ? std::string("(unnamed)") : plan.validation);
  if (!plan.profile.empty()) {
    out += ", profile " + plan.profile +
           (plan.profile_version.empty() ? "" : " version " + plan.profile_version);
  }
  out += ", a node of " + std::to_string(price.gpus) + " GPUs with " +
         std::to_string(price.checks) + " statistical checks\n";
  out +=
      "samples each threshold needs at best (any margin) to PASS / to FAIL, and typically to "
      "PASS with figures " +
      FormatNumber(kHealthyMargin * 100) + "% clear at CV " + FormatNumber(kHealthyCv * 100) +
      "%\n\n";
  char line[512];
  std::snprintf(line, sizeof(line), "%-18s %-16s %-52s %6s %6s %8s %4s %9s\n", "TEST", "ON",
                "THRESHOLD", "PASS", "FAIL", "TYPICAL", "CAP", "PER-SAMPLE");
  out += line;
  for (const TestPrice& t : price.tests) {
    bool first = true;
    for (const ThresholdPrice& p : t.thresholds) {
      std::snprintf(line, sizeof(line), "%-18s %-16s %-52s %6s %6s %8s %4d %9s\n",
                    first ? t.name.c_str() : "", first ? t.targets.c_str() : "", p.text.c_str(),
                    count(p.reach.pass_samples).c_str(), count(p.reach.fail_samples).c_str(),
                    p.statistical ? count(p.typical_samples).c_str() : "-", t.sampling.max_repeats,
                    first ? seconds(t.sample_seconds).c_str() : "");
      out += line;
      first = false;
    }
    if (first) {
      std::snprintf(line, sizeof(line), "%-18s %-16s %-52s %6s %6s %8s %4d %9s\n", t.name.c_str(),
                    t.targets.c_str(), "(no thresholds)", "-", "-", "-", t.sampling.max_repeats,
                    seconds(t.sample_seconds).c_str());
      out += line;
    }
  }
  out += "\nwall time per node (tests in turn, warm-up included, each within its maxSeconds):\n";
  for (const TestPrice& t : price.tests) {
    std::snprintf(line, sizeof(line), "  %-18s typical %3d samples %12s   worst %3d samples %12s\n",
                  t.name.c_str(), t.typical_samples, seconds(t.typical_seconds).c_str(),
                  t.sampling.max_repeats, seconds(t.worst_seconds).c_str());
    out += line;
  }
  out += "  node: typical " + seconds(price.typical_seconds) + ", worst case " +
         seconds(price.worst_seconds) + "\n";
  return out;
}

}  // namespace perfgate::worker
