// fabric-topology: the declared cabling (NODE/HCA=SWITCH) against the LLDP neighbours a node
// sees (lldpctl's keyvalue output), each rail's HCA matched to its interface through sysfs. A
// node cabled as declared passes; a rail on another switch, or seeing none, fails naming the
// node, the NIC and the expected and seen switch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "kernels/fabric/topology.h"
#include "kernels/unmeasured.h"

namespace perfgate::kernels::fabric {
namespace {

using ::testing::HasSubstr;

// A sysfs tree in memory: files by path; directories are the paths' prefixes.
class FakeFs final : public config::HostFs {
 public:
  std::map<std::string, std::string> files;
  std::map<std::string, std::string> links;  // path -> resolved

  Result<std::string> Read(const std::string& path) const override {
    auto it = files.find(path);
    if (it == files.end()) return NotFound(path);
    return it->second;
  }
  Result<std::vector<std::string>> List(const std::string& path) const override {
    std::set<std::string> names;
    const std::string prefix = path + "/";
    auto add = [&](const std::string& p) {
      if (!p.starts_with(prefix)) return;
      const std::string rest = p.substr(prefix.size());
      names.insert(rest.substr(0, rest.find('/')));
    };
    for (const auto& [p, v] : files) add(p);
    for (const auto& [p, v] : links) add(p);
    if (names.empty()) return NotFound(path);
    return std::vector<std::string>(names.begin(), names.end());
  }
  Result<std::string> Resolve(const std::string& path) const override {
    auto it = links.find(path);
    if (it == links.end()) return NotFound(path);
    return it->second;
  }
};

// Two RoCE rails: mlx5_0 (eth0) and mlx5_1 (eth1).
std::shared_ptr<FakeFs> TwoRails() {
  auto fs = std::make_shared<FakeFs>();
  const char* pci[] = {"0000:18:00.0", "0000:40:00.0"};
  for (int i = 0; i < 2; ++i) {
    const std::string dev = "/sys/class/infiniband/mlx5_" + std::to_string(i);
    fs->links[dev + "/device"] = std::string("/sys/devices/pci0000:00/") + pci[i];
    fs->files[dev + "/device/numa_node"] = "0\n";
    fs->files[dev + "/device/net/eth" + std::to_string(i) + "/operstate"] = "up\n";
    fs->files[dev + "/ports/1/state"] = "4: ACTIVE\n";
    fs->files[dev + "/ports/1/phys_state"] = "5: LinkUp\n";
    fs->files[dev + "/ports/1/rate"] = "400 Gb/sec (4X NDR)\n";
    fs->files[dev + "/ports/1/link_layer"] = "Ethernet\n";
  }
  return fs;
}

std::string WriteLldp(const std::string& text) {
  char name[] = "/tmp/perfgate-lldp-XXXXXX";
  const int fd = ::mkstemp(name);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::ofstream(name) << text;
  return name;
}

constexpr char kLldp[] =
    "lldp.eth0.via=LLDP\n"
    "lldp.eth0.chassis.name=leaf-01\n"
    "lldp.eth0.port.ifname=Ethernet12\n"
    "lldp.eth1.via=LLDP\n"
    "lldp.eth1.chassis.name=leaf-07\n"
    "lldp.eth1.port.descr=swp3\n";

struct Outcome {
  Status status;
  double mismatches = -1;
  std::map<std::string, std::string> details;
};

Outcome RunTopology(const std::vector<std::string>& expected, const std::string& lldp_file) {
  auto test = MakeFabricTopologyTestWith(TwoRails(), "/sys", [] { return "node-1"; });
  Params params({{"expected", expected}, {"lldpFile", lldp_file}});
  Outcome out;
  auto run = test->Prepare(params, Target{});
  if (!run.ok()) {
    out.status = run.status();
    return out;
  }
  auto sample = (*run)->RunSample();
  EXPECT_TRUE(sample.ok());
  out.mismatches = sample->at("topologyMismatchCount");
  out.details = (*run)->Details();
  return out;
}

TEST(Topology, ParsesLldpKeyValueByInterface) {
  auto n = ParseLldpKeyValue(kLldp);
  ASSERT_EQ(n.size(), 2U);
  EXPECT_EQ(n["eth0"].switch_name, "leaf-01");
  EXPECT_EQ(n["eth0"].switch_port, "Ethernet12");
  EXPECT_EQ(n["eth1"].switch_port, "swp3");  // port.descr when there is no port.ifname
}

TEST(Topology, RejectsAnEntryOfAnotherFormAndADuplicate) {
  EXPECT_FALSE(ParseExpectedTopology({"node-1:mlx5_0=leaf-01"}).ok());
  EXPECT_FALSE(ParseExpectedTopology({"node-1/mlx5_0="}).ok());
  auto twice = ParseExpectedTopology({"node-1/mlx5_0=a", "node-1/mlx5_0=b"});
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("node-1/mlx5_0 is declared twice"));
}

TEST(Topology, ANodeCabledAsDeclaredPasses) {
  const std::string file = WriteLldp(kLldp);
  auto o = RunTopology({"node-1/mlx5_0=leaf-01", "node-1/mlx5_1=leaf-07", "node-2/mlx5_0=leaf-02"},
                       file);
  ASSERT_TRUE(o.status.ok()) << o.status.message();
  EXPECT_EQ(o.mismatches, 0);
  EXPECT_EQ(o.details.count(CountedKey("topologyMismatchCount")), 0U);
  EXPECT_EQ(o.details.at("rail.mlx5_0"),
            "node-1 mlx5_0 (PCI 0000:18:00.0, NUMA 0, eth0): expected leaf-01, seen leaf-01 port "
            "Ethernet12");
  std::remove(file.c_str());
}

TEST(Topology, ARailOnAnotherSwitchNamesTheNodeNicAndBothSwitches) {
  const std::string file = WriteLldp(kLldp);
  // "*" for every node, the node's own entry over it.
  auto o = RunTopology({"*/mlx5_0=leaf-01", "*/mlx5_1=leaf-02", "node-9/mlx5_1=leaf-07"}, file);
  ASSERT_TRUE(o.status.ok()) << o.status.message();
  EXPECT_EQ(o.mismatches, 1);
  EXPECT_EQ(o.details.at(CountedKey("topologyMismatchCount")),
            "node-1 mlx5_1 (PCI 0000:40:00.0, NUMA 0, eth1): expected leaf-02, seen leaf-07 port "
            "swp3");
  std::remove(file.c_str());
}

TEST(Topology, ARailThatSeesNoNeighbourAndAnHcaNotThereAreMismatches) {
  const std::string file = WriteLldp("lldp.eth0.chassis.name=leaf-01\n");
  auto o = RunTopology({"node-1/mlx5_0=leaf-01", "node-1/mlx5_1=leaf-07", "node-1/mlx5_5=leaf-03"},
                       file);
  ASSERT_TRUE(o.status.ok()) << o.status.message();
  EXPECT_EQ(o.mismatches, 2);
  const std::string& named = o.details.at(CountedKey("topologyMismatchCount"));
  EXPECT_THAT(named, HasSubstr("node-1 mlx5_1 (PCI 0000:40:00.0, NUMA 0, eth1): expected leaf-07, "
                               "seen nothing"));
  EXPECT_THAT(named, HasSubstr("node-1 mlx5_5: expected leaf-03, seen no such HCA here"));
  std::remove(file.c_str());
}

TEST(Topology, NothingDeclaredForThisNodeIsNotApplicable) {
  auto o = RunTopology({"node-2/mlx5_0=leaf-02"}, "/nonexistent");
  EXPECT_EQ(o.status.code(), Code::kFailedPrecondition);
  EXPECT_THAT(o.status.message(), HasSubstr("no rail of node node-1"));
}

}  // namespace
}  // namespace perfgate::kernels::fabric
