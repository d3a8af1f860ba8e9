// Synthetic fleets for the report tests: realistic H200 node reports (8 GPUs: HBM, GEMM, P2P,
// NCCL all-reduce sweep, health, host memory) with seeded noise, and nodes made to fail or lag.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/fleet.h"

namespace perfgate::testing {

enum class Quirk {
  kHealthy,
  kFailingHbm,   // gpu3's HBM triad far below its bound: the node FAILs
  kLaggingGemm,  // every GPU's bf16 GEMM 8% slow, still above its bound: PASS, but lagging
  kSlowP2pPair,  // gpu2 -> gpu5 at a third of the others: fails the worst-pair bound
};

// What a node ran with, for comparisons: its software and how fast its HBM is.
struct NodeSetup {
  std::string driver = "570.124.06";
  std::string kernel = "6.8.0-49-generic";
  double hbm_factor = 1;  // HBM figures times this
  // Seeds the node's own speed (the same machine measured twice keeps it); 0: `seed`.
  std::uint64_t node_seed = 0;
};

// One node's report: `gpus` GPUs, figures drawn around H200 nominal values (CV about 1%).
v1alpha1::Report NodeReport(const std::string& node, int gpus, std::uint64_t seed, Quirk quirk,
                            const NodeSetup& setup = {});

// `nodes` nodes named node-000, node-001, ...; `failing` of them FAIL (alternately HBM and
// P2P) and `lagging` lag in GEMM. Deterministic for a seed.
std::vector<fleet::NodeReport> Fleet(int nodes, int failing, int lagging, std::uint64_t seed = 7);

// The same `nodes` nodes (node-000, ...) measured twice with fresh noise: in B the first
// `upgraded` nodes run driver 575.51.03 with HBM figures `hbm_factor` of A's, and the last
// `new_kernel` nodes run kernel 6.8.0-52-generic, which changes nothing. Everything else is
// equal within noise.
struct AbPair {
  std::vector<fleet::NodeReport> a, b;
};
AbPair DriverUpgrade(int nodes, int upgraded, int new_kernel, double hbm_factor,
                     std::uint64_t seed = 11);

// Three clusters of `nodes` nodes each (east-000.., west-000.., central-000..): east on driver
// 570.124.06 and kernel 6.8.0-49, west on the same driver and kernel 6.8.0-52, central on
// driver 575.51.03 and kernel 6.8.0-52 with HBM figures `hbm_factor` of the others'.
std::vector<fleet::NodeReport> ThreeClusters(int nodes, double hbm_factor, std::uint64_t seed = 13);

}  // namespace perfgate::testing
