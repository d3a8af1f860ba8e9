#include "core/eta.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <queue>

namespace perfgate::op {

double RemainingSeconds(double node_seconds, const std::vector<double>& running_elapsed,
                        int waiting, int slots) {
  if (node_seconds <= 0) return 0;
  slots = std::max(slots, 1);
  // Each slot's time until it is free, least first (a slot with no node is free now).
  std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
  for (const double elapsed : running_elapsed) {
    // Past the estimate: another tenth of it, as the node is still at it.
    free_at.push(std::max(node_seconds - elapsed, node_seconds / 10));
  }
  for (auto n = static_cast<int>(free_at.size()); n < slots; ++n) free_at.push(0);
  for (int i = 0; i < waiting; ++i) {
    const double t = free_at.top();
    free_at.pop();
    free_at.push(t + node_seconds);
  }
  double last = 0;
  while (!free_at.empty()) {
    last = std::max(last, free_at.top());
    free_at.pop();
  }
  return last;
}

std::string FormatEta(double seconds) {
  char buf[32];
  if (seconds < 60) {
    std::snprintf(buf, sizeof(buf), "~%.0fs", std::max(5.0, std::ceil(seconds / 5) * 5));
  } else if (seconds < 3600) {
    std::snprintf(buf, sizeof(buf), "~%.0fm", std::ceil(seconds / 60));
  } else {
    const double minutes = std::ceil(seconds / 60);
    std::snprintf(buf, sizeof(buf), "~%.0fh%02.0fm", std::floor(minutes / 60),
                  std::fmod(minutes, 60));
  }
  return buf;
}

}  // namespace perfgate::op
