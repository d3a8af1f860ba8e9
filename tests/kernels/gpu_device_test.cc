// On a machine with a GPU (label gpu): each test runs a small configuration end to end,
// verification passes on healthy hardware and catches a planted wrong value. Every case skips
// cleanly without a device. Sizes are small so the whole binary takes seconds; performance is
// measured by scripts/gpu-check.sh, not asserted here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernels/consistency_logic.h"
#include "kernels/cuda/consistency.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/formulas.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/hbm_stream.h"
#include "kernels/nvml/identity.h"
#include "kernels/test_factories.h"
#include "tests/gpu_presence.h"
#include "tests/kernels/gpu_test_params.h"

namespace perfgate::kernels {
namespace {

Target Gpu0() {
  Target t;
  t.scope = Scope::kGpu;
  t.devices = {0};
  return t;
}

Result<Sample> PrepareAndSample(const Test& test, const Params& params, const Target& target) {
  ASSIGN_OR_RETURN(auto run, test.Prepare(params, target));
  return run->RunSample();
}

TEST(GpuDevice, HbmStreamMeasuresAndVerifies) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  const auto test = MakeHbmStreamTest();
  const Params params = testing::DefaultParams(
      test->Info(), {{"arrayBytes", std::int64_t{64} << 20}, {"roundsPerSample", std::int64_t{3}}});
  auto sample = PrepareAndSample(*test, params, Gpu0());
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  for (const auto& op : gpu::kStreamOps) EXPECT_GT(sample->at(std::string(op.metric)), 0);
}

// Each kernel's grid is what fits on the SMs at once, read from the compiled kernel: at 1024
// threads an H200 kernel with 36-40 registers/thread fits once per SM, so two blocks per SM
// (the threads-per-SM guess) would run a second wave.
TEST(GpuDevice, HbmStreamGridIsOneWaveFromTheKernelsOccupancy) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  for (int block : {1024, 256}) {
    cuda::HbmStreamConfig config;
    config.elements = 1 << 20;
    config.block_size = block;
    auto stream = cuda::CreateHbmStream(config);
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    for (const cuda::HbmStreamLaunch& l : (*stream)->Launches()) {
      SCOPED_TRACE(l.kernel + " at " + std::to_string(block));
      EXPECT_GE(l.resident_per_sm, 1);
      EXPECT_GT(l.registers, 0);
      EXPECT_EQ(l.grid, l.sm_count * l.resident_per_sm);
      // The register file bounds what fits: blocks x threads x registers <= 64 K per SM.
      EXPECT_LE(std::int64_t{l.resident_per_sm} * block * l.registers, std::int64_t{65536});
    }
    std::printf("  %s\n", (*stream)->LaunchDescription().c_str());
  }
}

// Copy and scale move the same bytes and run back to back; before the gate, copy's interval
// started on an idle GPU and counted the launch (~15% low at 64 MiB). Now the two agree.
TEST(GpuDevice, HbmStreamCopyTimingExcludesLaunchLatency) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  cuda::HbmStreamConfig config;
  config.elements = (std::int64_t{64} << 20) / 8;
  auto stream = cuda::CreateHbmStream(config);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  ASSERT_TRUE((*stream)->RunRounds(2).ok());  // warm-up
  auto t = (*stream)->RunRounds(20);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const double copy = t->seconds[0];
  const double scale = t->seconds[1];
  std::printf("  64 MiB: copy %.2f us, scale %.2f us per round\n", copy / 20 * 1e6,
              scale / 20 * 1e6);
  EXPECT_NEAR(copy / scale, 1.0, 0.05);
}

// The launch gate every timing window opens behind holds work queued after it until the host
// opens it, and lets go by itself (reported) when the host never does.
TEST(GpuDevice, LaunchGateHoldsQueuedWorkUntilOpened) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  auto held = cuda::ProbeLaunchGate(0, 0.2, 2'000'000'000);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_TRUE(held->held);
  EXPECT_FALSE(held->timed_out);
  auto lost = cuda::ProbeLaunchGate(0, 0.5, 10'000'000);  // lets go after 10 ms
  ASSERT_TRUE(lost.ok()) << lost.status().ToString();
  EXPECT_FALSE(lost->held);
  EXPECT_TRUE(lost->timed_out);
}

// A write ordered on the kernels' stream is seen by the very next kernel.
TEST(GpuDevice, HbmStreamWriteIsOrderedBeforeTheNextKernel) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  cuda::HbmStreamConfig config;
  config.elements = 1 << 20;
  auto stream = cuda::CreateHbmStream(config);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  // Planted in a before round 1's copy c = a: c carries it to the read-back unless the copy
  // ran before the write landed.
  for (int trial = 0; trial < 20; ++trial) {
    ASSERT_TRUE((*stream)->Reset().ok());
    ASSERT_TRUE((*stream)->WriteElement('a', 12345, 7.0).ok());
    ASSERT_TRUE((*stream)->RunRounds(1).ok());
    std::vector<double> a, b, c;
    ASSERT_TRUE((*stream)->ReadBack({12345}, &a, &b, &c).ok());
    // Round 1: copy c = 7, scale b = 2.8, add c = 9.8, triad a = 2.8 + 0.4 * 9.8.
    EXPECT_DOUBLE_EQ(c[0], 7.0 + 0.4 * 7.0);
  }
}

TEST(GpuDevice, HbmStreamCatchesAPlantedWrongValue) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  cuda::HbmStreamConfig config;
  config.elements = (16 << 20) + 1;  // odd: the tail element path too
  auto stream = cuda::CreateHbmStream(config);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  ASSERT_TRUE((*stream)->RunRounds(2).ok());
  const auto indices = gpu::SampleIndices(config.elements, 1024);
  ASSERT_TRUE((*stream)->WriteElement('c', indices[500], 123.0).ok());
  std::vector<double> a, b, c;
  ASSERT_TRUE((*stream)->ReadBack(indices, &a, &b, &c).ok());
  const gpu::StreamExpected e = gpu::ExpectStreamValues(2, config.elements);
  EXPECT_EQ(gpu::CheckAllNear(a, indices, e.a, 1e-9, "a").wrong, 0);
  EXPECT_EQ(gpu::CheckAllNear(c, indices, e.c, 1e-9, "c").wrong, 1);
}

TEST(GpuDevice, GemmEveryDtypeVerifies) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  const auto test = MakeGemmTest();
  const Params params =
      testing::DefaultParams(test->Info(), {{"m", std::int64_t{2048}},
                                            {"n", std::int64_t{1024}},
                                            {"k", std::int64_t{4096}},
                                            {"iterationsPerSample", std::int64_t{2}}});
  auto run = test->Prepare(params, Gpu0());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto sample = (*run)->RunSample();
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  EXPECT_GT(sample->at("bf16Tflops"), 0);
  EXPECT_GT(sample->at("fp64Tflops"), 0);
  for (const auto& [key, value] : (*run)->Details())
    std::printf("  %s: %s\n", key.c_str(), value.c_str());
}

TEST(GpuDevice, GemmRepeatsBitForBitAndSeesAChangedReference) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  cuda::GemmConfig config;
  config.m = config.n = config.k = 1024;
  config.output_buffers = 3;
  config.deterministic = true;
  auto runner = cuda::CreateGemmRunner(config);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  ASSERT_TRUE((*runner)->Time(1).ok());
  ASSERT_TRUE((*runner)->Snapshot().ok());
  ASSERT_TRUE((*runner)->Time(6).ok());
  auto same = (*runner)->CountDifferences(gpu::BurnRelativeTolerance(*gpu::FindGemmDtype("bf16")));
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, 0);
}

// The comparison of all buffers runs queued behind the matmuls with no host wait: on an H200
// bf16 8192^3 it is a few percent of the GPU time (it was 5-8% with a kernel per buffer and a
// host round trip per pass).
TEST(GpuDevice, BurnPassesKeepTheGpuOnMatmuls) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  cuda::GemmConfig config;
  config.output_buffers = 8;
  config.deterministic = true;
  auto runner = cuda::CreateGemmRunner(config);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  ASSERT_TRUE((*runner)->Time(1).ok());
  ASSERT_TRUE((*runner)->Snapshot().ok());
  const double tolerance = gpu::BurnRelativeTolerance(*gpu::FindGemmDtype("bf16"));
  auto passes = (*runner)->RunCheckedPasses(4, tolerance);
  ASSERT_TRUE(passes.ok()) << passes.status().ToString();
  EXPECT_EQ(passes->wrong, 0);
  EXPECT_EQ(passes->matmuls, 32);
  std::printf("  matmuls %.2f ms of %.2f ms GPU time\n", passes->matmul_seconds * 1e3,
              passes->total_seconds * 1e3);
  EXPECT_GE(passes->matmul_seconds / passes->total_seconds, 0.95);
}

// Every element of every buffer is compared, the ones past the last 16-byte vector included:
// with a negative tolerance each one counts.
TEST(GpuDevice, BurnComparisonSeesEveryElementOfEveryBuffer) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  cuda::GemmConfig config;
  config.dtype = gpu::GemmDtype::kFp64;  // any leading dimension; 2 per vector, 1 past the last
  config.m = 257;
  config.n = 259;
  config.k = 256;
  config.output_buffers = 3;
  config.deterministic = true;
  auto runner = cuda::CreateGemmRunner(config);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  ASSERT_TRUE((*runner)->Time(1).ok());
  ASSERT_TRUE((*runner)->Snapshot().ok());
  auto passes = (*runner)->RunCheckedPasses(2, -1.0);
  ASSERT_TRUE(passes.ok()) << passes.status().ToString();
  EXPECT_EQ(passes->wrong, 2 * 3 * 257 * 259);
  auto counted = (*runner)->CountDifferences(-1.0);
  ASSERT_TRUE(counted.ok());
  EXPECT_EQ(*counted, 3 * 257 * 259);
}

TEST(GpuDevice, BurnWindowRunsClean) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  const auto test = MakeBurnTest();
  const Params params = testing::DefaultParams(test->Info(), {{"m", std::int64_t{2048}},
                                                              {"n", std::int64_t{2048}},
                                                              {"k", std::int64_t{2048}},
                                                              {"windowSeconds", 0.5}});
  auto sample = PrepareAndSample(*test, params, Gpu0());
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  EXPECT_EQ(sample->at("computeErrorCount"), 0);
  EXPECT_GT(sample->at("tflops"), 0);
}

TEST(GpuDevice, HostCopiesMeasureAndVerify) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  const auto test = MakeH2dD2hTest();
  const Params params =
      testing::DefaultParams(test->Info(), {{"sizes", std::vector<std::int64_t>{1 << 20, 16 << 20}},
                                            {"bytesPerBatch", std::int64_t{64} << 20}});
  auto sample = PrepareAndSample(*test, params, Gpu0());
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  EXPECT_GT(sample->at("h2dBandwidthGBps"), 0);
  EXPECT_GT(sample->at("d2hBandwidthGBps"), 0);
  EXPECT_GT(sample->at("bidirectionalBandwidthGBps"), 0);
}

TEST(GpuDevice, P2pOnOneGpuIsNotApplicable) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  const auto test = MakeP2pTest();
  Target one;
  one.scope = Scope::kAllGpus;
  one.devices = {0};
  auto run = test->Prepare(testing::DefaultParams(test->Info()), one);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Code::kFailedPrecondition);
}

TEST(GpuDevice, P2pPairsVerifyWhereThereAreTwo) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  SKIP_WITHOUT_CUDA_DEVICE(1);
  const auto test = MakeP2pTest();
  Target two;
  two.scope = Scope::kAllGpus;
  two.devices = {0, 1};
  const Params params = testing::DefaultParams(test->Info(), {{"bytes", std::int64_t{16} << 20}});
  auto sample = PrepareAndSample(*test, params, two);
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  EXPECT_GT(sample->at("worstPairBandwidthGBps"), 0);
}

TEST(GpuDevice, HealthReadsNvml) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  const auto test = MakeHealthTest();
  // NVML ships with the driver: where CUDA sees a device, health must read it.
  auto run = test->Prepare(testing::DefaultParams(test->Info()), Gpu0());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto sample = (*run)->RunSample();
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  EXPECT_EQ(sample->count("eccUncorrectedVolatileCount"), 1u);
  for (const auto& [key, value] : (*run)->Details())
    std::printf("  %s: %s\n", key.c_str(), value.c_str());
}

TEST(GpuDevice, IdentityNamesTheDevice) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  auto id = ReadGpuIdentity(0);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_FALSE(id->name.empty());
  EXPECT_EQ(id->uuid.rfind("GPU-", 0), 0u);
  EXPECT_GT(id->sm_count, 0);
  std::printf("  %s %s %s cc %s vbios %s power %.0f W ecc %s mig %s nvml: %s\n", id->name.c_str(),
              id->uuid.c_str(), id->pci_bus_id.c_str(), id->compute_capability.c_str(),
              id->vbios.c_str(), id->power_limit_w, id->ecc_mode.c_str(), id->mig_mode.c_str(),
              id->nvml_note.empty() ? "ok" : id->nvml_note.c_str());
}

// The consistency screen: the same GPU screened twice, and run after run, computes the same
// bits (the computations are deterministic, or the screen would accuse healthy GPUs); the
// outputs are real numbers, not an untouched buffer; the node's GPUs agree with each other.
cuda::ConsistencyConfig SmallScreen(std::vector<int> devices) {
  cuda::ConsistencyConfig config;
  config.devices = std::move(devices);
  config.gemm_dtypes = cuda::ConsistencyGemmDtypes();
  config.gemm_size = 256;
  config.vector_elements = 64 * 4096;
  return config;
}

std::vector<std::string> ScreenNames(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("screen" + std::to_string(i));
  return names;
}

TEST(GpuDevice, ConsistencyOneGpuScreenedTwiceAgreesWithItselfRunAfterRun) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  auto runner = cuda::CreateConsistencyRunner(SmallScreen({0, 0}));
  ASSERT_TRUE(runner.ok()) << runner.status().message();
  const auto& computations = (*runner)->Computations();
  ASSERT_EQ(computations.size(), 6U);
  auto first = (*runner)->Run();
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto second = (*runner)->Run();
  ASSERT_TRUE(second.ok()) << second.status().message();
  for (std::size_t c = 0; c < computations.size(); ++c) {
    EXPECT_EQ((*first)[0].chunks[c], (*first)[1].chunks[c]) << computations[c].name;
    EXPECT_EQ((*first)[0].chunks[c], (*second)[0].chunks[c]) << computations[c].name;
  }
  EXPECT_GT((*first)[0].seconds, 0);
  auto screen =
      consistency::JudgeScreen(computations, ScreenNames(2), *first,
                               [&](int gpu, int c, std::int64_t from, std::int64_t count) {
                                 return (*runner)->ReadElements(gpu, c, from, count);
                               });
  ASSERT_TRUE(screen.ok()) << screen.status().message();
  EXPECT_EQ(screen->verdict, verdict::Verdict::kPass) << screen->reason;
  // Every output holds finite numbers, most of them not zero.
  for (std::size_t c = 0; c < computations.size(); ++c) {
    auto bits = (*runner)->ReadElements(0, static_cast<int>(c), 0, 64);
    ASSERT_TRUE(bits.ok()) << bits.status().message();
    int nonzero = 0;
    for (std::uint64_t b : *bits) {
      double v = 0;
      if (computations[c].type == cuda::ElementType::kF64) {
        std::memcpy(&v, &b, sizeof(v));
      } else {
        float f = 0;
        const auto word = static_cast<std::uint32_t>(b);
        std::memcpy(&f, &word, sizeof(f));
        v = f;
      }
      EXPECT_TRUE(std::isfinite(v)) << computations[c].name;
      nonzero += v != 0;
    }
    EXPECT_GT(nonzero, 32) << computations[c].name;
  }
}

TEST(GpuDevice, ConsistencyTheNodesGpusAgree) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  auto count = cuda::CudaDeviceCount();
  ASSERT_TRUE(count.ok());
  const auto test = MakeConsistencyTest();
  Params params({{"gemmDtypes", cuda::ConsistencyGemmDtypes()},
                 {"gemmSize", std::int64_t{256}},
                 {"vectorElements", std::int64_t{64 * 4096}},
                 {"seed", std::int64_t{1}}});
  Target target;
  target.scope = Scope::kAllGpus;
  for (int i = 0; i < *count; ++i) target.devices.push_back(i);
  auto run = test->Prepare(params, target);
  if (*count < 2) {
    ASSERT_FALSE(run.ok());
    EXPECT_EQ(run.status().code(), Code::kFailedPrecondition);
    return;
  }
  ASSERT_TRUE(run.ok()) << run.status().message();
  auto sample = (*run)->RunSample();
  ASSERT_TRUE(sample.ok()) << sample.status().message();
  EXPECT_GT(sample->at("screenSeconds"), 0);
}

}  // namespace
}  // namespace perfgate::kernels
