// Structural-schema validation, JSONPath, strategic merge, selectors and time formatting for
// kube-sim. Error wording follows kube-apiserver (see docs/kube-sim.md for the sources).
#include <cmath>
#include <regex>
#include <sstream>

#include "tests/kube-sim/internal.h"

namespace perfgate::kubesim {
namespace {

std::string TypeName(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

// Go's %v-ish rendering used in "Invalid value: X".
std::string Render(const Json& v) {
  if (v.is_string()) return Json(v.get<std::string>()).dump();
  if (v.is_object()) return "map[...]";
  if (v.is_array()) return "[...]";
  return v.dump();
}

bool TypeMatches(const std::string& want, const Json& v) {
  if (want.empty()) return true;
  if (want == "object") return v.is_object();
  if (want == "array") return v.is_array();
  if (want == "string") return v.is_string();
  if (want == "boolean") return v.is_boolean();
  if (want == "number") return v.is_number();
  if (want == "integer") {
    if (v.is_number_integer() || v.is_number_unsigned()) return true;
    if (v.is_number_float()) {
      double d = v.get<double>();
      return std::floor(d) == d;
    }
    return false;
  }
  return true;
}

std::string Join(const std::string& path, const std::string& field) {
  return path.empty() ? field : path + "." + field;
}

}  // namespace

void ValidateAndPrune(const Json& schema, Json& value, const std::string& path,
                      std::vector<FieldError>& errs, std::vector<std::string>& unknown) {
  if (!schema.is_object()) return;
  if (value.is_null()) {
    if (schema.value("nullable", false)) return;
    std::string want = schema.value("type", "");
    if (!want.empty()) {
      errs.push_back(
          {"FieldValueInvalid", path,
           "Invalid value: \"null\": " + path + " in body must be of type " + want + ": \"null\""});
    }
    return;
  }
  if (schema.value("x-kubernetes-int-or-string", false)) {
    if (!value.is_string() && !TypeMatches("integer", value)) {
      errs.push_back({"FieldValueInvalid", path,
                      "Invalid value: \"" + TypeName(value) + "\": " + path +
                          " in body must be of type integer-or-string: \"" + TypeName(value) +
                          "\""});
    }
    return;
  }
  std::string want = schema.value("type", "");
  if (!TypeMatches(want, value)) {
    errs.push_back({"FieldValueInvalid", path,
                    "Invalid value: \"" + TypeName(value) + "\": " + path +
                        " in body must be of type " + want + ": \"" + TypeName(value) + "\""});
    return;
  }
  if (schema.contains("enum") && schema["enum"].is_array()) {
    bool found = false;
    for (const auto& e : schema["enum"]) found = found || e == value;
    if (!found) {
      std::string supported;
      for (const auto& e : schema["enum"]) {
        if (!supported.empty()) supported += ", ";
        supported += e.dump();
      }
      errs.push_back({"FieldValueNotSupported", path,
                      "Unsupported value: " + value.dump() + ": supported values: " + supported});
    }
  }
  if (value.is_number()) {
    double d = value.get<double>();
    if (schema.contains("minimum")) {
      double m = schema["minimum"].get<double>();
      bool excl = schema.value("exclusiveMinimum", false);
      if (excl ? d <= m : d < m) {
        errs.push_back({"FieldValueInvalid", path,
                        "Invalid value: " + Render(value) + ": " + path + " in body should be " +
                            (excl ? "greater than " : "greater than or equal to ") +
                            schema["minimum"].dump()});
      }
    }
    if (schema.contains("maximum")) {
      double m = schema["maximum"].get<double>();
      bool excl = schema.value("exclusiveMaximum", false);
      if (excl ? d >= m : d > m) {
        errs.push_back({"FieldValueInvalid", path,
                        "Invalid value: " + Render(value) + ": " + path + " in body should be " +
                            (excl ? "less than " : "less than or equal to ") +
                            schema["maximum"].dump()});
      }
    }
  }
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (schema.contains("minLength") && s.size() < schema["minLength"].get<size_t>()) {
      errs.push_back({"FieldValueInvalid", path,
                      "Invalid value: " + Render(value) + ": " + path +
                          " in body should be at least " + schema["minLength"].dump() +
                          " chars long"});
    }
    if (schema.contains("maxLength") && s.size() > schema["maxLength"].get<size_t>()) {
      errs.push_back({"FieldValueTooLong", path,
                      "Too long: may not be more than " + schema["maxLength"].dump() + " bytes"});
    }
    if (schema.contains("pattern")) {
      std::string pattern = schema["pattern"].get<std::string>();
      try {
        if (!std::regex_search(s, std::regex(pattern, std::regex::ECMAScript))) {
          errs.push_back({"FieldValueInvalid", path,
                          "Invalid value: " + Render(value) + ": " + path +
                              " in body should match '" + pattern + "'"});
        }
      } catch (const std::regex_error&) {
      }
    }
  }
  if (value.is_array()) {
    if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>()) {
      errs.push_back({"FieldValueInvalid", path,
                      "Invalid value: " + std::to_string(value.size()) + ": " + path +
                          " in body should have at least " + schema["minItems"].dump() + " items"});
    }
    if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>()) {
      errs.push_back({"FieldValueTooMany", path,
                      "Too many: " + std::to_string(value.size()) + ": must have at most " +
                          schema["maxItems"].dump() + " items"});
    }
    if (schema.contains("items")) {
      for (size_t i = 0; i < value.size(); ++i) {
        ValidateAndPrune(schema["items"], value[i], path + "[" + std::to_string(i) + "]", errs,
                         unknown);
      }
    }
  }
  if (value.is_object()) {
    bool preserve = schema.value("x-kubernetes-preserve-unknown-fields", false) ||
                    schema.value("x-kubernetes-embedded-resource", false);
    const Json* props = schema.contains("properties") ? &schema["properties"] : nullptr;
    const Json* addl =
        schema.contains("additionalProperties") ? &schema["additionalProperties"] : nullptr;
    if (props != nullptr) {
      for (const auto& [name, sub] : props->items()) {
        if (!value.contains(name) && sub.is_object() && sub.contains("default")) {
          value[name] = sub["default"];
        }
      }
    }
    std::vector<std::string> drop;
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string& name = it.key();
      if (path.empty() && (name == "apiVersion" || name == "kind" || name == "metadata")) continue;
      if (props != nullptr && props->contains(name)) {
        ValidateAndPrune((*props)[name], it.value(), Join(path, name), errs, unknown);
      } else if (addl != nullptr && addl->is_object()) {
        ValidateAndPrune(*addl, it.value(), Join(path, name), errs, unknown);
      } else if ((addl != nullptr && addl->is_boolean() && addl->get<bool>()) || preserve) {
        // kept as is
      } else {
        unknown.push_back(Join(path, name));
        drop.push_back(name);
      }
    }
    for (const auto& d : drop) value.erase(d);
    if (schema.contains("required")) {
      for (const auto& r : schema["required"]) {
        if (!value.contains(r.get<std::string>())) {
          errs.push_back(
              {"FieldValueRequired", Join(path, r.get<std::string>()), "Required value"});
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------- JSONPath

namespace {

bool FilterMatches(const Json& item, const std::string& expr) {
  // expr like @.type=="Ready" or @.a.b!='x' or @.field (exists)
  static const std::regex re(
      R"re(^\s*@((?:\.[A-Za-z0-9_\-/]+)+)\s*(==|!=)\s*(?:"([^"]*)"|'([^']*)'|(\S+))\s*$)re");
  std::smatch m;
  if (std::regex_match(expr, m, re)) {
    std::vector<Json> got = JsonPathEval(item, m[1].str());
    std::string want = m[3].matched ? m[3].str() : m[4].matched ? m[4].str() : m[5].str();
    bool eq = false;
    for (const auto& g : got) {
      std::string s = g.is_string() ? g.get<std::string>() : g.dump();
      eq = eq || s == want;
    }
    return m[2].str() == "==" ? eq : !eq;
  }
  std::string e = expr;
  while (!e.empty() && e.front() == ' ') e.erase(0, 1);
  if (e.rfind("@", 0) == 0) return !JsonPathEval(item, e.substr(1)).empty();
  return false;
}

}  // namespace

std::vector<Json> JsonPathEval(const Json& obj, const std::string& pathIn) {
  std::string path = pathIn;
  if (path.size() >= 2 && path.front() == '{' && path.back() == '}') {
    path = path.substr(1, path.size() - 2);
  }
  if (!path.empty() && path[0] == '$') path.erase(0, 1);
  std::vector<Json> cur{obj};
  size_t i = 0;
  while (i < path.size()) {
    std::vector<Json> next;
    if (path[i] == '.') {
      ++i;
      size_t j = i;
      while (j < path.size() && path[j] != '.' && path[j] != '[') ++j;
      std::string field = path.substr(i, j - i);
      i = j;
      if (field.empty()) continue;
      for (const auto& c : cur) {
        if (field == "*") {
          if (c.is_object() || c.is_array()) {
            for (const auto& v : c) next.push_back(v);
          }
        } else if (c.is_object() && c.contains(field)) {
          next.push_back(c[field]);
        }
      }
    } else if (path[i] == '[') {
      size_t close = i + 1;
      int depth = 1;
      while (close < path.size() && depth > 0) {
        if (path[close] == '[') ++depth;
        if (path[close] == ']') --depth;
        if (depth > 0) ++close;
      }
      std::string inner = path.substr(i + 1, close - i - 1);
      i = close + 1;
      for (const auto& c : cur) {
        if (inner == "*") {
          if (c.is_array() || c.is_object()) {
            for (const auto& v : c) next.push_back(v);
          }
        } else if (inner.rfind("?(", 0) == 0 && inner.back() == ')') {
          std::string expr = inner.substr(2, inner.size() - 3);
          if (c.is_array()) {
            for (const auto& v : c) {
              if (FilterMatches(v, expr)) next.push_back(v);
            }
          }
        } else if (!inner.empty() && (inner[0] == '\'' || inner[0] == '"')) {
          std::string field = inner.substr(1, inner.size() - 2);
          if (c.is_object() && c.contains(field)) next.push_back(c[field]);
        } else {
          try {
            long idx = std::stol(inner);
            if (c.is_array()) {
              long n = static_cast<long>(c.size());
              if (idx < 0) idx += n;
              if (idx >= 0 && idx < n) next.push_back(c[static_cast<size_t>(idx)]);
            }
          } catch (const std::exception&) {
          }
        }
      }
    } else {
      ++i;
      continue;
    }
    cur.swap(next);
  }
  return cur;
}

// ------------------------------------------------------------------------- strategic merge

namespace {

std::string MergeKeyFor(const std::string& field, const Json& items) {
  static const std::map<std::string, std::string> kKeys = {
      {"containers", "name"},
      {"initContainers", "name"},
      {"ephemeralContainers", "name"},
      {"env", "name"},
      {"volumes", "name"},
      {"volumeMounts", "mountPath"},
      {"volumeDevices", "devicePath"},
      {"imagePullSecrets", "name"},
      {"conditions", "type"},
      {"ownerReferences", "uid"},
      {"hostAliases", "ip"},
      {"topologySpreadConstraints", "topologyKey"},
      {"secrets", "name"},
      {"addresses", "type"}};
  if (field == "ports") {
    for (const auto& it : items) {
      if (it.is_object() && it.contains("containerPort")) return "containerPort";
    }
    return "port";
  }
  auto it = kKeys.find(field);
  return it == kKeys.end() ? "" : it->second;
}

}  // namespace

Json StrategicMerge(const Json& original, const Json& patch, const std::string& fieldName) {
  (void)fieldName;
  if (!patch.is_object()) return patch;
  if (patch.contains("$patch") && patch["$patch"] == "replace") {
    Json r = patch;
    r.erase("$patch");
    return r;
  }
  Json result = original.is_object() ? original : Json::object();
  for (const auto& [k, v] : patch.items()) {
    if (k == "$patch" || k == "$retainKeys" || k.rfind("$setElementOrder/", 0) == 0) continue;
    if (k.rfind("$deleteFromPrimitiveList/", 0) == 0) {
      std::string field = k.substr(std::string("$deleteFromPrimitiveList/").size());
      if (result.contains(field) && result[field].is_array() && v.is_array()) {
        Json kept = Json::array();
        for (const auto& e : result[field]) {
          bool del = false;
          for (const auto& d : v) del = del || d == e;
          if (!del) kept.push_back(e);
        }
        result[field] = kept;
      }
      continue;
    }
    if (v.is_null()) {
      result.erase(k);
    } else if (v.is_object()) {
      if (v.contains("$patch") && v["$patch"] == "delete") {
        result.erase(k);
      } else {
        result[k] = StrategicMerge(result.contains(k) ? result[k] : Json::object(), v, k);
      }
    } else if (v.is_array()) {
      std::string mk = MergeKeyFor(k, v);
      if (k == "finalizers" && result.contains(k) && result[k].is_array()) {
        Json merged = result[k];
        for (const auto& e : v) {
          bool have = false;
          for (const auto& m : merged) have = have || m == e;
          if (!have) merged.push_back(e);
        }
        result[k] = merged;
      } else if (!mk.empty() && result.contains(k) && result[k].is_array()) {
        Json merged = result[k];
        for (const auto& item : v) {
          if (!item.is_object() || !item.contains(mk)) {
            merged.push_back(item);
            continue;
          }
          bool del = item.contains("$patch") && item["$patch"] == "delete";
          bool found = false;
          for (size_t i = 0; i < merged.size(); ++i) {
            if (merged[i].is_object() && merged[i].contains(mk) && merged[i][mk] == item[mk]) {
              found = true;
              if (del) {
                merged.erase(i);
              } else {
                merged[i] = StrategicMerge(merged[i], item, "");
              }
              break;
            }
          }
          if (!found && !del) merged.push_back(StrategicMerge(Json::object(), item, ""));
        }
        result[k] = merged;
      } else {
        Json cleaned = Json::array();
        for (const auto& item : v) {
          if (item.is_object() && item.contains("$patch") && item["$patch"] == "delete") continue;
          cleaned.push_back(item.is_object() ? StrategicMerge(Json::object(), item, "") : item);
        }
        result[k] = cleaned;
      }
    } else {
      result[k] = v;
    }
  }
  return result;
}

// ------------------------------------------------------------------------------ selectors

namespace {

std::vector<std::string> SplitTopLevel(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::set<std::string> ParseSet(const std::string& s) {
  std::set<std::string> out;
  size_t open = s.find('(');
  size_t close = s.rfind(')');
  if (open == std::string::npos || close == std::string::npos) return out;
  std::stringstream ss(s.substr(open + 1, close - open - 1));
  std::string item;
  while (std::getline(ss, item, ',')) out.insert(Trim(item));
  return out;
}

std::string LabelValue(const Json& labels, const std::string& key, bool* present) {
  *present = labels.is_object() && labels.contains(key);
  return *present && labels[key].is_string() ? labels[key].get<std::string>() : "";
}

}  // namespace

bool MatchLabelSelector(const std::string& selector, const Json& labels, std::string* error) {
  for (std::string req : SplitTopLevel(selector)) {
    req = Trim(req);
    if (req.empty()) continue;
    static const std::regex setRe(R"(^([A-Za-z0-9_.\-/]+)\s+(in|notin)\s*(\(.*\))$)");
    std::smatch m;
    bool present = false;
    if (std::regex_match(req, m, setRe)) {
      std::string v = LabelValue(labels, m[1].str(), &present);
      std::set<std::string> set = ParseSet(m[3].str());
      bool in = present && set.count(v) > 0;
      if (m[2].str() == "in" ? !in : in) return false;
      continue;
    }
    size_t pos;
    if ((pos = req.find("!=")) != std::string::npos) {
      std::string v = LabelValue(labels, Trim(req.substr(0, pos)), &present);
      if (present && v == Trim(req.substr(pos + 2))) return false;
    } else if ((pos = req.find("==")) != std::string::npos) {
      std::string v = LabelValue(labels, Trim(req.substr(0, pos)), &present);
      if (!present || v != Trim(req.substr(pos + 2))) return false;
    } else if ((pos = req.find('=')) != std::string::npos) {
      std::string v = LabelValue(labels, Trim(req.substr(0, pos)), &present);
      if (!present || v != Trim(req.substr(pos + 1))) return false;
    } else if (req[0] == '!') {
      LabelValue(labels, Trim(req.substr(1)), &present);
      if (present) return false;
    } else {
      static const std::regex keyRe(R"(^[A-Za-z0-9_.\-/]+$)");
      if (!std::regex_match(req, keyRe)) {
        if (error != nullptr) *error = "unable to parse requirement: " + req;
        return false;
      }
      LabelValue(labels, req, &present);
      if (!present) return false;
    }
  }
  return true;
}

bool MatchFieldSelector(const std::string& selector, const Json& object, std::string* error) {
  (void)error;
  for (std::string req : SplitTopLevel(selector)) {
    req = Trim(req);
    if (req.empty()) continue;
    bool neg = false;
    size_t pos = req.find("!=");
    size_t skip = 2;
    if (pos != std::string::npos) {
      neg = true;
    } else if ((pos = req.find("==")) != std::string::npos) {
      skip = 2;
    } else if ((pos = req.find('=')) != std::string::npos) {
      skip = 1;
    } else {
      continue;
    }
    std::string field = Trim(req.substr(0, pos));
    std::string want = Trim(req.substr(pos + skip));
    std::vector<Json> got = JsonPathEval(object, "." + field);
    std::string have;
    if (!got.empty() && !got[0].is_null()) {
      have = got[0].is_string() ? got[0].get<std::string>() : got[0].dump();
    }
    if ((have == want) == neg) return false;
  }
  return true;
}

bool MatchLabelSelectorObject(const Json& selector, const Json& labels) {
  if (!selector.is_object()) return true;
  if (selector.contains("matchLabels")) {
    for (const auto& [k, v] : selector["matchLabels"].items()) {
      if (!labels.is_object() || !labels.contains(k) || labels[k] != v) return false;
    }
  }
  if (selector.contains("matchExpressions")) {
    for (const auto& e : selector["matchExpressions"]) {
      if (!MatchLabelExpression(e, labels)) return false;
    }
  }
  return true;
}

bool MatchLabelExpression(const Json& e, const Json& labels) {
  const std::string key = e.value("key", "");
  const std::string op = e.value("operator", "");
  const bool present = labels.is_object() && labels.contains(key);
  const std::string v = present && labels[key].is_string() ? labels[key].get<std::string>() : "";
  bool in = false;
  for (const auto& x : e.value("values", Json::array())) in = in || x == v;
  if (op == "In") return present && in;
  if (op == "NotIn") return !(present && in);
  if (op == "Exists") return present;
  if (op == "DoesNotExist") return !present;
  if (op == "Gt" || op == "Lt") {  // node selectors only: the label as an integer
    const Json values = e.value("values", Json::array());
    if (!present || values.empty() || !values[0].is_string()) return false;
    const long have = std::atol(v.c_str());
    const long want = std::atol(values[0].get<std::string>().c_str());
    return op == "Gt" ? have > want : have < want;
  }
  return true;
}

// ---------------------------------------------------------------------------------- time

std::string HumanDuration(std::chrono::seconds age) {
  long s = age.count();
  if (s < -1) return "<invalid>";
  if (s < 0) return "0s";
  char buf[64];
  long m = s / 60;
  long h = s / 3600;
  long d = h / 24;
  if (s < 120) {
    std::snprintf(buf, sizeof buf, "%lds", s);
  } else if (m < 10) {
    if (s % 60 == 0) {
      std::snprintf(buf, sizeof buf, "%ldm", m);
    } else {
      std::snprintf(buf, sizeof buf, "%ldm%lds", m, s % 60);
    }
  } else if (h < 3) {
    std::snprintf(buf, sizeof buf, "%ldm", m);
  } else if (h < 8) {
    if (m % 60 == 0) {
      std::snprintf(buf, sizeof buf, "%ldh", h);
    } else {
      std::snprintf(buf, sizeof buf, "%ldh%ldm", h, m % 60);
    }
  } else if (h < 48) {
    std::snprintf(buf, sizeof buf, "%ldh", h);
  } else if (h < 192) {
    if (h % 24 == 0) {
      std::snprintf(buf, sizeof buf, "%ldd", d);
    } else {
      std::snprintf(buf, sizeof buf, "%ldd%ldh", d, h % 24);
    }
  } else {
    std::snprintf(buf, sizeof buf, "%ldd", d);
  }
  return buf;
}

}  // namespace perfgate::kubesim
