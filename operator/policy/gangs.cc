#include "operator/policy/gangs.h"

#include <algorithm>
#include <optional>

#include "common/node_verdict.h"
#include "common/time.h"
#include "core/names.h"
#include "core/selection.h"
#include "operator/policy/disruption.h"

namespace perfgate::op {
namespace {

// Under spec.disruption.policy yield, whether a narrowing round's attempt at `group` is void:
// a member's worker gave way without a result, or is gone without one while its peers are not.
// Then what is left of the attempt goes (its results, its workers), and the round starts
// again, whole, once none is left and the members' GPUs are idle.
bool VoidYieldedAttempt(const std::vector<std::string>& group, const std::string& id,
                        const std::map<std::string, const Json*>& results,
                        const std::map<std::string, const PodView*>& pods, Decision* d) {
  size_t gone = 0;
  size_t left = 0;
  bool yielded = false;
  for (const auto& n : group) {
    const std::string pod_name = ObjectName({id, n});
    const bool result = results.contains(pod_name);
    auto pod = pods.find(pod_name);
    left += result || pod != pods.end() ? 1 : 0;
    if (result) continue;
    if (pod == pods.end()) {
      gone++;
    } else if (!YieldReason(*pod->second).empty()) {
      yielded = true;
    }
  }
  if (!yielded && (gone == 0 || left == 0)) return false;
  for (const auto& n : group) {
    const std::string pod_name = ObjectName({id, n});
    if (results.contains(pod_name)) d->delete_results.push_back(pod_name);
    auto pod = pods.find(pod_name);
    if (pod != pods.end() &&
        Str(pod->second->object, "/metadata/deletionTimestamp"_json_pointer).empty()) {
      d->delete_pods.push_back(pod_name);
    }
  }
  d->waiting.push_back("narrowing gang of " + std::to_string(group.size()) + " nodes " +
                       group.front() + ", ... (yielded: starting again once its nodes are idle)");
  return true;
}

// Why narrowing-round member `n`, whose pod is `pod`, will give no result: its pod ended
// without one, or was not scheduled within the scheduling timeout; "" while it may.
std::string RoundMemberError(const RunContext& ctx, const std::string& n, const PodView& pod) {
  if (pod.terminal) {
    return pod.result_in_api ? "" : "pod on " + n + " ended (" + pod.phase + ") without a result";
  }
  if (pod.scheduled) return "";
  const auto timeout = ctx.config->scheduling_timeout;
  const auto created = ParseRfc3339(Str(pod.object, "/metadata/creationTimestamp"_json_pointer));
  if (!created || ctx.now - *created < timeout) return "";
  std::string why;
  for (const auto& c :
       pod.object.value("status", Json::object()).value("conditions", Json::array())) {
    if (c.value("type", "") == "PodScheduled") why = c.value("message", "");
  }
  return "pod on " + n + " not scheduled within " + std::to_string(timeout.count()) + "s" +
         (why.empty() ? "" : ": " + why);
}

// A narrowing round's `missing` members of `group` (gang `id`), started whole: on nodes no other
// validation is using (as the main run does) and, under yield, whose GPUs are idle. A create
// that failed last time is made now, at the same address (`comm`, "" for none yet).
void StartRoundMembers(const RunContext& ctx, const std::string& stage_run, const std::string& id,
                       const std::vector<std::string>& group,
                       const std::vector<std::string>& missing, const std::string& comm,
                       std::set<std::string>* services, Decision* d) {
  const Snapshot& s = *ctx.snapshot;
  const bool yielding = ctx.spec->disruption().policy() == "yield";
  const bool busy = std::any_of(group.begin(), group.end(), [&](const std::string& n) {
    return s.busy_with.contains(n) || (yielding && !GpusHeldBy(s, n).empty());
  });
  if (busy && missing.size() == group.size()) return;
  for (size_t r = 0; r < group.size(); ++r) {
    if (std::find(missing.begin(), missing.end(), group[r]) == missing.end()) continue;
    const GangMember m = MemberOf(ctx, id, static_cast<int>(r), group, comm);
    if (m.headless_service) services->insert(id);
    PodCreate pod = GangPod(ctx, stage_run, group[r], ObjectName({id, group[r]}), m);
    // A round's voided attempt is seen by what is left of it (VoidYieldedAttempt): its
    // workers need no yield finalizer.
    pod.pod["metadata"].erase("finalizers");
    d->pods.push_back(std::move(pod));
  }
}

// Runs `groups` as gangs of their own in round `stage` (pods and results of run
// "<run>-<stage>"): decides what is missing and returns each group's verdict, "" while it
// runs: PASS when every member passed, FAIL when one failed, else ERROR (a pod that crashed
// or was not scheduled in time: recorded as the operator's results, so it is not retried).
// Under spec.disruption.policy yield an attempt a worker gave way in is void instead
// (VoidYieldedAttempt) and the round's workers start only on idle nodes.
std::vector<std::optional<verdict::Verdict>> NarrowingRound(
    const RunContext& ctx, const std::string& stage,
    const std::vector<std::vector<std::string>>& groups, Decision* d) {
  const Snapshot& s = *ctx.snapshot;
  const std::string stage_run = ctx.run + "-" + stage;
  std::map<std::string, const Json*> results;  // by object name
  for (const auto& r : s.results) {
    if (Label(r, kRunLabel) == stage_run) results[Name(r)] = &r;
  }
  std::map<std::string, const PodView*> pods;
  for (const auto& p : s.pods) {
    if (p.run == stage_run) pods[p.name] = &p;
  }
  const bool yielding = ctx.spec->disruption().policy() == "yield";
  std::vector<std::optional<verdict::Verdict>> verdicts(groups.size());
  std::set<std::string> services;
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::vector<std::string>& group = groups[i];
    const std::string id = ObjectName({ctx.owner.name, ctx.run, stage + std::to_string(i)});
    if (yielding && VoidYieldedAttempt(group, id, results, pods, d)) continue;
    std::vector<std::optional<verdict::Verdict>> members;  // nullopt: no result yet
    std::string comm;
    std::string error;  // why the round of this group ended without a worker's result
    std::vector<std::string> missing;  // members with neither a result nor a pod
    bool pending = false;
    for (const auto& n : group) {
      const std::string pod_name = ObjectName({id, n});
      auto pod = pods.find(pod_name);
      if (pod != pods.end() && comm.empty()) comm = CommIdOf(pod->second->object);
      if (auto r = results.find(pod_name); r != results.end()) {
        const std::string v = r->second->value("spec", Json::object())
                                  .value("report", Json::object())
                                  .value("verdict", "");
        members.push_back(verdict::ParseVerdict(v).value_or(verdict::Verdict::kError));
        continue;
      }
      members.push_back(std::nullopt);
      pending = true;
      if (pod == pods.end()) {
        missing.push_back(n);
      } else if (std::string why = RoundMemberError(ctx, n, *pod->second); !why.empty()) {
        error = std::move(why);
      }
    }
    if (!error.empty()) {
      // Recorded as results, so that a later reconcile does not start the round again; the
      // members still running would only wait in NCCL for their watchdog.
      const std::string reason = "narrowing gang of " + std::to_string(group.size()) + ": " + error;
      for (const auto& n : group) {
        const std::string pod_name = ObjectName({id, n});
        if (results.contains(pod_name)) continue;
        d->results.push_back({BuildOperatorResult(ctx.owner, ctx.config->name_space, stage_run, n,
                                                  pod_name, reason, FormatRfc3339(ctx.now)),
                              pods.contains(pod_name) ? pod_name : ""});
      }
      // The members without a result get the operator's (rule 3), and the gang stands as its
      // worst member (rule 2).
      for (auto& m : members) {
        if (!m) m = verdict::NoResult(reason).verdict;
      }
      verdicts[i] = verdict::JudgeGang(members);
      continue;
    }
    if (!pending) {
      verdicts[i] = verdict::JudgeGang(members);
      continue;
    }
    if (ctx.suspended || missing.empty()) continue;
    StartRoundMembers(ctx, stage_run, id, group, missing, comm, &services, d);
  }
  for (const auto& id : services) {
    d->services.push_back(
        BuildGangService(ctx.owner, ctx.config->name_space, ctx.run, id, ctx.port));
  }
  return verdicts;
}

}  // namespace

std::vector<std::vector<std::string>> GangsOf(const std::vector<std::string>& nodes,
                                              const std::string& shape) {
  std::vector<std::vector<std::string>> gangs;
  if (nodes.empty()) return gangs;
  if (shape != "pairs" || nodes.size() < 2) return {nodes};
  for (size_t i = 0; i + 1 < nodes.size(); i += 2) gangs.push_back({nodes[i], nodes[i + 1]});
  if (nodes.size() % 2 == 1) gangs.back().push_back(nodes.back());
  return gangs;
}

GangTurns GangsInTurn(const std::vector<std::vector<std::string>>& gangs,
                      const std::vector<bool>& ready, std::set<std::string> in_use, int limit) {
  GangTurns out;
  for (size_t g = 0; g < gangs.size(); ++g) {
    if (g >= ready.size() || !ready[g]) continue;
    size_t added = 0;
    for (const auto& n : gangs[g]) added += in_use.contains(n) ? 0 : 1;
    std::string names;
    for (size_t i = 0; i < gangs[g].size() && i < 3; ++i) {
      names += (i == 0 ? "" : ", ") + gangs[g][i];
    }
    if (gangs[g].size() > 3) names += " and " + std::to_string(gangs[g].size() - 3) + " more";
    if (limit > 0 && in_use.size() + added > static_cast<size_t>(limit)) {
      out.waiting.push_back(
          "gang of " + std::to_string(gangs[g].size()) + " nodes " + names +
          " (waiting for its turn: spec.disruption.maxUnavailable=" + std::to_string(limit) + ", " +
          std::to_string(in_use.size()) + " selected nodes under test)");
      continue;
    }
    for (const auto& n : gangs[g]) {
      in_use.insert(n);
      out.start.insert(n);
    }
  }
  return out;
}

Status CheckGangsFit(const std::vector<std::vector<std::string>>& gangs, const std::string& value,
                     int limit) {
  if (value.empty() || limit <= 0) return Status();
  size_t largest = 0;
  for (const auto& g : gangs) largest = std::max(largest, g.size());
  if (largest <= static_cast<size_t>(limit)) return Status();
  return Status(Code::kInvalidArgument,
                "spec.gang needs " + std::to_string(largest) +
                    " nodes under test at once (its largest gang), but spec.disruption."
                    "maxUnavailable=\"" +
                    value + "\" allows " + std::to_string(limit) +
                    ": the gang could never start; raise maxUnavailable to at least " +
                    std::to_string(largest) + " or use smaller gangs (shape pairs)");
}

int PodGpus(const RunContext& ctx, const std::string& node) {
  if (ctx.spec_gpus > 0) return ctx.spec_gpus;
  auto it = ctx.snapshot->nodes.find(node);
  return it != ctx.snapshot->nodes.end() ? NodeGpus(it->second) : 0;
}

std::string CommIdOf(const Json& pod) {
  for (const auto& c : pod.value("spec", Json::object()).value("containers", Json::array())) {
    for (const auto& e : c.value("env", Json::array())) {
      if (e.value("name", "") == "NCCL_COMM_ID") return e.value("value", "");
    }
  }
  return "";
}

GangMember MemberOf(const RunContext& ctx, const std::string& gang_id, int rank,
                    const std::vector<std::string>& nodes, const std::string& comm) {
  GangMember m;
  m.gang_id = gang_id;
  m.rank = rank;
  m.size = static_cast<int>(nodes.size());
  m.nodes = nodes;
  m.comm_id = comm;
  m.headless_service = ctx.config->gang_rendezvous_host.empty();
  if (m.comm_id.empty() && m.headless_service) {
    m.comm_id = ObjectName({gang_id, "r0"}) + "." + gang_id + "." + ctx.config->name_space +
                ".svc:" + std::to_string(ctx.port);
  }
  return m;
}

PodCreate GangPod(const RunContext& ctx, const std::string& run_label, const std::string& node,
                  const std::string& pod_name, const GangMember& member) {
  const PodParams p{run_label,          node, pod_name, ctx.config_map, PodGpus(ctx, node),
                    ctx.timeout_seconds};
  return {BuildGangPod(ctx.owner, *ctx.spec, *ctx.config, p, member),
          member.comm_id.empty() ? member.gang_id : ""};
}

void BlameGangs(const RunContext& ctx, const std::vector<std::vector<std::string>>& gangs,
                const std::set<std::string>& nodes_with_pods,
                const std::map<std::string, size_t>& outcome_of, std::vector<NodeOutcome>* outcomes,
                Decision* d) {
  const std::string now = FormatRfc3339(ctx.now);
  // A pair that measured below its threshold points at one of its two nodes or the link
  // between them; a whole-cluster gang's FAIL points at nobody in particular.
  for (const auto& gang_nodes : gangs) {
    // The cause: a node's own non-PASS verdict (FAIL first: a rank that stopped on a wrong
    // result leaves the others to their watchdog), before one this rule gave it earlier.
    auto score = [](const NodeOutcome& o) {
      const int s = verdict::Severity(*o.verdict);
      return o.reason.rfind("gang of ", 0) == 0 ? s + 10 : s;
    };
    std::optional<NodeOutcome> cause;
    for (const auto& n : gang_nodes) {
      const NodeOutcome& o = (*outcomes)[outcome_of.at(n)];
      if (!o.verdict || o.verdict == verdict::Verdict::kPass) continue;
      if (!cause || score(o) < score(*cause)) cause = o;
    }
    if (!cause) continue;
    const std::string gang_reason =
        cause->reason.rfind("gang of ", 0) == 0
            ? cause->reason
            : "gang of " + std::to_string(gang_nodes.size()) + ": " + cause->node + " " +
                  verdict::VerdictName(*cause->verdict) + ": " + cause->reason;
    for (const auto& n : gang_nodes) {
      NodeOutcome& o = (*outcomes)[outcome_of.at(n)];
      if (!o.verdict) {
        // A peer that finished on its own may be a moment ahead of this one: let it finish
        // (its own watchdog bounds the wait if it is stuck in NCCL).
        if (!cause->by_operator) continue;
        // Its peer never ran or is gone: without this it would wait in NCCL until its
        // watchdog fires.
        const std::string pod_name = ObjectName({ctx.owner.name, ctx.run, n});
        d->results.push_back({BuildOperatorResult(ctx.owner, ctx.config->name_space, ctx.run, n,
                                                  pod_name, gang_reason, now),
                              nodes_with_pods.contains(n) ? pod_name : ""});
      }
      o.verdict = cause->verdict;
      o.reason = gang_reason;
      if (o.test.empty()) o.test = cause->test;
    }
  }
}

Narrowing Narrow(const RunContext& ctx, const std::vector<std::vector<std::string>>& gangs,
                 const std::map<std::string, verdict::Verdict>& verdict_of,
                 const std::string& shape, const std::string& mode, int max_nodes, Decision* d) {
  auto verdict = [&](const std::vector<std::string>& gang_nodes) {
    auto it = verdict_of.find(gang_nodes.front());
    return it == verdict_of.end() ? std::optional<verdict::Verdict>() : it->second;
  };
  std::vector<std::string> good;
  std::vector<std::string> suspects;
  // A FAIL is a measurement that points somewhere; an ERROR (e.g. a pod never scheduled)
  // names nobody.
  if (shape == "pairs" && gangs.size() > 1) {
    for (const auto& pair : gangs) {
      const auto v = verdict(pair);
      auto& into = v == verdict::Verdict::kPass ? good : suspects;
      if (v == verdict::Verdict::kPass || v == verdict::Verdict::kFail) {
        into.insert(into.end(), pair.begin(), pair.end());
      }
    }
  } else if (shape == "all" && mode != "none" && gangs.size() == 1 && gangs[0].size() >= 3 &&
             verdict(gangs[0]) == verdict::Verdict::kFail) {
    // The whole gang failed: its nodes run again in pairs. A pair that does not pass (FAIL,
    // or a crash while its peers ran) holds a suspect.
    const auto pairs = GangsOf(gangs[0], "pairs");
    const auto pair_verdicts = NarrowingRound(ctx, "pairs", pairs, d);
    const auto running = std::count(pair_verdicts.begin(), pair_verdicts.end(), std::nullopt);
    if (running > 0) {
      return Narrowing{{},
                       "narrowing down: the gang of " + std::to_string(gangs[0].size()) +
                           " failed; its nodes run again in " + std::to_string(pairs.size()) +
                           " pairs (" + std::to_string(running) + " running)"};
    }
    for (size_t i = 0; i < pairs.size(); ++i) {
      auto& into = pair_verdicts[i] == verdict::Verdict::kPass ? good : suspects;
      into.insert(into.end(), pairs[i].begin(), pairs[i].end());
    }
  }
  if (mode == "none" || suspects.empty() || good.empty()) return Narrowing{suspects, ""};
  // Each node of a failing pair runs again beside a node that passed: a suspect whose probe
  // passes is cleared (its partner or their link was the problem). One probe per passing node
  // at a time, so that probes never share a node: with more suspects than passing nodes, the
  // probes run in rounds ("<run>-probe", "<run>-probe2", ...), at most kMaxProbeRounds. A round
  // holds two nodes per probe, at most max_nodes in all (at least one probe).
  constexpr size_t kMaxProbeRounds = 8;
  const size_t per_round =
      std::min(good.size(), std::max<size_t>(1, static_cast<size_t>(std::max(max_nodes, 0)) / 2));
  const size_t rounds = std::min((suspects.size() + per_round - 1) / per_round, kMaxProbeRounds);
  std::vector<std::string> narrowed;
  for (size_t k = 0; k < rounds; ++k) {
    const size_t first = k * per_round;
    const size_t last = std::min(suspects.size(), first + per_round);
    std::vector<std::vector<std::string>> probes;
    for (size_t i = first; i < last; ++i) probes.push_back({good[i - first], suspects[i]});
    const auto verdicts =
        NarrowingRound(ctx, k == 0 ? "probe" : "probe" + std::to_string(k + 1), probes, d);
    const auto running = std::count(verdicts.begin(), verdicts.end(), std::nullopt);
    if (running > 0) {
      // Still suspects: the ones no probe has cleared yet.
      std::vector<std::string> candidates = narrowed;
      candidates.insert(candidates.end(), suspects.begin() + static_cast<std::ptrdiff_t>(first),
                        suspects.end());
      return Narrowing{candidates,
                       "narrowing down: " + std::to_string(running) +
                           " suspect node(s) of failing pairs run again with a node that passed" +
                           (rounds > 1 ? " (round " + std::to_string(k + 1) + " of " +
                                             std::to_string(rounds) + ")"
                                       : "")};
    }
    for (size_t i = first; i < last; ++i) {
      // Failed, errored or inconclusive: not cleared.
      if (verdicts[i - first] != verdict::Verdict::kPass) narrowed.push_back(suspects[i]);
    }
  }
  // Past the last round: unprobed, still suspects.
  for (size_t i = rounds * per_round; i < suspects.size(); ++i) narrowed.push_back(suspects[i]);
  return Narrowing{narrowed, ""};
}

}  // namespace perfgate::op
