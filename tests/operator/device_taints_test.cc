// Per-GPU quarantine through DRA (operator/policy/device_taints.h): which FAILs are confined to
// GPUs, how a report's GPU is found among a node's ResourceSlice devices, and the DeviceTaintRules
// made and removed against kube-sim, which serves and validates both kinds.
#include "operator/policy/device_taints.h"

#include <gtest/gtest.h>

#include "core/names.h"
#include "kube/config.h"
#include "operator/policy/node_actions.h"
#include "tests/kube-sim/kube_sim.h"

namespace perfgate::op {
namespace {

const char* kUuid3 = "GPU-33333333-aaaa-bbbb-cccc-333333333333";

// A FAIL report of an 8-GPU node whose failing tests ran on `devices`.
Json Report(const std::vector<std::string>& devices, const std::string& verdict = "FAIL") {
  Json tests = Json::array();
  tests.push_back({{"name", "stream"}, {"device", "gpu0"}, {"verdict", "PASS"}});
  for (const auto& d : devices)
    tests.push_back({{"name", "stream"}, {"device", d}, {"verdict", "FAIL"}});
  Json gpus = Json::array();
  for (int i = 0; i < 8; ++i) {
    gpus.push_back({{"index", i},
                    {"uuid", i == 3 ? kUuid3 : "GPU-" + std::to_string(i)},
                    {"pciBusId", "00000000:" + std::to_string(18 + i) + ":00.0"}});
  }
  return {{"verdict", verdict}, {"tests", tests}, {"identity", {{"gpus", gpus}}}};
}

// NVIDIA's GPU DRA driver's slice for `node`: devices gpu-0..gpu-7 with uuid and pciBusID
// attributes (PCI ids in the driver's lower-case, 4-digit-domain form).
Json Slice(const std::string& node, bool with_uuid = true) {
  Json devices = Json::array();
  for (int i = 0; i < 8; ++i) {
    Json attrs = {{"pciBusID", {{"string", "0000:" + std::to_string(18 + i) + ":00.0"}}}};
    if (with_uuid) attrs["uuid"] = {{"string", i == 3 ? kUuid3 : "GPU-" + std::to_string(i)}};
    devices.push_back({{"name", "gpu-" + std::to_string(i)}, {"attributes", attrs}});
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", node + "-gpu.nvidia.com"}}},
          {"spec",
           {{"driver", "gpu.nvidia.com"},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", devices}}}};
}

TEST(ConfinedGpuFailures, NamesTheFailingGpusWithTheirIdentity) {
  auto gpus = ConfinedGpuFailures(Report({"gpu3"}));
  ASSERT_EQ(gpus.size(), 1U);
  EXPECT_EQ(gpus[0].device, "gpu3");
  EXPECT_EQ(gpus[0].uuid, kUuid3);
  EXPECT_EQ(gpus[0].pci_bus_id, "00000000:21:00.0");
  EXPECT_EQ(ConfinedGpuFailures(Report({"gpu3", "gpu5", "gpu3"})).size(), 2U);
}

TEST(ConfinedGpuFailures, NodeWideFailuresAndOtherVerdictsConfineNothing) {
  EXPECT_TRUE(ConfinedGpuFailures(Report({"gpu3", "host"})).empty());  // host memory, NCCL
  EXPECT_TRUE(ConfinedGpuFailures(Report({"all"})).empty());
  EXPECT_TRUE(ConfinedGpuFailures(Report({"mlx5_0/1"})).empty());  // the fabric
  EXPECT_TRUE(ConfinedGpuFailures(Report({"gpu3"}, "ERROR")).empty());
  EXPECT_TRUE(ConfinedGpuFailures(Report({}, "FAIL")).empty());  // a FAIL no test explains
}

TEST(MatchDevices, ByUuidOrElseByPciBusIdOnTheNodeOnly) {
  const auto gpus = ConfinedGpuFailures(Report({"gpu3"}));
  auto m = MatchDevices(gpus, {Slice("node-1"), Slice("node-0")}, "node-0");
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->size(), 1U);
  EXPECT_EQ((*m)[0].device, "gpu-3");
  EXPECT_EQ((*m)[0].pool, "node-0");
  EXPECT_EQ((*m)[0].driver, "gpu.nvidia.com");
  EXPECT_EQ(DescribeDevices(*m), "gpu3=gpu.nvidia.com/node-0/gpu-3");
  // A driver that publishes no UUID: NVML's "00000000:21:00.0" is the driver's "0000:21:00.0".
  m = MatchDevices(gpus, {Slice("node-0", false)}, "node-0");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ((*m)[0].device, "gpu-3");
  // Not published on this node, or no slices: nothing to taint (the node is tainted instead).
  EXPECT_FALSE(MatchDevices(gpus, {Slice("node-1")}, "node-0").has_value());
  EXPECT_FALSE(MatchDevices(gpus, {}, "node-0").has_value());
}

class DeviceTaintsKubeSim : public ::testing::Test {
 protected:
  void SetUp() override {
    kubesim::Options o;
    o.nodes = 2;
    sim_ = std::make_unique<kubesim::KubeSim>(o);
    ASSERT_TRUE(sim_->Start().ok());
    auto config = kube::LoadKubeconfig(sim_->kubeconfigPath());
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto client = kube::NewClient(*config);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    taints_ = std::make_unique<DeviceTaints>(*client);
  }
  std::unique_ptr<kubesim::KubeSim> sim_;
  std::unique_ptr<DeviceTaints> taints_;
};

TEST_F(DeviceTaintsKubeSim, TaintsExactlyTheFailingDeviceAndAPassRemovesIt) {
  const auto gpus = ConfinedGpuFailures(Report({"gpu3"}));
  // No ResourceSlices: nothing found, the node is to be tainted as before.
  auto found = taints_->Find("node-0", gpus);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_FALSE(found->has_value());

  ASSERT_TRUE(sim_->Create("resource.k8s.io", "resourceslices", Slice("node-0")).ok());
  ASSERT_TRUE(sim_->Create("resource.k8s.io", "resourceslices", Slice("node-1")).ok());
  found = taints_->Find("node-0", gpus);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_TRUE(found->has_value());
  ASSERT_TRUE(taints_->Taint("nightly", "node-0", **found, "NoSchedule").ok());
  // Again (a retried reconcile): the rule is there already, no error.
  ASSERT_TRUE(taints_->Taint("nightly", "node-0", **found, "NoSchedule").ok());

  auto rules = sim_->List("resource.k8s.io", "devicetaintrules");
  ASSERT_EQ(rules.size(), 1U);
  const Json rule = rules[0];
  EXPECT_EQ(rule["apiVersion"], "resource.k8s.io/v1alpha3");
  EXPECT_EQ(rule["spec"]["deviceSelector"],
            Json({{"driver", "gpu.nvidia.com"}, {"pool", "node-0"}, {"device", "gpu-3"}}));
  EXPECT_EQ(rule["spec"]["taint"],
            Json({{"key", kFailedTaint}, {"value", "nightly"}, {"effect", "NoSchedule"}}));
  EXPECT_EQ(rule["metadata"]["labels"][kNodeLabel], "node-0");
  EXPECT_EQ(rule["metadata"]["labels"][kValidationLabel], "nightly");

  // Another node's PASS leaves it; this node's PASS deletes it.
  ASSERT_TRUE(taints_->Untaint("node-1").ok());
  EXPECT_EQ(sim_->List("resource.k8s.io", "devicetaintrules").size(), 1U);
  ASSERT_TRUE(taints_->Untaint("node-0").ok());
  EXPECT_TRUE(sim_->List("resource.k8s.io", "devicetaintrules").empty());
}

TEST(SetTaintedDevices, AFailNamesTheDevicesAndAPassRemovesThem) {
  Json node = {{"metadata", {{"name", "node-0"}}}};
  EXPECT_TRUE(
      SetTaintedDevices(&node, verdict::Verdict::kFail, "gpu3=gpu.nvidia.com/node-0/gpu-3", false));
  EXPECT_EQ(node["metadata"]["annotations"][kTaintedDevicesAnnotation],
            "gpu3=gpu.nvidia.com/node-0/gpu-3");
  EXPECT_FALSE(SetTaintedDevices(&node, verdict::Verdict::kFail, "", false));  // node-wide
  EXPECT_TRUE(SetTaintedDevices(&node, verdict::Verdict::kFail, "gpu5=d/p/gpu-5", true));
  EXPECT_EQ(node["metadata"]["annotations"][kDeviceTaintRehearsalAnnotation], "gpu5=d/p/gpu-5");
  EXPECT_TRUE(SetTaintedDevices(&node, verdict::Verdict::kPass, "", false));
  EXPECT_TRUE(node["metadata"]["annotations"].empty());
}

}  // namespace
}  // namespace perfgate::op
