#include "operator/crd/crds.h"

#include <google/protobuf/descriptor.h>

#include <functional>

#include "common/yaml_emit.h"
#include "perfgate/v1alpha1/report.pb.h"
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
  };
  auto it = kExtra.find(message + "." + field);
  return it == kExtra.end() ? Json::object() : it->second;
}

// Required fields per message (what a spec cannot do without).
std::vector<std::string> Required(const std::string& message) {
  if (message == "Threshold") return {"metric"};
  if (message == "TestSpec") return {"type"};
  if (message == "BaselineValue") return {"test", "metric", "statistic"};
  return {};
}

Json FieldSchema(const FieldDescriptor* f);

Json MessageSchema(const Descriptor* d) {
  if (d->full_name() == "google.protobuf.Struct") {
    return {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  }
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
    if (f->is_repeated() && !f->is_map()) s["items"].update(Extra(d->name(), f->json_name()));
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

Json ConditionSchema() {
  return {{"type", "object"},
          {"required", {"type", "status"}},
          {"properties",
           {{"type", {{"type", "string"}}},
            {"status", {{"type", "string"}, {"enum", {"True", "False", "Unknown"}}}},
            {"reason", {{"type", "string"}}},
            {"message", {{"type", "string"}}},
            {"observedGeneration", {{"type", "integer"}}},
            {"lastTransitionTime", {{"type", "string"}, {"format", "date-time"}}}}}};
}

// A count in the status: a whole number, never negative.
Json Counts() { return {{"type", "integer"}, {"minimum", 0}}; }

// A status list of objects with `properties`, at most 20 (what the operator writes at most).
Json BoundedList(Json properties) {
  return {{"type", "array"},
          {"maxItems", 20},
          {"items", {{"type", "object"}, {"properties", std::move(properties)}}}};
}

// spec.disruption.policy yield: per node, how often its worker gave way in this run, and the
// last time (the pod's uid, so that one pod counts once).
Json YieldsSchema() {
  const Json counts = Counts();
  return {{"type", "object"},
          {"additionalProperties",
           {{"type", "object"},
            {"properties",
             {{"count", counts},
              {"lastPod", {{"type", "string"}}},
              {"lastReason", {{"type", "string"}}},
              {"lastTime", {{"type", "string"}, {"format", "date-time"}}},
              // GPU seconds its yielding workers had measured, discarded with their samples.
              {"lostGpuSeconds", {{"type", "number"}, {"minimum", 0}}},
              // The longest a customer's pod waited for a yielding worker to go.
              {"longestWaitSeconds", {{"type", "number"}, {"minimum", 0}}}}}}}};
}

// spec.rolling (operator/policy/rolling.h): per node, when its last verdict in this validation came
// in, when it falls due again, and that verdict; and how many nodes are overdue.
Json RollingSchema() {
  const Json counts = Counts();
  return {{"type", "object"},
          {"properties",
           {{"period", {{"type", "string"}}},
            {"currentNodes", counts},
            {"overdueNodes", counts},
            {"nodes",
             {{"type", "object"},
              {"additionalProperties",
               {{"type", "object"},
                {"properties",
                 {{"result", {{"type", "string"}}},
                  {"lastValidated", {{"type", "string"}, {"format", "date-time"}}},
                  {"nextDue", {{"type", "string"}, {"format", "date-time"}}},
                  {"lastVerdict", {{"type", "string"}}}}}}}}}}}};
}

// The validation's latest runs, newest first.
Json HistorySchema() {
  const Json counts = Counts();
  return {{"type", "array"},
          {"maxItems", 10},
          {"items",
           {{"type", "object"},
            {"properties",
             {{"run", {{"type", "string"}}},
              {"trigger", {{"type", "string"}}},
              {"scheduledTime", {{"type", "string"}, {"format", "date-time"}}},
              {"startTime", {{"type", "string"}, {"format", "date-time"}}},
              {"completionTime", {{"type", "string"}, {"format", "date-time"}}},
              {"verdict", {{"type", "string"}}},
              {"nodes", counts},
              {"passed", counts},
              {"failed", counts},
              {"inconclusive", counts},
              {"errors", counts}}}}}};
}

// The brake on mass quarantine (operator/policy/quarantine.h) while it holds FAILs back.
Json QuarantineSchema() {
  const Json counts = Counts();
  return {{"type", "object"},
          {"properties",
           {{"cap", counts},
            {"quarantined", counts},
            {"held", counts},
            {"heldNodes", {{"type", "array"}, {"maxItems", 20}, {"items", {{"type", "string"}}}}},
            {"shared", {{"type", "string"}}}}}};
}

// The nodes that did not pass, with what failed and the action recommended.
Json FailingNodesSchema() {
  return BoundedList({{"node", {{"type", "string"}}},
                      {"verdict", {{"type", "string"}}},
                      {"test", {{"type", "string"}}},
                      {"figure", {{"type", "string"}}},
                      {"reason", {{"type", "string"}}},
                      {"action", {{"type", "string"}}},
                      {"taintedDevices", {{"type", "string"}}},
                      {"deviceTaintRehearsal", {{"type", "string"}}}});
}

// Figures that regressed against the node's history or its peers (operator/policy/regressions.h).
Json RegressionsSchema() {
  const Json counts = Counts();
  return BoundedList({{"node", {{"type", "string"}}},
                      {"against", {{"type", "string"}, {"enum", {"history", "peers"}}}},
                      {"test", {{"type", "string"}}},
                      {"device", {{"type", "string"}}},
                      {"metric", {{"type", "string"}}},
                      {"ratio", {{"type", "number"}}},
                      {"low", {{"type", "number"}}},
                      {"high", {{"type", "number"}}},
                      {"compared", counts},
                      {"metrics", counts},
                      {"message", {{"type", "string"}}}});
}

Json ValidationStatus() {
  const Json counts = Counts();
  return {
      {"type", "object"},
      {"properties",
       {{"observedGeneration", {{"type", "integer"}}},
        {"run", {{"type", "string"}}},
        {"verdict",
         {{"type", "string"},
          {"enum",
           {"Running", "Passed", "Failed", "Inconclusive", "Error", "InvalidSpec", "Suspended"}}}},
        {"passedNodes", {{"type", "string"}}},
        {"progress", {{"type", "string"}}},
        {"timeLeft", {{"type", "string"}}},
        // GPU seconds this run's workers measured to the end (decide.cc, SetGpuSeconds).
        {"gpuSeconds", {{"type", "number"}, {"minimum", 0}}},
        {"message", {{"type", "string"}}},
        {"profile", {{"type", "string"}}},
        {"profileVersion", {{"type", "string"}}},
        {"gpuModels", {{"type", "string"}}},
        {"nodes", counts},
        {"passed", counts},
        {"failed", counts},
        {"inconclusive", counts},
        {"errors", counts},
        {"pending", counts},
        {"startTime", {{"type", "string"}, {"format", "date-time"}}},
        {"completionTime", {{"type", "string"}, {"format", "date-time"}}},
        // How the run began, and the schedule (operator/policy/lifecycle.h).
        {"trigger", {{"type", "string"}, {"enum", {"created", "spec", "rerun", "schedule"}}}},
        {"scheduledTime", {{"type", "string"}, {"format", "date-time"}}},
        {"lastScheduleTime", {{"type", "string"}, {"format", "date-time"}}},
        {"nextScheduleTime", {{"type", "string"}, {"format", "date-time"}}},
        {"lastSkippedScheduleTime", {{"type", "string"}, {"format", "date-time"}}},
        {"missedSchedules", counts},
        // spec.watchNodes (operator/policy/watch_nodes.h): each node's identity when its result was
        // taken, and how often a changed node was tested again in this run.
        {"nodeIdentities", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
        {"retests", {{"type", "object"}, {"additionalProperties", counts}}},
        {"yields", YieldsSchema()},
        // A node tested again because its last result's driver was not its labels' (the
        // labels' identity then), and GPUs a result shows swapped (operator/policy/identity.h).
        {"identityRetests", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
        // The fault signals (spec.watchNodes, spec.remediationTaints) each node showed when its
        // result was taken: one that appears later tests it again.
        {"nodeSignals",
         {{"type", "object"},
          {"additionalProperties", {{"type", "array"}, {"items", {{"type", "string"}}}}}}},
        {"rolling", RollingSchema()},
        {"gpuChanges", BoundedList({{"node", {{"type", "string"}}},
                                    {"result", {{"type", "string"}}},
                                    {"previousResult", {{"type", "string"}}},
                                    {"change", {{"type", "string"}}}})},
        {"repeatedFailures",
         BoundedList(
             {{"node", {{"type", "string"}}}, {"failures", counts}, {"validations", counts}})},
        {"history", HistorySchema()},
        {"conditions",
         {{"type", "array"},
          {"items", ConditionSchema()},
          {"x-kubernetes-list-type", "map"},
          {"x-kubernetes-list-map-keys", {"type"}}}},
        {"quarantine", QuarantineSchema()},
        {"gangs", counts},
        {"suspectNodes", {{"type", "array"}, {"maxItems", 20}, {"items", {{"type", "string"}}}}},
        {"failingNodes", FailingNodesSchema()},
        {"regressions", RegressionsSchema()}}}};
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
  out["perfvalidations.yaml"] = Crd(
      "PerfValidation", "perfvalidations", "Cluster", {"pval"}, TopLevel(vspec, ValidationStatus()),
      {Column("Verdict", "string", ".status.verdict"),
       Column("Progress", "string", ".status.progress"),
       Column("ETA", "string", ".status.timeLeft"),
       Column("Passed", "string", ".status.passedNodes"),
       Column("Reason", "string", ".status.conditions[?(@.type==\"Ready\")].reason", 1),
       Column("Suspects", "string", ".status.suspectNodes", 1),
       Column("Age", "date", ".metadata.creationTimestamp")},
      true);
  Json rspec = {{"type", "object"},
                {"required", {"validation", "nodeName", "run", "report"}},
                {"properties",
                 {{"validation", {{"type", "string"}}},
                  {"nodeName", {{"type", "string"}}},
                  {"run", {{"type", "string"}}},
                  {"worst", {{"type", "string"}}},
                  {"writtenBy", {{"type", "string"}, {"enum", {"worker", "operator"}}}},
                  {"report", MessageSchema(v1alpha1::Report::descriptor())}}}};
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
