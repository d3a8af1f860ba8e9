// The health test's counters that predict trouble, decoded from recorded NVML answers: a
// healthy HGX H200 GPU, and one fault at a time (PCIe replays, NVLink CRC/replay/recovery
// errors on one link, retired pages, an NVSwitch fabric that never registered, hardware XIDs
// in the kernel log). Each fault shows in its metric (which the profiles bound at 0 or a small
// count) and in a detail that names it; the healthy GPU's metrics are all within bounds.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kernels/nvml/kernel_log.h"
#include "kernels/nvml/nvml.h"
#include "kernels/nvml/readings.h"

namespace perfgate::kernels::nvml {
namespace {

// Recorded answers of one GPU. NVML's entry points are C function pointers without a context,
// so the fakes read this global.
struct Recorded {
  unsigned nvlinks = 18;
  unsigned pcie_replays = 0;
  // [link][counter: replay, recovery, crc flit]
  unsigned long long nvlink_errors[18][3] = {};  // NOLINT(google-runtime-int)
  nvmlReturn_t nvlink_error_rc = kSuccess;
  nvmlReturn_t retired_rc = kErrorNotSupported;  // A100 and later
  unsigned retired[2] = {0, 0};                  // multiple single-bit, double-bit
  nvmlReturn_t fabric_rc = kSuccess;
  unsigned char fabric_state = kGpuFabricStateCompleted;
  nvmlReturn_t fabric_status = kSuccess;
  unsigned char fabric_summary = kGpuFabricHealthSummaryHealthy;
  unsigned fabric_version_seen = 0;
} rec;

nvmlDevice_t Dev() { return reinterpret_cast<nvmlDevice_t>(std::uintptr_t{1}); }

NvmlFunctions H200Table() {
  NvmlFunctions f;
  f.Init = [] { return kSuccess; };
  f.ErrorString = [](nvmlReturn_t) { return "recorded"; };
  f.DeviceGetCount = [](unsigned* n) {
    *n = 8;
    return kSuccess;
  };
  f.DeviceGetNvLinkState = [](nvmlDevice_t, unsigned link, nvmlEnableState_t* state) {
    if (link >= rec.nvlinks) return kErrorInvalidArgument;
    *state = 1;
    return kSuccess;
  };
  f.DeviceGetPcieReplayCounter = [](nvmlDevice_t, unsigned* value) {
    *value = rec.pcie_replays;
    return kSuccess;
  };
  f.DeviceGetNvLinkErrorCounter = [](nvmlDevice_t, unsigned link, int counter,
                                     unsigned long long* value) {  // NOLINT
    if (link >= rec.nvlinks) return kErrorInvalidArgument;
    *value = rec.nvlink_errors[link][counter];
    return rec.nvlink_error_rc;
  };
  f.DeviceGetRetiredPages = [](nvmlDevice_t, int cause, unsigned* count,
                               unsigned long long*) {  // NOLINT
    if (rec.retired_rc != kSuccess) return rec.retired_rc;
    const unsigned have = rec.retired[cause];
    const bool fits = have <= *count;
    *count = have;
    return fits ? kSuccess : kErrorInsufficientSize;
  };
  f.DeviceGetGpuFabricInfoV = [](nvmlDevice_t, nvmlGpuFabricInfoV_t* info) {
    rec.fabric_version_seen = info->version;
    if (rec.fabric_rc != kSuccess) return rec.fabric_rc;
    info->state = rec.fabric_state;
    info->status = rec.fabric_status;
    info->healthSummary = rec.fabric_summary;
    return kSuccess;
  };
  return f;
}

class HealthCounters : public ::testing::Test {
 protected:
  void SetUp() override { rec = Recorded{}; }
  HealthReadings Read() {
    auto nvml = Nvml::FromTable(H200Table());
    EXPECT_TRUE(nvml.ok());
    return ReadHealth(**nvml, Dev(), 1, false);
  }
};

TEST_F(HealthCounters, HealthyH200HasEveryCounterAtZeroAndTheFabricReady) {
  HealthReadings h = Read();
  h.kernel_log_xids = std::vector<std::uint64_t>{};
  const auto m = HealthMetrics(h);
  EXPECT_EQ(m.at("pcieReplayCount"), 0);
  EXPECT_EQ(m.at("nvlinkCrcErrorCount"), 0);
  EXPECT_EQ(m.at("nvlinkReplayErrorCount"), 0);
  EXPECT_EQ(m.at("nvlinkRecoveryErrorCount"), 0);
  EXPECT_EQ(m.at("gpuFabricNotReady"), 0);
  EXPECT_EQ(m.at("kernelLogXidCount"), 0);
  EXPECT_EQ(m.at("nvmlReadErrorCount"), 0);
  // Hopper has no page retirement: not a zero, a SKIPPED with the reason.
  EXPECT_EQ(m.count("retiredPagesCount"), 0U);
  const auto notes = HealthMetricNotes(h);
  EXPECT_NE(notes.at("notApplicable.retiredPagesCount").find("remap rows"), std::string::npos);
  EXPECT_EQ(HealthDetails(h).at("gpuFabric"), "registered, healthy");
  EXPECT_EQ(rec.fabric_version_seen >> 24U, 3U);  // the v3 struct, versioned as NVML expects
}

TEST_F(HealthCounters, PcieReplaysAreCounted) {
  rec.pcie_replays = 412;
  const HealthReadings h = Read();
  EXPECT_EQ(HealthMetrics(h).at("pcieReplayCount"), 412);
  EXPECT_EQ(HealthDetails(h).at("pcieReplays"), "412 since driver load");
}

TEST_F(HealthCounters, NvLinkErrorsAreSummedAndTheLinkIsNamed) {
  rec.nvlink_errors[3][kNvLinkErrorDlCrcFlit] = 120;
  rec.nvlink_errors[3][kNvLinkErrorDlReplay] = 7;
  rec.nvlink_errors[11][kNvLinkErrorDlRecovery] = 2;
  const HealthReadings h = Read();
  const auto m = HealthMetrics(h);
  EXPECT_EQ(m.at("nvlinkCrcErrorCount"), 120);
  EXPECT_EQ(m.at("nvlinkReplayErrorCount"), 7);
  EXPECT_EQ(m.at("nvlinkRecoveryErrorCount"), 2);
  EXPECT_EQ(HealthDetails(h).at("nvlinkErrors"),
            "link 3: crc 120, replay 7, recovery 0; link 11: crc 0, replay 0, recovery 2");
}

TEST_F(HealthCounters, RefusedNvLinkCountersAreNotMeasuredNotZero) {
  rec.nvlink_error_rc = kErrorNoPermission;
  const HealthReadings h = Read();
  const auto m = HealthMetrics(h);
  EXPECT_EQ(m.count("nvlinkCrcErrorCount"), 0U);
  EXPECT_EQ(m.count("nvmlReadErrorCount"), 0U);
  EXPECT_EQ(HealthMetricNotes(h).count("notMeasured.nvlinkCrcErrorCount"), 1U);
}

TEST_F(HealthCounters, PcieCardWithoutNvLinkSkipsTheLinkCounters) {
  rec.nvlinks = 0;
  const HealthReadings h = Read();
  EXPECT_EQ(HealthMetrics(h).count("nvlinkCrcErrorCount"), 0U);
  EXPECT_EQ(HealthMetricNotes(h).count("notApplicable.nvlinkCrcErrorCount"), 1U);
}

TEST_F(HealthCounters, RetiredPagesByCauseOnOlderGpus) {
  rec.retired_rc = kSuccess;
  rec.retired[kPageRetirementMultipleSingleBitEcc] = 3;
  rec.retired[kPageRetirementDoubleBitEcc] = 300;  // more than the query's buffer holds
  const HealthReadings h = Read();
  const auto m = HealthMetrics(h);
  EXPECT_EQ(m.at("retiredPagesCount"), 303);
  EXPECT_EQ(m.at("retiredPagesDoubleBitCount"), 300);
  EXPECT_EQ(HealthDetails(h).at("retiredPages"), "double-bit 300, multiple single-bit 3");
}

TEST_F(HealthCounters, FabricNotStartedNamesTheFabricManager) {
  rec.fabric_state = kGpuFabricStateNotStarted;
  const HealthReadings h = Read();
  EXPECT_EQ(HealthMetrics(h).at("gpuFabricNotReady"), 1);
  EXPECT_NE(HealthDetails(h).at("gpuFabric").find("nvidia-fabricmanager"), std::string::npos);
}

TEST_F(HealthCounters, FabricFailuresAndUnhealthySummaryFail) {
  rec.fabric_status = kErrorNotFound;
  HealthReadings h = Read();
  EXPECT_EQ(HealthMetrics(h).at("gpuFabricNotReady"), 1);
  EXPECT_EQ(FabricProblem(h), "fabric registration failed: NVML_ERROR_NOT_FOUND");
  rec.fabric_status = kSuccess;
  rec.fabric_summary = kGpuFabricHealthSummaryUnhealthy;
  h = Read();
  EXPECT_EQ(FabricProblem(h), "fabric health summary: unhealthy");
}

TEST_F(HealthCounters, NoNvSwitchMeansNoFabricVerdict) {
  rec.fabric_rc = kErrorNotSupported;
  const HealthReadings h = Read();
  EXPECT_EQ(HealthMetrics(h).count("gpuFabricNotReady"), 0U);
  EXPECT_EQ(HealthMetricNotes(h).count("notApplicable.gpuFabricNotReady"), 1U);
}

TEST_F(HealthCounters, KernelLogHardwareXidsCountAndAppFaultsDoNot) {
  HealthReadings h = Read();
  h.kernel_log_xids = std::vector<std::uint64_t>{13, 79, 31, 94};
  EXPECT_EQ(HealthMetrics(h).at("kernelLogXidCount"), 2);
  EXPECT_EQ(HealthDetails(h).at("kernelLogXids"), "13, 79 (hardware), 31, 94 (hardware)");
}

TEST_F(HealthCounters, UnreadableKernelLogIsSkippedWithTheReason) {
  HealthReadings h = Read();
  h.kernel_log_note = "open /dev/kmsg: Permission denied";
  EXPECT_EQ(HealthMetrics(h).count("kernelLogXidCount"), 0U);
  EXPECT_EQ(HealthMetricNotes(h).at("notApplicable.kernelLogXidCount"),
            "kernel log not readable: open /dev/kmsg: Permission denied");
}

TEST(KernelLog, ParsesDriverXidLinesInKmsgAndDmesgForm) {
  auto kmsg = ParseXidLine(
      "3,1042,912345678,-;NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python, GPU has "
      "fallen off the bus.\n");
  ASSERT_TRUE(kmsg);
  EXPECT_EQ(kmsg->pci, "0000:1b:00");
  EXPECT_EQ(kmsg->xid, 79U);
  EXPECT_EQ(kmsg->text, "pid=1234, name=python, GPU has fallen off the bus.");
  auto dmesg = ParseXidLine(
      "[ 1234.567890] NVRM: Xid (PCI:0000:9A:00): 94, pid='<unknown>', name=<unknown>, "
      "Contained: SM (0x1). RST: No, D-RST: No");
  ASSERT_TRUE(dmesg);
  EXPECT_EQ(dmesg->pci, "0000:9a:00");
  EXPECT_EQ(dmesg->xid, 94U);
  EXPECT_FALSE(ParseXidLine("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.65.06"));
  EXPECT_FALSE(ParseXidLine("NVRM: Xid (PCI:0000:1b:00): , garbled"));
}

TEST(KernelLog, PicksTheLinesOfOneGpu) {
  const std::vector<std::string> lines = {
      "NVRM: Xid (PCI:0000:1b:00): 79, GPU has fallen off the bus.",
      "NVRM: Xid (PCI:0000:2c:00): 48, An uncorrectable double bit error",
      "usb 1-1: new high-speed USB device",
      "NVRM: Xid (PCI:00000000:1b:00): 13, Graphics Exception",
  };
  EXPECT_EQ(XidsForDevice(lines, "00000000:1B:00.0"), (std::vector<std::uint64_t>{79, 13}));
  EXPECT_EQ(XidsForDevice(lines, "0000:2c:00.0"), (std::vector<std::uint64_t>{48}));
  EXPECT_TRUE(XidsForDevice(lines, "0000:3d:00.0").empty());
}

TEST(KernelLog, UnreadableLogSaysWhy) {
  auto log = ReadKernelLog("/nonexistent/kmsg");
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), Code::kUnavailable);
  EXPECT_NE(log.status().message().find("/nonexistent/kmsg"), std::string::npos);
}

}  // namespace
}  // namespace perfgate::kernels::nvml
