#include "common/labels.h"

#include <gtest/gtest.h>

#include <string>

#include "common/strings.h"

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

TEST(ObjectName, LowerCaseDnsLabelsThatStayDistinctWhenShortened) {
  EXPECT_EQ(ObjectName({"smoke", "g1", "node-0"}), "smoke-g1-node-0");
  EXPECT_EQ(ObjectName({"Smoke", "g1", "gpu_node.a"}), "smoke-g1-gpu-node-a");
  EXPECT_EQ(ObjectName({"run", "node-"}), "run-node");
  const std::string node(80, 'n');
  const std::string a = ObjectName({"v", "g1", node + "a"});
  const std::string b = ObjectName({"v", "g1", node + "b"});
  EXPECT_EQ(a.size(), 63u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, ObjectName({"v", "g1", node + "a"}));
}

TEST(Hashes, Fnv1aAndHexDigitsAreTheKnownValues) {
  // The names already in clusters depend on these: the offset basis is the project's own.
  EXPECT_EQ(Fnv1a(""), 1469598103934665603ULL);
  EXPECT_EQ(Fnv1a("a"), 0x44bd8ad473cd9906ULL);
  EXPECT_EQ(HexDigits(42, 8), "0000002a");
  EXPECT_EQ(HexDigits(0xabcdef, 4), "cdef");
}

TEST(Strings, TrimLowerAndSplit) {
  EXPECT_EQ(Trim(" \t a b \r\n"), "a b");
  EXPECT_EQ(Trim("   "), "");
  EXPECT_EQ(Lower("NVIDIA H200-SXM"), "nvidia h200-sxm");
  EXPECT_EQ(Split("a, b ,,c", ','), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(Split("", ','), (std::vector<std::string>{""}));
}

}  // namespace
}  // namespace perfgate
