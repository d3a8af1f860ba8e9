// The two comparisons perfgate makes, written once: "how does this sample compare with that one"
// (a run with its history, group B with group A) and "which of these peers lags the others"
// (a node among the nodes of its GPU model, a GPU among the GPUs of its node). Every command and
// the operator ask these questions here, so they give the same answer on the same data. Method:
// docs/methodology.md. Pure and thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "common/stats.h"

namespace perfgate::comparison {

// --- Two samples -------------------------------------------------------------------------------

// The ratio now / reference of two samples: the Hodges-Lehmann shift of the log figures turned
// back into a ratio, with its distribution-free interval at `confidence`. Figures <= 0 are left
// out; with none left on a side, a zero Shift whose interval has confidence 0.
stats::Shift Ratio(std::span<const double> now, std::span<const double> reference,
                   double confidence);
// The same for paired log ratios (the same nodes measured twice): the centre of the differences.
stats::Shift PairedRatio(std::span<const double> log_ratios, double confidence);

// Whether a ratio's interval settles it against a practical margin: +1 better, -1 worse (the
// whole interval beyond 1 + margin or 1 - margin), 0 within the margin or unsure. An interval
// with confidence 0 (nothing to compare) settles nothing.
int Beyond(const stats::Shift& ratio, double margin, bool higher_is_better);

// A sample against its reference: the ratio and whether it is beyond the margin.
struct SampleComparison {
  stats::Shift ratio;
  int flag = 0;  // Beyond(ratio, margin, higher_is_better)
};
SampleComparison CompareSamples(std::span<const double> now, std::span<const double> reference,
                                bool higher_is_better, double confidence, double margin);

// --- Lags its peers ------------------------------------------------------------------------------

// One figure of one peer (a node, or a GPU). A peer may give several figures (one per GPU):
// each is judged against the figures of the *other* peers only.
struct Member {
  std::string peer;
  double value = 0;
};

struct PeerRule {
  double margin = 0.03;        // at least this fraction worse than the peers' median
  double z = 3.5;              // and at least this many robust standard deviations
  double family_error = 0.01;  // and past the Bonferroni bound: a healthy group flags nothing
                               // with probability 1 - family_error, whatever its size
  int min_peers = 2;           // other peers needed to say which side is slow
  double confidence = 0.95;    // of the interval of figure / peers' median
};

// A member that lags its peers.
struct Lag {
  std::size_t index = 0;     // into the members given
  double peer_median = 0;    // the median of the other peers' figures
  double ratio = 0;          // value / peer_median
  double robust_z = 0;       // how far on the worse side, in robust standard deviations (> 0)
  int peers = 0;             // the other peers it was compared with
  stats::Interval interval;  // of the ratio: value over the peers' median's interval
};

// Which members lag their peers: a member's figure is worse than the median of the other peers'
// figures by at least `margin` x |median|, and by at least max(z, the normal quantile
// 1 - family_error / members) robust z-scores, the scale 1.4826 x the median absolute deviation
// of the other peers' figures on their worse side (a skewed figure such as a minimum over pairs
// is judged by its own tail). The spread is the one between peers, not the noise of one run's
// samples: nodes of one model differ by more than a run's samples do, and only the spread says
// how much. Identical peers (deviation 0) make any gap of `margin` a lag. None with fewer than
// `min_peers` other peers, or a peers' median of 0. In the order of `members`.
std::vector<Lag> LaggingPeers(std::span<const Member> members, bool higher_is_better,
                              const PeerRule& rule = {});

}  // namespace perfgate::comparison
