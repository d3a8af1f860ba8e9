// The "kube" spdlog logger (internal to kube/).
#pragma once

#include <spdlog/logger.h>

#include <memory>

namespace perfgate::kube {

// The logger named "kube" (registered on first use, or the one the program
// registered).
std::shared_ptr<spdlog::logger> Logger();

}  // namespace perfgate::kube
