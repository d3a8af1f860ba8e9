#include "kernels/nvml/kernel_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/strings.h"
#include "kernels/nvml/nvml.h"

namespace perfgate::kernels::nvml {

std::optional<KernelLogXid> ParseXidLine(std::string_view line) {
  static constexpr std::string_view kMarker = "NVRM: Xid (PCI:";
  const std::size_t at = line.find(kMarker);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + kMarker.size());
  const std::size_t close = rest.find("):");
  if (close == std::string_view::npos || close == 0) return std::nullopt;
  KernelLogXid out;
  out.pci = Lower(std::string(rest.substr(0, close)));
  rest = rest.substr(close + 2);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  std::size_t digits = 0;
  while (digits < rest.size() && digits < 10 && rest[digits] >= '0' && rest[digits] <= '9') {
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  out.xid = std::stoull(std::string(rest.substr(0, digits)));
  rest = rest.substr(digits);
  if (!rest.empty() && rest.front() == ',') rest.remove_prefix(1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r')) rest.remove_suffix(1);
  out.text = std::string(rest);
  return out;
}

std::vector<std::uint64_t> XidsForDevice(const std::vector<std::string>& lines,
                                         const std::string& pci_bus_id) {
  // The driver prints domain:bus:device without the function ("0000:1b:00"); compare on that.
  std::string wanted = NormalizePciBusId(pci_bus_id);
  if (const std::size_t dot = wanted.rfind('.'); dot != std::string::npos) wanted.resize(dot);
  std::vector<std::uint64_t> xids;
  for (const std::string& line : lines) {
    auto parsed = ParseXidLine(line);
    if (!parsed) continue;
    // Some drivers print an 8-digit domain ("00000000:1b:00"): compare on the last 10 chars.
    const std::string& pci = parsed->pci;
    const bool match = pci.size() >= wanted.size() &&
                       pci.compare(pci.size() - wanted.size(), wanted.size(), wanted) == 0;
    if (match) xids.push_back(parsed->xid);
  }
  return xids;
}

bool IsHardwareXid(std::uint64_t xid) {
  // 48 DBE ECC; 61/62 internal micro-controller breakpoint/halt; 63/64 ECC page retirement or
  // row remapping event/failure; 74 NVLink error; 79 fallen off the bus; 92 high single-bit
  // ECC rate; 94/95 contained/uncontained ECC error; 119/120 GSP RPC timeout/error; 140
  // unrecovered ECC error; 144-150 NVLink errors (Blackwell).
  static constexpr std::uint64_t kHardware[] = {48,  61,  62,  63,  64,  74,  79,  92,  94,  95,
                                                119, 120, 140, 144, 145, 146, 147, 148, 149, 150};
  return std::find(std::begin(kHardware), std::end(kHardware), xid) != std::end(kHardware);
}

std::size_t CountHardwareXids(const std::vector<std::uint64_t>& xids) {
  return static_cast<std::size_t>(std::count_if(xids.begin(), xids.end(), IsHardwareXid));
}

Result<std::vector<std::string>> ReadKernelLog(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Unavailable("open " + path + ": " + std::strerror(errno));
  std::vector<std::string> lines;
  // /dev/kmsg returns one record per read; EAGAIN at the end of the buffer, EPIPE when a
  // record was overwritten while reading (skip it and go on).
  char record[8192];
  for (int i = 0; i < 1 << 20; ++i) {
    const ssize_t n = read(fd, record, sizeof(record));
    if (n > 0) {
      lines.emplace_back(record, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EPIPE) continue;
    if (n < 0 && errno != EAGAIN) {
      const std::string error = std::strerror(errno);
      close(fd);
      return Unavailable("read " + path + ": " + error);
    }
    break;
  }
  close(fd);
  return lines;
}

}  // namespace perfgate::kernels::nvml
