// The time left that `kubectl get pval` shows (status.timeLeft): from the plan's price per node
// and where the nodes stand.
#include "core/eta.h"

#include <gtest/gtest.h>

namespace perfgate::op {
namespace {

TEST(TimeLeft, WaitingNodesRunInWavesOfTheParallelism) {
  // 10 nodes of 60 s each, 4 at a time: 3 waves.
  EXPECT_DOUBLE_EQ(RemainingSeconds(60, {}, 10, 4), 180);
  // All at once: one node's time.
  EXPECT_DOUBLE_EQ(RemainingSeconds(60, {}, 10, 10), 60);
  EXPECT_DOUBLE_EQ(RemainingSeconds(60, {}, 0, 4), 0);
}

TEST(TimeLeft, RunningNodesCountWhatTheyHaveLeft) {
  // Two slots: one node 40 s in (20 s left), one 10 s in (50 s left); one more waits and takes
  // the first free slot: 20 + 60.
  EXPECT_DOUBLE_EQ(RemainingSeconds(60, {40, 10}, 1, 2), 80);
  // A node past its estimate is taken to need a tenth more, not nothing.
  EXPECT_DOUBLE_EQ(RemainingSeconds(60, {300}, 0, 1), 6);
}

TEST(TimeLeft, ShownRoundedSoTheStatusChangesSeldom) {
  EXPECT_EQ(FormatEta(3), "~5s");
  EXPECT_EQ(FormatEta(42), "~45s");
  EXPECT_EQ(FormatEta(61), "~2m");
  EXPECT_EQ(FormatEta(180), "~3m");
  EXPECT_EQ(FormatEta(2 * 3600 + 4 * 60 + 1), "~2h05m");
}

}  // namespace
}  // namespace perfgate::op
