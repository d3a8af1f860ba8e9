// port-health on recorded sysfs trees of a node with eight ConnectX-7 HCAs at NDR
// (tests/kernels/sysfs/cx7-ndr-*, written by generate.py there): what the reader makes of each
// port, and the verdicts a user sees: a clean node passes, and a port down, a port below its
// rated speed or width, a link that went down and a burst of errors each fail with the port
// named.
#include <gtest/gtest.h>

#include <string>

#include "kernels/fabric/ports.h"

namespace perfgate::kernels::fabric {
namespace {

std::string Tree(const std::string& name) {
  return std::string(PERFGATE_SOURCE_DIR) + "/tests/kernels/sysfs/" + name;
}

TEST(IbPorts, ReadsEveryPortWithItsStateRateCountersAndPlacement) {
  auto ports = ReadIbPorts(Tree("cx7-ndr-clean"));
  ASSERT_TRUE(ports.ok()) << ports.status().message();
  ASSERT_EQ(ports->size(), 8U);
  const IbPort& first = ports->front();
  EXPECT_EQ(first.Name(), "mlx5_0/1");
  EXPECT_EQ(first.state, "ACTIVE");
  EXPECT_EQ(first.phys_state, "LinkUp");
  EXPECT_TRUE(first.Up());
  EXPECT_EQ(first.rate_text, "400 Gb/sec (4X NDR)");
  EXPECT_EQ(first.rate_gbps, 400);
  EXPECT_EQ(first.width, 4);
  EXPECT_EQ(first.speed, "NDR");
  EXPECT_EQ(first.link_layer, "InfiniBand");
  EXPECT_EQ(first.counters.at("symbol_error"), 0U);
  EXPECT_EQ(first.counters.at("port_xmit_data"), 9172635548U);
  EXPECT_EQ(first.Placement(), "PCI 0000:18:00.0, NUMA 0");
  EXPECT_EQ(ports->back().Name(), "mlx5_7/1");
  EXPECT_EQ(ports->back().Placement(), "PCI 0000:dc:00.0, NUMA 1");
}

TEST(IbPorts, ReadsADownPortAndADegradedOne) {
  auto down = ReadIbPorts(Tree("cx7-ndr-port-down"));
  ASSERT_TRUE(down.ok());
  const IbPort& port = down->at(5);
  EXPECT_EQ(port.Name(), "mlx5_5/1");
  EXPECT_EQ(port.state, "DOWN");
  EXPECT_EQ(port.phys_state, "Polling");
  EXPECT_FALSE(port.Up());

  auto narrow = ReadIbPorts(Tree("cx7-ndr-degraded-width"));
  ASSERT_TRUE(narrow.ok());
  EXPECT_EQ(narrow->at(2).rate_gbps, 200);
  EXPECT_EQ(narrow->at(2).width, 2);
  EXPECT_EQ(narrow->at(2).speed, "NDR");
}

TEST(IbPorts, ParsesTheRatesLinuxWrites) {
  IbPort port;
  ParseRate("200 Gb/sec (4X HDR)", &port);
  EXPECT_EQ(port.rate_gbps, 200);
  EXPECT_EQ(port.width, 4);
  EXPECT_EQ(port.speed, "HDR");
  ParseRate("2.5 Gb/sec (1X SDR)", &port);
  EXPECT_EQ(port.rate_gbps, 2.5);
  EXPECT_EQ(port.width, 1);
  ParseRate("garbage", &port);
  EXPECT_EQ(port.rate_gbps, 0);
  EXPECT_EQ(port.width, 0);
  EXPECT_EQ(port.speed, "");
}

TEST(IbPorts, AMachineWithoutRdmaDevicesSaysSo) {
  auto ports = ReadIbPorts(Tree("epyc-9654-2s"));
  ASSERT_FALSE(ports.ok());
  EXPECT_EQ(ports.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(ports.status().message().find("class/infiniband does not exist"), std::string::npos);
}

}  // namespace
}  // namespace perfgate::kernels::fabric
