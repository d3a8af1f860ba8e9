// What the operator's informers keep of each object: the fields the operator reads and nothing
// else, applied before an object is stored (kube::InformerOptions::transform). The cache of a
// large cluster is mostly fields no reconcile looks at: managedFields on every object, a node's
// image list, addresses and heartbeats, a worker pod's command, env and volumes, a PerfResult's
// samples and GPU identities. A reconcile that starts reading a new field of a cached object
// must keep it here (tests/operator/cache_strip_test.cc lists the fields read).
#pragma once

#include <nlohmann/json.hpp>

namespace perfgate::op {

// metadata.managedFields and the last-applied-configuration annotation (a copy of the object as
// kubectl applied it), for the kinds the operator never writes back. Nothing else.
void StripMetadata(nlohmann::json& object);

// A PerfValidation: metadata as StripMetadata; spec and status whole (the reconciler reads the
// validation from the API; the cache serves the handlers and /metrics).
void StripValidation(nlohmann::json& validation);

// A Node: metadata without managedFields, spec whole (a node action writes the cached node back,
// so the rest of its metadata and its spec must be complete); of the status only capacity,
// allocatable, each condition's type and status and nodeInfo's bootID (the fault signals of
// spec.watchNodes). What is dropped is never lost by the write: the API server keeps a node's
// status on an update of the node, and its managedFields when an update leaves them out.
void StripNode(nlohmann::json& node);

// A worker pod: metadata as StripMetadata; of the spec the node (nodeName, the required node
// affinity) and each container's name and NCCL_COMM_ID; the status whole but for container
// image names and ids. The operator never writes a cached pod back.
void StripWorkerPod(nlohmann::json& pod);

// A PerfResult: metadata as StripMetadata; of the spec the node, run, validation, worst,
// writtenBy, and of the report its verdict, reason, times, each test's name and verdict, and of
// the identity the driver version and each GPU's UUID and VBIOS (a changed node,
// operator/policy/identity.h). With `keep_figures` (the per-node metrics,
// operator/runtime/metrics.h) also each test's thresholds (metric, statistic, op, bound, observed,
// verdict) and each GPU's name (its model), and still none of the samples, metric summaries,
// details or the rest of the identity.
void StripResult(nlohmann::json& result, bool keep_figures = false);

}  // namespace perfgate::op
