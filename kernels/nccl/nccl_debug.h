// What NCCL chose, read from its own INFO log: NCCL 2.28 has no API that names the transport of
// a communicator, so the worker asks for the log (NCCL_DEBUG=INFO into NCCL_DEBUG_FILE, unless
// the spec set these) and parses the lines NCCL prints when it connects its channels:
//   "NCCL INFO NCCL version 2.28.9+cuda13.0"
//   "NCCL INFO Using network IB" / "Using network Socket"
//   "NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ..."
//   "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read"
//   "NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/IB/0/GDRDMA"
//   "NCCL INFO Pattern 4, crossNic 0, nChannels 16, bw 40/40, type NVL/PIX, sameChannels 1"
//   "NCCL INFO comm 0x... rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0"
// Pure text processing: unit tested on such lines without a GPU.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "kernels/nccl/gang.h"

namespace perfgate::kernels::nccl {

struct TransportReport {
  std::string version;                       // "2.28.9+cuda13.0" ("" if not logged)
  std::string network;                       // "IB", "Socket", ... ("" if none was needed)
  std::set<std::string> channel_transports;  // "P2P/CUMEM", "SHM", "NET/IB", "NET/Socket"
  bool nvlink = false;                       // a graph over NVLink (type NVL)
  bool nvls = false;                         // NVLink SHARP multicast available
  bool gdr = false;                          // GPUDirect RDMA on a network channel
  bool roce = false;                         // an IB device with a RoCE link layer
  int nodes = 0;                             // nNodes from the comm line (0 unknown)
  // One line for Details(): "NVLink (P2P/CUMEM) within nodes; InfiniBand/RoCE with
  // GPUDirect RDMA (NET/IB) between nodes", or "unknown: ..." when nothing was logged.
  std::string Summary() const;
  // Whether ranks on different nodes talk over plain TCP sockets.
  bool InterNodeSockets() const;
  bool Empty() const { return channel_transports.empty() && network.empty() && version.empty(); }
};

TransportReport ParseNcclDebugLog(std::string_view text);

// Sets NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,ENV and NCCL_DEBUG_FILE (under
// `directory`, one file per host and process) where the environment does not set them already,
// before the first NCCL call (NCCL reads them once). Returns the log's path with NCCL's %h/%p
// expanded, or "" when the spec's NCCL_DEBUG hides INFO lines (the transport is then unknown,
// and Details() says why). Thread-safe; only the first call changes the environment.
std::string PrepareNcclDebugLog(const std::string& directory);

// NCCL's file name pattern with %h (hostname) and %p (pid) expanded as NCCL does.
std::string ExpandNcclDebugFile(const std::string& pattern, const std::string& hostname, int pid);

}  // namespace perfgate::kernels::nccl
