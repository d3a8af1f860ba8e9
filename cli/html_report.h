// The HTML report: one self-contained file (inline CSS and SVG, no script) that shows a fleet's
// verdicts and figures: nodes by verdict and why, every threshold's figures across the fleet
// against its bound, nodes lagging their peers, peer-to-peer matrices, NCCL bus bandwidth
// against message size, and the GPUs' identities.
#pragma once

#include <string>
#include <vector>

#include "core/fleet.h"

namespace perfgate::htmlreport {

struct Options {
  std::string title = "perfgate report";
  std::string source;     // what the reports were read from, shown in the header
  std::string generated;  // RFC 3339 time shown in the header
};

// Every plot is an <svg data-plot="KIND" data-marks="N"> whose N elements of class "mark" are
// its data marks (a dot per figure, a cell per GPU pair, a line per node and the fleet's
// median line), so a browser test can check each plot is drawn in full.
std::string Render(const std::vector<fleet::NodeReport>& reports, const Options& options);

// The report's stylesheet, for other pages drawn in the same style (perfgate compare --html).
const char* Stylesheet();

}  // namespace perfgate::htmlreport
