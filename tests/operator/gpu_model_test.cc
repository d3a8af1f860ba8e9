// A node's GPU model from its labels, as each managed cloud writes them, picks the built-in
// profile that GFD's label would: the table read against the shipped profiles' gpuModels.
#include "core/gpu_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/cuda/profile_select.h"

namespace perfgate::op {
namespace {

using ::testing::HasSubstr;

// profiles/*.yaml's names and gpuModels.
const std::vector<kernels::ProfileCandidate> kShipped = {
    {"a100-sxm-80gb", {"A100-SXM4-80GB", "A100-SXM-80GB"}},
    {"b200-sxm-180gb", {"B200"}},
    {"h100-sxm-80gb", {"H100 80GB HBM3", "H100 SXM"}},
    {"h200-sxm-141gb", {"H200", "!NVL"}},
};

struct Case {
  std::string label;
  std::string value;
  std::string profile;  // empty: no built-in profile is for it
  std::string foundBy;
};

TEST(GpuModel, EachCloudsLabelPicksTheProfileGfdWould) {
  const std::vector<Case> cases = {
      {kGkeAcceleratorLabel, "nvidia-b200", "b200-sxm-180gb", "GKE label"},
      {kGkeAcceleratorLabel, "nvidia-h200-141gb", "h200-sxm-141gb", "GKE label"},
      {kGkeAcceleratorLabel, "nvidia-h100-mega-80gb", "h100-sxm-80gb", "GKE label"},
      {kGkeAcceleratorLabel, "nvidia-h100-80gb", "h100-sxm-80gb", "GKE label"},
      {kGkeAcceleratorLabel, "nvidia-a100-80gb", "a100-sxm-80gb", "GKE label"},
      {kGkeAcceleratorLabel, "nvidia-tesla-a100", "", "GKE label"},
      {kInstanceTypeLabel, "p6-b200.48xlarge", "b200-sxm-180gb", "EKS instance type"},
      {kInstanceTypeLabel, "p5en.48xlarge", "h200-sxm-141gb", "EKS instance type"},
      {kInstanceTypeLabel, "p5.48xlarge", "h100-sxm-80gb", "EKS instance type"},
      {kInstanceTypeLabel, "p4de.24xlarge", "a100-sxm-80gb", "EKS instance type"},
      {kInstanceTypeLabel, "p4d.24xlarge", "", "EKS instance type"},
      {kInstanceTypeLabel, "Standard_ND96isr_H200_v5", "h200-sxm-141gb", "AKS VM size"},
      {kInstanceTypeLabel, "Standard_ND96isr_H100_v5", "h100-sxm-80gb", "AKS VM size"},
      {kInstanceTypeLabel, "standard_nd96amsr_a100_v4", "a100-sxm-80gb", "AKS VM size"},
      {kInstanceTypeLabel, "Standard_ND96asr_v4", "", "AKS VM size"},
  };
  for (const Case& c : cases) {
    auto m = GpuModelOfNode({{c.label, c.value}});
    ASSERT_TRUE(m.ok()) << c.value << ": " << m.status().message();
    EXPECT_EQ(m->found_by, c.foundBy + " " + c.label + "=" + c.value);
    EXPECT_EQ(m->label, c.label);
    auto picked = kernels::SelectProfileName(m->model, kShipped);
    if (c.profile.empty()) {
      EXPECT_FALSE(picked.ok()) << c.value << " -> " << *picked;
    } else {
      ASSERT_TRUE(picked.ok()) << c.value << ": " << picked.status().message();
      EXPECT_EQ(*picked, c.profile) << c.value;
    }
  }
}

TEST(GpuModel, EveryRowNamesItsSource) {
  for (const CloudGpuLabel& row : CloudGpuLabels()) {
    EXPECT_THAT(std::string(row.source), HasSubstr("https://")) << row.value;
  }
}

// GFD reads the GPU itself: its label wins over the machine type's.
TEST(GpuModel, GfdLabelWinsOverTheCloudsLabels) {
  auto m = GpuModelOfNode({{kGpuProductLabel, "NVIDIA-H200"},
                           {kGkeAcceleratorLabel, "nvidia-h100-80gb"},
                           {kInstanceTypeLabel, "a3-highgpu-8g"}});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->model, "NVIDIA-H200");
  EXPECT_EQ(m->found_by, "GFD label nvidia.com/gpu.product=NVIDIA-H200");
}

TEST(GpuModel, UnknownNodeNamesTheLabelsRead) {
  auto m =
      GpuModelOfNode({{kGkeAcceleratorLabel, "nvidia-l4"}, {kInstanceTypeLabel, "g2-standard-8"}});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kNotFound);
  EXPECT_THAT(m.status().message(), HasSubstr("read nvidia.com/gpu.product (absent), "
                                              "cloud.google.com/gke-accelerator=nvidia-l4, "
                                              "node.kubernetes.io/instance-type=g2-standard-8"));
}

}  // namespace
}  // namespace perfgate::op
