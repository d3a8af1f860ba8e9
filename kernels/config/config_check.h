// The config test's logic: what the node is (facts read from NVML and sysfs) against what its
// profile expects, as a list of mismatches that each name the setting, the value found and the
// value expected. Gathering goes through the Nvml function table and HostFs, so unit tests
// feed recorded answers and a fake sysfs tree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/config/host_fs.h"
#include "kernels/fabric/ports.h"
#include "kernels/nvml/nvml.h"

namespace perfgate::kernels::config {

struct GpuConfig {
  std::string name;
  std::string pci_bus_id;  // "0000:1b:00.0"
  std::optional<bool> persistence_mode;
  std::optional<bool> ecc_enabled;
  std::optional<bool> mig_enabled;
  std::optional<unsigned> app_clock_sm_mhz;          // application clock target
  std::optional<unsigned> app_clock_sm_default_mhz;  // its default
  std::optional<unsigned> power_limit_mw;
  std::optional<unsigned> power_default_limit_mw;
  std::optional<int> numa_node;  // sysfs numa_node; -1 means the kernel knows none
  // Bridges above the GPU with ACS P2P request or completion redirect on ("0000:00:01.1"), and
  // whether every bridge's ACS could be read (config space past 256 bytes needs root).
  std::vector<std::string> acs_redirect_bridges;
  bool acs_readable = false;
  std::string iommu_type;  // iommu_group/type: "identity", "DMA", "DMA-FQ"; "" without IOMMU
  // NVSwitch fabric registration; empty when the GPU has no fabric (no NVSwitch).
  std::optional<std::string> fabric_problem;  // "" when registered and healthy
};

struct NodeConfig {
  std::string driver_version;       // "580.65.06"
  std::string cuda_driver_version;  // "13.0"
  std::string nccl_version;         // "2.28.9", "" without NCCL
  std::vector<GpuConfig> gpus;
  std::vector<fabric::IbPort> ib_ports;
  std::vector<std::string> notes;  // readings that failed, for the details
};

struct Expectations {
  std::string min_driver_version;  // "" = any
  std::string driver_version;      // exact, "" = any
  std::string min_cuda_driver_version;
  std::string min_nccl_version;
  bool persistence_mode = true;
  bool ecc_enabled = true;
  bool mig_enabled = false;
  bool app_clocks_at_default = true;
  bool power_limit_at_default = true;
  bool numa_affinity = true;                 // each GPU has a NUMA node
  std::vector<std::int64_t> gpu_numa_nodes;  // GPU i (NVML order) on node [i]; empty = any
  bool no_acs_redirect = true;
  bool iommu_passthrough = true;
  bool fabric_manager = true;
  int min_active_ib_ports = 0;
  double min_ib_rate_gbps = 0;
};

struct Mismatch {
  std::string setting;  // "gpu0 persistenceMode", "driverVersion"
  std::string found;
  std::string expected;
  std::string Text() const { return setting + ": found " + found + ", expected " + expected; }
};

// Numeric, dotted comparison: "550.54.15" vs "550.127" -> -1; missing parts count as 0.
int CompareVersions(const std::string& a, const std::string& b);

// Whether the ACS capability in PCI config space `config` (as read from sysfs) has P2P
// request redirect or completion redirect enabled; nullopt when the extended configuration
// space is not in `config` (unprivileged reads stop at 64 or 256 bytes). Pure.
std::optional<bool> AcsRedirectEnabled(const std::string& config);

// Every mismatch, in a stable order. Pure.
std::vector<Mismatch> CheckConfig(const NodeConfig& node, const Expectations& expect);

// Reads the node: NVML for the driver and each GPU, sysfs for NUMA, ACS, IOMMU and InfiniBand.
// Never fails as a whole: what cannot be read stays empty (and is listed in notes). Blocking.
NodeConfig GatherConfig(const nvml::Nvml& nvml, const HostFs& fs, const std::string& nccl_version);

}  // namespace perfgate::kernels::config
