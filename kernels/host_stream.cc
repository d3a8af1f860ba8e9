// host-stream: STREAM (McCalpin) copy/scale/add/triad on host memory with every core.
//
// Bytes counted as STREAM counts them (reads + writes of 8-byte doubles, no write-allocate):
//   copy  c = a          2 * 8 * N
//   scale b = s * c      2 * 8 * N
//   add   c = a + b      3 * 8 * N
//   triad a = b + s * c  3 * 8 * N
// Bandwidth = bytes / seconds / 1e9 (GB/s, decimal). One sample = one pass of the four
// kernels, each timed on its own. Arrays default to STREAM's rule, each at least 4x the sum of
// all last-level caches (every L3 instance of every socket: 24 CCDs of 32 MiB on two EPYC
// 9654s), and at least 64 MiB, first touched by the threads that use them; Details give the
// caches counted and the NUMA nodes the pages landed on.
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
#include <map>
#include <memory>
#include <new>
#include <string>
#include <thread>

#include "kernels/host_memory.h"
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

// "false", "close", ...: how OpenMP binds the threads (OMP_PROC_BIND), which decides whether a
// first-touched page stays local to the thread that reads it.
const char* ProcBindName(omp_proc_bind_t bind) {
  switch (bind) {
    case omp_proc_bind_false:
      return "false";
    case omp_proc_bind_true:
      return "true";
    case omp_proc_bind_master:
      return "primary";
    case omp_proc_bind_close:
      return "close";
    case omp_proc_bind_spread:
      return "spread";
  }
  return "?";
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
  HostStreamRun(std::int64_t n, int threads, Array a, Array b, Array c,
                std::map<std::string, std::string> details, int numa_nodes)
      : n_(n),
        threads_(threads),
        a_(std::move(a)),
        b_(std::move(b)),
        c_(std::move(c)),
        details_(std::move(details)) {
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
    details_["numa"] = NumaText(numa_nodes);
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
    std::map<std::string, std::string> d = details_;
    d["arrayBytes"] = std::to_string(n_ * static_cast<std::int64_t>(sizeof(double)));
    d["elements"] = std::to_string(n_);
    d["threads"] = std::to_string(threads_);
    d["verification"] = "every sample, 4096 spread elements against the host replay";
    return d;
  }

 private:
  // Where the arrays live: the nodes sysfs shows, how the pages were placed, and where the
  // kernel says a spread of them are (move_pages), e.g. "2 NUMA nodes; first touch by 384
  // threads in static shares (OMP_PROC_BIND false): sampled pages node0 50%, node1 50%".
  std::string NumaText(int numa_nodes) const {
    std::string text = numa_nodes > 0 ? std::to_string(numa_nodes) +
                                            (numa_nodes == 1 ? " NUMA node" : " NUMA nodes")
                                      : "NUMA nodes unknown (none in sysfs)";
    text += "; first touch by " + std::to_string(threads_) +
            " threads in static shares, each page on the node of the thread that wrote it "
            "(OMP_PROC_BIND " +
            ProcBindName(omp_get_proc_bind()) + ")";
    std::map<int, int> pages;
    const std::int64_t bytes = n_ * static_cast<std::int64_t>(sizeof(double));
    for (const double* array : {a_.get(), b_.get(), c_.get()}) {
      for (const auto& [node, count] : PageNodes(array, bytes, 256)) pages[node] += count;
    }
    int total = 0;
    for (const auto& [node, count] : pages) total += count;
    if (total == 0) return text + "; page placement not readable (move_pages)";
    text += ": sampled pages";
    const char* sep = " ";
    for (const auto& [node, count] : pages) {
      text += sep + std::string("node") + std::to_string(node) + " " +
              std::to_string((100 * count + total / 2) / total) + "%";
      sep = ", ";
    }
    return text;
  }

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
  std::map<std::string, std::string> details_;
};

class HostStreamTest final : public Test {
 public:
  explicit HostStreamTest(std::string sysfs_root) : sysfs_root_(std::move(sysfs_root)) {
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
         "size of each of the three arrays; 0: 4x all last-level caches together (every "
         "socket's), at least 64 MiB",
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

  // Four STREAM kernels move ten array lengths; arrayBytes 0 means 4x a two-socket server's
  // last-level caches, about 1 GiB (2 x 105 MiB on Xeon 8480+, 768 MiB on EPYC 9654).
  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    const double bytes =
        params.Int("arrayBytes") > 0 ? params.Int("arrayBytes") : 1024.0 * (1 << 20);
    return 10 * bytes / nominal::kHostBytesPerSecond;
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& /*target*/) const override {
    const HostMemorySystem memory = ReadHostMemorySystem(sysfs_root_);
    std::int64_t bytes = params.Int("arrayBytes");
    std::map<std::string, std::string> details;
    details["lastLevelCache"] = LastLevelCacheText(memory);
    if (bytes == 0) {
      bytes = StreamArrayBytes(memory);
      details["arraySizing"] = "4x the last-level caches together, at least 64 MiB (STREAM's rule)";
    } else {
      details["arraySizing"] = "arrayBytes as the spec gives it";
    }
    std::int64_t n = bytes / static_cast<std::int64_t>(sizeof(double));
    if (n < 1024) return InvalidArgument("host-stream: arrayBytes must be at least 8192");
    int threads = static_cast<int>(params.Int("threads"));
    if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    Array a = AllocateArray(n), b = AllocateArray(n), c = AllocateArray(n);
    if (!a || !b || !c) {
      return Status(Code::kResourceExhausted,
                    "host-stream: cannot allocate 3 arrays of " + std::to_string(bytes) + " bytes");
    }
    return std::unique_ptr<TestRun>(new HostStreamRun(n, threads, std::move(a), std::move(b),
                                                      std::move(c), std::move(details),
                                                      memory.numa_nodes));
  }

 private:
  std::string sysfs_root_;
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakeHostStreamTestWith(const std::string& sysfs_root) {
  return std::make_unique<HostStreamTest>(sysfs_root);
}

std::unique_ptr<Test> MakeHostStreamTest() { return MakeHostStreamTestWith("/sys"); }

}  // namespace perfgate::kernels
