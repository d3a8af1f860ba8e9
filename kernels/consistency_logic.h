// The consistency screen's decision, apart from CUDA so unit tests run it: from every GPU's
// digests of every computation to the verdict (PASS, FAIL "silent data corruption suspected"
// naming the GPU, the computation and the first differing element, or ERROR when no strict
// majority says which output is right), the digests as the result's details, a host runner
// whose outputs carry planted bit flips, and the test with its runner factory injected.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/verdict.h"
#include "kernels/cuda/consistency.h"
#include "kernels/test.h"

namespace perfgate::kernels::consistency {

// The bits of elements [first, first + count) of computation `computation`'s output on GPU
// position `gpu` (ConsistencyRunner::ReadElements).
using ElementReader = std::function<Result<std::vector<std::uint64_t>>(
    int gpu, int computation, std::int64_t first, std::int64_t count)>;

// The screen's outcome over every computation.
struct Screen {
  verdict::Verdict verdict = verdict::Verdict::kError;
  std::string reason;
  // The GPUs (names) whose output differs from the strict majority's in some computation.
  std::vector<std::string> suspects;
  // Per computation: the strict majority's digest, absent where there is none.
  std::map<std::string, std::uint64_t> majority;
};

// The decision. `gpus` names each position ("gpu3"); `digests` holds each position's chunk
// digests per computation, in `computations` order. Per computation, the GPUs are grouped by
// their output's digest:
//   - one group: the GPUs agree;
//   - a group holding more than half of the GPUs (a strict majority): every GPU outside it is
//     a suspect, named with the first element where its output differs from the majority's
//     (found by comparing chunk digests, then reading that one chunk from both);
//   - no such group (4 vs 4, 1 vs 1 on two GPUs, three ways on five): the screen cannot tell
//     which output is right.
// FAIL when any computation has a suspect ("silent data corruption suspected: ..."); else
// ERROR when any has no strict majority (the reason says so); else PASS. One GPU has no peer
// to be compared with: SKIPPED, saying so. An error of `read` is returned as is.
Result<Screen> JudgeScreen(const std::vector<cuda::Computation>& computations,
                           const std::vector<std::string>& gpus,
                           const std::vector<cuda::GpuDigests>& digests, const ElementReader& read);

// An output's digest ("0x" and 16 hex digits) from its chunk digests.
std::string FormatDigest(std::uint64_t digest);
std::uint64_t OutputDigest(const std::vector<std::uint64_t>& chunks);

// The digests as the result's details: "digest.COMPUTATION" the strict majority's digest (the
// figure nodes of one GPU model, driver and CUDA version are compared by), and
// "digest.COMPUTATION.GPU" for each GPU whose digest differs from it (every GPU where there is
// no majority). A GPU not named has the majority's digest.
std::map<std::string, std::string> DigestDetails(const std::vector<cuda::Computation>& computations,
                                                 const std::vector<std::string>& gpus,
                                                 const std::vector<cuda::GpuDigests>& digests);

// A bit flipped in one GPU's output of one computation, for the host runner.
struct PlantedFlip {
  int gpu = 0;  // position
  int computation = 0;
  std::int64_t element = 0;
  int bit = 0;
};

// A ConsistencyRunner over host memory for unit tests: `gpus` GPUs computing `computations`
// (outputs filled from a fixed seed, the same on every GPU), with `flips` applied after each
// Run, digested as the device does (consistency_digest.h).
std::unique_ptr<cuda::ConsistencyRunner> MakeHostConsistencyRunner(
    int gpus, std::vector<cuda::Computation> computations, std::vector<PlantedFlip> flips);

using RunnerFactory = std::function<Result<std::unique_ptr<cuda::ConsistencyRunner>>(
    const cuda::ConsistencyConfig& config)>;

// The consistency Test over `factory` (the real one runs on the GPUs). `require_device` runs
// RequireCudaDevice on every target GPU first (off in unit tests).
std::unique_ptr<Test> MakeConsistencyTestWith(RunnerFactory factory, bool require_device);

}  // namespace perfgate::kernels::consistency
