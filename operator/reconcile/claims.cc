#include "operator/reconcile/claims.h"

#include "common/labels.h"
#include "core/names.h"
#include "kube/leaderelection.h"
#include "operator/reconcile/act.h"
#include "operator/reconcile/snapshot.h"
#include "operator/runtime/log.h"

namespace perfgate::op {

kube::GroupVersionResource LeasesResource() { return {"coordination.k8s.io", "v1", "leases"}; }

std::string ClaimName(const std::string& node) {
  std::string plain = ObjectName({"claim", node});
  if (plain == "claim-" + node) return plain;
  return ObjectName({"claim", node, HexDigits(Fnv1a(node), 8)});
}

std::optional<NodeClaim> ClaimOfLease(const Json& lease) {
  if (Label(lease, kClaimLabel) != "node") return std::nullopt;
  const Json meta = lease.value("metadata", Json::object());
  const Json ann = meta.value("annotations", Json::object());
  NodeClaim c;
  c.node = ann.value(kClaimNodeAnnotation, "");
  if (c.node.empty()) return std::nullopt;
  c.name = meta.value("name", "");
  c.resource_version = meta.value("resourceVersion", "");
  c.holder = {ann.value(kClaimValidationAnnotation, ""), ann.value(kClaimUidAnnotation, ""),
              ann.value(kClaimRunAnnotation, "")};
  const Json spec = lease.value("spec", Json::object());
  c.lease_duration_seconds = spec.value("leaseDurationSeconds", 0);
  if (auto t = kube::ParseMicroTime(spec.value("renewTime", "")); t.ok()) c.renew_time = *t;
  if (auto t = kube::ParseMicroTime(spec.value("acquireTime", "")); t.ok()) c.acquire_time = *t;
  return c;
}

bool ClaimStale(const NodeClaim& claim, std::chrono::system_clock::time_point now) {
  return claim.holder_gone || claim.holder.validation.empty() ||
         now > claim.renew_time + std::chrono::seconds(claim.lease_duration_seconds);
}

Json BuildClaimLease(const std::string& nameSpace, const std::string& node,
                     const ClaimHolder& holder, int duration_seconds,
                     std::chrono::system_clock::time_point now, const std::string& resource_version,
                     std::chrono::system_clock::time_point acquired) {
  if (acquired == std::chrono::system_clock::time_point{}) acquired = now;
  Json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata",
                 {{"name", ClaimName(node)},
                  {"namespace", nameSpace},
                  {"labels",
                   {{kClaimLabel, "node"},
                    {"perfgate.io/validation", LabelValue(holder.validation)},
                    {"perfgate.io/node", LabelValue(node)}}},
                  {"annotations",
                   {{kClaimNodeAnnotation, node},
                    {kClaimValidationAnnotation, holder.validation},
                    {kClaimUidAnnotation, holder.uid},
                    {kClaimRunAnnotation, holder.run}}}}},
                {"spec",
                 {{"holderIdentity", holder.validation + "/" + holder.run},
                  {"leaseDurationSeconds", duration_seconds},
                  {"acquireTime", kube::FormatMicroTime(acquired)},
                  {"renewTime", kube::FormatMicroTime(now)}}}};
  if (!resource_version.empty()) lease["metadata"]["resourceVersion"] = resource_version;
  return lease;
}

std::vector<PodCreate> PodsOnClaimedNodes(const std::vector<PodCreate>& pods,
                                          const std::set<std::string>& unclaimed) {
  std::set<std::string> gangs_left_out;
  for (const auto& p : pods) {
    if (unclaimed.contains(ViewOfPod(p.pod).node)) gangs_left_out.insert(Label(p.pod, kGangLabel));
  }
  std::vector<PodCreate> out;
  for (const auto& p : pods) {
    const std::string gang = Label(p.pod, kGangLabel);
    if (unclaimed.contains(ViewOfPod(p.pod).node) ||
        (!gang.empty() && gangs_left_out.contains(gang))) {
      continue;
    }
    out.push_back(p);
  }
  return out;
}

Result<std::set<std::string>> Actor::MakeClaims(const std::string& validation,
                                                const std::vector<ClaimAction>& claims) {
  std::set<std::string> unclaimed;
  for (const auto& c : claims) {
    if (c.kind == ClaimAction::Kind::kRenew) {
      auto renewed = client_->Update(LeasesResource(), config_.name_space, c.lease);
      if (!renewed.ok()) {
        Logger()->warn("{}: cannot renew the claim of node {}: {}", validation, c.node,
                       renewed.status().message());
      }
      continue;
    }
    if (!unclaimed.empty()) {
      unclaimed.insert(c.node);
      continue;
    }
    auto made = c.kind == ClaimAction::Kind::kCreate
                    ? client_->Create(LeasesResource(), config_.name_space, c.lease)
                    : client_->Update(LeasesResource(), config_.name_space, c.lease);
    if (made.ok()) {
      Logger()->info("{}: claimed node {}{}", validation, c.node,
                     c.kind == ClaimAction::Kind::kTakeOver ? " (stale claim taken over)" : "");
      continue;
    }
    // 409: AlreadyExists on a create, Conflict on an update (someone else was faster); 404:
    // the stale claim was released meanwhile. Either way the node is not ours this time.
    const Code code = made.status().code();
    if (code != Code::kAlreadyExists && code != Code::kAborted && code != Code::kNotFound) {
      return made.status();
    }
    Logger()->info("{}: node {} was claimed by someone else first: waits", validation, c.node);
    unclaimed.insert(c.node);
  }
  if (!unclaimed.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    claim_lost_.insert(validation);
  }
  return unclaimed;
}

bool Actor::TakeClaimLost(const std::string& validation) {
  std::lock_guard<std::mutex> lock(mu_);
  return claim_lost_.erase(validation) > 0;
}

void Actor::ReleaseClaims(const std::string& validation,
                          const std::vector<ClaimRelease>& releases) {
  for (const auto& r : releases) {
    kube::DeleteOptions o;
    o.preconditionResourceVersion = r.resource_version;
    auto deleted = client_->Delete(LeasesResource(), config_.name_space, r.name, o);
    if (deleted.ok()) {
      Logger()->info("{}: released node {}", validation, r.node);
    } else if (deleted.status().code() != Code::kNotFound &&
               deleted.status().code() != Code::kAborted) {
      // Left to go stale: its holder is done, so anyone may take it over.
      Logger()->warn("{}: cannot release the claim of node {}: {}", validation, r.node,
                     deleted.status().message());
    }
  }
}

}  // namespace perfgate::op
