// Time points written as RFC 3339, for operator tests that set their clock.
#pragma once

#include <chrono>
#include <string>

#include "common/time.h"

namespace perfgate::op {

inline std::chrono::system_clock::time_point At(const std::string& rfc3339) {
  return *ParseRfc3339(rfc3339);
}

// The clock of the reconcile tests.
inline const std::chrono::system_clock::time_point kT0 = At("2026-12-01T12:00:00Z");

}  // namespace perfgate::op
