#include "kernels/config/config_check.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "common/strings.h"
#include "kernels/nvml/attributes.h"
#include "kernels/nvml/readings.h"

namespace perfgate::kernels::config {
namespace {

std::vector<long> VersionParts(const std::string& v) {  // NOLINT(google-runtime-int)
  std::vector<long> parts;                              // NOLINT(google-runtime-int)
  std::stringstream in(v);
  std::string part;
  while (std::getline(in, part, '.')) parts.push_back(std::strtol(part.c_str(), nullptr, 10));
  return parts;
}

std::string TrimLine(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string Fmt(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

std::string OnOff(bool on) { return on ? "enabled" : "disabled"; }

// The PCI addresses in a resolved sysfs device path, outermost bridge first, the device last.
std::vector<std::string> PciChain(const std::string& resolved) {
  std::vector<std::string> chain;
  std::stringstream in(resolved);
  std::string part;
  while (std::getline(in, part, '/')) {
    unsigned a = 0;
    unsigned b = 0;
    unsigned c = 0;
    unsigned d = 0;
    if (std::sscanf(part.c_str(), "%x:%x:%x.%x", &a, &b, &c, &d) == 4) chain.push_back(part);
  }
  return chain;
}

}  // namespace

int CompareVersions(const std::string& a, const std::string& b) {
  auto pa = VersionParts(a);
  auto pb = VersionParts(b);
  const std::size_t n = std::max(pa.size(), pb.size());
  pa.resize(n, 0);
  pb.resize(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (pa[i] != pb[i]) return pa[i] < pb[i] ? -1 : 1;
  }
  return 0;
}

std::optional<bool> AcsRedirectEnabled(const std::string& config) {
  // PCIe extended capabilities start at 0x100: a 32-bit header (ID in bits 0-15, next
  // offset in bits 20-31). ACS is ID 0x000D; its control register sits at +6, with P2P
  // Request Redirect in bit 2 and P2P Completion Redirect in bit 3 (PCIe Base Spec, ACS
  // Extended Capability).
  static constexpr std::size_t kExtendedStart = 0x100;
  static constexpr unsigned kAcsId = 0x000D;
  if (config.size() < kExtendedStart + 4) return std::nullopt;
  auto u16 = [&](std::size_t at) {
    return static_cast<unsigned>(static_cast<unsigned char>(config[at])) |
           (static_cast<unsigned>(static_cast<unsigned char>(config[at + 1])) << 8U);
  };
  std::size_t at = kExtendedStart;
  for (int hops = 0; hops < 64 && at >= kExtendedStart && at + 8 <= config.size(); ++hops) {
    const unsigned id = u16(at);
    const unsigned next = u16(at + 2) >> 4U;
    if (id == kAcsId) {
      const unsigned control = u16(at + 6);
      return (control & 0xCU) != 0;
    }
    if (next == 0) break;
    at = next;
  }
  return false;  // no ACS capability: nothing redirects
}

namespace {

// What GPU `i` of the node (`g`) sets otherwise than `e` expects, through `add`.
void CheckGpuConfig(std::size_t i, const GpuConfig& g, const Expectations& e,
                    const std::function<void(std::string, std::string, std::string)>& add) {
  const std::string gpu = "gpu" + std::to_string(i) + " (" + g.pci_bus_id + ") ";
  if (g.persistence_mode && *g.persistence_mode != e.persistence_mode) {
    add(gpu + "persistenceMode", OnOff(*g.persistence_mode), OnOff(e.persistence_mode));
  }
  if (g.ecc_enabled && *g.ecc_enabled != e.ecc_enabled) {
    add(gpu + "eccMode", OnOff(*g.ecc_enabled), OnOff(e.ecc_enabled));
  }
  if (g.mig_enabled && *g.mig_enabled != e.mig_enabled) {
    add(gpu + "migMode", OnOff(*g.mig_enabled), OnOff(e.mig_enabled));
  }
  if (e.app_clocks_at_default && g.app_clock_sm_mhz && g.app_clock_sm_default_mhz &&
      *g.app_clock_sm_mhz < *g.app_clock_sm_default_mhz) {
    add(gpu + "applicationClockSm", std::to_string(*g.app_clock_sm_mhz) + " MHz",
        std::to_string(*g.app_clock_sm_default_mhz) + " MHz (the default)");
  }
  if (e.power_limit_at_default && g.power_limit_mw && g.power_default_limit_mw &&
      *g.power_limit_mw != *g.power_default_limit_mw) {
    add(gpu + "powerLimit", std::to_string(*g.power_limit_mw / 1000) + " W",
        std::to_string(*g.power_default_limit_mw / 1000) + " W (the default)");
  }
  if (e.numa_affinity && g.numa_node && *g.numa_node < 0) {
    add(gpu + "numaNode", "none (-1)", "the GPU's socket (BIOS/ACPI SRAT gives no affinity)");
  }
  if (i < e.gpu_numa_nodes.size() && g.numa_node && *g.numa_node != e.gpu_numa_nodes[i]) {
    add(gpu + "numaNode", std::to_string(*g.numa_node), std::to_string(e.gpu_numa_nodes[i]));
  }
  if (e.no_acs_redirect && !g.acs_redirect_bridges.empty()) {
    std::string bridges;
    for (const auto& b : g.acs_redirect_bridges) bridges += (bridges.empty() ? "" : ", ") + b;
    add(gpu + "pcieAcsRedirect", "enabled on " + bridges,
        "disabled (redirect sends peer-to-peer traffic through the root complex)");
  }
  if (e.iommu_passthrough && !g.iommu_type.empty() && g.iommu_type != "identity") {
    add(gpu + "iommu", g.iommu_type + " (translated)",
        "identity (iommu=pt) or off, for peer-to-peer DMA");
  }
  if (e.fabric_manager && g.fabric_problem && !g.fabric_problem->empty()) {
    add(gpu + "fabricManager", *g.fabric_problem, "registered with the NVSwitch fabric");
  }
}

// The InfiniBand ports: each below ACTIVE or its rate, and too few active, through `add`.
void CheckIbPorts(const NodeConfig& node, const Expectations& e,
                  const std::function<void(std::string, std::string, std::string)>& add) {
  int active = 0;
  for (const fabric::IbPort& p : node.ib_ports) {
    if (p.state != "ACTIVE") {
      if (e.min_active_ib_ports > 0) add(p.Name() + " state", p.state, "ACTIVE");
      continue;
    }
    ++active;
    if (e.min_ib_rate_gbps > 0 && p.rate_gbps < e.min_ib_rate_gbps) {
      add(p.Name() + " rate", Fmt(p.rate_gbps) + " Gb/s",
          ">= " + Fmt(e.min_ib_rate_gbps) + " Gb/s");
    }
  }
  if (active < e.min_active_ib_ports) {
    add("activeIbPorts", std::to_string(active), ">= " + std::to_string(e.min_active_ib_ports));
  }
}

}  // namespace

std::vector<Mismatch> CheckConfig(const NodeConfig& node, const Expectations& e) {
  std::vector<Mismatch> out;
  auto add = [&out](std::string setting, std::string found, std::string expected) {
    out.push_back({std::move(setting), std::move(found), std::move(expected)});
  };
  auto version_at_least = [&](const char* setting, const std::string& found,
                              const std::string& min) {
    if (min.empty()) return;
    if (found.empty()) {
      add(setting, "unknown", ">= " + min);
    } else if (CompareVersions(found, min) < 0) {
      add(setting, found, ">= " + min);
    }
  };
  if (!e.driver_version.empty() && node.driver_version != e.driver_version) {
    add("driverVersion", node.driver_version.empty() ? "unknown" : node.driver_version,
        e.driver_version);
  }
  version_at_least("driverVersion", node.driver_version, e.min_driver_version);
  version_at_least("cudaDriverVersion", node.cuda_driver_version, e.min_cuda_driver_version);
  version_at_least("ncclVersion", node.nccl_version, e.min_nccl_version);

  for (std::size_t i = 0; i < node.gpus.size(); ++i) CheckGpuConfig(i, node.gpus[i], e, add);
  if (e.min_active_ib_ports > 0 || e.min_ib_rate_gbps > 0) CheckIbPorts(node, e, add);
  return out;
}

NodeConfig GatherConfig(const nvml::Nvml& nvml, const HostFs& fs, const std::string& nccl_version) {
  NodeConfig node;
  const nvml::NvmlFunctions& f = nvml.fn();
  node.driver_version = nvml.DriverVersion();
  node.nccl_version = nccl_version;
  if (const std::optional<int> version = nvml::CudaDriverVersion(nvml)) {
    node.cuda_driver_version =
        std::to_string(*version / 1000) + "." + std::to_string(*version % 1000 / 10);
  }
  const Result<unsigned> count = nvml::DeviceCount(nvml);
  if (!count.ok()) node.notes.push_back(count.status().message() + ": no GPU settings read");
  for (unsigned i = 0; count.ok() && i < *count; ++i) {
    const Result<nvml::nvmlDevice_t> device = nvml::DeviceAt(nvml, i);
    if (!device.ok()) {
      node.notes.push_back("gpu" + std::to_string(i) + ": no NVML handle (" +
                           device.status().message() + ")");
      continue;
    }
    const nvml::nvmlDevice_t d = *device;
    const nvml::GpuAttributes a = nvml::ReadAttributes(nvml, d);
    GpuConfig g;
    g.name = a.name.value_or("");
    g.pci_bus_id = a.pci_bus_id.value_or("");
    g.persistence_mode = a.persistence_mode;
    g.ecc_enabled = a.ecc_enabled;
    g.mig_enabled = a.mig_enabled;
    g.app_clock_sm_mhz = a.app_clock_sm_mhz;
    g.app_clock_sm_default_mhz = a.app_clock_sm_default_mhz;
    g.power_limit_mw = a.power_limit_mw;
    g.power_default_limit_mw = a.power_default_limit_mw;
    if (f.DeviceGetGpuFabricInfoV != nullptr) {
      nvml::nvmlGpuFabricInfoV_t info{};
      info.version = nvml::kGpuFabricInfoV3;
      if (f.DeviceGetGpuFabricInfoV(d, &info) == nvml::kSuccess &&
          info.state != nvml::kGpuFabricStateNotSupported) {
        nvml::HealthReadings h;
        h.fabric_state = info.state;
        h.fabric_status = info.status;
        h.fabric_health_summary = info.healthSummary;
        g.fabric_problem = nvml::FabricProblem(h);
      }
    }
    if (!g.pci_bus_id.empty()) {
      const std::string dev = "/sys/bus/pci/devices/" + g.pci_bus_id;
      if (auto numa = fs.Read(dev + "/numa_node"); numa.ok()) {
        g.numa_node = std::atoi(numa->c_str());
      }
      if (auto type = fs.Read(dev + "/iommu_group/type"); type.ok()) g.iommu_type = TrimLine(*type);
      g.acs_readable = true;
      if (auto resolved = fs.Resolve(dev); resolved.ok()) {
        std::vector<std::string> chain = PciChain(*resolved);
        if (!chain.empty()) chain.pop_back();  // the GPU itself
        for (const std::string& bridge : chain) {
          auto config = fs.Read("/sys/bus/pci/devices/" + bridge + "/config");
          const auto redirect = config.ok() ? AcsRedirectEnabled(*config) : std::nullopt;
          if (!redirect) {
            g.acs_readable = false;
          } else if (*redirect) {
            g.acs_redirect_bridges.push_back(bridge);
          }
        }
      } else {
        g.acs_readable = false;
      }
      if (!g.acs_readable) {
        node.notes.push_back("gpu" + std::to_string(i) +
                             ": ACS of some bridges not readable (PCI config space past 256 "
                             "bytes needs root)");
      }
    }
    node.gpus.push_back(std::move(g));
  }

  // No /sys/class/infiniband leaves the list empty: the expectations on ports then say so.
  if (auto ports = fabric::ReadIbPorts(fs, "/sys"); ports.ok()) node.ib_ports = std::move(*ports);
  return node;
}

}  // namespace perfgate::kernels::config
