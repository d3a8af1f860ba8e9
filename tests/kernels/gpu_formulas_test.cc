// Host-side arithmetic of the GPU tests: the figures a user reads (GB/s, TFLOP/s) and the
// checks that must turn a wrong result into a failure.
#include "kernels/cuda/formulas.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace perfgate::kernels::gpu {
namespace {

const StreamOpInfo& Op(StreamOp op) {
  for (const StreamOpInfo& info : kStreamOps) {
    if (info.op == op) return info;
  }
  return kStreamOps[0];
}

TEST(StreamBytes, CountsReadsAndWritesPerOp) {
  const std::int64_t n = 1LL << 27;  // 1 GiB of doubles
  EXPECT_DOUBLE_EQ(StreamOpBytes(Op(StreamOp::kCopy), n, 8), 2.0 * 8 * n);
  EXPECT_DOUBLE_EQ(StreamOpBytes(Op(StreamOp::kScale), n, 8), 2.0 * 8 * n);
  EXPECT_DOUBLE_EQ(StreamOpBytes(Op(StreamOp::kAdd), n, 8), 3.0 * 8 * n);
  EXPECT_DOUBLE_EQ(StreamOpBytes(Op(StreamOp::kTriad), n, 8), 3.0 * 8 * n);
  EXPECT_DOUBLE_EQ(StreamOpBytes(Op(StreamOp::kDot), n, 8), 2.0 * 8 * n);
}

TEST(StreamBytes, MetricNamesCarryTheUnit) {
  for (const StreamOpInfo& op : kStreamOps) {
    EXPECT_NE(op.metric.find("BandwidthGBps"), std::string_view::npos) << op.name;
  }
}

TEST(Bandwidth, IsDecimalGigabytesPerSecond) {
  // 3 GiB triad in 1 ms: 3.221 TB/s.
  EXPECT_NEAR(BandwidthGBps(3.0 * (1LL << 30), 1e-3), 3221.225472, 1e-6);
  EXPECT_EQ(BandwidthGBps(1e9, 0), 0);
}

TEST(StreamExpected, ReplaysTheKernelSequence) {
  const StreamExpected zero = ExpectStreamValues(0, 10);
  EXPECT_DOUBLE_EQ(zero.a, kStreamInitA);
  EXPECT_DOUBLE_EQ(zero.b, kStreamInitB);
  EXPECT_DOUBLE_EQ(zero.c, kStreamInitC);
  const StreamExpected one = ExpectStreamValues(1, 10);
  // c = a; b = s*c; c = a + b; a = b + s*c
  const double b = kStreamScalar * kStreamInitA;
  const double c = kStreamInitA + b;
  const double a = b + kStreamScalar * c;
  EXPECT_DOUBLE_EQ(one.b, b);
  EXPECT_DOUBLE_EQ(one.c, c);
  EXPECT_DOUBLE_EQ(one.a, a);
  EXPECT_DOUBLE_EQ(one.dot, 10 * a * b);
}

TEST(StreamExpected, StaysNormalForLongSamples) {
  // A sample of 1000 rounds must not reach denormals (slow) or zero (uncheckable).
  const StreamExpected e = ExpectStreamValues(1000, 1);
  EXPECT_TRUE(std::isnormal(e.a));
  EXPECT_TRUE(std::isnormal(e.b));
  EXPECT_TRUE(std::isnormal(e.dot));
}

TEST(CheckAllNear, AcceptsRoundingDifferences) {
  const double expected = 0.123456789;
  const std::vector<double> values = {expected, expected * (1 + 1e-14), expected * (1 - 1e-13)};
  const Mismatch m = CheckAllNear(values, {0, 5, 9}, expected, 1e-9, "a");
  EXPECT_EQ(m.checked, 3);
  EXPECT_EQ(m.wrong, 0);
  EXPECT_TRUE(MismatchStatus(m, "hbm").ok());
}

TEST(CheckAllNear, CatchesAPlantedWrongValueAndNamesIt) {
  const double expected = 0.5;
  std::vector<double> values(100, expected);
  values[42] = 0.5000001;  // off by 2e-7 relative: a flipped low mantissa bit or worse
  std::vector<std::int64_t> indices;
  for (int i = 0; i < 100; ++i) indices.push_back(i * 1000);
  const Mismatch m = CheckAllNear(values, indices, expected, 1e-9, "c");
  EXPECT_EQ(m.wrong, 1);
  EXPECT_NE(m.first.find("c[42000]"), std::string::npos) << m.first;
  const Status s = MismatchStatus(m, "hbm-stream array c");
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_NE(s.message().find("1 of 100"), std::string::npos) << s.message();
}

TEST(CheckAllNear, NanAndInfAreAlwaysWrong) {
  const std::vector<double> values = {std::nan(""), std::numeric_limits<double>::infinity()};
  EXPECT_EQ(CheckAllNear(values, {0, 1}, 1.0, 1e300, "a").wrong, 2);
}

// H200: 132 SMs; at 1024 threads and 36-40 registers/thread one block fits per SM (a 2048-thread
// SM has 64 K registers), so the grid is 132 blocks, not the 264 that threads per SM suggest.
TEST(StreamGrid, OneWaveFromWhatFitsNotFromThreadsPerSm) {
  const StreamGrid g = StreamGridFor(132, 1, 0);
  EXPECT_EQ(g.blocks, 132);
  EXPECT_EQ(g.per_sm, 1);
  EXPECT_FALSE(g.capped);
  // 256 threads at 40 registers: 65536 / (256 * 40) = 6 blocks fit, not 2048 / 256 = 8.
  EXPECT_EQ(StreamGridFor(132, 6, 0).blocks, 792);
}

TEST(StreamGrid, ARequestAboveWhatFitsIsCappedToOneWave) {
  const StreamGrid over = StreamGridFor(132, 1, 2);
  EXPECT_EQ(over.blocks, 132);
  EXPECT_TRUE(over.capped);
  const StreamGrid under = StreamGridFor(132, 6, 2);
  EXPECT_EQ(under.blocks, 264);
  EXPECT_FALSE(under.capped);
  EXPECT_EQ(StreamGridFor(132, 0, 0).blocks, 132);  // never an empty grid
}

TEST(SampleIndices, SpreadOverTheWholeArrayWithBothEnds) {
  const auto idx = SampleIndices(1000000, 5);
  ASSERT_EQ(idx.size(), 5u);
  EXPECT_EQ(idx.front(), 0);
  EXPECT_EQ(idx.back(), 999999);
  for (std::size_t i = 1; i < idx.size(); ++i) EXPECT_GT(idx[i], idx[i - 1]);
  EXPECT_EQ(SampleIndices(3, 10).size(), 3u);
  EXPECT_TRUE(SampleIndices(0, 10).empty());
}

TEST(GemmFlops, CountsTwoPerTerm) {
  EXPECT_DOUBLE_EQ(GemmFlops(8192, 8192, 8192), 2.0 * 8192.0 * 8192.0 * 8192.0);
  // 20 matmuls of 8192^3 in 25 ms: 879.6 TFLOP/s.
  EXPECT_NEAR(Tflops(GemmFlops(8192, 8192, 8192) * 20, 0.025), 879.609302, 1e-5);
  EXPECT_EQ(Tflops(1, 0), 0);
}

TEST(GemmDtypes, NamesMetricsAndCapabilities) {
  for (const char* name : {"bf16", "fp16", "fp8", "tf32", "fp64"}) {
    auto d = FindGemmDtype(name);
    ASSERT_TRUE(d.has_value()) << name;
    EXPECT_EQ(std::string(d->metric), std::string(name) + "Tflops");
  }
  EXPECT_FALSE(FindGemmDtype("int8").has_value());
  const auto fp8 = *FindGemmDtype("fp8");
  EXPECT_FALSE(GemmDtypeSupported(fp8, 8, 0));  // A100
  EXPECT_TRUE(GemmDtypeSupported(fp8, 8, 9));   // L40S / Ada
  EXPECT_TRUE(GemmDtypeSupported(fp8, 9, 0));   // H100 / H200
  EXPECT_TRUE(GemmDtypeSupported(fp8, 10, 0));  // B200
  EXPECT_TRUE(GemmDtypeSupported(*FindGemmDtype("bf16"), 8, 0));
  EXPECT_FALSE(GemmDtypeSupported(*FindGemmDtype("bf16"), 7, 5));
}

TEST(GemmTolerance, AcceptsCorrectlyRoundedOutputsOfEachDtype) {
  const std::int64_t k = 8192;
  const double reference = 95.3;  // about one standard deviation: sqrt(8192) = 90.5
  // bf16 output: the nearest bf16 to 95.3 is 95.5 (spacing 0.5 in [64, 128)).
  EXPECT_TRUE(CheckGemmSample(*FindGemmDtype("bf16"), k, {95.5}, {reference}).wrong == 0);
  EXPECT_TRUE(CheckGemmSample(*FindGemmDtype("fp8"), k, {95.5}, {reference}).wrong == 0);
  // fp16 output spacing in [64, 128) is 1/16.
  EXPECT_TRUE(CheckGemmSample(*FindGemmDtype("fp16"), k, {95.3125}, {reference}).wrong == 0);
  // tf32 math: products carry ~2^-10 relative error; a random walk over k terms.
  EXPECT_TRUE(CheckGemmSample(*FindGemmDtype("tf32"), k, {reference + 0.2}, {reference}).wrong ==
              0);
  EXPECT_TRUE(
      CheckGemmSample(*FindGemmDtype("fp64"), k, {reference * (1 + 1e-14)}, {reference}).wrong ==
      0);
}

TEST(GemmTolerance, CatchesPlantedWrongOutputs) {
  const std::int64_t k = 8192;
  for (const auto& d : GemmDtypes()) {
    // A sign flip, a doubled value, a NaN and a value off by 5% are all caught.
    const Mismatch m = CheckGemmSample(d, k, {-95.3, 190.6, std::nan(""), 95.3 * 1.05, 95.3},
                                       {95.3, 95.3, 95.3, 95.3, 95.3});
    EXPECT_EQ(m.wrong, 4) << d.name << ": " << m.first;
    EXPECT_EQ(m.checked, 5);
  }
  // fp64 is strict: a relative error of 1e-6 is far outside double rounding.
  EXPECT_EQ(CheckGemmSample(*FindGemmDtype("fp64"), k, {95.3 * (1 + 1e-6)}, {95.3}).wrong, 1);
}

TEST(GemmTolerance, SizeMismatchIsAFailure) {
  EXPECT_GT(CheckGemmSample(*FindGemmDtype("bf16"), 64, {1.0}, {}).wrong, 0);
}

// bf16 8192^3 on an H200: 8 matmuls and a comparison take about 10 ms; a quarter second of
// them per host wait leaves the GPU one idle gap per 25 passes instead of one per pass.
TEST(BurnPassesPerCall, FillsTheCallButNotPastTheWindow) {
  EXPECT_EQ(BurnPassesPerCall(0.010, 9.0, 0.25), 25);
  EXPECT_EQ(BurnPassesPerCall(0.010, 0.05, 0.25), 5);  // the window ends first
  EXPECT_EQ(BurnPassesPerCall(0.5, 9.0, 0.25), 1);     // a pass longer than a call
  EXPECT_EQ(BurnPassesPerCall(1e-6, 9.0, 0.25), 256);  // capped
  EXPECT_EQ(BurnPassesPerCall(0, 9.0, 0.25), 1);       // nothing measured yet
}

TEST(BurnTolerance, IsAFewOutputUlps) {
  EXPECT_DOUBLE_EQ(BurnRelativeTolerance(*FindGemmDtype("bf16")), 2 * 0x1p-8);
  EXPECT_LT(BurnRelativeTolerance(*FindGemmDtype("fp64")), 1e-15);
}

TEST(ParseCpuList, ReadsSysfsRanges) {
  auto cpus = ParseCpuList("0-3,8,10-11\n");
  ASSERT_TRUE(cpus.ok()) << cpus.status().ToString();
  EXPECT_EQ(*cpus, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  auto single = ParseCpuList("5");
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(*single, std::vector<int>{5});
}

TEST(ParseCpuList, RejectsMalformedText) {
  EXPECT_EQ(ParseCpuList("").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseCpuList("3-1").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseCpuList("a-b").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseCpuList("1,,2").status().code(), Code::kInvalidArgument);
}

TEST(CopyIterations, KeepsBatchesNearTheTargetWithinBounds) {
  EXPECT_EQ(CopyIterations(1LL << 30, 2LL << 30, 2, 1000), 2);
  EXPECT_EQ(CopyIterations(256LL << 20, 2LL << 30, 2, 1000), 8);
  EXPECT_EQ(CopyIterations(1LL << 20, 2LL << 30, 2, 1000), 1000);
  EXPECT_EQ(CopyIterations(4LL << 30, 2LL << 30, 2, 1000), 2);
}

TEST(FormatBytes, UsesBinaryUnits) {
  EXPECT_EQ(FormatBytes(1LL << 30), "1 GiB");
  EXPECT_EQ(FormatBytes(256LL << 20), "256 MiB");
  EXPECT_EQ(FormatBytes(1536 * 1024), "1536 KiB");
  EXPECT_EQ(FormatBytes(1000), "1000 B");
}

}  // namespace
}  // namespace perfgate::kernels::gpu
