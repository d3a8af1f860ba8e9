// JSON written as YAML reads back as the same JSON, in kubectl's YAML 1.1 too: keys and strings
// that a reader would take for a boolean, a number or null are quoted.
#include "common/yaml_emit.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace perfgate::yaml {
namespace {

using Json = nlohmann::json;

TEST(YamlEmit, KeysKubectlReadsAsBooleansAreQuoted) {
  const Json doc = {{"n", 1}, {"on", 2}, {"yes", 3}, {"Off", 4}, {"name", 5}};
  const std::string text = EmitYaml(doc);
  EXPECT_NE(text.find("\"n\": 1"), std::string::npos) << text;
  EXPECT_NE(text.find("\"on\": 2"), std::string::npos) << text;
  EXPECT_NE(text.find("\"yes\": 3"), std::string::npos) << text;
  EXPECT_NE(text.find("\"Off\": 4"), std::string::npos) << text;
  EXPECT_NE(text.find("\nname: 5"), std::string::npos) << text;
}

TEST(YamlEmit, StringsThatReadAsSomethingElseAreQuotedOthersArePlain) {
  const Json doc = {{"a", "y"}, {"b", "1"},   {"c", "null"}, {"d", "True"},
                    {"e", ""},  {"f", "1e3"}, {"g", "H200"}, {"h", "NVIDIA H200"}};
  const std::string text = EmitYaml(doc);
  EXPECT_EQ(text,
            "a: \"y\"\nb: \"1\"\nc: \"null\"\nd: \"True\"\ne: \"\"\nf: \"1e3\"\ng: H200\n"
            "h: NVIDIA H200");
}

TEST(YamlEmit, ReadsBackAsTheSameValues) {
  const Json doc = {{"nodes", {{{"node", "on"}, {"stale", false}, {"count", 3}, {"x", 0.5}}}},
                    {"byModel", {{"NVIDIA H200", {{"PASS", 2}}}}},
                    {"empty", Json::array()},
                    {"none", nullptr}};
  const YAML::Node back = YAML::Load(EmitYaml(doc));
  EXPECT_EQ(back["nodes"][0]["node"].as<std::string>(), "on");
  EXPECT_EQ(back["nodes"][0]["stale"].as<bool>(), false);
  EXPECT_EQ(back["nodes"][0]["count"].as<int>(), 3);
  EXPECT_DOUBLE_EQ(back["nodes"][0]["x"].as<double>(), 0.5);
  EXPECT_EQ(back["byModel"]["NVIDIA H200"]["PASS"].as<int>(), 2);
  EXPECT_TRUE(back["empty"].IsSequence());
  EXPECT_TRUE(back["none"].IsNull());
}

}  // namespace
}  // namespace perfgate::yaml
