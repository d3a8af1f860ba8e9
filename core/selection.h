// Which nodes a validation selects, how many GPUs each offers, and which GPU model each has
// (core/gpu_model.h). Pure: reads node objects, no API calls.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/gpu_model.h"
#include "core/json_fields.h"
#include "perfgate/v1alpha1/validation.pb.h"

namespace perfgate::op {

// Whether `node` is selected by `spec`: nodeSelector labels all match, or it is named in
// spec.nodes; neither given selects every node.
bool NodeSelected(const v1alpha1::PerfValidationSpec& spec, const Json& node);
// The same for a spec held as JSON.
bool NodeSelected(const Json& spec, const Json& node);

// A node's allocatable nvidia.com/gpu (0 when it has none or no status).
int NodeGpus(const Json& node);

// Whether `node` carries a taint whose key is one of spec.remediationTaints.
bool HasRemediationTaint(const v1alpha1::PerfValidationSpec& spec, const Json& node);

// The nodes to test, sorted: selected, with allocatable GPUs, not cordoned unless
// includeCordoned, the cordon is perfgate's own or the node carries a remediation taint; nodes
// named in spec.nodes always, even when they do not exist (that node's ERROR).

std::vector<std::string> SelectNodes(const v1alpha1::PerfValidationSpec& spec,
                                     const std::map<std::string, Json>& nodes);

// The selected nodes' GPU models and how each was found.
struct SelectedModels {
  std::map<std::string, NodeGpuModel> known;   // node -> its model
  std::map<std::string, std::string> unknown;  // node -> why no model was found
};
SelectedModels ModelsOf(const std::vector<std::string>& selected,
                        const std::map<std::string, Json>& nodes);

// A model's words, lower-case: GFD's "NVIDIA-H200" and CUDA's "NVIDIA H200" are one model.
std::string ModelKey(const std::string& model);

// "NVIDIA H200: node-0, node-1 (GKE label cloud.google.com/gke-accelerator=nvidia-h200-141gb)",
// per model and per way it was found, at most 10 nodes each; models joined by "; ".
std::string DescribeModels(const std::map<std::string, NodeGpuModel>& known);

}  // namespace perfgate::op
