// Loading perfgate documents (PerfValidation, PerfProfile) from YAML or JSON into their proto
// messages, with every error naming the file, the line and the field path, e.g.
//   examples/bad.yaml:14: spec.tests[0].sampling.minRepeats: expected an integer, got "five"
// The document is the one a user would `kubectl apply`: apiVersion, kind, metadata, spec.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>

#include "common/result.h"
#include "perfgate/v1alpha1/validation.pb.h"

namespace perfgate::spec {

// Where each field of a loaded document was written.
class SourceMap {
 public:
  SourceMap() = default;
  explicit SourceMap(std::string source) : source_(std::move(source)) {}

  void Record(const std::string& path, int line) { lines_.emplace(path, line); }
  // The line of `path`, or of its nearest recorded ancestor; 0 when unknown.
  int Line(const std::string& path) const;
  // "file:line: path: message" — the form of every spec error.
  Status Error(const std::string& path, const std::string& message) const;
  // The same, at an explicit line (a duplicate key: the second occurrence).
  Status ErrorAt(int line, const std::string& path, const std::string& message) const;
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::map<std::string, int> lines_;
};

template <typename Doc>
struct Loaded {
  Doc doc;
  SourceMap where;
};

// Parses `text` (YAML or JSON) into `out`, checking field names and types against the
// message's schema (unknown fields, wrong types and malformed YAML are errors naming the line).
// `metadata` may carry any Kubernetes metadata field; `status` at the top level is ignored.
Status ParseDocument(std::string_view text, const std::string& source,
                     google::protobuf::Message* out, SourceMap* where);

// Reads a PerfValidation / PerfProfile file and checks apiVersion and kind.
Result<Loaded<v1alpha1::PerfValidation>> LoadValidation(const std::string& path);
Result<Loaded<v1alpha1::PerfValidation>> ParseValidation(std::string_view text,
                                                         const std::string& source);
Result<Loaded<v1alpha1::PerfProfile>> LoadProfile(const std::string& path);
Result<Loaded<v1alpha1::PerfProfile>> ParseProfile(std::string_view text,
                                                   const std::string& source);

// The API group/version of every perfgate document.
inline constexpr std::string_view kApiVersion = "perfgate.io/v1alpha1";

// How a plain YAML scalar reads as kubectl reads it (sigs.k8s.io/yaml over goyaml.v2, so YAML
// 1.1 booleans: y, n, yes, no, on, off in their three cases besides true and false).
enum class ScalarKind { kNull, kBool, kInt, kFloat, kString };
ScalarKind ClassifyPlainScalar(const std::string& s);
// The boolean a plain scalar reads as, if it is one.
std::optional<bool> PlainBool(const std::string& s);

}  // namespace perfgate::spec
