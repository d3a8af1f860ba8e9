// A subset of CEL (the Common Expression Language) over JSON values, enough for the
// expressions Kubernetes ValidatingAdmissionPolicies are written in: literals, field selection
// and indexing, has(), ! - * / % + == != < <= > >= in && || ?:, size(), the string methods
// startsWith/endsWith/contains/matches, and the all/exists/exists_one macros. Not an API.
//
// Semantics follow the CEL spec where the subset reaches: selecting a missing field is an
// error ("no such key"), has() is not; && and || absorb an error when the other side decides
// (false && error is false); there is no implicit conversion between types ("no such
// overload"). Ints are 64-bit; 1 == 1.0 (CEL's heterogeneous numeric equality).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace perfgate::kubesim::cel {

using Json = nlohmann::json;

struct Node;

// A parsed expression. Parse once, evaluate many times.
class Program {
 public:
  // InvalidArgument with the position for a syntax error or something outside the subset.
  static Result<Program> Compile(const std::string& expression);

  struct Env {
    // Top-level names (object, oldObject, request, params, ...).
    std::map<std::string, Json> vars;
    // `variables.<name>`, evaluated when first used (a ValidatingAdmissionPolicy's variables).
    std::function<Result<Json>(const std::string& name)> variable;
  };
  Result<Json> Evaluate(const Env& env) const;

 private:
  std::shared_ptr<const Node> root_;
};

}  // namespace perfgate::kubesim::cel
