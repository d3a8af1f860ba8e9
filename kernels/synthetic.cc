// synthetic: a TEST FIXTURE, not a measurement. Draws samples from a configured normal
// distribution so the operator's end-to-end tests can plant a slow node, a crash or a hang
// without a GPU. Marked `fixture`: the worker refuses it unless started with
// --enable-fixtures (which a real deployment never passes), so no real spec can pass on
// invented numbers.
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "kernels/tests.h"

namespace perfgate::kernels {
namespace {

class SyntheticRun final : public TestRun {
 public:
  SyntheticRun(double mean, double cv, std::uint64_t seed, double sleep_seconds)
      : dist_(mean, mean * cv), rng_(seed), sleep_seconds_(sleep_seconds) {}

  Result<Sample> RunSample() override {
    if (sleep_seconds_ > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(sleep_seconds_));
    }
    return Sample{{"bandwidthGBps", dist_(rng_)}};
  }

 private:
  std::normal_distribution<double> dist_;
  std::mt19937_64 rng_;
  double sleep_seconds_;
};

// "node-a=crash" entries of `behaviour` that name this node (env NODE_NAME, set by the
// operator through the downward API; "local" when unset).
std::string BehaviourHere(const std::vector<std::string>& behaviour) {
  const char* node = std::getenv("NODE_NAME");
  std::string here = node != nullptr ? node : "local";
  for (const auto& entry : behaviour) {
    auto eq = entry.find('=');
    if (eq != std::string::npos && entry.substr(0, eq) == here) return entry.substr(eq + 1);
  }
  return "";
}

class SyntheticTest final : public Test {
 public:
  SyntheticTest() {
    info_.type = "synthetic";
    info_.description =
        "TEST FIXTURE: samples from a normal distribution; per-node behaviour for end-to-end "
        "tests. Refused unless the worker runs with --enable-fixtures";
    info_.scope = Scope::kHost;
    info_.fixture = true;
    info_.params = {
        {"mean", ParamType::kDouble, "100", "GB/s", "true mean of the samples", 0, 1e12, {}},
        {"cv", ParamType::kDouble, "0.01", "", "coefficient of variation", 0, 10, {}},
        {"seed", ParamType::kInt, "1", "", "random seed", 0, 1e18, {}},
        {"sampleSeconds", ParamType::kDouble, "0", "seconds", "time one sample takes", 0, 3600, {}},
        {"behaviour",
         ParamType::kStringList,
         "[]",
         "",
         "per node NODE=MEAN (a number: that node's mean), NODE=crash (the worker aborts), "
         "NODE=hang (never finishes), NODE=error (the test cannot run)",
         0,
         0,
         {}},
    };
    info_.metrics = {{"bandwidthGBps", "GB/s", true, "synthetic samples"}};
  }
  const TestInfo& Info() const override { return info_; }

  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    return params.Double("sampleSeconds");
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& /*target*/) const override {
    double mean = params.Double("mean");
    std::string behaviour = BehaviourHere(params.StringList("behaviour"));
    if (behaviour == "crash") {
      std::abort();  // a crashing worker, for the operator's tests
    }
    if (behaviour == "hang") {
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(3600));
    }
    if (behaviour == "error") {
      return Status(Code::kUnavailable, "synthetic: planted error for this node");
    }
    if (!behaviour.empty()) mean = std::strtod(behaviour.c_str(), nullptr);
    return std::unique_ptr<TestRun>(new SyntheticRun(mean, params.Double("cv"),
                                                     static_cast<std::uint64_t>(params.Int("seed")),
                                                     params.Double("sampleSeconds")));
  }

 private:
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakeSyntheticTest() { return std::make_unique<SyntheticTest>(); }

}  // namespace perfgate::kernels
