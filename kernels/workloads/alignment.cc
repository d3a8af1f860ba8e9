#include "kernels/workloads/alignment.h"

#include <algorithm>
#include <numeric>

namespace perfgate::kernels::align {

const SubstitutionMatrix& Blosum62() {
  // clang-format off
  static const SubstitutionMatrix kMatrix = {
  //  A   R   N   D   C   Q   E   G   H   I   L   K   M   F   P   S   T   W   Y   V
      4, -1, -2, -2,  0, -1, -1,  0, -2, -1, -1, -1, -1, -2, -1,  1,  0, -3, -2,  0,  // A
     -1,  5,  0, -2, -3,  1,  0, -2,  0, -3, -2,  2, -1, -3, -2, -1, -1, -3, -2, -3,  // R
     -2,  0,  6,  1, -3,  0,  0,  0,  1, -3, -3,  0, -2, -3, -2,  1,  0, -4, -2, -3,  // N
     -2, -2,  1,  6, -3,  0,  2, -1, -1, -3, -4, -1, -3, -3, -1,  0, -1, -4, -3, -3,  // D
      0, -3, -3, -3,  9, -3, -4, -3, -3, -1, -1, -3, -1, -2, -3, -1, -1, -2, -2, -1,  // C
     -1,  1,  0,  0, -3,  5,  2, -2,  0, -3, -2,  1,  0, -3, -1,  0, -1, -2, -1, -2,  // Q
     -1,  0,  0,  2, -4,  2,  5, -2,  0, -3, -3,  1, -2, -3, -1,  0, -1, -3, -2, -2,  // E
      0, -2,  0, -1, -3, -2, -2,  6, -2, -4, -4, -2, -3, -3, -2,  0, -2, -2, -3, -3,  // G
     -2,  0,  1, -1, -3,  0,  0, -2,  8, -3, -3, -1, -2, -1, -2, -1, -2, -2,  2, -3,  // H
     -1, -3, -3, -3, -1, -3, -3, -4, -3,  4,  2, -3,  1,  0, -3, -2, -1, -3, -1,  3,  // I
     -1, -2, -3, -4, -1, -2, -3, -4, -3,  2,  4, -2,  2,  0, -3, -2, -1, -2, -1,  1,  // L
     -1,  2,  0, -1, -3,  1,  1, -2, -1, -3, -2,  5, -1, -3, -1,  0, -1, -3, -2, -2,  // K
     -1, -1, -2, -3, -1,  0, -2, -3, -2,  1,  2, -1,  5,  0, -2, -1, -1, -1, -1,  1,  // M
     -2, -3, -3, -3, -2, -3, -3, -3, -1,  0,  0, -3,  0,  6, -4, -2, -2,  1,  3, -1,  // F
     -1, -2, -2, -1, -3, -1, -1, -2, -2, -3, -3, -1, -2, -4,  7, -1, -1, -4, -3, -2,  // P
      1, -1,  1,  0, -1,  0,  0,  0, -1, -2, -2,  0, -1, -2, -1,  4,  1, -3, -2, -2,  // S
      0, -1,  0, -1, -1, -1, -1, -2, -2, -1, -1, -1, -1, -2, -1,  1,  5, -2, -2,  0,  // T
     -3, -3, -4, -4, -2, -2, -3, -2, -2, -3, -2, -3, -1,  1, -4, -3, -2, 11,  2, -3,  // W
     -2, -2, -2, -3, -2, -1, -2, -3,  2, -1, -1, -2, -1,  3, -3, -2, -2,  2,  7, -1,  // Y
      0, -3, -3, -3, -1, -2, -2, -3, -3,  3,  1, -2,  1, -1, -2, -2,  0, -3, -1,  4,  // V
  };
  // clang-format on
  return kMatrix;
}

std::vector<std::uint8_t> Encode(std::string_view letters) {
  std::vector<std::uint8_t> out;
  for (char c : letters) {
    const std::size_t i = kAminoAcids.find(c);
    if (i != std::string_view::npos) out.push_back(static_cast<std::uint8_t>(i));
  }
  return out;
}

void SequenceSet::Add(const std::vector<std::uint8_t>& sequence) {
  residues.insert(residues.end(), sequence.begin(), sequence.end());
  offsets.push_back(static_cast<std::int64_t>(residues.size()));
}

namespace {
std::uint64_t SplitMix64(std::uint64_t* state) {
  std::uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

SequenceSet SyntheticSequences(std::uint64_t seed, int count, int min_length, int max_length) {
  SequenceSet set;
  std::uint64_t state = seed;
  const int lo = std::max(0, std::min(min_length, max_length));
  const int hi = std::max(lo, max_length);
  std::vector<std::uint8_t> sequence;
  for (int s = 0; s < count; ++s) {
    const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
    const int length = lo + static_cast<int>(SplitMix64(&state) % span);
    sequence.resize(static_cast<std::size_t>(length));
    for (std::uint8_t& r : sequence) {
      r = static_cast<std::uint8_t>(SplitMix64(&state) % kAlphabet);
    }
    set.Add(sequence);
  }
  return set;
}

int LocalAlignmentScore(const std::uint8_t* a, std::int64_t a_length, const std::uint8_t* b,
                        std::int64_t b_length, const SubstitutionMatrix& matrix,
                        const Scoring& scoring) {
  const int open_extend = scoring.gap_open + scoring.gap_extend;
  const int extend = scoring.gap_extend;
  // h[j]: H of the row above until column j of this row overwrites it; e[j]: the best score
  // ending with a[i] against a gap (vertical move) in column j; f: b[j] against a gap
  // (horizontal move) in this row.
  std::vector<int> h(static_cast<std::size_t>(b_length) + 1, 0);
  std::vector<int> e(static_cast<std::size_t>(b_length) + 1, 0);
  int best = 0;
  for (std::int64_t i = 1; i <= a_length; ++i) {
    const std::int8_t* row = matrix.data() + static_cast<std::ptrdiff_t>(a[i - 1]) * kAlphabet;
    int diagonal = 0;  // H[i-1][j-1]
    int f = 0;
    int left = 0;  // H[i][j-1]
    for (std::int64_t j = 1; j <= b_length; ++j) {
      const auto ju = static_cast<std::size_t>(j);
      e[ju] = std::max(h[ju] - open_extend, e[ju] - extend);
      f = std::max(left - open_extend, f - extend);
      const int value = std::max({0, diagonal + row[b[j - 1]], e[ju], f});
      diagonal = h[ju];
      h[ju] = value;
      left = value;
      best = std::max(best, value);
    }
  }
  return best;
}

double AlignmentCells(const SequenceSet& queries, const SequenceSet& targets) {
  return static_cast<double>(queries.residues.size()) *
         static_cast<double>(targets.residues.size());
}

SequenceSet SortedByLength(const SequenceSet& set, std::vector<std::int64_t>* order) {
  std::vector<std::int64_t> index(set.size());
  std::iota(index.begin(), index.end(), 0);
  std::stable_sort(index.begin(), index.end(), [&](std::int64_t x, std::int64_t y) {
    return set.length(static_cast<std::size_t>(x)) > set.length(static_cast<std::size_t>(y));
  });
  SequenceSet sorted;
  sorted.residues.reserve(set.residues.size());
  for (const std::int64_t s : index) {
    const auto su = static_cast<std::size_t>(s);
    sorted.residues.insert(sorted.residues.end(), set.data(su), set.data(su) + set.length(su));
    sorted.offsets.push_back(static_cast<std::int64_t>(sorted.residues.size()));
  }
  if (order != nullptr) *order = std::move(index);
  return sorted;
}

}  // namespace perfgate::kernels::align
