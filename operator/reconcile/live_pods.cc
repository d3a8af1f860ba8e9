#include "operator/reconcile/live_pods.h"

#include "common/time.h"

namespace perfgate::op {

Status ConfirmUnscheduled(kube::Client& client, const ReconcilerConfig& config,
                          std::chrono::system_clock::time_point now, Snapshot* s) {
  for (PodView& p : s->pods) {
    if (p.terminal || p.scheduled) continue;
    const auto created = ParseRfc3339(Str(p.object, "/metadata/creationTimestamp"_json_pointer));
    if (!created || now - *created + std::chrono::seconds(1) < config.scheduling_timeout) continue;
    const std::string ns = Str(p.object, "/metadata/namespace"_json_pointer);
    auto live = client.Get(kube::PodsResource(), ns.empty() ? config.name_space : ns, p.name);
    if (!live.ok()) {
      if (live.status().code() == Code::kNotFound) {
        return Unavailable("pod " + p.name +
                           " is gone from the API but still in the cache: waiting for the cache");
      }
      return Status(live.status().code(), "confirming that pod " + p.name +
                                              " is unscheduled: " + live.status().message());
    }
    if (Str(*live, "/metadata/uid"_json_pointer) != Str(p.object, "/metadata/uid"_json_pointer)) {
      return Unavailable("pod " + p.name + " was re-created since the cache saw it");
    }
    const std::string bound = Str(*live, "/spec/nodeName"_json_pointer);
    if (!bound.empty()) {
      p.scheduled = true;
      p.object["spec"]["nodeName"] = bound;
      continue;
    }
    p.object = *std::move(live);
  }
  return Status::Ok();
}

}  // namespace perfgate::op
