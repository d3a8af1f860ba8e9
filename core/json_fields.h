// Reading fields of Kubernetes objects held as JSON: a missing or mistyped field reads as
// empty (or the default), never as an error. Pure, header-only.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "core/names.h"

namespace perfgate::op {

using Json = nlohmann::json;

// The string at `p`, or "".
inline std::string Str(const Json& j, const Json::json_pointer& p) {
  if (!j.contains(p)) return "";
  const Json& v = j.at(p);
  return v.is_string() ? v.get<std::string>() : "";
}

// The integer at `p` (a number or a numeric string), or `def`.
inline int64_t Int(const Json& j, const Json::json_pointer& p, int64_t def = 0) {
  if (!j.contains(p)) return def;
  const Json& v = j.at(p);
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number()) return static_cast<int64_t>(v.get<double>());
  if (v.is_string()) return std::strtoll(v.get<std::string>().c_str(), nullptr, 10);
  return def;
}

// The object's label `key`, or "".
inline std::string Label(const Json& obj, const std::string& key) {
  const Json labels = obj.value("metadata", Json::object()).value("labels", Json::object());
  auto it = labels.find(key);
  return it != labels.end() && it->is_string() ? it->get<std::string>() : "";
}

// The node a PerfResult is for: its spec.nodeName, else its perfgate.io/node label.
inline std::string ResultNode(const Json& result) {
  return result.value("spec", Json::object()).value("nodeName", Label(result, kNodeLabel));
}

inline std::string Name(const Json& obj) { return Str(obj, "/metadata/name"_json_pointer); }

// `s` cut to `n` characters, "..." marking the cut.
inline std::string Cut(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n) + "...";
}

}  // namespace perfgate::op
