// The worker's side of a gang: which rank this pod is, how many pods there are, and where rank
// 0 listens, all from the environment the operator gives each gang pod (docs/nccl.md):
//   PERFGATE_GANG_SIZE           pods in the gang (absent or 1: a single-node run)
//   PERFGATE_GANG_RANK           this pod's rank, 0 .. size-1
//   PERFGATE_GANG_GPUS_PER_NODE  GPUs every pod drives (optional; checked against this pod's)
//   PERFGATE_GANG_ID             a name for the gang, for logs and reports (optional)
//   NCCL_COMM_ID                 host:port where rank 0 listens (required when size > 1);
//                                NCCL itself reads it, the CPU stand-in reads the same value
// Each pod drives all of its node's GPUs, one NCCL rank per GPU: global rank = pod rank *
// GPUs per pod + local index.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels::nccl {

inline constexpr char kEnvGangSize[] = "PERFGATE_GANG_SIZE";
inline constexpr char kEnvGangRank[] = "PERFGATE_GANG_RANK";
inline constexpr char kEnvGangGpusPerNode[] = "PERFGATE_GANG_GPUS_PER_NODE";
inline constexpr char kEnvGangId[] = "PERFGATE_GANG_ID";
inline constexpr char kEnvCommId[] = "NCCL_COMM_ID";

struct HostPort {
  std::string host;  // name or address, without IPv6 brackets
  int port = 0;
  std::string ToString() const;  // "host:port", "[::1]:port"
};

// "host:port" or "[v6addr]:port"; port 1..65535 (0 allowed only with allow_port_zero, for
// tests that let rank 0 pick a free port). InvalidArgument naming the text otherwise.
Result<HostPort> ParseHostPort(const std::string& text, bool allow_port_zero = false);

struct GangConfig {
  int size = 1;  // pods
  int rank = 0;  // this pod
  std::optional<int> gpus_per_node;
  std::string id;
  std::optional<HostPort> rank0;  // NCCL_COMM_ID; set whenever size > 1
  bool multi_node() const { return size > 1; }
};

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
// The process environment (getenv).
EnvLookup ProcessEnv();

// Reads the gang from `env`. InvalidArgument naming the variable when a value is malformed,
// the rank is out of range, or a multi-pod gang has no NCCL_COMM_ID. Pure given `env`.
Result<GangConfig> GangFromEnv(const EnvLookup& env);

// The ranks one process drives.
struct RankLayout {
  int world_size = 1;
  std::vector<int> ranks;  // global ranks, one per local device (or one for the CPU stand-in)
};

// Global ranks for `local_ranks` devices on this pod. InvalidArgument when
// PERFGATE_GANG_GPUS_PER_NODE disagrees with local_ranks (ranks would collide or leave holes,
// and NCCL would wait for ranks that never come). Pure.
Result<RankLayout> LayoutFor(const GangConfig& gang, int local_ranks);

// NCCL retries a refused connection to rank 0 for about a minute by default
// (NCCL_SOCKET_RETRY_CNT retries, sleeping NCCL_SOCKET_RETRY_SLEEP_MSEC times the attempt
// number), but gang pods may start minutes apart. The retry count that covers
// `init_timeout_seconds` at the default 100 ms step; the watchdog still bounds the wait. Pure.
int SocketRetriesFor(double init_timeout_seconds);
// Sets NCCL_SOCKET_RETRY_CNT to SocketRetriesFor(...) unless the environment sets it, before
// the first NCCL call. Thread-safe; only the first call changes the environment.
void PrepareNcclConnectRetries(double init_timeout_seconds);

// Every NCCL_*, FI_* and UCX_* variable of `environ` (the network settings a gang pod got),
// for Details(). Pure given the input.
std::map<std::string, std::string> NcclEnvironment(const std::vector<std::string>& environ_lines);
// The same from this process's environment.
std::map<std::string, std::string> ProcessNcclEnvironment();

}  // namespace perfgate::kernels::nccl
