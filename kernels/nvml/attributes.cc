#include "kernels/nvml/attributes.h"

#include <cstring>

namespace perfgate::kernels::nvml {
namespace {

// A string NVML wrote into a buffer of `size` bytes, cut at its end even without a NUL.
std::string FixedString(const char* buffer, std::size_t size) {
  return {buffer, strnlen(buffer, size)};
}

template <std::size_t N>
std::optional<std::string> ReadText(nvmlReturn_t (*call)(nvmlDevice_t, char*, unsigned),
                                    nvmlDevice_t device) {
  if (call == nullptr) return std::nullopt;
  char buffer[N] = {};
  if (call(device, buffer, N) != kSuccess) return std::nullopt;
  return FixedString(buffer, N);
}

std::optional<unsigned> ReadUnsigned(nvmlReturn_t (*call)(nvmlDevice_t, unsigned*),
                                     nvmlDevice_t device) {
  unsigned value = 0;
  if (call == nullptr || call(device, &value) != kSuccess) return std::nullopt;
  return value;
}

std::optional<unsigned> ReadClock(const NvmlFunctions& f, nvmlDevice_t device, int id) {
  unsigned mhz = 0;
  if (f.DeviceGetClock == nullptr || f.DeviceGetClock(device, kClockSm, id, &mhz) != kSuccess) {
    return std::nullopt;
  }
  return mhz;
}

std::optional<unsigned> ReadMaxClock(const NvmlFunctions& f, nvmlDevice_t device, int type) {
  unsigned mhz = 0;
  if (f.DeviceGetMaxClockInfo == nullptr ||
      f.DeviceGetMaxClockInfo(device, type, &mhz) != kSuccess) {
    return std::nullopt;
  }
  return mhz;
}

}  // namespace

GpuAttributes ReadAttributes(const Nvml& nvml, nvmlDevice_t device) {
  const NvmlFunctions& f = nvml.fn();
  GpuAttributes a;
  a.name = ReadText<kDeviceNameBufferBytes>(f.DeviceGetName, device);
  a.uuid = ReadText<kUuidBufferBytes>(f.DeviceGetUUID, device);
  a.vbios = ReadText<kVbiosBufferBytes>(f.DeviceGetVbiosVersion, device);
  a.serial = ReadText<kSerialBufferBytes>(f.DeviceGetSerial, device);
  if (f.DeviceGetPciInfo != nullptr) {
    nvmlPciInfo_t pci{};
    if (f.DeviceGetPciInfo(device, &pci) == kSuccess) {
      a.pci_bus_id = NormalizePciBusId(FixedString(pci.busId, sizeof pci.busId));
    }
  }
  if (f.DeviceGetPersistenceMode != nullptr) {
    nvmlEnableState_t mode = 0;
    if (f.DeviceGetPersistenceMode(device, &mode) == kSuccess) a.persistence_mode = mode != 0;
  }
  if (f.DeviceGetEccMode != nullptr) {
    nvmlEnableState_t current = 0;
    nvmlEnableState_t pending = 0;
    if (f.DeviceGetEccMode(device, &current, &pending) == kSuccess) a.ecc_enabled = current != 0;
  }
  if (f.DeviceGetMigMode != nullptr) {
    unsigned current = 0;
    unsigned pending = 0;
    const nvmlReturn_t rc = f.DeviceGetMigMode(device, &current, &pending);
    if (rc == kSuccess) a.mig_enabled = current != 0;
    if (rc == kErrorNotSupported) a.mig_enabled = false;  // a GPU without MIG
  }
  a.max_sm_clock_mhz = ReadMaxClock(f, device, kClockSm);
  a.max_memory_clock_mhz = ReadMaxClock(f, device, kClockMem);
  a.app_clock_sm_mhz = ReadClock(f, device, kClockIdAppClockTarget);
  a.app_clock_sm_default_mhz = ReadClock(f, device, kClockIdAppClockDefault);
  a.power_limit_mw = ReadUnsigned(f.DeviceGetPowerManagementLimit, device);
  a.power_default_limit_mw = ReadUnsigned(f.DeviceGetPowerManagementDefaultLimit, device);
  return a;
}

Result<unsigned> DeviceCount(const Nvml& nvml) {
  const NvmlFunctions& f = nvml.fn();
  unsigned count = 0;
  const nvmlReturn_t rc =
      f.DeviceGetCount != nullptr ? f.DeviceGetCount(&count) : kErrorNotSupported;
  RETURN_IF_ERROR(nvml.CallStatus(rc, "nvmlDeviceGetCount"));
  return count;
}

Result<nvmlDevice_t> DeviceAt(const Nvml& nvml, unsigned index) {
  const NvmlFunctions& f = nvml.fn();
  nvmlDevice_t device = nullptr;
  const nvmlReturn_t rc = f.DeviceGetHandleByIndex != nullptr
                              ? f.DeviceGetHandleByIndex(index, &device)
                              : kErrorNotSupported;
  RETURN_IF_ERROR(nvml.CallStatus(rc, "nvmlDeviceGetHandleByIndex"));
  return device;
}

std::optional<int> CudaDriverVersion(const Nvml& nvml) {
  const NvmlFunctions& f = nvml.fn();
  int version = 0;
  if (f.SystemGetCudaDriverVersion == nullptr ||
      f.SystemGetCudaDriverVersion(&version) != kSuccess || version <= 0) {
    return std::nullopt;
  }
  return version;
}

}  // namespace perfgate::kernels::nvml
