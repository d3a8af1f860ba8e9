#include "common/labels.h"

#include <cctype>
#include <cstdint>

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

std::string LabelValue(const std::string& name) {
  if (ValidLabelValue(name)) return name;
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  std::string out;
  for (char c : name.substr(0, 54)) {
    out.push_back(Alnum(c) || c == '-' || c == '_' || c == '.' ? c : '-');
  }
  while (!out.empty() && !Alnum(out.front())) out.erase(out.begin());
  static const char* kDigits = "0123456789abcdef";
  std::string hex(8, '0');
  for (int i = 7; i >= 0; --i) {
    hex[static_cast<size_t>(i)] = kDigits[h & 0xf];
    h >>= 4;
  }
  return out.empty() ? hex : out + "-" + hex;
}

}  // namespace perfgate
