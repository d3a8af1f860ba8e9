#include "kernels/cuda/profile_select.h"

#include <algorithm>
#include <cctype>

namespace perfgate::kernels {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Length of the longest matching positive pattern; 0 when none matches or an exclusion does.
std::size_t MatchLength(const std::string& device, const ProfileCandidate& profile) {
  std::size_t best = 0;
  for (const std::string& pattern : profile.gpu_models) {
    if (pattern.empty()) continue;
    if (pattern[0] == '!') {
      const std::string excluded = Lower(std::string_view(pattern).substr(1));
      if (!excluded.empty() && device.find(excluded) != std::string::npos) return 0;
      continue;
    }
    const std::string wanted = Lower(pattern);
    if (device.find(wanted) != std::string::npos) best = std::max(best, wanted.size());
  }
  return best;
}

}  // namespace

Result<std::string> SelectProfileName(std::string_view gpu_name,
                                      const std::vector<ProfileCandidate>& profiles) {
  const std::string device = Lower(gpu_name);
  std::size_t best = 0;
  std::vector<std::string> winners;
  std::string known;
  for (const ProfileCandidate& p : profiles) {
    known += (known.empty() ? "" : ", ") + p.name;
    const std::size_t length = MatchLength(device, p);
    if (length == 0) continue;
    if (length > best) {
      best = length;
      winners = {p.name};
    } else if (length == best) {
      winners.push_back(p.name);
    }
  }
  if (winners.empty()) {
    return NotFound("no built-in profile matches GPU \"" + std::string(gpu_name) +
                    "\" (profiles: " + (known.empty() ? "none" : known) +
                    "); name one with spec.profile or give tests with thresholds");
  }
  if (winners.size() > 1) {
    std::string names;
    for (const std::string& w : winners) names += (names.empty() ? "" : ", ") + w;
    return InvalidArgument("GPU \"" + std::string(gpu_name) +
                           "\" matches several profiles equally well (" + names +
                           "); name one with spec.profile");
  }
  return winners.front();
}

}  // namespace perfgate::kernels
