#include "kernels/fabric/ports.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

namespace perfgate::kernels::fabric {
namespace {

namespace fs = std::filesystem;

// The file's first line without its newline; empty when it cannot be read.
std::string ReadLine(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())) != 0) {
    line.pop_back();
  }
  return line;
}

// "4: ACTIVE" -> "ACTIVE"; a line without the number is kept as it is.
std::string StateWord(const std::string& line) {
  const auto colon = line.find(':');
  if (colon == std::string::npos) return line;
  std::size_t start = colon + 1;
  while (start < line.size() && line[start] == ' ') ++start;
  return line.substr(start);
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

// Entries of `dir` in name order (numbers by value when every name is a number).
std::vector<fs::path> Entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) out.push_back(entry.path());
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) {
    const std::string x = a.filename().string();
    const std::string y = b.filename().string();
    if (AllDigits(x) && AllDigits(y) && x.size() != y.size()) return x.size() < y.size();
    return x < y;
  });
  return out;
}

std::map<std::string, std::uint64_t> ReadCounters(const fs::path& dir) {
  std::map<std::string, std::uint64_t> counters;
  for (const fs::path& file : Entries(dir)) {
    const std::string value = ReadLine(file);
    if (!AllDigits(value)) continue;
    counters[file.filename().string()] = std::strtoull(value.c_str(), nullptr, 10);
  }
  return counters;
}

}  // namespace

std::string IbPort::Placement() const {
  std::string text;
  if (!pci_address.empty()) text = "PCI " + pci_address;
  if (numa_node >= 0)
    text += (text.empty() ? "" : ", ") + std::string("NUMA ") + std::to_string(numa_node);
  return text;
}

void ParseRate(const std::string& text, IbPort* port) {
  port->rate_gbps = 0;
  port->width = 0;
  port->speed.clear();
  std::istringstream in(text);
  double gbps = 0;
  std::string unit;
  if (in >> gbps >> unit && unit == "Gb/sec") port->rate_gbps = gbps;
  const auto open = text.find('(');
  const auto close = text.find(')', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return;
  std::istringstream inside(text.substr(open + 1, close - open - 1));
  std::string width;
  std::string speed;
  inside >> width >> speed;
  if (width.size() >= 2 && (width.back() == 'X' || width.back() == 'x') &&
      AllDigits(std::string_view(width).substr(0, width.size() - 1))) {
    port->width = std::atoi(width.c_str());
  }
  port->speed = speed;
}

Result<std::vector<IbPort>> ReadIbPorts(const std::string& sysfs_root) {
  const fs::path classes = fs::path(sysfs_root) / "class" / "infiniband";
  std::error_code ec;
  if (!fs::is_directory(classes, ec)) {
    return FailedPrecondition(classes.string() +
                              " does not exist: no InfiniBand or RoCE device here (or its "
                              "driver is not loaded)");
  }
  std::vector<IbPort> ports;
  for (const fs::path& hca : Entries(classes)) {
    std::string pci;
    // device -> ../../../0000:18:00.0
    if (auto target = fs::read_symlink(hca / "device", ec); !ec) pci = target.filename().string();
    int numa = -1;
    if (const std::string node = ReadLine(hca / "device" / "numa_node");
        !node.empty() && (AllDigits(node) || (node[0] == '-' && AllDigits(node.substr(1))))) {
      numa = std::atoi(node.c_str());
    }
    for (const fs::path& dir : Entries(hca / "ports")) {
      const std::string number = dir.filename().string();
      if (!AllDigits(number)) continue;
      IbPort port;
      port.hca = hca.filename().string();
      port.port = std::atoi(number.c_str());
      port.state = StateWord(ReadLine(dir / "state"));
      port.phys_state = StateWord(ReadLine(dir / "phys_state"));
      port.rate_text = ReadLine(dir / "rate");
      ParseRate(port.rate_text, &port);
      port.link_layer = ReadLine(dir / "link_layer");
      port.counters = ReadCounters(dir / "counters");
      port.pci_address = pci;
      port.numa_node = numa;
      ports.push_back(std::move(port));
    }
  }
  return ports;
}

}  // namespace perfgate::kernels::fabric
