#include "kernels/nvml/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <mutex>

#include "common/strings.h"

namespace perfgate::kernels::nvml {

std::string ReturnName(nvmlReturn_t code) {
  switch (code) {
    case 0:
      return "NVML_SUCCESS";
    case 1:
      return "NVML_ERROR_UNINITIALIZED";
    case 2:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case 3:
      return "NVML_ERROR_NOT_SUPPORTED";
    case 4:
      return "NVML_ERROR_NO_PERMISSION";
    case 5:
      return "NVML_ERROR_ALREADY_INITIALIZED";
    case 6:
      return "NVML_ERROR_NOT_FOUND";
    case 7:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case 8:
      return "NVML_ERROR_INSUFFICIENT_POWER";
    case 9:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case 10:
      return "NVML_ERROR_TIMEOUT";
    case 11:
      return "NVML_ERROR_IRQ_ISSUE";
    case 12:
      return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case 13:
      return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case 14:
      return "NVML_ERROR_CORRUPTED_INFOROM";
    case 15:
      return "NVML_ERROR_GPU_IS_LOST";
    case 16:
      return "NVML_ERROR_RESET_REQUIRED";
    case 17:
      return "NVML_ERROR_OPERATING_SYSTEM";
    case 18:
      return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case 19:
      return "NVML_ERROR_IN_USE";
    case 20:
      return "NVML_ERROR_MEMORY";
    case 21:
      return "NVML_ERROR_NO_DATA";
    case 999:
      return "NVML_ERROR_UNKNOWN";
    default:
      return "NVML_ERROR_" + std::to_string(code);
  }
}

std::string NormalizePciBusId(const std::string& bus_id) {
  std::string lower = Lower(bus_id);
  unsigned domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
  unsigned function = 0;
  int consumed = 0;
  if (std::sscanf(lower.c_str(), "%x:%x:%x.%x%n", &domain, &bus, &device, &function, &consumed) !=
          4 ||
      static_cast<std::size_t>(consumed) != lower.size()) {
    return lower;
  }
  char out[32];
  std::snprintf(out, sizeof(out), "%04x:%02x:%02x.%x", domain, bus, device, function);
  return out;
}

Result<std::shared_ptr<Nvml>> Nvml::FromTable(const NvmlFunctions& fns) {
  if (fns.Init == nullptr) return Unavailable("NVML unavailable: nvmlInit_v2 not found");
  const nvmlReturn_t rc = fns.Init();
  if (rc != kSuccess) {
    std::string text = ReturnName(rc);
    if (fns.ErrorString != nullptr) text += std::string(" (") + fns.ErrorString(rc) + ")";
    return Unavailable("NVML unavailable: nvmlInit_v2: " + text);
  }
  return std::shared_ptr<Nvml>(new Nvml(fns));
}

Nvml::~Nvml() {
  if (fns_.Shutdown != nullptr) fns_.Shutdown();
  // The library stays loaded: other threads' function pointers may outlive us in a crash dump
  // path, and dlclose of a driver library buys nothing at process end.
}

std::string Nvml::ErrorText(nvmlReturn_t code) const {
  std::string text = ReturnName(code);
  if (fns_.ErrorString != nullptr) text += std::string(" (") + fns_.ErrorString(code) + ")";
  return text;
}

Status Nvml::CallStatus(nvmlReturn_t code, const std::string& what) const {
  if (code == kSuccess) return Status::Ok();
  const std::string message = what + ": " + ErrorText(code);
  if (code == kErrorGpuIsLost || code == kErrorDriverNotLoaded) return Unavailable(message);
  return Internal(message);
}

std::string Nvml::DriverVersion() const {
  if (fns_.SystemGetDriverVersion == nullptr) return "";
  char buffer[kDriverVersionBufferBytes] = {};
  if (fns_.SystemGetDriverVersion(buffer, sizeof(buffer)) != kSuccess) return "";
  return buffer;
}

Result<nvmlDevice_t> Nvml::DeviceByPciBusId(const std::string& cuda_pci_bus_id) const {
  if (fns_.DeviceGetCount == nullptr || fns_.DeviceGetHandleByIndex == nullptr ||
      fns_.DeviceGetPciInfo == nullptr) {
    return Unavailable("NVML unavailable: device enumeration functions missing");
  }
  unsigned count = 0;
  RETURN_IF_ERROR(CallStatus(fns_.DeviceGetCount(&count), "nvmlDeviceGetCount_v2"));
  const std::string wanted = NormalizePciBusId(cuda_pci_bus_id);
  std::string seen;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    if (fns_.DeviceGetHandleByIndex(i, &device) != kSuccess) continue;
    nvmlPciInfo_t pci{};
    if (fns_.DeviceGetPciInfo(device, &pci) != kSuccess) continue;
    pci.busId[kPciBusIdBufferBytes - 1] = '\0';
    const std::string have = NormalizePciBusId(pci.busId);
    if (have == wanted) return device;
    seen += (seen.empty() ? "" : ", ") + have;
  }
  return NotFound("no NVML device with PCI bus id " + wanted +
                  " (NVML has: " + (seen.empty() ? "none" : seen) + ")");
}

namespace {

template <typename Fn>
void Resolve(void* library, const char* name, Fn*& slot) {
  slot = reinterpret_cast<Fn*>(dlsym(library, name));
}

template <typename Fn>
void ResolveFirst(void* library, const char* name, const char* fallback, Fn*& slot) {
  Resolve(library, name, slot);
  if (slot == nullptr) Resolve(library, fallback, slot);
}

Result<std::shared_ptr<Nvml>> LoadNvml() {
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    return Unavailable(std::string("NVML unavailable: ") +
                       (error != nullptr ? error : "dlopen(libnvidia-ml.so.1) failed"));
  }
  NvmlFunctions f;
  Resolve(library, "nvmlInit_v2", f.Init);
  Resolve(library, "nvmlShutdown", f.Shutdown);
  Resolve(library, "nvmlErrorString", f.ErrorString);
  Resolve(library, "nvmlSystemGetDriverVersion", f.SystemGetDriverVersion);
  Resolve(library, "nvmlSystemGetCudaDriverVersion_v2", f.SystemGetCudaDriverVersion);
  Resolve(library, "nvmlDeviceGetCount_v2", f.DeviceGetCount);
  Resolve(library, "nvmlDeviceGetHandleByIndex_v2", f.DeviceGetHandleByIndex);
  Resolve(library, "nvmlDeviceGetPciInfo_v3", f.DeviceGetPciInfo);
  Resolve(library, "nvmlDeviceGetName", f.DeviceGetName);
  Resolve(library, "nvmlDeviceGetUUID", f.DeviceGetUUID);
  Resolve(library, "nvmlDeviceGetVbiosVersion", f.DeviceGetVbiosVersion);
  Resolve(library, "nvmlDeviceGetSerial", f.DeviceGetSerial);
  Resolve(library, "nvmlDeviceGetTotalEccErrors", f.DeviceGetTotalEccErrors);
  Resolve(library, "nvmlDeviceGetEccMode", f.DeviceGetEccMode);
  Resolve(library, "nvmlDeviceGetRemappedRows", f.DeviceGetRemappedRows);
  Resolve(library, "nvmlDeviceGetRetiredPagesPendingStatus", f.DeviceGetRetiredPagesPendingStatus);
  ResolveFirst(library, "nvmlDeviceGetCurrentClocksEventReasons",
               "nvmlDeviceGetCurrentClocksThrottleReasons", f.DeviceGetCurrentClocksEventReasons);
  Resolve(library, "nvmlDeviceGetCurrPcieLinkGeneration", f.DeviceGetCurrPcieLinkGeneration);
  Resolve(library, "nvmlDeviceGetCurrPcieLinkWidth", f.DeviceGetCurrPcieLinkWidth);
  Resolve(library, "nvmlDeviceGetMaxPcieLinkGeneration", f.DeviceGetMaxPcieLinkGeneration);
  Resolve(library, "nvmlDeviceGetMaxPcieLinkWidth", f.DeviceGetMaxPcieLinkWidth);
  Resolve(library, "nvmlDeviceGetNvLinkState", f.DeviceGetNvLinkState);
  Resolve(library, "nvmlDeviceGetComputeRunningProcesses_v3", f.DeviceGetComputeRunningProcesses);
  Resolve(library, "nvmlDeviceGetGraphicsRunningProcesses_v3", f.DeviceGetGraphicsRunningProcesses);
  Resolve(library, "nvmlDeviceGetPowerManagementLimit", f.DeviceGetPowerManagementLimit);
  Resolve(library, "nvmlDeviceGetPowerUsage", f.DeviceGetPowerUsage);
  Resolve(library, "nvmlDeviceGetTemperature", f.DeviceGetTemperature);
  Resolve(library, "nvmlDeviceGetClockInfo", f.DeviceGetClockInfo);
  Resolve(library, "nvmlDeviceGetMaxClockInfo", f.DeviceGetMaxClockInfo);
  Resolve(library, "nvmlDeviceGetMigMode", f.DeviceGetMigMode);
  Resolve(library, "nvmlDeviceGetPersistenceMode", f.DeviceGetPersistenceMode);
  Resolve(library, "nvmlEventSetCreate", f.EventSetCreate);
  Resolve(library, "nvmlDeviceRegisterEvents", f.DeviceRegisterEvents);
  Resolve(library, "nvmlEventSetWait_v2", f.EventSetWait);
  Resolve(library, "nvmlEventSetFree", f.EventSetFree);
  Resolve(library, "nvmlDeviceGetPcieReplayCounter", f.DeviceGetPcieReplayCounter);
  Resolve(library, "nvmlDeviceGetNvLinkErrorCounter", f.DeviceGetNvLinkErrorCounter);
  Resolve(library, "nvmlDeviceGetRetiredPages", f.DeviceGetRetiredPages);
  Resolve(library, "nvmlDeviceGetGpuFabricInfoV", f.DeviceGetGpuFabricInfoV);
  Resolve(library, "nvmlDeviceGetPowerManagementDefaultLimit",
          f.DeviceGetPowerManagementDefaultLimit);
  Resolve(library, "nvmlDeviceGetClock", f.DeviceGetClock);
  Resolve(library, "nvmlDeviceGetNumaNodeId", f.DeviceGetNumaNodeId);
  // The library stays loaded for the life of the process: the table points into it.
  return Nvml::FromTable(f);
}

}  // namespace

Result<std::shared_ptr<Nvml>> SharedNvml() {
  // Loaded once: a failure (no driver) is final for the process, like the driver's absence.
  static std::once_flag once;
  static std::optional<Result<std::shared_ptr<Nvml>>> shared;
  std::call_once(once, [] { shared.emplace(LoadNvml()); });
  return *shared;
}

Result<XidWatch> XidWatch::Start(std::shared_ptr<Nvml> nvml, nvmlDevice_t device) {
  const NvmlFunctions& f = nvml->fn();
  if (f.EventSetCreate == nullptr || f.DeviceRegisterEvents == nullptr ||
      f.EventSetWait == nullptr || f.EventSetFree == nullptr) {
    return Unimplemented("NVML events not available in this driver");
  }
  nvmlEventSet_t set = nullptr;
  RETURN_IF_ERROR(nvml->CallStatus(f.EventSetCreate(&set), "nvmlEventSetCreate"));
  const nvmlReturn_t rc = f.DeviceRegisterEvents(device, kEventTypeXidCriticalError, set);
  if (rc != kSuccess) {
    f.EventSetFree(set);
    return nvml->CallStatus(rc, "nvmlDeviceRegisterEvents(XidCriticalError)");
  }
  return XidWatch(std::move(nvml), device, set);
}

XidWatch::XidWatch(XidWatch&& other) noexcept
    : nvml_(std::move(other.nvml_)),
      device_(other.device_),
      set_(std::exchange(other.set_, nullptr)),
      xids_(std::move(other.xids_)),
      error_(std::move(other.error_)) {}

XidWatch& XidWatch::operator=(XidWatch&& other) noexcept {
  if (this != &other) {
    if (set_ != nullptr && nvml_ != nullptr) nvml_->fn().EventSetFree(set_);
    nvml_ = std::move(other.nvml_);
    device_ = other.device_;
    set_ = std::exchange(other.set_, nullptr);
    xids_ = std::move(other.xids_);
    error_ = std::move(other.error_);
  }
  return *this;
}

XidWatch::~XidWatch() {
  if (set_ != nullptr && nvml_ != nullptr) nvml_->fn().EventSetFree(set_);
}

const std::vector<std::uint64_t>& XidWatch::Poll() {
  if (set_ == nullptr) return xids_;
  // An event set gathers at most a bounded number of events between waits; the cap guards
  // against a device flooding XIDs.
  for (int i = 0; i < 1024; ++i) {
    nvmlEventData_t data{};
    const nvmlReturn_t rc = nvml_->fn().EventSetWait(set_, &data, 0);
    if (rc == kErrorTimeout) break;  // nothing pending
    if (rc != kSuccess) {
      if (error_.empty()) error_ = "nvmlEventSetWait: " + nvml_->ErrorText(rc);
      break;
    }
    if ((data.eventType & kEventTypeXidCriticalError) != 0 &&
        (data.device == device_ || data.device == nullptr)) {
      xids_.push_back(data.eventData);
    }
  }
  return xids_;
}

}  // namespace perfgate::kernels::nvml
