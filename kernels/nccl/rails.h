// nccl-rails: the gang's fabric NIC by NIC. A node's east-west network is one NIC per GPU rail;
// one all-reduce over all of them hides a single slow NIC. NCCL cannot pin one communicator to
// one HCA, so each rail gets its own child process (`perfgate-worker rail-child`) started with
// NCCL_IB_HCA==<hca>:<port>, driving the rail's GPU as one rank, meeting the same rail of the
// gang's other nodes at its own rendezvous (the gang's NCCL_COMM_ID port + 1 + rail index).
// Each sample measures the rails one after another, the same order on every node: an
// all_reduce of `bytes` (bus bandwidth, nccl-tests' 2(n-1)/n) and one of `latencyBytes` (time
// per call). GPUDirect RDMA is NCCL's choice where the platform supports it
// (NCCL_NET_GDR_LEVEL); the test reports what NCCL used and does not force host staging.
//
// Metrics: slowestRailBusBandwidthGBps and slowestRailLatencyMicroseconds (what profiles
// bound: a per-NIC figure), and railBusBandwidthGBps@<hca> / railLatencyMicroseconds@<hca> per
// rail. A FAIL of a slowest-rail bound names the rails slowest first, each with its PCI
// address, NUMA node, GPU and the peer node(s) it was paired with (counted.<metric>).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "kernels/fabric/port_health.h"
#include "kernels/nccl/communicator.h"
#include "kernels/nccl/gang.h"
#include "kernels/test.h"

namespace perfgate::kernels::nccl {

// The comma-separated node names of the gang, by rank (the operator sets it on gang pods), so a
// rail's failure names its peer.
inline constexpr char kEnvGangNodes[] = "PERFGATE_GANG_NODES";

// One rail's measurement, as the parent test hands it to the rail's child process.
struct RailJob {
  std::string backend = "nccl";  // which RailBackend runs it ("nccl"; "cpu-loopback" in tests)
  std::string hca;               // "mlx5_3"
  int port = 1;                  // the HCA's port
  int device = 0;                // the CUDA ordinal this rail's rank drives (-1: none, stand-in)
  std::string rank0;             // host:port where this rail's rank 0 listens
  int rank = 0;                  // this node's rank in the rail's communicator (its pod rank)
  int world = 2;                 // the gang's pods
  std::int64_t bytes = 1LL << 30;
  std::int64_t latency_bytes = 8;
  int warmup = 5;
  int iterations = 20;
  double init_timeout_seconds = 600;
  double call_timeout_seconds = 300;
  double planted_delay_seconds = 0;  // test stand-in only: seconds slept per call on this rail

  // NCCL_IB_HCA's value: "=mlx5_3:1" (exact name: a bare mlx5_1 would also match mlx5_10).
  std::string IbHca() const { return "=" + hca + ":" + std::to_string(port); }
};

// The job as `rail-child` arguments and back. ParseRailJob: InvalidArgument naming the
// argument. Pure.
std::vector<std::string> RailJobArgs(const RailJob& job);
Result<RailJob> ParseRailJob(const std::vector<std::string>& args);

// The rails when `hcas` is empty: the HCAs of `ports` that NCCL_IB_HCA's value selects
// ("mlx5_0,mlx5_1" by prefix, "=mlx5_0:1" exactly, "^mlx5_8" all but; ports dropped), in its
// order; every HCA when it is empty. Pure.
std::vector<std::string> RailHcas(const std::string& ib_hca,
                                  const std::vector<fabric::IbPort>& ports);

// One sample of one rail.
struct RailFigures {
  double bus_gbps = 0;     // all_reduce of job.bytes: busbw
  double latency_us = 0;   // all_reduce of job.latency_bytes: time per call
  std::int64_t wrong = 0;  // result elements that differ from pattern.h's
};

// Measures one sample on `comm` (job.warmup untimed then job.iterations timed calls of each
// size, the large one verified). Blocking.
Result<RailFigures> MeasureRail(Communicator& comm, const RailJob& job, std::uint32_t seed);

// Makes a rail's communicator: NCCL on job.device (the process's NCCL_IB_HCA pins the HCA).
using RailBackend = std::function<Result<std::unique_ptr<Communicator>>(const RailJob& job)>;
RailBackend NcclRailBackend();

// `perfgate-worker rail-child <args>`: makes the communicator, writes "ready <details>" (or
// "error <message>") to `out`, then for each "run <seed>" line of `in` writes
// "ok <busGBps> <latencyUs> <wrong>" or "error <message>"; ends at end of input. Returns the
// exit code.
int RailChildMain(const std::vector<std::string>& args,
                  const std::map<std::string, RailBackend>& backends, std::istream& in,
                  std::ostream& out);

// A started rail: its child, or (tests) a communicator in this process.
class RailChannel {
 public:
  virtual ~RailChannel() = default;
  // Waits until the rail's communicator is up (a child process is started without waiting, so
  // every rail's rendezvous runs at once). Blocking (bounded by the init deadline).
  virtual Status Ready() = 0;
  // One sample. Blocking (bounded by the job's deadlines).
  virtual Result<RailFigures> Measure(std::uint32_t seed) = 0;
  // What the rail's communicator reported at start (implementation, transport, ...).
  virtual std::map<std::string, std::string> Details() const = 0;
};

// Starts one rail; its Ready() waits for the communicator. Blocking where the launcher makes
// the communicator itself (in process).
using RailLauncher = std::function<Result<std::unique_ptr<RailChannel>>(const RailJob& job)>;
// Child processes: `exe rail-child <args>` with NCCL_IB_HCA=job.IbHca() in its environment.
RailLauncher ProcessRailLauncher(std::string exe);
// In this process, over `backend` (unit tests).
RailLauncher InProcessRailLauncher(RailBackend backend);

struct RailTestOptions {
  std::string type = "nccl-rails";
  std::string description;
  bool fixture = false;
  std::string backend = "nccl";  // RailJob::backend
  fabric::PortReader read_ports;
  std::string where;  // what read_ports reads, for messages
  EnvLookup env;      // the gang's environment (gang.h)
  RailLauncher launch;
  // Fixture only: adds the parameter `behaviour` (NODE/HCA=slow:MS plants a slow rail) and
  // reads NODE_NAME from `env`.
  bool plantable = false;
  // Fixture only: adds `sysfsRoot` (a recorded tree instead of /sys); read_ports is then unused.
  bool sysfs_root_param = false;
};
std::unique_ptr<Test> MakeRailTest(RailTestOptions options);

}  // namespace perfgate::kernels::nccl
