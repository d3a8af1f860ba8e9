#include "kernels/cuda/profile_select.h"

#include <algorithm>
#include <cctype>

namespace perfgate::kernels {
namespace {

// Lower-case words; ' ', '-' and '_' separate them (GFD writes the CUDA name's spaces as '-').
std::vector<std::string> Words(std::string_view s) {
  std::vector<std::string> out;
  std::string word;
  for (char c : s) {
    if (c == ' ' || c == '-' || c == '_' || c == '\t') {
      if (!word.empty()) out.push_back(std::move(word));
      word.clear();
    } else {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  if (!word.empty()) out.push_back(std::move(word));
  return out;
}

bool Contains(const std::vector<std::string>& haystack, const std::vector<std::string>& needle) {
  if (needle.empty() || needle.size() > haystack.size()) return false;
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) !=
         haystack.end();
}

bool IsMig(const std::vector<std::string>& words) {
  return std::find(words.begin(), words.end(), "mig") != words.end();
}

// Length of the longest matching positive entry; 0 when none matches or an exclusion does.
std::size_t MatchLength(const std::vector<std::string>& device, const ProfileCandidate& profile) {
  std::size_t best = 0;
  for (const std::string& pattern : profile.gpu_models) {
    if (pattern.empty()) continue;
    if (pattern[0] == '!') {
      if (Contains(device, Words(std::string_view(pattern).substr(1)))) return 0;
      continue;
    }
    const std::vector<std::string> wanted = Words(pattern);
    // A MIG slice has a fraction of the GPU's bandwidth and SMs: whole-GPU bounds do not apply.
    if (IsMig(device) && !IsMig(wanted)) continue;
    if (!Contains(device, wanted)) continue;
    std::size_t length = 0;
    for (const auto& w : wanted) length += w.size() + 1;
    best = std::max(best, length);
  }
  return best;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

bool ProfileMatchesGpu(std::string_view gpu_name, const ProfileCandidate& profile) {
  return MatchLength(Words(gpu_name), profile) > 0;
}

std::string DescribeProfiles(const std::vector<ProfileCandidate>& profiles) {
  std::string out;
  for (const ProfileCandidate& p : profiles) {
    out += (out.empty() ? "" : ", ") + p.name;
    if (!p.gpu_models.empty()) out += " (" + Join(p.gpu_models) + ")";
  }
  return out.empty() ? "none" : out;
}

Result<std::string> SelectProfileName(std::string_view gpu_name,
                                      const std::vector<ProfileCandidate>& profiles) {
  const std::vector<std::string> device = Words(gpu_name);
  std::size_t best = 0;
  std::vector<std::string> winners;
  for (const ProfileCandidate& p : profiles) {
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
    const std::string why = IsMig(device)
                                ? " is a MIG instance, and no profile is for MIG instances"
                                : " is not a model of any profile";
    return NotFound("GPU \"" + std::string(gpu_name) + "\"" + why +
                    " (profiles: " + DescribeProfiles(profiles) +
                    "); name one with spec.profile or give tests with thresholds");
  }
  if (winners.size() > 1) {
    return InvalidArgument("GPU \"" + std::string(gpu_name) +
                           "\" matches several profiles equally well (" + Join(winners) +
                           "); name one with spec.profile");
  }
  return winners.front();
}

}  // namespace perfgate::kernels
