#include "common/labels.h"

#include <cctype>

#include "common/strings.h"

namespace perfgate {
namespace {

bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

bool ValidLabelValue(const std::string& v) {
  if (v.empty()) return true;
  if (v.size() > 63 || !Alnum(v.front()) || !Alnum(v.back())) return false;
  for (char c : v) {
    if (!Alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

}  // namespace

std::uint64_t Fnv1a(std::string_view text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string HexDigits(std::uint64_t value, int digits) {
  static constexpr std::string_view kDigits = "0123456789abcdef";
  std::string out(static_cast<std::size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = kDigits[value & 0xfU];
    value >>= 4U;
  }
  return out;
}

std::string LabelValue(const std::string& name) {
  if (ValidLabelValue(name)) return name;
  std::string out;
  for (char c : name.substr(0, 54)) {
    out.push_back(Alnum(c) || c == '-' || c == '_' || c == '.' ? c : '-');
  }
  while (!out.empty() && !Alnum(out.front())) out.erase(out.begin());
  const std::string hex = HexDigits(Fnv1a(name), 8);
  return out.empty() ? hex : out + "-" + hex;
}

std::string ObjectName(const std::vector<std::string>& parts) {
  std::string joined;
  for (const auto& p : parts) joined += (joined.empty() ? "" : "-") + p;
  std::string out;
  for (char c : Lower(joined)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    out.push_back(ok ? c : '-');
  }
  if (out.size() > 63) out = out.substr(0, 54) + "-" + HexDigits(Fnv1a(joined), 8);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

}  // namespace perfgate
