#include "operator/names.h"

#include <cctype>

#include "operator/json_fields.h"

namespace perfgate::op {
namespace {

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string Hex(uint64_t v, int digits) {
  static const char* kDigits = "0123456789abcdef";
  std::string out(static_cast<size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i) {
    out[static_cast<size_t>(i)] = kDigits[v & 0xf];
    v >>= 4;
  }
  return out;
}

}  // namespace

kube::GroupVersionResource ValidationsResource() {
  return {"perfgate.io", "v1alpha1", "perfvalidations"};
}
kube::GroupVersionResource ResultsResource() { return {"perfgate.io", "v1alpha1", "perfresults"}; }
kube::GroupVersionResource ProfilesResource() {
  return {"perfgate.io", "v1alpha1", "perfprofiles"};
}
kube::GroupVersionResource ConfigMapsResource() { return {"", "v1", "configmaps"}; }
kube::GroupVersionResource ServicesResource() { return {"", "v1", "services"}; }

std::string RunId(int64_t generation, const std::string& rerun_token) {
  std::string id = "g" + std::to_string(generation);
  if (!rerun_token.empty()) id += "-" + Hex(Fnv1a(rerun_token), 8);
  return id;
}

std::string ObjectName(const std::vector<std::string>& parts) {
  std::string joined;
  for (const auto& p : parts) joined += (joined.empty() ? "" : "-") + p;
  std::string out;
  for (char c : Lower(joined)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    out.push_back(ok ? c : '-');
  }
  if (out.size() > 63) out = out.substr(0, 54) + "-" + Hex(Fnv1a(joined), 8);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string BaseRun(const std::string& label) {
  size_t end = label.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(label[end - 1])) != 0) --end;
  for (const std::string stage : {"-pairs", "-probe"}) {
    const size_t digits = label.size() - end;
    if (stage == "-pairs" && digits != 0) continue;
    if (end > stage.size() && label.compare(end - stage.size(), stage.size(), stage) == 0) {
      return label.substr(0, end - stage.size());
    }
  }
  return label;
}

std::string HashHex(const std::string& s) { return Hex(Fnv1a(s), 16); }

}  // namespace perfgate::op
