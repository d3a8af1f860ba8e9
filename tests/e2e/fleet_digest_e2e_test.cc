// End-to-end fleet comparison of the consistency screen's digests (docs/diagnostics.md, "Silent
// data corruption"): the real operator against kube-sim in scale mode, whose kubelet writes for
// each pod the result a worker would. Every node passes its own screen (its 8 GPUs agree with
// each other), but node-2's GPUs all computed other bits than the three peers of its GPU model,
// driver and CUDA version: the operator's /metrics names node-2, and only node-2.
#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

constexpr const char* kPeerDigest = "0x3fd5c2a41b7e9d08";
constexpr const char* kOddDigest = "0x3fd5c2a41b7e9d09";  // one bit apart

class FleetDigestE2E : public ScaleModeE2E {
 protected:
  int Nodes() const override { return 4; }
  // The per-node series, where the fleet comparison shows.
  std::vector<std::string> OperatorFlags() const override { return {"--metrics-per-node"}; }

  Json Canned(const Json& pod) override {
    const std::string node = pod["spec"].value("nodeName", "");
    const std::string gemm = node == "node-2" ? kOddDigest : kPeerDigest;
    Json gpus = Json::array();
    for (int i = 0; i < 8; ++i) {
      gpus.push_back({{"index", i},
                      {"name", "NVIDIA H200"},
                      {"uuid", node + "-GPU-" + std::to_string(i)},
                      {"pciBusId", "00000000:" + std::to_string(18 + i) + ":00.0"}});
    }
    const Json test = {
        {"name", "consistency"},
        {"type", "consistency"},
        {"device", "node"},
        {"verdict", "PASS"},
        {"reason", "all 8 GPUs computed the same bits in 2 computations"},
        {"parameters", {{"gemmSize", "2048"}, {"seed", "1"}}},
        {"details", {{"digest.gemm-bf16", gemm}, {"digest.reduce-fp32", "0x0c77a1e0f2d4b391"}}}};
    return ResultOfPod(pod, "",
                       {{"verdict", "PASS"},
                        {"startTime", "2026-12-05T10:00:00Z"},
                        {"completionTime", "2026-12-05T10:02:00Z"},
                        {"tests", Json::array({test})},
                        {"identity",
                         {{"hostname", node},
                          {"driverVersion", "570.124.06"},
                          {"cudaVersion", "12.8"},
                          {"gpus", gpus}}}});
  }
};

TEST_F(FleetDigestE2E, TheFleetComparisonFlagsTheOneNodeWhoseDigestsDifferFromItsPeers) {
  Apply(SyntheticSpec("sdc", "", "    onFailure: none\n"));
  ASSERT_TRUE(WaitComplete("sdc", 60));
  EXPECT_EQ(Validation("sdc")["status"].value("passedNodes", ""), "4/4");
  const std::string flagged =
      "perfgate_node_digest_mismatch{node=\"node-2\",test=\"consistency\","
      "computation=\"gemm-bf16\"} 1";
  std::string metrics;
  ASSERT_TRUE(Eventually(
      [&] {
        metrics = Metrics(op_);
        return metrics.find(flagged) != std::string::npos;
      },
      30))
      << metrics;
  for (const char* peer : {"node-0", "node-1", "node-3"}) {
    EXPECT_EQ(metrics.find("perfgate_node_digest_mismatch{node=\"" + std::string(peer) + "\""),
              std::string::npos)
        << peer;
  }
  // The computation every node agrees on is not flagged anywhere.
  EXPECT_EQ(metrics.find("computation=\"reduce-fp32\""), std::string::npos);
}

}  // namespace
}  // namespace perfgate::e2e
