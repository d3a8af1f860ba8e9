// Kubernetes object names and label values from other names. A name may be 253 characters, a
// label value or a DNS-1123 label only 63: the operator and the worker derive the names and
// values they select by with these rules, written once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace perfgate {

// `name` itself when it is a valid label value (at most 63 characters, alphanumeric at both
// ends, '-', '_' or '.' between); otherwise its first 54 characters, '-' and 8 hex digits of
// its FNV-1a hash (63 in all). Deterministic, so every reader derives the same value.
std::string LabelValue(const std::string& name);

// A DNS-1123 label from `parts` joined by '-': lower case, any other character '-', no '-' at
// the end; past 63 characters, the first 54, '-' and 8 hex digits of the joined parts'
// FNV-1a hash, so long names stay distinct. Deterministic.
std::string ObjectName(const std::vector<std::string>& parts);

// A 64-bit FNV-1a hash of `text` (offset basis 1469598103934665603, which every name already
// in a cluster was made with): keeps shortened names apart; not for security.
std::uint64_t Fnv1a(std::string_view text);

// The low `digits` hex digits of `value`, zero-padded ("0000002a").
std::string HexDigits(std::uint64_t value, int digits);

}  // namespace perfgate
