#include "operator/crd/crds.h"

#include <google/protobuf/descriptor.h>

#include <functional>

#include "common/node_verdict.h"
#include "common/yaml_emit.h"
#include "perfgate/v1alpha1/report.pb.h"
#include "perfgate/v1alpha1/status.pb.h"
#include "perfgate/v1alpha1/validation.pb.h"

namespace perfgate::op {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using Json = nlohmann::json;

// Constraints the proto cannot express, keyed by "Message.jsonName".
Json Extra(const std::string& message, const std::string& field) {
  static const std::map<std::string, Json> kExtra = {
      {"PerfValidationSpec.level", {{"enum", {"quick", "full"}}}},
      {"PerfValidationSpec.gpusPerNode", {{"minimum", 0}}},
      {"Sampling.warmup", {{"minimum", 0}}},
      {"Sampling.minRepeats", {{"minimum", 1}}},
      {"Sampling.maxRepeats", {{"minimum", 1}}},
      {"Sampling.maxSeconds", {{"minimum", 0}}},
      {"Sampling.confidence",
       {{"minimum", 0}, {"maximum", 1}, {"exclusiveMinimum", true}, {"exclusiveMaximum", true}}},
      {"Sampling.method", {{"enum", {"sequential", "fixed"}}}},
      {"Policy.parallelism", {{"minimum", 0}}},
      {"Policy.nodeTimeoutSeconds", {{"minimum", 0}}},
      {"Policy.keepResults", {{"minimum", 0}}},
      {"Policy.onFailure", {{"enum", {"none", "taint", "taintAndCordon"}}}},
      {"Policy.deviceTaint", {{"enum", {"NoSchedule", "NoExecute", "None"}}}},
      {"Diagnostics.capture", {{"enum", {"OnFailure", "Never"}}}},
      {"Threshold.statistic",
       {{"enum", {"mean", "median", "p05", "p95", "min", "max", "ciLow", "ciHigh"}}}},
      {"Threshold.op", {{"enum", {">=", ">", "<=", "<"}}}},
      {"Threshold.metric", {{"minLength", 1}}},
      {"TestSpec.type", {{"minLength", 1}}},
      {"Gang.shape", {{"enum", {"all", "pairs"}}}},
      {"Gang.port", {{"minimum", 0}, {"maximum", 65535}}},
      {"Gang.narrow", {{"enum", {"pairs", "none"}}}},
      {"GangNetwork.resources", {{"minimum", 1}}},
      {"Toleration.operator", {{"enum", {"Exists", "Equal"}}}},
      {"Disruption.policy", {{"enum", {"wait", "cordon", "drain", "yield"}}}},
      {"Disruption.timeoutSeconds", {{"minimum", 0}}},
      {"Disruption.maxUnavailable", {{"x-kubernetes-int-or-string", true}}},
      {"Toleration.effect", {{"enum", {"NoSchedule", "PreferNoSchedule", "NoExecute"}}}},
      {"ProvisioningTaint.effect", {{"enum", {"NoSchedule", "PreferNoSchedule", "NoExecute"}}}},
      {"NodeConditionSignal.status", {{"enum", {"True", "False", "Unknown"}}}},
      {"BaselineValue.statistic", {{"enum", {"mean", "median", "p05", "p95", "min", "max"}}}},
      {"BaselineValue.metric", {{"minLength", 1}}},
      {"BaselineValue.test", {{"minLength", 1}}},
      {"BaselineValue.count", {{"minimum", 0}}},
      // What the operator writes (status.proto).
      {"PerfValidationStatus.verdict",
       {{"enum", std::vector<std::string>(std::begin(verdict::kValidationVerdictWords),
                                          std::end(verdict::kValidationVerdictWords))}}},
      {"PerfValidationStatus.trigger", {{"enum", {"created", "spec", "rerun", "schedule"}}}},
      {"PerfValidationStatus.gpuSeconds", {{"minimum", 0}}},
      {"PerfValidationStatus.startTime", {{"format", "date-time"}}},
      {"PerfValidationStatus.completionTime", {{"format", "date-time"}}},
      {"PerfValidationStatus.scheduledTime", {{"format", "date-time"}}},
      {"PerfValidationStatus.lastScheduleTime", {{"format", "date-time"}}},
      {"PerfValidationStatus.nextScheduleTime", {{"format", "date-time"}}},
      {"PerfValidationStatus.lastSkippedScheduleTime", {{"format", "date-time"}}},
      {"PerfValidationStatus.nodeSignals", {{"items", {{"type", "string"}}}}},
      {"Condition.status", {{"enum", {"True", "False", "Unknown"}}}},
      {"Condition.lastTransitionTime", {{"format", "date-time"}}},
      {"YieldRecord.lastTime", {{"format", "date-time"}}},
      {"YieldRecord.lostGpuSeconds", {{"minimum", 0}}},
      {"YieldRecord.longestWaitSeconds", {{"minimum", 0}}},
      {"RollingNode.lastValidated", {{"format", "date-time"}}},
      {"RollingNode.nextDue", {{"format", "date-time"}}},
      {"RunRecord.scheduledTime", {{"format", "date-time"}}},
      {"RunRecord.startTime", {{"format", "date-time"}}},
      {"RunRecord.completionTime", {{"format", "date-time"}}},
      {"Regression.against", {{"enum", {"history", "peers"}}}},
      {"PerfResultSpec.writtenBy", {{"enum", {"worker", "operator"}}}},
  };
  auto it = kExtra.find(message + "." + field);
  return it == kExtra.end() ? Json::object() : it->second;
}

// Constraints on a list as a whole (its length, how it merges), keyed by "Message.jsonName".
// The status's lists are bounded to what the operator writes at most.
Json ListExtra(const std::string& message, const std::string& field) {
  static const Json kAtMost20 = {{"maxItems", 20}};
  static const std::map<std::string, Json> kExtra = {
      {"PerfValidationStatus.gpuChanges", kAtMost20},
      {"PerfValidationStatus.repeatedFailures", kAtMost20},
      {"PerfValidationStatus.suspectNodes", kAtMost20},
      {"PerfValidationStatus.failingNodes", kAtMost20},
      {"PerfValidationStatus.regressions", kAtMost20},
      {"PerfValidationStatus.history", {{"maxItems", 10}}},
      {"PerfValidationStatus.conditions",
       {{"x-kubernetes-list-type", "map"}, {"x-kubernetes-list-map-keys", {"type"}}}},
      {"QuarantineStatus.heldNodes", kAtMost20},
  };
  auto it = kExtra.find(message + "." + field);
  return it == kExtra.end() ? Json::object() : it->second;
}

// Required fields per message (what a spec cannot do without).
std::vector<std::string> Required(const std::string& message) {
  if (message == "Threshold") return {"metric"};
  if (message == "TestSpec") return {"type"};
  if (message == "BaselineValue") return {"test", "metric", "statistic"};
  if (message == "Condition") return {"type", "status"};
  if (message == "PerfResultSpec") return {"validation", "nodeName", "run", "report"};
  return {};
}

// Whether `f` is something the operator writes (status.proto): its whole numbers are counts,
// never negative.
bool WrittenByTheOperator(const FieldDescriptor* f) {
  return f->file()->name() == v1alpha1::PerfValidationStatus::descriptor()->file()->name();
}

Json FieldSchema(const FieldDescriptor* f);

Json MessageSchema(const Descriptor* d) {
  if (d->full_name() == "google.protobuf.Struct") {
    return {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  }
  // A list of values; what the values are is the field's extra.
  if (d->full_name() == "google.protobuf.ListValue") return {{"type", "array"}};
  Json props = Json::object();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    Json s = FieldSchema(f);
    if (!f->is_map() && !f->is_repeated()) {
      s.update(Extra(d->name(), f->json_name()));
      // IntOrString: a number or a string, so no type.
      if (s.value("x-kubernetes-int-or-string", false)) s.erase("type");
    }
    if (f->is_map()) s["additionalProperties"].update(Extra(d->name(), f->json_name()));
    if (f->is_repeated() && !f->is_map()) {
      s["items"].update(Extra(d->name(), f->json_name()));
      s.update(ListExtra(d->name(), f->json_name()));
    }
    props[f->json_name()] = s;
  }
  Json out = {{"type", "object"}, {"properties", props}};
  auto req = Required(d->name());
  if (!req.empty()) out["required"] = req;
  return out;
}

Json ScalarSchema(const FieldDescriptor* f) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_UINT32:
      if (WrittenByTheOperator(f))
        return {{"type", "integer"}, {"format", "int32"}, {"minimum", 0}};
      return {{"type", "integer"}, {"format", "int32"}};
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
      return {{"type", "number"}};
    case FieldDescriptor::CPPTYPE_BOOL:
      return {{"type", "boolean"}};
    case FieldDescriptor::CPPTYPE_STRING:
      return {{"type", "string"}};
    case FieldDescriptor::CPPTYPE_ENUM: {
      Json values = Json::array();
      for (int i = 0; i < f->enum_type()->value_count(); ++i) {
        values.push_back(f->enum_type()->value(i)->name());
      }
      return {{"type", "string"}, {"enum", values}};
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return MessageSchema(f->message_type());
    default:
      // 64-bit integers: proto3 JSON writes them as strings (a CRD field of type integer rejects
      // them); none are allowed.
      return {{"x-kubernetes-int-or-string", true}};
  }
}

Json FieldSchema(const FieldDescriptor* f) {
  if (f->is_map()) {
    return {{"type", "object"},
            {"additionalProperties", ScalarSchema(f->message_type()->map_value())}};
  }
  if (f->is_repeated()) return {{"type", "array"}, {"items", ScalarSchema(f)}};
  return ScalarSchema(f);
}

Json Crd(const std::string& kind, const std::string& plural, const std::string& scope,
         const std::vector<std::string>& short_names, const Json& schema, const Json& columns,
         bool status_subresource) {
  std::string lower = kind;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  Json version = {{"name", "v1alpha1"},
                  {"served", true},
                  {"storage", true},
                  {"schema", {{"openAPIV3Schema", schema}}},
                  {"additionalPrinterColumns", columns}};
  if (status_subresource) version["subresources"] = {{"status", Json::object()}};
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata", {{"name", plural + ".perfgate.io"}}},
          {"spec",
           {{"group", "perfgate.io"},
            {"scope", scope},
            {"names",
             {{"kind", kind},
              {"listKind", kind + "List"},
              {"plural", plural},
              {"singular", lower},
              {"shortNames", short_names},
              {"categories", {"perfgate"}}}},
            {"versions", {version}}}}};
}

Json Column(const std::string& name, const std::string& type, const std::string& path,
            int priority = 0) {
  Json c = {{"name", name}, {"type", type}, {"jsonPath", path}};
  if (priority != 0) c["priority"] = priority;
  return c;
}

Json TopLevel(Json spec, Json status) {
  Json props = {{"apiVersion", {{"type", "string"}}},
                {"kind", {{"type", "string"}}},
                {"metadata", {{"type", "object"}}},
                {"spec", std::move(spec)}};
  if (!status.is_null()) props["status"] = std::move(status);
  return {{"type", "object"}, {"required", {"spec"}}, {"properties", props}};
}

}  // namespace

std::map<std::string, Json> GenerateCrdObjects() {
  std::map<std::string, Json> out;
  Json vspec = MessageSchema(v1alpha1::PerfValidationSpec::descriptor());
  out["perfvalidations.yaml"] =
      Crd("PerfValidation", "perfvalidations", "Cluster", {"pval"},
          TopLevel(vspec, MessageSchema(v1alpha1::PerfValidationStatus::descriptor())),
          {Column("Verdict", "string", ".status.verdict"),
           Column("Progress", "string", ".status.progress"),
           Column("ETA", "string", ".status.timeLeft"),
           Column("Passed", "string", ".status.passedNodes"),
           Column("Reason", "string", ".status.conditions[?(@.type==\"Ready\")].reason", 1),
           Column("Suspects", "string", ".status.suspectNodes", 1),
           Column("Age", "date", ".metadata.creationTimestamp")},
          true);
  Json rspec = MessageSchema(v1alpha1::PerfResultSpec::descriptor());
  out["perfresults.yaml"] =
      Crd("PerfResult", "perfresults", "Namespaced", {"pres"}, TopLevel(rspec, nullptr),
          {Column("Node", "string", ".spec.nodeName"),
           Column("Verdict", "string", ".spec.report.verdict"),
           Column("Worst", "string", ".spec.worst"),
           Column("Validation", "string", ".spec.validation", 1),
           Column("Age", "date", ".metadata.creationTimestamp")},
          false);
  Json pspec = MessageSchema(v1alpha1::PerfProfileSpec::descriptor());
  pspec["required"] = {"version"};
  out["perfprofiles.yaml"] = Crd(
      "PerfProfile", "perfprofiles", "Cluster", {"pprof"}, TopLevel(pspec, nullptr),
      {Column("Version", "string", ".spec.version"), Column("Models", "string", ".spec.gpuModels"),
       Column("Age", "date", ".metadata.creationTimestamp")},
      false);
  Json bspec = MessageSchema(v1alpha1::PerfBaselineSpec::descriptor());
  bspec["required"] = {"values"};
  out["perfbaselines.yaml"] =
      Crd("PerfBaseline", "perfbaselines", "Cluster", {"pbl"}, TopLevel(bspec, nullptr),
          {Column("Source", "string", ".spec.source"), Column("Created", "string", ".spec.created"),
           Column("Age", "date", ".metadata.creationTimestamp")},
          false);
  return out;
}

std::map<std::string, std::string> GenerateCrds() {
  std::map<std::string, std::string> out;
  for (const auto& [file, crd] : GenerateCrdObjects()) {
    out[file] =
        "# Generated by perfgate-crdgen from proto/perfgate/v1alpha1 (operator/crd/crds.cc).\n"
        "# Do not edit: run `build/operator/perfgate-crdgen crds` after a proto change.\n" +
        yaml::EmitYaml(crd) + "\n";
  }
  return out;
}

}  // namespace perfgate::op
