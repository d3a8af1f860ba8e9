// XIDs from the kernel log: the NVIDIA driver writes one line per XID, e.g.
//   NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
// NVML's event API only sees XIDs after it registers, so the health test also reads what the
// log holds from before the run (/dev/kmsg, where the container may read it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels::nvml {

struct KernelLogXid {
  std::string pci;  // "0000:1b:00": domain, bus and device as the driver prints them, lower case
  std::uint64_t xid = 0;
  std::string text;  // the rest of the line after the number
};

// One kernel log line (a /dev/kmsg record "6,123,456,-;NVRM: ..." or a dmesg line "[  12.3]
// NVRM: ..."): the XID it reports, or nullopt when it reports none. Pure.
std::optional<KernelLogXid> ParseXidLine(std::string_view line);

// The XIDs of the GPU at `pci_bus_id` ("0000:1B:00.0", any spelling NormalizePciBusId takes)
// among `lines`, in log order. Pure.
std::vector<std::uint64_t> XidsForDevice(const std::vector<std::string>& lines,
                                         const std::string& pci_bus_id);

// XIDs that NVIDIA's XID catalog attributes to the hardware or its firmware (ECC double-bit
// and contained/uncontained errors, row remapping and page retirement events, NVLink errors,
// a GPU fallen off the bus, GSP timeouts), as opposed to an application's faults (13, 31, 43)
// that a previous user's program can leave behind.
bool IsHardwareXid(std::uint64_t xid);
std::size_t CountHardwareXids(const std::vector<std::uint64_t>& xids);

// Every record now in the kernel's ring buffer, read from `path` (/dev/kmsg) without blocking.
// Unavailable with the system's text ("open /dev/kmsg: Permission denied") when the log is
// not readable (an unprivileged container). Blocking for at most the buffer's size.
Result<std::vector<std::string>> ReadKernelLog(const std::string& path = "/dev/kmsg");

}  // namespace perfgate::kernels::nvml
