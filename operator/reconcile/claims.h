// Node claims: which validation's run may put a worker on a node is decided by the API server,
// never by a cache. Each node has one coordination.k8s.io Lease in the operator's namespace;
// its holder is a validation (name and uid) and a run. A claim is made by creating the Lease
// (409 AlreadyExists: someone else holds it), taken over only by an update carrying the
// resourceVersion that was read (409 Conflict: someone was faster), renewed while the run
// goes on, and released (deleted with a resourceVersion precondition) when the node is done,
// the run completes or the validation is deleted. A claim whose holder is gone (validation
// deleted or on another run, run complete) or that was not renewed within its duration
// (operator gone) is stale and may be taken over. docs/operator.md, "Node claims".
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json_fields.h"
#include "kube/client.h"

namespace perfgate::op {

// Marks the operator's node-claim Leases (value "node"), so one list reads them all.
inline constexpr const char* kClaimLabel = "perfgate.io/claim";
// The holder's full names on the Lease (labels may be shortened).
inline constexpr const char* kClaimNodeAnnotation = "perfgate.io/node";
inline constexpr const char* kClaimValidationAnnotation = "perfgate.io/validation";
inline constexpr const char* kClaimUidAnnotation = "perfgate.io/validation-uid";
inline constexpr const char* kClaimRunAnnotation = "perfgate.io/run";

kube::GroupVersionResource LeasesResource();

// The Lease name of `node`'s claim: "claim-<node>", with a hash of the node's name when that
// name had to be changed to fit (so two nodes never share one Lease). Deterministic.
std::string ClaimName(const std::string& node);

// Who holds (or wants) a node.
struct ClaimHolder {
  std::string validation;
  std::string uid;
  std::string run;
  bool operator==(const ClaimHolder&) const = default;
};

// A node's claim as observed.
struct NodeClaim {
  std::string node;
  std::string name;              // the Lease's name
  std::string resource_version;  // the precondition for a takeover or a release
  ClaimHolder holder;
  std::chrono::system_clock::time_point acquire_time{};
  std::chrono::system_clock::time_point renew_time{};
  int lease_duration_seconds = 0;
  // The holder is gone: its validation was deleted (or re-created, another uid), moved on to
  // another run, or completed the claimed run. Observed through the API.
  bool holder_gone = false;
};

// The claim as read from a Lease; nullopt for a Lease that is not a node claim.
std::optional<NodeClaim> ClaimOfLease(const Json& lease);

// True when `claim` may be taken over by someone other than its holder at `now`: the holder is
// gone, or it was not renewed within its duration.
bool ClaimStale(const NodeClaim& claim, std::chrono::system_clock::time_point now);

// The Lease that claims `node` for `holder` at `now` (for a create, or for a takeover or
// renewal when `resource_version` is non-empty: the update then fails with 409 Conflict if the
// Lease changed since it was read).
Json BuildClaimLease(const std::string& nameSpace, const std::string& node,
                     const ClaimHolder& holder, int duration_seconds,
                     std::chrono::system_clock::time_point now,
                     const std::string& resource_version = "",
                     std::chrono::system_clock::time_point acquired = {});

// What one reconcile does about claims (in the Decision): made in sorted node order, so two
// gangs that both want nodes A and B never each hold one of them.
struct ClaimAction {
  enum class Kind { kCreate, kTakeOver, kRenew };
  Kind kind = Kind::kCreate;
  std::string node;
  Json lease;  // what to create or update (the update carries the resourceVersion read)
};
struct ClaimRelease {
  std::string node;
  std::string name;
  std::string resource_version;  // deleted only if unchanged: never someone else's claim
};

}  // namespace perfgate::op
