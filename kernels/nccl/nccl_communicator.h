// The NCCL communicator behind communicator.h: one rank per local GPU (a single-node run is
// one process with a communicator per device, driven by group calls; a gang adds more
// processes with the same NCCL_COMM_ID). Non-blocking communicators (ncclConfig_t.blocking = 0)
// everywhere, so every wait polls ncclCommGetAsyncError under the watchdog and ends in
// ncclCommAbort at the deadline. Standard types only; implemented in nccl_communicator.cu, or
// in nccl_nocuda.cc when built without CUDA.
#pragma once

#include <memory>
#include <string>

#include "kernels/nccl/communicator.h"

namespace perfgate::kernels::nccl {

// Initialises NCCL on options.devices as global ranks options.ranks of options.world_size.
// With one process (rank0_address empty) the unique id is made here; with several, every
// process derives it from NCCL_COMM_ID (rank 0 listens there). `debug_log` is NCCL's
// NCCL_DEBUG_FILE (nccl_debug.h), read for the transport; "" when there is none.
// Unavailable("no CUDA device: ...") without a usable device; DeadlineExceeded (communicator
// aborted, reason names the ranks and the rendezvous) when the peers do not all come within
// init_timeout_seconds. Blocking.
Result<std::unique_ptr<Communicator>> CreateNcclCommunicator(const CommunicatorOptions& options,
                                                             const std::string& debug_log);

// The loaded NCCL's version, "2.28.9", or "" without NCCL. Thread-safe.
std::string NcclLibraryVersion();

// True when this binary can run NCCL (built with CUDA).
bool BuiltWithNccl();

}  // namespace perfgate::kernels::nccl
