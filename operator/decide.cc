#include "operator/decide.h"

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
#include "operator/disruption.h"
#include "operator/gangs.h"
#include "operator/identity.h"
#include "operator/lifecycle.h"
#include "operator/node_actions.h"
#include "operator/pods.h"
#include "operator/quarantine.h"
#include "operator/regressions.h"
#include "operator/rolling.h"
#include "operator/status.h"
#include "operator/watch_nodes.h"

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

// Node claims (operator/claims.h): made for every node a pod is about to start on (in node
// order), renewed while the run goes on, released for nodes done (gangs: when the run is
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

// The validation is being deleted: its pods go, the verdict labels it set go (its taints
// stay), its node claims go, then the finalizer.
Decision DecideDeletion(const Snapshot& s) {
  Decision d;
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

// Why a worker under spec.disruption.policy yield gave its node away: the condition's reason
// when the scheduler preempted it or it was evicted (DisruptionTarget), "Deleted" when someone
// else deleted it, "GpusTaken" when it was never scheduled because other pods took the GPUs
// first; "" when it did not.
std::string YieldReason(const PodView& pod) {
  const Json status = pod.object.value("status", Json::object());
  for (const auto& c : status.value("conditions", Json::array())) {
    if (c.value("type", "") == "DisruptionTarget" && c.value("status", "") == "True") {
      return c.value("reason", "DisruptionTarget");
    }
  }
  if (!Str(pod.object, "/metadata/deletionTimestamp"_json_pointer).empty()) return "Deleted";
  if (!pod.scheduled && !pod.terminal) {
    for (const auto& c : status.value("conditions", Json::array())) {
      if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False" &&
          c.value("message", "").find("Insufficient nvidia.com/gpu") != std::string::npos) {
        return "GpusTaken";
      }
    }
  }
  return "";
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

// Each selected node's outcome from its result, else from its pod (the operator's ERROR for a
// missing node, too few GPUs, a worker that ended without a result, a pod unscheduled past
// the timeout), into d->outcomes in selected order.
NodeStates ClassifyNodes(const RunContext& ctx, const std::vector<std::string>& selected,
                         const std::map<std::string, const PodView*>& pods, Decision* d) {
  const Snapshot& s = *ctx.snapshot;
  const ReconcilerConfig& config = *ctx.config;
  const std::string now = FormatRfc3339(ctx.now);
  std::map<std::string, const Json*> results;  // this run's, by node
  for (const auto& r : s.results) {
    if (Label(r, kRunLabel) != s.run) continue;
    const std::string node = ResultNode(r);
    // A node tested again (spec.watchNodes) counts only its newest worker's result.
    if (Name(r) == WorkerName(s, node)) results[node] = &r;
  }
  NodeStates st;
  const bool yielding = ctx.spec->disruption().policy() == "yield";
  std::vector<NodeOutcome>& outcomes = d->outcomes;
  auto record_error = [&](const std::string& node, const std::string& pod_name,
                          const std::string& reason) {
    d->results.push_back(
        {BuildOperatorResult(ctx.owner, config.name_space, s.run, node, pod_name, reason, now),
         ""});
    const verdict::Judgement j = verdict::NoResult(reason);
    outcomes.push_back({node, j.verdict, "", "", j.reason, true});
  };
  for (const auto& node : selected) {
    const std::string pod_name = WorkerName(s, node);
    if (auto it = results.find(node); it != results.end()) {
      outcomes.push_back(OutcomeOfResult(node, *it->second));
      continue;
    }
    auto node_it = s.nodes.find(node);
    if (node_it == s.nodes.end()) {
      record_error(node, pod_name, "node " + node + " does not exist");
      continue;
    }
    const int have = NodeGpus(node_it->second);
    if (ctx.spec_gpus > 0 && have < ctx.spec_gpus) {
      record_error(node, pod_name,
                   "expected " + std::to_string(ctx.spec_gpus) +
                       " GPUs (spec.gpusPerNode), node has " + std::to_string(have) +
                       " allocatable nvidia.com/gpu");
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
      if (pod.result_in_api) {
        st.requeue = std::chrono::milliseconds(200);
        outcomes.push_back({node, std::nullopt, "", "", ""});
        continue;
      }
      // A worker that measured but could not write its result (the API server down past its
      // retries) left the verdict in its termination message: that is the node's result.
      if (auto decoded = termination::Decode(pod.termination_message);
          decoded.ok() && decoded->node_name == node && decoded->run == s.run) {
        Json result =
            BuildRecoveredResult(ctx.owner, config.name_space, s.run, node, pod_name, *decoded);
        outcomes.push_back(OutcomeOfResult(node, result));
        d->results.push_back({std::move(result), ""});
        continue;
      }
      if (!yield_reason.empty()) {
        st.yielded.emplace_back(node, yield_reason);
        outcomes.push_back({node, std::nullopt, "", "", ""});
        continue;
      }
      record_error(node, pod_name, WhyNoResult(pod, ctx.timeout_seconds));
      continue;
    }
    // Not finished: never scheduled for too long is an ERROR (a scheduling problem, not a bad GPU).
    if (!pod.scheduled) {
      auto created = ParseRfc3339(Str(pod.object, "/metadata/creationTimestamp"_json_pointer));
      Clock::duration age = created ? ctx.now - *created : Clock::duration(0);
      std::string why;
      for (const auto& c :
           pod.object.value("status", Json::object()).value("conditions", Json::array())) {
        if (c.value("type", "") == "PodScheduled") why = c.value("message", "");
      }
      if (age >= config.scheduling_timeout) {
        record_error(node, pod_name,
                     "worker pod not scheduled within " +
                         std::to_string(config.scheduling_timeout.count()) + "s" +
                         (why.empty() ? "" : ": " + why));
        d->delete_pods_after_results.push_back(pod_name);
        continue;
      }
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(config.scheduling_timeout - age);
      RequeueSooner(&st.requeue, left + std::chrono::milliseconds(100));
      // Reported, not fought over: e.g. "Insufficient nvidia.com/gpu" while other pods hold them.
      if (!why.empty()) d->waiting.push_back(node + " (unscheduled: " + why + ")");
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
    d->events.push_back({status.value("verdict", "") == "Passed" ? "Normal" : "Warning",
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
    // DisruptionTarget condition, else when it was first seen yielding) until it is gone, as
    // far as the operator has seen it go.
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
      const double wait = std::max(0.0, std::chrono::duration<double>(ctx.now - *since).count());
      entry["longestWaitSeconds"] = std::max(entry.value("longestWaitSeconds", 0.0), wait);
    }
    if (Str(pod.object, "/metadata/deletionTimestamp"_json_pointer).empty()) {
      d->delete_pods.push_back(pod.name);
    }
    d->waiting.push_back(node + " (yielded: " + why + "; waiting for its worker " + pod.name +
                         " to go, then for idle GPUs)");
  }
}

// The run's nodes, pods and results: what each node has, what to start, and the status.
void DecideRun(const Snapshot& s, const ReconcilerConfig& config, Clock::time_point now_tp,
               const ResolvedPlan& plan, const std::vector<std::string>& selected,
               const DisruptionSettings& disruption, const Json& old_status, Json status,
               Decision* d) {
  const v1alpha1::PerfValidationSpec& spec = s.spec->doc.spec();
  const std::string now = FormatRfc3339(now_tp);
  const RunContext ctx = ContextOf(s, config, now_tp);
  d->plan_config_map =
      BuildPlanConfigMap(ctx.owner, config.name_space, s.run, ctx.config_map, plan.text);
  const std::map<std::string, const PodView*> pods = PodsOfRun(s);
  std::set<std::string> nodes_with_pods;
  for (const auto& [node, pod] : pods) nodes_with_pods.insert(node);
  NodeStates st = ClassifyNodes(ctx, selected, pods, d);
  std::vector<NodeOutcome>& outcomes = d->outcomes;
  DecideYields(ctx, pods, st.yielded, &status, d);
  // The nodes with a live worker of this run: under test.
  std::set<std::string> live;
  size_t live_pods = 0;
  for (const auto& p : s.pods) {
    if (!p.terminal && BaseRun(p.run) == s.run) {
      live.insert(p.node);
      live_pods++;
    }
  }
  for (const auto& o : outcomes) {
    if (o.verdict) live.erase(o.node);  // its worker is exiting
  }
  // Safe disruption (single-node runs): nodes other pods' GPUs keep busy wait, are cordoned or
  // drained; at most maxUnavailable of the selected nodes under test.
  int disruption_waits = 0;
  bool draining = false;
  if (!plan.gang && !ctx.suspended) {
    // spec.rolling: the node validated longest ago (or never) has the first turn.
    if (IsRolling(spec)) OrderOldestFirst(old_status, &st.to_start);
    DisruptionPlan dp = PlanDisruption(s, disruption, selected, st.to_start, live, now_tp);
    st.to_start = dp.start;
    disruption_waits = static_cast<int>(dp.waiting.size());
    draining = !dp.evictions.empty();
    for (auto& w : dp.waiting) d->waiting.push_back(std::move(w));
    for (const auto& [node, reason] : dp.timed_out) {
      d->results.push_back({BuildOperatorResult(ctx.owner, config.name_space, s.run, node,
                                                WorkerName(s, node), reason, now),
                            ""});
      for (auto& o : outcomes) {
        if (o.node == node) {
          const verdict::Judgement j = verdict::NoResult(reason);
          o = {node, j.verdict, "", "", j.reason, true};
        }
      }
    }
    // The refusal, budget named, as an event too: once per pod and run.
    for (const auto& r : dp.refused) {
      d->events.push_back({"Warning", "EvictionRefused",
                           r.node + ": eviction of pod " + r.pod + " refused: " + r.message, false,
                           s.name + "/" + s.run + "/eviction-refused/" + r.pod});
    }
    d->disrupt_nodes = std::move(dp.disrupt);
    d->evictions = std::move(dp.evictions);
    d->under_test = std::move(dp.held);
  }
  int parallelism = spec.policy().parallelism();
  if (parallelism <= 0) parallelism = static_cast<int>(selected.size());
  if (auto rolling = RollingOf(spec)) {
    // spec.rolling: at most maxConcurrent workers at once, an exiting one (its result in)
    // counted until its pod ends.
    parallelism = std::min(parallelism, rolling->max_concurrent);
    st.active = std::max(st.active, static_cast<int>(live_pods));
  }

  // Gangs: rank order is the sorted node order; one verdict per gang.
  std::map<std::string, GangMember> members;
  std::vector<std::vector<std::string>> gangs;
  std::map<std::string, size_t> outcome_of;
  for (size_t i = 0; i < outcomes.size(); ++i) outcome_of[outcomes[i].node] = i;
  const std::string& shape = spec.gang().shape();
  if (plan.gang) {
    gangs = GangsOf(selected, shape);
    for (size_t g = 0; g < gangs.size(); ++g) {
      const std::string id = ObjectName({s.name, s.run, "gang" + std::to_string(g)});
      // Pods already made carry the gang's address: a later reconcile must not move it.
      std::string comm;
      for (const auto& n : gangs[g]) {
        if (auto it = pods.find(n); it != pods.end() && comm.empty()) {
          comm = CommIdOf(it->second->object);
        }
      }
      for (size_t r = 0; r < gangs[g].size(); ++r) {
        members[gangs[g][r]] = MemberOf(ctx, id, static_cast<int>(r), gangs[g], comm);
      }
    }
    BlameGangs(ctx, gangs, nodes_with_pods, outcome_of, &outcomes, d);
    status["gangs"] = static_cast<int>(gangs.size());
  }

  if (!ctx.suspended) {
    std::set<std::string> starting(st.to_start.begin(), st.to_start.end());
    std::set<std::string> services;
    // Gangs under spec.disruption.maxUnavailable: a gang none of whose members started yet
    // starts only when all its nodes fit beside the selected nodes under test.
    GangTurns turns;
    if (plan.gang) {
      std::set<std::string> in_use = live;
      for (const auto& node : selected) {
        auto it = s.nodes.find(node);
        if (it == s.nodes.end()) continue;
        const std::string holder = Label(it->second, kUnderTestLabel);
        if (!holder.empty() && holder != LabelValue(s.name)) in_use.insert(node);
      }
      std::vector<bool> ready(gangs.size(), false);
      for (size_t g = 0; g < gangs.size(); ++g) {
        bool fresh = true;
        for (const auto& peer : gangs[g]) {
          fresh &= !outcomes[outcome_of[peer]].verdict && starting.contains(peer) &&
                   !pods.contains(peer);
        }
        ready[g] = fresh;
      }
      turns = GangsInTurn(gangs, ready, in_use, disruption.max_unavailable);
      disruption_waits += static_cast<int>(turns.waiting.size());
      for (auto& w : turns.waiting) d->waiting.push_back(std::move(w));
    }
    for (const auto& node : st.to_start) {
      const std::string pod_name = WorkerName(s, node);
      if (plan.gang) {
        if (outcomes[outcome_of[node]].verdict) continue;
        // A gang starts whole: every member is still to run and free (a busy one waits).
        bool whole = true;
        bool started = false;
        for (const auto& g : gangs) {
          if (std::find(g.begin(), g.end(), node) == g.end()) continue;
          for (const auto& peer : g) {
            whole &= !outcomes[outcome_of[peer]].verdict &&
                     (starting.contains(peer) || pods.contains(peer));
            started |= pods.contains(peer);
          }
        }
        if (!whole) continue;
        // Not started yet: its turn under maxUnavailable.
        if (!started && !turns.start.contains(node)) continue;
        const GangMember& m = members[node];
        if (m.headless_service) services.insert(m.gang_id);
        d->pods.push_back(GangPod(ctx, s.run, node, pod_name, m));
        continue;
      }
      if (st.active >= parallelism) break;
      const PodParams p{
          s.run, node, pod_name, ctx.config_map, PodGpus(ctx, node), ctx.timeout_seconds};
      d->pods.push_back({BuildPod(ctx.owner, spec, config, p), ""});
      st.active++;
    }
    // Rank 0's name must resolve before it is Ready (publishNotReadyAddresses), since no
    // worker is Ready before the rendezvous.
    for (const auto& id : services) {
      d->services.push_back(BuildGangService(ctx.owner, config.name_space, s.run, id, ctx.port));
    }
  }
  // Narrowing (docs/nccl.md): once every gang has its verdict, the nodes of failing gangs run
  // again in smaller gangs until the suspects are named.
  const bool all_decided = std::all_of(outcomes.begin(), outcomes.end(),
                                       [](const NodeOutcome& o) { return o.verdict.has_value(); });
  if (plan.gang && all_decided) {
    std::map<std::string, verdict::Verdict> verdict_of;
    for (const auto& o : outcomes) verdict_of[o.node] = *o.verdict;
    const std::string mode = spec.gang().narrow().empty() ? "pairs" : spec.gang().narrow();
    const Narrowing narrowing =
        Narrow(ctx, gangs, verdict_of, shape, mode, disruption.max_unavailable, d);
    Json suspects = Json::array();
    status.erase("suspectNodes");  // an earlier round's candidates may have been cleared since
    for (const auto& n : narrowing.suspects) {
      if (suspects.size() < 20) suspects.push_back(n);  // the CRD's maxItems
    }
    if (!suspects.empty()) status["suspectNodes"] = suspects;
    if (!narrowing.running.empty()) {
      d->status =
          RunningStatus(status, old_status, ctx.suspended, narrowing.running, s.generation, now);
      d->requeue_after = std::chrono::seconds(1);
      return;
    }
  }

  // Every node decided: the passing ones against their history and their peers.
  RegressionCheck regressions;
  if (all_decided) {
    regressions = FindRegressions(s, outcomes);
    if (spec.policy().failonregression()) FailRegressed(regressions, &outcomes);
    status.erase("regressions");
    if (!regressions.found.empty()) status["regressions"] = RegressionsJson(regressions);
  }
  const int pending = CountOutcomes(outcomes, &status);
  if (pending == 0) {
    status.erase("timeLeft");
    DecideCompletion(s, old_status, std::move(status), now, regressions, d);
    return;
  }
  SetTimeLeft(plan, pods, outcomes, plan.gang ? static_cast<int>(selected.size()) : parallelism,
              ctx.suspended, now_tp, &status);
  std::string msg = std::to_string(outcomes.size() - static_cast<size_t>(pending)) + " of " +
                    std::to_string(outcomes.size()) + " nodes done";
  if (!d->waiting.empty()) {
    msg += "; waiting for " + d->waiting.front() +
           (d->waiting.size() > 1 ? " and " + std::to_string(d->waiting.size() - 1) + " more" : "");
    RequeueSooner(&st.requeue, std::chrono::seconds(5));
  }
  d->status = RunningStatus(status, old_status, ctx.suspended,
                            ctx.suspended ? "suspended: " + msg : msg, s.generation, now);
  if (st.claim_waits > 0 && !ctx.suspended) {
    // A released claim wakes nobody: look again soon.
    RequeueSooner(&st.requeue, std::chrono::seconds(2));
  }
  if (draining) {
    // A refused eviction (a PodDisruptionBudget) is asked again, as kubectl drain does.
    RequeueSooner(&st.requeue, kEvictionRetry);
  }
  const int yield_waits = static_cast<int>(st.yielded.size());
  if (st.claim_waits + st.busy_waits + disruption_waits + yield_waits > 0 && !ctx.suspended) {
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
    Status bad = CheckSchedule(s.spec->doc.spec());
    if (bad.ok()) bad = CheckRolling(s.spec->doc.spec());
    if (bad.ok()) bad = CheckWatchNodes(s.spec->doc.spec());
    if (bad.ok()) bad = CheckQuarantine(s.spec->doc.spec());
    if (!bad.ok()) {
      d.status = StoppedStatus(status, old_status, "InvalidSpec", "InvalidSpec", bad.message(),
                               s.generation, now);
      d.events.push_back({"Warning", "InvalidSpec", bad.message(), true, ""});
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
  {
    // Which model each node has and how it was read (GFD's label or the cloud's), once per run;
    // an invalid spec's status keeps it too, to show what the message is about.
    if (!models.known.empty()) {
      status["gpuModels"] = Cut(DescribeModels(models.known), 1000);
      if (old_status.value("run", "") != s.run ||
          old_status.value("gpuModels", "") != status["gpuModels"].get<std::string>()) {
        d.events.push_back(
            {"Normal", "GpuModels", status["gpuModels"].get<std::string>(), false, ""});
      }
    }
  }
  if (!plan.ok()) {
    if (plan.status().code() != Code::kInvalidArgument && plan.status().code() != Code::kNotFound) {
      d.retry = plan.status();
      return d;
    }
    const std::string msg = plan.status().message();
    d.status =
        StoppedStatus(status, old_status, "InvalidSpec", "InvalidSpec", msg, s.generation, now);
    d.events.push_back({"Warning", "InvalidSpec", msg, true, ""});
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
  Result<DisruptionSettings> disruption =
      ParseDisruption(s.spec->doc.spec().disruption(), selected.size());
  if (!disruption.ok()) {
    const std::string msg = disruption.status().message();
    d.status =
        StoppedStatus(status, old_status, "InvalidSpec", "InvalidSpec", msg, s.generation, now);
    d.events.push_back({"Warning", "InvalidSpec", msg, true, ""});
    return d;
  }
  if (plan->gang && disruption->policy == "yield") {
    const std::string msg =
        "spec.disruption.policy: yield is not supported with spec.gang (a gang's workers do not "
        "yield to other pods); use wait";
    d.status =
        StoppedStatus(status, old_status, "InvalidSpec", "InvalidSpec", msg, s.generation, now);
    d.events.push_back({"Warning", "InvalidSpec", msg, true, ""});
    return d;
  }
  if (plan->gang) {
    // A gang needs all its nodes at once: one larger than maxUnavailable never starts.
    const std::string& value = s.spec->doc.spec().disruption().maxunavailable();
    Status fit = CheckGangsFit(GangsOf(selected, s.spec->doc.spec().gang().shape()), value,
                               disruption->max_unavailable);
    if (!fit.ok()) {
      d.status = StoppedStatus(status, old_status, "InvalidSpec", "InvalidSpec", fit.message(),
                               s.generation, now);
      d.events.push_back({"Warning", "InvalidSpec", fit.message(), true, ""});
      return d;
    }
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
  if (s.store && d.retry.ok()) DecideStore(s, config, FormatRfc3339(now_tp), &d);
  if (!s.store && d.status) {
    SetStoreOffCondition(&*d.status, s.validation.value("status", Json::object()), s.generation,
                         FormatRfc3339(now_tp));
  }
  return d;
}

}  // namespace perfgate::op
