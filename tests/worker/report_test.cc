// Reports as their readers see them: JSON that parses back, JUnit that CI systems read, and
// a table that says what failed and why.
#include "common/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace perfgate::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1alpha1::Report Sample() {
  v1alpha1::Report r;
  r.set_validation("node-cert");
  r.mutable_identity()->set_hostname("gpu-node-7");
  r.set_verdict(v1alpha1::FAIL);
  r.set_reason("hbm [gpu3]: median triadBandwidthGBps 3912 GB/s < 4320");
  auto* t = r.add_tests();
  t->set_name("hbm");
  t->set_type("hbm-stream");
  t->set_device("gpu3");
  t->set_verdict(v1alpha1::FAIL);
  t->set_reason("median triadBandwidthGBps 3912 GB/s < 4320 <wow> & \"so\"");
  t->set_samples(9);
  auto* m = t->add_metrics();
  m->set_name("triadBandwidthGBps");
  m->set_unit("GB/s");
  m->mutable_summary()->set_n(9);
  m->mutable_summary()->set_median(3912);
  auto* th = t->add_thresholds();
  th->mutable_threshold()->set_metric("triadBandwidthGBps");
  th->mutable_threshold()->set_statistic("median");
  th->mutable_threshold()->set_op(">=");
  th->set_bound(4320);
  th->set_observed(3912);
  th->set_verdict(v1alpha1::FAIL);
  auto* s = r.add_tests();
  s->set_name("p2p");
  s->set_type("p2p");
  s->set_device("gpus0");
  s->set_verdict(v1alpha1::SKIPPED);
  s->set_reason("not applicable: one GPU");
  return r;
}

TEST(Report, JsonRoundTripsWithKubernetesStyleNames) {
  auto json = ToJson(Sample());
  ASSERT_TRUE(json.ok());
  EXPECT_THAT(*json, HasSubstr("\"verdict\": \"FAIL\""));
  EXPECT_THAT(*json, HasSubstr("\"stopReason\""));  // lowerCamelCase
  EXPECT_THAT(*json, HasSubstr("\"samples\": 9"));  // 32-bit: a number, not a string
  auto back = FromJson(*json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->tests(0).thresholds(0).bound(), 4320);
  EXPECT_EQ(back->identity().hostname(), "gpu-node-7");
}

TEST(Report, DeviceOrdinalReadsOnlyAGpuAndItsNumber) {
  EXPECT_EQ(DeviceOrdinal("gpu0"), 0);
  EXPECT_EQ(DeviceOrdinal("gpu13"), 13);
  for (const char* other : {"host", "gpu", "gpu-1", "gpu3x", "GPU3", "", "gpu99999999999"}) {
    EXPECT_EQ(DeviceOrdinal(other), -1) << other;
  }
}

TEST(Report, FromJsonRejectsGarbage) {
  EXPECT_FALSE(FromJson("{\"verdict\": \"MAYBE\"}").ok());
  EXPECT_FALSE(FromJson("not json").ok());
}

TEST(Report, JUnitHasATestcasePerResultAndEscapes) {
  std::string xml = ToJUnit(Sample());
  EXPECT_THAT(xml, HasSubstr("tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"1\""));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"perfgate.hbm-stream\" name=\"hbm [gpu3]\""));
  EXPECT_THAT(xml, HasSubstr("<failure type=\"FAIL\" message=\"median triadBandwidthGBps 3912 "
                             "GB/s &lt; 4320 &lt;wow&gt; &amp; &quot;so&quot;\"/>"));
  EXPECT_THAT(xml, HasSubstr("<skipped message=\"not applicable: one GPU\"/>"));
  EXPECT_THAT(xml, Not(HasSubstr("<wow>")));
}

TEST(Report, TableShowsFigureBoundVerdictAndReasons) {
  std::string table = FormatTable(Sample());
  EXPECT_THAT(table, HasSubstr("TEST"));
  EXPECT_THAT(table, HasSubstr("triadBandwidthGBps"));
  EXPECT_THAT(table, HasSubstr("3912.0 GB/s"));
  EXPECT_THAT(table, HasSubstr(">= 4320.0"));
  EXPECT_THAT(table, HasSubstr("SKIPPED  p2p [gpus0]: not applicable: one GPU"));
  EXPECT_THAT(table, HasSubstr("verdict: FAIL (hbm [gpu3]"));
}

}  // namespace
}  // namespace perfgate::report
