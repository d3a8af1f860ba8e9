// Device side of the consistency screen (kernels/consistency.cc): the same deterministic
// computations, on the same inputs, on every GPU of the node, each output reduced to chunk
// digests (consistency_digest.h) on its GPU and kept there, so that the host copies back only
// the elements it names. Standard types only; consistency.cu on CUDA, nocuda.cc without.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels::cuda {

// How an output's elements are read: their bits, in the low 32 bits of a word for kF32.
enum class ElementType { kF32, kF64 };

// One computation every GPU runs; its output is `rows` x `columns` elements, row-major
// (columns 1 for a vector).
struct Computation {
  std::string name;  // "gemm-bf16", "reduce-fp32", "transcendental-fp32"
  std::string description;
  ElementType type = ElementType::kF32;
  std::int64_t rows = 0;
  std::int64_t columns = 1;
  std::int64_t Elements() const { return rows * columns; }
};

// One GPU's outcome of one screen: per computation (in Computations() order) its output's
// chunk digests, and the GPU seconds all of the computations took.
struct GpuDigests {
  std::vector<std::vector<std::uint64_t>> chunks;
  double seconds = 0;
};

class ConsistencyRunner {
 public:
  virtual ~ConsistencyRunner() = default;
  // GPUs screened (positions 0..size()-1 of the devices given at creation).
  virtual int size() const = 0;
  virtual const std::vector<Computation>& Computations() const = 0;
  // Runs every computation on every GPU at once and returns each GPU's digests, by position.
  // The outputs stay on the GPUs until the next Run. Blocking; one thread at a time.
  virtual Result<std::vector<GpuDigests>> Run() = 0;
  // The bits of elements [first, first + count) of computation `computation`'s output on GPU
  // `gpu` (a position), as the last Run left them. Blocking.
  virtual Result<std::vector<std::uint64_t>> ReadElements(int gpu, int computation,
                                                          std::int64_t first,
                                                          std::int64_t count) = 0;
};

struct ConsistencyConfig {
  std::vector<int> devices;                // CUDA ordinals
  std::vector<std::string> gemm_dtypes;    // of "fp64", "fp32", "fp16", "bf16"
  std::int64_t gemm_size = 2048;           // square GEMMs, a multiple of 64
  std::int64_t vector_elements = 1 << 24;  // reduction and transcendental inputs, a multiple of
                                           // the digest chunk
  std::uint64_t seed = 1;
};

// The GEMM input types the screen knows, in the order it runs them.
inline const std::vector<std::string>& ConsistencyGemmDtypes() {
  static const std::vector<std::string> dtypes = {"fp64", "fp32", "fp16", "bf16"};
  return dtypes;
}

// The computations `config` runs, in order: one GEMM per dtype (gemm_size square, fp32 output
// but for fp64), a reduction (one fp32 sum per digest chunk of the input) and a
// transcendental-heavy map (one fp32 per input element).
inline std::vector<Computation> ConsistencyComputations(const ConsistencyConfig& config) {
  std::vector<Computation> out;
  for (const std::string& dtype : config.gemm_dtypes) {
    out.push_back({"gemm-" + dtype,
                   dtype + " GEMM, one thread (fp64, fp32) or one tensor-core tile (fp16, bf16) "
                           "per output element, k in order",
                   dtype == "fp64" ? ElementType::kF64 : ElementType::kF32, config.gemm_size,
                   config.gemm_size});
  }
  out.push_back({"reduce-fp32", "fp32 sum of each 4096 inputs, a fixed tree", ElementType::kF32,
                 config.vector_elements / 4096, 1});
  out.push_back({"transcendental-fp32",
                 "sin, cos, exp, log, tanh, pow, erf and their fast (SFU) forms per input",
                 ElementType::kF32, config.vector_elements, 1});
  return out;
}

// Unavailable("no CUDA device: ...") when any ordinal is missing. Blocking.
Result<std::unique_ptr<ConsistencyRunner>> CreateConsistencyRunner(const ConsistencyConfig& config);

}  // namespace perfgate::kernels::cuda
