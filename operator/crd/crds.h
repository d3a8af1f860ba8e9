// The CustomResourceDefinitions, generated from the proto descriptors so the CRD schemas and
// the proto schema cannot drift: field names are the JSON names, int32 -> integer, double ->
// number, enums -> string enums, google.protobuf.Struct -> preserve-unknown-fields. What the
// proto cannot say (enums of user-typed strings, minimums, required) is a small table in
// crds.cc. `perfgate-crdgen DIR` writes crds/*.yaml; a test checks the committed files.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace perfgate::op {

// file name ("perfvalidations.yaml") -> CRD as YAML text. Deterministic. Non-blocking.
std::map<std::string, std::string> GenerateCrds();

// The CRD objects (same content, as JSON). Non-blocking.
std::map<std::string, nlohmann::json> GenerateCrdObjects();

}  // namespace perfgate::op
