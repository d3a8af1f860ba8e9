// RFC 3339 timestamps as the operator, the worker and kube-sim write and read them.
#include "common/time.h"

#include <gtest/gtest.h>

namespace perfgate {
namespace {

TEST(Rfc3339, FormatsUtcToTheSecondAndParsesBack) {
  const auto t = std::chrono::system_clock::from_time_t(1796036260);  // 2026-11-30T10:57:40Z
  EXPECT_EQ(FormatRfc3339(t), "2026-11-30T10:57:40Z");
  EXPECT_EQ(ParseRfc3339("2026-11-30T10:57:40Z"), t);
  EXPECT_EQ(ParseRfc3339("2026-11-30T10:57:40.123456Z"), t);  // MicroTime: fraction ignored
  EXPECT_EQ(NowRfc3339().size(), 20u);
}

TEST(Rfc3339, RefusesWhatIsNotATimestamp) {
  EXPECT_FALSE(ParseRfc3339("").has_value());
  EXPECT_FALSE(ParseRfc3339("2026-11-30").has_value());
  EXPECT_FALSE(ParseRfc3339("yesterday at noon, roughly").has_value());
}

}  // namespace
}  // namespace perfgate
