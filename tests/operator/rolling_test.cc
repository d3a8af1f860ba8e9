// The rolling period's parts that need no cluster: the period as spec.rolling.period spells it,
// the spec checks that make a validation InvalidSpec with the field named, and the order nodes
// take their turn in (never validated first, then the oldest verdict).
#include "operator/rolling.h"

#include <gtest/gtest.h>

#include <google/protobuf/util/json_util.h>

namespace perfgate::op {
namespace {

using std::chrono::seconds;

v1alpha1::PerfValidationSpec Spec(const std::string& json) {
  v1alpha1::PerfValidationSpec spec;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &spec).ok()) << json;
  return spec;
}

TEST(RollingPeriod, ReadsUnitsAndSums) {
  EXPECT_EQ(*ParsePeriod("90s"), seconds(90));
  EXPECT_EQ(*ParsePeriod("15m"), seconds(900));
  EXPECT_EQ(*ParsePeriod("12h"), seconds(12 * 3600));
  EXPECT_EQ(*ParsePeriod("7d"), seconds(7 * 86400));
  EXPECT_EQ(*ParsePeriod("2w"), seconds(14 * 86400));
  EXPECT_EQ(*ParsePeriod("1d12h"), seconds(36 * 3600));
}

TEST(RollingPeriod, RefusesWhatIsNotADurationNamingTheField) {
  for (const char* bad : {"", "7", "d", "7x", "7d ", "-1d", "1.5d", "0s", "99999999999d"}) {
    auto p = ParsePeriod(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.status().message().find("spec.rolling.period"), std::string::npos)
        << p.status().message();
  }
}

TEST(RollingSpec, ChecksEachFieldAndWhatContradictsIt) {
  EXPECT_TRUE(CheckRolling(Spec("{}")).ok());
  EXPECT_FALSE(IsRolling(Spec("{}")));
  EXPECT_TRUE(CheckRolling(Spec(R"({"rolling": {"period": "7d", "maxConcurrent": 2}})")).ok());
  EXPECT_TRUE(CheckRolling(Spec(R"({"rolling": {"period": "7d", "maxConcurrent": 1},
                            "disruption": {"policy": "yield"}})"))
                  .ok());
  const std::pair<const char*, const char*> cases[] = {
      {R"({"rolling": {"maxConcurrent": 2}})", "spec.rolling.period"},
      {R"({"rolling": {"period": "7x", "maxConcurrent": 2}})", "spec.rolling.period"},
      {R"({"rolling": {"period": "7d"}})", "spec.rolling.maxConcurrent"},
      {R"({"rolling": {"period": "7d", "maxConcurrent": -1}})", "spec.rolling.maxConcurrent"},
      {R"({"rolling": {"period": "7d", "maxConcurrent": 2}, "schedule": "@daily"})",
       "spec.schedule"},
      {R"({"rolling": {"period": "7d", "maxConcurrent": 2}, "gang": {"shape": "all"}})",
       "spec.gang"},
      {R"({"rolling": {"period": "7d", "maxConcurrent": 2}, "disruption": {"policy": "drain"}})",
       "spec.disruption.policy"},
  };
  for (const auto& [json, field] : cases) {
    Status s = CheckRolling(Spec(json));
    ASSERT_FALSE(s.ok()) << json;
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_NE(s.message().find(field), std::string::npos) << json << ": " << s.message();
    EXPECT_FALSE(RollingOf(Spec(json)).has_value()) << json;
  }
  auto r = RollingOf(Spec(R"({"rolling": {"period": "1d12h", "maxConcurrent": 3}})"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->period, seconds(36 * 3600));
  EXPECT_EQ(r->max_concurrent, 3);
}

TEST(RollingOrder, NeverValidatedFirstThenOldest) {
  const Json status = {{"rolling",
                        {{"nodes",
                          {{"a", {{"lastValidated", "2026-12-03T10:00:00Z"}}},
                           {"b", {{"lastValidated", "2026-12-01T10:00:00Z"}}},
                           {"c", {{"nextDue", "2026-12-09T10:00:00Z"}}},
                           {"d", {{"lastValidated", "2026-12-02T10:00:00Z"}}}}}}}};
  std::vector<std::string> nodes = {"a", "b", "c", "d", "e"};
  OrderOldestFirst(status, &nodes);
  EXPECT_EQ(nodes, (std::vector<std::string>{"c", "e", "b", "d", "a"}));
}

}  // namespace
}  // namespace perfgate::op
