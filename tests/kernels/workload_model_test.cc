// The speed-of-light model on hand-worked cases: each case writes its arithmetic out, so a
// reader can check the expected figures without running anything.
#include "kernels/workloads/workload_model.h"

#include <gtest/gtest.h>

namespace perfgate::kernels::model {
namespace {

constexpr double kMs = 1e-3;
constexpr double kTol = 1e-9;

// A data-parallel training step on 8 GPUs: forward 1 TFLOP (and 2 GB of HBM traffic), backward
// 2 TFLOP overlapping a 1 GB gradient all-reduce.
Workload TrainingStep() {
  Workload w;
  w.phases = {{"forward", 1e12, 2e9, false}, {"backward", 2e12, 4e9, true}};
  w.allreduce_bytes = 1e9;
  w.ranks = 8;
  return w;
}

TEST(WorkloadModel, AllReduceTimeIsNcclTestsBusBandwidthFormula) {
  // 2 (n-1)/n * bytes / bus = 2 * 7/8 * 1e9 / 100e9 = 17.5 ms.
  EXPECT_NEAR(AllReduceSeconds(1e9, 8, 100), 17.5 * kMs, kTol);
  // One rank reduces nothing.
  EXPECT_EQ(AllReduceSeconds(1e9, 1, 100), 0);
}

TEST(WorkloadModel, ComputeBoundStepHidesCommunicationBehindBackward) {
  // F = 100 TFLOP/s, B = 2000 GB/s, bus = 100 GB/s.
  // forward: max(1e12/1e14, 2e9/2e12) = max(10 ms, 1 ms) = 10 ms, compute.
  // backward: max(20 ms, 2 ms) = 20 ms, compute, the window.
  // comm: 17.5 ms (above). step = (30 - 20) + max(20, 17.5) = 30 ms.
  const Prediction p = Predict(TrainingStep(), {100, 2000, 100});
  EXPECT_NEAR(p.parts.compute_s, 30 * kMs, kTol);
  EXPECT_NEAR(p.parts.memory_s, 0, kTol);
  EXPECT_NEAR(p.parts.comm_s, 17.5 * kMs, kTol);
  EXPECT_NEAR(p.parts.window_s, 20 * kMs, kTol);
  EXPECT_NEAR(p.step_s, 30 * kMs, kTol);
  EXPECT_EQ(p.bound, PartClass::kCompute);
}

TEST(WorkloadModel, StepThatOverlapsBadlyIsBlamedOnLostOverlap) {
  // Predicted 30 ms as above. Measured: step 36 ms, GEMMs alone 32 ms, all-reduce alone 20 ms.
  // efficiency = 30 / 36 = 0.8333 (< 0.9: the largest gap names the bottleneck).
  // compute: 32 ms with the window keeping its 20/30 share: 21.333 ms;
  //   step = (32 - 21.333) + max(21.333, 17.5) = 32 ms -> compute gap 2 ms.
  // memory not measured alone -> 0. comm 20 ms: 10.667 + max(21.333, 20) = 32 -> 0 ms.
  // lost overlap = 36 - 32 = 4 ms: the parts allow 32 ms, the composition took 36.
  Measured m;
  m.step_s = 36 * kMs;
  m.compute_s = 32 * kMs;
  m.comm_s = 20 * kMs;
  const Assessment a = Assess(TrainingStep(), {100, 2000, 100}, m);
  EXPECT_NEAR(a.efficiency, 30.0 / 36.0, kTol);
  EXPECT_NEAR(a.compute_gap_s, 2 * kMs, kTol);
  EXPECT_NEAR(a.memory_gap_s, 0, kTol);
  EXPECT_NEAR(a.comm_gap_s, 0, kTol);
  EXPECT_NEAR(a.lost_overlap_s, 4 * kMs, kTol);
  EXPECT_EQ(a.bottleneck, PartClass::kLostOverlap);
  // The four gaps add up to measured - predicted.
  EXPECT_NEAR(a.compute_gap_s + a.memory_gap_s + a.comm_gap_s + a.lost_overlap_s, 6 * kMs, kTol);
  EXPECT_NE(a.Summary().find("bottleneck lost overlap"), std::string::npos) << a.Summary();
}

TEST(WorkloadModel, SlowInterconnectMakesTheStepCommunicationBound) {
  // bus = 20 GB/s: comm = 1.75 * 1e9 / 20e9 = 87.5 ms; step = 10 + max(20, 87.5) = 97.5 ms.
  // Critical path: compute 30 ms, memory 0, exposed comm 87.5 - 20 = 67.5 ms -> communication.
  // Measured step 100 ms with the all-reduce alone at 90 ms: efficiency 0.975 (>= 0.9, so the
  // bottleneck is the bound); comm gap = (10 + 90) - 97.5 = 2.5 ms, nothing lost.
  Measured m;
  m.step_s = 100 * kMs;
  m.compute_s = 30 * kMs;
  m.comm_s = 90 * kMs;
  const Assessment a = Assess(TrainingStep(), {100, 2000, 20}, m);
  EXPECT_NEAR(a.prediction.step_s, 97.5 * kMs, kTol);
  EXPECT_EQ(a.prediction.bound, PartClass::kCommunication);
  EXPECT_NEAR(a.efficiency, 0.975, kTol);
  EXPECT_NEAR(a.compute_gap_s, 0, kTol);
  EXPECT_NEAR(a.comm_gap_s, 2.5 * kMs, kTol);
  EXPECT_NEAR(a.lost_overlap_s, 0, kTol);
  EXPECT_EQ(a.bottleneck, PartClass::kCommunication);
}

TEST(WorkloadModel, DecodeStepIsMemoryBound) {
  // One phase: 2 GFLOP over 4 GB of weights and KV cache, one GPU.
  // compute 2e9 / 1e14 = 0.02 ms < memory 4e9 / 2e12 = 2 ms -> memory, step 2 ms.
  // Measured 4 ms (all of it memory): efficiency 0.5, memory gap 2 ms -> bottleneck memory.
  Workload w;
  w.phases = {{"decode", 2e9, 4e9, false}};
  Measured m;
  m.step_s = 4 * kMs;
  m.memory_s = 4 * kMs;
  const Assessment a = Assess(w, {100, 2000, 0}, m);
  EXPECT_NEAR(a.prediction.parts.compute_s, 0, kTol);
  EXPECT_NEAR(a.prediction.parts.memory_s, 2 * kMs, kTol);
  EXPECT_EQ(a.prediction.bound, PartClass::kMemory);
  EXPECT_NEAR(a.efficiency, 0.5, kTol);
  EXPECT_NEAR(a.memory_gap_s, 2 * kMs, kTol);
  EXPECT_NEAR(a.lost_overlap_s, 0, kTol);
  EXPECT_EQ(a.bottleneck, PartClass::kMemory);
}

TEST(WorkloadModel, FasterThanTheFiguresGivesEfficiencyAboveOneAndNegativeGap) {
  // Same decode step measured at 1.6 ms: efficiency 2 / 1.6 = 1.25, memory gap -0.4 ms: the
  // part figures understate this node (e.g. a profile's expected bandwidth below its own).
  Workload w;
  w.phases = {{"decode", 2e9, 4e9, false}};
  Measured m;
  m.step_s = 1.6 * kMs;
  m.memory_s = 1.6 * kMs;
  const Assessment a = Assess(w, {100, 2000, 0}, m);
  EXPECT_NEAR(a.efficiency, 1.25, kTol);
  EXPECT_NEAR(a.memory_gap_s, -0.4 * kMs, kTol);
  EXPECT_EQ(a.bottleneck, PartClass::kMemory);
}

TEST(WorkloadModel, UnmeasuredPartsCarryNoGapAndTheRestIsLostOverlap) {
  // Only the step was measured (33 ms against 30 ms predicted): every part is taken at its
  // prediction, so the whole 3 ms is lost overlap; efficiency 30/33 = 0.909 >= 0.9, so the
  // bottleneck is still the bound, compute.
  Measured m;
  m.step_s = 33 * kMs;
  const Assessment a = Assess(TrainingStep(), {100, 2000, 100}, m);
  EXPECT_NEAR(a.compute_gap_s + a.memory_gap_s + a.comm_gap_s, 0, kTol);
  EXPECT_NEAR(a.lost_overlap_s, 3 * kMs, kTol);
  EXPECT_EQ(a.bottleneck, PartClass::kCompute);
}

TEST(WorkloadModel, ComposeStepNeverOverlapsMoreThanTheGpuTime) {
  // A window larger than the GPU time is clamped: gpu 5 ms, window "8 ms", comm 6 ms
  // -> (5 - 5) + max(5, 6) = 6 ms.
  EXPECT_NEAR(ComposeStep({5 * kMs, 0, 6 * kMs, 8 * kMs}), 6 * kMs, kTol);
  // No communication: the GPU time.
  EXPECT_NEAR(ComposeStep({3 * kMs, 2 * kMs, 0, 4 * kMs}), 5 * kMs, kTol);
}

TEST(WorkloadModel, OverlapShareIsTheHiddenShareOfCommunication) {
  // compute 30 ms, comm alone 20 ms, step 36 ms: 30 + 20 - 36 = 14 ms of the 20 hidden: 0.7.
  EXPECT_NEAR(OverlapShare(30 * kMs, 20 * kMs, 36 * kMs), 0.7, kTol);
  // Back to back (50 ms): nothing hidden; as long as compute alone (30 ms): all of it.
  EXPECT_NEAR(OverlapShare(30 * kMs, 20 * kMs, 50 * kMs), 0, kTol);
  EXPECT_NEAR(OverlapShare(30 * kMs, 20 * kMs, 30 * kMs), 1, kTol);
  // Noise past either end is clamped; no communication hides nothing.
  EXPECT_EQ(OverlapShare(30 * kMs, 20 * kMs, 52 * kMs), 0);
  EXPECT_EQ(OverlapShare(30 * kMs, 20 * kMs, 29 * kMs), 1);
  EXPECT_EQ(OverlapShare(30 * kMs, 0, 30 * kMs), 0);
}

}  // namespace
}  // namespace perfgate::kernels::model
