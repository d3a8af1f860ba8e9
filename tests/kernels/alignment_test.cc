// The host alignment scorer (the reference every GPU score of sequence-search is checked
// against) against an independent implementation written here: the three-state Gotoh
// recurrences over full (m+1) x (n+1) matrices, in a different form from the scorer's
// linear-space H/E/F rows. Plus tiny cases worked by hand.
#include "kernels/workloads/alignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace perfgate::kernels::align {
namespace {

int Sub(std::uint8_t x, std::uint8_t y) { return Blosum62()[x * kAlphabet + y]; }

// M: best local alignment ending with a[i] aligned to b[j]; X: ending with a[i] against a
// gap; Y: ending with b[j] against a gap. A gap of length L costs open + L * extend. A local
// alignment starts fresh (0) only before a match, and the score is the best M.
int ReferenceScore(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b, int open,
                   int extend) {
  const std::size_t m = a.size();
  const std::size_t n = b.size();
  const int kNone = std::numeric_limits<int>::min() / 4;
  std::vector<std::vector<int>> M(m + 1, std::vector<int>(n + 1, kNone));
  std::vector<std::vector<int>> X = M;
  std::vector<std::vector<int>> Y = M;
  int best = 0;
  for (std::size_t i = 1; i <= m; ++i) {
    for (std::size_t j = 1; j <= n; ++j) {
      const int before = std::max({0, M[i - 1][j - 1], X[i - 1][j - 1], Y[i - 1][j - 1]});
      M[i][j] = before + Sub(a[i - 1], b[j - 1]);
      X[i][j] = std::max(
          {M[i - 1][j] - open - extend, X[i - 1][j] - extend, Y[i - 1][j] - open - extend});
      Y[i][j] = std::max(
          {M[i][j - 1] - open - extend, Y[i][j - 1] - extend, X[i][j - 1] - open - extend});
      best = std::max(best, M[i][j]);
    }
  }
  return best;
}

int Score(std::string_view a, std::string_view b, Scoring scoring = {}) {
  const auto x = Encode(a);
  const auto y = Encode(b);
  return LocalAlignmentScore(x.data(), static_cast<std::int64_t>(x.size()), y.data(),
                             static_cast<std::int64_t>(y.size()), Blosum62(), scoring);
}

TEST(Blosum62, IsSymmetricWithTheKnownDiagonal) {
  for (int x = 0; x < kAlphabet; ++x) {
    for (int y = 0; y < kAlphabet; ++y) {
      EXPECT_EQ(Blosum62()[x * kAlphabet + y], Blosum62()[y * kAlphabet + x]) << x << "," << y;
    }
  }
  // NCBI's BLOSUM62: A/A 4, C/C 9, W/W 11, P/P 7, H/Y 2, W/A -3.
  const auto idx = [](char c) { return static_cast<int>(kAminoAcids.find(c)); };
  EXPECT_EQ(Blosum62()[idx('A') * kAlphabet + idx('A')], 4);
  EXPECT_EQ(Blosum62()[idx('C') * kAlphabet + idx('C')], 9);
  EXPECT_EQ(Blosum62()[idx('W') * kAlphabet + idx('W')], 11);
  EXPECT_EQ(Blosum62()[idx('P') * kAlphabet + idx('P')], 7);
  EXPECT_EQ(Blosum62()[idx('H') * kAlphabet + idx('Y')], 2);
  EXPECT_EQ(Blosum62()[idx('W') * kAlphabet + idx('A')], -3);
}

TEST(LocalAlignment, HandWorkedTinyCases) {
  EXPECT_EQ(Score("W", "W"), 11);
  // A/R = -1: a local alignment may be empty, so 0.
  EXPECT_EQ(Score("A", "R"), 0);
  EXPECT_EQ(Score("", "WWW"), 0);
  // A local alignment picks the best substring: W/W inside mismatches.
  EXPECT_EQ(Score("AWA", "RWR"), 11);
  // WWWW against WWAWW: WW-WW with a one-residue gap, 4 * 11 - (11 + 1) = 32, beats every
  // ungapped pairing (WWAW/WWWW: 11 + 11 - 3 + 11 = 30).
  EXPECT_EQ(Score("WWWW", "WWAWW"), 32);
  // A two-residue gap costs 11 + 2 = 13: 44 - 13 = 31 (ungapped: WW alone, 22).
  EXPECT_EQ(Score("WWWW", "WWAAWW"), 31);
  // With open 20 the gap is not worth it: 44 - 22 = 22 ties WW alone; so 22.
  EXPECT_EQ(Score("WWWW", "WWAAWW", {20, 1}), 22);
  // CWC against CWC: 9 + 11 + 9 = 29.
  EXPECT_EQ(Score("CWC", "CWC"), 29);
}

TEST(LocalAlignment, EqualsIndependentFullMatrixGotohOnRandomPairs) {
  const SequenceSet set = SyntheticSequences(42, 400, 0, 70);
  const Scoring settings[] = {{11, 1}, {10, 2}, {5, 1}, {0, 4}};
  int compared = 0;
  int nonzero = 0;
  for (std::size_t s = 0; s + 1 < set.size(); s += 2) {
    const std::vector<std::uint8_t> a(set.data(s), set.data(s) + set.length(s));
    const std::vector<std::uint8_t> b(set.data(s + 1), set.data(s + 1) + set.length(s + 1));
    const Scoring scoring = settings[(s / 2) % 4];
    const int expected = ReferenceScore(a, b, scoring.gap_open, scoring.gap_extend);
    const int got = LocalAlignmentScore(a.data(), static_cast<std::int64_t>(a.size()), b.data(),
                                        static_cast<std::int64_t>(b.size()), Blosum62(), scoring);
    ASSERT_EQ(got, expected) << "pair " << s << " lengths " << a.size() << " x " << b.size()
                             << " gaps " << scoring.gap_open << "/" << scoring.gap_extend;
    ++compared;
    nonzero += expected > 0;
  }
  EXPECT_EQ(compared, 200);
  EXPECT_GT(nonzero, 150);  // the cases exercise real alignments, not empty ones
}

TEST(LocalAlignment, RelatedSequencesAlignThroughGaps) {
  // A sequence against itself with three residues deleted: the best alignment spans the gap,
  // which exercises gap extension on long alignments; both implementations must agree.
  const SequenceSet set = SyntheticSequences(7, 20, 80, 120);
  for (std::size_t s = 0; s < set.size(); ++s) {
    std::vector<std::uint8_t> a(set.data(s), set.data(s) + set.length(s));
    std::vector<std::uint8_t> b = a;
    b.erase(b.begin() + 30, b.begin() + 33);  // a three-residue gap
    const int expected = ReferenceScore(a, b, 11, 1);
    EXPECT_EQ(LocalAlignmentScore(a.data(), static_cast<std::int64_t>(a.size()), b.data(),
                                  static_cast<std::int64_t>(b.size()), Blosum62(), {11, 1}),
              expected);
    EXPECT_EQ(LocalAlignmentScore(b.data(), static_cast<std::int64_t>(b.size()), a.data(),
                                  static_cast<std::int64_t>(a.size()), Blosum62(), {11, 1}),
              expected)
        << "the score is symmetric in its two sequences";
  }
}

TEST(SyntheticSequences, SameSeedSameSequencesWithinTheLengthRange) {
  const SequenceSet a = SyntheticSequences(99, 50, 10, 20);
  const SequenceSet b = SyntheticSequences(99, 50, 10, 20);
  EXPECT_EQ(a.residues, b.residues);
  EXPECT_EQ(a.offsets, b.offsets);
  ASSERT_EQ(a.size(), 50u);
  for (std::size_t s = 0; s < a.size(); ++s) {
    EXPECT_GE(a.length(s), 10);
    EXPECT_LE(a.length(s), 20);
  }
  for (std::uint8_t r : a.residues) EXPECT_LT(r, kAlphabet);
  EXPECT_NE(SyntheticSequences(100, 50, 10, 20).residues, a.residues);
  EXPECT_EQ(AlignmentCells(a, b), static_cast<double>(a.residues.size()) * b.residues.size());
}

TEST(SyntheticSequences, SortedByLengthKeepsEverySequenceAndItsOrigin) {
  const SequenceSet set = SyntheticSequences(5, 30, 1, 40);
  std::vector<std::int64_t> order;
  const SequenceSet sorted = SortedByLength(set, &order);
  ASSERT_EQ(sorted.size(), set.size());
  for (std::size_t s = 0; s < sorted.size(); ++s) {
    if (s > 0) {
      EXPECT_GE(sorted.length(s - 1), sorted.length(s));
    }
    const auto o = static_cast<std::size_t>(order[s]);
    EXPECT_TRUE(std::equal(sorted.data(s), sorted.data(s) + sorted.length(s), set.data(o),
                           set.data(o) + set.length(o)));
  }
}

}  // namespace
}  // namespace perfgate::kernels::align
