#include "kernels/nccl/gang.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <mutex>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, not in a header

namespace perfgate::kernels::nccl {
namespace {

Result<int> ParseInt(const std::string& name, const std::string& text, int min, int max) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) {
    return InvalidArgument(name + "=\"" + text + "\" is not an integer");
  }
  if (value < min || value > max) {
    return InvalidArgument(name + "=" + text + " is out of range " + std::to_string(min) + ".." +
                           std::to_string(max));
  }
  return value;
}

}  // namespace

std::string HostPort::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<HostPort> ParseHostPort(const std::string& text, bool allow_port_zero) {
  HostPort hp;
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return InvalidArgument("\"" + text + "\" is not [address]:port");
    }
    hp.host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon) {
      return InvalidArgument("\"" + text + "\" is not host:port");
    }
    hp.host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  if (hp.host.empty()) return InvalidArgument("\"" + text + "\" has no host");
  ASSIGN_OR_RETURN(hp.port,
                   ParseInt("port of \"" + text + "\"", port_text, allow_port_zero ? 0 : 1, 65535));
  return hp;
}

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe): read-only use
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Result<GangConfig> GangFromEnv(const EnvLookup& env) {
  GangConfig gang;
  if (auto size = env(kEnvGangSize)) {
    ASSIGN_OR_RETURN(gang.size, ParseInt(kEnvGangSize, *size, 1, 65536));
  }
  if (auto rank = env(kEnvGangRank)) {
    ASSIGN_OR_RETURN(gang.rank, ParseInt(kEnvGangRank, *rank, 0, gang.size - 1));
  } else if (gang.size > 1) {
    return InvalidArgument(std::string(kEnvGangSize) + "=" + std::to_string(gang.size) + " but " +
                           kEnvGangRank + " is not set");
  }
  if (auto gpus = env(kEnvGangGpusPerNode)) {
    ASSIGN_OR_RETURN(gang.gpus_per_node, ParseInt(kEnvGangGpusPerNode, *gpus, 1, 1024));
  }
  if (auto id = env(kEnvGangId)) gang.id = *id;
  if (auto comm = env(kEnvCommId)) {
    auto hp = ParseHostPort(*comm);
    if (!hp.ok()) return hp.status().WithContext(kEnvCommId);
    gang.rank0 = *hp;
  } else if (gang.size > 1) {
    return InvalidArgument(std::string("a gang of ") + std::to_string(gang.size) + " pods needs " +
                           kEnvCommId + "=host:port of rank 0");
  }
  return gang;
}

Result<RankLayout> LayoutFor(const GangConfig& gang, int local_ranks) {
  if (local_ranks < 1) return InvalidArgument("no local ranks");
  if (gang.gpus_per_node && *gang.gpus_per_node != local_ranks) {
    return InvalidArgument(std::string(kEnvGangGpusPerNode) + "=" +
                           std::to_string(*gang.gpus_per_node) + " but this pod drives " +
                           std::to_string(local_ranks) +
                           ": every pod of a gang must drive the same number of GPUs");
  }
  RankLayout layout;
  layout.world_size = gang.size * local_ranks;
  for (int i = 0; i < local_ranks; ++i) layout.ranks.push_back(gang.rank * local_ranks + i);
  return layout;
}

int SocketRetriesFor(double init_timeout_seconds) {
  // 0.1 s * (1 + 2 + ... + n) = 0.05 * n * (n + 1) >= timeout
  const double n = std::ceil((-1 + std::sqrt(1 + 80 * std::max(init_timeout_seconds, 0.0))) / 2);
  return std::max(34, static_cast<int>(n));  // 34: NCCL's default, about a minute
}

void PrepareNcclConnectRetries(double init_timeout_seconds) {
  static std::once_flag once;
  std::call_once(once, [&] {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): once, before the first NCCL call
    ::setenv("NCCL_SOCKET_RETRY_CNT",
             std::to_string(SocketRetriesFor(init_timeout_seconds)).c_str(), 0);
  });
}

std::map<std::string, std::string> NcclEnvironment(const std::vector<std::string>& environ_lines) {
  std::map<std::string, std::string> out;
  for (const auto& line : environ_lines) {
    // NCCL's own, libfabric's (EFA) and UCX's: what spec.gang.network.env may set.
    if (line.rfind("NCCL_", 0) != 0 && line.rfind("FI_", 0) != 0 && line.rfind("UCX_", 0) != 0) {
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

std::map<std::string, std::string> ProcessNcclEnvironment() {
  std::vector<std::string> lines;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) lines.emplace_back(*e);
  return NcclEnvironment(lines);
}

}  // namespace perfgate::kernels::nccl
