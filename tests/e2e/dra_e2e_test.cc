// End-to-end per-GPU quarantine through DRA (docs/operator.md, "Per-GPU quarantine"): the real
// operator against kube-sim, whose kubelet runs no worker (scale mode) but writes for each pod
// the result a worker would: node-0's GPU 3 fails, or every node passes. With ResourceSlices
// publishing the node's GPUs, GPU 3 alone gets a DeviceTaintRule and the node keeps serving;
// a later passing run removes the rule. Without them the node is tainted as before.
#include <atomic>

#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

const char* kUuid3 = "GPU-33333333-aaaa-bbbb-cccc-333333333333";

std::string Uuid(int gpu) { return gpu == 3 ? kUuid3 : "GPU-0000000" + std::to_string(gpu); }

// What a worker on `node` would write: a report with one test per GPU and the GPUs' identity.
Json CannedResult(const Json& pod, bool gpu3_fails) {
  const std::string node = pod["spec"].value("nodeName", "");
  const bool fail = gpu3_fails && node == "node-0";
  Json tests = Json::array();
  Json gpus = Json::array();
  for (int i = 0; i < 8; ++i) {
    const bool bad = fail && i == 3;
    tests.push_back({{"name", "synthetic"},
                     {"type", "synthetic"},
                     {"device", "gpu" + std::to_string(i)},
                     {"verdict", bad ? "FAIL" : "PASS"},
                     {"reason", bad ? "bandwidthGBps median 41.0 < 90" : ""}});
    gpus.push_back({{"index", i},
                    {"uuid", Uuid(i)},
                    {"pciBusId", "00000000:" + std::to_string(18 + i) + ":00.0"}});
  }
  return ResultOfPod(pod, fail ? "synthetic [gpu3] bandwidthGBps median 41.0 (>= 90.00)" : "",
                     {{"verdict", fail ? "FAIL" : "PASS"},
                      {"reason", fail ? "synthetic [gpu3]: bandwidthGBps median 41.0 < 90" : ""},
                      {"tests", tests},
                      {"identity", {{"hostname", node}, {"gpus", gpus}}}});
}

// NVIDIA's GPU DRA driver's ResourceSlice of `node`: gpu-0..gpu-7 with their UUIDs.
Json Slice(const std::string& node) {
  Json devices = Json::array();
  for (int i = 0; i < 8; ++i) {
    devices.push_back({{"name", "gpu-" + std::to_string(i)},
                       {"attributes",
                        {{"type", {{"string", "gpu"}}},
                         {"uuid", {{"string", Uuid(i)}}},
                         {"pciBusID", {{"string", "0000:" + std::to_string(18 + i) + ":00.0"}}}}}});
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", node + "-gpu.nvidia.com-abcde"}}},
          {"spec",
           {{"driver", "gpu.nvidia.com"},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", devices}}}};
}

class DraE2E : public ScaleModeE2E {
 protected:
  Json Canned(const Json& pod) override { return CannedResult(pod, gpu3_fails_.load()); }

  std::vector<Json> Rules() { return sim_->List("resource.k8s.io", "devicetaintrules"); }
  static std::string Annotation(const Json& node, const std::string& key) {
    return node["metadata"].value("annotations", Json::object()).value(key, "");
  }
  // Reruns `name` and waits for its new run to finish.
  void Rerun(const std::string& name) {
    const std::string before = Validation(name)["status"].value("run", "");
    auto r = Kubectl(*sim_, {"annotate", "--overwrite", "pval", name, "perfgate.io/rerun=2"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    ASSERT_TRUE(Eventually(
        [&] {
          const Json v = Validation(name);
          return v["status"].value("run", "") != before &&
                 !v["status"].value("completionTime", "").empty();
        },
        60));
  }

  std::atomic<bool> gpu3_fails_{true};
};

const std::string kPolicy = "    onFailure: taint\n    deviceTaint: NoSchedule\n";

TEST_F(DraE2E, OneFailingGpuIsTaintedAloneAndAPassRemovesItsRule) {
  ASSERT_TRUE(sim_->Create("resource.k8s.io", "resourceslices", Slice("node-0")).ok());
  ASSERT_TRUE(sim_->Create("resource.k8s.io", "resourceslices", Slice("node-1")).ok());
  Apply(SyntheticSpec("dra", "", kPolicy));
  ASSERT_TRUE(WaitComplete("dra", 60));

  const std::vector<Json> rules = Rules();
  ASSERT_EQ(rules.size(), 1U);
  EXPECT_EQ(rules[0]["spec"]["deviceSelector"],
            Json({{"driver", "gpu.nvidia.com"}, {"pool", "node-0"}, {"device", "gpu-3"}}));
  EXPECT_EQ(rules[0]["spec"]["taint"]["effect"], "NoSchedule");
  EXPECT_EQ(rules[0]["metadata"]["labels"]["perfgate.io/node"], "node-0");
  const Json node = Node("node-0");
  EXPECT_EQ(VerdictLabel(node), "failed");
  EXPECT_FALSE(HasPerfgateTaint(node)) << node.dump(2);
  EXPECT_FALSE(node["spec"].value("unschedulable", false));
  EXPECT_EQ(Annotation(node, "perfgate.io/tainted-devices"), "gpu3=gpu.nvidia.com/node-0/gpu-3");
  EXPECT_EQ(VerdictLabel(Node("node-1")), "passed");
  const Json failing = Validation("dra")["status"].value("failingNodes", Json::array());
  ASSERT_EQ(failing.size(), 1U);
  EXPECT_EQ(failing[0].value("node", ""), "node-0");
  EXPECT_EQ(failing[0].value("taintedDevices", ""), "gpu3=gpu.nvidia.com/node-0/gpu-3");

  gpu3_fails_ = false;
  Rerun("dra");
  ASSERT_TRUE(Eventually([&] { return Rules().empty(); }, 30));
  const Json passed = Node("node-0");
  EXPECT_EQ(VerdictLabel(passed), "passed");
  EXPECT_EQ(Annotation(passed, "perfgate.io/tainted-devices"), "");
}

TEST_F(DraE2E, WithoutResourceSlicesTheNodeIsTaintedAsBefore) {
  Apply(SyntheticSpec("nodra", "", kPolicy));
  ASSERT_TRUE(WaitComplete("nodra", 60));
  EXPECT_TRUE(Rules().empty());
  const Json node = Node("node-0");
  EXPECT_EQ(VerdictLabel(node), "failed");
  EXPECT_TRUE(HasPerfgateTaint(node)) << node.dump(2);
  EXPECT_EQ(Annotation(node, "perfgate.io/tainted-devices"), "");
  const Json failing = Validation("nodra")["status"].value("failingNodes", Json::array());
  ASSERT_EQ(failing.size(), 1U);
  EXPECT_FALSE(failing[0].contains("taintedDevices"));
}

TEST_F(DraE2E, NoneRehearsesNamingTheDevicesAndTaintingNothing) {
  ASSERT_TRUE(sim_->Create("resource.k8s.io", "resourceslices", Slice("node-0")).ok());
  Apply(SyntheticSpec("rehearse", "", "    onFailure: taint\n    deviceTaint: None\n"));
  ASSERT_TRUE(WaitComplete("rehearse", 60));
  EXPECT_TRUE(Rules().empty());
  const Json node = Node("node-0");
  EXPECT_FALSE(HasPerfgateTaint(node)) << node.dump(2);
  EXPECT_EQ(Annotation(node, "perfgate.io/device-taint-rehearsal"),
            "gpu3=gpu.nvidia.com/node-0/gpu-3");
  const Json failing = Validation("rehearse")["status"].value("failingNodes", Json::array());
  ASSERT_EQ(failing.size(), 1U);
  EXPECT_EQ(failing[0].value("deviceTaintRehearsal", ""), "gpu3=gpu.nvidia.com/node-0/gpu-3");
  EXPECT_FALSE(failing[0].contains("taintedDevices"));
}

}  // namespace
}  // namespace perfgate::e2e
