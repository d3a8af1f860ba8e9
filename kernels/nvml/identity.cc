#include "kernels/nvml/identity.h"

#include <cstdio>

namespace perfgate::kernels {
namespace {

std::string EnableText(bool ok, int state) {
  if (!ok) return "unknown";
  return state != 0 ? "enabled" : "disabled";
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
  const nvml::NvmlFunctions& f = nvml->fn();
  nvml::nvmlDevice_t d = *device;
  id.driver_version = nvml->DriverVersion();
  if (f.DeviceGetVbiosVersion != nullptr) {
    char vbios[nvml::kVbiosBufferBytes] = {};
    if (f.DeviceGetVbiosVersion(d, vbios, sizeof(vbios)) == nvml::kSuccess) id.vbios = vbios;
  }
  if (f.DeviceGetSerial != nullptr) {
    char serial[nvml::kSerialBufferBytes] = {};
    if (f.DeviceGetSerial(d, serial, sizeof(serial)) == nvml::kSuccess) id.serial = serial;
  }
  unsigned value = 0;
  if (f.DeviceGetMaxClockInfo != nullptr) {
    if (f.DeviceGetMaxClockInfo(d, nvml::kClockSm, &value) == nvml::kSuccess) {
      id.sm_clock_mhz = value;
    }
    if (f.DeviceGetMaxClockInfo(d, nvml::kClockMem, &value) == nvml::kSuccess) {
      id.memory_clock_mhz = value;
    }
  }
  if (f.DeviceGetPowerManagementLimit != nullptr &&
      f.DeviceGetPowerManagementLimit(d, &value) == nvml::kSuccess) {
    id.power_limit_w = value / 1000.0;
  }
  if (f.DeviceGetEccMode != nullptr) {
    nvml::nvmlEnableState_t current = 0;
    nvml::nvmlEnableState_t pending = 0;
    const bool ok = f.DeviceGetEccMode(d, &current, &pending) == nvml::kSuccess;
    if (ok) id.ecc_mode = EnableText(true, current);
  }
  if (f.DeviceGetMigMode != nullptr) {
    unsigned current = 0;
    unsigned pending = 0;
    const nvml::nvmlReturn_t rc = f.DeviceGetMigMode(d, &current, &pending);
    // GPUs without MIG answer NOT_SUPPORTED: that is "disabled", not "unknown".
    if (rc == nvml::kErrorNotSupported) {
      id.mig_mode = "disabled";
    } else {
      id.mig_mode = EnableText(rc == nvml::kSuccess, static_cast<int>(current));
    }
  }
  if (f.DeviceGetPersistenceMode != nullptr) {
    nvml::nvmlEnableState_t mode = 0;
    // Two statements: argument evaluation order would otherwise read `mode` before the call.
    const bool ok = f.DeviceGetPersistenceMode(d, &mode) == nvml::kSuccess;
    id.persistence_mode = EnableText(ok, mode);
  }
  return id;
}

Result<GpuIdentityInfo> ReadGpuIdentity(int ordinal) {
  ASSIGN_OR_RETURN(cuda::CudaDeviceFacts facts, cuda::QueryCudaDevice(ordinal));
  auto nvml = nvml::SharedNvml();
  if (!nvml.ok()) return JoinGpuIdentity(facts, nullptr, nvml.status().message());
  return JoinGpuIdentity(facts, nvml->get(), "");
}

}  // namespace perfgate::kernels
