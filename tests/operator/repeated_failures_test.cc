// The k-of-n rule that marks a node failing repeatedly.
#include "operator/policy/repeated_failures.h"

#include <gtest/gtest.h>

namespace perfgate::op {
namespace {

using verdict::Verdict;
using V = std::vector<Verdict>;

TEST(RepeatedFailures, DefaultsAreThreeOfFive) {
  const RepeatedFailureRule r = RuleOrDefaults(0, 0);
  EXPECT_EQ(r.failures, 3);
  EXPECT_EQ(r.window, 5);
  // More failures than the window is capped at the window.
  EXPECT_EQ(RuleOrDefaults(9, 4).failures, 4);
  EXPECT_EQ(RuleOrDefaults(2, 0).window, 5);
}

TEST(RepeatedFailures, CountsFailsAmongTheNewestOnly) {
  const RepeatedFailureRule r = RuleOrDefaults(3, 5);
  EXPECT_TRUE(FailsRepeatedly(
      V{Verdict::kFail, Verdict::kPass, Verdict::kFail, Verdict::kPass, Verdict::kFail}, r));
  EXPECT_FALSE(FailsRepeatedly(V{Verdict::kFail, Verdict::kPass, Verdict::kFail, Verdict::kPass,
                                 Verdict::kPass, Verdict::kFail},
                               r));
  EXPECT_EQ(RecentFailures(V{Verdict::kFail, Verdict::kPass, Verdict::kFail, Verdict::kPass,
                             Verdict::kPass, Verdict::kFail},
                           r),
            2);
  // Old failures age out of the window once the node passes again.
  EXPECT_FALSE(FailsRepeatedly(V{Verdict::kPass, Verdict::kPass, Verdict::kPass, Verdict::kFail,
                                 Verdict::kFail, Verdict::kFail},
                               r));
}

TEST(RepeatedFailures, FewerResultsThanTheWindowStillCount) {
  const RepeatedFailureRule r = RuleOrDefaults(3, 5);
  EXPECT_TRUE(FailsRepeatedly(V{Verdict::kFail, Verdict::kFail, Verdict::kFail}, r));
  EXPECT_FALSE(FailsRepeatedly(V{Verdict::kFail, Verdict::kFail}, r));
  EXPECT_FALSE(FailsRepeatedly(V{}, r));
}

TEST(RepeatedFailures, OnlyFailCountsNotErrorsOrInconclusive) {
  const RepeatedFailureRule r = RuleOrDefaults(2, 3);
  // A node that could not be measured (never scheduled, worker crashed) is not judged by it.
  EXPECT_FALSE(FailsRepeatedly(V{Verdict::kError, Verdict::kFail, Verdict::kInconclusive}, r));
  EXPECT_TRUE(FailsRepeatedly(V{Verdict::kError, Verdict::kFail, Verdict::kFail}, r));
  // One of one.
  EXPECT_TRUE(FailsRepeatedly(V{Verdict::kFail}, RuleOrDefaults(1, 1)));
}

}  // namespace
}  // namespace perfgate::op
