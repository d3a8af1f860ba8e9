// Device side of p2p (kernels/p2p.cc): copies between every pair of GPUs, through peer access
// (NVLink or PCIe peer-to-peer) and without it (staged through the host by the driver).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels::cuda {

class PeerCopier {
 public:
  virtual ~PeerCopier() = default;
  // Number of devices (positions 0..n-1 in the `devices` given at creation).
  virtual int size() const = 0;
  // Whether cudaDeviceCanAccessPeer says src can write to dst.
  virtual bool CanAccessPeer(int src, int dst) const = 0;
  // Enables (peer=true, where possible) or disables peer access between src and dst both ways,
  // copies src's buffer into dst's `iterations` times with cudaMemcpyPeerAsync and returns the
  // GPU seconds. Blocking; one thread at a time.
  virtual Result<double> Time(int src, int dst, bool peer, int iterations) = 0;
  // Checks that dst's buffer holds exactly src's pattern (after Time(src, dst, ...)); DataLoss
  // names how many words differ. Blocking.
  virtual Status Verify(int src, int dst) = 0;
};

// Unavailable("no CUDA device: ...") when any ordinal is missing. Blocking.
Result<std::unique_ptr<PeerCopier>> CreatePeerCopier(const std::vector<int>& devices,
                                                     std::int64_t bytes);

}  // namespace perfgate::kernels::cuda
