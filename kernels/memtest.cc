// memtest: pattern tests over most of each GPU's free memory, as memtest86 and DCGM's memory
// test do: walking ones and zeros (64 steps: every bit of every word set alone and cleared
// alone), March C- (six elements, kernels/cuda/memtest_patterns.h: stuck-at, transition and
// coupling faults), and seeded random words with their inverse. Each write-then-verify step
// writes the whole region, then reads every word back against the value computed from its
// index; each pattern's first read waits retentionSeconds after the write before it. Every
// mismatch is counted in memoryErrorCount, which the profile bounds (<= 0: any error FAILs the
// GPU); the first addresses with expected and found words, and the bits that flipped, go with
// it into Details. Bytes moved per sample: 2 x region per write-then-verify step, region x
// operations per march element.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kernels/cuda/test_support.h"
#include "kernels/memtest_logic.h"
#include "kernels/test_factories.h"
#include "kernels/unmeasured.h"

namespace perfgate::kernels {
namespace memtest {
namespace {

constexpr Pattern kPatterns[] = {Pattern::kWalkingOnes, Pattern::kWalkingZeros,
                                 Pattern::kMarchCMinus, Pattern::kRandom};

std::string Hex(std::uint64_t v) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "0x%llx", static_cast<unsigned long long>(v));  // NOLINT
  return buffer;
}

// Host words with planted faults: every write goes through Write, which applies them.
class SimulatedMemory {
 public:
  SimulatedMemory(std::size_t words, MemFaults faults)
      : words_(words, 0), faults_(std::move(faults)) {
    for (std::size_t i = 0; i < words_.size(); ++i) ApplyStuck(i);
  }
  std::size_t size() const { return words_.size(); }
  std::uint64_t Read(std::uint64_t i) const { return words_[i]; }
  void Write(std::uint64_t i, std::uint64_t value) {
    const std::uint64_t old = words_[i];
    for (const TransitionFault& t : faults_.transition) {
      if (t.word != i) continue;
      const std::uint64_t blocked = t.mask & (t.rising ? (~old & value) : (old & ~value));
      value = (value & ~blocked) | (old & blocked);
    }
    words_[i] = value;
    ApplyStuck(i);
    const std::uint64_t now = words_[i];
    for (const CouplingFault& c : faults_.coupling) {
      if (c.aggressor != i || c.victim >= words_.size()) continue;
      const std::uint64_t moved = c.rising ? (~old & now) : (old & ~now);
      if ((moved & c.aggressor_mask) == 0) continue;
      words_[c.victim] = (words_[c.victim] & ~c.victim_mask) | (c.victim_value & c.victim_mask);
      ApplyStuck(c.victim);
    }
  }

 private:
  void ApplyStuck(std::uint64_t i) {
    for (const StuckBits& s : faults_.stuck) {
      if (s.word == i) words_[i] = (words_[i] & ~s.mask) | (s.value & s.mask);
    }
  }
  std::vector<std::uint64_t> words_;
  MemFaults faults_;
};

class HostMemTester final : public cuda::MemTester {
 public:
  HostMemTester(std::int64_t bytes, MemFaults faults)
      : memory_(static_cast<std::size_t>(bytes) / sizeof(std::uint64_t), std::move(faults)) {}

  // The hold is not slept: simulated cells do not leak.
  Result<cuda::MemStepResult> RunStep(Pattern pattern, int step, std::uint64_t seed, int max_listed,
                                      double /*hold_seconds*/) override {
    cuda::MemStepResult out;
    const auto record = [&](std::uint64_t i, std::uint64_t expected, std::uint64_t found) {
      if (out.errors < static_cast<std::uint64_t>(max_listed)) {
        out.listed.push_back({i * sizeof(std::uint64_t), expected, found});
      }
      ++out.errors;
    };
    const std::uint64_t n = memory_.size();
    if (pattern == Pattern::kMarchCMinus) {
      if (step < 0 || step >= kMarchCMinusElements) {
        return InvalidArgument("memtest: March C- has no element " + std::to_string(step));
      }
      const MarchElement& element = kMarchCMinus[step];
      for (std::uint64_t p = 0; p < n; ++p) {
        const std::uint64_t i = MarchIndex(element.order, p, n);
        std::uint64_t expected = 0;
        std::uint64_t found = 0;
        if (MarchVisit(element, memory_, i, &expected, &found)) record(i, expected, found);
      }
      return out;
    }
    for (std::uint64_t i = 0; i < n; ++i) memory_.Write(i, PatternWord(pattern, step, i, seed));
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t expected = PatternWord(pattern, step, i, seed);
      const std::uint64_t found = memory_.Read(i);
      if (found != expected) record(i, expected, found);
    }
    return out;
  }

  std::int64_t Bytes() const override {
    return static_cast<std::int64_t>(memory_.size() * sizeof(std::uint64_t));
  }

 private:
  SimulatedMemory memory_;
};

class MemtestRun final : public TestRun {
 public:
  MemtestRun(std::unique_ptr<cuda::MemTester> tester, std::vector<Pattern> patterns,
             std::uint64_t seed, int max_listed, double retention_seconds)
      : tester_(std::move(tester)),
        patterns_(std::move(patterns)),
        seed_(seed),
        max_listed_(max_listed),
        retention_seconds_(retention_seconds) {}

  Result<Sample> RunSample() override {
    ErrorReport report;
    report.max_listed = static_cast<std::size_t>(max_listed_);
    double seconds = 0;
    double bytes = 0;
    for (Pattern p : patterns_) {
      for (int step = 0; step < PatternSteps(p); ++step) {
        const double hold = step == RetentionStep(p) ? retention_seconds_ : 0;
        ASSIGN_OR_RETURN(cuda::MemStepResult result,
                         tester_->RunStep(p, step, seed_ + samples_, max_listed_, hold));
        report.Add(p, step, result);
        seconds += result.seconds;
        bytes += StepBytes(p, step);
      }
    }
    ++samples_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      details_["testedBytes"] = BinarySize(tester_->Bytes(), " ");
      std::string names;
      for (Pattern p : patterns_)
        names += (names.empty() ? "" : ", ") + std::string(PatternName(p));
      details_["patterns"] = names;
      details_["retention"] = FormatSeconds(retention_seconds_) +
                              " between the first write of each pattern and its first read";
      if (report.errors > 0) details_[CountedKey("memoryErrorCount")] = report.Text();
    }
    Sample sample{{"memoryErrorCount", static_cast<double>(report.errors)},
                  {"testedGiB", static_cast<double>(tester_->Bytes()) / (1ULL << 30U)}};
    if (seconds > 0) sample["patternBandwidthGBps"] = bytes / seconds / 1e9;
    return sample;
  }

  std::map<std::string, std::string> Details() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return details_;
  }

 private:
  // Bytes one step moves: a write and a read of the region, or March C-'s operations.
  double StepBytes(Pattern p, int step) const {
    const int passes = p == Pattern::kMarchCMinus ? kMarchCMinus[step].count : 2;
    return passes * static_cast<double>(tester_->Bytes());
  }
  static std::string FormatSeconds(double s) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%g s", s);
    return buffer;
  }

  std::unique_ptr<cuda::MemTester> tester_;
  std::vector<Pattern> patterns_;
  std::uint64_t seed_;
  int max_listed_;
  double retention_seconds_;
  std::uint64_t samples_ = 0;
  mutable std::mutex mu_;
  std::map<std::string, std::string> details_;
};

class MemtestTest final : public Test {
 public:
  MemtestTest(MemTesterFactory factory, bool require_device)
      : factory_(std::move(factory)), require_device_(require_device) {
    info_.type = "memtest";
    info_.description =
        "device-memory test over most of free memory: walking ones/zeros, March C-, seeded "
        "random, with a retention delay; every error counted, the first named with its address";
    info_.scope = Scope::kGpu;
    info_.params = {
        DoubleParam("memoryFraction", "0.9", "", "share of the GPU's free memory tested", 0.01,
                    0.98),
        IntParam("maxBytes", 0, "bytes", "cap on the tested region; 0: no cap", 0, 1e15),
        ChoiceParam(
            "patterns", ParamType::kStringList, "[walking-ones, walking-zeros, march-c-, random]",
            "patterns run in each sample", {"walking-ones", "walking-zeros", "march-c-", "random"}),
        DoubleParam("retentionSeconds", "1", "s",
                    "wait between each pattern's first write and its first read (cells that "
                    "leak their charge read back wrong); 0: read at once",
                    0, 3600),
        IntParam("seed", 1, "", "seed of the random pattern (each sample adds its index)", 0, 1e15),
        IntParam("maxListedErrors", 16, "", "error addresses named in the failure", 1, 1024),
    };
    info_.metrics = {
        gpu::Metric("memoryErrorCount", "count", false,
                    "words that read back wrong (their addresses in Details)"),
        gpu::Metric("testedGiB", "GiB", true, "size of the tested region"),
        gpu::Metric("patternBandwidthGBps", "GB/s", true,
                    "bytes written and read per second over the sample"),
    };
  }

  const TestInfo& Info() const override { return info_; }

  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    // Nominal 141 GB H200 free memory times the fraction, each pass at HBM speed, and the
    // retention waits.
    double passes = 0;  // writes and reads of the whole region
    for (const std::string& name : params.StringList("patterns")) {
      const auto p = ParsePattern(name);
      if (!p) continue;
      for (int step = 0; step < PatternSteps(*p); ++step) {
        passes += *p == Pattern::kMarchCMinus ? kMarchCMinus[step].count : 2;
      }
    }
    double bytes = 140e9 * params.Double("memoryFraction");
    if (params.Int("maxBytes") > 0)
      bytes = std::min(bytes, static_cast<double>(params.Int("maxBytes")));
    return passes * bytes / nominal::kHbmBytesPerSecond +
           params.Double("retentionSeconds") *
               static_cast<double>(params.StringList("patterns").size());
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& target) const override {
    int ordinal = target.devices.empty() ? 0 : target.devices.front();
    if (require_device_) {
      ASSIGN_OR_RETURN(ordinal, gpu::SingleGpu(target));
    }
    std::vector<Pattern> patterns;
    for (const std::string& name : params.StringList("patterns")) {
      auto p = ParsePattern(name);
      if (!p) return InvalidArgument("memtest: unknown pattern " + name);
      patterns.push_back(*p);
    }
    ASSIGN_OR_RETURN(std::unique_ptr<cuda::MemTester> tester,
                     factory_(ordinal, params.Double("memoryFraction"), params.Int("maxBytes")));
    return std::unique_ptr<TestRun>(std::make_unique<MemtestRun>(
        std::move(tester), std::move(patterns), static_cast<std::uint64_t>(params.Int("seed")),
        static_cast<int>(params.Int("maxListedErrors")), params.Double("retentionSeconds")));
  }

 private:
  MemTesterFactory factory_;
  bool require_device_;
  TestInfo info_;
};

}  // namespace

const char* PatternName(Pattern p) {
  switch (p) {
    case Pattern::kWalkingOnes:
      return "walking-ones";
    case Pattern::kWalkingZeros:
      return "walking-zeros";
    case Pattern::kMarchCMinus:
      return "march-c-";
    case Pattern::kRandom:
      return "random";
  }
  return "?";
}

std::optional<Pattern> ParsePattern(const std::string& name) {
  for (Pattern p : kPatterns) {
    if (name == PatternName(p)) return p;
  }
  return std::nullopt;
}

void ErrorReport::Add(Pattern p, int step, const cuda::MemStepResult& result) {
  if (result.errors == 0) return;
  errors += result.errors;
  patterns_with_errors.push_back(std::string(PatternName(p)) + " step " + std::to_string(step) +
                                 ": " + std::to_string(result.errors) + " errors");
  for (const cuda::MemWordError& e : result.listed) {
    flipped_bits |= e.expected ^ e.found;
    const bool seen = std::any_of(listed.begin(), listed.end(),
                                  [&](const auto& l) { return l.offset_bytes == e.offset_bytes; });
    if (!seen && listed.size() < max_listed) listed.push_back(e);
  }
  std::sort(listed.begin(), listed.end(),
            [](const auto& a, const auto& b) { return a.offset_bytes < b.offset_bytes; });
}

std::string ErrorReport::Text() const {
  std::string text = std::to_string(errors) + " memory errors (";
  // Bounded: a dead stack fails every step; name the first few.
  for (std::size_t i = 0; i < patterns_with_errors.size() && i < 8; ++i) {
    text += (i == 0 ? "" : "; ") + patterns_with_errors[i];
  }
  if (patterns_with_errors.size() > 8) {
    text += "; and " + std::to_string(patterns_with_errors.size() - 8) + " more steps";
  }
  text += "); flipped bits " + Hex(flipped_bits);
  for (const auto& e : listed) {
    text += "; at offset " + Hex(e.offset_bytes) + " expected " + Hex(e.expected) + " found " +
            Hex(e.found);
  }
  return text;
}

std::unique_ptr<cuda::MemTester> MakeHostMemTester(std::int64_t bytes, MemFaults faults) {
  return std::make_unique<HostMemTester>(bytes, std::move(faults));
}

std::unique_ptr<cuda::MemTester> MakeHostMemTester(std::int64_t bytes,
                                                   std::vector<StuckBits> stuck) {
  MemFaults faults;
  faults.stuck = std::move(stuck);
  return MakeHostMemTester(bytes, std::move(faults));
}

std::unique_ptr<Test> MakeMemtestTestWith(MemTesterFactory factory, bool require_device) {
  return std::make_unique<MemtestTest>(std::move(factory), require_device);
}

}  // namespace memtest

std::unique_ptr<Test> MakeMemtestTest() {
  return memtest::MakeMemtestTestWith(cuda::CreateMemTester, true);
}

}  // namespace perfgate::kernels
