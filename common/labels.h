// Kubernetes label values from object names. A name may be 253 characters, a label value only
// 63: the operator and the worker derive the values they select by with this one rule.
#pragma once

#include <string>

namespace perfgate {

// `name` itself when it is a valid label value (at most 63 characters, alphanumeric at both
// ends, '-', '_' or '.' between); otherwise its first 54 characters, '-' and 8 hex digits of
// its FNV-1a hash (63 in all). Deterministic, so every reader derives the same value.
std::string LabelValue(const std::string& name);

}  // namespace perfgate
