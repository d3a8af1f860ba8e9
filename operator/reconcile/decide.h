// Decide: from a Snapshot and the current time to the Decision — what to create, delete and
// write, which nodes get which verdict, which events go out, and the new status. Pure: no
// client, no clock, no I/O; unit tests drive it in memory (tests/operator/decide_test.cc).
#pragma once

#include <chrono>

#include "operator/reconcile/actions.h"
#include "operator/reconcile/config.h"
#include "operator/reconcile/snapshot.h"

namespace perfgate::op {

Decision Decide(const Snapshot& snapshot, const ReconcilerConfig& config,
                std::chrono::system_clock::time_point now);

}  // namespace perfgate::op
