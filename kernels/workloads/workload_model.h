// The speed-of-light model of a workload step: from the node's own part figures (matmul
// TFLOP/s at the workload's dtype, HBM bandwidth, NCCL all-reduce bus bandwidth at the bucket
// size) it predicts the best step time a workload could reach on this node, and compares it
// with what the workload measured: efficiency (predicted / measured), the gap each part
// explains, and the bottleneck class. Pure functions on standard types, unit tested on the
// host; docs/kernels.md ("speed of light") writes the same formulas out.
//
// A step is a list of phases (one GEMM, one read of the weights ...), each with the FLOPs it
// computes and the HBM bytes it moves. A phase takes max(flops / F, bytes / B) (roofline: it
// waits for whichever unit it needs longest), and counts as compute or memory by which term
// is larger. The gradient all-reduce (communication) can only run while the phases marked
// `overlaps_comm` run (a data-parallel step cannot reduce gradients the backward pass has not
// produced yet), so
//   step = (gpu - window) + max(window, comm)
// with gpu = compute + memory, window = the overlappable phases' time, and
//   comm = 2 (n - 1) / n * bytes / busBandwidth     (nccl-tests' all-reduce bus bandwidth)
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace perfgate::kernels::model {

enum class PartClass { kCompute, kMemory, kCommunication, kLostOverlap };
// "compute", "memory", "communication", "lost overlap".
std::string_view PartClassName(PartClass part);

// The node's part figures, measured in the same run or expected by the profile.
struct NodeFigures {
  double matmul_tflops = 0;  // dense matmul TFLOP/s at the workload's dtype (> 0)
  double hbm_gbps = 0;       // HBM bandwidth, 1 GB = 1e9 bytes (> 0)
  double bus_gbps = 0;       // NCCL all-reduce bus bandwidth at the bucket size (> 0 if ranks > 1)
};

struct Phase {
  std::string name;
  double flops = 0;
  double bytes = 0;            // HBM bytes read and written
  bool overlaps_comm = false;  // communication may run while this phase runs
};

struct Workload {
  std::vector<Phase> phases;
  double allreduce_bytes = 0;  // bytes each rank all-reduces per step
  int ranks = 1;               // data-parallel ranks taking part in the all-reduce
};

// Seconds per part of one step. `window_s` is the share of compute + memory during which
// communication can run.
struct PartSeconds {
  double compute_s = 0;
  double memory_s = 0;
  double comm_s = 0;
  double window_s = 0;
};

// Time of a step whose parts take `parts`, with communication overlapped as far as the window
// allows: (compute + memory - window) + max(window, comm).
double ComposeStep(const PartSeconds& parts);

// All-reduce seconds of `bytes` over `ranks` ranks at `bus_gbps`: 2(n-1)/n * bytes / bus;
// 0 for one rank.
double AllReduceSeconds(double bytes, int ranks, double bus_gbps);

struct Prediction {
  PartSeconds parts;
  double step_s = 0;  // ComposeStep(parts): the speed of light
  // What sets the speed of light: compute, memory or communication (exposed comm beyond the
  // window), the largest of the three on the step's critical path.
  PartClass bound = PartClass::kCompute;
};
Prediction Predict(const Workload& workload, const NodeFigures& node);

// What the workload measured: the whole step, and each part run alone where the test ran it
// alone (a part it did not run alone is taken at its predicted time: no gap is blamed on it).
struct Measured {
  double step_s = 0;
  double compute_s = -1;  // < 0: not measured
  double memory_s = -1;
  double comm_s = -1;
};

// The share of communication hidden behind compute: (compute + comm - step) / comm, clamped
// to [0, 1] (timing noise can put a step a little outside [max(compute, comm), compute +
// comm]). 0 when there was no communication.
double OverlapShare(double compute_s, double comm_s, double step_s);

// At or above this efficiency the workload runs at the node's speed of light, and its
// bottleneck is what bounds the prediction rather than the largest (small) gap.
inline constexpr double kAtSpeedOfLight = 0.9;

struct Assessment {
  Prediction prediction;
  double efficiency = 0;  // predicted / measured step time
  // measured - predicted, split so the four add up exactly (sequential attribution: replace
  // the predicted compute by the measured, then memory, then communication, each time the
  // change of ComposeStep; what remains is lost overlap: the composition did worse than its
  // parts allow). A negative gap means the part did better than the figures predicted.
  double compute_gap_s = 0;
  double memory_gap_s = 0;
  double comm_gap_s = 0;
  double lost_overlap_s = 0;
  PartClass bottleneck = PartClass::kCompute;
  // "predicted 10.00 ms (compute 8.00, memory 0.00, communication 4.00, bound compute),
  //  measured 12.50 ms, efficiency 0.80, bottleneck lost overlap; gap 2.50 ms: ..."
  std::string Summary() const;
};
Assessment Assess(const Workload& workload, const NodeFigures& node, const Measured& measured);

}  // namespace perfgate::kernels::model
