// Dynamic Resource Allocation objects kube-sim validates as kube-apiserver 1.34-1.35 does
// (pkg/apis/resource/validation), in its words: ResourceSlices (resource.k8s.io/v1) and
// DeviceTaintRules (resource.k8s.io/v1alpha3). Only the rules of the fields perfgate and its
// tests use; the rest of the objects is stored as sent.
#include "tests/kube-sim/impl.h"

namespace perfgate::kubesim {
namespace {

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

std::string StringField(const Json& obj, const char* name) {
  const Json& v = Field(obj, name);
  return v.is_string() ? v.get<std::string>() : "";
}

void Required(std::vector<FieldError>& errs, const std::string& field,
              const std::string& why = "") {
  errs.push_back({"FieldValueRequired", field, "Required value" + (why.empty() ? "" : ": " + why)});
}

// A driver name: a DNS subdomain (validateDriverName).
void DriverName(std::vector<FieldError>& errs, const std::string& field, const std::string& v) {
  if (v.empty()) {
    Required(errs, field);
    return;
  }
  for (const auto& e : NameErrors(v)) {
    errs.push_back({"FieldValueInvalid", field, e.message});
  }
}

std::vector<FieldError> ResourceSliceErrors(const Json& obj) {
  std::vector<FieldError> errs;
  const Json& spec = Field(obj, "spec");
  DriverName(errs, "spec.driver", StringField(spec, "driver"));
  const Json& pool = Field(spec, "pool");
  if (StringField(pool, "name").empty()) Required(errs, "spec.pool.name");
  const Json& count = Field(pool, "resourceSliceCount");
  if (!count.is_number_integer() || count.get<long long>() <= 0) {
    errs.push_back({"FieldValueInvalid", "spec.pool.resourceSliceCount",
                    "Invalid value: " + (count.is_null() ? std::string("0") : count.dump()) +
                        ": must be greater than zero"});
  }
  int selectors = 0;
  if (!StringField(spec, "nodeName").empty()) selectors++;
  if (Field(spec, "nodeSelector").is_object()) selectors++;
  if (Field(spec, "allNodes").is_boolean() && Field(spec, "allNodes").get<bool>()) selectors++;
  if (Field(spec, "perDeviceNodeSelection").is_boolean() &&
      Field(spec, "perDeviceNodeSelection").get<bool>()) {
    selectors++;
  }
  if (selectors == 0) {
    Required(errs, "spec",
             "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
             "required");
  } else if (selectors > 1) {
    errs.push_back({"FieldValueInvalid", "spec",
                    "Invalid value: \"{`nodeName`, `nodeSelector`, `allNodes`, "
                    "`perDeviceNodeSelection`}\": exactly one field must be set, not more"});
  }
  const Json& devices = Field(spec, "devices");
  if (devices.is_array()) {
    std::set<std::string> seen;
    for (size_t i = 0; i < devices.size(); ++i) {
      const std::string field = "spec.devices[" + std::to_string(i) + "].name";
      const std::string name = StringField(devices[i], "name");
      if (name.empty()) {
        Required(errs, field);
      } else if (!seen.insert(name).second) {
        errs.push_back({"FieldValueDuplicate", field, "Duplicate value: " + Quoted(name)});
      }
    }
  }
  return errs;
}

std::vector<FieldError> DeviceTaintRuleErrors(const Json& obj) {
  std::vector<FieldError> errs;
  const Json& spec = Field(obj, "spec");
  const Json& selector = Field(spec, "deviceSelector");
  if (const std::string driver = StringField(selector, "driver"); !driver.empty()) {
    DriverName(errs, "spec.deviceSelector.driver", driver);
  }
  const Json& taint = Field(spec, "taint");
  const std::string key = StringField(taint, "key");
  if (key.empty()) {
    Required(errs, "spec.taint.key");
  } else {
    for (const auto& msg : QualifiedNameErrors(key)) {
      errs.push_back(
          {"FieldValueInvalid", "spec.taint.key", "Invalid value: " + Quoted(key) + ": " + msg});
    }
  }
  const std::string effect = StringField(taint, "effect");
  if (effect.empty()) {
    Required(errs, "spec.taint.effect");
  } else if (effect != "NoSchedule" && effect != "NoExecute") {
    errs.push_back({"FieldValueNotSupported", "spec.taint.effect",
                    "Unsupported value: " + Quoted(effect) +
                        ": supported values: \"NoExecute\", \"NoSchedule\""});
  }
  return errs;
}

}  // namespace

std::vector<FieldError> BuiltinSpecErrors(const std::string& typeKey, const Json& obj) {
  if (typeKey == "resource.k8s.io/resourceslices") return ResourceSliceErrors(obj);
  if (typeKey == "resource.k8s.io/devicetaintrules") return DeviceTaintRuleErrors(obj);
  return {};
}

}  // namespace perfgate::kubesim
