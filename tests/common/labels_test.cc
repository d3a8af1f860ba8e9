#include "common/labels.h"

#include <gtest/gtest.h>

#include <string>

namespace perfgate {
namespace {

TEST(LabelValue, ShortNamesAreKeptAsTheyAre) {
  EXPECT_EQ(LabelValue("node-0"), "node-0");
  EXPECT_EQ(LabelValue("ip-10-0-0-1.ec2.internal"), "ip-10-0-0-1.ec2.internal");
  EXPECT_EQ(LabelValue(std::string(63, 'a')), std::string(63, 'a'));
}

TEST(LabelValue, LongNamesAreShortenedWithAHashThatKeepsThemApart) {
  const std::string a = "gpu-7.rack-42.zone-b.datacenter-east.gpu-fleet.example-cloud.internal";
  const std::string b = "gpu-7.rack-42.zone-b.datacenter-east.gpu-fleet.example-cloud.internam";
  EXPECT_EQ(LabelValue(a).size(), 63u);
  EXPECT_EQ(LabelValue(a).substr(0, 54), a.substr(0, 54));
  EXPECT_NE(LabelValue(a), LabelValue(b));
  EXPECT_EQ(LabelValue(a), LabelValue(a));
  EXPECT_EQ(LabelValue(LabelValue(a)), LabelValue(a));  // already a valid value
}

}  // namespace
}  // namespace perfgate
