// The node's InfiniBand and RoCE ports as sysfs describes them: state, physical state, rate and
// width, link layer, the error counters, and the PCI address and NUMA node of the HCA that owns
// each port. port-health reads them before and after its window (port_health.cc), config checks
// their state and rate against its expectations. Reads go through HostFs from a sysfs root, so
// unit tests read recorded trees (tests/kernels/sysfs/) or a fake one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "kernels/config/host_fs.h"

namespace perfgate::kernels::fabric {

struct IbPort {
  std::string hca;  // "mlx5_0"
  int port = 0;     // 1-based, as sysfs numbers them
  // The words of state ("4: ACTIVE" -> "ACTIVE") and phys_state ("5: LinkUp" -> "LinkUp").
  std::string state;
  std::string phys_state;
  std::string rate_text;   // as sysfs writes it: "400 Gb/sec (4X NDR)"
  double rate_gbps = 0;    // 400; 0 when rate does not parse
  int width = 0;           // lanes: 4 for "4X"; 0 when rate does not say
  std::string speed;       // "NDR", "HDR", ...; empty when rate does not say
  std::string link_layer;  // "InfiniBand", "Ethernet"
  // Every file of ports/<n>/counters/ that holds a number: symbol_error, link_downed, ...
  std::map<std::string, std::uint64_t> counters;
  std::string pci_address;  // "0000:18:00.0" (the HCA's device link); empty when unknown
  int numa_node = -1;       // the HCA's device/numa_node; -1 when unknown

  // "mlx5_0/1"
  std::string Name() const { return hca + "/" + std::to_string(port); }
  // ACTIVE and LinkUp: the port passes traffic.
  bool Up() const { return state == "ACTIVE" && phys_state == "LinkUp"; }
  // "PCI 0000:18:00.0, NUMA 0" (parts unknown are left out); empty when neither is known.
  std::string Placement() const;
};

// Reads every port of every HCA under <sysfs_root>/class/infiniband/<hca>/ports/<n>/ ("/sys"
// on the host), in HCA then port order. FailedPrecondition when <sysfs_root>/class/infiniband
// does not exist (no RDMA device on this machine, or its driver is not loaded), Unavailable
// when it cannot be listed; a port's file that cannot be read leaves its field empty.
// Blocking.
Result<std::vector<IbPort>> ReadIbPorts(const config::HostFs& fs, const std::string& sysfs_root);

// "400 Gb/sec (4X NDR)" -> rate 400, width 4, speed "NDR" into `port`; fields that do not
// parse stay 0 or empty. Pure.
void ParseRate(const std::string& text, IbPort* port);

}  // namespace perfgate::kernels::fabric
