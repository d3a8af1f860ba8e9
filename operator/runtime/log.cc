#include "operator/runtime/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace perfgate::op {

std::shared_ptr<spdlog::logger> Logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    if (auto existing = spdlog::get("operator")) return existing;
    return spdlog::stderr_logger_mt("operator");
  }();
  return logger;
}

}  // namespace perfgate::op
