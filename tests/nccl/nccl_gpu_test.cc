// NCCL on a real GPU (label gpu; each case skips cleanly without a device). With one GPU only
// one-rank paths run: a one-rank all_reduce runs, verifies and reports algbw (busbw needs two
// ranks), and a two-rank non-blocking init whose peer never comes is aborted by the watchdog.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "kernels/cuda/device.h"
#include "kernels/nccl/harness.h"
#include "kernels/nccl/nccl_communicator.h"
#include "kernels/registry.h"
#include "tests/gpu_presence.h"
#include "tests/kernels/gpu_test_params.h"

namespace perfgate::kernels::nccl {
namespace {

using ::testing::HasSubstr;

TEST(NcclGpu, OneRankAllReduceRunsVerifiesAndReportsAlgbw) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  const kernels::Test* t = FindTest("nccl-all-reduce", false);
  ASSERT_NE(t, nullptr);
  Target target;
  target.scope = Scope::kAllGpus;
  target.devices = {0};
  const Params params = testing::DefaultParams(t->Info(), {{"minBytes", std::int64_t{8}},
                                                           {"maxBytes", std::int64_t{256} << 20},
                                                           {"stepFactor", std::int64_t{32}},
                                                           {"warmupIterations", std::int64_t{2}},
                                                           {"iterations", std::int64_t{5}}});
  auto run = t->Prepare(params, target);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto sample = (*run)->RunSample();
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  EXPECT_GT(sample->at("algBandwidthGBps@256MiB"), 0);
  EXPECT_GT(sample->at("inPlaceAlgBandwidthGBps@256MiB"), 0);
  EXPECT_EQ(sample->count("busBandwidthGBps@256MiB"), 0U);
  const auto details = (*run)->Details();
  EXPECT_EQ(details.at("wrongElementsTotal"), "0");
  EXPECT_THAT(details.at("busBandwidth"), HasSubstr("needs two ranks or more"));
  EXPECT_THAT(details.at("ncclVersion"), HasSubstr("2."));
  std::printf("algBandwidthGBps@256MiB %.1f (one rank); ncclVersion %s; transport %s\n",
              sample->at("algBandwidthGBps@256MiB"), details.at("ncclVersion").c_str(),
              details.at("transport").c_str());
}

TEST(NcclGpu, TwoRankInitWhosePeerNeverComesIsAbortedByTheWatchdog) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  CommunicatorOptions options;
  options.devices = {0};
  options.world_size = 2;  // rank 1 never starts
  options.ranks = {0};
  options.init_timeout_seconds = 5;
  const auto start = std::chrono::steady_clock::now();
  auto comm = CreateNcclCommunicator(options, "");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), Code::kDeadlineExceeded) << comm.status().ToString();
  EXPECT_THAT(comm.status().message(), HasSubstr("aborted by the watchdog"));
  EXPECT_THAT(comm.status().message(), HasSubstr("never joined"));
  EXPECT_LT(seconds, 5 + 30);  // the deadline plus ncclCommAbort's own teardown
  std::printf("aborted after %.1f s: %s\n", seconds, comm.status().message().c_str());
}

}  // namespace
}  // namespace perfgate::kernels::nccl
