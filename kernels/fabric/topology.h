// fabric-topology: the cabling as declared, checked against what the node sees. The spec
// declares which switch each rail of each node connects to; the node's LLDP neighbours (lldpd's
// `lldpctl -f keyvalue`, or a file in that format) say which switch each interface sees; each
// rail's HCA is matched to its interface through sysfs (/sys/class/infiniband/<hca>/device/net).
// A rail whose switch differs, or that sees none, is a mismatch naming the node, the NIC and the
// expected and seen switch: the cable to look at.
//
// LLDP runs on Ethernet, so this checks RoCE fabrics; an InfiniBand port sees no LLDP neighbour
// (its switch is known to the subnet manager, which this test does not query).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "kernels/fabric/ports.h"
#include "kernels/test.h"

namespace perfgate::kernels::fabric {

// One declared cable: rail `hca` of `node` ("*": every node) goes to `switch_name`.
struct ExpectedRail {
  std::string node;
  std::string hca;
  std::string switch_name;
};

// Entries "NODE/HCA=SWITCH" (NODE may be "*"). InvalidArgument naming an entry of another
// form, or an HCA declared twice for one node. Pure.
Result<std::vector<ExpectedRail>> ParseExpectedTopology(const std::vector<std::string>& entries);

// What one interface sees over LLDP.
struct LldpNeighbour {
  std::string switch_name;  // chassis.name
  std::string switch_port;  // port.ifname (else port.descr); may be empty
};

// lldpctl's keyvalue output ("lldp.eth0.chassis.name=leaf-01", "lldp.eth0.port.ifname=Eth1/12")
// by local interface. Lines of other keys are passed over. Pure.
std::map<std::string, LldpNeighbour> ParseLldpKeyValue(const std::string& text);

// The network interfaces of each HCA (<sysfs_root>/class/infiniband/<hca>/device/net/*), by
// HCA; an HCA without any is absent. Blocking.
std::map<std::string, std::vector<std::string>> HcaInterfaces(const config::HostFs& fs,
                                                              const std::string& sysfs_root,
                                                              const std::vector<IbPort>& ports);

// One rail's comparison.
struct RailCabling {
  std::string hca;
  std::string placement;   // "PCI 0000:18:00.0, NUMA 0"
  std::string interfaces;  // "eth0", or "" when none
  std::string expected;
  std::string seen;  // "leaf-07 port Eth1/12", or "" when nothing was seen
  bool mismatch = false;
  std::string Text(const std::string& node) const;  // the line a FAIL shows
};

// The rails declared for `node` (its own entries over "*" ones), each compared with what it
// sees. Pure.
std::vector<RailCabling> CompareTopology(const std::string& node,
                                         const std::vector<ExpectedRail>& expected,
                                         const std::vector<IbPort>& ports,
                                         const std::map<std::string, std::vector<std::string>>& ifs,
                                         const std::map<std::string, LldpNeighbour>& lldp);

}  // namespace perfgate::kernels::fabric

namespace perfgate::kernels {

// fabric-topology reading ports and interfaces under `sysfs_root` of `fs`, this node being
// node_name() (the worker's: /sys, NODE_NAME else the host name; MakeFabricTopologyTest).
std::unique_ptr<Test> MakeFabricTopologyTestWith(std::shared_ptr<const config::HostFs> fs,
                                                 std::string sysfs_root,
                                                 std::function<std::string()> node_name);

}  // namespace perfgate::kernels
