#include "kernels/nvml/identity.h"

#include <cstdio>
#include <optional>

#include "kernels/nvml/attributes.h"

namespace perfgate::kernels {
namespace {

std::string EnableText(std::optional<bool> state) {
  if (!state) return "unknown";
  return *state ? "enabled" : "disabled";
}

}  // namespace

GpuIdentityInfo JoinGpuIdentity(const cuda::CudaDeviceFacts& facts, const nvml::Nvml* nvml,
                                const std::string& nvml_error) {
  GpuIdentityInfo id;
  id.index = facts.ordinal;
  id.name = facts.name;
  id.uuid = facts.uuid;
  id.pci_bus_id = facts.pci_bus_id;
  id.compute_capability = std::to_string(facts.cc_major) + "." + std::to_string(facts.cc_minor);
  id.sm_count = facts.sm_count;
  id.memory_gib = static_cast<double>(facts.total_memory_bytes) / (1024.0 * 1024.0 * 1024.0);
  id.sm_clock_mhz = facts.sm_clock_mhz;
  id.memory_clock_mhz = facts.memory_clock_mhz;
  // CUDA knows ECC; NVML below may refine it. MIG and persistence are NVML-only.
  id.ecc_mode = facts.ecc_enabled ? "enabled" : "disabled";
  id.mig_mode = "unknown";
  id.persistence_mode = "unknown";
  if (nvml == nullptr) {
    id.nvml_note = nvml_error;
    return id;
  }
  auto device = nvml->DeviceByPciBusId(facts.pci_bus_id);
  if (!device.ok()) {
    id.nvml_note = device.status().message();
    return id;
  }
  const nvml::GpuAttributes a = nvml::ReadAttributes(*nvml, *device);
  id.driver_version = nvml->DriverVersion();
  if (a.vbios) id.vbios = *a.vbios;
  if (a.serial) id.serial = *a.serial;
  if (a.max_sm_clock_mhz) id.sm_clock_mhz = *a.max_sm_clock_mhz;
  if (a.max_memory_clock_mhz) id.memory_clock_mhz = *a.max_memory_clock_mhz;
  if (a.power_limit_mw) id.power_limit_w = *a.power_limit_mw / 1000.0;
  if (a.ecc_enabled) id.ecc_mode = EnableText(a.ecc_enabled);
  id.mig_mode = EnableText(a.mig_enabled);
  id.persistence_mode = EnableText(a.persistence_mode);
  return id;
}

Result<GpuIdentityInfo> ReadGpuIdentity(int ordinal) {
  ASSIGN_OR_RETURN(cuda::CudaDeviceFacts facts, cuda::QueryCudaDevice(ordinal));
  auto nvml = nvml::SharedNvml();
  if (!nvml.ok()) return JoinGpuIdentity(facts, nullptr, nvml.status().message());
  return JoinGpuIdentity(facts, nvml->get(), "");
}

}  // namespace perfgate::kernels
