#include "common/verdict.h"

#include <gtest/gtest.h>

namespace perfgate::verdict {
namespace {

TEST(SplitConfidence, BonferroniOverDirectionalErrors) {
  EXPECT_NEAR(SplitConfidence(0.99, 32), 1 - 0.02 / 32, 1e-15);
  EXPECT_NEAR(SplitConfidence(0.95, 1), 0.90, 1e-15);
}

}  // namespace
}  // namespace perfgate::verdict
