// The committed CRDs are exactly what the generator makes from the proto, and the generator
// maps every proto field with its JSON name and type (so a proto change cannot slip past).
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "common/spec.h"
#include "operator/crd/crds.h"
#include "perfgate/v1alpha1/report.pb.h"
#include "perfgate/v1alpha1/status.pb.h"
#include "perfgate/v1alpha1/validation.pb.h"

namespace perfgate::op {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Crds, CommittedFilesEqualGeneratorOutput) {
  auto generated = GenerateCrds();
  ASSERT_EQ(generated.size(), 4u);  // perfvalidations, perfresults, perfprofiles, perfbaselines
  for (const auto& [file, text] : generated) {
    EXPECT_EQ(Slurp(std::string(PERFGATE_CRDS_DIR) + "/" + file), text)
        << "crds/" << file << " is stale: run build/operator/perfgate-crdgen crds";
  }
}

// Walks `d` and its schema side by side.
void ExpectFields(const Descriptor* d, const nlohmann::json& schema, const std::string& path) {
  if (d->full_name() == "google.protobuf.Struct") {
    EXPECT_TRUE(schema.value("x-kubernetes-preserve-unknown-fields", false)) << path;
    return;
  }
  ASSERT_TRUE(schema.contains("properties")) << path;
  EXPECT_EQ(schema["properties"].size(), static_cast<size_t>(d->field_count())) << path;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::string p = path + "." + f->json_name();
    ASSERT_TRUE(schema["properties"].contains(f->json_name())) << p << " missing";
    nlohmann::json s = schema["properties"][f->json_name()];
    if (f->is_map()) {
      EXPECT_EQ(s["type"], "object") << p;
      continue;
    }
    if (f->is_repeated()) {
      EXPECT_EQ(s["type"], "array") << p;
      s = s["items"];
    }
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        EXPECT_EQ(s["type"], "integer") << p;
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        EXPECT_EQ(s["type"], "number") << p;
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        EXPECT_EQ(s["type"], "boolean") << p;
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        // IntOrString (spec.disruption.maxUnavailable): a number or a string, so no type.
        if (s.value("x-kubernetes-int-or-string", false)) {
          EXPECT_FALSE(s.contains("type")) << p;
        } else {
          EXPECT_EQ(s["type"], "string") << p;
        }
        break;
      case FieldDescriptor::CPPTYPE_ENUM:
        EXPECT_EQ(s["type"], "string") << p;
        EXPECT_EQ(s["enum"].size(), static_cast<size_t>(f->enum_type()->value_count())) << p;
        break;
      case FieldDescriptor::CPPTYPE_MESSAGE:
        ExpectFields(f->message_type(), s, p);
        break;
      default:
        ADD_FAILURE() << p << ": a 64-bit or unsigned field cannot live in a CRD";
    }
  }
}

TEST(Crds, EveryProtoFieldAppearsWithItsType) {
  auto crds = GenerateCrdObjects();
  auto schema = [&](const std::string& file) {
    return crds[file]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
  };
  ExpectFields(v1alpha1::PerfValidationSpec::descriptor(), schema("perfvalidations.yaml"), "spec");
  ExpectFields(v1alpha1::PerfProfileSpec::descriptor(), schema("perfprofiles.yaml"), "spec");
  ExpectFields(v1alpha1::PerfBaselineSpec::descriptor(), schema("perfbaselines.yaml"), "spec");
  ExpectFields(v1alpha1::PerfResultSpec::descriptor(), schema("perfresults.yaml"), "spec");
  ExpectFields(v1alpha1::PerfValidationStatus::descriptor(),
               crds["perfvalidations.yaml"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
                   ["properties"]["status"],
               "status");
}

// What the operator writes is bounded and typed as the API conventions ask: counts never
// negative, times as date-times, the lists it caps capped, conditions merged by type.
TEST(Crds, TheStatusSchemaCarriesItsBoundsAndFormats) {
  auto crd = GenerateCrdObjects()["perfvalidations.yaml"];
  auto status =
      crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"];
  EXPECT_EQ(status["passed"]["minimum"], 0);
  EXPECT_EQ(status["retests"]["additionalProperties"]["minimum"], 0);
  EXPECT_EQ(status["yields"]["additionalProperties"]["properties"]["count"]["minimum"], 0);
  EXPECT_EQ(status["startTime"]["format"], "date-time");
  EXPECT_EQ(status["history"]["items"]["properties"]["completionTime"]["format"], "date-time");
  EXPECT_EQ(status["failingNodes"]["maxItems"], 20);
  EXPECT_EQ(status["history"]["maxItems"], 10);
  EXPECT_EQ(status["quarantine"]["properties"]["heldNodes"]["maxItems"], 20);
  EXPECT_EQ(status["conditions"]["x-kubernetes-list-type"], "map");
  EXPECT_EQ(status["conditions"]["items"]["required"], nlohmann::json({"type", "status"}));
  EXPECT_EQ(status["nodeSignals"]["additionalProperties"]["items"]["type"], "string");
  EXPECT_EQ(status["verdict"]["enum"].size(), 7u);
  auto result = GenerateCrdObjects()["perfresults.yaml"]["spec"]["versions"][0]["schema"]
                                    ["openAPIV3Schema"]["properties"]["spec"];
  EXPECT_EQ(result["required"], nlohmann::json({"validation", "nodeName", "run", "report"}));
  EXPECT_EQ(result["properties"]["writtenBy"]["enum"], nlohmann::json({"worker", "operator"}));
}

// The reference names every field the operator writes: the status's and a PerfResult's.
TEST(Crds, TheReferenceNamesEveryFieldTheOperatorWrites) {
  const std::string doc = Slurp(std::string(PERFGATE_CRDS_DIR) + "/../docs/crd-reference.md");
  ASSERT_FALSE(doc.empty());
  for (const Descriptor* d :
       {v1alpha1::PerfValidationStatus::descriptor(), v1alpha1::PerfResultSpec::descriptor()}) {
    for (int i = 0; i < d->field_count(); ++i) {
      const std::string name = d->field(i)->json_name();
      EXPECT_TRUE(doc.find("`" + name + "`") != std::string::npos ||
                  doc.find("`" + name + "[]`") != std::string::npos)
          << d->name() << "." << name << " is not in docs/crd-reference.md";
    }
  }
}

TEST(Crds, UserTypedEnumsAndMinimumsAreEnforced) {
  auto crd = GenerateCrdObjects()["perfvalidations.yaml"];
  auto spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
  EXPECT_EQ(spec["properties"]["level"]["enum"], nlohmann::json({"quick", "full"}));
  EXPECT_EQ(spec["properties"]["policy"]["properties"]["onFailure"]["enum"],
            nlohmann::json({"none", "taint", "taintAndCordon"}));
  EXPECT_EQ(spec["properties"]["sampling"]["properties"]["minRepeats"]["minimum"], 1);
  EXPECT_EQ(spec["properties"]["tests"]["items"]["required"], nlohmann::json({"type"}));
  EXPECT_EQ(crd["spec"]["scope"], "Cluster");
  EXPECT_EQ(crd["spec"]["names"]["shortNames"], nlohmann::json({"pval"}));
  EXPECT_TRUE(crd["spec"]["versions"][0]["subresources"].contains("status"));
}

// Reads YAML as Kubernetes does (YAML 1.2 core schema: plain `True` is a boolean, quoted
// "True" a string).
// The JSON kubectl sends for a YAML document: plain scalars as goyaml.v2 reads them, keys too
// (a key that reads as a boolean becomes "true" or "false", as sigs.k8s.io/yaml writes it).
nlohmann::json FromYaml(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& kv : n) {
      const nlohmann::json key = FromYaml(kv.first);
      o[key.is_string() ? key.get<std::string>() : key.dump()] = FromYaml(kv.second);
    }
    return o;
  }
  if (n.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& v : n) a.push_back(FromYaml(v));
    return a;
  }
  if (!n.IsScalar()) return nullptr;
  const std::string s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted
  switch (spec::ClassifyPlainScalar(s)) {
    case spec::ScalarKind::kNull:
      return nullptr;
    case spec::ScalarKind::kBool:
      return *spec::PlainBool(s);
    case spec::ScalarKind::kInt:
      return std::stoll(s);
    case spec::ScalarKind::kFloat:
      return std::stod(s);
    default:
      return s;
  }
}

TEST(Crds, YamlReadsBackAsTheGeneratedObjects) {
  auto objects = GenerateCrdObjects();
  for (const auto& [file, text] : GenerateCrds()) {
    EXPECT_EQ(FromYaml(YAML::Load(text)), objects[file]) << file;
  }
}

}  // namespace
}  // namespace perfgate::op
