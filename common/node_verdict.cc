#include "common/node_verdict.h"

#include <array>
#include <utility>

namespace perfgate::verdict {

int Severity(Verdict v) {
  switch (v) {
    case Verdict::kFail:
      return 0;
    case Verdict::kError:
      return 1;
    case Verdict::kInconclusive:
      return 2;
    case Verdict::kSkipped:
      return 3;
    case Verdict::kPass:
      return 4;
  }
  return 1;
}

Verdict Worse(Verdict a, Verdict b) { return Severity(b) < Severity(a) ? b : a; }

std::optional<Verdict> ParseVerdict(std::string_view word) {
  static constexpr std::array kAll = {Verdict::kPass, Verdict::kFail, Verdict::kInconclusive,
                                      Verdict::kSkipped, Verdict::kError};
  for (const Verdict v : kAll) {
    if (word == VerdictName(v)) return v;
  }
  return std::nullopt;
}

Judgement JudgeThresholds(const std::vector<Judgement>& thresholds) {
  const Judgement* worst = nullptr;
  const Judgement* skipped = nullptr;
  for (const auto& t : thresholds) {
    if (t.verdict == Verdict::kSkipped) {
      if (skipped == nullptr) skipped = &t;
    } else if (worst == nullptr || Severity(t.verdict) < Severity(worst->verdict)) {
      worst = &t;
    }
  }
  if (worst != nullptr) return *worst;
  if (skipped != nullptr) return *skipped;
  return {Verdict::kPass, ""};
}

Judgement JudgeTests(const std::vector<TestEvidence>& tests, const NodePolicy& policy) {
  auto first = [&](Verdict v) -> const TestEvidence* {
    for (const auto& t : tests) {
      if (t.verdict == v) return &t;
    }
    return nullptr;
  };
  auto why = [](const TestEvidence& t) { return t.label + ": " + t.reason; };
  if (const auto* t = first(Verdict::kFail)) return {Verdict::kFail, why(*t)};
  if (const auto* t = first(Verdict::kError)) return {Verdict::kError, why(*t)};
  const auto* inconclusive = first(Verdict::kInconclusive);
  if (inconclusive != nullptr && !policy.allow_inconclusive) {
    return {Verdict::kInconclusive, why(*inconclusive)};
  }
  if (const auto* t = first(Verdict::kSkipped); t != nullptr && policy.fail_on_skipped) {
    return {Verdict::kFail, "policy.failOnSkipped: " + why(*t)};
  }
  if (first(Verdict::kPass) == nullptr && inconclusive == nullptr) {
    return {Verdict::kError, "nothing was measured: every test was skipped"};
  }
  return {Verdict::kPass, ""};
}

std::optional<Verdict> JudgeGang(const std::vector<std::optional<Verdict>>& members) {
  Verdict gang = Verdict::kPass;
  for (const auto& m : members) {
    if (!m) return std::nullopt;
    gang = Worse(gang, *m);
  }
  return gang;
}

Judgement NoResult(std::string reason) { return {Verdict::kError, std::move(reason)}; }

bool RegressionFails(Verdict v) { return v == Verdict::kPass; }

RunJudgement JudgeRun(int failed, int errors, int inconclusive) {
  if (failed > 0) return {kFailedWord, "TestsFailed"};
  if (errors > 0) return {kErrorWord, "NodeErrors"};
  if (inconclusive > 0) return {kInconclusiveWord, "Inconclusive"};
  return {kPassedWord, "Passed"};
}

}  // namespace perfgate::verdict
