// Reads of the host's sysfs behind an interface, so the config test's checks run in unit tests
// over a fake tree. Paths are absolute as on the host ("/sys/bus/pci/devices/0000:1b:00.0/...").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels::config {

class HostFs {
 public:
  virtual ~HostFs() = default;
  // The file's bytes (binary files such as PCI config space included). NotFound when absent,
  // Unavailable with the system's text otherwise. Blocking; thread-safe.
  virtual Result<std::string> Read(const std::string& path) const = 0;
  // The names in a directory, sorted. NotFound when absent. Blocking; thread-safe.
  virtual Result<std::vector<std::string>> List(const std::string& path) const = 0;
  // The path with every symbolic link resolved (sysfs PCI devices link into the bridge
  // hierarchy). NotFound when absent. Blocking; thread-safe.
  virtual Result<std::string> Resolve(const std::string& path) const = 0;
};

// The machine's own filesystem.
std::unique_ptr<HostFs> RealHostFs();

}  // namespace perfgate::kernels::config
