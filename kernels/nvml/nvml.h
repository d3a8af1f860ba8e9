// NVML, loaded at run time with dlopen("libnvidia-ml.so.1"): there is no nvml.h on the build
// machines and the operator image has no driver, so the few entry points we use are declared
// here with the ABI of NVIDIA's documented nvml.h (types and struct layouts below mirror it).
// Versioned symbols are resolved by name (nvmlInit_v2, nvmlDeviceGetPciInfo_v3, ...).
//
// Unit tests build an `NvmlFunctions` table of fakes and wrap it with Nvml::FromTable, so every
// decoding path runs without a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels::nvml {

// --- ABI of nvml.h (only what we use) -------------------------------------------------------
using nvmlReturn_t = int;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlEventSet_st;
using nvmlEventSet_t = nvmlEventSet_st*;
using nvmlEnableState_t = int;  // 0 disabled, 1 enabled

inline constexpr nvmlReturn_t kSuccess = 0;
inline constexpr nvmlReturn_t kErrorUninitialized = 1;
inline constexpr nvmlReturn_t kErrorInvalidArgument = 2;
inline constexpr nvmlReturn_t kErrorNotSupported = 3;
inline constexpr nvmlReturn_t kErrorNoPermission = 4;
inline constexpr nvmlReturn_t kErrorNotFound = 6;
inline constexpr nvmlReturn_t kErrorInsufficientSize = 7;
inline constexpr nvmlReturn_t kErrorDriverNotLoaded = 9;
inline constexpr nvmlReturn_t kErrorTimeout = 10;
inline constexpr nvmlReturn_t kErrorGpuIsLost = 15;
inline constexpr nvmlReturn_t kErrorUnknown = 999;

inline constexpr unsigned kPciBusIdBufferBytes = 32;
inline constexpr unsigned kPciBusIdLegacyBufferBytes = 16;
inline constexpr unsigned kDeviceNameBufferBytes = 96;
inline constexpr unsigned kUuidBufferBytes = 80;
inline constexpr unsigned kVbiosBufferBytes = 32;
// NVML_DEVICE_SERIAL_BUFFER_SIZE.
inline constexpr unsigned kSerialBufferBytes = 30;
inline constexpr unsigned kDriverVersionBufferBytes = 80;
// NVML_NVLINK_MAX_LINKS in current headers (Hopper and Blackwell have 18).
inline constexpr unsigned kNvLinkMaxLinks = 18;

struct nvmlPciInfo_t {  // nvmlPciInfo_st as returned by nvmlDeviceGetPciInfo_v3
  char busIdLegacy[kPciBusIdLegacyBufferBytes];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[kPciBusIdBufferBytes];
};

struct nvmlEventData_t {  // as filled by nvmlEventSetWait_v2
  nvmlDevice_t device;
  unsigned long long eventType;  // NOLINT(google-runtime-int): ABI
  unsigned long long eventData;  // NOLINT(google-runtime-int): the XID number
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct nvmlProcessInfo_t {  // nvmlProcessInfo_v2_t, for the *_v3 process queries
  unsigned int pid;
  unsigned long long usedGpuMemory;  // NOLINT(google-runtime-int): ABI
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// nvmlMemoryErrorType_t / nvmlEccCounterType_t / nvmlClockType_t / nvmlTemperatureSensors_t.
inline constexpr int kMemoryErrorCorrected = 0;
inline constexpr int kMemoryErrorUncorrected = 1;
inline constexpr int kVolatileEcc = 0;
inline constexpr int kAggregateEcc = 1;
inline constexpr int kClockGraphics = 0;
inline constexpr int kClockSm = 1;
inline constexpr int kClockMem = 2;
inline constexpr int kTemperatureGpu = 0;
// nvmlEventTypeXidCriticalError.
inline constexpr unsigned long long kEventTypeXidCriticalError = 0x8ULL;  // NOLINT

// nvmlClocksEventReasons (formerly ClocksThrottleReasons) bits.
inline constexpr std::uint64_t kClocksEventGpuIdle = 0x1;
inline constexpr std::uint64_t kClocksEventApplicationsClocksSetting = 0x2;
inline constexpr std::uint64_t kClocksEventSwPowerCap = 0x4;
inline constexpr std::uint64_t kClocksEventHwSlowdown = 0x8;
inline constexpr std::uint64_t kClocksEventSyncBoost = 0x10;
inline constexpr std::uint64_t kClocksEventSwThermalSlowdown = 0x20;
inline constexpr std::uint64_t kClocksEventHwThermalSlowdown = 0x40;
inline constexpr std::uint64_t kClocksEventHwPowerBrakeSlowdown = 0x80;
inline constexpr std::uint64_t kClocksEventDisplayClockSetting = 0x100;

// nvmlNvLinkErrorCounter_t (NVML_NVLINK_ERROR_DL_*), nvmlPageRetirementCause_t.
inline constexpr int kNvLinkErrorDlReplay = 0;
inline constexpr int kNvLinkErrorDlRecovery = 1;
inline constexpr int kNvLinkErrorDlCrcFlit = 2;
inline constexpr int kPageRetirementMultipleSingleBitEcc = 0;
inline constexpr int kPageRetirementDoubleBitEcc = 1;
// nvmlClockId_t: the application clock target and its default (nvmlDeviceGetClock).
inline constexpr int kClockIdAppClockTarget = 1;
inline constexpr int kClockIdAppClockDefault = 2;

// nvmlGpuFabricInfo_v3_t (nvmlGpuFabricInfoV_t), for nvmlDeviceGetGpuFabricInfoV.
inline constexpr unsigned kGpuFabricUuidBytes = 16;
struct nvmlGpuFabricInfoV_t {
  unsigned int version;  // set to kGpuFabricInfoV3 before the call
  unsigned char clusterUuid[kGpuFabricUuidBytes];
  nvmlReturn_t status;  // meaningful once state is kGpuFabricStateCompleted
  unsigned int cliqueId;
  unsigned char state;  // kGpuFabricState*
  unsigned int healthMask;
  unsigned char healthSummary;  // kGpuFabricHealthSummary*
};
// NVML_STRUCT_VERSION(GpuFabricInfo, 3): the struct's size with the version in the top byte.
inline constexpr unsigned kGpuFabricInfoV3 =
    static_cast<unsigned>(sizeof(nvmlGpuFabricInfoV_t)) | (3U << 24U);
inline constexpr unsigned char kGpuFabricStateNotSupported = 0;
inline constexpr unsigned char kGpuFabricStateNotStarted = 1;
inline constexpr unsigned char kGpuFabricStateInProgress = 2;
inline constexpr unsigned char kGpuFabricStateCompleted = 3;
inline constexpr unsigned char kGpuFabricHealthSummaryNotSupported = 0;
inline constexpr unsigned char kGpuFabricHealthSummaryHealthy = 1;
inline constexpr unsigned char kGpuFabricHealthSummaryUnhealthy = 2;
inline constexpr unsigned char kGpuFabricHealthSummaryLimitedCapacity = 3;

// The entry points we call. A null pointer means the library lacks it (older driver): callers
// treat that like NVML_ERROR_FUNCTION_NOT_FOUND and report the reading as not supported.
struct NvmlFunctions {
  nvmlReturn_t (*Init)() = nullptr;                    // nvmlInit_v2
  nvmlReturn_t (*Shutdown)() = nullptr;                // nvmlShutdown
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;  // nvmlErrorString
  nvmlReturn_t (*SystemGetDriverVersion)(char*, unsigned) = nullptr;
  nvmlReturn_t (*SystemGetCudaDriverVersion)(int*) = nullptr;  // nvmlSystemGetCudaDriverVersion_v2
  nvmlReturn_t (*DeviceGetCount)(unsigned*) = nullptr;         // nvmlDeviceGetCount_v2
  nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned, nvmlDevice_t*) = nullptr;  // _v2
  nvmlReturn_t (*DeviceGetPciInfo)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;   // _v3
  nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetVbiosVersion)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetSerial)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetTotalEccErrors)(nvmlDevice_t, int, int,
                                          unsigned long long*) = nullptr;  // NOLINT
  nvmlReturn_t (*DeviceGetEccMode)(nvmlDevice_t, nvmlEnableState_t*, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*DeviceGetRemappedRows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*,
                                        unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetRetiredPagesPendingStatus)(nvmlDevice_t, nvmlEnableState_t*) = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons, or the older ...ClocksThrottleReasons.
  nvmlReturn_t (*DeviceGetCurrentClocksEventReasons)(nvmlDevice_t,
                                                     unsigned long long*) = nullptr;  // NOLINT
  nvmlReturn_t (*DeviceGetCurrPcieLinkGeneration)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetCurrPcieLinkWidth)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetMaxPcieLinkGeneration)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetMaxPcieLinkWidth)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetNvLinkState)(nvmlDevice_t, unsigned, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*DeviceGetComputeRunningProcesses)(nvmlDevice_t, unsigned*,
                                                   nvmlProcessInfo_t*) = nullptr;  // _v3
  nvmlReturn_t (*DeviceGetGraphicsRunningProcesses)(nvmlDevice_t, unsigned*,
                                                    nvmlProcessInfo_t*) = nullptr;   // _v3
  nvmlReturn_t (*DeviceGetPowerManagementLimit)(nvmlDevice_t, unsigned*) = nullptr;  // mW
  nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned*) = nullptr;            // mW
  nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, int, unsigned*) = nullptr;      // C
  nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, int, unsigned*) = nullptr;        // MHz
  nvmlReturn_t (*DeviceGetMaxClockInfo)(nvmlDevice_t, int, unsigned*) = nullptr;     // MHz
  nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetPersistenceMode)(nvmlDevice_t, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*EventSetCreate)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*DeviceRegisterEvents)(nvmlDevice_t, unsigned long long,  // NOLINT
                                       nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*EventSetWait)(nvmlEventSet_t, nvmlEventData_t*, unsigned) = nullptr;  // _v2
  nvmlReturn_t (*EventSetFree)(nvmlEventSet_t) = nullptr;
  // Counters that predict trouble (health) and settings (config).
  nvmlReturn_t (*DeviceGetPcieReplayCounter)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetNvLinkErrorCounter)(nvmlDevice_t, unsigned, int,
                                              unsigned long long*) = nullptr;  // NOLINT
  // nvmlDeviceGetRetiredPages(device, cause, &count, addresses): count 0 asks for the size.
  nvmlReturn_t (*DeviceGetRetiredPages)(nvmlDevice_t, int, unsigned*,
                                        unsigned long long*) = nullptr;  // NOLINT
  nvmlReturn_t (*DeviceGetGpuFabricInfoV)(nvmlDevice_t, nvmlGpuFabricInfoV_t*) = nullptr;
  nvmlReturn_t (*DeviceGetPowerManagementDefaultLimit)(nvmlDevice_t, unsigned*) = nullptr;  // mW
  // nvmlDeviceGetClock(device, clockType, clockId, &mhz).
  nvmlReturn_t (*DeviceGetClock)(nvmlDevice_t, int, int, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetNumaNodeId)(nvmlDevice_t, unsigned*) = nullptr;
};

// "NVML_ERROR_NOT_SUPPORTED" style name for a return code (without the library's help).
std::string ReturnName(nvmlReturn_t code);

// "dddd:bb:dd.f" in lower case with a 4-digit domain, so CUDA's "0000:1B:00.0", NVML's
// "00000000:1B:00.0" and sysfs's "0000:1b:00.0" compare equal. Input that does not parse is
// returned lower-cased.
std::string NormalizePciBusId(const std::string& bus_id);

// An initialised NVML. Thread-safe (NVML itself is); shared by every device thread.
class Nvml {
 public:
  // Wraps a function table (fakes in tests) and calls its Init. Unavailable when Init fails.
  static Result<std::shared_ptr<Nvml>> FromTable(const NvmlFunctions& fns);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  const NvmlFunctions& fn() const { return fns_; }
  // "NVML_ERROR_NOT_SUPPORTED (Not Supported)": the code's name and the library's text.
  std::string ErrorText(nvmlReturn_t code) const;
  // A Status for a failed call; kUnavailable for GPU lost / driver not loaded, else kInternal.
  Status CallStatus(nvmlReturn_t code, const std::string& what) const;

  std::string DriverVersion() const;  // "" when unknown
  // The NVML device whose PCI bus id matches the CUDA device's ("0000:18:00.0").
  // NotFound when no NVML device matches. Blocking, thread-safe.
  Result<nvmlDevice_t> DeviceByPciBusId(const std::string& cuda_pci_bus_id) const;

 private:
  explicit Nvml(const NvmlFunctions& fns) : fns_(fns) {}
  NvmlFunctions fns_;
};

// Loads libnvidia-ml.so.1 once per process and initialises it. Unavailable("NVML
// unavailable: <dlerror or NVML error>") when the library or driver is missing. Thread-safe.
Result<std::shared_ptr<Nvml>> SharedNvml();

// Collects XID critical-error events for one device from construction on (NVML keeps no
// history: only events after registration are seen). Move-only; frees its event set.
class XidWatch {
 public:
  static Result<XidWatch> Start(std::shared_ptr<Nvml> nvml, nvmlDevice_t device);
  XidWatch(XidWatch&& other) noexcept;
  XidWatch& operator=(XidWatch&& other) noexcept;
  XidWatch(const XidWatch&) = delete;
  XidWatch& operator=(const XidWatch&) = delete;
  ~XidWatch();

  // Drains pending events without waiting and returns every XID seen since Start (in order).
  // Blocking for at most a few milliseconds; call from one thread at a time.
  const std::vector<std::uint64_t>& Poll();
  // "nvmlEventSetWait: NVML_ERROR_..." when a wait failed other than by timing out: the
  // events since then are unknown, so no XID count may be reported. "" when none.
  const std::string& error() const { return error_; }

 private:
  XidWatch(std::shared_ptr<Nvml> nvml, nvmlDevice_t device, nvmlEventSet_t set)
      : nvml_(std::move(nvml)), device_(device), set_(set) {}
  std::shared_ptr<Nvml> nvml_;
  nvmlDevice_t device_ = nullptr;
  nvmlEventSet_t set_ = nullptr;
  std::vector<std::uint64_t> xids_;
  std::string error_;
};

}  // namespace perfgate::kernels::nvml
