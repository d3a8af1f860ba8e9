#include "core/gpu_model.h"

#include "common/strings.h"

#include <cctype>

namespace perfgate::op {
namespace {

constexpr const char* kGkeGpus = "https://docs.cloud.google.com/compute/docs/gpus";
constexpr const char* kGkeA3A2 =
    "https://cloud.google.com/compute/docs/gpus/create-gpu-vm-accelerator-optimized";
constexpr const char* kAwsP5P6 =
    "https://axbrief.com/blog/"
    "aws-p6-instances-and-efa-solve-the-foundation-model-bottleneck-ehzt7x3";
constexpr const char* kAwsP4P5 =
    "https://raw.githubusercontent.com/datareceipts/data-receipts/main/109-gpu-pricing/"
    "hyperscalers.json";
constexpr const char* kAwsP5en = "https://github.com/dstackai/dstack/pull/4110";
constexpr const char* kAzureNd = "https://huggingface.co/docs/microsoft-azure/azure-ai/hardware";
constexpr const char* kAzureH200 =
    "https://aspire.dev/reference/api/csharp/aspire.hosting.azure.kubernetes/"
    "standardndisrh200v5.md";

// The GPU names as CUDA reports them; profiles' gpuModels match them as whole words.
constexpr const char* kH100 = "NVIDIA H100 80GB HBM3";
constexpr const char* kH200 = "NVIDIA H200";
constexpr const char* kA100x80 = "NVIDIA A100-SXM4-80GB";
constexpr const char* kA100x40 = "NVIDIA A100-SXM4-40GB";
constexpr const char* kB200 = "NVIDIA B200";

}  // namespace

// Only rows whose model a cloud's own documentation (or a public table quoting it) states: a
// guessed row would certify a GPU against another model's bounds. Instance types that host other
// models (p5e.48xlarge, for one) are left out until a source says which GPU they carry.
const std::vector<CloudGpuLabel>& CloudGpuLabels() {
  static const std::vector<CloudGpuLabel> rows = {
      // GKE: the accelerator type, one per machine series (A4, A3 Ultra, A3 Mega, A3 High,
      // A2 Ultra, A2 Standard).
      {"GKE label", kGkeAcceleratorLabel, "nvidia-b200", kB200, kGkeGpus},
      {"GKE label", kGkeAcceleratorLabel, "nvidia-h200-141gb", kH200, kGkeGpus},
      {"GKE label", kGkeAcceleratorLabel, "nvidia-h100-mega-80gb", kH100, kGkeA3A2},
      {"GKE label", kGkeAcceleratorLabel, "nvidia-h100-80gb", kH100, kGkeA3A2},
      {"GKE label", kGkeAcceleratorLabel, "nvidia-a100-80gb", kA100x80, kGkeA3A2},
      {"GKE label", kGkeAcceleratorLabel, "nvidia-tesla-a100", kA100x40, kGkeA3A2},
      // EKS: the EC2 instance type.
      {"EKS instance type", kInstanceTypeLabel, "p6-b200.48xlarge", kB200, kAwsP5P6},
      {"EKS instance type", kInstanceTypeLabel, "p5en.48xlarge", kH200, kAwsP5en},
      {"EKS instance type", kInstanceTypeLabel, "p5.48xlarge", kH100, kAwsP4P5},
      {"EKS instance type", kInstanceTypeLabel, "p4de.24xlarge", kA100x80, kAwsP4P5},
      {"EKS instance type", kInstanceTypeLabel, "p4d.24xlarge", kA100x40, kAwsP4P5},
      // AKS: the VM size.
      {"AKS VM size", kInstanceTypeLabel, "Standard_ND96isr_H200_v5", kH200, kAzureH200},
      {"AKS VM size", kInstanceTypeLabel, "Standard_ND96isr_H100_v5", kH100, kAzureNd},
      {"AKS VM size", kInstanceTypeLabel, "Standard_ND96amsr_A100_v4", kA100x80, kAzureNd},
      {"AKS VM size", kInstanceTypeLabel, "Standard_ND96asr_v4", kA100x40, kAzureNd},
  };
  return rows;
}

Result<NodeGpuModel> GpuModelOfNode(const std::map<std::string, std::string>& labels) {
  auto value_of = [&](const char* key) -> std::string {
    auto it = labels.find(key);
    return it == labels.end() ? "" : it->second;
  };
  const std::string product = value_of(kGpuProductLabel);
  if (!product.empty()) {
    return NodeGpuModel{product, kGpuProductLabel,
                        std::string("GFD label ") + kGpuProductLabel + "=" + product};
  }
  for (const CloudGpuLabel& row : CloudGpuLabels()) {
    const std::string value = value_of(row.label);
    if (!value.empty() && Lower(value) == Lower(row.value)) {
      return NodeGpuModel{row.model, row.label,
                          std::string(row.way) + " " + row.label + "=" + value};
    }
  }
  std::string read;
  for (const char* key : {kGpuProductLabel, kGkeAcceleratorLabel, kInstanceTypeLabel}) {
    const std::string value = value_of(key);
    read +=
        (read.empty() ? "" : ", ") + std::string(key) + (value.empty() ? " (absent)" : "=" + value);
  }
  return NotFound("no label names a GPU model perfgate knows (read " + read + ")");
}

}  // namespace perfgate::op
