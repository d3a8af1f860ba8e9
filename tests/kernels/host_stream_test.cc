// host-stream's array size and context on recorded sysfs trees of real server layouts
// (tests/kernels/sysfs/, written by generate.py there): STREAM's rule against the machine's
// total last-level cache, every instance counted once however many cpus share it, and the
// NUMA nodes named in the report's details.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kernels/host_memory.h"
#include "kernels/test.h"

namespace perfgate::kernels {
namespace {

constexpr std::int64_t kMiB = 1LL << 20;

std::string Tree(const std::string& name) {
  return std::string(PERFGATE_SOURCE_DIR) + "/tests/kernels/sysfs/" + name;
}

struct Machine {
  const char* tree;
  int instances;
  std::int64_t total_llc;
  int numa_nodes;
  const char* text;
};

TEST(HostMemory, ArraysAreFourTimesTheWholeMachinesLastLevelCache) {
  const Machine machines[] = {
      // 2x EPYC 9654: 12 CCDs of 32 MiB a socket. Counting cpu0's L3 alone gave 128 MiB arrays.
      {"epyc-9654-2s", 24, 768 * kMiB, 2, "L3: 24 x 32 MiB = 768 MiB"},
      // 2x Xeon Platinum 8480+: 105 MiB a socket, shared by its 56 cores.
      {"xeon-8480-2s", 2, 210 * kMiB, 2, "L3: 2 x 105 MiB = 210 MiB"},
      // Grace: 114 MiB shared by its 72 cores.
      {"grace", 1, 114 * kMiB, 1, "L3: 114 MiB"},
  };
  for (const Machine& m : machines) {
    SCOPED_TRACE(m.tree);
    const HostMemorySystem memory = ReadHostMemorySystem(Tree(m.tree));
    EXPECT_EQ(memory.llc_level, 3);
    EXPECT_EQ(memory.llc_instances, m.instances);
    EXPECT_EQ(memory.llc_total_bytes, m.total_llc);
    EXPECT_EQ(memory.numa_nodes, m.numa_nodes);
    EXPECT_EQ(LastLevelCacheText(memory), m.text);
    EXPECT_GE(StreamArrayBytes(memory), 4 * m.total_llc);
  }
}

// A scratch sysfs tree for the layouts the recorded ones do not show.
class ScratchTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("perfgate-sysfs-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Cache(int cpu, int index, int level, const std::string& type, const std::string& size,
             const std::string& shared, const std::string& id) {
    const auto dir = root_ / "devices/system/cpu" / ("cpu" + std::to_string(cpu)) / "cache" /
                     ("index" + std::to_string(index));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "level") << level << "\n";
    std::ofstream(dir / "type") << type << "\n";
    std::ofstream(dir / "size") << size << "\n";
    if (!shared.empty()) std::ofstream(dir / "shared_cpu_list") << shared << "\n";
    if (!id.empty()) std::ofstream(dir / "id") << id << "\n";
  }
  std::filesystem::path root_;
};

TEST_F(ScratchTree, WithoutAnIdTheCpusSharingACacheNameIt) {
  for (int cpu = 0; cpu < 8; ++cpu) {
    Cache(cpu, 0, 1, "Data", "32K", std::to_string(cpu), "");
    Cache(cpu, 1, 1, "Instruction", "32K", std::to_string(cpu), "");
    Cache(cpu, 2, 3, "Unified", "16384K", cpu < 4 ? "0-3" : "4-7", "");
  }
  const HostMemorySystem memory = ReadHostMemorySystem(root_.string());
  EXPECT_EQ(memory.llc_instances, 2);
  EXPECT_EQ(memory.llc_total_bytes, 32 * kMiB);
  EXPECT_EQ(StreamArrayBytes(memory), 128 * kMiB);
  EXPECT_EQ(memory.numa_nodes, 0);
}

TEST_F(ScratchTree, WithoutAnL3TheHighestLevelPresentCounts) {
  for (int cpu = 0; cpu < 4; ++cpu) {
    Cache(cpu, 0, 1, "Data", "64K", std::to_string(cpu), std::to_string(cpu));
    Cache(cpu, 1, 2, "Unified", "2048K", cpu < 2 ? "0-1" : "2-3", cpu < 2 ? "0" : "1");
  }
  const HostMemorySystem memory = ReadHostMemorySystem(root_.string());
  EXPECT_EQ(memory.llc_level, 2);
  EXPECT_EQ(memory.llc_instances, 2);
  EXPECT_EQ(memory.llc_total_bytes, 4 * kMiB);
  EXPECT_EQ(StreamArrayBytes(memory), 64 * kMiB);  // the floor
}

TEST_F(ScratchTree, NoCacheInSysfsFallsBackTo128MiB) {
  const HostMemorySystem memory = ReadHostMemorySystem(root_.string());
  EXPECT_EQ(memory.llc_instances, 0);
  EXPECT_EQ(LastLevelCacheText(memory), "no cache in sysfs");
  EXPECT_EQ(StreamArrayBytes(memory), 128 * kMiB);
}

// The report's details say what the size was derived from and where the arrays live.
TEST(HostStream, DetailsNameTheCachesAndTheNumaPlacement) {
  const auto test = MakeHostStreamTestWith(Tree("epyc-9654-2s"));
  auto run = test->Prepare(
      Params({{"arrayBytes", std::int64_t{1} << 20}, {"threads", std::int64_t{2}}}), Target{});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto sample = (*run)->RunSample();
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  EXPECT_GT(sample->at("triadBandwidthGBps"), 0);
  const auto details = (*run)->Details();
  EXPECT_EQ(details.at("lastLevelCache"), "L3: 24 x 32 MiB = 768 MiB");
  EXPECT_EQ(details.at("arraySizing"), "arrayBytes as the spec gives it");
  EXPECT_EQ(details.at("numa").rfind("2 NUMA nodes; first touch by 2 threads in static shares", 0),
            0U)
      << details.at("numa");
}

}  // namespace
}  // namespace perfgate::kernels
