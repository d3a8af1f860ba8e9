#include "core/names.h"

#include <cctype>

#include "common/labels.h"

namespace perfgate::op {

kube::GroupVersionResource ValidationsResource() {
  return {"perfgate.io", "v1alpha1", "perfvalidations"};
}
kube::GroupVersionResource ResultsResource() { return {"perfgate.io", "v1alpha1", "perfresults"}; }
kube::GroupVersionResource ProfilesResource() {
  return {"perfgate.io", "v1alpha1", "perfprofiles"};
}
kube::GroupVersionResource BaselinesResource() {
  return {"perfgate.io", "v1alpha1", "perfbaselines"};
}
kube::GroupVersionResource ConfigMapsResource() { return {"", "v1", "configmaps"}; }
kube::GroupVersionResource ServicesResource() { return {"", "v1", "services"}; }

std::string RunId(int64_t generation, const std::string& rerun_token) {
  std::string id = "g" + std::to_string(generation);
  if (!rerun_token.empty()) id += "-" + HexDigits(Fnv1a(rerun_token), 8);
  return id;
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

std::string HashHex(const std::string& s) { return HexDigits(Fnv1a(s), 16); }

}  // namespace perfgate::op
