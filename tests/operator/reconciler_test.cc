// The reconciler's naming and selection rules (the end-to-end suite covers the rest).
#include "operator/reconcile/reconciler.h"

#include <gtest/gtest.h>

namespace perfgate::op {
namespace {

TEST(RunId, ChangesWithGenerationAndRerunToken) {
  EXPECT_EQ(RunId(3, ""), "g3");
  EXPECT_NE(RunId(3, "a"), RunId(3, "b"));
  EXPECT_NE(RunId(3, "a"), RunId(4, "a"));
  EXPECT_EQ(RunId(3, "a"), RunId(3, "a"));  // a restarted operator finds the same run
  EXPECT_EQ(RunId(3, "tok").rfind("g3-", 0), 0u);
}

TEST(ObjectName, DeterministicValidAndBounded) {
  EXPECT_EQ(ObjectName({"smoke", "g1", "node-0"}), "smoke-g1-node-0");
  EXPECT_EQ(ObjectName({"Smoke", "g1", "gpu_node.a"}), "smoke-g1-gpu-node-a");
  std::string long_node(80, 'n');
  std::string a = ObjectName({"v", "g1", long_node + "a"});
  std::string b = ObjectName({"v", "g1", long_node + "b"});
  EXPECT_LE(a.size(), 63u);
  EXPECT_NE(a, b);  // the hash keeps truncated names apart
}

TEST(NodeSelected, SelectorIsAndedAndExplicitNodesAdd) {
  Json node = {{"metadata", {{"name", "n1"}, {"labels", {{"a", "1"}, {"b", "2"}}}}}};
  EXPECT_TRUE(NodeSelected({{"nodeSelector", {{"a", "1"}}}}, node));
  EXPECT_TRUE(NodeSelected({{"nodeSelector", {{"a", "1"}, {"b", "2"}}}}, node));
  EXPECT_FALSE(NodeSelected({{"nodeSelector", {{"a", "1"}, {"b", "3"}}}}, node));
  EXPECT_TRUE(NodeSelected({{"nodeSelector", {{"a", "9"}}}, {"nodes", {"n1"}}}, node));
  EXPECT_TRUE(NodeSelected(Json::object(), node));        // no selector: every (GPU) node
  EXPECT_FALSE(NodeSelected({{"nodes", {"n2"}}}, node));  // names only: just those
}

// Pairs point at a node or a link; an odd node out joins the last pair rather than run alone
// (one node tests no link between nodes).
TEST(GangsOf, AllIsOneGangPairsAreDisjoint) {
  using Gangs = std::vector<std::vector<std::string>>;
  const std::vector<std::string> four = {"a", "b", "c", "d"};
  EXPECT_EQ(GangsOf(four, "all"), Gangs({four}));
  EXPECT_EQ(GangsOf(four, "pairs"), Gangs({{"a", "b"}, {"c", "d"}}));
  EXPECT_EQ(GangsOf({"a", "b", "c", "d", "e"}, "pairs"), Gangs({{"a", "b"}, {"c", "d", "e"}}));
  EXPECT_EQ(GangsOf({"a"}, "pairs"), Gangs({{"a"}}));
  EXPECT_TRUE(GangsOf({}, "all").empty());
}

// Narrowing rounds belong to their run (kept and cleaned with it); a run id that merely ends
// in digits is not mistaken for a round.
TEST(BaseRun, NarrowingRoundsBelongToTheirRun) {
  EXPECT_EQ(BaseRun("g3"), "g3");
  EXPECT_EQ(BaseRun("g12"), "g12");
  EXPECT_EQ(BaseRun("g3-pairs"), "g3");
  EXPECT_EQ(BaseRun("g3-probe"), "g3");
  EXPECT_EQ(BaseRun("g3-probe2"), "g3");
  EXPECT_EQ(BaseRun("g3-1a2b3c44-probe7"), "g3-1a2b3c44");
  EXPECT_EQ(BaseRun("g3-1a2b3c44"), "g3-1a2b3c44");
  EXPECT_EQ(BaseRun("g3-pairs2"), "g3-pairs2");  // pairs run once
  EXPECT_EQ(BaseRun(RunId(3, "tok") + "-probe"), RunId(3, "tok"));
}

}  // namespace
}  // namespace perfgate::op
