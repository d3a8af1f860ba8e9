#include "common/yaml_emit.h"

#include <yaml-cpp/yaml.h>

#include <cstdint>

#include "common/spec.h"

namespace perfgate::yaml {
namespace {

using Json = nlohmann::json;

void Emit(YAML::Emitter& e, const Json& j) {
  switch (j.type()) {
    case Json::value_t::object:
      e << YAML::BeginMap;
      for (auto it = j.begin(); it != j.end(); ++it) {
        // A key kubectl would read as something else (`n` is goyaml.v2's false) is quoted too.
        if (NeedsQuotes(it.key())) {
          e << YAML::Key << YAML::DoubleQuoted << it.key() << YAML::Value;
        } else {
          e << YAML::Key << it.key() << YAML::Value;
        }
        Emit(e, it.value());
      }
      e << YAML::EndMap;
      break;
    case Json::value_t::array:
      e << YAML::BeginSeq;
      for (const auto& v : j) Emit(e, v);
      e << YAML::EndSeq;
      break;
    case Json::value_t::string: {
      const std::string s = j.get<std::string>();
      if (NeedsQuotes(s)) {
        e << YAML::DoubleQuoted << s;
      } else {
        e << s;
      }
      break;
    }
    case Json::value_t::boolean:
      e << j.get<bool>();
      break;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      e << j.get<std::int64_t>();
      break;
    case Json::value_t::number_float:
      e << j.get<double>();
      break;
    default:
      e << YAML::Null;
  }
}

}  // namespace

// Strings a YAML reader would take for something else ("True", "1", "null") are quoted.
bool NeedsQuotes(const std::string& s) {
  return spec::ClassifyPlainScalar(s) != spec::ScalarKind::kString || s == "True" || s == "False" ||
         s == "Unknown" || s.empty();
}

std::string EmitYaml(const nlohmann::json& value) {
  YAML::Emitter e;
  Emit(e, value);
  return e.c_str();
}

}  // namespace perfgate::yaml
