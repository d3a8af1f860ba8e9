// The time a run has left, estimated from its plan's price (core/plan.h PricePlan: the
// typical wall time of one node) and where its nodes stand. An estimate, not a promise: a
// node's real time depends on how soon its figures settle (sequential sampling) and on how
// long its pod waits to be scheduled. Pure.
#pragma once

#include <string>
#include <vector>

namespace perfgate::op {

// Seconds until the last node is done when nodes run `slots` at a time: the nodes already
// running have run `running_elapsed` seconds each (a node past its estimate is taken to need a
// little longer, not none), and `waiting` more start as slots free up, each taking
// `node_seconds`. 0 when nothing is left.
double RemainingSeconds(double node_seconds, const std::vector<double>& running_elapsed,
                        int waiting, int slots);

// "~45s", "~12m", "~2h05m": rounded so that the status changes seldom.
std::string FormatEta(double seconds);

}  // namespace perfgate::op
