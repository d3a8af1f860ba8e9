// A node's identity as its results record it (docs/lifecycle.md, "New and changed nodes"): the
// driver the worker found (NVML) and each GPU's UUID and VBIOS. Compared with the driver GPU
// Feature Discovery labels on the node now, and with the node's previous result, so a driver
// changed while the operator was down and a swapped GPU are both seen. Pure.
#pragma once

#include <string>
#include <vector>

#include "core/json_fields.h"
#include "operator/reconcile/actions.h"
#include "operator/reconcile/snapshot.h"

namespace perfgate::op {

struct ResultIdentity {
  std::string driver;             // "550.54.15"; "" when the worker could not read it
  std::vector<std::string> gpus;  // "<uuid> vbios <vbios>" by GPU index; empty without NVML

  // "driver 550.54.15, GPUs GPU-1a.. (vbios 96.00.89.00.01), ..."
  std::string Describe() const;
};

// From a PerfResult's spec.report.identity (what operator/runtime/cache_strip.h keeps of it).
ResultIdentity IdentityOfResult(const Json& result);

// The driver version of a node's GPU Feature Discovery labels (nvidia.com/cuda.driver.major,
// .minor, .rev joined with dots); "" without them.
std::string LabelledDriver(const Json& node);

// Whether the driver a result reports (NVML's "550.54.15") is not the one the labels say,
// compared number by number as far as the labels go ("550.54" matches "550.54.15"). A result
// without an NVML version (empty, or "CUDA 12.4" where NVML was missing) never differs.
bool DriverDiffers(const std::string& reported, const std::string& labelled);

// The GPUs of `now` are not those of `was` (a GPU swapped: another UUID, or a new VBIOS): a
// description of the change, "" when they are the same or either result has no GPU list.
std::string GpuChange(const ResultIdentity& was, const ResultIdentity& now);

// For each node with a verdict in d->outcomes whose result of this run shows other GPUs than its
// previous result (its newest of an earlier run still cached): status.gpuChanges[] (node,
// result, previousResult, change; at most 20, once per result) and
// a Warning event GpuChanged, so a swapped GPU is never silent. The result measured the new GPUs:
// the node is not tested again for it.
void RecordGpuChanges(const Snapshot& s, Decision* d);

}  // namespace perfgate::op
