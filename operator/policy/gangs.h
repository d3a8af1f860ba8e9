// NCCL gangs (docs/nccl.md): which nodes run together and at which rank, how one member's
// verdict becomes its gang's, and narrowing — the rounds that run the nodes of a failing gang
// again in smaller gangs until the suspects are named. Pure: each round is decided from the
// snapshot (its pods and results carry the run label "<run>-<stage>") into a Decision.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "operator/reconcile/actions.h"
#include "operator/reconcile/config.h"
#include "operator/reconcile/pods.h"
#include "operator/reconcile/snapshot.h"

namespace perfgate::op {

// The gangs of a sorted node list: shape "all" is one gang of every node; "pairs" is (0,1),
// (2,3), ..., with an odd last node added to the last pair (one node alone tests no link).
std::vector<std::vector<std::string>> GangsOf(const std::vector<std::string>& nodes,
                                              const std::string& shape);

// spec.disruption.maxUnavailable for gangs: a gang needs all its nodes under test at once.
struct GangTurns {
  std::set<std::string> start;       // the members of the gangs that start now
  std::vector<std::string> waiting;  // "gang of N nodes a, b (why)", for the status message
};

// Of `gangs`, those marked in `ready` (every member still to run and free, none started yet)
// start in order while their nodes fit beside the `in_use` nodes under `limit` (0: no limit);
// a gang that does not fit waits for its turn, whole.
GangTurns GangsInTurn(const std::vector<std::vector<std::string>>& gangs,
                      const std::vector<bool>& ready, std::set<std::string> in_use, int limit);

// A gang larger than spec.disruption.maxUnavailable (`value`, `limit` nodes) could never start:
// kInvalidArgument naming both numbers. OK without a maxUnavailable.
Status CheckGangsFit(const std::vector<std::vector<std::string>>& gangs, const std::string& value,
                     int limit);

// What every pod of a run shares (the narrowing rounds' pods too).
struct RunContext {
  const Snapshot* snapshot = nullptr;
  const ReconcilerConfig* config = nullptr;
  Owner owner;
  const v1alpha1::PerfValidationSpec* spec = nullptr;
  std::string run;
  std::string config_map;
  int spec_gpus = 0;  // spec.gpusPerNode; 0: each node's allocatable
  int timeout_seconds = 0;
  int port = 29500;  // the gangs' rendezvous port
  bool suspended = false;
  std::chrono::system_clock::time_point now;
};

// The GPUs a worker pod on `node` requests.
int PodGpus(const RunContext& ctx, const std::string& node);

// The NCCL_COMM_ID a pod of a gang already carries, or "".
std::string CommIdOf(const Json& pod);

// A gang member: rank `rank` of the gang's `nodes` (by rank), meeting at `comm` (an existing
// member's address), else at rank 0's headless Service, else (--gang-rendezvous-host) at an address
// Act picks.
GangMember MemberOf(const RunContext& ctx, const std::string& gang_id, int rank,
                    const std::vector<std::string>& nodes, const std::string& comm);

// The pod of a gang member (a PodCreate whose address Act completes when it is to be picked).
PodCreate GangPod(const RunContext& ctx, const std::string& run_label, const std::string& node,
                  const std::string& pod_name, const GangMember& member);

// A gang shares its worst member's verdict: each gang member without a verdict of its own
// takes the cause's when the cause is the operator's (its peer never ran or is gone: the
// member's pod is deleted and an ERROR result written); members that decided on their own keep
// deciding. `outcomes` is indexed by `outcome_of`.
void BlameGangs(const RunContext& ctx, const std::vector<std::vector<std::string>>& gangs,
                const std::set<std::string>& nodes_with_pods,
                const std::map<std::string, size_t>& outcome_of, std::vector<NodeOutcome>* outcomes,
                Decision* d);

struct Narrowing {
  std::vector<std::string> suspects;
  std::string running;  // non-empty while a round runs: what it is doing
};

// The suspects of the decided gangs (docs/nccl.md, "Narrowing"): failing pairs, or a failing
// `all` gang run again in pairs; then each suspect beside a node that passed, in rounds of at
// most `max_nodes` nodes (spec.disruption.maxUnavailable; the pairs of a gang that started
// fit already). Adds the pods, Services and operator results of the rounds still to run to `d`.
Narrowing Narrow(const RunContext& ctx, const std::vector<std::vector<std::string>>& gangs,
                 const std::map<std::string, verdict::Verdict>& verdict_of,
                 const std::string& shape, const std::string& mode, int max_nodes, Decision* d);

}  // namespace perfgate::op
