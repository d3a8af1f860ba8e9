#include "common/spec.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

namespace perfgate::spec {
namespace {

namespace pb = google::protobuf;
using nlohmann::json;

int LineOf(const YAML::Node& node) { return node.Mark().line + 1; }

bool IsPlain(const YAML::Node& node) { return node.Tag() == "?" || node.Tag().empty(); }

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Scalar: {
      if (!IsPlain(node)) return "the string \"" + node.Scalar() + "\"";
      switch (ClassifyPlainScalar(node.Scalar())) {
        case ScalarKind::kNull:
          return "null";
        case ScalarKind::kBool:
          return "the boolean " + node.Scalar();
        case ScalarKind::kInt:
          return "the integer " + node.Scalar();
        case ScalarKind::kFloat:
          return "the number " + node.Scalar();
        case ScalarKind::kString:
          return "\"" + node.Scalar() + "\"";
      }
      break;
    }
    case YAML::NodeType::Undefined:
      return "nothing";
  }
  return "?";
}

// Infinity, NaN, or a figure past double's range (1e400): no bound, count or parameter means
// anything with it, and JSON (hence the API server and the report) cannot even carry it.
std::string NotFinite(const std::string& scalar) {
  return "expected a finite number, got " + scalar;
}

// A YAML float scalar (ClassifyPlainScalar's kInt or kFloat) as a double. strtod reads "1e400"
// as infinity but YAML's ".inf" and ".nan" as 0, so those are caught by their spelling.
bool FiniteNumber(const std::string& scalar, double* out) {
  if (scalar.find_first_of("nN") != std::string::npos) return false;  // .inf, .nan
  *out = std::strtod(scalar.c_str(), nullptr);
  return std::isfinite(*out);
}

// Untyped conversion (google.protobuf.Struct fields: test parameters).
Result<json> ToJson(const YAML::Node& node, const std::string& path, SourceMap* where) {
  where->Record(path, LineOf(node));
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return json(nullptr);
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (!IsPlain(node)) return json(s);
      switch (ClassifyPlainScalar(s)) {
        case ScalarKind::kNull:
          return json(nullptr);
        case ScalarKind::kBool:
          return json(*PlainBool(s));
        case ScalarKind::kInt:
          return json(std::strtoll(s.c_str(), nullptr, 10));
        case ScalarKind::kFloat: {
          double v = 0;
          if (!FiniteNumber(s, &v)) return where->Error(path, NotFinite(s));
          return json(v);
        }
        case ScalarKind::kString:
          return json(s);
      }
      return json(s);
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (std::size_t i = 0; i < node.size(); ++i) {
        ASSIGN_OR_RETURN(json v, ToJson(node[i], path + "[" + std::to_string(i) + "]", where));
        out.push_back(std::move(v));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) {
        std::string key = kv.first.Scalar();
        std::string child = path + "." + key;
        if (out.contains(key)) {
          return where->ErrorAt(LineOf(kv.first), child, "duplicate key \"" + key + "\"");
        }
        ASSIGN_OR_RETURN(json v, ToJson(kv.second, child, where));
        out[key] = std::move(v);
      }
      return out;
    }
  }
  return json(nullptr);
}

// String fields that also take an integer, as Kubernetes' IntOrString does (the CRD declares
// them x-kubernetes-int-or-string).
bool IsIntOrString(const pb::FieldDescriptor* field) {
  return field->full_name() == "perfgate.v1alpha1.Disruption.maxUnavailable";
}

Result<json> ScalarToJson(const YAML::Node& node, const pb::FieldDescriptor* field,
                          const std::string& path, const SourceMap& where) {
  if (node.Type() != YAML::NodeType::Scalar) {
    return where.Error(path, std::string("expected ") +
                                 (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING
                                      ? "a string"
                                      : field->cpp_type_name()) +
                                 ", got " + Describe(node));
  }
  const std::string& s = node.Scalar();
  ScalarKind kind = IsPlain(node) ? ClassifyPlainScalar(s) : ScalarKind::kString;
  switch (field->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_STRING:
      // An int-or-string field (Kubernetes' IntOrString, e.g. maxUnavailable: 2 or "25%").
      if (kind == ScalarKind::kInt && IsIntOrString(field)) return json(s);
      if (kind != ScalarKind::kString) {
        return where.Error(
            path, "expected a string, got " + Describe(node) + " (quote it to make it a string)");
      }
      return json(s);
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      if (kind != ScalarKind::kBool) {
        return where.Error(path, "expected true or false, got " + Describe(node));
      }
      return json(*PlainBool(s));
    case pb::FieldDescriptor::CPPTYPE_INT32: {
      if (kind != ScalarKind::kInt) {
        return where.Error(path, "expected an integer, got " + Describe(node));
      }
      errno = 0;
      long long v = std::strtoll(s.c_str(), nullptr, 10);
      if (errno == ERANGE || v < INT_MIN || v > INT_MAX) {
        return where.Error(path, "integer " + s + " is out of range");
      }
      return json(v);
    }
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
    case pb::FieldDescriptor::CPPTYPE_FLOAT: {
      if (kind != ScalarKind::kInt && kind != ScalarKind::kFloat) {
        return where.Error(path, "expected a number, got " + Describe(node));
      }
      double v = 0;
      if (!FiniteNumber(s, &v)) return where.Error(path, NotFinite(s));
      return json(v);
    }
    default:
      return where.Error(path, std::string("unsupported field type ") + field->type_name());
  }
}

Result<json> MessageToJson(const YAML::Node& node, const pb::Descriptor* desc,
                           const std::string& path, SourceMap* where);

Result<json> FieldValueToJson(const YAML::Node& node, const pb::FieldDescriptor* field,
                              const std::string& path, SourceMap* where) {
  where->Record(path, LineOf(node));
  if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
    const pb::Descriptor* msg = field->message_type();
    if (msg->full_name() == "google.protobuf.Struct") {
      if (node.Type() != YAML::NodeType::Map) {
        return where->Error(path, "expected a mapping, got " + Describe(node));
      }
      return ToJson(node, path, where);
    }
    return MessageToJson(node, msg, path, where);
  }
  return ScalarToJson(node, field, path, *where);
}

// The 1-based line of the first byte sequence that is not UTF-8, or 0.
int FirstInvalidUtf8Line(std::string_view text) {
  int line = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    int extra = 0;
    if (c < 0x80) {
      if (c == '\n') ++line;
      ++i;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
    } else {
      return line;
    }
    for (int k = 1; k <= extra; ++k) {
      if (i + k >= text.size()) return line;
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return line;
    }
    i += extra + 1;
  }
  return 0;
}

// Counts the nodes of one document (to tell a real second document from none).
struct NodeCounter : YAML::EventHandler {
  int nodes = 0;
  int first_line = 0;
  void Note(const YAML::Mark& m) {
    if (nodes++ == 0) first_line = m.line + 1;
  }
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { Note(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { Note(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Note(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Note(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Note(m);
  }
  void OnMapEnd() override {}
};

bool IsNullNode(const YAML::Node& node) {
  return node.IsNull() || (node.IsScalar() && IsPlain(node) &&
                           ClassifyPlainScalar(node.Scalar()) == ScalarKind::kNull);
}

Result<json> MessageToJson(const YAML::Node& node, const pb::Descriptor* desc,
                           const std::string& path, SourceMap* where) {
  if (node.Type() != YAML::NodeType::Map) {
    return where->Error(path, "expected a mapping, got " + Describe(node));
  }
  // Kubernetes owns metadata's other fields (uid, resourceVersion, managedFields...).
  const bool lenient = desc->name() == "ObjectMeta";
  json out = json::object();
  std::set<std::string> seen;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string child = path.empty() ? key : path + "." + key;
    where->Record(child, LineOf(kv.first));
    if (!seen.insert(key).second) {
      return where->ErrorAt(LineOf(kv.first), child, "duplicate field \"" + key + "\"");
    }
    const pb::FieldDescriptor* field = nullptr;
    for (int i = 0; i < desc->field_count(); ++i) {
      if (desc->field(i)->json_name() == key) field = desc->field(i);
    }
    if (field == nullptr) {
      if (lenient || (path.empty() && key == "status")) continue;
      std::string known;
      for (int i = 0; i < desc->field_count(); ++i) {
        known += (i ? ", " : "") + desc->field(i)->json_name();
      }
      return where->Error(child, "unknown field \"" + key + "\" (known fields: " + known + ")");
    }
    const YAML::Node& value = kv.second;
    if (IsNullNode(value)) continue;  // null means absent, as in Kubernetes
    if (field->is_map()) {
      if (value.Type() != YAML::NodeType::Map) {
        return where->Error(child, "expected a mapping, got " + Describe(value));
      }
      const pb::FieldDescriptor* value_field = field->message_type()->map_value();
      json m = json::object();
      for (const auto& entry : value) {
        std::string k = entry.first.Scalar();
        ASSIGN_OR_RETURN(json v,
                         FieldValueToJson(entry.second, value_field, child + "." + k, where));
        m[k] = std::move(v);
      }
      out[key] = std::move(m);
    } else if (field->is_repeated()) {
      if (value.Type() != YAML::NodeType::Sequence) {
        return where->Error(child, "expected a list, got " + Describe(value));
      }
      json arr = json::array();
      for (std::size_t i = 0; i < value.size(); ++i) {
        ASSIGN_OR_RETURN(json v, FieldValueToJson(value[i], field,
                                                  child + "[" + std::to_string(i) + "]", where));
        arr.push_back(std::move(v));
      }
      out[key] = std::move(arr);
    } else {
      ASSIGN_OR_RETURN(json v, FieldValueToJson(value, field, child, where));
      out[key] = std::move(v);
    }
  }
  return out;
}

Status CheckHeader(const pb::Message& doc, const SourceMap& where, const std::string& want_kind) {
  const pb::Descriptor* d = doc.GetDescriptor();
  const pb::Reflection* r = doc.GetReflection();
  std::string api = r->GetString(doc, d->FindFieldByName("apiVersion"));
  std::string kind = r->GetString(doc, d->FindFieldByName("kind"));
  if (api != kApiVersion) {
    return where.Error("apiVersion", "expected apiVersion \"" + std::string(kApiVersion) +
                                         "\", got \"" + api + "\"");
  }
  if (kind != want_kind) {
    return where.Error("kind", "expected kind \"" + want_kind + "\", got \"" + kind + "\"");
  }
  return Status::Ok();
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Code::kInvalidArgument, path + ": cannot read: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <typename Doc>
Result<Loaded<Doc>> ParseAs(std::string_view text, const std::string& source,
                            const std::string& kind) {
  Loaded<Doc> loaded;
  RETURN_IF_ERROR(ParseDocument(text, source, &loaded.doc, &loaded.where));
  RETURN_IF_ERROR(CheckHeader(loaded.doc, loaded.where, kind));
  return loaded;
}

}  // namespace

std::optional<bool> PlainBool(const std::string& s) {
  // goyaml.v2's booleans (YAML 1.1), which kubectl's sigs.k8s.io/yaml reads plain scalars with:
  // `n:` as a key reaches the API server as "false".
  static const std::set<std::string> kTrue = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                              "True", "TRUE", "on",  "On",  "ON"};
  static const std::set<std::string> kFalse = {"n",     "N",     "no",  "No",  "NO", "false",
                                               "False", "FALSE", "off", "Off", "OFF"};
  if (kTrue.count(s)) return true;
  if (kFalse.count(s)) return false;
  return std::nullopt;
}

ScalarKind ClassifyPlainScalar(const std::string& s) {
  static const std::regex kInt(R"([-+]?[0-9]+)");
  static const std::regex kFloat(
      R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))");
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return ScalarKind::kNull;
  if (PlainBool(s).has_value()) return ScalarKind::kBool;
  if (std::regex_match(s, kInt)) return ScalarKind::kInt;
  if (std::regex_match(s, kFloat)) return ScalarKind::kFloat;
  return ScalarKind::kString;
}

int SourceMap::Line(const std::string& path) const {
  std::string p = path;
  while (true) {
    auto it = lines_.find(p);
    if (it != lines_.end()) return it->second;
    auto cut = p.find_last_of(".[");
    if (cut == std::string::npos || cut == 0) return 0;
    p = p.substr(0, cut);
  }
}

Status SourceMap::Error(const std::string& path, const std::string& message) const {
  return ErrorAt(Line(path), path, message);
}

Status SourceMap::ErrorAt(int line, const std::string& path, const std::string& message) const {
  std::string where = source_;
  if (line > 0) where += ":" + std::to_string(line);
  return InvalidArgument(where + ": " + (path.empty() ? "" : path + ": ") + message);
}

Status ParseDocument(std::string_view text, const std::string& source, pb::Message* out,
                     SourceMap* where) {
  *where = SourceMap(source);
  // Kubernetes takes only UTF-8; say where it breaks (and nlohmann::json would throw).
  if (int bad_line = FirstInvalidUtf8Line(text); bad_line > 0) {
    return InvalidArgument(source + ":" + std::to_string(bad_line) + ": not valid UTF-8");
  }
  YAML::Node root;
  try {
    // YAML::LoadAll loops forever on some malformed input (yaml-cpp 0.7, found by the fuzzer):
    // load the first document, then look at most one document further for a second one.
    root = YAML::Load(std::string(text));
    if (IsNullNode(root)) return InvalidArgument(source + ": the document is empty");
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    NodeCounter first, second;
    if (parser.HandleNextDocument(first) && parser.HandleNextDocument(second) && second.nodes > 0) {
      return InvalidArgument(source + ":" + std::to_string(second.first_line) +
                             ": expected one document, found more than one");
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ":" +
                           std::to_string(e.mark.column + 1) + ": malformed YAML: " + e.msg);
  }
  ASSIGN_OR_RETURN(json j, MessageToJson(root, out->GetDescriptor(), "", where));
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto st = pb::util::JsonStringToMessage(j.dump(-1, ' ', false, json::error_handler_t::replace),
                                          out, options);
  if (!st.ok()) {
    // The walk above checked names and types, so this is a schema/loader mismatch.
    return Internal(source + ": " + std::string(st.message()));
  }
  return Status::Ok();
}

Result<Loaded<v1alpha1::PerfValidation>> ParseValidation(std::string_view text,
                                                         const std::string& source) {
  return ParseAs<v1alpha1::PerfValidation>(text, source, "PerfValidation");
}

Result<Loaded<v1alpha1::PerfValidation>> LoadValidation(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseValidation(text, path);
}

Result<Loaded<v1alpha1::PerfProfile>> ParseProfile(std::string_view text,
                                                   const std::string& source) {
  return ParseAs<v1alpha1::PerfProfile>(text, source, "PerfProfile");
}

Result<Loaded<v1alpha1::PerfProfile>> LoadProfile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseProfile(text, path);
}

}  // namespace perfgate::spec
