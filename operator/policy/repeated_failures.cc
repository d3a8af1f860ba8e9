#include "operator/policy/repeated_failures.h"

#include <algorithm>

namespace perfgate::op {

RepeatedFailureRule RuleOrDefaults(int failures, int window) {
  RepeatedFailureRule r;
  if (window > 0) r.window = window;
  if (failures > 0) r.failures = failures;
  r.failures = std::min(r.failures, r.window);
  return r;
}

int RecentFailures(const std::vector<verdict::Verdict>& newest_first,
                   const RepeatedFailureRule& rule) {
  const size_t n = std::min(newest_first.size(), static_cast<size_t>(std::max(rule.window, 0)));
  return static_cast<int>(std::count(newest_first.begin(),
                                     newest_first.begin() + static_cast<std::ptrdiff_t>(n),
                                     verdict::Verdict::kFail));
}

bool FailsRepeatedly(const std::vector<verdict::Verdict>& newest_first,
                     const RepeatedFailureRule& rule) {
  return rule.failures > 0 && RecentFailures(newest_first, rule) >= rule.failures;
}

}  // namespace perfgate::op
