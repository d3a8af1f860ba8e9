// JSON written out as block YAML that reads back as the same JSON in every reader people point
// at it: kubectl (goyaml.v2, where y, n, yes, no, on and off are booleans), yaml-cpp, PyYAML.
// The CRDs (operator/crd/crds.cc) and `perfgate summary -o yaml` are written with it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace perfgate::yaml {

// Whether `s`, written as a plain YAML scalar (a key or a string value), would read as
// something other than that string ("n", "on", "1", "null", "True", "") and is therefore
// written double-quoted.
bool NeedsQuotes(const std::string& s);

// `value` as block YAML: maps and sequences in block style, keys in the object's order, strings
// plain unless NeedsQuotes, no trailing newline. Pure.
std::string EmitYaml(const nlohmann::json& value);

}  // namespace perfgate::yaml
