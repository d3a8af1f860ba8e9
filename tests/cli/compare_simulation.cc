// perfgate-compare-simulation [REPS]: error rates of perfgate compare on simulated fleets
// (docs/benchmarks.md): how often identical fleets get any regressed or improved row, and how
// often a 3% HBM slowdown is called regressed, at several node counts, paired and unpaired.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/compare.h"
#include "tests/cli/fleet_fixture.h"

namespace {

using namespace perfgate;

const std::vector<std::string> kMedian = {"median"};

struct Rates {
  int flagged = 0;     // comparisons with any regressed or improved row
  int detected = 0;    // comparisons where hbm-stream triadBandwidthGBps regressed
  int equivalent = 0;  // ... where it was called equivalent
};

void Count(const compare::Comparison& c, Rates* r) {
  if (c.Count(compare::Decision::kRegressed) + c.Count(compare::Decision::kImproved) > 0) {
    ++r->flagged;
  }
  for (const auto& row : c.rows) {
    if (row.test == "hbm-stream" && row.metric == "triadBandwidthGBps") {
      r->detected += row.decision == compare::Decision::kRegressed;
      r->equivalent += row.decision == compare::Decision::kEquivalent;
    }
  }
}

Rates Paired(int nodes, double factor, int reps) {
  Rates r;
  for (int i = 0; i < reps; ++i) {
    const auto pair = testing::DriverUpgrade(nodes, nodes, 0, factor, 50000 + i);
    auto figures = compare::FromReports(pair.a, kMedian, {{"side", "A"}});
    auto b = compare::FromReports(pair.b, kMedian, {{"side", "B"}});
    figures.insert(figures.end(), b.begin(), b.end());
    auto c = compare::Compare(figures, {"A", "B"}, "", compare::Options{});
    if (c.ok()) Count(*c, &r);
  }
  return r;
}

Rates Unpaired(int nodes, double factor, int reps) {
  Rates r;
  for (int i = 0; i < reps; ++i) {
    // east against central: different nodes; central's HBM `factor` of east's.
    const auto all = testing::ThreeClusters(nodes, factor, 90000 + i);
    std::vector<fleet::NodeReport> east, central;
    for (const auto& n : all) {
      if (n.node.rfind("east", 0) == 0) east.push_back(n);
      if (n.node.rfind("central", 0) == 0) central.push_back(n);
    }
    auto figures = compare::FromReports(east, kMedian, {{"side", "A"}});
    auto b = compare::FromReports(central, kMedian, {{"side", "B"}});
    figures.insert(figures.end(), b.begin(), b.end());
    auto c = compare::Compare(figures, {"A", "B"}, "", compare::Options{});
    if (c.ok()) Count(*c, &r);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 200;
  std::printf("%-9s %5s %6s %5s %22s %22s %24s\n", "pairing", "nodes", "shift", "reps",
              "any row flagged", "triad regressed", "triad equivalent");
  for (const bool paired : {true, false}) {
    for (const int nodes : {8, 12, 16, 24}) {
      for (const double factor : {1.0, 0.97}) {
        const Rates r = paired ? Paired(nodes, factor, reps) : Unpaired(nodes, factor, reps);
        std::printf("%-9s %5d %5.0f%% %5d %15d (%4.1f%%) %15d (%4.1f%%) %17d (%4.1f%%)\n",
                    paired ? "paired" : "unpaired", nodes, (factor - 1) * 100, reps, r.flagged,
                    100.0 * r.flagged / reps, r.detected, 100.0 * r.detected / reps, r.equivalent,
                    100.0 * r.equivalent / reps);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
