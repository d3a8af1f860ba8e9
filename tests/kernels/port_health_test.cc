// port-health on recorded sysfs trees of a node with eight ConnectX-7 HCAs at NDR
// (tests/kernels/sysfs/cx7-ndr-*, written by generate.py there): what the reader makes of each
// port, and the verdicts a user sees: a clean node passes, and a port down, a port below its
// rated speed or width, a link that went down and a burst of errors each fail with the port
// named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "kernels/fabric/port_health.h"
#include "kernels/fabric/ports.h"
#include "kernels/registry.h"
#include "tests/kernels/profile_bound.h"
#include "worker/runner.h"

namespace perfgate::kernels::fabric {
namespace {

using ::testing::HasSubstr;

std::string Tree(const std::string& name) {
  return std::string(PERFGATE_SOURCE_DIR) + "/tests/kernels/sysfs/" + name;
}

Result<std::vector<IbPort>> ReadTree(const std::string& name) {
  static const std::unique_ptr<config::HostFs> fs = config::RealHostFs();
  return ReadIbPorts(*fs, Tree(name));
}

TEST(IbPorts, ReadsEveryPortWithItsStateRateCountersAndPlacement) {
  auto ports = ReadTree("cx7-ndr-clean");
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
  auto down = ReadTree("cx7-ndr-port-down");
  ASSERT_TRUE(down.ok());
  const IbPort& port = down->at(5);
  EXPECT_EQ(port.Name(), "mlx5_5/1");
  EXPECT_EQ(port.state, "DOWN");
  EXPECT_EQ(port.phys_state, "Polling");
  EXPECT_FALSE(port.Up());

  auto narrow = ReadTree("cx7-ndr-degraded-width");
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
  auto ports = ReadTree("epyc-9654-2s");
  ASSERT_FALSE(ports.ok());
  EXPECT_EQ(ports.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(ports.status().message().find("class/infiniband does not exist"), std::string::npos);
}

// Reads `first` once (Prepare's reading), then `then` for every later reading.
PortReader Snapshots(const std::string& first, const std::string& then) {
  auto reads = std::make_shared<int>(0);
  return [=]() { return ReadTree((*reads)++ == 0 ? first : then); };
}

// port-health as the built-in H100 profile runs it (its quick level): rated NDR 4X, and the
// profile's own bounds on the counts.
worker::PlannedTest Planned(const kernels::Test& test) {
  worker::PlannedTest t;
  t.name = "port-health";
  t.type = "port-health";
  t.test = &test;
  t.params = Params({{"hcas", std::vector<std::string>{}},
                     {"ratedRateGbps", 400.0},
                     {"ratedWidth", std::int64_t{4}},
                     {"intervalSeconds", 0.0}});
  t.metrics = test.Info().metrics;
  for (const char* metric : {"portDownCount", "portDegradedCount", "linkDownedCount",
                             "symbolErrorCount", "linkErrorRecoveryCount", "portRcvErrorCount",
                             "bufferOverrunErrorCount", "linkIntegrityErrorCount"}) {
    const verdict::Threshold bound =
        kernels::testing::ProfileBound("h100-sxm-80gb", "quick", "port-health", metric);
    v1alpha1::Threshold spec;
    spec.set_metric(metric);
    spec.set_statistic("max");
    spec.set_op("<=");
    spec.set_value(bound.bound);
    t.threshold_specs.push_back(spec);
    t.thresholds.push_back(bound);
  }
  t.sampling.warmup = 0;
  t.sampling.min_repeats = 2;
  t.sampling.max_repeats = 2;
  t.sampling.fixed = true;
  t.sampling.max_seconds = 60;
  return t;
}

v1alpha1::TestResult RunPortHealth(const kernels::Test& test) {
  worker::Plan plan;
  plan.validation = "v";
  plan.tests.push_back(Planned(test));
  worker::RunOptions options;
  options.identity = [](v1alpha1::Identity* id) { id->set_hostname("node-a"); };
  v1alpha1::Report report = worker::RunPlan(plan, options);
  EXPECT_EQ(report.tests_size(), 1);
  return report.tests(0);
}

v1alpha1::TestResult RunOn(const std::string& first, const std::string& then) {
  auto test = MakePortHealthTestWith(Snapshots(first, then), "the tree");
  return RunPortHealth(*test);
}

TEST(PortHealth, ACleanNodePassesWithEveryPortInTheDetails) {
  const v1alpha1::TestResult r = RunOn("cx7-ndr-clean", "cx7-ndr-clean");
  EXPECT_EQ(r.verdict(), v1alpha1::PASS) << r.reason();
  EXPECT_EQ(r.details().at("ports"),
            "8 (mlx5_0/1; mlx5_1/1; mlx5_2/1; mlx5_3/1; mlx5_4/1; mlx5_5/1; mlx5_6/1; mlx5_7/1)");
  EXPECT_THAT(r.details().at("port.mlx5_4/1"),
              HasSubstr("ACTIVE, LinkUp, 400 Gb/sec (4X NDR), InfiniBand, PCI 0000:9a:00.0, "
                        "NUMA 1; in the window: link_downed +0, symbol_error +0"));
  bool rate_seen = false;
  for (const auto& m : r.metrics()) {
    if (m.name() != "slowestPortRateGbps") continue;
    rate_seen = true;
    EXPECT_EQ(m.summary().min(), 400);
  }
  EXPECT_TRUE(rate_seen);
}

TEST(PortHealth, ADownPortFailsNamingThePortAndItsPlacement) {
  const v1alpha1::TestResult r = RunOn("cx7-ndr-port-down", "cx7-ndr-port-down");
  EXPECT_EQ(r.verdict(), v1alpha1::FAIL);
  EXPECT_THAT(r.reason(), HasSubstr("portDownCount"));
  EXPECT_THAT(r.reason(), HasSubstr("mlx5_5/1 (PCI 0000:c0:00.0, NUMA 1) DOWN (Polling)"));
}

TEST(PortHealth, APortOnTwoLanesOfFourFailsNamingThePort) {
  const v1alpha1::TestResult r = RunOn("cx7-ndr-degraded-width", "cx7-ndr-degraded-width");
  EXPECT_EQ(r.verdict(), v1alpha1::FAIL);
  EXPECT_THAT(r.reason(), HasSubstr("portDegradedCount"));
  EXPECT_THAT(r.reason(), HasSubstr("mlx5_2/1 (PCI 0000:4f:00.0, NUMA 0) at 200 Gb/sec (2X NDR), "
                                    "rated 400 Gb/sec on 4 lanes"));
}

TEST(PortHealth, APortAtHdrOnAnNdrFabricFailsNamingThePort) {
  const v1alpha1::TestResult r = RunOn("cx7-ndr-degraded-speed", "cx7-ndr-degraded-speed");
  EXPECT_EQ(r.verdict(), v1alpha1::FAIL);
  EXPECT_THAT(r.reason(), HasSubstr("mlx5_6/1 (PCI 0000:ce:00.0, NUMA 1) at 200 Gb/sec (4X HDR)"));
}

TEST(PortHealth, ALinkThatWentDownInTheWindowFailsNamingThePort) {
  const v1alpha1::TestResult r = RunOn("cx7-ndr-flap/before", "cx7-ndr-flap/after");
  EXPECT_EQ(r.verdict(), v1alpha1::FAIL);
  EXPECT_THAT(r.reason(), HasSubstr("linkDownedCount"));
  EXPECT_THAT(r.reason(), HasSubstr("mlx5_7/1 (PCI 0000:dc:00.0, NUMA 1) link_downed +1 (0 -> 1)"));
}

TEST(PortHealth, AnErrorBurstOverItsBoundFailsNamingThePort) {
  const v1alpha1::TestResult r = RunOn("cx7-ndr-burst/before", "cx7-ndr-burst/after");
  EXPECT_EQ(r.verdict(), v1alpha1::FAIL);
  EXPECT_THAT(r.reason(), HasSubstr("symbolErrorCount"));
  EXPECT_THAT(r.reason(),
              HasSubstr("mlx5_3/1 (PCI 0000:5e:00.0, NUMA 0) symbol_error +250 (0 -> 250)"));
  // The same snapshot twice: the errors counted before the window are not this run's.
  EXPECT_EQ(RunOn("cx7-ndr-burst/after", "cx7-ndr-burst/after").verdict(), v1alpha1::PASS);
}

TEST(PortHealth, AMachineWithoutRdmaPortsIsSkippedWithTheReason) {
  auto test = MakePortHealthTestWith([] { return ReadTree("epyc-9654-2s"); }, "the tree");
  const v1alpha1::TestResult r = RunPortHealth(*test);
  EXPECT_EQ(r.verdict(), v1alpha1::SKIPPED);
  EXPECT_THAT(r.reason(), HasSubstr("class/infiniband does not exist"));
}

TEST(PortHealth, AnHcaTheSpecNamesThatIsMissingIsAnError) {
  auto test = MakePortHealthTestWith(Snapshots("cx7-ndr-clean", "cx7-ndr-clean"), "the tree");
  worker::PlannedTest t = Planned(*test);
  auto params = t.params.values();
  params["hcas"] = std::vector<std::string>{"mlx5_0", "mlx5_9"};
  auto run = test->Prepare(Params(params), Target{});
  ASSERT_FALSE(run.ok());
  EXPECT_THAT(run.status().message(), HasSubstr("HCA mlx5_9 (in hcas) is not in the tree"));
}

TEST(PortHealth, IsRegisteredForTheWorkerAndTheList) {
  const kernels::Test* test = FindTest("port-health", false);
  ASSERT_NE(test, nullptr);
  EXPECT_EQ(test->Info().scope, Scope::kHost);
  for (const MetricInfo& m : test->Info().metrics) {
    SCOPED_TRACE(m.name);
    EXPECT_FALSE(m.description.empty());
    if (IsCount(m)) {
      EXPECT_FALSE(m.higher_is_better);
    }
  }
}

}  // namespace
}  // namespace perfgate::kernels::fabric
