#include "operator/reconcile/decide.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/action.h"
#include "common/labels.h"
#include "common/node_verdict.h"
#include "common/termination.h"
#include "common/time.h"
#include "core/eta.h"
#include "core/names.h"
#include "core/resolve.h"
#include "core/selection.h"
#include "operator/policy/disruption.h"
#include "operator/policy/gangs.h"
#include "operator/policy/identity.h"
#include "operator/policy/lifecycle.h"
#include "operator/policy/node_actions.h"
#include "operator/policy/quarantine.h"
#include "operator/policy/regressions.h"
#include "operator/policy/rolling.h"
#include "operator/policy/watch_nodes.h"
#include "operator/reconcile/pods.h"
#include "operator/reconcile/status.h"

namespace perfgate::op {
namespace {

using Clock = std::chrono::system_clock;

// The claim of `node` that keeps this validation off it (nullptr: free, ours, or stale).
const NodeClaim* ClaimedByOther(const Snapshot& s, const std::string& node, Clock::time_point now) {
  auto it = s.claims.find(node);
  if (it == s.claims.end()) return nullptr;
  const NodeClaim& c = it->second;
  // This validation's earlier run gave way to this one (its pods are deleted first).
  const bool mine = c.holder.validation == s.name && c.holder.uid == s.uid;
  if (mine || ClaimStale(c, now)) return nullptr;
  return &c;
}

// This validation's claims given up: released only if unchanged since they were read.
void ReleaseClaim(const NodeClaim& c, Decision* d) {
  d->release_claims.push_back({c.node, c.name, c.resource_version});
}

// Node claims (operator/reconcile/claims.h): made for every node a pod is about to start on (in
// node order), renewed while the run goes on, released for nodes done (gangs: when the run is
// complete, since narrowing rounds run on them again) and when the run completes.
void DecideClaims(const Snapshot& s, const ReconcilerConfig& config, Clock::time_point now,
                  bool gang, Decision* d) {
  const ClaimHolder me{s.name, s.uid, s.run};
  const int duration = config.claim_duration_seconds;
  std::map<std::string, ClaimAction> make;  // by node: the order claims are made in
  for (const auto& p : d->pods) {
    const std::string node = ViewOfPod(p.pod).node;
    auto it = s.claims.find(node);
    if (it == s.claims.end()) {
      make[node] = {ClaimAction::Kind::kCreate, node,
                    BuildClaimLease(config.name_space, node, me, duration, now)};
    } else if (it->second.holder != me) {
      make[node] = {
          ClaimAction::Kind::kTakeOver, node,
          BuildClaimLease(config.name_space, node, me, duration, now, it->second.resource_version)};
    }
  }
  const bool complete = d->status && !d->status->value("completionTime", "").empty();
  std::set<std::string> done;
  for (const auto& o : d->outcomes) {
    if (o.verdict) done.insert(o.node);
  }
  // A worker of this run without a claim (made before claims existed, or the claim deleted by
  // hand): claimed again, unless its node is done (its claim was released on purpose).
  for (const auto& p : s.pods) {
    if (!p.terminal && BaseRun(p.run) == s.run && !s.claims.contains(p.node) && !complete &&
        (gang || !done.contains(p.node))) {
      make.emplace(p.node,
                   ClaimAction{ClaimAction::Kind::kCreate, p.node,
                               BuildClaimLease(config.name_space, p.node, me, duration, now)});
    }
  }
  bool holding = !make.empty();
  std::vector<ClaimAction> renew;
  for (const auto& [node, c] : s.claims) {
    if (c.holder.validation != s.name || c.holder.uid != s.uid || make.contains(node)) continue;
    // A node whose result is in is free for others (its worker is exiting; one still exiting
    // keeps the node busy for them until it is gone).
    const bool finished = complete || c.holder.run != s.run || (!gang && done.contains(node));
    if (finished) {
      ReleaseClaim(c, d);
      continue;
    }
    if (c.holder != me) continue;
    holding = true;
    if (now - c.renew_time >= std::chrono::seconds(duration) / 3) {
      renew.push_back({ClaimAction::Kind::kRenew, node,
                       BuildClaimLease(config.name_space, node, me, duration, now,
                                       c.resource_version, c.acquire_time)});
    }
  }
  for (auto& [node, a] : make) d->claims.push_back(std::move(a));
  for (auto& a : renew) d->claims.push_back(std::move(a));
  if (complete || !holding) return;
  // Look again before the claims could go stale (a claim lost to a faster validation brings
  // the next look sooner: Reconciler).
  const std::chrono::milliseconds every =
      std::chrono::milliseconds(std::chrono::seconds(duration)) / 3;
  RequeueSooner(&d->requeue_after, every);
}

// Worker pods holding the yield finalizer let go of once nothing is left to record about them:
// their node's outcome is decided this reconcile, their yield is in the status as read (by
// their pod's uid: written by an earlier reconcile, so a failed status write loses nothing),
// they belong to another run, or (`all`) the validation is being deleted.
void ReleaseRecordedPods(const Snapshot& s, bool all, Decision* d) {
  std::set<std::string> decided;
  for (const auto& o : d->outcomes) {
    if (o.verdict) decided.insert(o.node);
  }
  const Json yields = s.validation.value("status", Json::object()).value("yields", Json::object());
  for (const auto& p : s.pods) {
    const Json finalizers =
        p.object.value("metadata", Json::object()).value("finalizers", Json::array());
    if (std::find(finalizers.begin(), finalizers.end(), kYieldFinalizer) == finalizers.end()) {
      continue;
    }
    // A yielded worker once it has ended too: a worker still stopping could write a result
    // after its pod went (a gang's next attempt would take it for its own). Ended: a terminal
    // phase, its container terminated (a kubelet that leaves a deleted pod's phase as it
    // was), or never scheduled.
    const bool ended = p.terminal || !p.terminated.empty() || !p.scheduled;
    const auto yield = yields.find(p.node);
    const bool yield_recorded =
        ended && yield != yields.end() && yield->is_object() &&
        yield->value("lastPod", "") == Str(p.object, "/metadata/uid"_json_pointer);
    if (!all && p.run == s.run && !decided.contains(p.node) && !yield_recorded) continue;
    Json kept = Json::array();
    for (const auto& f : finalizers) {
      if (f != kYieldFinalizer) kept.push_back(f);
    }
    d->release_pods.push_back(
        {p.name, Str(p.object, "/metadata/resourceVersion"_json_pointer), std::move(kept)});
  }
}

// The validation is being deleted: its pods go, the verdict labels it set go (its taints
// stay), its node claims go, then the finalizer.
Decision DecideDeletion(const Snapshot& s) {
  Decision d;
  ReleaseRecordedPods(s, /*all=*/true, &d);
  if (!s.has_finalizer) return d;
  for (const auto& p : s.pods) d.delete_pods.push_back(p.name);
  d.release_nodes = NodesToRelease(s.nodes, s.name);
  for (const auto& [node, c] : s.claims) {
    if (c.holder.validation == s.name && c.holder.uid == s.uid) ReleaseClaim(c, &d);
  }
  // Whatever the run was doing, the nodes it had under test are given back.
  d.restore_nodes = NodesToGiveBack(s.nodes, s.name, {}, {});
  d.remove_finalizer = true;
  return d;
}

// A new run: other runs' pods go, results of runs past the newest `keep_results` go, and the
// previous run's plan, no longer read by anyone.
void DecideCleanUp(const Snapshot& s, int keep_results, Decision* d) {
  for (const auto& p : s.pods) {
    if (BaseRun(p.run) != s.run) d->delete_pods.push_back(p.name);
  }
  std::map<std::string, std::string> newest;  // run -> newest creationTimestamp
  std::vector<const Json*> old;
  for (const auto& r : s.results) {
    const std::string rr = BaseRun(Label(r, kRunLabel));
    if (rr == s.run) continue;
    old.push_back(&r);
    newest[rr] = std::max(newest[rr], Str(r, "/metadata/creationTimestamp"_json_pointer));
  }
  std::vector<std::pair<std::string, std::string>> runs;
  runs.reserve(newest.size());
  for (const auto& [r, t] : newest) runs.emplace_back(t, r);
  std::sort(runs.rbegin(), runs.rend());
  std::set<std::string> keep;
  for (size_t i = 0; i < runs.size() && static_cast<int>(i) < keep_results; ++i) {
    keep.insert(runs[i].second);
  }
  for (const Json* r : old) {
    if (!keep.contains(BaseRun(Label(*r, kRunLabel)))) d->delete_results.push_back(Name(*r));
  }
  const std::string previous = Str(s.validation, "/status/run"_json_pointer);
  if (!previous.empty() && previous != s.run) {
    d->delete_plan = ObjectName({s.name, previous, "plan"});
  }
}

// The outcome a PerfResult gives its node.
NodeOutcome OutcomeOfResult(const std::string& node, const Json& result) {
  const Json spec = result.value("spec", Json::object());
  const Json report = spec.value("report", Json::object());
  // A report without a verdict word was never finished: ERROR.
  NodeOutcome o{
      node, verdict::ParseVerdict(report.value("verdict", "")).value_or(verdict::Verdict::kError),
      "", spec.value("worst", ""), report.value("reason", "")};
  o.by_operator = spec.value("writtenBy", "") == "operator";
  for (const auto& t : report.value("tests", Json::array())) {
    const auto v = verdict::ParseVerdict(t.value("verdict", ""));
    if (v == verdict::Verdict::kPass || v == verdict::Verdict::kSkipped) continue;
    if (o.test.empty()) o.test = t.value("name", "");
    // A GPU's test did not pass: when the node keeps failing, a reset comes before a reboot.
    o.action_on_gpu |= t.value("device", "").rfind("gpu", 0) == 0;
  }
  // The worker's recommended action; a result without one (the operator's own ERROR, an older
  // worker) gets what common/action.h gives a report with no test to blame.
  const Json act = report.value("action", Json::object());
  o.action = act.value("step", "");
  if (!action::ParseStep(o.action)) {
    o.action = std::string(action::StepName(
        *o.verdict == verdict::Verdict::kPass ? action::Step::kNone : action::Step::kRetest));
    if (*o.verdict != verdict::Verdict::kPass) {
      o.action_evidence.push_back("node: retest (" +
                                  (o.reason.empty() ? std::string("no result") : o.reason) + ")");
    }
  } else {
    for (const auto& e : act.value("evidence", Json::array())) {
      if (e.is_string()) o.action_evidence.push_back(e.get<std::string>());
    }
  }
  o.failing_gpus = ConfinedGpuFailures(report);
  return o;
}

// Why a terminated worker left no result.
std::string WhyNoResult(const PodView& pod, int timeout_seconds) {
  if (pod.phase == "Succeeded") return "worker exited 0 without writing its PerfResult";
  if (Str(pod.object, "/status/reason"_json_pointer) == "DeadlineExceeded") {
    return "worker timed out: no result within policy.nodeTimeoutSeconds=" +
           std::to_string(timeout_seconds) + "s (pod DeadlineExceeded)";
  }
  std::string reason =
      "worker failed: exit code " + std::to_string(pod.terminated.value("exitCode", -1));
  if (!pod.terminated.value("reason", "").empty()) {
    reason += " (" + pod.terminated.value("reason", "") + ")";
  }
  std::string message = pod.termination_message;
  if (message.empty() && pod.log_tail) message = *pod.log_tail;
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  if (!message.empty()) {
    if (message.size() > 600) message = "..." + message.substr(message.size() - 600);
    reason += ": " + message;
  }
  return reason;
}

// When a yielding worker was asked to go: its DisruptionTarget condition's time, else its
// deletion's ("" when neither says).
std::string YieldSince(const PodView& pod) {
  for (const auto& c :
       pod.object.value("status", Json::object()).value("conditions", Json::array())) {
    if (c.value("type", "") == "DisruptionTarget" && c.value("status", "") == "True") {
      return c.value("lastTransitionTime", "");
    }
  }
  return Str(pod.object, "/metadata/deletionTimestamp"_json_pointer);
}

// The GPUs a pod's containers hold (limits nvidia.com/gpu).
int PodGpus(const Json& pod) {
  int gpus = 0;
  for (const auto& c : pod.value("spec", Json::object()).value("containers", Json::array())) {
    const Json limits = c.value("resources", Json::object()).value("limits", Json::object());
    if (auto it = limits.find("nvidia.com/gpu"); it != limits.end()) {
      if (it->is_string()) gpus += std::atoi(it->get<std::string>().c_str());
      if (it->is_number_integer()) gpus += it->get<int>();
    }
  }
  return gpus;
}

// What every pod of the run shares.
RunContext ContextOf(const Snapshot& s, const ReconcilerConfig& config, Clock::time_point now) {
  const v1alpha1::PerfValidationSpec& spec = s.spec->doc.spec();
  RunContext ctx;
  ctx.snapshot = &s;
  ctx.config = &config;
  ctx.owner = {s.name, s.uid};
  ctx.spec = &spec;
  ctx.run = s.run;
  ctx.config_map = ObjectName({s.name, s.run, "plan"});
  ctx.spec_gpus = spec.gpuspernode();
  ctx.timeout_seconds = spec.policy().nodetimeoutseconds() > 0
                            ? spec.policy().nodetimeoutseconds()
                            : config.default_node_timeout_seconds;
  ctx.port = spec.gang().port() > 0 ? spec.gang().port() : 29500;
  ctx.suspended = spec.suspend();
  ctx.now = now;
  return ctx;
}

// The run's pods by node.
std::map<std::string, const PodView*> PodsOfRun(const Snapshot& s) {
  std::map<std::string, const PodView*> pods;
  for (const auto& p : s.pods) {
    if (p.run == s.run && p.name == WorkerName(s, p.node)) pods[p.node] = &p;
  }
  return pods;
}

// Where the nodes stand before gangs are considered.
struct NodeStates {
  std::vector<std::string> to_start;  // neither a result nor a pod, and free
  int claim_waits = 0;                // nodes another validation's claim keeps this one off
  int busy_waits = 0;                 // nodes another validation's live worker keeps this one off
  int active = 0;                     // pods running or waiting to be scheduled
  std::chrono::milliseconds requeue{0};
  // spec.disruption.policy yield: nodes whose worker gave way, and why (YieldReason).
  std::vector<std::pair<std::string, std::string>> yielded;
};

// The operator's ERROR result for `node` (no worker result: `reason`), and its outcome.
void RecordError(const RunContext& ctx, const std::string& node, const std::string& pod_name,
                 const std::string& reason, Decision* d) {
  d->results.push_back({BuildOperatorResult(ctx.owner, ctx.config->name_space, ctx.run, node,
                                            pod_name, reason, FormatRfc3339(ctx.now)),
                        ""});
  const verdict::Judgement j = verdict::NoResult(reason);
  d->outcomes.push_back({node, j.verdict, "", "", j.reason, true});
}

// A worker that ended, without a result in the cache: its result on its way (look again soon),
// the verdict its termination message recovered, a yield, or an ERROR saying why it has none.
void ClassifyEndedPod(const RunContext& ctx, const std::string& node, const PodView& pod,
                      const std::string& yield_reason, NodeStates* st, Decision* d) {
  const Snapshot& s = *ctx.snapshot;
  const std::string pod_name = WorkerName(s, node);
  if (pod.result_in_api) {
    st->requeue = std::chrono::milliseconds(200);
    d->outcomes.push_back({node, std::nullopt, "", "", ""});
    return;
  }
  // A worker that measured but could not write its result (the API server down past its
  // retries) left the verdict in its termination message: that is the node's result.
  if (auto decoded = termination::Decode(pod.termination_message);
      decoded.ok() && decoded->node_name == node && decoded->run == s.run) {
    Json result =
        BuildRecoveredResult(ctx.owner, ctx.config->name_space, s.run, node, pod_name, *decoded);
    d->outcomes.push_back(OutcomeOfResult(node, result));
    d->results.push_back({std::move(result), ""});
    return;
  }
  if (!yield_reason.empty()) {
    st->yielded.emplace_back(node, yield_reason);
    d->outcomes.push_back({node, std::nullopt, "", "", ""});
    return;
  }
  RecordError(ctx, node, pod_name, WhyNoResult(pod, ctx.timeout_seconds), d);
}

// A worker pod not scheduled yet: why it is an ERROR once it waited past the scheduling
// timeout; before that "", with when to look again in `st` and why it waits in `d`.
std::string UnscheduledTooLong(const RunContext& ctx, const std::string& node, const PodView& pod,
                               NodeStates* st, Decision* d) {
  const ReconcilerConfig& config = *ctx.config;
  auto created = ParseRfc3339(Str(pod.object, "/metadata/creationTimestamp"_json_pointer));
  Clock::duration age = created ? ctx.now - *created : Clock::duration(0);
  std::string why;
  for (const auto& c :
       pod.object.value("status", Json::object()).value("conditions", Json::array())) {
    if (c.value("type", "") == "PodScheduled") why = c.value("message", "");
  }
  if (age >= config.scheduling_timeout) {
    return "worker pod not scheduled within " + std::to_string(config.scheduling_timeout.count()) +
           "s" + (why.empty() ? "" : ": " + why);
  }
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(config.scheduling_timeout - age);
  RequeueSooner(&st->requeue, left + std::chrono::milliseconds(100));
  // Reported, not fought over: e.g. "Insufficient nvidia.com/gpu" while other pods hold them.
  if (!why.empty()) d->waiting.push_back(node + " (unscheduled: " + why + ")");
  return "";
}

// Each selected node's outcome from its result, else from its pod (the operator's ERROR for a
// missing node, too few GPUs, a worker that ended without a result, a pod unscheduled past
// the timeout), into d->outcomes in selected order.
NodeStates ClassifyNodes(const RunContext& ctx, const std::vector<std::string>& selected,
                         const std::map<std::string, const PodView*>& pods, Decision* d) {
  const Snapshot& s = *ctx.snapshot;
  const std::map<std::string, const Json*> results = ResultsOfRun(s);
  NodeStates st;
  const bool yielding = ctx.spec->disruption().policy() == "yield";
  std::vector<NodeOutcome>& outcomes = d->outcomes;
  for (const auto& node : selected) {
    const std::string pod_name = WorkerName(s, node);
    if (auto it = results.find(node); it != results.end()) {
      outcomes.push_back(OutcomeOfResult(node, *it->second));
      continue;
    }
    auto node_it = s.nodes.find(node);
    if (node_it == s.nodes.end()) {
      RecordError(ctx, node, pod_name, "node " + node + " does not exist", d);
      continue;
    }
    const int have = NodeGpus(node_it->second);
    if (ctx.spec_gpus > 0 && have < ctx.spec_gpus) {
      RecordError(ctx, node, pod_name,
                  "expected " + std::to_string(ctx.spec_gpus) +
                      " GPUs (spec.gpusPerNode), node has " + std::to_string(have) +
                      " allocatable nvidia.com/gpu",
                  d);
      continue;
    }
    auto pod_it = pods.find(node);
    if (pod_it == pods.end()) {
      if (auto busy = s.busy_with.find(node); busy != s.busy_with.end()) {
        d->waiting.push_back(node + " (busy with validation " + busy->second + ")");
        st.busy_waits++;
      } else if (const NodeClaim* c = ClaimedByOther(s, node, ctx.now)) {
        d->waiting.push_back(node + " (claimed by validation " + c->holder.validation + ")");
        st.claim_waits++;
      } else {
        st.to_start.push_back(node);
      }
      outcomes.push_back({node, std::nullopt, "", "", ""});
      continue;
    }
    const PodView& pod = *pod_it->second;
    // yield: a worker that gave way is neither ERROR nor FAIL; its node waits again.
    const std::string yield_reason = yielding ? YieldReason(pod) : "";
    if (!yield_reason.empty() && !pod.terminal) {
      st.yielded.emplace_back(node, yield_reason);
      outcomes.push_back({node, std::nullopt, "", "", ""});
      continue;
    }
    if (pod.terminal) {
      ClassifyEndedPod(ctx, node, pod, yield_reason, &st, d);
      continue;
    }
    // Not finished: never scheduled for too long is an ERROR (a scheduling problem, not a bad GPU).
    if (!pod.scheduled) {
      if (const std::string late = UnscheduledTooLong(ctx, node, pod, &st, d); !late.empty()) {
        RecordError(ctx, node, pod_name, late, d);
        d->delete_pods_after_results.push_back(pod_name);
        continue;
      }
    }
    st.active++;
    outcomes.push_back({node, std::nullopt, "", "", ""});
  }
  return st;
}

// Every node decided: node verdicts, the complete status and (the first time) the events that
// announce it.
void DecideCompletion(const Snapshot& s, const Json& old_status, Json status,
                      const std::string& now, const RegressionCheck& regressions, Decision* d) {
  const v1alpha1::PerfValidationSpec& spec = s.spec->doc.spec();
  const std::vector<NodeOutcome>& outcomes = d->outcomes;
  for (const auto& o : outcomes) {
    NodeVerdict v{o.node, *o.verdict, std::nullopt};
    v.action = o.action;
    for (const std::string& e : o.action_evidence) {
      v.action_evidence += (v.action_evidence.empty() ? "" : "; ") + e;
    }
    v.action_on_gpu = o.action_on_gpu;
    v.failing_gpus = o.failing_gpus;
    d->node_verdicts.push_back(std::move(v));
  }
  d->on_failure = spec.policy().onfailure().empty() ? "none" : spec.policy().onfailure();
  d->device_taint = spec.policy().devicetaint();
  const bool fresh = status.value("completionTime", "").empty();
  status = CompleteStatus(status, old_status, outcomes, s.generation, now);
  SetRegressedCondition(&status, old_status, regressions, s.generation, now);
  if (fresh) {
    for (size_t i = 0; i < regressions.found.size() && i < 20; ++i) {
      const Regression& r = regressions.found[i];
      d->events.push_back(
          {"Warning", "Regression", r.node + ": " + DescribeRegression(r), true, ""});
    }
    for (const auto& o : outcomes) {
      if (o.verdict != verdict::Verdict::kPass) {
        d->events.push_back({"Warning", "NodeNotPassed",
                             o.node + " " + verdict::VerdictName(*o.verdict) + ": " + o.reason,
                             true, ""});
      }
    }
    if (const Json suspects = status.value("suspectNodes", Json::array()); !suspects.empty()) {
      std::string names;
      for (const auto& n : suspects) names += (names.empty() ? "" : ", ") + n.get<std::string>();
      d->events.push_back(
          {"Warning", "SuspectNodes", "narrowed down by pairs: " + names, true, ""});
    }
    d->events.push_back({status.value("verdict", "") == verdict::kPassedWord ? "Normal" : "Warning",
                         "Completed", status.value("message", ""), true, ""});
  }
  d->status = status;
}

// status.timeLeft: the time the undecided nodes still need, from the plan's price per node
// (core/eta.h), `slots` nodes at a time; none while suspended.
void SetTimeLeft(const ResolvedPlan& plan, const std::map<std::string, const PodView*>& pods,
                 const std::vector<NodeOutcome>& outcomes, int slots, bool suspended,
                 Clock::time_point now, Json* status) {
  if (suspended || plan.price.typical_seconds <= 0) {
    status->erase("timeLeft");
    return;
  }
  std::vector<double> running;
  int waiting = 0;
  for (const auto& o : outcomes) {
    if (o.verdict) continue;
    auto it = pods.find(o.node);
    if (it == pods.end() || it->second->terminal || !it->second->scheduled) {
      waiting++;
      continue;
    }
    const Json& pod = it->second->object;
    std::string started = Str(pod, "/status/startTime"_json_pointer);
    if (started.empty()) started = Str(pod, "/metadata/creationTimestamp"_json_pointer);
    const auto at = ParseRfc3339(started);
    running.push_back(at ? std::chrono::duration<double>(now - *at).count() : 0.0);
  }
  (*status)["timeLeft"] =
      FormatEta(RemainingSeconds(plan.price.typical_seconds, running, waiting, slots));
}

// spec.disruption.policy yield: each worker that gave way is counted once in
// status.yields[node] (by its pod's uid), announced once, deleted unless it is going already,
// and its node waits for idle GPUs again; whatever it measured is discarded with it.
void DecideYields(const RunContext& ctx, const std::map<std::string, const PodView*>& pods,
                  const std::vector<std::pair<std::string, std::string>>& yielded, Json* status,
                  Decision* d) {
  const Snapshot& s = *ctx.snapshot;
  for (const auto& [node, why] : yielded) {
    const PodView& pod = *pods.at(node);
    const std::string uid = Str(pod.object, "/metadata/uid"_json_pointer);
    if (!status->contains("yields") || !(*status)["yields"].is_object()) {
      (*status)["yields"] = Json::object();
    }
    Json& entry = (*status)["yields"][node];
    if (!entry.is_object()) entry = Json::object();
    // The customer's wait behind this worker: from the moment it was asked to go (its
    // DisruptionTarget condition, else when it was first seen yielding) until its container
    // ended (the yield finalizer keeps the pod for this reconcile to see).
    const std::string asked = YieldSince(pod);
    const auto since = ParseRfc3339(asked.empty() ? entry.value("lastTime", "") : asked);
    if (entry.value("lastPod", "") != uid) {
      entry["count"] = entry.value("count", 0) + 1;
      entry["lastPod"] = uid;
      entry["lastReason"] = why;
      entry["lastTime"] = FormatRfc3339(ctx.now);
      // The GPU time it spent measuring, discarded with its samples.
      if (const auto started = ParseRfc3339(Str(pod.object, "/status/startTime"_json_pointer))) {
        const double seconds = std::max(
            0.0, std::chrono::duration<double>((since ? *since : ctx.now) - *started).count());
        entry["lostGpuSeconds"] =
            entry.value("lostGpuSeconds", 0.0) + seconds * PodGpus(pod.object);
      }
      d->events.push_back({"Normal", "Yielded",
                           node + ": worker " + pod.name + " gave the node's GPUs away (" + why +
                               "); its partial samples are discarded and the node is tested "
                               "again once its GPUs are idle",
                           false, s.name + "/" + s.run + "/yield/" + uid});
    }
    if (since) {
      // Until its container ended (the GPUs free), else until now.
      Clock::time_point until = ctx.now;
      if (const auto ended = ParseRfc3339(pod.terminated.value("finishedAt", ""))) until = *ended;
      const double wait = std::max(0.0, std::chrono::duration<double>(until - *since).count());
      entry["longestWaitSeconds"] = std::max(entry.value("longestWaitSeconds", 0.0), wait);
    }
    if (Str(pod.object, "/metadata/deletionTimestamp"_json_pointer).empty()) {
      d->delete_pods.push_back(pod.name);
    }
    d->waiting.push_back(node + " (yielded: " + why + "; waiting for its worker " + pod.name +
                         " to go, then for idle GPUs)");
  }
}

// spec.disruption.policy yield with spec.gang: a gang yields as a whole. Once a member's worker
// gave way without a result, the gang's attempt is void: every member's result of it goes (a
// peer may have finished alone, or failed on the rank that went), every member's worker goes,
// and every member waits as yielded (the peers' reason GangYielded); the gang starts again,
// whole, once all its workers are gone and its nodes idle (GangTurnsOf). The yields, which let
// the pods go (ReleaseRecordedPods), are recorded only once none of the attempt's results is
// left in the cache, so no result of it can be taken for the next attempt's.
void YieldGangs(const RunContext& ctx, const std::vector<std::vector<std::string>>& gangs,
                const std::map<std::string, const PodView*>& pods, NodeStates* st, Decision* d) {
  const Snapshot& s = *ctx.snapshot;
  const std::map<std::string, const Json*> with_result = ResultsOfRun(s);
  for (const auto& gang : gangs) {
    std::string cause;  // the member that gave way
    for (const auto& n : gang) {
      auto it = pods.find(n);
      if (it != pods.end() && !with_result.contains(n) && !YieldReason(*it->second).empty()) {
        cause = n;
        break;
      }
    }
    if (cause.empty()) continue;
    const std::set<std::string> members(gang.begin(), gang.end());
    std::erase_if(d->results,
                  [&](const ResultWrite& w) { return members.contains(ResultNode(w.result)); });
    for (auto& o : d->outcomes) {
      if (members.contains(o.node)) o = {o.node, std::nullopt, "", "", ""};
    }
    std::erase_if(st->yielded, [&](const auto& y) { return members.contains(y.first); });
    bool results_left = false;
    for (const auto& n : gang) {
      if (!with_result.contains(n)) continue;
      d->delete_results.push_back(WorkerName(s, n));
      results_left = true;
    }
    for (const auto& n : gang) {
      auto it = pods.find(n);
      if (it == pods.end()) continue;
      const PodView& pod = *it->second;
      if (!results_left) {
        const std::string own = YieldReason(pod);
        st->yielded.emplace_back(
            n, n == cause || (!own.empty() && own != "Deleted") ? own : "GangYielded");
      } else if (Str(pod.object, "/metadata/deletionTimestamp"_json_pointer).empty()) {
        d->delete_pods.push_back(pod.name);
      }
    }
    if (results_left) {
      d->waiting.push_back("gang of " + std::to_string(gang.size()) + " nodes with " + cause +
                           " (yielded: its attempt's results are being deleted)");
      RequeueSooner(&st->requeue, std::chrono::milliseconds(200));
    }
  }
}

// status.gpuSeconds: the GPU time this run's workers measured to the end (narrowing rounds and
// nodes tested again included): each worker's result from its start to its completion, times
// the GPUs its worker held. Beside status.yields' lostGpuSeconds it says what testing cost; the
// operator's own results measured nothing.
void SetGpuSeconds(const RunContext& ctx, Json* status) {
  const Snapshot& s = *ctx.snapshot;
  double seconds = 0;
  for (const auto& r : s.results) {
    if (BaseRun(Label(r, kRunLabel)) != s.run) continue;
    const Json spec = r.value("spec", Json::object());
    if (spec.value("writtenBy", "") == "operator") continue;
    const Json report = spec.value("report", Json::object());
    const auto start = ParseRfc3339(report.value("startTime", ""));
    const auto end = ParseRfc3339(report.value("completionTime", ""));
    if (!start || !end || *end < *start) continue;
    seconds += std::chrono::duration<double>(*end - *start).count() * PodGpus(ctx, ResultNode(r));
  }
  if (seconds > 0) {
    (*status)["gpuSeconds"] = seconds;
  } else {
    status->erase("gpuSeconds");
  }
}

// What DecideRun works from once the nodes are classified: the run's context, its pods, where
// the nodes stand, and (for gangs) the gangs and their members.
struct RunState {
  RunContext ctx;
  std::map<std::string, const PodView*> pods;  // the run's, by node
  NodeStates st;
  std::set<std::string> live;  // nodes with a live worker of this run: under test
  size_t live_pods = 0;
  int disruption_waits = 0;
  bool draining = false;
  int parallelism = 0;
  std::vector<std::vector<std::string>> gangs;  // rank order is the sorted node order
  std::map<std::string, GangMember> members;
  std::map<std::string, size_t> outcome_of;  // node -> index in d->outcomes
};

// The nodes with a live worker of this run, less those whose worker is exiting with its verdict.
void FindLive(const Snapshot& s, const std::vector<NodeOutcome>& outcomes, RunState* r) {
  for (const auto& p : s.pods) {
    if (!p.terminal && BaseRun(p.run) == s.run) {
      r->live.insert(p.node);
      r->live_pods++;
    }
  }
  for (const auto& o : outcomes) {
    if (o.verdict) r->live.erase(o.node);
  }
}

// Safe disruption (single-node runs): nodes other pods' GPUs keep busy wait, are cordoned or
// drained; at most maxUnavailable of the selected nodes under test.
void PlanSingleNodeDisruption(const DisruptionSettings& disruption,
                              const std::vector<std::string>& selected, const Json& old_status,
                              RunState* r, Decision* d) {
  const Snapshot& s = *r->ctx.snapshot;
  const ReconcilerConfig& config = *r->ctx.config;
  const std::string now = FormatRfc3339(r->ctx.now);
  // spec.rolling: the node validated longest ago (or never) has the first turn.
  if (IsRolling(*r->ctx.spec)) OrderOldestFirst(old_status, &r->st.to_start);
  DisruptionPlan dp = PlanDisruption(s, disruption, selected, r->st.to_start, r->live, r->ctx.now);
  r->st.to_start = dp.start;
  r->disruption_waits = static_cast<int>(dp.waiting.size());
  r->draining = !dp.evictions.empty();
  for (auto& w : dp.waiting) d->waiting.push_back(std::move(w));
  for (const auto& [node, reason] : dp.timed_out) {
    d->results.push_back({BuildOperatorResult(r->ctx.owner, config.name_space, s.run, node,
                                              WorkerName(s, node), reason, now),
                          ""});
    for (auto& o : d->outcomes) {
      if (o.node == node) {
        const verdict::Judgement j = verdict::NoResult(reason);
        o = {node, j.verdict, "", "", j.reason, true};
      }
    }
  }
  // The refusal, budget named, as an event too: once per pod and run.
  for (const auto& ref : dp.refused) {
    d->events.push_back({"Warning", "EvictionRefused",
                         ref.node + ": eviction of pod " + ref.pod + " refused: " + ref.message,
                         false, s.name + "/" + s.run + "/eviction-refused/" + ref.pod});
  }
  d->disrupt_nodes = std::move(dp.disrupt);
  d->evictions = std::move(dp.evictions);
  d->under_test = std::move(dp.held);
}

// The gangs of the selected nodes and each node's place in its gang; a gang's verdict is its
// worst member's (BlameGangs).
void FormGangs(const std::vector<std::string>& selected, RunState* r, Decision* d) {
  const Snapshot& s = *r->ctx.snapshot;
  std::set<std::string> nodes_with_pods;
  for (const auto& [node, pod] : r->pods) nodes_with_pods.insert(node);
  r->gangs = GangsOf(selected, r->ctx.spec->gang().shape());
  for (size_t g = 0; g < r->gangs.size(); ++g) {
    const std::string id = ObjectName({s.name, s.run, "gang" + std::to_string(g)});
    // Pods already made carry the gang's address: a later reconcile must not move it.
    std::string comm;
    for (const auto& n : r->gangs[g]) {
      if (auto it = r->pods.find(n); it != r->pods.end() && comm.empty()) {
        comm = CommIdOf(it->second->object);
      }
    }
    for (size_t rank = 0; rank < r->gangs[g].size(); ++rank) {
      r->members[r->gangs[g][rank]] =
          MemberOf(r->ctx, id, static_cast<int>(rank), r->gangs[g], comm);
    }
  }
  BlameGangs(r->ctx, r->gangs, nodes_with_pods, r->outcome_of, &d->outcomes, d);
}

// Gangs under spec.disruption.maxUnavailable: a gang none of whose members started yet starts
// only when all its nodes fit beside the selected nodes under test.
GangTurns GangTurnsOf(const std::vector<std::string>& selected,
                      const DisruptionSettings& disruption, const std::set<std::string>& starting,
                      RunState* r, Decision* d) {
  const Snapshot& s = *r->ctx.snapshot;
  std::set<std::string> in_use = r->live;
  for (const auto& node : selected) {
    auto it = s.nodes.find(node);
    if (it == s.nodes.end()) continue;
    const std::string holder = Label(it->second, kUnderTestLabel);
    if (!holder.empty() && holder != LabelValue(s.name)) in_use.insert(node);
  }
  std::vector<bool> ready(r->gangs.size(), false);
  for (size_t g = 0; g < r->gangs.size(); ++g) {
    bool fresh = true;
    std::string held;  // yield: a member whose GPUs other pods hold (the gang waits, whole)
    for (const auto& peer : r->gangs[g]) {
      fresh &= !d->outcomes[r->outcome_of[peer]].verdict && starting.contains(peer) &&
               !r->pods.contains(peer);
      if (const std::string by = GpusHeldBy(s, peer);
          disruption.policy == "yield" && held.empty() && !by.empty()) {
        held = peer + "'s GPUs are held by pod " + by;
      }
    }
    ready[g] = fresh && held.empty();
    if (fresh && !held.empty()) {
      d->waiting.push_back("gang of " + std::to_string(r->gangs[g].size()) + " nodes (" + held +
                           ")");
      r->disruption_waits++;
    }
  }
  GangTurns turns = GangsInTurn(r->gangs, ready, in_use, disruption.max_unavailable);
  r->disruption_waits += static_cast<int>(turns.waiting.size());
  for (auto& w : turns.waiting) d->waiting.push_back(std::move(w));
  return turns;
}

// Whether gang member `node` is to start now: its gang starts whole (every member still to run
// and free, a busy one waits), and one not started yet only in its turn.
bool GangMemberStarts(const std::string& node, const std::set<std::string>& starting,
                      const GangTurns& turns, const RunState& r, const Decision& d) {
  if (d.outcomes[r.outcome_of.at(node)].verdict) return false;
  bool whole = true;
  bool started = false;
  for (const auto& g : r.gangs) {
    if (std::find(g.begin(), g.end(), node) == g.end()) continue;
    for (const auto& peer : g) {
      whole &= !d.outcomes[r.outcome_of.at(peer)].verdict &&
               (starting.contains(peer) || r.pods.contains(peer));
      started |= r.pods.contains(peer);
    }
  }
  return whole && (started || turns.start.contains(node));
}

// The worker pods to create now (and the gangs' Services).
void StartWorkers(const ResolvedPlan& plan, const std::vector<std::string>& selected,
                  const DisruptionSettings& disruption, RunState* r, Decision* d) {
  const Snapshot& s = *r->ctx.snapshot;
  std::set<std::string> starting(r->st.to_start.begin(), r->st.to_start.end());
  std::set<std::string> services;
  GangTurns turns;
  if (plan.gang) turns = GangTurnsOf(selected, disruption, starting, r, d);
  for (const auto& node : r->st.to_start) {
    const std::string pod_name = WorkerName(s, node);
    if (plan.gang) {
      if (!GangMemberStarts(node, starting, turns, *r, *d)) continue;
      const GangMember& m = r->members[node];
      if (m.headless_service) services.insert(m.gang_id);
      d->pods.push_back(GangPod(r->ctx, s.run, node, pod_name, m));
      continue;
    }
    if (r->st.active >= r->parallelism) break;
    const PodParams p{
        s.run, node, pod_name, r->ctx.config_map, PodGpus(r->ctx, node), r->ctx.timeout_seconds};
    d->pods.push_back({BuildPod(r->ctx.owner, *r->ctx.spec, *r->ctx.config, p), ""});
    r->st.active++;
  }
  // Rank 0's name must resolve before it is Ready (publishNotReadyAddresses), since no
  // worker is Ready before the rendezvous.
  for (const auto& id : services) {
    d->services.push_back(
        BuildGangService(r->ctx.owner, r->ctx.config->name_space, s.run, id, r->ctx.port));
  }
}

// Narrowing (docs/nccl.md): once every gang has its verdict, the nodes of failing gangs run
// again in smaller gangs until the suspects are named. True while a round runs (the status
// says so).
bool DecideNarrowing(const DisruptionSettings& disruption, const Json& old_status,
                     const RunState& r, Json* status, Decision* d) {
  const Snapshot& s = *r.ctx.snapshot;
  std::map<std::string, verdict::Verdict> verdict_of;
  for (const auto& o : d->outcomes) verdict_of[o.node] = *o.verdict;
  const std::string& shape = r.ctx.spec->gang().shape();
  const std::string mode =
      r.ctx.spec->gang().narrow().empty() ? "pairs" : r.ctx.spec->gang().narrow();
  const Narrowing narrowing =
      Narrow(r.ctx, r.gangs, verdict_of, shape, mode, disruption.max_unavailable, d);
  Json suspects = Json::array();
  status->erase("suspectNodes");  // an earlier round's candidates may have been cleared since
  for (const auto& n : narrowing.suspects) {
    if (suspects.size() < 20) suspects.push_back(n);  // the CRD's maxItems
  }
  if (!suspects.empty()) (*status)["suspectNodes"] = suspects;
  if (narrowing.running.empty()) return false;
  d->status = RunningStatus(*status, old_status, r.ctx.suspended, narrowing.running, s.generation,
                            FormatRfc3339(r.ctx.now));
  d->requeue_after = std::chrono::seconds(1);
  return true;
}

// A run still going: its message ("3 of 8 nodes done; waiting for ..."), time left, the
// Waiting reason where it waits on others, and when to look again.
void DecideRunning(const ResolvedPlan& plan, const std::vector<std::string>& selected,
                   const Json& old_status, int pending, RunState* r, Json status, Decision* d) {
  const Snapshot& s = *r->ctx.snapshot;
  const bool suspended = r->ctx.suspended;
  const std::vector<NodeOutcome>& outcomes = d->outcomes;
  SetTimeLeft(plan, r->pods, outcomes,
              plan.gang ? static_cast<int>(selected.size()) : r->parallelism, suspended, r->ctx.now,
              &status);
  std::string msg = std::to_string(outcomes.size() - static_cast<size_t>(pending)) + " of " +
                    std::to_string(outcomes.size()) + " nodes done";
  NodeStates& st = r->st;
  if (!d->waiting.empty()) {
    msg += "; waiting for " + d->waiting.front() +
           (d->waiting.size() > 1 ? " and " + std::to_string(d->waiting.size() - 1) + " more" : "");
    RequeueSooner(&st.requeue, std::chrono::seconds(5));
  }
  d->status = RunningStatus(status, old_status, suspended, suspended ? "suspended: " + msg : msg,
                            s.generation, FormatRfc3339(r->ctx.now));
  if (st.claim_waits > 0 && !suspended) {
    // A released claim wakes nobody: look again soon.
    RequeueSooner(&st.requeue, std::chrono::seconds(2));
  }
  if (r->draining) {
    // A refused eviction (a PodDisruptionBudget) is asked again, as kubectl drain does.
    RequeueSooner(&st.requeue, kEvictionRetry);
  }
  const int yield_waits = static_cast<int>(st.yielded.size());
  if (st.claim_waits + st.busy_waits + r->disruption_waits + yield_waits > 0 && !suspended) {
    // Waiting for nodes other validations hold (their claim, or their worker still running
    // there), for other pods to give up a node's GPUs, for a node's turn under maxUnavailable,
    // or for a worker that yielded its node: not an error, not yet running everywhere.
    for (auto& c : (*d->status)["conditions"]) {
      if (c.value("type", "") == "Ready" || c.value("type", "") == "Reconciling") {
        c["reason"] = "Waiting";
      }
    }
  }
  d->requeue_after = st.requeue;
}

// The run's nodes, pods and results: what each node has, what to start, and the status.
void DecideRun(const Snapshot& s, const ReconcilerConfig& config, Clock::time_point now_tp,
               const ResolvedPlan& plan, const std::vector<std::string>& selected,
               const DisruptionSettings& disruption, const Json& old_status, Json status,
               Decision* d) {
  const v1alpha1::PerfValidationSpec& spec = s.spec->doc.spec();
  RunState r;
  r.ctx = ContextOf(s, config, now_tp);
  d->plan_config_map =
      BuildPlanConfigMap(r.ctx.owner, config.name_space, s.run, r.ctx.config_map, plan.text);
  r.pods = PodsOfRun(s);
  r.st = ClassifyNodes(r.ctx, selected, r.pods, d);
  if (plan.gang && disruption.policy == "yield") {
    YieldGangs(r.ctx, GangsOf(selected, spec.gang().shape()), r.pods, &r.st, d);
  }
  DecideYields(r.ctx, r.pods, r.st.yielded, &status, d);
  SetGpuSeconds(r.ctx, &status);
  FindLive(s, d->outcomes, &r);
  if (!plan.gang && !r.ctx.suspended) {
    PlanSingleNodeDisruption(disruption, selected, old_status, &r, d);
  }
  r.parallelism = spec.policy().parallelism();
  if (r.parallelism <= 0) r.parallelism = static_cast<int>(selected.size());
  if (auto rolling = RollingOf(spec)) {
    // spec.rolling: at most maxConcurrent workers at once, an exiting one (its result in)
    // counted until its pod ends.
    r.parallelism = std::min(r.parallelism, rolling->max_concurrent);
    r.st.active = std::max(r.st.active, static_cast<int>(r.live_pods));
  }
  for (size_t i = 0; i < d->outcomes.size(); ++i) r.outcome_of[d->outcomes[i].node] = i;
  if (plan.gang) {
    FormGangs(selected, &r, d);
    status["gangs"] = static_cast<int>(r.gangs.size());
  }
  if (!r.ctx.suspended) StartWorkers(plan, selected, disruption, &r, d);
  const bool all_decided = std::all_of(d->outcomes.begin(), d->outcomes.end(),
                                       [](const NodeOutcome& o) { return o.verdict.has_value(); });
  if (plan.gang && all_decided && DecideNarrowing(disruption, old_status, r, &status, d)) return;

  // Every node decided: the passing ones against their history and their peers.
  RegressionCheck regressions;
  if (all_decided) {
    regressions = FindRegressions(s, d->outcomes);
    if (spec.policy().failonregression()) FailRegressed(regressions, &d->outcomes);
    status.erase("regressions");
    if (!regressions.found.empty()) status["regressions"] = RegressionsJson(regressions);
  }
  const int pending = CountOutcomes(d->outcomes, &status);
  if (pending == 0) {
    status.erase("timeLeft");
    DecideCompletion(s, old_status, std::move(status), FormatRfc3339(now_tp), regressions, d);
    return;
  }
  DecideRunning(plan, selected, old_status, pending, &r, std::move(status), d);
}

// The results store's condition on the status, the event when it changes, and a look again
// while results wait for it.
void DecideStore(const Snapshot& s, const ReconcilerConfig& config, const std::string& now,
                 Decision* d) {
  const Json old_status = s.validation.value("status", Json::object());
  Json status = d->status ? *d->status : old_status;
  SetRecordedCondition(&status, old_status, *s.store, s.generation, now);
  std::string was;
  for (const auto& c : old_status.value("conditions", Json::array())) {
    if (c.value("type", "") == "Recorded") was = c.value("status", "");
  }
  if (!s.store->available && was != "False") {
    d->events.push_back({"Warning", "StoreUnavailable",
                         "results store unavailable: " + s.store->error +
                             "; results are spooled and written when it is back",
                         true, ""});
  } else if (s.store->available && was == "False") {
    d->events.push_back({"Normal", "StoreRecovered",
                         "results store " + s.store->describe + " is back; spooled results written",
                         true, ""});
  }
  if (!s.store->available) RequeueSooner(&d->requeue_after, config.store_retry);
  d->status = std::move(status);
}

// Which model each node has and how it was read (GFD's label or the cloud's), in the status and
// (once per run, or when it changes) an event; an invalid spec's status keeps it too, to show
// what the message is about.
void NoteModels(const Snapshot& s, const SelectedModels& models, const Json& old_status,
                Json* status, Decision* d) {
  if (models.known.empty()) return;
  const std::string described = Cut(DescribeModels(models.known), 1000);
  (*status)["gpuModels"] = described;
  if (old_status.value("run", "") != s.run || old_status.value("gpuModels", "") != described) {
    d->events.push_back({"Normal", "GpuModels", described, false, ""});
  }
}

// The spec refused: the run stops as InvalidSpec with `msg`, and a Warning event says it.
void RefuseSpec(const Snapshot& s, const Json& status, const Json& old_status,
                const std::string& msg, const std::string& now, Decision* d) {
  d->status = StoppedStatus(status, old_status, "InvalidSpec", verdict::kInvalidSpecWord, msg,
                            s.generation, now);
  d->events.push_back({"Warning", "InvalidSpec", msg, true, ""});
}

// The spec's sections the plan does not check: schedule, rolling, watchNodes, quarantine.
Status CheckSpecSections(const v1alpha1::PerfValidationSpec& spec) {
  for (const auto& check : {CheckSchedule, CheckRolling, CheckWatchNodes, CheckQuarantine}) {
    RETURN_IF_ERROR(check(spec));
  }
  return Status::Ok();
}

// spec.disruption for the selected nodes; refused where it cannot be: a value that does not
// parse, a gang larger than maxUnavailable (it would never start).
Result<DisruptionSettings> DisruptionFor(const v1alpha1::PerfValidationSpec& spec,
                                         const ResolvedPlan& plan,
                                         const std::vector<std::string>& selected) {
  ASSIGN_OR_RETURN(DisruptionSettings disruption,
                   ParseDisruption(spec.disruption(), selected.size()));
  if (!plan.gang) return disruption;
  RETURN_IF_ERROR(CheckGangsFit(GangsOf(selected, spec.gang().shape()),
                                spec.disruption().maxunavailable(), disruption.max_unavailable));
  return disruption;
}

Decision DecideValidation(const Snapshot& s, const ReconcilerConfig& config,
                          Clock::time_point now_tp) {
  Decision d;
  d.add_finalizer = !s.has_finalizer;
  const std::string now = FormatRfc3339(now_tp);
  const Json old_status = s.validation.value("status", Json::object());
  Json status = old_status;
  if (status.value("run", "") != s.run) {
    DecideCleanUp(s, s.spec ? s.spec->doc.spec().policy().keepresults() : 0, &d);
    status = NewRunStatus(old_status, s.run, s.generation, now);
    d.events.push_back(
        {"Normal", "Started", "run " + s.run + " started", false, s.name + "/" + s.run});
  }
  status["observedGeneration"] = s.generation;
  // spec.rolling: nodes whose period is over are tested again (the run reopens if complete).
  if (DecideRollingDue(s, now_tp, &status, &d)) return d;
  // Complete for this run: nothing left to do (node actions were applied before), unless
  // spec.watchNodes finds a node that joined or changed since.
  if (!status.value("completionTime", "").empty()) {
    if (!DecideWatchNodes(s, &status, &d)) d.status = status;
    return d;
  }

  if (s.spec) {
    if (Status bad = CheckSpecSections(s.spec->doc.spec()); !bad.ok()) {
      RefuseSpec(s, status, old_status, bad.message(), now, &d);
      return d;
    }
  }
  // The plan: validated exactly as the worker will read it, for the nodes selected.
  std::vector<std::string> selected;
  SelectedModels models;
  if (s.spec) {
    selected = SelectNodes(s.spec->doc.spec(), s.nodes);
    models = ModelsOf(selected, s.nodes);
  }
  Result<ResolvedPlan> plan =
      s.spec ? ResolvePlan(*s.spec, s.profiles, config.enable_fixtures, selected, s.nodes, models,
                           s.store ? &*s.store : nullptr, &s.baselines)
             : Result<ResolvedPlan>(s.spec_error);
  NoteModels(s, models, old_status, &status, &d);
  if (!plan.ok()) {
    if (plan.status().code() != Code::kInvalidArgument && plan.status().code() != Code::kNotFound) {
      d.retry = plan.status();
      return d;
    }
    RefuseSpec(s, status, old_status, plan.status().message(), now, &d);
    return d;
  }
  if (!plan->profile.empty()) {
    status["profile"] = plan->profile;
    status["profileVersion"] = plan->profile_version;
  }
  if (selected.empty()) {
    const std::string msg =
        "no node matches spec.nodeSelector/spec.nodes with allocatable nvidia.com/gpu";
    status["nodes"] = 0;
    status["passedNodes"] = "0/0";
    // Verdict Error: nothing could be measured.
    d.status =
        StoppedStatus(status, old_status, "NoNodesSelected", "Error", msg, s.generation, now);
    d.events.push_back({"Warning", "NoNodesSelected", msg, true, ""});
    return d;
  }
  Result<DisruptionSettings> disruption = DisruptionFor(s.spec->doc.spec(), *plan, selected);
  if (!disruption.ok()) {
    RefuseSpec(s, status, old_status, disruption.status().message(), now, &d);
    return d;
  }
  DecideRun(s, config, now_tp, *plan, selected, *disruption, old_status, status, &d);
  DecideClaims(s, config, now_tp, plan->gang, &d);
  return d;
}

// Every node with a worker of this run still measuring (or starting now) is under test and
// carries the label; once the run is complete none is.
void MarkWorkingNodes(const Snapshot& s, Decision* d) {
  if (d->status && !d->status->value("completionTime", "").empty()) {
    d->under_test.clear();
    d->disrupt_nodes.clear();
    d->evictions.clear();
    return;
  }
  std::set<std::string> decided;
  for (const auto& o : d->outcomes) {
    if (o.verdict) decided.insert(o.node);
  }
  std::set<std::string> working;
  for (const auto& p : s.pods) {
    if (p.terminal || BaseRun(p.run) != s.run) continue;
    // A worker whose result is in is exiting: its node is done (a narrowing round's is not).
    if (p.run == s.run && decided.contains(p.node)) continue;
    working.insert(p.node);
  }
  for (const auto& p : d->pods) working.insert(ViewOfPod(p.pod).node);
  std::set<std::string> labelled;
  for (const auto& n : d->disrupt_nodes) labelled.insert(n.node);
  const std::string own = LabelValue(s.name);
  for (const auto& node : working) {
    d->under_test.insert(node);
    auto it = s.nodes.find(node);
    if (it != s.nodes.end() && Label(it->second, kUnderTestLabel) != own &&
        !labelled.contains(node)) {
      d->disrupt_nodes.push_back({node, true, false});
    }
  }
}

}  // namespace

Decision Decide(const Snapshot& s, const ReconcilerConfig& config, Clock::time_point now_tp) {
  if (!s.exists) return Decision{};
  if (s.deleting) return DecideDeletion(s);
  Decision d = DecideValidation(s, config, now_tp);
  if (d.retry.ok()) {
    // spec.watchNodes: each node's identity as its result comes in; spec.provisioningTaint.
    RecordIdentities(s, &d);
    RecordSignals(s, &d);
    RecordGpuChanges(s, &d);
    DecideProvisioning(s, &d);
    // The brake on mass quarantine: FAILs past the cap keep their label, not the taint.
    DecideQuarantine(s, config, FormatRfc3339(now_tp), &d);
    DecideLifecycle(s, now_tp, &d);
    RecordRolling(s, now_tp, &d);
    // Nodes under test for this validation that it no longer holds (their result is in, the
    // run completed, was suspended or replaced, the spec became invalid) are given back; a
    // FAIL keeps its cordon when policy.onFailure is taintAndCordon.
    MarkWorkingNodes(s, &d);
    std::set<std::string> keep_cordon;
    if (s.spec && s.spec->doc.spec().policy().onfailure() == "taintAndCordon") {
      for (const auto& o : d.outcomes) {
        if (o.verdict == verdict::Verdict::kFail) keep_cordon.insert(o.node);
      }
      // Not where the brake on mass quarantine holds the FAIL back (known at completion).
      for (const auto& v : d.node_verdicts) {
        if (!v.quarantine) keep_cordon.erase(v.node);
      }
    }
    d.restore_nodes = NodesToGiveBack(s.nodes, s.name, d.under_test, keep_cordon);
  }
  ReleaseRecordedPods(s, /*all=*/false, &d);
  if (s.store && d.retry.ok()) DecideStore(s, config, FormatRfc3339(now_tp), &d);
  if (!s.store && d.status) {
    SetStoreOffCondition(&*d.status, s.validation.value("status", Json::object()), s.generation,
                         FormatRfc3339(now_tp));
  }
  return d;
}

}  // namespace perfgate::op
