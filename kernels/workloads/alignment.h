// Smith-Waterman local alignment with affine gaps (Gotoh), the scoring of sequence-search:
// the host scorer every GPU score is checked against, the BLOSUM62 substitution matrix, and the
// synthetic protein sequences both sides align. Pure functions on standard types.
//
// Scores: a substitution scores BLOSUM62[a][b]; a gap of length L costs gap_open + L *
// gap_extend (BLAST's convention: open 11, extend 1 makes a one-residue gap cost 12). The
// local score is the best over all pairs of substrings, never below 0.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace perfgate::kernels::align {

// The 20 standard amino acids in BLOSUM62's order; a residue is stored as its index here.
inline constexpr std::string_view kAminoAcids = "ARNDCQEGHILKMFPSTWYV";
inline constexpr int kAlphabet = 20;
inline constexpr std::size_t kMatrixEntries = 400;  // kAlphabet * kAlphabet

// BLOSUM62 (Henikoff & Henikoff 1992; NCBI's BLOSUM62 file), rows and columns in kAminoAcids
// order, half-bit units.
using SubstitutionMatrix = std::array<std::int8_t, kMatrixEntries>;
const SubstitutionMatrix& Blosum62();

struct Scoring {
  int gap_open = 11;
  int gap_extend = 1;
};

// Residue indices of "WAW" -> {17, 0, 17}; characters outside kAminoAcids are dropped.
std::vector<std::uint8_t> Encode(std::string_view letters);

// Many sequences in one array: sequence s is residues[offsets[s] .. offsets[s + 1]).
struct SequenceSet {
  std::vector<std::uint8_t> residues;
  std::vector<std::int64_t> offsets{0};
  std::size_t size() const { return offsets.size() - 1; }
  std::int64_t length(std::size_t s) const { return offsets[s + 1] - offsets[s]; }
  const std::uint8_t* data(std::size_t s) const { return residues.data() + offsets[s]; }
  void Add(const std::vector<std::uint8_t>& sequence);
};

// `count` sequences of uniformly random length in [min_length, max_length] and uniformly
// random residues, from `seed` (splitmix64): the same seed gives the same sequences everywhere.
SequenceSet SyntheticSequences(std::uint64_t seed, int count, int min_length, int max_length);

// The local alignment score of a against b (Gotoh's recurrences in linear space: one row of
// H and E, F carried along the row). O(|a| |b|) time.
int LocalAlignmentScore(const std::uint8_t* a, std::int64_t a_length, const std::uint8_t* b,
                        std::int64_t b_length, const SubstitutionMatrix& matrix,
                        const Scoring& scoring);

// Cells (|a| x |b|) of every query against every target: the numerator of GCUPS.
double AlignmentCells(const SequenceSet& queries, const SequenceSet& targets);

// Sorted by length, longest first: a GPU warp then aligns targets of similar length and idles
// less. `order` receives the original index of each sorted sequence.
SequenceSet SortedByLength(const SequenceSet& set, std::vector<std::int64_t>* order);

}  // namespace perfgate::kernels::align
