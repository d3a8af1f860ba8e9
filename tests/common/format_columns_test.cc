// Tables printed as kubectl prints them: the worker's report, its history and the fleet summary.
#include <gtest/gtest.h>

#include "common/report.h"

namespace perfgate::report {
namespace {

TEST(FormatColumns, EachColumnAsWideAsItsWidestCellPlusTheGap) {
  EXPECT_EQ(FormatColumns({{"NODE", "VERDICT", "WHY"}, {"node-10", "PASS", "ok"}}),
            "NODE     VERDICT  WHY\n"
            "node-10  PASS     ok\n");
  EXPECT_EQ(FormatColumns({{"A", "B"}, {"long", "x"}}, 1), "A    B\nlong x\n");
}

TEST(FormatColumns, ShortRowsAndEmptyLastCellsLeaveNoTrailingSpaces) {
  EXPECT_EQ(FormatColumns({{"NODE", "MODEL", "LAST"}, {"node-1", "H200"}, {"node-2", "", ""}}),
            "NODE    MODEL  LAST\n"
            "node-1  H200\n"
            "node-2\n");
  EXPECT_EQ(FormatColumns({}), "");
}

}  // namespace
}  // namespace perfgate::report
