#include "kernels/cuda/formulas.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "kernels/cuda/device.h"
#include "kernels/test.h"

namespace perfgate::kernels::gpu {

double StreamOpBytes(const StreamOpInfo& op, std::int64_t elements, int element_bytes) {
  return static_cast<double>(op.arrays_touched) * static_cast<double>(elements) * element_bytes;
}

double BandwidthGBps(double bytes, double seconds) {
  return seconds > 0 ? bytes / seconds / 1e9 : 0.0;
}

StreamExpected ExpectStreamValues(int rounds, std::int64_t elements) {
  StreamExpected e{kStreamInitA, kStreamInitB, kStreamInitC, 0};
  for (int i = 0; i < rounds; ++i) {
    e.c = e.a;
    e.b = kStreamScalar * e.c;
    e.c = e.a + e.b;
    e.a = e.b + kStreamScalar * e.c;
  }
  e.dot = static_cast<double>(elements) * e.a * e.b;
  return e;
}

Mismatch CheckAllNear(const std::vector<double>& values, const std::vector<std::int64_t>& indices,
                      double expected, double rel_tol, std::string_view array_name) {
  Mismatch m;
  const double scale = expected != 0 ? std::fabs(expected) : 1.0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    ++m.checked;
    const double error = std::fabs(values[i] - expected) / scale;
    if (std::isfinite(values[i]) && error <= rel_tol) continue;
    if (m.wrong++ == 0) {
      char buffer[256];
      std::snprintf(buffer, sizeof(buffer),
                    "%.*s[%lld] = %.17g, expected %.17g (relative error "
                    "%.3g > %.3g)",
                    static_cast<int>(array_name.size()), array_name.data(),
                    static_cast<long long>(i < indices.size() ? indices[i]  // NOLINT
                                                              : static_cast<std::int64_t>(i)),
                    values[i], expected, error, rel_tol);
      m.first = buffer;
    }
  }
  return m;
}

Status MismatchStatus(const Mismatch& mismatch, std::string_view what) {
  if (mismatch.wrong == 0) return Status::Ok();
  return DataLoss(std::string(what) + ": " + std::to_string(mismatch.wrong) + " of " +
                  std::to_string(mismatch.checked) + " values wrong; first: " + mismatch.first);
}

StreamGrid StreamGridFor(int sm_count, int resident_per_sm, int requested_per_sm) {
  StreamGrid g;
  const int fit = std::max(1, resident_per_sm);
  g.per_sm = requested_per_sm > 0 ? std::min(requested_per_sm, fit) : fit;
  g.capped = requested_per_sm > fit;
  g.blocks = std::max(1, sm_count) * g.per_sm;
  return g;
}

std::vector<std::int64_t> SampleIndices(std::int64_t elements, int count) {
  std::vector<std::int64_t> out;
  if (elements <= 0 || count <= 0) return out;
  if (elements <= count) {
    for (std::int64_t i = 0; i < elements; ++i) out.push_back(i);
    return out;
  }
  out.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    // Spread over the whole range so every part of every array is looked at, ends included.
    out.push_back(count == 1 ? 0 : (elements - 1) * i / (count - 1));
  }
  return out;
}

const std::vector<GemmDtypeInfo>& GemmDtypes() {
  // Unit roundoffs: 2^-8 bf16 (8-bit significand), 2^-11 fp16, 2^-24 fp32, 2^-53 fp64.
  // TF32 rounds each fp32 input to a 10-bit mantissa (2^-11 each, 2^-10 for a product).
  static const std::vector<GemmDtypeInfo> kTable = {
      {GemmDtype::kBf16, "bf16", "bf16Tflops", 2, 2, 0x1p-8, 0, 0x1p-24, 80},
      {GemmDtype::kFp16, "fp16", "fp16Tflops", 2, 2, 0x1p-11, 0, 0x1p-24, 70},
      // fp8 e4m3 inputs, bf16 output (cuBLASLt's fp8 modes need a 16-bit or fp32 output).
      {GemmDtype::kFp8E4m3, "fp8", "fp8Tflops", 1, 2, 0x1p-8, 0, 0x1p-24, 89},
      {GemmDtype::kTf32, "tf32", "tf32Tflops", 4, 4, 0x1p-24, 0x1p-10, 0x1p-24, 80},
      {GemmDtype::kFp64, "fp64", "fp64Tflops", 8, 8, 0x1p-53, 0, 0x1p-53, 60},
  };
  return kTable;
}

std::optional<GemmDtypeInfo> FindGemmDtype(std::string_view name) {
  for (const GemmDtypeInfo& d : GemmDtypes()) {
    if (d.name == name) return d;
  }
  return std::nullopt;
}

bool GemmDtypeSupported(const GemmDtypeInfo& dtype, int cc_major, int cc_minor) {
  return cc_major * 10 + cc_minor >= dtype.min_cc;
}

double GemmFlops(std::int64_t m, std::int64_t n, std::int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

double Tflops(double flops, double seconds) { return seconds > 0 ? flops / seconds / 1e12 : 0; }

double GemmAbsTolerance(const GemmDtypeInfo& dtype, std::int64_t k, double reference) {
  const auto kd = static_cast<double>(k);
  // Inputs ~N(0,1): each product ~1, partial sums ~sqrt(k). Output rounding scales with the
  // value; input rounding for the math mode adds a random walk of k product errors; the
  // accumulator's rounding is bounded by k roundoffs of a partial sum of size ~sqrt(k).
  const double output = dtype.output_roundoff * std::fabs(reference);
  const double products = dtype.product_roundoff * std::sqrt(kd);
  const double accumulation = dtype.accumulator_roundoff * kd * std::sqrt(kd);
  return 4.0 * (output + products + accumulation) + 1e-12;
}

Mismatch CheckGemmSample(const GemmDtypeInfo& dtype, std::int64_t k,
                         const std::vector<double>& values, const std::vector<double>& references) {
  Mismatch m;
  const std::size_t n = std::min(values.size(), references.size());
  for (std::size_t i = 0; i < n; ++i) {
    ++m.checked;
    const double tolerance = GemmAbsTolerance(dtype, k, references[i]);
    const double error = std::fabs(values[i] - references[i]);
    if (std::isfinite(values[i]) && error <= tolerance) continue;
    if (m.wrong++ == 0) {
      char buffer[256];
      std::snprintf(buffer, sizeof(buffer),
                    "sample %zu = %.9g, reference %.9g (|error| %.3g > tolerance %.3g)", i,
                    values[i], references[i], error, tolerance);
      m.first = buffer;
    }
  }
  if (values.size() != references.size()) {
    ++m.wrong;
    if (m.first.empty()) m.first = "sample and reference sizes differ";
  }
  return m;
}

double BurnRelativeTolerance(const GemmDtypeInfo& dtype) { return 2.0 * dtype.output_roundoff; }

int BurnPassesPerCall(double seconds_per_pass, double seconds_left, double call_seconds) {
  constexpr int kMaxPasses = 256;
  if (!(seconds_per_pass > 0)) return 1;
  const double budget = std::min(call_seconds, seconds_left);
  const double passes = std::floor(budget / seconds_per_pass);
  return static_cast<int>(std::clamp(passes, 1.0, static_cast<double>(kMaxPasses)));
}

Result<std::vector<int>> ParseCpuList(std::string_view text) {
  std::vector<int> cpus;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty()) return InvalidArgument("empty CPU list");
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view part = text.substr(start, end - start);
    const std::size_t dash = part.find('-');
    int first = 0;
    int last = 0;
    auto parse = [](std::string_view s, int* out) {
      const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
      return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
    };
    const bool ok = dash == std::string_view::npos ? parse(part, &first) && parse(part, &last)
                                                   : parse(part.substr(0, dash), &first) &&
                                                         parse(part.substr(dash + 1), &last);
    if (!ok || first < 0 || last < first) {
      return InvalidArgument("malformed CPU list \"" + std::string(text) + "\" at \"" +
                             std::string(part) + "\"");
    }
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    start = end + 1;
  }
  return cpus;
}

int CopyIterations(std::int64_t bytes, std::int64_t target_bytes, int min_iterations,
                   int max_iterations) {
  if (bytes <= 0) return min_iterations;
  const std::int64_t wanted = (target_bytes + bytes - 1) / bytes;
  return static_cast<int>(std::clamp<std::int64_t>(wanted, min_iterations, max_iterations));
}

std::string FormatBytes(std::int64_t bytes) { return BinarySize(bytes, " "); }

}  // namespace perfgate::kernels::gpu

namespace perfgate::kernels::cuda {

// Shared by the CUDA and the no-CUDA builds (device.h).
std::string FormatGpuUuid(const unsigned char bytes[16]) {
  char out[48];
  std::snprintf(
      out, sizeof(out), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
      bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
      bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]);
  return out;
}

}  // namespace perfgate::kernels::cuda
