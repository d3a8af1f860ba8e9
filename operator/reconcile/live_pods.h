// Before a worker pod is judged unscheduled for too long (an ERROR, and the pod deleted), the
// API server is asked, never the cache alone: a cache behind the API (a watch that dropped and
// is backing off, a relist failing through API errors) can still show a pod unscheduled that
// was bound long ago, and a healthy node would end ERROR. docs/operator.md, "Scheduling
// timeout".
#pragma once

#include <chrono>

#include "common/result.h"
#include "kube/client.h"
#include "operator/reconcile/config.h"
#include "operator/reconcile/snapshot.h"

namespace perfgate::op {

// For every unfinished pod of `s` that the cache shows unscheduled for `config`'s scheduling
// timeout or longer at `now` (less a second, so that the decision made at `now` sees no pod
// it did not confirm): reads it from the API. Bound there: the view says scheduled (the rest
// of the view stays the cache's until the cache catches up). Still unbound: the view takes
// the API's object (its PodScheduled condition says why). An error, or the pod gone from the
// API while the cache still shows it, is returned: nothing is judged from a cache that
// cannot be checked, the reconcile is tried again.
Status ConfirmUnscheduled(kube::Client& client, const ReconcilerConfig& config,
                          std::chrono::system_clock::time_point now, Snapshot* s);

}  // namespace perfgate::op
