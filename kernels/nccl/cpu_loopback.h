// CpuLoopbackCommunicator: a TEST STAND-IN for NCCL. It runs the six collectives on host
// memory between processes (or threads) that meet over TCP, with the same rendezvous as a gang
// of NCCL ranks (rank 0 listens at NCCL_COMM_ID's host:port) and the same watchdog, so the
// rendezvous, gang bookkeeping, harness, busbw arithmetic and verification run where there is
// no GPU. Its bandwidth means nothing about any GPU: the worker offers it only with
// --enable-fixtures (test type nccl-cpu-loopback).
//
// Protocol: every rank opens a data listener; ranks 1..n-1 connect to rank 0 and send
// {rank, world, data port}; rank 0 answers each with everyone's address; then each rank
// connects to every lower rank's data listener. A collective is one exchange over these
// connections (every peer's slice sent and received at once, non-blocking) and a local sum or
// copy.
#pragma once

#include <memory>
#include <optional>

#include "kernels/nccl/communicator.h"
#include "kernels/nccl/gang.h"
#include "kernels/nccl/watchdog.h"

namespace perfgate::kernels::nccl {

// A listening TCP socket (move-only; closes on destruction).
class TcpListener {
 public:
  TcpListener() = default;
  // Binds and listens on `address` (port 0: any free port). Blocking.
  static Result<TcpListener> Bind(const HostPort& address);
  TcpListener(TcpListener&& other) noexcept;
  TcpListener& operator=(TcpListener&& other) noexcept;
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;
  ~TcpListener();
  int port() const { return port_; }
  int fd() const { return fd_; }
  // Hands the socket over to the caller (who closes it).
  int Release();

 private:
  TcpListener(int fd, int port) : fd_(fd), port_(port) {}
  int fd_ = -1;
  int port_ = 0;
};

struct CpuLoopbackOptions {
  CommunicatorOptions comm;  // world_size, ranks (exactly one), rank0_address, timeouts
  // Rank 0 only: an already-bound rendezvous listener (tests bind port 0 first, then tell the
  // other ranks the port). Without it rank 0 binds rank0_address itself.
  std::optional<TcpListener> rank0_listener;
  // Test hook: after every Run, this many result elements are overwritten with a wrong value,
  // as a broken link or GPU would; 0 in every real use.
  std::int64_t corrupt_elements = 0;
  Clock* clock = nullptr;  // nullptr: SteadyClock()
};

// Completes the rendezvous with all other ranks (blocking, watchdog: init_timeout_seconds;
// a peer that never comes gives DeadlineExceeded naming the ranks missing).
Result<std::unique_ptr<Communicator>> CreateCpuLoopbackCommunicator(CpuLoopbackOptions options);

}  // namespace perfgate::kernels::nccl
