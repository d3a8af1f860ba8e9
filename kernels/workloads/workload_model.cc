#include "kernels/workloads/workload_model.h"

#include <algorithm>
#include <array>
#include <cstdio>

namespace perfgate::kernels::model {

std::string_view PartClassName(PartClass part) {
  switch (part) {
    case PartClass::kCompute:
      return "compute";
    case PartClass::kMemory:
      return "memory";
    case PartClass::kCommunication:
      return "communication";
    case PartClass::kLostOverlap:
      return "lost overlap";
  }
  return "unknown";
}

double ComposeStep(const PartSeconds& parts) {
  const double gpu = parts.compute_s + parts.memory_s;
  const double window = std::clamp(parts.window_s, 0.0, gpu);
  return (gpu - window) + std::max(window, parts.comm_s);
}

double AllReduceSeconds(double bytes, int ranks, double bus_gbps) {
  if (ranks <= 1 || bytes <= 0) return 0;
  if (!(bus_gbps > 0)) return 0;
  const double n = ranks;
  return 2.0 * (n - 1.0) / n * bytes / (bus_gbps * 1e9);
}

double OverlapShare(double compute_s, double comm_s, double step_s) {
  if (!(comm_s > 0)) return 0;
  return std::clamp((compute_s + comm_s - step_s) / comm_s, 0.0, 1.0);
}

namespace {

// The index of the largest value; the first on ties.
template <std::size_t N>
std::size_t Largest(const std::array<double, N>& values) {
  return static_cast<std::size_t>(std::max_element(values.begin(), values.end()) - values.begin());
}

// The window after the GPU parts change from `from` to `to`: the overlappable phases keep
// their share of the GPU time.
double ScaledWindow(const PartSeconds& from, double compute_s, double memory_s) {
  const double gpu = from.compute_s + from.memory_s;
  if (gpu <= 0) return 0;
  return from.window_s / gpu * (compute_s + memory_s);
}

}  // namespace

Prediction Predict(const Workload& workload, const NodeFigures& node) {
  Prediction p;
  const double flops_per_s = node.matmul_tflops * 1e12;
  const double bytes_per_s = node.hbm_gbps * 1e9;
  for (const Phase& phase : workload.phases) {
    const double compute = flops_per_s > 0 ? phase.flops / flops_per_s : 0;
    const double memory = bytes_per_s > 0 ? phase.bytes / bytes_per_s : 0;
    const double seconds = std::max(compute, memory);
    (compute >= memory ? p.parts.compute_s : p.parts.memory_s) += seconds;
    if (phase.overlaps_comm) p.parts.window_s += seconds;
  }
  p.parts.comm_s = AllReduceSeconds(workload.allreduce_bytes, workload.ranks, node.bus_gbps);
  p.step_s = ComposeStep(p.parts);
  const double exposed_comm = std::max(0.0, p.parts.comm_s - p.parts.window_s);
  const std::array<double, 3> critical = {p.parts.compute_s, p.parts.memory_s, exposed_comm};
  constexpr std::array<PartClass, 3> kClasses = {PartClass::kCompute, PartClass::kMemory,
                                                 PartClass::kCommunication};
  p.bound = kClasses[Largest(critical)];
  return p;
}

Assessment Assess(const Workload& workload, const NodeFigures& node, const Measured& measured) {
  Assessment a;
  a.prediction = Predict(workload, node);
  const PartSeconds& pred = a.prediction.parts;
  a.efficiency = measured.step_s > 0 ? a.prediction.step_s / measured.step_s : 0;

  const double compute = measured.compute_s >= 0 ? measured.compute_s : pred.compute_s;
  const double memory = measured.memory_s >= 0 ? measured.memory_s : pred.memory_s;
  const double comm = measured.comm_s >= 0 ? measured.comm_s : pred.comm_s;
  PartSeconds step1 = pred;  // measured compute
  step1.compute_s = compute;
  step1.window_s = ScaledWindow(pred, step1.compute_s, step1.memory_s);
  PartSeconds step2 = step1;  // and measured memory
  step2.memory_s = memory;
  step2.window_s = ScaledWindow(pred, step2.compute_s, step2.memory_s);
  PartSeconds step3 = step2;  // and measured communication
  step3.comm_s = comm;
  a.compute_gap_s = ComposeStep(step1) - a.prediction.step_s;
  a.memory_gap_s = ComposeStep(step2) - ComposeStep(step1);
  a.comm_gap_s = ComposeStep(step3) - ComposeStep(step2);
  a.lost_overlap_s = measured.step_s - ComposeStep(step3);

  if (a.efficiency >= kAtSpeedOfLight) {
    a.bottleneck = a.prediction.bound;
  } else {
    const std::array<double, 4> gaps = {a.compute_gap_s, a.memory_gap_s, a.comm_gap_s,
                                        a.lost_overlap_s};
    constexpr std::array<PartClass, 4> kClasses = {PartClass::kCompute, PartClass::kMemory,
                                                   PartClass::kCommunication,
                                                   PartClass::kLostOverlap};
    a.bottleneck = kClasses[Largest(gaps)];
  }
  return a;
}

std::string Assessment::Summary() const {
  const PartSeconds& p = prediction.parts;
  const double measured_s = efficiency > 0 ? prediction.step_s / efficiency : 0;
  char buffer[512];
  std::snprintf(buffer, sizeof(buffer),
                "predicted %.3f ms (compute %.3f, memory %.3f, communication %.3f, bound %s), "
                "measured %.3f ms, efficiency %.3f, bottleneck %s; gap %.3f ms: compute %.3f, "
                "memory %.3f, communication %.3f, lost overlap %.3f",
                prediction.step_s * 1e3, p.compute_s * 1e3, p.memory_s * 1e3, p.comm_s * 1e3,
                std::string(PartClassName(prediction.bound)).c_str(), measured_s * 1e3, efficiency,
                std::string(PartClassName(bottleneck)).c_str(),
                (measured_s - prediction.step_s) * 1e3, compute_gap_s * 1e3, memory_gap_s * 1e3,
                comm_gap_s * 1e3, lost_overlap_s * 1e3);
  return buffer;
}

}  // namespace perfgate::kernels::model
