// The transformer-layer formulas of training-step and decode-step, on a shape small enough to
// work by hand: h = 1024, sequence 1024 x micro-batch 2 (T = 2048 tokens), tensor-parallel 2,
// 2 layers.
#include "kernels/workloads/transformer.h"

#include <gtest/gtest.h>

namespace perfgate::kernels::workloads {
namespace {

TransformerShape Small() {
  TransformerShape s;
  s.hidden = 1024;
  s.sequence = 1024;
  s.micro_batch = 2;
  s.tensor_parallel = 2;
  s.layers = 2;
  return s;
}

TEST(Transformer, MatmulShapesFollowTheTensorParallelSplit) {
  // qkv 1024 -> 3 * 1024 / 2 = 1536; attnOut 512 -> 1024; mlpUp 1024 -> 2048; mlpDown 2048 -> 1024.
  const TrainingMatmuls mm = TrainingStepMatmuls(Small());
  ASSERT_EQ(mm.forward.size(), 8u);    // 4 per layer
  ASSERT_EQ(mm.backward.size(), 16u);  // dgrad + wgrad per forward matmul
  EXPECT_EQ(mm.forward[0].name, "layer0.qkv.forward");
  EXPECT_EQ(mm.forward[0].m, 1536);
  EXPECT_EQ(mm.forward[0].n, 2048);
  EXPECT_EQ(mm.forward[0].k, 1024);
  EXPECT_EQ(mm.forward[1].k, 512);  // attnOut reads this GPU's 512 of the 1024 features
  // Backward starts at the last layer's mlpDown: dgrad (in 2048 <- out 1024), then wgrad.
  EXPECT_EQ(mm.backward[0].name, "layer1.mlpDown.dgrad");
  EXPECT_EQ(mm.backward[0].m, 2048);
  EXPECT_EQ(mm.backward[0].k, 1024);
  EXPECT_EQ(mm.backward[1].name, "layer1.mlpDown.wgrad");
  EXPECT_TRUE(mm.backward[1].weight_gradient);
  EXPECT_EQ(mm.backward[1].m * mm.backward[1].n, 2048 * 1024);
  EXPECT_EQ(mm.backward[1].k, 2048);  // summed over the tokens
  EXPECT_EQ(mm.backward.back().name, "layer0.qkv.wgrad");
}

TEST(Transformer, FlopsAreTwentyFourTokensHiddenSquaredPerLayerForward) {
  // forward = 24 T h^2 / t per layer = 24 * 2048 * 1048576 / 2 = 25,769,803,776; 2 layers.
  const TrainingMatmuls mm = TrainingStepMatmuls(Small());
  EXPECT_DOUBLE_EQ(MatmulFlops(mm.forward), 2 * 25769803776.0);
  // Backward is twice the forward (dgrad and wgrad per matmul).
  EXPECT_DOUBLE_EQ(MatmulFlops(mm.backward), 4 * 25769803776.0);
  // Gradient: 12 h^2 / t per layer = 12 * 1048576 / 2 = 6,291,456; 2 layers.
  EXPECT_EQ(GradientElements(Small()), 12582912);
}

TEST(Transformer, BucketsBecomeReadyAsTheBackwardPassFillsThem) {
  const TrainingMatmuls mm = TrainingStepMatmuls(Small());
  // 1 Mi-element buckets: 12,582,912 / 1,048,576 = 12 whole buckets. Weight gradients in
  // backward order (index: elements, running total):
  //   1 mlpDown 2,097,152 (2 Mi) -> buckets 0, 1    3 mlpUp 2 Mi (4 Mi) -> 2, 3
  //   5 attnOut 524,288 (4.5 Mi) -> none            7 qkv 1,572,864 (6 Mi) -> 4, 5
  // and the same for layer 0 (indices 9..15): 6, 7 / 8, 9 / none / 10, 11.
  const Buckets b = PlanBuckets(mm.backward, 1 << 20);
  ASSERT_EQ(b.begin.size(), 12u);
  EXPECT_EQ(b.ready_after[0], std::vector<int>{});
  EXPECT_EQ(b.ready_after[1], (std::vector<int>{0, 1}));
  EXPECT_EQ(b.ready_after[3], (std::vector<int>{2, 3}));
  EXPECT_EQ(b.ready_after[5], std::vector<int>{});
  EXPECT_EQ(b.ready_after[7], (std::vector<int>{4, 5}));
  EXPECT_EQ(b.ready_after[15], (std::vector<int>{10, 11}));
  // 5,000,000-element buckets: [0, 5M) ready once 6 Mi are written (index 7), [5M, 10M) at
  // 10 Mi (index 11), and the short last one, 12,582,912 - 10M = 2,582,912, at the end.
  const Buckets odd = PlanBuckets(mm.backward, 5000000);
  ASSERT_EQ(odd.begin.size(), 3u);
  EXPECT_EQ(odd.count[2], 2582912);
  EXPECT_EQ(odd.ready_after[7], std::vector<int>{0});
  EXPECT_EQ(odd.ready_after[11], std::vector<int>{1});
  EXPECT_EQ(odd.ready_after[15], std::vector<int>{2});
  int total = 0;
  for (const auto& r : odd.ready_after) total += static_cast<int>(r.size());
  EXPECT_EQ(total, 3);  // each bucket is reduced exactly once
}

TEST(Transformer, TrainingWorkloadOverlapsOnlyTheBackwardPass) {
  const TrainingMatmuls mm = TrainingStepMatmuls(Small());
  const model::Workload w = TrainingWorkload(mm, GradientElements(Small()), 2, 8);
  ASSERT_EQ(w.phases.size(), 2u);
  EXPECT_FALSE(w.phases[0].overlaps_comm);
  EXPECT_TRUE(w.phases[1].overlaps_comm);
  EXPECT_DOUBLE_EQ(w.allreduce_bytes, 12582912.0 * 2);
  EXPECT_EQ(w.ranks, 8);
}

TEST(Transformer, DecodeStepBytesAndFlops) {
  // h = 1024, 2 layers, batch 4, 1000 cached tokens, 2-byte elements.
  DecodeShape d;
  d.hidden = 1024;
  d.layers = 2;
  d.batch = 4;
  d.kv_tokens = 1000;
  // weights 12 * 1048576 * 2 layers * 2 bytes = 50,331,648
  EXPECT_DOUBLE_EQ(DecodeWeightBytes(d, 2), 50331648.0);
  // K and V: 2 * 1024 * 1000 tokens * 4 sequences * 2 layers * 2 bytes = 32,768,000
  EXPECT_DOUBLE_EQ(DecodeKvBytes(d, 2), 32768000.0);
  // 2 * (2 * 4 * 12 * 1048576 + 4 * 4 * 1000 * 1024) = 2 * (100,663,296 + 16,384,000)
  EXPECT_DOUBLE_EQ(DecodeFlops(d), 234094592.0);
  // Both phases are memory-bound on any GPU: ~4.7 and ~0.5 FLOP per byte.
  const model::Prediction p = model::Predict(DecodeWorkload(d, 2), {500, 4000, 0});
  EXPECT_EQ(p.bound, model::PartClass::kMemory);
  EXPECT_NEAR(p.step_s, (50331648.0 + 32768000.0) / 4000e9, 1e-12);
}

}  // namespace
}  // namespace perfgate::kernels::workloads
