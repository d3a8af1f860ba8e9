#include "kernels/fabric/ports.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>
#include <string_view>

namespace perfgate::kernels::fabric {
namespace {

// The text's first line without trailing blanks; empty when it cannot be read.
std::string FirstLine(const Result<std::string>& text) {
  if (!text.ok()) return "";
  std::string line = text->substr(0, text->find('\n'));
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

// The names in `dir`, numbers by value ("2" before "10"); empty when it cannot be listed.
std::vector<std::string> Names(const config::HostFs& fs, const std::string& dir) {
  auto names = fs.List(dir);
  if (!names.ok()) return {};
  std::vector<std::string> out = std::move(names).value();
  std::stable_sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    if (AllDigits(a) && AllDigits(b) && a.size() != b.size()) return a.size() < b.size();
    return a < b;
  });
  return out;
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

Result<std::vector<IbPort>> ReadIbPorts(const config::HostFs& fs, const std::string& sysfs_root) {
  const std::string classes = sysfs_root + "/class/infiniband";
  auto hcas = fs.List(classes);
  if (!hcas.ok()) {
    if (hcas.status().code() == Code::kNotFound) {
      return FailedPrecondition(classes +
                                " does not exist: no InfiniBand or RoCE device here (or its "
                                "driver is not loaded)");
    }
    return Unavailable(hcas.status().message());
  }
  std::vector<IbPort> ports;
  for (const std::string& hca : Names(fs, classes)) {
    const std::string dev = classes + "/" + hca;
    // device -> ../../../0000:18:00.0, the HCA's PCI function.
    std::string pci;
    if (auto function = fs.Resolve(dev + "/device"); function.ok()) {
      pci = function->substr(function->rfind('/') + 1);
    }
    int numa = -1;
    if (const std::string node = FirstLine(fs.Read(dev + "/device/numa_node"));
        AllDigits(node) || (node.size() > 1 && node[0] == '-' && AllDigits(node.substr(1)))) {
      numa = std::atoi(node.c_str());
    }
    for (const std::string& number : Names(fs, dev + "/ports")) {
      if (!AllDigits(number)) continue;
      const std::string dir = dev + "/ports/" + number;
      IbPort port;
      port.hca = hca;
      port.port = std::atoi(number.c_str());
      port.state = StateWord(FirstLine(fs.Read(dir + "/state")));
      port.phys_state = StateWord(FirstLine(fs.Read(dir + "/phys_state")));
      port.rate_text = FirstLine(fs.Read(dir + "/rate"));
      ParseRate(port.rate_text, &port);
      port.link_layer = FirstLine(fs.Read(dir + "/link_layer"));
      for (const std::string& counter : Names(fs, dir + "/counters")) {
        const std::string value = FirstLine(fs.Read(dir + "/counters/" + counter));
        if (AllDigits(value)) port.counters[counter] = std::strtoull(value.c_str(), nullptr, 10);
      }
      port.pci_address = pci;
      port.numa_node = numa;
      ports.push_back(std::move(port));
    }
  }
  return ports;
}

}  // namespace perfgate::kernels::fabric
