// The Test interface: every test kernel (host STREAM, HBM bandwidth, GEMM, NCCL, ...) fills it
// in, one file per test, and is listed once in registry.cc. Standard types only: protobuf,
// yaml-cpp and cpprest never reach kernels/.
//
// Life of a test on one target: Prepare() once (allocate, initialise, check capability),
// then Sample() as many times as the runner asks (warm-up first, then measured samples;
// the runner decides how many), then the TestRun is destroyed (frees everything).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels {

enum class ParamType { kInt, kDouble, kString, kBool, kStringList, kIntList };

struct ParamInfo {
  std::string name;
  ParamType type = ParamType::kInt;
  // Default as the user would write it in YAML ("0", "1.5", "bf16", "[bf16, fp16]").
  std::string default_value;
  std::string unit;  // "bytes", "seconds", "" ...
  std::string description;
  // Inclusive numeric range for kInt/kDouble (and each element of kIntList).
  double min = -1e300;
  double max = 1e300;
  // Allowed values for kString / kStringList elements; empty means any.
  std::vector<std::string> choices;
};

// Builders for the common kinds of parameter declaration.
inline ParamInfo IntParam(std::string name, std::int64_t default_value, std::string unit,
                          std::string description, double min, double max) {
  ParamInfo p;
  p.name = std::move(name);
  p.type = ParamType::kInt;
  p.default_value = std::to_string(default_value);
  p.unit = std::move(unit);
  p.description = std::move(description);
  p.min = min;
  p.max = max;
  return p;
}

inline ParamInfo DoubleParam(std::string name, std::string default_value, std::string unit,
                             std::string description, double min, double max) {
  ParamInfo p;
  p.name = std::move(name);
  p.type = ParamType::kDouble;
  p.default_value = std::move(default_value);
  p.unit = std::move(unit);
  p.description = std::move(description);
  p.min = min;
  p.max = max;
  return p;
}

inline ParamInfo ChoiceParam(std::string name, ParamType type, std::string default_value,
                             std::string description, std::vector<std::string> choices) {
  ParamInfo p;
  p.name = std::move(name);
  p.type = type;
  p.default_value = std::move(default_value);
  p.description = std::move(description);
  p.choices = std::move(choices);
  return p;
}

inline ParamInfo BoolParam(std::string name, bool default_value, std::string description) {
  ParamInfo p;
  p.name = std::move(name);
  p.type = ParamType::kBool;
  p.default_value = default_value ? "true" : "false";
  p.description = std::move(description);
  return p;
}

struct MetricInfo {
  std::string name;  // lowerCamelCase with the unit in it: triadBandwidthGBps, tflops
  // "GB/s", "TFLOP/s"; "count" for a tally of events (errors found, settings that differ):
  // never negative, and counted in warm-up samples too (an error is not a figure that
  // settles); "bool" for a 0/1 flag.
  std::string unit;
  bool higher_is_better = true;
  std::string description;
  // The values a sample can take, ends included, where the test knows more than the unit
  // says (a metric that cannot exceed some value by construction). ReachableRange() joins
  // this with what the unit implies; the plan refuses a bound the range cannot cross.
  double lowest = -std::numeric_limits<double>::infinity();
  double highest = std::numeric_limits<double>::infinity();
};

// The ends, included, of the values a sample of `metric` can take: its declared lowest and
// highest, narrowed by its unit (a count or a rate is never negative, a bool is 0 or 1).
struct ValueRange {
  double lowest = 0;
  double highest = 0;
};
ValueRange ReachableRange(const MetricInfo& metric);
inline bool IsCount(const MetricInfo& metric) { return metric.unit == "count"; }

// What one run of a test occupies.
enum class Scope {
  kHost,     // the host (CPU, host memory); runs once
  kGpu,      // one GPU; the runner runs it on every GPU at once, one thread per device
  kAllGpus,  // all of the node's GPUs together (p2p matrix, single-node NCCL)
};

struct TestInfo {
  std::string type;  // kebab-case: host-stream, hbm-stream, nccl-all-reduce
  std::string description;
  Scope scope = Scope::kHost;
  std::vector<ParamInfo> params;
  std::vector<MetricInfo> metrics;
  // Test-only fixtures (synthetic samples) are refused unless the worker enables them.
  bool fixture = false;
};

inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;

using ParamValue = std::variant<std::int64_t, double, std::string, bool, std::vector<std::string>,
                                std::vector<std::int64_t>>;

// Parameters with every declared parameter present (defaults filled in by the loader).
class Params {
 public:
  Params() = default;
  explicit Params(std::map<std::string, ParamValue> values) : values_(std::move(values)) {}

  // Typed accessors. Asking for an undeclared parameter or the wrong type is a programming
  // error in the test (the loader checked the spec), so these assert.
  std::int64_t Int(const std::string& name) const;
  double Double(const std::string& name) const;  // accepts kInt values too
  const std::string& String(const std::string& name) const;
  bool Bool(const std::string& name) const;
  const std::vector<std::string>& StringList(const std::string& name) const;
  const std::vector<std::int64_t>& IntList(const std::string& name) const;
  bool Has(const std::string& name) const { return values_.count(name) != 0; }
  const std::map<std::string, ParamValue>& values() const { return values_; }

  // The value as a user would write it ("[bf16, fp16]"), for reports.
  static std::string Format(const ParamValue& value);

 private:
  std::map<std::string, ParamValue> values_;
};

struct Target {
  Scope scope = Scope::kHost;
  // CUDA ordinals: one for kGpu, all of the node's for kAllGpus, none for kHost.
  std::vector<int> devices;
  // "host", "gpu3", "gpus0-7"
  std::string Name() const;
};

// One measured iteration: a value per metric (a subset of Metrics() is allowed when a metric
// does not apply to this iteration).
using Sample = std::map<std::string, double>;

class TestRun {
 public:
  virtual ~TestRun() = default;
  // Runs one iteration and returns its figures. Blocking; called from one thread at a time.
  // A result that fails verification returns Code::kDataLoss (the runner says FAIL: a
  // wrong answer is a failure, not a fast result); anything else that goes wrong returns
  // another code (ERROR).
  virtual Result<Sample> RunSample() = 0;
  // Facts worth a line in the report (array size, algorithm, PCIe link ...). Thread-safe
  // after the last RunSample() returned.
  virtual std::map<std::string, std::string> Details() const { return {}; }
};

class Test {
 public:
  virtual ~Test() = default;
  virtual const TestInfo& Info() const = 0;
  // The metrics this test produces with these parameters (e.g. one per dtype for gemm).
  virtual std::vector<MetricInfo> Metrics(const Params& params) const;
  // Sets the test up on `target`. Error codes say what the runner reports:
  //   kFailedPrecondition: not applicable here (p2p on one GPU): SKIPPED, optional or not;
  //   kUnavailable: cannot run here (no CUDA device, no NVML): SKIPPED if the spec marks the
  //                 test optional, else ERROR; the message names the cause (CUDA's text);
  //   anything else: ERROR.
  virtual Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                                   const Target& target) const = 0;
  // Expected seconds one measured sample takes with these parameters on a node of the
  // nominal speeds below, `gpus` GPUs taking part (for a kAllGpus test): what
  // `perfgate-worker plan` prices a run with, never used to decide anything. Pure.
  virtual double SampleSeconds(const Params& params, int gpus) const = 0;
};

// The speeds per-sample costs assume: an H100/H200-class GPU in an HGX node. A plan's times
// are estimates for such a node; a slower node takes proportionally longer.
namespace nominal {
inline constexpr double kHbmBytesPerSecond = 3.5e12;    // sustained HBM3/HBM3e stream
inline constexpr double kPcieBytesPerSecond = 50e9;     // PCIe Gen5 x16, one direction
inline constexpr double kNvlinkBytesPerSecond = 350e9;  // NVLink 4, one direction
inline constexpr double kHostBytesPerSecond = 100e9;    // two-socket DDR5 STREAM
inline constexpr double kCollectiveLatencySeconds = 30e-6;
// Dense matmul throughput by input type (FLOP/s), about 70% of an H100 SXM's datasheet peak.
double MatmulFlopsPerSecond(const std::string& dtype);
}  // namespace nominal

// A byte count in the largest binary unit that divides it, else bytes, with `separator` between
// number and unit: "8 GiB" and "1536 KiB" for people, "8GiB" and "1000B" in metric names.
std::string BinarySize(std::int64_t bytes, const std::string& separator);

}  // namespace perfgate::kernels
