// The "operator" spdlog logger.
#pragma once

#include <spdlog/logger.h>

#include <memory>

namespace perfgate::op {

// The logger named "operator" (registered on first use, or the one main() registered).
std::shared_ptr<spdlog::logger> Logger();

}  // namespace perfgate::op
