// Which GPU model a node has, from the labels its cluster writes. GPU Feature Discovery (the GPU
// Operator) writes nvidia.com/gpu.product; managed clusters without it still name the model in
// their own labels: GKE's cloud.google.com/gke-accelerator, and on EKS and AKS the machine's
// node.kubernetes.io/instance-type. Pure: no API calls, so the table is unit-tested as data.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace perfgate::op {

constexpr const char* kGpuProductLabel = "nvidia.com/gpu.product";
constexpr const char* kGkeAcceleratorLabel = "cloud.google.com/gke-accelerator";
constexpr const char* kInstanceTypeLabel = "node.kubernetes.io/instance-type";

struct NodeGpuModel {
  // The GPU's name as CUDA reports it ("NVIDIA H100 80GB HBM3"), or GFD's label value
  // ("NVIDIA-H100-80GB-HBM3"): profiles' gpuModels read both the same.
  std::string model;
  std::string label;  // the label it was read from
  // How it was found, for status and events:
  // "GKE label cloud.google.com/gke-accelerator=nvidia-h100-80gb".
  std::string found_by;
};

// One row of the managed clouds' table: a label value that names a GPU model.
struct CloudGpuLabel {
  const char* way;     // "GKE label", "EKS instance type", "AKS VM size"
  const char* label;   // the node label read
  const char* value;   // its value, compared case-insensitively
  const char* model;   // the GPU's CUDA name
  const char* source;  // where the cloud documents it
};

// Every row, in the order they are tried (for docs and tests).
const std::vector<CloudGpuLabel>& CloudGpuLabels();

// The node's model from its labels: nvidia.com/gpu.product first (it is read from the GPU
// itself), then the cloud's labels. kNotFound when none names a model perfgate knows; the
// message lists the labels read with their values.
Result<NodeGpuModel> GpuModelOfNode(const std::map<std::string, std::string>& labels);

}  // namespace perfgate::op
