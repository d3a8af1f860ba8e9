// Which built-in profile a GPU gets when the spec names none, with the CUDA device names the
// drivers report.
#include "kernels/cuda/profile_select.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace perfgate::kernels
