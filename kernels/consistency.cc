// consistency: a cross-GPU screen for silent data corruption. Every GPU of the node runs the
// same deterministic computations on the same inputs (kernels/cuda/consistency.cu: GEMMs in
// fp64, fp32, fp16 and bf16, a reduction, a transcendental-heavy map, from a fixed seed), and
// each output is reduced to a digest on its GPU (kernels/cuda/consistency_digest.h). Healthy
// GPUs of one model, driver and build compute the same bits, so the digests are compared bit
// for bit: a GPU whose digest differs from the strict majority's is FAIL ("silent data
// corruption suspected"), named with the computation and the first element that differs (the
// one chunk holding it is copied back from both GPUs); no strict majority is ERROR (the screen
// cannot say which output is right); one GPU has no peer (SKIPPED). Each sample screens again;
// the digests go into the result's details, where nodes are compared with each other.
//   screenSeconds = GPU seconds of one screen's computations on the slowest GPU
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "common/strings.h"
#include "kernels/consistency_logic.h"
#include "kernels/cuda/consistency_digest.h"
#include "kernels/cuda/test_support.h"
#include "kernels/test_factories.h"

namespace perfgate::kernels {
namespace consistency {
namespace {

using cuda::Computation;
using cuda::ElementType;
using cuda::GpuDigests;

// Listed at most in a reason, so a node where everything differs still gets a readable line.
constexpr std::size_t kMostListed = 8;

std::string Hex(std::uint64_t bits, ElementType type) {
  char buffer[24];
  if (type == ElementType::kF64) {
    std::snprintf(buffer, sizeof(buffer), "0x%016llx",  // NOLINT(cppcoreguidelines-pro-type-vararg)
                  static_cast<unsigned long long>(bits));  // NOLINT(google-runtime-int)
  } else {
    std::snprintf(buffer, sizeof(buffer), "0x%08llx",  // NOLINT(cppcoreguidelines-pro-type-vararg)
                  static_cast<unsigned long long>(bits));  // NOLINT(google-runtime-int)
  }
  return buffer;
}

// "1.23456789 (0x3f9e0651)": the value and its bits.
std::string Value(std::uint64_t bits, ElementType type) {
  char buffer[48];
  if (type == ElementType::kF64) {
    double v = 0;
    std::memcpy(&v, &bits, sizeof(v));
    std::snprintf(buffer, sizeof(buffer), "%.17g", v);  // NOLINT(cppcoreguidelines-pro-type-vararg)
  } else {
    const auto word = static_cast<std::uint32_t>(bits);
    float v = 0;
    std::memcpy(&v, &word, sizeof(v));
    std::snprintf(buffer, sizeof(buffer), "%.9g",  // NOLINT(cppcoreguidelines-pro-type-vararg)
                  static_cast<double>(v));
  }
  return std::string(buffer) + " (" + Hex(bits, type) + ")";
}

// "element 4660 (row 2, column 564)", or "element 17" for a vector.
std::string ElementName(const Computation& c, std::int64_t index) {
  std::string text = "element " + std::to_string(index);
  if (c.columns > 1) {
    text += " (row " + std::to_string(index / c.columns) + ", column " +
            std::to_string(index % c.columns) + ")";
  }
  return text;
}

// The GPUs of one computation grouped by their output's digest, in order of first appearance.
struct Group {
  std::uint64_t digest = 0;
  std::vector<int> gpus;  // positions
};

std::vector<Group> GroupByDigest(const std::vector<GpuDigests>& digests, std::size_t computation) {
  std::vector<Group> groups;
  for (std::size_t g = 0; g < digests.size(); ++g) {
    const std::uint64_t d = OutputDigest(digests[g].chunks[computation]);
    auto it = std::find_if(groups.begin(), groups.end(),
                           [d](const Group& group) { return group.digest == d; });
    if (it == groups.end()) {
      groups.push_back({d, {}});
      it = groups.end() - 1;
    }
    it->gpus.push_back(static_cast<int>(g));
  }
  return groups;
}

// The group holding more than half of the GPUs, if any.
const Group* StrictMajority(const std::vector<Group>& groups, std::size_t gpus) {
  for (const Group& group : groups) {
    if (2 * group.gpus.size() > gpus) return &group;
  }
  return nullptr;
}

std::vector<std::string> Names(const std::vector<int>& positions,
                               const std::vector<std::string>& gpus) {
  std::vector<std::string> names;
  names.reserve(positions.size());
  for (int p : positions) names.push_back(gpus[p]);
  return names;
}

// Where GPU `odd`'s output of computation `c` first differs from GPU `peer`'s: the first chunk
// whose digests differ, copied back from both, element by element.
Result<std::string> FirstDifference(const Computation& c, int computation, int odd, int peer,
                                    const std::vector<GpuDigests>& digests,
                                    const std::vector<std::string>& gpus, std::size_t others,
                                    const ElementReader& read) {
  const auto& mine = digests[odd].chunks[computation];
  const auto& theirs = digests[peer].chunks[computation];
  if (mine.size() != theirs.size()) {
    return Internal("consistency: " + gpus[odd] + " and " + gpus[peer] + " have " +
                    std::to_string(mine.size()) + " and " + std::to_string(theirs.size()) +
                    " digest chunks of " + c.name);
  }
  std::size_t chunk = 0;
  while (chunk < mine.size() && mine[chunk] == theirs[chunk]) ++chunk;
  const std::int64_t first = static_cast<std::int64_t>(chunk) * kDigestChunkElements;
  const std::int64_t count = std::min(kDigestChunkElements, c.Elements() - first);
  const std::string the_others =
      others == 1 ? gpus[peer] : "the other " + std::to_string(others) + " GPUs";
  if (chunk == mine.size() || count <= 0) {
    return "its digest differs but no chunk's does (" + the_others + ")";
  }
  ASSIGN_OR_RETURN(const std::vector<std::uint64_t> a, read(odd, computation, first, count));
  ASSIGN_OR_RETURN(const std::vector<std::uint64_t> b, read(peer, computation, first, count));
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] == b[i]) continue;
    return "first differing " + ElementName(c, first + static_cast<std::int64_t>(i)) + ": " +
           Value(a[i], c.type) + " on " + gpus[odd] + ", " + Value(b[i], c.type) + " on " +
           the_others;
  }
  return "elements " + std::to_string(first) + ".." + std::to_string(first + count - 1) +
         " digest differently but read back the same (the digest or the copy went wrong on " +
         gpus[odd] + ")";
}

std::string JoinSome(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < kMostListed; ++i) {
    out += (i == 0 ? "" : "; ") + items[i];
  }
  if (items.size() > kMostListed) {
    out += "; and " + std::to_string(items.size() - kMostListed) + " more";
  }
  return out;
}

constexpr const char* kOneGpu =
    "one GPU cannot be screened against peers: the screen compares GPUs with each other (two "
    "to check that they agree, three or more for a majority to name a wrong one)";

// ---- the host runner, for unit tests ------------------------------------------------------

class HostConsistencyRunner final : public cuda::ConsistencyRunner {
 public:
  HostConsistencyRunner(int gpus, std::vector<Computation> computations,
                        std::vector<PlantedFlip> flips)
      : gpus_(gpus), computations_(std::move(computations)), flips_(std::move(flips)) {}

  int size() const override { return gpus_; }
  const std::vector<Computation>& Computations() const override { return computations_; }

  Result<std::vector<GpuDigests>> Run() override {
    outputs_.assign(static_cast<std::size_t>(gpus_), {});
    std::vector<GpuDigests> out(static_cast<std::size_t>(gpus_));
    for (int g = 0; g < gpus_; ++g) {
      for (std::size_t c = 0; c < computations_.size(); ++c) {
        std::vector<std::uint64_t> values = Expected(c);
        for (const PlantedFlip& f : flips_) {
          if (f.gpu == g && f.computation == static_cast<int>(c) && f.element >= 0 &&
              f.element < static_cast<std::int64_t>(values.size())) {
            values[static_cast<std::size_t>(f.element)] ^= 1ULL << static_cast<unsigned>(f.bit);
          }
        }
        std::vector<std::uint64_t> chunks(
            static_cast<std::size_t>(DigestChunks(static_cast<std::int64_t>(values.size()))), 0);
        for (std::size_t i = 0; i < values.size(); ++i) {
          chunks[i / static_cast<std::size_t>(kDigestChunkElements)] += ElementDigest(i, values[i]);
        }
        out[g].chunks.push_back(std::move(chunks));
        outputs_[g].push_back(std::move(values));
      }
      out[g].seconds = 0.001 * (1 + g);
    }
    return out;
  }

  Result<std::vector<std::uint64_t>> ReadElements(int gpu, int computation, std::int64_t first,
                                                  std::int64_t count) override {
    if (gpu < 0 || gpu >= static_cast<int>(outputs_.size()) || computation < 0 ||
        computation >= static_cast<int>(outputs_[gpu].size())) {
      return InvalidArgument("host consistency runner: nothing computed there");
    }
    const auto& values = outputs_[gpu][computation];
    if (first < 0 || count < 0 || first + count > static_cast<std::int64_t>(values.size())) {
      return InvalidArgument("host consistency runner: elements out of range");
    }
    return std::vector<std::uint64_t>(values.begin() + first, values.begin() + first + count);
  }

 private:
  // The same finite values on every GPU: fp32 in the low 32 bits, fp64 in all 64.
  std::vector<std::uint64_t> Expected(std::size_t c) const {
    const Computation& comp = computations_[c];
    std::vector<std::uint64_t> values(static_cast<std::size_t>(comp.Elements()));
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double v =
          static_cast<double>(memtest::SplitMix64((c << 40U) ^ i) >> 11U) * 0x1p-53 * 4 - 2;
      if (comp.type == ElementType::kF64) {
        std::memcpy(&values[i], &v, sizeof(v));
      } else {
        const auto f = static_cast<float>(v);
        std::uint32_t word = 0;
        std::memcpy(&word, &f, sizeof(word));
        values[i] = word;
      }
    }
    return values;
  }

  int gpus_;
  std::vector<Computation> computations_;
  std::vector<PlantedFlip> flips_;
  std::vector<std::vector<std::vector<std::uint64_t>>> outputs_;  // [gpu][computation]
};

// ---- the test -----------------------------------------------------------------------------

class ConsistencyRun final : public TestRun {
 public:
  ConsistencyRun(std::unique_ptr<cuda::ConsistencyRunner> runner, std::vector<std::string> gpus,
                 std::map<std::string, std::string> details)
      : runner_(std::move(runner)), gpus_(std::move(gpus)), details_(std::move(details)) {}

  Result<Sample> RunSample() override {
    ASSIGN_OR_RETURN(const std::vector<GpuDigests> digests, runner_->Run());
    const auto& computations = runner_->Computations();
    ASSIGN_OR_RETURN(
        const Screen screen,
        JudgeScreen(computations, gpus_, digests,
                    [this](int gpu, int computation, std::int64_t first, std::int64_t count) {
                      return runner_->ReadElements(gpu, computation, first, count);
                    }));
    double slowest = 0;
    for (const GpuDigests& d : digests) slowest = std::max(slowest, d.seconds);
    std::string changed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++samples_;
      for (auto it = details_.begin(); it != details_.end();) {
        it = it->first.rfind("digest.", 0) == 0 ? details_.erase(it) : std::next(it);
      }
      for (auto& [key, value] : DigestDetails(computations, gpus_, digests)) details_[key] = value;
      details_["screen"] = "sample " + std::to_string(samples_) + ": " +
                           verdict::VerdictName(screen.verdict) + ": " + screen.reason;
      // The inputs are the same every sample: a majority whose bits move is no reference.
      for (const auto& [name, digest] : screen.majority) {
        auto [first, inserted] = first_majority_.emplace(name, digest);
        if (!inserted && first->second != digest && changed.empty()) {
          changed = name + "'s majority digest changed between samples (" +
                    FormatDigest(first->second) + ", then " + FormatDigest(digest) + ")";
        }
      }
    }
    switch (screen.verdict) {
      case verdict::Verdict::kPass:
        break;
      case verdict::Verdict::kFail:
        return Status(Code::kDataLoss, screen.reason);
      default:
        return Internal(screen.reason);
    }
    if (!changed.empty()) {
      return Internal("consistency: " + changed +
                      ": the computation is not deterministic on this node, so it screens nothing");
    }
    return Sample{{"screenSeconds", slowest}};
  }

  std::map<std::string, std::string> Details() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return details_;
  }

 private:
  std::unique_ptr<cuda::ConsistencyRunner> runner_;
  std::vector<std::string> gpus_;
  mutable std::mutex mu_;
  int samples_ = 0;
  std::map<std::string, std::uint64_t> first_majority_;
  std::map<std::string, std::string> details_;
};

class ConsistencyTest final : public Test {
 public:
  ConsistencyTest(RunnerFactory factory, bool require_device)
      : factory_(std::move(factory)), require_device_(require_device) {
    info_.type = "consistency";
    info_.description =
        "the same deterministic GEMMs (fp64, fp32, fp16, bf16), reduction and transcendental "
        "map on every GPU, outputs compared bit for bit: a GPU that differs from the majority "
        "FAILs (silent data corruption suspected), named with the first differing element";
    info_.scope = Scope::kAllGpus;
    const std::vector<std::string>& dtypes = cuda::ConsistencyGemmDtypes();
    std::string all;
    for (const std::string& d : dtypes) all += (all.empty() ? "" : ", ") + d;
    info_.params = {
        ChoiceParam("gemmDtypes", ParamType::kStringList, "[" + all + "]",
                    "GEMM input types screened (fp16 and bf16 on the tensor cores)", dtypes),
        IntParam("gemmSize", 2048, "",
                 "rows, columns and inner dimension of each GEMM; a "
                 "multiple of 64",
                 64, 16384),
        IntParam("vectorElements", 1 << 24, "",
                 "inputs of the reduction and the transcendental map; a multiple of 4096", 4096,
                 1LL << 30),
        IntParam("seed", 1, "", "seed of the inputs (digests compare only under the same seed)", 0,
                 1e15),
    };
    info_.metrics = {
        gpu::Metric("screenSeconds", "s", false,
                    "GPU seconds of one screen's computations on the slowest GPU"),
    };
  }

  const TestInfo& Info() const override { return info_; }

  // A plain kernel reaches a fraction of the datasheet: about 5 TFLOP/s on the SIMT GEMMs and
  // 50 on the tensor-core ones (estimates), and the vector passes at HBM speed.
  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    const auto n = static_cast<double>(params.Int("gemmSize"));
    double seconds = 0;
    for (const std::string& d : params.StringList("gemmDtypes")) {
      seconds += 2 * n * n * n / (d == "fp16" || d == "bf16" ? 50e12 : 5e12);
    }
    return seconds +
           3 * 4 * static_cast<double>(params.Int("vectorElements")) / nominal::kHbmBytesPerSecond;
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& target) const override {
    // CUDA first: without a driver the answer is "no CUDA device", not "one GPU".
    if (require_device_) {
      for (int ordinal : target.devices.empty() ? std::vector<int>{0} : target.devices) {
        RETURN_IF_ERROR(cuda::RequireCudaDevice(ordinal));
      }
    }
    if (target.devices.size() < 2) {
      return FailedPrecondition(std::string(kOneGpu) + "; " + target.Name() + " has " +
                                std::to_string(target.devices.size()));
    }
    cuda::ConsistencyConfig config;
    config.devices = target.devices;
    config.gemm_dtypes = params.StringList("gemmDtypes");
    config.gemm_size = params.Int("gemmSize");
    config.vector_elements = params.Int("vectorElements");
    config.seed = static_cast<std::uint64_t>(params.Int("seed"));
    if (config.gemm_dtypes.empty()) {
      return InvalidArgument("consistency: gemmDtypes is empty");
    }
    if (config.gemm_size % 64 != 0) {
      return InvalidArgument("consistency: gemmSize must be a multiple of 64, not " +
                             std::to_string(config.gemm_size));
    }
    if (config.vector_elements % 4096 != 0) {
      return InvalidArgument("consistency: vectorElements must be a multiple of 4096, not " +
                             std::to_string(config.vector_elements));
    }
    ASSIGN_OR_RETURN(auto runner, factory_(config));
    std::vector<std::string> gpus;
    for (int ordinal : target.devices) gpus.push_back("gpu" + std::to_string(ordinal));
    std::map<std::string, std::string> details;
    std::string names;
    for (const Computation& c : runner->Computations()) {
      names += (names.empty() ? "" : ", ") + c.name;
    }
    details["computations"] = names;
    details["inputs"] = "seed " + std::to_string(config.seed) + ", GEMMs " +
                        std::to_string(config.gemm_size) + "x" + std::to_string(config.gemm_size) +
                        "x" + std::to_string(config.gemm_size) + ", vectors of " +
                        std::to_string(config.vector_elements) + " elements";
    return std::unique_ptr<TestRun>(
        std::make_unique<ConsistencyRun>(std::move(runner), std::move(gpus), std::move(details)));
  }

 private:
  RunnerFactory factory_;
  bool require_device_;
  TestInfo info_;
};

}  // namespace

std::string FormatDigest(std::uint64_t digest) { return Hex(digest, ElementType::kF64); }

std::uint64_t OutputDigest(const std::vector<std::uint64_t>& chunks) {
  return CombineChunkDigests(chunks.data(), static_cast<std::int64_t>(chunks.size()));
}

Result<Screen> JudgeScreen(const std::vector<Computation>& computations,
                           const std::vector<std::string>& gpus,
                           const std::vector<GpuDigests>& digests, const ElementReader& read) {
  if (digests.size() != gpus.size()) {
    return InvalidArgument("consistency: " + std::to_string(digests.size()) +
                           " GPUs' digests for " + std::to_string(gpus.size()) + " GPUs");
  }
  for (const GpuDigests& d : digests) {
    if (d.chunks.size() != computations.size()) {
      return InvalidArgument("consistency: a GPU has digests of " +
                             std::to_string(d.chunks.size()) + " computations, not " +
                             std::to_string(computations.size()));
    }
  }
  Screen screen;
  if (gpus.empty()) {
    screen.verdict = verdict::Verdict::kError;
    screen.reason = "no GPU to screen";
    return screen;
  }
  if (gpus.size() == 1) {
    screen.verdict = verdict::Verdict::kSkipped;
    screen.reason = kOneGpu;
    return screen;
  }
  std::vector<std::string> failures;
  std::vector<std::string> ties;
  for (std::size_t c = 0; c < computations.size(); ++c) {
    const Computation& comp = computations[c];
    const std::vector<Group> groups = GroupByDigest(digests, c);
    const Group* majority = StrictMajority(groups, gpus.size());
    if (majority == nullptr) {
      std::string text;
      for (const Group& group : groups) {
        text += (text.empty() ? "" : " vs ") + NameSome(Names(group.gpus, gpus), 4) +
                (group.gpus.size() == 1 ? " gives " : " give ") + FormatDigest(group.digest);
      }
      ties.push_back(comp.name + " (" + text + ")");
      continue;
    }
    screen.majority[comp.name] = majority->digest;
    for (const Group& group : groups) {
      if (&group == majority) continue;
      for (int odd : group.gpus) {
        ASSIGN_OR_RETURN(const std::string where,
                         FirstDifference(comp, static_cast<int>(c), odd, majority->gpus.front(),
                                         digests, gpus, majority->gpus.size(), read));
        failures.push_back(gpus[odd] + " differs from the majority (" +
                           std::to_string(majority->gpus.size()) + " of " +
                           std::to_string(gpus.size()) + " GPUs) in " + comp.name + ": " + where);
        if (std::find(screen.suspects.begin(), screen.suspects.end(), gpus[odd]) ==
            screen.suspects.end()) {
          screen.suspects.push_back(gpus[odd]);
        }
      }
    }
  }
  const std::string no_majority =
      "no strict majority among the " + std::to_string(gpus.size()) + " GPUs in ";
  if (!failures.empty()) {
    screen.verdict = verdict::Verdict::kFail;
    screen.reason = "silent data corruption suspected: " + JoinSome(failures);
    if (!ties.empty()) screen.reason += "; and " + no_majority + JoinSome(ties);
  } else if (!ties.empty()) {
    screen.verdict = verdict::Verdict::kError;
    screen.reason = no_majority + JoinSome(ties) +
                    ": the outputs differ, but no output is the majority's, so the screen "
                    "cannot name the wrong GPU";
  } else {
    screen.verdict = verdict::Verdict::kPass;
    screen.reason = "all " + std::to_string(gpus.size()) + " GPUs computed the same bits in " +
                    std::to_string(computations.size()) + " computations";
  }
  return screen;
}

std::map<std::string, std::string> DigestDetails(const std::vector<Computation>& computations,
                                                 const std::vector<std::string>& gpus,
                                                 const std::vector<GpuDigests>& digests) {
  std::map<std::string, std::string> out;
  if (digests.size() != gpus.size()) return out;
  for (std::size_t c = 0; c < computations.size(); ++c) {
    const std::string key = "digest." + computations[c].name;
    const std::vector<Group> groups = GroupByDigest(digests, c);
    const Group* majority = StrictMajority(groups, gpus.size());
    if (majority != nullptr) out[key] = FormatDigest(majority->digest);
    for (const Group& group : groups) {
      if (&group == majority) continue;
      for (int g : group.gpus) out[key + "." + gpus[g]] = FormatDigest(group.digest);
    }
  }
  return out;
}

std::unique_ptr<cuda::ConsistencyRunner> MakeHostConsistencyRunner(
    int gpus, std::vector<Computation> computations, std::vector<PlantedFlip> flips) {
  return std::make_unique<HostConsistencyRunner>(gpus, std::move(computations), std::move(flips));
}

std::unique_ptr<Test> MakeConsistencyTestWith(RunnerFactory factory, bool require_device) {
  return std::make_unique<ConsistencyTest>(std::move(factory), require_device);
}

}  // namespace consistency

std::unique_ptr<Test> MakeConsistencyTest() {
  return consistency::MakeConsistencyTestWith(cuda::CreateConsistencyRunner, true);
}

}  // namespace perfgate::kernels
