// sequence-search: an application workload in the spirit of GPU-BLAST and CUDASW++: Smith-
// Waterman local alignment with affine gaps (BLOSUM62, gap open 11 / extend 1 by default) of
// every query against a database of synthetic protein sequences from a fixed seed.
//   cells = sum over queries and targets of |query| x |target|
//         = (query residues) x (database residues)
//   GCUPS = cells / GPU seconds / 1e9       (giga cell updates per second)
// Every sample checks a spread of (query, target) scores, first and last pair included,
// against the host scorer (alignment.h); one wrong score fails the sample (DataLoss).
#include <algorithm>
#include <memory>

#include "kernels/cuda/test_support.h"
#include "kernels/test_factories.h"
#include "kernels/workloads/alignment.h"
#include "kernels/workloads/workload_backend.h"
#include "kernels/workloads/workload_factories.h"

namespace perfgate::kernels {
namespace {

class SequenceSearchRun final : public TestRun {
 public:
  SequenceSearchRun(std::unique_ptr<workloads::SwAligner> aligner, align::SequenceSet queries,
                    align::SequenceSet targets, align::Scoring scoring, int verify_pairs,
                    std::map<std::string, std::string> details)
      : aligner_(std::move(aligner)),
        queries_(std::move(queries)),
        targets_(std::move(targets)),
        scoring_(scoring),
        pairs_(gpu::SampleIndices(static_cast<std::int64_t>(queries_.size() * targets_.size()),
                                  verify_pairs)),
        details_(std::move(details)) {}

  Result<Sample> RunSample() override {
    ASSIGN_OR_RETURN(const double seconds, aligner_->Run());
    ASSIGN_OR_RETURN(const std::vector<int> scores, aligner_->Scores());
    RETURN_IF_ERROR(Verify(scores));
    Sample sample;
    sample["gcups"] = seconds > 0 ? align::AlignmentCells(queries_, targets_) / seconds / 1e9 : 0;
    sample["searchSeconds"] = seconds;
    return sample;
  }

  std::map<std::string, std::string> Details() const override { return details_; }

 private:
  Status Verify(const std::vector<int>& scores) const {
    gpu::Mismatch m;
    const std::size_t targets = targets_.size();
    for (const std::int64_t pair : pairs_) {
      const auto p = static_cast<std::size_t>(pair);
      const std::size_t q = p / targets;
      const std::size_t t = p % targets;
      const int expected =
          align::LocalAlignmentScore(queries_.data(q), queries_.length(q), targets_.data(t),
                                     targets_.length(t), align::Blosum62(), scoring_);
      ++m.checked;
      const int got = p < scores.size() ? scores[p] : -1;
      if (got == expected) continue;
      if (m.wrong++ == 0) {
        m.first = "query " + std::to_string(q) + " x target " + std::to_string(t) + ": GPU " +
                  std::to_string(got) + ", host " + std::to_string(expected);
      }
    }
    return gpu::MismatchStatus(m, "sequence-search scores");
  }

  std::unique_ptr<workloads::SwAligner> aligner_;
  align::SequenceSet queries_;
  align::SequenceSet targets_;
  align::Scoring scoring_;
  std::vector<std::int64_t> pairs_;
  std::map<std::string, std::string> details_;
};

class SequenceSearchTest final : public Test {
 public:
  SequenceSearchTest() {
    info_.type = "sequence-search";
    info_.description =
        "protein sequence search: Smith-Waterman local alignment, affine gaps, BLOSUM62, of "
        "synthetic queries against a synthetic database (fixed seed); sampled scores checked "
        "against the host scorer";
    info_.scope = Scope::kGpu;
    info_.params = {
        IntParam("queries", 8, "", "query sequences, each aligned against every target", 1, 1024),
        IntParam("queryLength", 256, "residues", "length of each query", 8,
                 workloads::kMaxQueryLength),
        IntParam("targets", 20000, "", "database sequences", 1, 10000000),
        IntParam("targetLengthMin", 64, "residues", "shortest database sequence", 1, 100000),
        IntParam("targetLengthMax", 512, "residues", "longest database sequence", 1, 100000),
        IntParam("seed", 1, "", "seed of the synthetic sequences", 0, 1e18),
        IntParam("gapOpen", 11, "", "gap opening cost (a gap of L costs open + L * extend)", 0,
                 100),
        IntParam("gapExtend", 1, "", "gap extension cost per residue", 0, 100),
        IntParam("verifyPairs", 128, "", "query x target scores checked on the host per sample", 1,
                 1 << 20),
    };
    info_.metrics = {
        gpu::Metric("gcups", "GCUPS", true,
                    "query residues x database residues / GPU seconds / 1e9"),
        gpu::Metric("searchSeconds", "s", false, "GPU seconds of one search of every query"),
    };
  }

  const TestInfo& Info() const override { return info_; }

  // About 30 GCUPS on an H100-class GPU for this scorer (one thread per target).
  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    const double mean_target =
        0.5 * static_cast<double>(params.Int("targetLengthMin") + params.Int("targetLengthMax"));
    const double cells = static_cast<double>(params.Int("queries") * params.Int("queryLength")) *
                         static_cast<double>(params.Int("targets")) * mean_target;
    return cells / 30e9;
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& target) const override {
    if (params.Int("targetLengthMin") > params.Int("targetLengthMax")) {
      return InvalidArgument("sequence-search: targetLengthMin above targetLengthMax");
    }
    ASSIGN_OR_RETURN(const int ordinal, gpu::SingleGpu(target));
    const auto seed = static_cast<std::uint64_t>(params.Int("seed"));
    const int length = static_cast<int>(params.Int("queryLength"));
    align::SequenceSet queries =
        align::SyntheticSequences(seed, static_cast<int>(params.Int("queries")), length, length);
    align::SequenceSet targets =
        align::SyntheticSequences(seed + 1, static_cast<int>(params.Int("targets")),
                                  static_cast<int>(params.Int("targetLengthMin")),
                                  static_cast<int>(params.Int("targetLengthMax")));
    // Longest first: a warp's threads then align targets of similar length.
    targets = align::SortedByLength(targets, nullptr);
    align::Scoring scoring;
    scoring.gap_open = static_cast<int>(params.Int("gapOpen"));
    scoring.gap_extend = static_cast<int>(params.Int("gapExtend"));
    ASSIGN_OR_RETURN(auto aligner, workloads::CreateSwAligner(ordinal, queries, targets, scoring));
    std::map<std::string, std::string> details;
    details["database"] = std::to_string(targets.size()) + " sequences, " +
                          std::to_string(targets.residues.size()) + " residues (lengths " +
                          std::to_string(params.Int("targetLengthMin")) + "-" +
                          std::to_string(params.Int("targetLengthMax")) + ", seed " +
                          std::to_string(seed + 1) + "), sorted longest first";
    details["queries"] = std::to_string(queries.size()) + " x " + std::to_string(length) +
                         " residues (seed " + std::to_string(seed) + ")";
    details["scoring"] = "BLOSUM62, gap open " + std::to_string(scoring.gap_open) + " extend " +
                         std::to_string(scoring.gap_extend);
    details["launch"] = aligner->Description();
    details["verification"] = std::to_string(params.Int("verifyPairs")) +
                              " scores per sample against the host Smith-Waterman scorer";
    return std::unique_ptr<TestRun>(std::make_unique<SequenceSearchRun>(
        std::move(aligner), std::move(queries), std::move(targets), scoring,
        static_cast<int>(params.Int("verifyPairs")), std::move(details)));
  }

 private:
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakeSequenceSearchTest() { return std::make_unique<SequenceSearchTest>(); }

}  // namespace perfgate::kernels
