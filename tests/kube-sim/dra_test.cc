// kube-sim's Dynamic Resource Allocation objects against the real kubectl: discovery of
// resource.k8s.io with its stable (ResourceSlices) and alpha (DeviceTaintRules) versions, both
// cluster-scoped, and kube-apiserver's validation of the fields perfgate uses, in its words.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/kube-sim/kube_sim.h"
#include "tests/kube-sim/test_util.h"

namespace perfgate::kubesim {
namespace {

using ::testing::HasSubstr;
using testing::Kubectl;

class DraTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Options o;
    o.nodes = 1;
    sim_ = std::make_unique<KubeSim>(o);
    ASSERT_TRUE(sim_->Start().ok());
  }
  std::unique_ptr<KubeSim> sim_;
};

TEST_F(DraTest, DiscoveryServesBothVersionsPreferringTheStableOne) {
  auto r = Kubectl(*sim_, {"get", "--raw", "/apis/resource.k8s.io"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const Json group = Json::parse(r.out);
  ASSERT_EQ(group["versions"].size(), 2U) << r.out;
  EXPECT_EQ(group["versions"][0]["version"], "v1");
  EXPECT_EQ(group["versions"][1]["version"], "v1alpha3");
  EXPECT_EQ(group["preferredVersion"]["version"], "v1");

  r = Kubectl(*sim_, {"api-resources", "--api-group", "resource.k8s.io", "-o", "wide"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("resourceslices"));
  EXPECT_THAT(r.out, HasSubstr("resource.k8s.io/v1 "));
  EXPECT_THAT(r.out, HasSubstr("devicetaintrules"));
  EXPECT_THAT(r.out, HasSubstr("resource.k8s.io/v1alpha3"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("true")));  // neither is namespaced
}

TEST_F(DraTest, ValidSliceAndRuleAreStoredClusterScoped) {
  auto r = Kubectl(*sim_, {"apply", "-f", "-"}, R"(apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-0-gpu.nvidia.com
spec:
  driver: gpu.nvidia.com
  nodeName: node-0
  pool: {name: node-0, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-3
    attributes:
      uuid: {string: GPU-33333333-3333-3333-3333-333333333333}
---
apiVersion: resource.k8s.io/v1alpha3
kind: DeviceTaintRule
metadata:
  name: node-0-gpu-3
spec:
  deviceSelector: {driver: gpu.nvidia.com, pool: node-0, device: gpu-3}
  taint: {key: perfgate.io/failed, value: v1, effect: NoSchedule}
)");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto rule = sim_->Get("resource.k8s.io", "devicetaintrules", "", "node-0-gpu-3");
  ASSERT_TRUE(rule.ok()) << rule.status().ToString();
  EXPECT_EQ((*rule)["apiVersion"], "resource.k8s.io/v1alpha3");
  EXPECT_EQ((*rule)["metadata"]["generation"], 1);
  EXPECT_FALSE((*rule)["metadata"].contains("namespace"));
  r = Kubectl(*sim_, {"get", "resourceslices", "-o", "name"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "resourceslice.resource.k8s.io/node-0-gpu.nvidia.com\n");
}

TEST_F(DraTest, RuleWithoutKeyOrWithANodeOnlyEffectIsInvalid) {
  auto r = Kubectl(*sim_, {"create", "-f", "-"}, R"(apiVersion: resource.k8s.io/v1alpha3
kind: DeviceTaintRule
metadata: {name: bad}
spec:
  deviceSelector: {device: gpu-3}
  taint: {effect: PreferNoSchedule}
)");
  EXPECT_NE(r.exitCode, 0);
  // kubectl lists the causes of a 422, one a line.
  EXPECT_THAT(r.err, HasSubstr("The DeviceTaintRule \"bad\" is invalid: \n"
                               "* spec.taint.key: Required value\n"
                               "* spec.taint.effect: Unsupported value: \"PreferNoSchedule\": "
                               "supported values: \"NoExecute\", \"NoSchedule\"\n"));
  r = Kubectl(*sim_, {"create", "-f", "-"}, R"(apiVersion: resource.k8s.io/v1alpha3
kind: DeviceTaintRule
metadata: {name: bad}
spec:
  taint: {key: perfgate.io/failed}
)");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("is invalid: spec.taint.effect: Required value"));
  EXPECT_FALSE(sim_->Get("resource.k8s.io", "devicetaintrules", "", "bad").ok());
}

TEST_F(DraTest, SliceWithoutDriverPoolOrNodeIsInvalid) {
  auto r = Kubectl(*sim_, {"create", "-f", "-"}, R"(apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: bad}
spec:
  pool: {name: "", resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-0}]
)");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("The ResourceSlice \"bad\" is invalid: \n"
                               "* spec.driver: Required value\n"
                               "* spec.pool.name: Required value\n"
                               "* spec: Required value: exactly one of `nodeName`, `nodeSelector`, "
                               "`allNodes`, `perDeviceNodeSelection` is required\n"
                               "* spec.devices[1].name: Duplicate value: \"gpu-0\"\n"));
}

}  // namespace
}  // namespace perfgate::kubesim
