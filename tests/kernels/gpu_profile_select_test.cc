// Which built-in profile a GPU gets when the spec names none, with the CUDA device names the
// drivers report.
#include "kernels/cuda/profile_select.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/spec.h"

namespace perfgate::kernels {
namespace {

// The gpuModels written in profiles/*.yaml.
std::vector<ProfileCandidate> BuiltIn() {
  return {
      {"a100-sxm-80gb", {"A100-SXM4-80GB"}},
      {"a100-sxm-40gb", {"A100-SXM4-40GB"}},
      {"h100-sxm-80gb", {"H100 80GB HBM3", "H100 SXM"}},
      {"h200-sxm-141gb", {"H200", "!NVL"}},
      {"b200-sxm-180gb", {"B200"}},
  };
}

std::string Pick(std::string_view name) {
  auto r = SelectProfileName(name, BuiltIn());
  return r.ok() ? *r : r.status().ToString();
}

TEST(SelectProfileName, PicksByDeviceName) {
  EXPECT_EQ(Pick("NVIDIA H200"), "h200-sxm-141gb");
  EXPECT_EQ(Pick("NVIDIA H100 80GB HBM3"), "h100-sxm-80gb");
  EXPECT_EQ(Pick("NVIDIA A100-SXM4-80GB"), "a100-sxm-80gb");
  EXPECT_EQ(Pick("NVIDIA A100-SXM4-40GB"), "a100-sxm-40gb");
  EXPECT_EQ(Pick("NVIDIA B200"), "b200-sxm-180gb");
}

TEST(SelectProfileName, IgnoresCase) { EXPECT_EQ(Pick("nvidia h200"), "h200-sxm-141gb"); }

TEST(SelectProfileName, ExclusionKeepsOtherFormFactorsOut) {
  // An H200 NVL (600 W, lower peaks) must not be held to, or pass by, the SXM bounds.
  auto r = SelectProfileName("NVIDIA H200 NVL", BuiltIn());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find("H200 NVL"), std::string::npos);
}

TEST(SelectProfileName, UnknownGpuIsNotFoundAndListsProfiles) {
  auto r = SelectProfileName("NVIDIA H100 PCIe", BuiltIn());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find("h100-sxm-80gb"), std::string::npos);
  EXPECT_EQ(SelectProfileName("NVIDIA H200", {}).status().code(), Code::kNotFound);
}

TEST(SelectProfileName, MostSpecificPatternWins) {
  std::vector<ProfileCandidate> profiles = {{"generic-h200", {"H200"}}, {"h200-nvl", {"H200 NVL"}}};
  EXPECT_EQ(*SelectProfileName("NVIDIA H200 NVL", profiles), "h200-nvl");
  EXPECT_EQ(*SelectProfileName("NVIDIA H200", profiles), "generic-h200");
}

TEST(SelectProfileName, EqualMatchesAreRefusedNotGuessed) {
  std::vector<ProfileCandidate> profiles = {{"one", {"H200"}}, {"two", {"H200"}}};
  auto r = SelectProfileName("NVIDIA H200", profiles);
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("one, two"), std::string::npos);
}

// The profiles as shipped (profiles/*.yaml), their gpuModels lines as the matcher reads them.
std::vector<ProfileCandidate> Shipped() {
  std::vector<ProfileCandidate> out;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(PERFGATE_SOURCE_DIR) + "/profiles")) {
    if (e.path().extension() != ".yaml") continue;
    auto p = spec::LoadProfile(e.path().string());
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) continue;
    const auto& models = p->doc.spec().gpumodels();
    out.push_back({p->doc.metadata().name(), {models.begin(), models.end()}});
  }
  return out;
}

// Names real GPUs report, each with where it was seen. CUDA/NVML device names come from
// cudaGetDeviceProperties / nvidia-smi; GPU Feature Discovery labels nodes with the same name,
// spaces as '-', then "-MIG-<profile>" for a MIG slice and "-SHARED" under time-slicing
// (github.com/NVIDIA/k8s-device-plugin, internal/lm/resource.go, productLabel). "" in `profile`:
// no built-in profile holds this part's bounds, so it must be refused, never matched.
struct RealName {
  const char* name;
  const char* profile;
  const char* source;
};
constexpr RealName kRealNames[] = {
    // CUDA device names.
    {"NVIDIA H100 80GB HBM3", "h100-sxm-80gb", "https://github.com/pytorch/test-infra/pull/7631"},
    {"NVIDIA H100 PCIe", "", "https://github.com/pytorch/pytorch/issues/90761"},
    {"NVIDIA H100 NVL", "", "https://github.com/NVIDIA/gpu-admin-tools/issues/4"},
    {"NVIDIA H200", "h200-sxm-141gb", "https://github.com/NVIDIA/mig-parted/issues/120"},
    {"NVIDIA H200 NVL", "", "https://github.com/NVIDIA/mig-parted/pull/146"},
    {"NVIDIA GH200 480GB", "", "https://github.com/vllm-project/vllm/issues/9630"},
    {"NVIDIA GH200 144G HBM3e", "", "https://github.com/vllm-project/vllm/issues/18390"},
    {"NVIDIA B200", "b200-sxm-180gb", "https://github.com/pytorch/test-infra/pull/7631"},
    {"NVIDIA GB200", "", "https://github.com/vllm-project/vllm/issues/33543"},
    {"NVIDIA A100-SXM4-80GB", "a100-sxm-80gb", "https://github.com/vllm-project/vllm/issues/3842"},
    {"NVIDIA A100-SXM4-40GB", "", "https://github.com/vllm-project/vllm/issues/13254"},
    {"NVIDIA A100-PCIE-40GB", "", "https://github.com/siliconflow/onediff/pull/1044"},
    {"NVIDIA A100 80GB PCIe", "", "https://github.com/vllm-project/vllm/issues/14944"},
    // GPU Feature Discovery's nvidia.com/gpu.product labels.
    {"NVIDIA-A100-SXM4-80GB", "a100-sxm-80gb",
     "https://github.com/uoe-eidf-cluster-users/eidf-epcc-cluster/issues/7"},
    {"NVIDIA-A100-SXM4-40GB", "",
     "https://github.com/uoe-eidf-cluster-users/eidf-epcc-cluster/issues/7"},
    {"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "",
     "https://github.com/uoe-eidf-cluster-users/eidf-epcc-cluster/issues/7"},
    {"NVIDIA-A100-SXM4-80GB-MIG-3g.40gb", "", "https://github.com/pytorch/pytorch/issues/130181"},
    {"NVIDIA-H100-80GB-HBM3", "h100-sxm-80gb",
     "github.com/NVIDIA/k8s-device-plugin internal/lm/resource.go (productLabel)"},
    {"NVIDIA-H100-80GB-HBM3-SHARED", "h100-sxm-80gb",
     "github.com/NVIDIA/k8s-device-plugin internal/lm/resource.go (productLabel)"},
    {"NVIDIA-H200", "h200-sxm-141gb",
     "github.com/NVIDIA/k8s-device-plugin internal/lm/resource.go (productLabel)"},
    {"NVIDIA-H200-NVL", "", "github.com/NVIDIA/k8s-device-plugin internal/lm/resource.go"},
    {"NVIDIA-GH200-480GB", "", "github.com/NVIDIA/k8s-device-plugin internal/lm/resource.go"},
    {"NVIDIA-B200", "b200-sxm-180gb",
     "github.com/NVIDIA/k8s-device-plugin internal/lm/resource.go"},
    {"NVIDIA-GB200", "", "github.com/NVIDIA/k8s-device-plugin internal/lm/resource.go"},
};

TEST(SelectProfileName, RealGpuNamesPickTheirShippedProfileOrAreRefused) {
  const std::vector<ProfileCandidate> shipped = Shipped();
  ASSERT_GE(shipped.size(), 4u);
  for (const RealName& r : kRealNames) {
    auto picked = SelectProfileName(r.name, shipped);
    if (*r.profile != '\0') {
      EXPECT_TRUE(picked.ok() && *picked == r.profile)
          << r.name << " (" << r.source
          << "): " << (picked.ok() ? *picked : picked.status().ToString());
      continue;
    }
    // Refused, saying which GPU and which profiles there are, never matched to a wrong one.
    ASSERT_FALSE(picked.ok()) << r.name << " (" << r.source << ") matched " << *picked;
    EXPECT_EQ(picked.status().code(), Code::kNotFound) << r.name;
    EXPECT_NE(picked.status().message().find(std::string("\"") + r.name + "\""), std::string::npos)
        << picked.status().message();
    EXPECT_NE(picked.status().message().find("h100-sxm-80gb (H100 80GB HBM3"), std::string::npos)
        << picked.status().message();
  }
}

TEST(SelectProfileName, AMigSliceIsRefusedAsSuch) {
  auto r = SelectProfileName("NVIDIA-A100-SXM4-80GB-MIG-3g.40gb", Shipped());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is a MIG instance"), std::string::npos)
      << r.status().message();
}

TEST(ProfileMatchesGpu, ReadsCudaNamesAndGfdLabelsAlike) {
  const ProfileCandidate h100{"h100-sxm-80gb", {"H100 80GB HBM3"}};
  EXPECT_TRUE(ProfileMatchesGpu("NVIDIA H100 80GB HBM3", h100));
  EXPECT_TRUE(ProfileMatchesGpu("NVIDIA-H100-80GB-HBM3", h100));
  EXPECT_FALSE(ProfileMatchesGpu("NVIDIA H100 PCIe", h100));
  EXPECT_FALSE(ProfileMatchesGpu("NVIDIA-H200", h100));
  const ProfileCandidate h200{"h200-sxm-141gb", {"H200", "!NVL"}};
  EXPECT_TRUE(ProfileMatchesGpu("NVIDIA-H200", h200));
  EXPECT_FALSE(ProfileMatchesGpu("NVIDIA GH200 480GB", h200));
  EXPECT_FALSE(ProfileMatchesGpu("NVIDIA-H200-NVL", h200));
}

}  // namespace
}  // namespace perfgate::kernels
