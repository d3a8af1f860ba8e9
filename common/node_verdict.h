// A node's verdict, decided in one place: the ordered, pure rules that turn a node's evidence
// (its tests' verdicts, a missing result, its gang, a regression) into its verdict and reason,
// and the validation's verdict from its nodes'. The worker's runner, the operator's decision,
// its gang narrowing and regression check, and the status all call these; nothing else
// compares verdicts by their words. Standard types only.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "common/verdict.h"

namespace perfgate::verdict {

// The order every rule below uses, worst first: FAIL (a bound was measured and missed), ERROR
// (nothing sound was measured), INCONCLUSIVE (measured, not decided), SKIPPED, PASS. 0 is the
// worst.
int Severity(Verdict v);
Verdict Worse(Verdict a, Verdict b);

// The API's words ("PASS", "FAIL", "INCONCLUSIVE", "SKIPPED", "ERROR"), as VerdictName writes
// them; nullopt for anything else, "" and "VERDICT_UNSPECIFIED" included.
std::optional<Verdict> ParseVerdict(std::string_view word);

// Writes the verdict's word (for logs and test failures).
inline std::ostream& operator<<(std::ostream& os, Verdict v) { return os << VerdictName(v); }

struct Judgement {
  Verdict verdict = Verdict::kError;
  std::string reason;
};

// Rule 0, a test from its thresholds: the worst threshold decides, with the first such
// threshold's reason. A threshold that does not apply here (SKIPPED) leaves the others to decide;
// a test whose every threshold is SKIPPED is SKIPPED. No thresholds: PASS.
Judgement JudgeThresholds(const std::vector<Judgement>& thresholds);

// One test on one device, as the node's rule sees it.
struct TestEvidence {
  Verdict verdict = Verdict::kError;
  std::string label;  // "hbm-stream [gpu0]"
  std::string reason;
};

// spec.policy's say in the node rule.
struct NodePolicy {
  bool allow_inconclusive = false;  // policy.allowInconclusive
  bool fail_on_skipped = false;     // policy.failOnSkipped
};

// Rule 1, a node's tests, in order (the first that applies decides; its reason is the first
// such test's, "label: reason"):
//   1. a FAIL makes the node FAIL;
//   2. else an ERROR makes it ERROR;
//   3. else an INCONCLUSIVE makes it INCONCLUSIVE, unless policy.allowInconclusive;
//   4. else a SKIPPED under policy.failOnSkipped makes it FAIL;
//   5. else a node where nothing was measured (no PASS, no INCONCLUSIVE) is ERROR;
//   6. else PASS.
Judgement JudgeTests(const std::vector<TestEvidence>& tests, const NodePolicy& policy);

// Rule 2, a gang: its members share one measurement, so the gang stands as its worst member
// by the order of rule 1 (an INCONCLUSIVE member leaves the gang INCONCLUSIVE, as it leaves
// the node it ran on). nullopt while a member has no verdict yet.
std::optional<Verdict> JudgeGang(const std::vector<std::optional<Verdict>>& members);

// Rule 3, a node the operator had to judge without a worker's result (the node is gone, has
// too few GPUs, its worker failed, was never scheduled or ran past its timeout): ERROR, with
// the operator's reason. Nothing was measured, so it is never a FAIL.
Judgement NoResult(std::string reason);

// Rule 4, a regression under policy.failOnRegression: a node that passed its thresholds but
// regressed against its history or peers FAILs with the regression as its reason; a node that
// did not pass keeps its own verdict and reason.
bool RegressionFails(Verdict v);

// The words a validation's status.verdict takes: while it runs, when it is suspended or its spec
// cannot run, and what rule 5 decides. The status, the metrics and the CRD's enum use these.
inline constexpr char kRunningWord[] = "Running";
inline constexpr char kSuspendedWord[] = "Suspended";
inline constexpr char kInvalidSpecWord[] = "InvalidSpec";
inline constexpr char kPassedWord[] = "Passed";
inline constexpr char kFailedWord[] = "Failed";
inline constexpr char kErrorWord[] = "Error";
inline constexpr char kInconclusiveWord[] = "Inconclusive";
inline constexpr const char* kValidationVerdictWords[] = {
    kRunningWord,      kPassedWord,      kFailedWord,   kErrorWord,
    kInconclusiveWord, kInvalidSpecWord, kSuspendedWord};

// Rule 5, the validation: its worst node decides. `verdict` is the status word ("Passed",
// "Failed", "Error", "Inconclusive"), `reason` the condition's reason ("Passed",
// "TestsFailed", "NodeErrors", "Inconclusive").
struct RunJudgement {
  std::string verdict;
  std::string reason;
};
RunJudgement JudgeRun(int failed, int errors, int inconclusive);

}  // namespace perfgate::verdict
