// The node verdict's rules (common/node_verdict.h): each rule in its order, and the agreement
// between the rule for one node's tests and the rule for a gang's members.
#include "common/node_verdict.h"

#include <gtest/gtest.h>

#include <vector>

namespace perfgate::verdict {
namespace {

constexpr Verdict kMeasured[] = {Verdict::kPass, Verdict::kFail, Verdict::kInconclusive,
                                 Verdict::kError};

std::vector<TestEvidence> Tests(const std::vector<Verdict>& verdicts) {
  std::vector<TestEvidence> tests;
  for (size_t i = 0; i < verdicts.size(); ++i) {
    tests.push_back({verdicts[i], "t" + std::to_string(i) + " [gpu0]", "why " + std::to_string(i)});
  }
  return tests;
}

TEST(NodeVerdict, OrderIsFailErrorInconclusiveSkippedPass) {
  EXPECT_EQ(Worse(Verdict::kPass, Verdict::kFail), Verdict::kFail);
  EXPECT_EQ(Worse(Verdict::kError, Verdict::kFail), Verdict::kFail);
  EXPECT_EQ(Worse(Verdict::kInconclusive, Verdict::kError), Verdict::kError);
  EXPECT_EQ(Worse(Verdict::kSkipped, Verdict::kInconclusive), Verdict::kInconclusive);
  EXPECT_EQ(Worse(Verdict::kPass, Verdict::kSkipped), Verdict::kSkipped);
}

TEST(NodeVerdict, WordsRoundTripAndAnythingElseIsNoVerdict) {
  for (Verdict v : {Verdict::kPass, Verdict::kFail, Verdict::kInconclusive, Verdict::kSkipped,
                    Verdict::kError}) {
    EXPECT_EQ(ParseVerdict(VerdictName(v)), v);
  }
  EXPECT_EQ(ParseVerdict(""), std::nullopt);
  EXPECT_EQ(ParseVerdict("VERDICT_UNSPECIFIED"), std::nullopt);
  EXPECT_EQ(ParseVerdict("pass"), std::nullopt);
}

TEST(NodeVerdict, TestsRuleTakesTheFirstTestOfTheWorstVerdictAsReason) {
  const Judgement j = JudgeTests(
      Tests({Verdict::kPass, Verdict::kInconclusive, Verdict::kFail, Verdict::kFail}), {});
  EXPECT_EQ(j.verdict, Verdict::kFail);
  EXPECT_EQ(j.reason, "t2 [gpu0]: why 2");
  EXPECT_EQ(JudgeTests(Tests({Verdict::kInconclusive, Verdict::kError}), {}).verdict,
            Verdict::kError);
  EXPECT_EQ(JudgeTests(Tests({Verdict::kPass, Verdict::kPass}), {}).verdict, Verdict::kPass);
}

TEST(NodeVerdict, PolicyAllowsInconclusiveAndFailsSkips) {
  const auto tests = Tests({Verdict::kPass, Verdict::kInconclusive});
  EXPECT_EQ(JudgeTests(tests, {}).verdict, Verdict::kInconclusive);
  EXPECT_EQ(JudgeTests(tests, {.allow_inconclusive = true}).verdict, Verdict::kPass);
  const auto skipped = Tests({Verdict::kPass, Verdict::kSkipped});
  EXPECT_EQ(JudgeTests(skipped, {}).verdict, Verdict::kPass);
  const Judgement strict = JudgeTests(skipped, {.fail_on_skipped = true});
  EXPECT_EQ(strict.verdict, Verdict::kFail);
  EXPECT_EQ(strict.reason, "policy.failOnSkipped: t1 [gpu0]: why 1");
  // A measured ERROR outranks the policy's FAIL for a skip: it is the first rule that applies.
  EXPECT_EQ(
      JudgeTests(Tests({Verdict::kError, Verdict::kSkipped}), {.fail_on_skipped = true}).verdict,
      Verdict::kError);
}

TEST(NodeVerdict, NothingMeasuredIsAnError) {
  const Judgement j = JudgeTests(Tests({Verdict::kSkipped, Verdict::kSkipped}), {});
  EXPECT_EQ(j.verdict, Verdict::kError);
  EXPECT_EQ(j.reason, "nothing was measured: every test was skipped");
  EXPECT_EQ(JudgeTests({}, {}).verdict, Verdict::kError);
  // Measured but undecided is not "nothing": with the policy's leave it passes.
  EXPECT_EQ(JudgeTests(Tests({Verdict::kInconclusive}), {.allow_inconclusive = true}).verdict,
            Verdict::kPass);
}

TEST(NodeVerdict, ThresholdsRuleIgnoresSkipsUnlessAllAreSkipped) {
  EXPECT_EQ(JudgeThresholds({{Verdict::kSkipped, "n/a"}, {Verdict::kPass, ""}}).verdict,
            Verdict::kPass);
  const Judgement all = JudgeThresholds({{Verdict::kSkipped, "n/a 1"}, {Verdict::kSkipped, "2"}});
  EXPECT_EQ(all.verdict, Verdict::kSkipped);
  EXPECT_EQ(all.reason, "n/a 1");
  // The worst threshold decides, not the first that did not pass.
  const Judgement worst = JudgeThresholds(
      {{Verdict::kInconclusive, "undecided"}, {Verdict::kError, "refused"}, {Verdict::kPass, ""}});
  EXPECT_EQ(worst.verdict, Verdict::kError);
  EXPECT_EQ(worst.reason, "refused");
  EXPECT_EQ(JudgeThresholds({}).verdict, Verdict::kPass);
}

// The gang rule and the node rule agree: a gang whose members hold verdicts V stands where one
// node whose tests hold V stands, for every combination of up to four measured verdicts.
TEST(NodeVerdict, GangRuleAgreesWithTheNodeRuleOnEveryCombination) {
  int checked = 0;
  std::vector<Verdict> picked;
  auto each = [&](auto&& self, size_t size) -> void {
    if (picked.size() == size) {
      std::vector<std::optional<Verdict>> members(picked.begin(), picked.end());
      EXPECT_EQ(JudgeGang(members), JudgeTests(Tests(picked), {}).verdict)
          << "members " << ::testing::PrintToString(picked);
      ++checked;
      return;
    }
    for (Verdict v : kMeasured) {
      picked.push_back(v);
      self(self, size);
      picked.pop_back();
    }
  };
  for (size_t size = 1; size <= 4; ++size) each(each, size);
  EXPECT_EQ(checked, 4 + 16 + 64 + 256);
}

TEST(NodeVerdict, AnInconclusiveGangMemberLeavesTheGangInconclusive) {
  EXPECT_EQ(JudgeGang({Verdict::kPass, Verdict::kInconclusive}), Verdict::kInconclusive);
  EXPECT_EQ(JudgeGang({Verdict::kFail, Verdict::kInconclusive}), Verdict::kFail);
  EXPECT_EQ(JudgeGang({Verdict::kPass, std::nullopt}), std::nullopt);
}

TEST(NodeVerdict, OperatorJudgementsAndRegressionsAndTheRun) {
  const Judgement none = NoResult("worker failed: exit code 137");
  EXPECT_EQ(none.verdict, Verdict::kError);
  EXPECT_EQ(none.reason, "worker failed: exit code 137");
  EXPECT_TRUE(RegressionFails(Verdict::kPass));
  for (Verdict v : {Verdict::kFail, Verdict::kInconclusive, Verdict::kError}) {
    EXPECT_FALSE(RegressionFails(v)) << v;
  }
  EXPECT_EQ(JudgeRun(0, 0, 0).verdict, "Passed");
  EXPECT_EQ(JudgeRun(1, 1, 1).verdict, "Failed");
  EXPECT_EQ(JudgeRun(1, 1, 1).reason, "TestsFailed");
  EXPECT_EQ(JudgeRun(0, 2, 1).reason, "NodeErrors");
  EXPECT_EQ(JudgeRun(0, 0, 1).verdict, "Inconclusive");
}

}  // namespace
}  // namespace perfgate::verdict
