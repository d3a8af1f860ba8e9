// Spec loading: what a user sees when a spec is wrong (the file, the line and the field), and
// that a good spec reads the way it was written (YAML or JSON).
#include "common/spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace perfgate::spec {
namespace {

using ::testing::HasSubstr;

constexpr const char* kGood = R"(apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: smoke
  uid: 1234            # Kubernetes' metadata is accepted as is
spec:
  gpusPerNode: 8
  level: full
  nodeSelector:
    nvidia.com/gpu.product: NVIDIA-H200
  sampling:
    minRepeats: 5
    confidence: 0.99
  tests:
    - type: host-stream
      parameters:
        arrayBytes: 1048576
      thresholds:
        - metric: triadBandwidthGBps
          value: 2.5
status:
  anything: ignored
)";

TEST(SpecLoad, ReadsEveryFieldAsWritten) {
  auto loaded = ParseValidation(kGood, "good.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const auto& s = loaded->doc.spec();
  EXPECT_EQ(loaded->doc.metadata().name(), "smoke");
  EXPECT_EQ(s.gpuspernode(), 8);
  EXPECT_EQ(s.level(), "full");
  EXPECT_EQ(s.nodeselector().at("nvidia.com/gpu.product"), "NVIDIA-H200");
  EXPECT_TRUE(s.sampling().has_minrepeats());
  EXPECT_FALSE(s.sampling().has_maxrepeats());
  EXPECT_DOUBLE_EQ(s.sampling().confidence(), 0.99);
  ASSERT_EQ(s.tests_size(), 1);
  EXPECT_EQ(s.tests(0).parameters().fields().at("arrayBytes").number_value(), 1048576);
  EXPECT_DOUBLE_EQ(s.tests(0).thresholds(0).value(), 2.5);
  EXPECT_EQ(loaded->where.Line("spec.tests[0].thresholds[0].value"), 20);
}

TEST(SpecLoad, ReadsJsonWithLines) {
  const char* json = R"({
  "apiVersion": "perfgate.io/v1alpha1",
  "kind": "PerfValidation",
  "metadata": {"name": "j"},
  "spec": {
    "tests": [
      {"type": "host-stream", "sampling": {"maxRepeats": "ten"}}
    ]
  }
})";
  auto loaded = ParseValidation(json, "spec.json");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(loaded.status().message(),
              HasSubstr("spec.json:7: spec.tests[0].sampling.maxRepeats: expected an integer, "
                        "got the string \"ten\""));
}

struct BadSpec {
  const char* name;
  const char* yaml;
  const char* expected;  // substring of the error
};

class SpecLoadErrors : public ::testing::TestWithParam<BadSpec> {};

TEST_P(SpecLoadErrors, NamesFileLineAndField) {
  auto loaded = ParseValidation(GetParam().yaml, "bad.yaml");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(loaded.status().message(), HasSubstr(GetParam().expected));
}

INSTANTIATE_TEST_SUITE_P(
    Bad, SpecLoadErrors,
    ::testing::Values(
        BadSpec{"UnknownField",
                "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nspec:\n  tests:\n"
                "    - type: host-stream\n      repeat: 3\n",
                "bad.yaml:6: spec.tests[0].repeat: unknown field \"repeat\""},
        BadSpec{"WrongTypeInt",
                "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nspec:\n  sampling:\n"
                "    minRepeats: five\n",
                "bad.yaml:5: spec.sampling.minRepeats: expected an integer, got \"five\""},
        BadSpec{"NumberForString",
                "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nspec:\n  level: 5\n",
                "bad.yaml:4: spec.level: expected a string, got the integer 5"},
        BadSpec{"ListForMapping",
                "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nspec:\n  policy:\n"
                "    - a\n",
                "bad.yaml:4: spec.policy: expected a mapping, got a list"},
        BadSpec{"BoolGarbage",
                "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nspec:\n  suspend: maybe\n",
                "bad.yaml:4: spec.suspend: expected true or false, got \"maybe\""},
        // kubectl reads `on` as a boolean (goyaml.v2): a string field refuses it as the API
        // server would.
        BadSpec{"YamlOneOneBoolForAString",
                "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nspec:\n  profile: on\n",
                "bad.yaml:4: spec.profile: expected a string, got the boolean on (quote it to make "
                "it a string)"},
        BadSpec{"MalformedYaml",
                "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nspec:\n  tests: [a,\n",
                "bad.yaml:5:1: malformed YAML"},
        BadSpec{"WrongKind", "apiVersion: perfgate.io/v1alpha1\nkind: Pod\n",
                "bad.yaml:2: kind: expected kind \"PerfValidation\", got \"Pod\""},
        BadSpec{"WrongApiVersion", "apiVersion: v1\nkind: PerfValidation\n",
                "bad.yaml:1: apiVersion: expected apiVersion \"perfgate.io/v1alpha1\""},
        BadSpec{"Empty", "", "bad.yaml: the document is empty"},
        BadSpec{"TwoDocuments",
                "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\n---\nkind: X\n",
                "bad.yaml:4: expected one document, found more than one"},
        BadSpec{"DuplicateKey",
                "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nspec:\n  level: quick\n"
                "  level: full\n",
                "bad.yaml:5: spec.level: duplicate field \"level\""},
        BadSpec{"IntegerOutOfRange",
                "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nspec:\n"
                "  gpusPerNode: 99999999999\n",
                "spec.gpusPerNode: integer 99999999999 is out of range"}),
    [](const auto& p) { return std::string(p.param.name); });

// Found by the fuzzer: yaml-cpp's LoadAll never returns on this input.
TEST(SpecLoad, MalformedTailDoesNotHang) {
  std::string text =
      "{\"ap" + std::string(40, '@') + "\": \"taint\"},\n  \"stset\": [{\"type\"\xc2 \"h\"";
  auto loaded = ParseValidation(text, "hang.yaml");
  EXPECT_FALSE(loaded.ok());
}

// Found by the fuzzer: invalid UTF-8 made the JSON step throw.
TEST(SpecLoad, InvalidUtf8NamesTheLine) {
  auto loaded = ParseValidation("apiVersion: perfgate.io/v1alpha1\nkind: Perf\xff\n", "u.yaml");
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("u.yaml:2: not valid UTF-8"));
}

TEST(SpecLoad, ClassifiesPlainScalarsLikeKubernetes) {
  EXPECT_EQ(ClassifyPlainScalar("12"), ScalarKind::kInt);
  EXPECT_EQ(ClassifyPlainScalar("-3"), ScalarKind::kInt);
  EXPECT_EQ(ClassifyPlainScalar("1.5e3"), ScalarKind::kFloat);
  EXPECT_EQ(ClassifyPlainScalar(".5"), ScalarKind::kFloat);
  EXPECT_EQ(ClassifyPlainScalar("true"), ScalarKind::kBool);
  EXPECT_EQ(ClassifyPlainScalar("~"), ScalarKind::kNull);
  EXPECT_EQ(ClassifyPlainScalar("bf16"), ScalarKind::kString);
  EXPECT_EQ(ClassifyPlainScalar("1.2.3"), ScalarKind::kString);
  // goyaml.v2's YAML 1.1 booleans, which kubectl reads specs and CRDs with.
  for (const char* b : {"y", "N", "yes", "No", "ON", "off"}) {
    EXPECT_EQ(ClassifyPlainScalar(b), ScalarKind::kBool) << b;
  }
  EXPECT_EQ(PlainBool("Yes"), true);
  EXPECT_EQ(PlainBool("n"), false);
  EXPECT_EQ(PlainBool("nope"), std::nullopt);
}

TEST(SpecLoad, YamlOneOneBooleansReadAsKubectlReadsThem) {
  auto loaded = ParseValidation(
      "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nspec:\n  suspend: yes\n", "y.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_TRUE(loaded->doc.spec().suspend());
}

TEST(SpecLoad, QuotedNumbersAreStrings) {
  auto loaded = ParseValidation(
      "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nspec:\n  level: \"5\"\n", "q.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->doc.spec().level(), "5");
}

TEST(SpecLoad, MissingFileNamesIt) {
  auto loaded = LoadValidation("/nonexistent/spec.yaml");
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("/nonexistent/spec.yaml: cannot read"));
}

}  // namespace
}  // namespace perfgate::spec
