// NVML decoding against a fake function table: what the health test and the identity block
// report for a given set of NVML answers, with no driver.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/nvml/attributes.h"
#include "kernels/nvml/identity.h"
#include "kernels/nvml/nvml.h"
#include "kernels/nvml/readings.h"

namespace perfgate::kernels::nvml {
namespace {

// One fake GPU (or two) with settable answers. Plain functions read this global state, since
// NVML's entry points are C function pointers without a context argument.
struct FakeGpu {
  std::string bus_id = "00000000:1B:00.0";
  std::string name = "NVIDIA H200";
  std::string vbios = "96.00.AF.00.01";
  std::string serial = "1654922001234";
  nvmlReturn_t ecc_rc = kSuccess;
  unsigned long long ecc[2][2] = {{0, 0}, {0, 0}};  // NOLINT [error type][counter type]
  nvmlReturn_t remap_rc = kSuccess;
  unsigned remap[4] = {0, 0, 0, 0};  // correctable, uncorrectable, pending, failure
  nvmlReturn_t retired_rc = kErrorNotSupported;
  unsigned long long reasons = 0;     // NOLINT
  unsigned pcie[4] = {5, 16, 5, 16};  // gen, width, max gen, max width
  int nvlinks = 18;
  int nvlinks_down = 0;
  int nvlink_refused = -1;  // this link answers NO_PERMISSION
  std::vector<unsigned> pids;
  nvmlReturn_t compute_rc = kSuccess;
  nvmlReturn_t mig_rc = kSuccess;
  unsigned mig = 0;
};

struct FakeNvml {
  nvmlReturn_t init_rc = kSuccess;
  std::vector<FakeGpu> gpus = {FakeGpu{}};
  std::vector<nvmlEventData_t> events;
  nvmlReturn_t wait_rc = kErrorTimeout;  // what an event wait answers with nothing pending
  int shutdowns = 0;
  int event_sets_freed = 0;
} g;

FakeGpu& Gpu(nvmlDevice_t d) { return g.gpus[reinterpret_cast<std::uintptr_t>(d) - 1]; }
nvmlDevice_t Handle(unsigned i) { return reinterpret_cast<nvmlDevice_t>(std::uintptr_t{i} + 1); }

void CopyText(const std::string& text, char* out, unsigned size) {
  std::strncpy(out, text.c_str(), size - 1);
  out[size - 1] = '\0';
}

NvmlFunctions FakeTable() {
  NvmlFunctions f;
  f.Init = [] { return g.init_rc; };
  f.Shutdown = [] {
    ++g.shutdowns;
    return kSuccess;
  };
  f.ErrorString = [](nvmlReturn_t rc) { return rc == kErrorNoPermission ? "No permission" : "x"; };
  f.SystemGetDriverVersion = [](char* out, unsigned size) {
    CopyText("580.65.06", out, size);
    return kSuccess;
  };
  f.DeviceGetCount = [](unsigned* n) {
    *n = static_cast<unsigned>(g.gpus.size());
    return kSuccess;
  };
  f.DeviceGetHandleByIndex = [](unsigned i, nvmlDevice_t* d) {
    *d = Handle(i);
    return kSuccess;
  };
  f.DeviceGetPciInfo = [](nvmlDevice_t d, nvmlPciInfo_t* pci) {
    std::memset(pci, 0, sizeof(*pci));
    CopyText(Gpu(d).bus_id, pci->busId, sizeof(pci->busId));
    return kSuccess;
  };
  f.DeviceGetName = [](nvmlDevice_t d, char* out, unsigned size) {
    CopyText(Gpu(d).name, out, size);
    return kSuccess;
  };
  f.DeviceGetVbiosVersion = [](nvmlDevice_t d, char* out, unsigned size) {
    CopyText(Gpu(d).vbios, out, size);
    return kSuccess;
  };
  f.DeviceGetSerial = [](nvmlDevice_t d, char* out, unsigned size) {
    CopyText(Gpu(d).serial, out, size);
    return kSuccess;
  };
  f.DeviceGetTotalEccErrors = [](nvmlDevice_t d, int type, int counter,
                                 unsigned long long* n) {  // NOLINT
    *n = Gpu(d).ecc[type][counter];
    return Gpu(d).ecc_rc;
  };
  f.DeviceGetEccMode = [](nvmlDevice_t, nvmlEnableState_t* cur, nvmlEnableState_t* pend) {
    *cur = 1;
    *pend = 1;
    return kSuccess;
  };
  f.DeviceGetRemappedRows = [](nvmlDevice_t d, unsigned* c, unsigned* u, unsigned* p,
                               unsigned* fail) {
    *c = Gpu(d).remap[0];
    *u = Gpu(d).remap[1];
    *p = Gpu(d).remap[2];
    *fail = Gpu(d).remap[3];
    return Gpu(d).remap_rc;
  };
  f.DeviceGetRetiredPagesPendingStatus = [](nvmlDevice_t d, nvmlEnableState_t* s) {
    *s = 0;
    return Gpu(d).retired_rc;
  };
  f.DeviceGetCurrentClocksEventReasons = [](nvmlDevice_t d, unsigned long long* r) {  // NOLINT
    *r = Gpu(d).reasons;
    return kSuccess;
  };
  f.DeviceGetCurrPcieLinkGeneration = [](nvmlDevice_t d, unsigned* v) {
    *v = Gpu(d).pcie[0];
    return kSuccess;
  };
  f.DeviceGetCurrPcieLinkWidth = [](nvmlDevice_t d, unsigned* v) {
    *v = Gpu(d).pcie[1];
    return kSuccess;
  };
  f.DeviceGetMaxPcieLinkGeneration = [](nvmlDevice_t d, unsigned* v) {
    *v = Gpu(d).pcie[2];
    return kSuccess;
  };
  f.DeviceGetMaxPcieLinkWidth = [](nvmlDevice_t d, unsigned* v) {
    *v = Gpu(d).pcie[3];
    return kSuccess;
  };
  f.DeviceGetNvLinkState = [](nvmlDevice_t d, unsigned link, nvmlEnableState_t* s) {
    if (static_cast<int>(link) >= Gpu(d).nvlinks) return kErrorInvalidArgument;
    if (static_cast<int>(link) == Gpu(d).nvlink_refused) return kErrorNoPermission;
    *s = static_cast<int>(link) < Gpu(d).nvlinks_down ? 0 : 1;
    return kSuccess;
  };
  f.DeviceGetComputeRunningProcesses = [](nvmlDevice_t d, unsigned* n, nvmlProcessInfo_t* out) {
    const auto& pids = Gpu(d).pids;
    if (Gpu(d).compute_rc != kSuccess) return Gpu(d).compute_rc;
    if (*n < pids.size()) {
      *n = static_cast<unsigned>(pids.size());
      return kErrorInsufficientSize;
    }
    for (std::size_t i = 0; i < pids.size(); ++i) out[i] = {pids[i], 1 << 20, 0, 0};
    *n = static_cast<unsigned>(pids.size());
    return kSuccess;
  };
  f.DeviceGetGraphicsRunningProcesses = [](nvmlDevice_t, unsigned* n, nvmlProcessInfo_t*) {
    *n = 0;
    return kSuccess;
  };
  f.DeviceGetPowerManagementLimit = [](nvmlDevice_t, unsigned* mw) {
    *mw = 700000;
    return kSuccess;
  };
  f.DeviceGetMaxClockInfo = [](nvmlDevice_t, int type, unsigned* mhz) {
    *mhz = type == kClockSm ? 1980 : 3201;
    return kSuccess;
  };
  f.DeviceGetClockInfo = [](nvmlDevice_t, int type, unsigned* mhz) {
    *mhz = type == kClockSm ? 1755 : 3201;
    return kSuccess;
  };
  f.DeviceGetTemperature = [](nvmlDevice_t, int, unsigned* c) {
    *c = 61;
    return kSuccess;
  };
  f.DeviceGetPowerUsage = [](nvmlDevice_t, unsigned* mw) {
    *mw = 652500;
    return kSuccess;
  };
  f.DeviceGetMigMode = [](nvmlDevice_t d, unsigned* cur, unsigned* pend) {
    *cur = Gpu(d).mig;
    *pend = Gpu(d).mig;
    return Gpu(d).mig_rc;
  };
  f.DeviceGetPersistenceMode = [](nvmlDevice_t, nvmlEnableState_t* s) {
    *s = 1;
    return kSuccess;
  };
  f.EventSetCreate = [](nvmlEventSet_t* s) {
    *s = reinterpret_cast<nvmlEventSet_t>(std::uintptr_t{0x1000});
    return kSuccess;
  };
  f.DeviceRegisterEvents = [](nvmlDevice_t, unsigned long long, nvmlEventSet_t) {  // NOLINT
    return kSuccess;
  };
  f.EventSetWait = [](nvmlEventSet_t, nvmlEventData_t* data, unsigned) {
    if (g.events.empty()) return g.wait_rc;
    *data = g.events.front();
    g.events.erase(g.events.begin());
    return kSuccess;
  };
  f.EventSetFree = [](nvmlEventSet_t) {
    ++g.event_sets_freed;
    return kSuccess;
  };
  // A healthy H200's counters: no replays, no link errors, registered with its fabric, and no
  // page retirement (Hopper remaps rows instead).
  f.DeviceGetPcieReplayCounter = [](nvmlDevice_t, unsigned* v) {
    *v = 0;
    return kSuccess;
  };
  f.DeviceGetNvLinkErrorCounter = [](nvmlDevice_t d, unsigned link, int,
                                     unsigned long long* v) {  // NOLINT
    if (static_cast<int>(link) >= Gpu(d).nvlinks) return kErrorInvalidArgument;
    *v = 0;
    return kSuccess;
  };
  f.DeviceGetRetiredPages = [](nvmlDevice_t, int, unsigned*, unsigned long long*) {  // NOLINT
    return kErrorNotSupported;
  };
  f.DeviceGetGpuFabricInfoV = [](nvmlDevice_t, nvmlGpuFabricInfoV_t* info) {
    info->state = kGpuFabricStateCompleted;
    info->status = kSuccess;
    info->healthSummary = kGpuFabricHealthSummaryHealthy;
    return kSuccess;
  };
  return f;
}

class NvmlFake : public ::testing::Test {
 protected:
  void SetUp() override { g = FakeNvml{}; }
  std::shared_ptr<Nvml> Load() {
    auto nvml = Nvml::FromTable(FakeTable());
    EXPECT_TRUE(nvml.ok()) << nvml.status().ToString();
    return nvml.ok() ? *nvml : nullptr;
  }
};

TEST_F(NvmlFake, InitFailureIsUnavailableWithNvmlsWords) {
  g.init_rc = kErrorDriverNotLoaded;
  auto nvml = Nvml::FromTable(FakeTable());
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), Code::kUnavailable);
  EXPECT_NE(nvml.status().message().find("NVML_ERROR_DRIVER_NOT_LOADED"), std::string::npos)
      << nvml.status().message();
}

TEST_F(NvmlFake, MissingLibraryEntryPointIsUnavailable) {
  EXPECT_EQ(Nvml::FromTable(NvmlFunctions{}).status().code(), Code::kUnavailable);
}

TEST_F(NvmlFake, ShutsDownWhenReleased) {
  { auto nvml = Load(); }
  EXPECT_EQ(g.shutdowns, 1);
}

TEST(PciBusId, CudaNvmlAndSysfsSpellingsCompareEqual) {
  EXPECT_EQ(NormalizePciBusId("0000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(NormalizePciBusId("00000000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(NormalizePciBusId("0000:1b:00.0"), "0000:1b:00.0");
  EXPECT_EQ(NormalizePciBusId("0001:C3:1F.7"), "0001:c3:1f.7");
  EXPECT_EQ(NormalizePciBusId("garbage"), "garbage");
}

TEST_F(NvmlFake, JoinsCudaDeviceByBusIdNotByIndex) {
  g.gpus.resize(2);
  g.gpus[0].bus_id = "00000000:DB:00.0";
  g.gpus[1].bus_id = "00000000:1B:00.0";
  auto nvml = Load();
  auto device = nvml->DeviceByPciBusId("0000:1B:00.0");  // CUDA's spelling
  ASSERT_TRUE(device.ok()) << device.status().ToString();
  EXPECT_EQ(*device, Handle(1));
  auto missing = nvml->DeviceByPciBusId("0000:99:00.0");
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_NE(missing.status().message().find("0000:db:00.0"), std::string::npos);
}

TEST_F(NvmlFake, HealthyH200ReadsCleanWithRetiredPagesLeftOut) {
  auto nvml = Load();
  const HealthReadings h = ReadHealth(*nvml, Handle(0), 4242, false);
  const auto m = HealthMetrics(h);
  EXPECT_EQ(m.at("eccUncorrectedVolatileCount"), 0);
  EXPECT_EQ(m.at("remappedRowsUncorrectableCount"), 0);
  EXPECT_EQ(m.at("rowRemapPending"), 0);
  EXPECT_EQ(m.at("nvlinkInactiveLinkCount"), 0);
  EXPECT_EQ(m.at("pcieLinkWidthDegraded"), 0);
  EXPECT_EQ(m.at("otherProcessCount"), 0);
  EXPECT_EQ(m.at("nvmlReadErrorCount"), 0);
  // NOT_SUPPORTED on A100 and later: absent, never reported as 0.
  EXPECT_EQ(m.count("retiredPagesPending"), 0u);
  // No XID watch attached: absent rather than a reassuring 0.
  EXPECT_EQ(m.count("xidEventCount"), 0u);
  const auto d = HealthDetails(h);
  EXPECT_EQ(d.at("retiredPagesPending"), "not supported");
  EXPECT_EQ(d.at("nvlink"), "18 active, 0 inactive");
  EXPECT_EQ(d.at("driverVersion"), "580.65.06");
}

TEST_F(NvmlFake, ReportsEccRemapsAndDownLinks) {
  g.gpus[0].ecc[kMemoryErrorUncorrected][kVolatileEcc] = 2;
  g.gpus[0].ecc[kMemoryErrorCorrected][kAggregateEcc] = 17;
  g.gpus[0].remap[1] = 3;
  g.gpus[0].remap[2] = 1;
  g.gpus[0].nvlinks_down = 2;
  g.gpus[0].pcie[1] = 8;  // x8 of x16
  auto nvml = Load();
  const auto m = HealthMetrics(ReadHealth(*nvml, Handle(0), 1, false));
  EXPECT_EQ(m.at("eccUncorrectedVolatileCount"), 2);
  EXPECT_EQ(m.at("eccCorrectedAggregateCount"), 17);
  EXPECT_EQ(m.at("remappedRowsUncorrectableCount"), 3);
  EXPECT_EQ(m.at("rowRemapPending"), 1);
  EXPECT_EQ(m.at("nvlinkInactiveLinkCount"), 2);
  EXPECT_EQ(m.at("pcieLinkWidthDegraded"), 1);
}

// A sandbox refuses the ECC counters: no value that a `max <= 0` bound would pass, and no count
// of refusals that it would FAIL; the notes carry NVML's words for an ERROR per threshold.
TEST_F(NvmlFake, RefusedReadingIsAnErrorNotAHealthyZero) {
  g.gpus[0].ecc_rc = kErrorNoPermission;
  auto nvml = Load();
  const HealthReadings h = ReadHealth(*nvml, Handle(0), 1, false);
  const auto m = HealthMetrics(h);
  EXPECT_EQ(m.count("eccUncorrectedVolatileCount"), 0u);
  EXPECT_EQ(m.count("nvmlReadErrorCount"), 0u);
  EXPECT_EQ(m.at("rowRemapFailure"), 0);  // what NVML did answer is still measured
  EXPECT_NE(HealthDetails(h).at("nvmlReadErrors").find("NVML_ERROR_NO_PERMISSION"),
            std::string::npos);
  const auto notes = HealthMetricNotes(h);
  EXPECT_NE(notes.at("notMeasured.eccUncorrectedVolatileCount").find("NVML_ERROR_NO_PERMISSION"),
            std::string::npos);
  EXPECT_NE(notes.at("notMeasured.nvmlReadErrorCount").find("4 reading(s)"), std::string::npos);
  EXPECT_EQ(notes.count("notMeasured.rowRemapFailure"), 0u);
}

TEST_F(NvmlFake, NothingRefusedMeansNoNotesButNvlinkAndXid) {
  auto nvml = Load();
  const auto notes = HealthMetricNotes(ReadHealth(*nvml, Handle(0), 1, false));
  // No XID watch attached here: said, never a reassuring 0. Page retirement does not apply
  // to an H200 (it remaps rows): said too.
  EXPECT_EQ(notes.size(), 3u);
  EXPECT_EQ(notes.count("notMeasured.xidEventCount"), 1u);
  EXPECT_EQ(notes.count("notApplicable.retiredPagesCount"), 1u);
  EXPECT_EQ(notes.count("notApplicable.retiredPagesDoubleBitCount"), 1u);
}

// One list of two refused: the other's empty list must not pass as "no other process".
TEST_F(NvmlFake, RefusedProcessListIsNotZeroProcesses) {
  g.gpus[0].compute_rc = kErrorNoPermission;
  auto nvml = Load();
  const HealthReadings h = ReadHealth(*nvml, Handle(0), 1, false);
  EXPECT_EQ(HealthMetrics(h).count("otherProcessCount"), 0u);
  EXPECT_EQ(HealthMetricNotes(h).count("notMeasured.otherProcessCount"), 1u);
}

// One refused link could be the down one: no count from the others.
TEST_F(NvmlFake, RefusedLinkIsNotCountedAsActive) {
  g.gpus[0].nvlink_refused = 5;
  auto nvml = Load();
  const HealthReadings h = ReadHealth(*nvml, Handle(0), 1, false);
  EXPECT_EQ(HealthMetrics(h).count("nvlinkInactiveLinkCount"), 0u);
  EXPECT_EQ(HealthMetricNotes(h).count("notMeasured.nvlinkInactiveLinkCount"), 1u);
}

TEST_F(NvmlFake, PcieGpuWithoutNvlinkSaysNotSupported) {
  g.gpus[0].nvlinks = 0;
  auto nvml = Load();
  const HealthReadings h = ReadHealth(*nvml, Handle(0), 1, false);
  EXPECT_EQ(HealthMetrics(h).count("nvlinkInactiveLinkCount"), 0u);
  EXPECT_EQ(HealthDetails(h).at("nvlink"), "not supported");
  EXPECT_NE(HealthMetricNotes(h).at("notApplicable.nvlinkInactiveLinkCount").find("no NVLink"),
            std::string::npos);
}

// A one-GPU VM of an SXM H200: 18 links, none up, nothing to reach. Not a FAIL: SKIPPED with
// the reason. With a second GPU in view the same links are a real fault and are counted.
TEST_F(NvmlFake, OneGpuVmWithEveryLinkDownSkipsNvlink) {
  g.gpus[0].nvlinks_down = 18;
  auto nvml = Load();
  const HealthReadings one = ReadHealth(*nvml, Handle(0), 1, false);
  EXPECT_EQ(one.nvml_device_count, 1u);
  EXPECT_EQ(HealthMetrics(one).count("nvlinkInactiveLinkCount"), 0u);
  EXPECT_NE(HealthMetricNotes(one).at("notApplicable.nvlinkInactiveLinkCount").find("one GPU"),
            std::string::npos);

  g.gpus.resize(2);
  const HealthReadings two = ReadHealth(*nvml, Handle(0), 1, false);
  EXPECT_EQ(HealthMetrics(two).at("nvlinkInactiveLinkCount"), 18);
  EXPECT_EQ(HealthMetricNotes(two).count("notApplicable.nvlinkInactiveLinkCount"), 0u);
}

TEST_F(NvmlFake, CountsOtherProcessesButNotOurselves) {
  g.gpus[0].pids.clear();
  for (unsigned pid = 100; pid < 120; ++pid) g.gpus[0].pids.push_back(pid);  // > first buffer
  g.gpus[0].pids.push_back(4242);
  auto nvml = Load();
  const HealthReadings h = ReadHealth(*nvml, Handle(0), 4242, false);
  EXPECT_EQ(HealthMetrics(h).at("otherProcessCount"), 20);
  EXPECT_NE(HealthDetails(h).at("otherProcesses").find("119"), std::string::npos);
}

TEST_F(NvmlFake, InAContainerOurOwnProcessIsNotCountedAsAnother) {
  // NVML lists host PIDs; ours (4242 in the pod's namespace) is not among them.
  g.gpus[0].pids = {880123, 880456};
  auto nvml = Load();
  const HealthReadings h = ReadHealth(*nvml, Handle(0), 4242, true);
  EXPECT_EQ(HealthMetrics(h).at("otherProcessCount"), 1);
  EXPECT_TRUE(h.self_assumed);
  EXPECT_NE(HealthDetails(h).at("otherProcesses").find("taken to be this worker"),
            std::string::npos);
  // Alone on the GPU: our one entry is not another process.
  g.gpus[0].pids = {880123};
  EXPECT_EQ(HealthMetrics(ReadHealth(*nvml, Handle(0), 4242, true)).at("otherProcessCount"), 0);
  // When our PID is listed, nothing is assumed.
  g.gpus[0].pids = {4242, 880456};
  const HealthReadings visible = ReadHealth(*nvml, Handle(0), 4242, true);
  EXPECT_EQ(HealthMetrics(visible).at("otherProcessCount"), 1);
  EXPECT_FALSE(visible.self_assumed);
}

TEST(ClocksEventReasons, NamesBitsAndSeparatesHardwareSlowdown) {
  EXPECT_EQ(ClocksEventReasonNames(0), std::vector<std::string>{});
  EXPECT_EQ(ClocksEventReasonNames(kClocksEventSwPowerCap | kClocksEventHwThermalSlowdown),
            (std::vector<std::string>{"SwPowerCap", "HwThermalSlowdown"}));
  EXPECT_EQ(ClocksEventReasonNames(0x10000).back(), "Unknown(0x10000)");
  // Power capping and idling are normal operation under load; thermal/HW slowdown is not.
  EXPECT_FALSE(IsHardwareSlowdown(kClocksEventSwPowerCap | kClocksEventGpuIdle));
  EXPECT_TRUE(IsHardwareSlowdown(kClocksEventHwSlowdown));
  EXPECT_TRUE(IsHardwareSlowdown(kClocksEventHwPowerBrakeSlowdown));
  // The driver trimming clocks near its temperature target: a hot but healthy H200 shows it.
  EXPECT_FALSE(IsHardwareSlowdown(kClocksEventSwThermalSlowdown));
  EXPECT_TRUE(IsHardwareSlowdown(kClocksEventHwThermalSlowdown));
}

TEST_F(NvmlFake, HardwareSlowdownMetric) {
  g.gpus[0].reasons = kClocksEventHwSlowdown;
  auto nvml = Load();
  EXPECT_EQ(HealthMetrics(ReadHealth(*nvml, Handle(0), 1, false)).at("hardwareSlowdown"), 1);
}

TEST_F(NvmlFake, XidWatchCollectsThisDevicesXidsOnly) {
  auto nvml = Load();
  {
    auto watch = XidWatch::Start(nvml, Handle(0));
    ASSERT_TRUE(watch.ok()) << watch.status().ToString();
    g.events.push_back({Handle(0), kEventTypeXidCriticalError, 79, 0, 0});
    g.events.push_back({Handle(1), kEventTypeXidCriticalError, 48, 0, 0});
    g.events.push_back({Handle(0), 0x1, 0, 0, 0});  // not an XID
    EXPECT_EQ(watch->Poll(), std::vector<std::uint64_t>{79});
    g.events.push_back({Handle(0), kEventTypeXidCriticalError, 94, 0, 0});
    EXPECT_EQ(watch->Poll(), (std::vector<std::uint64_t>{79, 94}));

    HealthReadings h = ReadHealth(*nvml, Handle(0), 1, false);
    h.xids = watch->Poll();
    EXPECT_EQ(HealthMetrics(h).at("xidEventCount"), 2);
    EXPECT_EQ(HealthDetails(h).at("xidEvents"), "79, 94");
  }
  EXPECT_EQ(g.event_sets_freed, 1);
}

// A failed wait (not a timeout) loses the events from then on: said, so no count is reported.
TEST_F(NvmlFake, XidWatchSaysWhenAWaitFails) {
  auto nvml = Load();
  auto watch = XidWatch::Start(nvml, Handle(0));
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  EXPECT_TRUE(watch->Poll().empty());
  EXPECT_EQ(watch->error(), "");
  g.wait_rc = kErrorNoPermission;
  watch->Poll();
  EXPECT_NE(watch->error().find("NVML_ERROR_NO_PERMISSION"), std::string::npos);
}

TEST_F(NvmlFake, TelemetryConvertsUnits) {
  auto nvml = Load();
  const Telemetry t = ReadTelemetry(*nvml, Handle(0));
  EXPECT_EQ(t.sm_clock_mhz, 1755);
  EXPECT_EQ(t.temperature_c, 61);
  EXPECT_DOUBLE_EQ(*t.power_w, 652.5);  // mW -> W
  EXPECT_EQ(t.pcie_gen, 5u);
}

cuda::CudaDeviceFacts H200Facts() {
  cuda::CudaDeviceFacts f;
  f.ordinal = 3;
  f.name = "NVIDIA H200";
  f.uuid = "GPU-01234567-89ab-cdef-0123-456789abcdef";
  f.pci_bus_id = "0000:1B:00.0";
  f.cc_major = 9;
  f.cc_minor = 0;
  f.sm_count = 132;
  f.total_memory_bytes = 150754820096;
  f.sm_clock_mhz = 1980;
  f.memory_clock_mhz = 3201;
  f.ecc_enabled = true;
  return f;
}

TEST_F(NvmlFake, IdentityJoinsCudaAndNvmlFacts) {
  auto nvml = Load();
  const GpuIdentityInfo id = JoinGpuIdentity(H200Facts(), nvml.get(), "");
  EXPECT_EQ(id.index, 3);
  EXPECT_EQ(id.compute_capability, "9.0");
  EXPECT_EQ(id.vbios, "96.00.AF.00.01");
  EXPECT_EQ(id.serial, "1654922001234");
  EXPECT_DOUBLE_EQ(id.power_limit_w, 700);
  EXPECT_EQ(id.ecc_mode, "enabled");
  EXPECT_EQ(id.mig_mode, "disabled");
  EXPECT_EQ(id.persistence_mode, "enabled");
  EXPECT_EQ(id.driver_version, "580.65.06");
  EXPECT_NEAR(id.memory_gib, 140.4, 0.05);
  EXPECT_TRUE(id.nvml_note.empty());
}

TEST_F(NvmlFake, IdentityWithoutNvmlKeepsCudaFactsAndSaysWhy) {
  const GpuIdentityInfo id =
      JoinGpuIdentity(H200Facts(), nullptr, "NVML unavailable: libnvidia-ml.so.1: not found");
  EXPECT_EQ(id.name, "NVIDIA H200");
  EXPECT_EQ(id.vbios, "");
  EXPECT_EQ(id.serial, "");
  EXPECT_EQ(id.mig_mode, "unknown");
  EXPECT_NE(id.nvml_note.find("libnvidia-ml.so.1"), std::string::npos);
}

TEST_F(NvmlFake, IdentityMigUnsupportedMeansDisabled) {
  g.gpus[0].mig_rc = kErrorNotSupported;
  auto nvml = Load();
  EXPECT_EQ(JoinGpuIdentity(H200Facts(), nvml.get(), "").mig_mode, "disabled");
}

// One reader (attributes.h) for identity, config and the diagnostics dump.
TEST_F(NvmlFake, AttributesOfAGpuAreReadInOnePlace) {
  auto nvml = Load();
  const Result<unsigned> count = DeviceCount(*nvml);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 1U);
  const Result<nvmlDevice_t> device = DeviceAt(*nvml, 0);
  ASSERT_TRUE(device.ok()) << device.status().message();
  const GpuAttributes a = ReadAttributes(*nvml, *device);
  EXPECT_EQ(a.name, "NVIDIA H200");
  EXPECT_EQ(a.pci_bus_id, "0000:1b:00.0");  // NVML's 8-digit domain, normalised
  EXPECT_EQ(a.vbios, "96.00.AF.00.01");
  EXPECT_EQ(a.serial, "1654922001234");
  EXPECT_EQ(a.ecc_enabled, true);
  EXPECT_EQ(a.mig_enabled, false);
  EXPECT_EQ(a.persistence_mode, true);
  EXPECT_EQ(a.max_sm_clock_mhz, 1980U);
  EXPECT_EQ(a.max_memory_clock_mhz, 3201U);
  EXPECT_EQ(a.power_limit_mw, 700000U);
  // Calls the fake table lacks stay unset rather than reading 0.
  EXPECT_FALSE(a.uuid.has_value());
  EXPECT_FALSE(a.app_clock_sm_mhz.has_value());
  EXPECT_FALSE(a.power_default_limit_mw.has_value());
}

TEST_F(NvmlFake, MigIsDisabledWithoutMigAndUnknownWhenNvmlRefuses) {
  g.gpus[0].mig_rc = kErrorNotSupported;
  auto nvml = Load();
  EXPECT_EQ(ReadAttributes(*nvml, Handle(0)).mig_enabled, false);
  g.gpus[0].mig_rc = kErrorNoPermission;
  EXPECT_FALSE(ReadAttributes(*nvml, Handle(0)).mig_enabled.has_value());
}

TEST_F(NvmlFake, AHandleNvmlDoesNotGiveNamesTheCall) {
  auto nvml = Load();
  const Result<nvmlDevice_t> device = DeviceAt(*nvml, 0);
  ASSERT_TRUE(device.ok());
  NvmlFunctions table = FakeTable();
  table.DeviceGetHandleByIndex = [](unsigned, nvmlDevice_t*) { return kErrorGpuIsLost; };
  auto lost = Nvml::FromTable(table);
  ASSERT_TRUE(lost.ok());
  const Result<nvmlDevice_t> gone = DeviceAt(**lost, 0);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), Code::kUnavailable);
  EXPECT_NE(gone.status().message().find("nvmlDeviceGetHandleByIndex: NVML_ERROR_GPU_IS_LOST"),
            std::string::npos)
      << gone.status().message();
}

TEST(GpuUuid, FormatsLikeNvml) {
  const unsigned char bytes[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                   0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
  EXPECT_EQ(cuda::FormatGpuUuid(bytes), "GPU-01234567-89ab-cdef-0123-456789abcdef");
}

TEST(ReturnName, NamesCodes) {
  EXPECT_EQ(ReturnName(kErrorNotSupported), "NVML_ERROR_NOT_SUPPORTED");
  EXPECT_EQ(ReturnName(kErrorGpuIsLost), "NVML_ERROR_GPU_IS_LOST");
  EXPECT_EQ(ReturnName(12345), "NVML_ERROR_12345");
}

}  // namespace
}  // namespace perfgate::kernels::nvml
