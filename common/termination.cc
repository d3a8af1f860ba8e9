#include "common/termination.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/node_verdict.h"
#include "common/report.h"

namespace perfgate::termination {
namespace {

using Json = nlohmann::json;

// Longest texts kept, in bytes, before the message is even near its limit.
constexpr size_t kReasonBytes = 300;
constexpr size_t kTestReasonBytes = 160;
// Room kept for the digits of "omit".
constexpr size_t kOmitDigits = 6;

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// `s` in at most `max` bytes, cut on a UTF-8 character boundary with "..." when cut.
std::string Cut(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  if (max < 3) return "";
  size_t end = max - 3;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end) + "...";
}

// The threshold that decided `t`: the first one with the test's (non-passing) verdict, else
// the one closest to its bound; null when the test has none.
const v1alpha1::ThresholdResult* DecidingThreshold(const v1alpha1::TestResult& t) {
  const v1alpha1::ThresholdResult* best = nullptr;
  double best_margin = std::numeric_limits<double>::infinity();
  for (const auto& th : t.thresholds()) {
    if (t.verdict() != v1alpha1::PASS && th.verdict() == t.verdict()) return &th;
    double margin = th.bound() != 0 ? (th.observed() - th.bound()) / std::fabs(th.bound()) : 0;
    if (th.threshold().op() == "<=" || th.threshold().op() == "<") margin = -margin;
    if (best == nullptr || margin < best_margin) {
      best = &th;
      best_margin = margin;
    }
  }
  return best;
}

Json TestEntry(const v1alpha1::TestResult& t, bool figures) {
  Json e = {{"n", Cut(t.name(), 128)}, {"v", report::VerdictName(t.verdict())}};
  if (!t.device().empty()) e["d"] = t.device();
  if (!figures) return e;
  if (const auto* th = DecidingThreshold(t)) {
    e["m"] = Json::array(
        {Cut(th->threshold().metric(), 64),
         th->threshold().statistic().empty() ? "median" : th->threshold().statistic(),
         th->threshold().op().empty() ? ">=" : th->threshold().op(), th->observed(), th->bound()});
  }
  if (t.verdict() != v1alpha1::PASS && !t.reason().empty()) {
    e["r"] = Cut(t.reason(), kTestReasonBytes);
  }
  return e;
}

std::string Str(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

double Num(const Json& j) {
  return j.is_number() ? j.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

std::string Encode(const NodeResult& result, size_t maxBytes) {
  maxBytes = std::max<size_t>(maxBytes, 512);
  const v1alpha1::Report& r = result.report;
  const std::string verdict = report::VerdictName(r.verdict());
  const std::string first_line =
      std::string(kHeader) + ": " + verdict + " on " + Cut(result.node_name, 100);
  const size_t budget = maxBytes - first_line.size() - 1;

  Json head = {
      {"val", result.validation},
      {"node", result.node_name},
      {"run", result.run},
      {"v", verdict},
      {"c", Json::array({r.passed(), r.failed(), r.inconclusive(), r.skipped(), r.errors()})}};
  if (!r.reason().empty()) head["why"] = Cut(r.reason(), kReasonBytes);
  if (!result.worst.empty()) head["w"] = Cut(result.worst, kReasonBytes);
  if (!r.completiontime().empty()) head["at"] = r.completiontime();
  if (!result.note.empty()) head["note"] = Cut(result.note, kReasonBytes);
  head["t"] = Json::array();
  head["omit"] = 0;
  // Names are at most 253 bytes and the rest is capped above, so this fits 4096 with room to
  // spare; a smaller budget sheds the free texts first, the verdict never.
  for (int step = 0; Dump(head).size() + kOmitDigits > budget && step < 8; ++step) {
    switch (step) {
      case 0:
        head.erase("note");
        break;
      case 1:
        if (head.contains("w")) head["w"] = Cut(head["w"].get<std::string>(), 80);
        break;
      case 2:
        if (head.contains("why")) head["why"] = Cut(head["why"].get<std::string>(), 80);
        break;
      case 3:
        head.erase("at");
        break;
      case 4:
        head.erase("why");
        break;
      case 5:
        head.erase("w");
        break;
      default:
        head["val"] = Cut(result.validation, 63);
        head["node"] = Cut(result.node_name, 63);
        break;
    }
  }

  // Tests, most severe first, each with its figures when they fit, else bare, else left out.
  std::vector<int> order(static_cast<size_t>(r.tests_size()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return verdict::Severity(report::FromProto(r.tests(a).verdict())) <
           verdict::Severity(report::FromProto(r.tests(b).verdict()));
  });
  size_t used = Dump(head).size() + kOmitDigits;
  std::vector<std::pair<int, Json>> kept;
  int omitted = 0;
  for (int i : order) {
    bool placed = false;
    for (bool figures : {true, false}) {
      Json e = TestEntry(r.tests(i), figures);
      size_t cost = Dump(e).size() + (kept.empty() ? 0 : 1);
      if (used + cost <= budget) {
        used += cost;
        kept.emplace_back(i, std::move(e));
        placed = true;
        break;
      }
    }
    if (!placed) ++omitted;
  }
  std::sort(kept.begin(), kept.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [i, e] : kept) head["t"].push_back(std::move(e));
  head["omit"] = omitted;
  return first_line + "\n" + Dump(head);
}

Result<NodeResult> Decode(std::string_view message) {
  if (message.substr(0, kHeader.size()) != kHeader) {
    return NotFound("not a perfgate result (no \"" + std::string(kHeader) + "\" line)");
  }
  const size_t newline = message.find('\n');
  if (newline == std::string_view::npos) {
    return InvalidArgument("perfgate result: no JSON line after the first");
  }
  Json j = Json::parse(message.substr(newline + 1), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgument("perfgate result: the second line is not JSON");
  v1alpha1::Verdict verdict = v1alpha1::VERDICT_UNSPECIFIED;
  if (!v1alpha1::Verdict_Parse(Str(j, "v"), &verdict) || verdict == v1alpha1::VERDICT_UNSPECIFIED) {
    return InvalidArgument("perfgate result: no verdict (\"v\": \"" + Str(j, "v") + "\")");
  }
  NodeResult out;
  out.validation = Str(j, "val");
  out.node_name = Str(j, "node");
  out.run = Str(j, "run");
  out.worst = Str(j, "w");
  out.note = Str(j, "note");
  if (out.node_name.empty()) return InvalidArgument("perfgate result: no node");
  v1alpha1::Report& r = out.report;
  r.set_validation(out.validation);
  r.set_verdict(verdict);
  r.set_reason(Str(j, "why"));
  r.set_completiontime(Str(j, "at"));
  if (auto c = j.find("c"); c != j.end() && c->is_array() && c->size() == 5) {
    auto count = [&](size_t i) { return (*c)[i].is_number_integer() ? (*c)[i].get<int>() : 0; };
    r.set_passed(count(0));
    r.set_failed(count(1));
    r.set_inconclusive(count(2));
    r.set_skipped(count(3));
    r.set_errors(count(4));
  }
  if (auto t = j.find("t"); t != j.end() && t->is_array()) {
    for (const auto& e : *t) {
      if (!e.is_object()) continue;
      auto* test = r.add_tests();
      test->set_name(Str(e, "n"));
      test->set_device(Str(e, "d"));
      v1alpha1::Verdict tv = v1alpha1::VERDICT_UNSPECIFIED;
      if (v1alpha1::Verdict_Parse(Str(e, "v"), &tv)) test->set_verdict(tv);
      test->set_reason(Str(e, "r"));
      if (auto m = e.find("m"); m != e.end() && m->is_array() && m->size() == 5) {
        auto* th = test->add_thresholds();
        th->mutable_threshold()->set_metric((*m)[0].is_string() ? (*m)[0].get<std::string>() : "");
        th->mutable_threshold()->set_statistic((*m)[1].is_string() ? (*m)[1].get<std::string>()
                                                                   : "");
        th->mutable_threshold()->set_op((*m)[2].is_string() ? (*m)[2].get<std::string>() : "");
        th->set_observed(Num((*m)[3]));
        th->set_bound(Num((*m)[4]));
        th->set_verdict(tv);
      }
    }
  }
  if (auto o = j.find("omit"); o != j.end() && o->is_number_integer()) {
    out.omitted_tests = o->get<int>();
  }
  return out;
}

}  // namespace perfgate::termination
