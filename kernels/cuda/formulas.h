// Host-side arithmetic of the GPU tests: bytes moved, FLOPs, expected values and the checks
// that turn a wrong answer into a failure. Pure functions, unit tested without a GPU; the
// formulas are also written out in docs/kernels.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels::gpu {

// ---- hbm-stream ------------------------------------------------------------------------------
enum class StreamOp { kCopy, kScale, kAdd, kTriad, kDot };

struct StreamOpInfo {
  StreamOp op;
  std::string_view name;    // "triad"
  std::string_view metric;  // "triadBandwidthGBps"
  // Arrays read + written per element: the bytes-moved weight (BabelStream's convention; the
  // write-allocate read a CPU would add does not happen on a GPU's streaming stores).
  int arrays_touched;
};

// Run order and weights, as data: copy c=a (2), scale b=s*c (2), add c=a+b (3),
// triad a=b+s*c (3), dot sum(a*b) (2).
inline constexpr std::array<StreamOpInfo, 5> kStreamOps = {{
    {StreamOp::kCopy, "copy", "copyBandwidthGBps", 2},
    {StreamOp::kScale, "scale", "scaleBandwidthGBps", 2},
    {StreamOp::kAdd, "add", "addBandwidthGBps", 3},
    {StreamOp::kTriad, "triad", "triadBandwidthGBps", 3},
    {StreamOp::kDot, "dot", "dotBandwidthGBps", 2},
}};

inline constexpr double kStreamScalar = 0.4;
inline constexpr double kStreamInitA = 0.1;
inline constexpr double kStreamInitB = 0.2;
inline constexpr double kStreamInitC = 0.0;

// Bytes one op moves over arrays of `elements` values of `element_bytes` each.
double StreamOpBytes(const StreamOpInfo& op, std::int64_t elements, int element_bytes);

// 1 GB = 1e9 bytes (vendors' unit for bandwidth).
double BandwidthGBps(double bytes, double seconds);

// The value every element of a, b, c holds after initialisation and `rounds` rounds of
// copy/scale/add/triad, and the dot a round ends with (elements * a * b).
struct StreamExpected {
  double a = 0;
  double b = 0;
  double c = 0;
  double dot = 0;
};
StreamExpected ExpectStreamValues(int rounds, std::int64_t elements);

// A grid-stride launch sized to one wave: every block resident at once. The blocks of one
// kernel that fit on an SM (`resident_per_sm`) come from the compiled kernel's registers and
// shared memory (cudaOccupancyMaxActiveBlocksPerMultiprocessor), not from threads per SM: a
// grid larger than sms * resident runs a second, partial wave that idles most SMs.
struct StreamGrid {
  int blocks = 0;       // sm_count * per_sm
  int per_sm = 0;       // blocks per SM in the launch
  bool capped = false;  // `requested_per_sm` asked for more than fit; `per_sm` is what fits
};
// `requested_per_sm` <= 0: as many as fit. At least one block per SM either way.
StreamGrid StreamGridFor(int sm_count, int resident_per_sm, int requested_per_sm);

// ---- verification ---------------------------------------------------------------------------
struct Mismatch {
  std::int64_t checked = 0;
  std::int64_t wrong = 0;
  // "c[1234] = 0.5, expected 0.4 (relative error 2.5e-01 > 1e-09)"; "" when none.
  std::string first;
};
// Each value must be within rel_tol of `expected` (relative to |expected|, absolute when
// expected is 0). NaN and Inf are always wrong.
Mismatch CheckAllNear(const std::vector<double>& values, const std::vector<std::int64_t>& indices,
                      double expected, double rel_tol, std::string_view array_name);
// A Status: OK, or DataLoss("<what>: <wrong> of <checked> values wrong; first: <first>").
Status MismatchStatus(const Mismatch& mismatch, std::string_view what);

// Evenly spread indices in [0, elements) including the first and last, at most `count`.
std::vector<std::int64_t> SampleIndices(std::int64_t elements, int count);

// ---- gemm ------------------------------------------------------------------------------------
enum class GemmDtype { kBf16, kFp16, kFp8E4m3, kTf32, kFp64 };

struct GemmDtypeInfo {
  GemmDtype dtype;
  std::string_view name;    // as users write it: bf16, fp16, fp8, tf32, fp64
  std::string_view metric;  // bf16Tflops
  int input_bytes;          // storage bytes of one A/B element
  int output_bytes;         // one C/D element
  // Unit roundoff of the stored output, the extra error per product from rounding the inputs
  // for the math (TF32's 10-bit mantissa), and of the accumulator.
  double output_roundoff;
  double product_roundoff;
  double accumulator_roundoff;
  int min_cc;  // minimum compute capability as major*10+minor (fp8: 89)
};
const std::vector<GemmDtypeInfo>& GemmDtypes();
std::optional<GemmDtypeInfo> FindGemmDtype(std::string_view name);
bool GemmDtypeSupported(const GemmDtypeInfo& dtype, int cc_major, int cc_minor);

// 2*m*n*k: one multiply and one add per term of each output.
double GemmFlops(std::int64_t m, std::int64_t n, std::int64_t k);
double Tflops(double flops, double seconds);

// Allowed |C - reference| for one output whose exact value (from the same stored inputs,
// normally distributed with unit variance) is `reference`: output rounding, input rounding for
// the math mode and accumulation over k terms, with a safety factor of 4.
double GemmAbsTolerance(const GemmDtypeInfo& dtype, std::int64_t k, double reference);
Mismatch CheckGemmSample(const GemmDtypeInfo& dtype, std::int64_t k,
                         const std::vector<double>& values, const std::vector<double>& references);

// burn: a result counts as different from the first iteration's when it differs by more than
// this fraction of max(|first|, 1): a deterministic algorithm repeats its bits exactly, so any
// difference beyond a couple of output ulps is a hardware fault.
double BurnRelativeTolerance(const GemmDtypeInfo& dtype);

// Passes (a matmul into every output buffer, then the comparison) burn queues per host wait:
// enough for about `call_seconds` of work so the GPU never waits on the host between passes,
// no more than fit in what is left of the window, at least 1 and at most 256.
int BurnPassesPerCall(double seconds_per_pass, double seconds_left, double call_seconds);

// ---- h2d-d2h / numa -------------------------------------------------------------------------
// Parses sysfs's "0-3,8,10-11" into CPU numbers. InvalidArgument on malformed text.
Result<std::vector<int>> ParseCpuList(std::string_view text);

// Copies per timed batch: enough for about `target_bytes`, within [min, max].
int CopyIterations(std::int64_t bytes, std::int64_t target_bytes, int min_iterations,
                   int max_iterations);

// "1 MiB", "256 MiB", "1 GiB", "1536 KiB".
std::string FormatBytes(std::int64_t bytes);

}  // namespace perfgate::kernels::gpu
