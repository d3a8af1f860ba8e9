// Synthetic fleets for the report tests: realistic H200 node reports (8 GPUs: HBM, GEMM, P2P,
// NCCL all-reduce sweep, health, host memory) with seeded noise, and nodes made to fail or lag.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/fleet.h"

namespace perfgate::testing {

enum class Quirk {
  kHealthy,
  kFailingHbm,   // gpu3's HBM triad far below its bound: the node FAILs
  kLaggingGemm,  // every GPU's bf16 GEMM 8% slow, still above its bound: PASS, but lagging
  kSlowP2pPair,  // gpu2 -> gpu5 at a third of the others: fails the worst-pair bound
};

// One node's report: `gpus` GPUs, figures drawn around H200 nominal values (CV about 1%).
v1alpha1::Report NodeReport(const std::string& node, int gpus, std::uint64_t seed, Quirk quirk);

// `nodes` nodes named node-000, node-001, ...; `failing` of them FAIL (alternately HBM and
// P2P) and `lagging` lag in GEMM. Deterministic for a seed.
std::vector<fleet::NodeReport> Fleet(int nodes, int failing, int lagging, std::uint64_t seed = 7);

}  // namespace perfgate::testing
