// Nodes that keep failing (docs/lifecycle.md): a node whose results in the store show at least
// `failures` FAILs among its newest `window` validations is marked so that it goes to repair
// instead of being tested again and again. Pure.
#pragma once

#include <string>
#include <vector>

#include "common/verdict.h"

namespace perfgate::op {

struct RepeatedFailureRule {
  int failures = 3;
  int window = 5;
};

// The rule with the defaults for fields 0 (or less): 3 of 5; `failures` is at most `window`.
RepeatedFailureRule RuleOrDefaults(int failures, int window);

// How many of the newest `rule.window` verdicts (newest first: PASS, FAIL, ERROR,
// INCONCLUSIVE) are FAIL.
int RecentFailures(const std::vector<verdict::Verdict>& newest_first,
                   const RepeatedFailureRule& rule);

// At least `rule.failures` of the newest `rule.window` verdicts are FAIL. Fewer verdicts than
// the window still count: three FAILs in a node's first three validations are enough.
bool FailsRepeatedly(const std::vector<verdict::Verdict>& newest_first,
                     const RepeatedFailureRule& rule);

}  // namespace perfgate::op
