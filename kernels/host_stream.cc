// host-stream: STREAM (McCalpin) copy/scale/add/triad on host memory with every core.
//
// Bytes counted as STREAM counts them (reads + writes of 8-byte doubles, no write-allocate):
//   copy  c = a          2 * 8 * N
//   scale b = s * c      2 * 8 * N
//   add   c = a + b      3 * 8 * N
//   triad a = b + s * c  3 * 8 * N
// Bandwidth = bytes / seconds / 1e9 (GB/s, decimal). One sample = one pass of the four
// kernels, each timed on its own. Arrays default to 4x the last-level cache (STREAM's rule)
// and at least 64 MiB each, first touched by the threads that use them.
//
// The scalar is sqrt(2) - 1 instead of STREAM's 3, so the values stay of order 1 across any
// number of samples (a -> (2s + s^2) a = a): every element equals a scalar recurrence that
// the host replays, and each sample checks a spread of elements against it (a wrong answer
// is a failure, not a fast result). The file is built with -ffp-contract=off so the arrays
// and the replay round identically.
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <thread>

#include "kernels/test_factories.h"

namespace perfgate::kernels {
namespace {

constexpr double kScalar = 0.41421356237309504880;  // sqrt(2) - 1
constexpr double kTolerance = 1e-13;

// Bytes moved per element, per kernel (STREAM's counting), as data.
struct KernelWeight {
  const char* metric;
  int arrays_touched;
};
constexpr KernelWeight kKernels[] = {
    {"copyBandwidthGBps", 2},
    {"scaleBandwidthGBps", 2},
    {"addBandwidthGBps", 3},
    {"triadBandwidthGBps", 3},
};

std::int64_t LastLevelCacheBytes() {
  // sysfs: the highest-level unified/data cache of cpu0.
  std::int64_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 8; ++i) {
    std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_f(base + "level"), size_f(base + "size"), type_f(base + "type");
    if (!level_f || !size_f) continue;
    int level = 0;
    std::string size, type;
    level_f >> level;
    size_f >> size;
    type_f >> type;
    if (type == "Instruction") continue;
    std::int64_t bytes = std::atoll(size.c_str());
    if (!size.empty() && (size.back() == 'K' || size.back() == 'k')) bytes *= 1024;
    if (!size.empty() && size.back() == 'M') bytes *= std::int64_t{1024} * 1024;
    if (level >= best_level) {
      best_level = level;
      best = bytes;
    }
  }
  return best > 0 ? best : 32LL * 1024 * 1024;
}

struct FreeDeleter {
  void operator()(double* p) const noexcept { std::free(p); }
};
using Array = std::unique_ptr<double[], FreeDeleter>;

Array AllocateArray(std::int64_t n) {
  constexpr std::size_t kAlign = 4096;
  std::size_t bytes = static_cast<std::size_t>(n) * sizeof(double);
  bytes = (bytes + kAlign - 1) / kAlign * kAlign;
  return Array(static_cast<double*>(std::aligned_alloc(kAlign, bytes)));
}

class HostStreamRun final : public TestRun {
 public:
  HostStreamRun(std::int64_t n, int threads, Array a, Array b, Array c)
      : n_(n), threads_(threads), a_(std::move(a)), b_(std::move(b)), c_(std::move(c)) {
    double* a_p = a_.get();
    double* b_p = b_.get();
    double* c_p = c_.get();
    // First touch by the threads that will use each page (NUMA placement).
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (std::int64_t j = 0; j < n_; ++j) {
      a_p[j] = 1.0;
      b_p[j] = 2.0;
      c_p[j] = 0.0;
    }
  }

  Result<Sample> RunSample() override {
    double* a = a_.get();
    double* b = b_.get();
    double* c = c_.get();
    const std::int64_t n = n_;
    double seconds[4];
    using Clock = std::chrono::steady_clock;

    auto t0 = Clock::now();
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (std::int64_t j = 0; j < n; ++j) c[j] = a[j];
    auto t1 = Clock::now();
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (std::int64_t j = 0; j < n; ++j) b[j] = kScalar * c[j];
    auto t2 = Clock::now();
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (std::int64_t j = 0; j < n; ++j) c[j] = a[j] + b[j];
    auto t3 = Clock::now();
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (std::int64_t j = 0; j < n; ++j) a[j] = b[j] + kScalar * c[j];
    auto t4 = Clock::now();
    seconds[0] = std::chrono::duration<double>(t1 - t0).count();
    seconds[1] = std::chrono::duration<double>(t2 - t1).count();
    seconds[2] = std::chrono::duration<double>(t3 - t2).count();
    seconds[3] = std::chrono::duration<double>(t4 - t3).count();

    // Replay on scalars.
    ec_ = ea_;
    eb_ = kScalar * ec_;
    ec_ = ea_ + eb_;
    ea_ = eb_ + kScalar * ec_;
    ++samples_;
    RETURN_IF_ERROR(Verify());

    Sample s;
    for (int k = 0; k < 4; ++k) {
      double bytes =
          static_cast<double>(kKernels[k].arrays_touched) * sizeof(double) * static_cast<double>(n);
      s[kKernels[k].metric] = bytes / seconds[k] / 1e9;
    }
    return s;
  }

  std::map<std::string, std::string> Details() const override {
    return {{"arrayBytes", std::to_string(n_ * static_cast<std::int64_t>(sizeof(double)))},
            {"elements", std::to_string(n_)},
            {"threads", std::to_string(threads_)},
            {"verification", "every sample, 4096 spread elements against the host replay"}};
  }

 private:
  Status Verify() const {
    constexpr std::int64_t kChecks = 4096;
    const std::int64_t stride = n_ > kChecks ? n_ / kChecks : 1;
    for (std::int64_t j = 0; j < n_; j += stride) {
      const double got[3] = {a_[j], b_[j], c_[j]};
      const double want[3] = {ea_, eb_, ec_};
      for (int k = 0; k < 3; ++k) {
        if (std::fabs(got[k] - want[k]) > kTolerance * std::fabs(want[k])) {
          return Status(Code::kDataLoss,
                        "host-stream verification failed after sample " + std::to_string(samples_) +
                            ": array " + "abc"[k] + "[" + std::to_string(j) + "] = " +
                            std::to_string(got[k]) + ", expected " + std::to_string(want[k]));
        }
      }
    }
    return Status::Ok();
  }

  std::int64_t n_;
  int threads_;
  Array a_, b_, c_;
  double ea_ = 1.0, eb_ = 2.0, ec_ = 0.0;
  int samples_ = 0;
};

class HostStreamTest final : public Test {
 public:
  HostStreamTest() {
    info_.type = "host-stream";
    info_.description =
        "STREAM copy/scale/add/triad on host memory with all cores (bytes counted as STREAM "
        "does); results verified every sample";
    info_.scope = Scope::kHost;
    info_.params = {
        {"arrayBytes",
         ParamType::kInt,
         "0",
         "bytes",
         "size of each of the three arrays; 0: 4x the last-level cache, at least 64 MiB",
         0,
         1LL << 40,
         {}},
        {"threads", ParamType::kInt, "0", "", "OpenMP threads; 0: one per online CPU", 0, 4096, {}},
    };
    for (const auto& k : kKernels) {
      info_.metrics.push_back({k.metric, "GB/s", true, "STREAM-counted host memory bandwidth"});
    }
  }
  const TestInfo& Info() const override { return info_; }

  // Four STREAM kernels move ten array lengths; arrayBytes 0 means about 256 MiB on a server.
  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    const double bytes =
        params.Int("arrayBytes") > 0 ? params.Int("arrayBytes") : 256.0 * (1 << 20);
    return 10 * bytes / nominal::kHostBytesPerSecond;
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& /*target*/) const override {
    std::int64_t bytes = params.Int("arrayBytes");
    if (bytes == 0) bytes = std::max<std::int64_t>(4 * LastLevelCacheBytes(), 64LL << 20);
    std::int64_t n = bytes / static_cast<std::int64_t>(sizeof(double));
    if (n < 1024) return InvalidArgument("host-stream: arrayBytes must be at least 8192");
    int threads = static_cast<int>(params.Int("threads"));
    if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    Array a = AllocateArray(n), b = AllocateArray(n), c = AllocateArray(n);
    if (!a || !b || !c) {
      return Status(Code::kResourceExhausted,
                    "host-stream: cannot allocate 3 arrays of " + std::to_string(bytes) + " bytes");
    }
    return std::unique_ptr<TestRun>(
        new HostStreamRun(n, threads, std::move(a), std::move(b), std::move(c)));
  }

 private:
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakeHostStreamTest() { return std::make_unique<HostStreamTest>(); }

}  // namespace perfgate::kernels
