// The config test on recorded NVML answers and a fake sysfs tree: a node set up as the profile
// expects passes, and each misconfiguration is counted, FAILs the profile's bound on the count,
// and is named with the setting, the value found and the value expected.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kernels/config/config_check.h"
#include "kernels/config/config_test.h"
#include "kernels/nvml/nvml.h"
#include "kernels/unmeasured.h"
#include "tests/kernels/profile_bound.h"

namespace perfgate::kernels::config {
namespace {

using nvml::nvmlDevice_t;
using nvml::nvmlReturn_t;

struct RecordedGpu {
  std::string bus_id;
  int persistence = 1;
  int ecc = 1;
  unsigned mig = 0;
  unsigned app_clock = 1980;
  unsigned app_clock_default = 1980;
  unsigned power_mw = 700000;
  unsigned power_default_mw = 700000;
  unsigned char fabric_state = nvml::kGpuFabricStateCompleted;
};

struct RecordedNode {
  std::string driver = "580.65.06";
  int cuda = 13000;
  std::vector<RecordedGpu> gpus = {{"00000000:1B:00.0"}, {"00000000:2C:00.0"}};
} node;

RecordedGpu& Gpu(nvmlDevice_t d) { return node.gpus[reinterpret_cast<std::uintptr_t>(d) - 1]; }

nvml::NvmlFunctions HgxH200() {
  nvml::NvmlFunctions f;
  f.Init = [] { return nvml::kSuccess; };
  f.SystemGetDriverVersion = [](char* out, unsigned size) {
    std::strncpy(out, node.driver.c_str(), size - 1);
    return nvml::kSuccess;
  };
  f.SystemGetCudaDriverVersion = [](int* v) {
    *v = node.cuda;
    return nvml::kSuccess;
  };
  f.DeviceGetCount = [](unsigned* n) {
    *n = static_cast<unsigned>(node.gpus.size());
    return nvml::kSuccess;
  };
  f.DeviceGetHandleByIndex = [](unsigned i, nvmlDevice_t* d) {
    *d = reinterpret_cast<nvmlDevice_t>(std::uintptr_t{i} + 1);
    return nvml::kSuccess;
  };
  f.DeviceGetPciInfo = [](nvmlDevice_t d, nvml::nvmlPciInfo_t* pci) {
    std::memset(pci, 0, sizeof(*pci));
    std::strncpy(pci->busId, Gpu(d).bus_id.c_str(), sizeof(pci->busId) - 1);
    return nvml::kSuccess;
  };
  f.DeviceGetPersistenceMode = [](nvmlDevice_t d, nvml::nvmlEnableState_t* on) {
    *on = Gpu(d).persistence;
    return nvml::kSuccess;
  };
  f.DeviceGetEccMode = [](nvmlDevice_t d, nvml::nvmlEnableState_t* cur,
                          nvml::nvmlEnableState_t* pend) {
    *cur = *pend = Gpu(d).ecc;
    return nvml::kSuccess;
  };
  f.DeviceGetMigMode = [](nvmlDevice_t d, unsigned* cur, unsigned* pend) {
    *cur = *pend = Gpu(d).mig;
    return nvml::kSuccess;
  };
  f.DeviceGetClock = [](nvmlDevice_t d, int type, int id, unsigned* mhz) {
    if (type != nvml::kClockSm) return nvml::kErrorNotSupported;
    *mhz = id == nvml::kClockIdAppClockDefault ? Gpu(d).app_clock_default : Gpu(d).app_clock;
    return nvml::kSuccess;
  };
  f.DeviceGetPowerManagementLimit = [](nvmlDevice_t d, unsigned* mw) {
    *mw = Gpu(d).power_mw;
    return nvml::kSuccess;
  };
  f.DeviceGetPowerManagementDefaultLimit = [](nvmlDevice_t d, unsigned* mw) {
    *mw = Gpu(d).power_default_mw;
    return nvml::kSuccess;
  };
  f.DeviceGetGpuFabricInfoV = [](nvmlDevice_t d, nvml::nvmlGpuFabricInfoV_t* info) {
    info->state = Gpu(d).fabric_state;
    info->status = nvml::kSuccess;
    info->healthSummary = nvml::kGpuFabricHealthSummaryHealthy;
    return nvml::kSuccess;
  };
  return f;
}

// A sysfs tree: files by path, and symbolic links resolved by prefix.
class FakeFs final : public HostFs {
 public:
  std::map<std::string, std::string> files;
  std::map<std::string, std::string> links;

  Result<std::string> Read(const std::string& path) const override {
    auto it = files.find(path);
    if (it == files.end()) return NotFound("open " + path + ": No such file or directory");
    return it->second;
  }
  Result<std::vector<std::string>> List(const std::string& path) const override {
    std::vector<std::string> names;
    const std::string prefix = path + "/";
    for (const auto& [file, content] : files) {
      if (file.rfind(prefix, 0) != 0) continue;
      std::string name = file.substr(prefix.size());
      name = name.substr(0, name.find('/'));
      if (names.empty() || names.back() != name) names.push_back(name);
    }
    if (names.empty()) return NotFound("list " + path);
    return names;
  }
  Result<std::string> Resolve(const std::string& path) const override {
    auto it = links.find(path);
    if (it == links.end()) return NotFound("resolve " + path);
    return it->second;
  }
};

// PCI config space with an ACS extended capability at 0x100 whose control register is
// `control` (4 KiB, as root reads it).
std::string ConfigWithAcs(unsigned control) {
  std::string config(4096, '\0');
  config[0x100] = 0x0D;  // ACS capability ID, version 0, no next capability
  config[0x101] = 0x00;
  config[0x106] = static_cast<char>(control & 0xFF);
  config[0x107] = static_cast<char>(control >> 8);
  return config;
}

std::shared_ptr<FakeFs> HealthyTree() {
  auto fs = std::make_shared<FakeFs>();
  const std::string pci = "/sys/bus/pci/devices/";
  fs->files[pci + "0000:1b:00.0/numa_node"] = "0\n";
  fs->files[pci + "0000:2c:00.0/numa_node"] = "1\n";
  fs->files[pci + "0000:1b:00.0/iommu_group/type"] = "identity\n";
  fs->files[pci + "0000:2c:00.0/iommu_group/type"] = "identity\n";
  fs->links[pci + "0000:1b:00.0"] = "/sys/devices/pci0000:00/0000:00:01.0/0000:1b:00.0";
  fs->links[pci + "0000:2c:00.0"] = "/sys/devices/pci0000:20/0000:20:01.0/0000:2c:00.0";
  fs->files[pci + "0000:00:01.0/config"] = ConfigWithAcs(0x1);  // source validation only
  fs->files[pci + "0000:20:01.0/config"] = ConfigWithAcs(0x1);
  const std::string ib = "/sys/class/infiniband/";
  for (const char* dev : {"mlx5_0", "mlx5_1"}) {
    fs->files[ib + dev + "/ports/1/state"] = "4: ACTIVE\n";
    fs->files[ib + dev + "/ports/1/rate"] = "400 Gb/sec (4X NDR)\n";
    fs->files[ib + dev + "/ports/1/link_layer"] = "InfiniBand\n";
  }
  return fs;
}

Params H200Profile() {
  return Params({{"minDriverVersion", std::string("550.54.15")},
                 {"driverVersion", std::string("")},
                 {"minCudaDriverVersion", std::string("12.4")},
                 {"minNcclVersion", std::string("2.21")},
                 {"persistenceMode", true},
                 {"eccEnabled", true},
                 {"migEnabled", false},
                 {"applicationClocksAtDefault", true},
                 {"powerLimitAtDefault", true},
                 {"numaAffinity", true},
                 {"gpuNumaNodes", std::vector<std::int64_t>{0, 1}},
                 {"noAcsRedirect", true},
                 {"iommuPassthrough", true},
                 {"fabricManager", true},
                 {"minActiveIbPorts", std::int64_t{2}},
                 {"minIbRateGbps", 400.0}});
}

class ConfigCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    node = RecordedNode{};
    fs_ = HealthyTree();
  }
  // The test's one sample; what it counted, named, goes to counted_.
  Result<Sample> Run(const Params& params = H200Profile()) {
    ConfigDeps deps;
    deps.nvml = [] { return nvml::Nvml::FromTable(HgxH200()); };
    deps.fs = fs_;
    deps.nccl_version = [this] { return nccl_; };
    auto test = MakeConfigTestWith(deps);
    auto run = test->Prepare(params, Target{});
    if (!run.ok()) return run.status();
    auto sample = (*run)->RunSample();
    const auto details = (*run)->Details();
    auto it = details.find(CountedKey("configMismatchCount"));
    counted_ = it == details.end() ? "" : it->second;
    return sample;
  }
  // The profile's bound on the count (max configMismatchCount <= 0) on `sample`.
  static verdict::Outcome ProfileVerdict(const Sample& sample) {
    return testing::Decide(
        testing::ProfileBound("h200-sxm-141gb", "quick", "config", "configMismatchCount"),
        {sample});
  }
  // A misconfigured node: its mismatches counted, the count FAILing the profile's bound, and
  // the mismatches named (returned).
  std::string FailMessage(const Params& params = H200Profile()) {
    auto sample = Run(params);
    EXPECT_TRUE(sample.ok()) << sample.status().ToString();
    if (!sample.ok()) return "";
    EXPECT_GT(sample->at("configMismatchCount"), 0);
    const verdict::Outcome outcome = ProfileVerdict(*sample);
    EXPECT_EQ(outcome.verdict, verdict::Verdict::kFail) << outcome.reason;
    EXPECT_EQ(counted_.rfind(std::to_string(static_cast<int>(sample->at("configMismatchCount"))) +
                                 " setting(s) differ from the profile: ",
                             0),
              0U)
        << counted_;
    return counted_;
  }
  std::shared_ptr<FakeFs> fs_;
  std::string counted_;
  std::string nccl_ = "2.28.9";
};

TEST_F(ConfigCheck, NodeAsTheProfileExpectsPasses) {
  auto sample = Run();
  ASSERT_TRUE(sample.ok()) << sample.status().message();
  EXPECT_EQ(sample->at("configMismatchCount"), 0);
  EXPECT_EQ(counted_, "");
  EXPECT_EQ(ProfileVerdict(*sample).verdict, verdict::Verdict::kPass);
}

TEST_F(ConfigCheck, OldDriverIsNamedWithBothVersions) {
  node.driver = "535.104.05";
  EXPECT_NE(FailMessage().find("driverVersion: found 535.104.05, expected >= 550.54.15"),
            std::string::npos);
}

TEST_F(ConfigCheck, ExactDriverVersion) {
  Params p = H200Profile();
  auto values = p.values();
  values["driverVersion"] = std::string("580.82.07");
  EXPECT_NE(FailMessage(Params(values)).find("driverVersion: found 580.65.06, expected 580.82.07"),
            std::string::npos);
}

TEST_F(ConfigCheck, OldCudaDriverAndNccl) {
  node.cuda = 12020;
  nccl_ = "2.18.3";
  const std::string message = FailMessage();
  EXPECT_NE(message.find("cudaDriverVersion: found 12.2, expected >= 12.4"), std::string::npos);
  EXPECT_NE(message.find("ncclVersion: found 2.18.3, expected >= 2.21"), std::string::npos);
}

TEST_F(ConfigCheck, GpuModesAreNamedPerGpu) {
  node.gpus[1].persistence = 0;
  node.gpus[0].ecc = 0;
  node.gpus[1].mig = 1;
  auto sample = Run();
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->at("configMismatchCount"), 3);
  const std::string message = FailMessage();
  EXPECT_NE(message.find("3 setting(s)"), std::string::npos);
  EXPECT_NE(message.find("gpu1 (0000:2c:00.0) persistenceMode: found disabled, expected enabled"),
            std::string::npos);
  EXPECT_NE(message.find("gpu0 (0000:1b:00.0) eccMode: found disabled, expected enabled"),
            std::string::npos);
  EXPECT_NE(message.find("gpu1 (0000:2c:00.0) migMode: found enabled, expected disabled"),
            std::string::npos);
}

TEST_F(ConfigCheck, ClocksLockedLowAndPowerCappedFail) {
  node.gpus[0].app_clock = 1200;
  node.gpus[1].power_mw = 500000;
  const std::string message = FailMessage();
  EXPECT_NE(message.find("applicationClockSm: found 1200 MHz, expected 1980 MHz (the default)"),
            std::string::npos);
  EXPECT_NE(message.find("powerLimit: found 500 W, expected 700 W (the default)"),
            std::string::npos);
}

TEST_F(ConfigCheck, GpuOnTheWrongOrNoNumaNode) {
  fs_->files["/sys/bus/pci/devices/0000:2c:00.0/numa_node"] = "-1\n";
  const std::string message = FailMessage();
  EXPECT_NE(message.find("gpu1 (0000:2c:00.0) numaNode: found none (-1)"), std::string::npos);
  EXPECT_NE(message.find("numaNode: found -1, expected 1"), std::string::npos);
}

TEST_F(ConfigCheck, AcsRedirectOnABridgeBreaksPeerToPeer) {
  fs_->files["/sys/bus/pci/devices/0000:20:01.0/config"] = ConfigWithAcs(0x1 | 0x4 | 0x8);
  EXPECT_NE(FailMessage().find("gpu1 (0000:2c:00.0) pcieAcsRedirect: found enabled on "
                               "0000:20:01.0"),
            std::string::npos);
}

TEST_F(ConfigCheck, UnreadableAcsIsANoteNotAMismatch) {
  // Unprivileged reads of config space stop at 64 bytes.
  fs_->files["/sys/bus/pci/devices/0000:20:01.0/config"] = std::string(64, '\0');
  auto sample = Run();
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->at("configMismatchCount"), 0);
  EXPECT_FALSE(AcsRedirectEnabled(std::string(64, '\0')).has_value());
}

TEST_F(ConfigCheck, TranslatedIommuIsNamed) {
  fs_->files["/sys/bus/pci/devices/0000:1b:00.0/iommu_group/type"] = "DMA-FQ\n";
  EXPECT_NE(FailMessage().find("gpu0 (0000:1b:00.0) iommu: found DMA-FQ (translated)"),
            std::string::npos);
}

TEST_F(ConfigCheck, FabricManagerNotRunning) {
  node.gpus[0].fabric_state = nvml::kGpuFabricStateNotStarted;
  EXPECT_NE(FailMessage().find("fabricManager: found fabric registration not started (is "
                               "nvidia-fabricmanager running?)"),
            std::string::npos);
}

TEST_F(ConfigCheck, InfinibandPortDownOrSlow) {
  fs_->files["/sys/class/infiniband/mlx5_1/ports/1/state"] = "1: DOWN\n";
  fs_->files["/sys/class/infiniband/mlx5_0/ports/1/rate"] = "200 Gb/sec (4X HDR)\n";
  const std::string message = FailMessage();
  EXPECT_NE(message.find("mlx5_1/1 state: found DOWN, expected ACTIVE"), std::string::npos);
  EXPECT_NE(message.find("mlx5_0/1 rate: found 200 Gb/s, expected >= 400 Gb/s"), std::string::npos);
  EXPECT_NE(message.find("activeIbPorts: found 1, expected >= 2"), std::string::npos);
}

TEST_F(ConfigCheck, WithoutNvmlTheTestCannotRun) {
  ConfigDeps deps;
  deps.nvml = [] { return Result<std::shared_ptr<nvml::Nvml>>(Unavailable("NVML unavailable")); };
  deps.fs = fs_;
  deps.nccl_version = [] { return std::string(); };
  auto run = MakeConfigTestWith(deps)->Prepare(H200Profile(), Target{});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Code::kUnavailable);
}

TEST(Versions, CompareNumerically) {
  EXPECT_LT(CompareVersions("550.54.15", "550.127.05"), 0);
  EXPECT_EQ(CompareVersions("12.4", "12.4.0"), 0);
  EXPECT_GT(CompareVersions("2.28.9", "2.21"), 0);
}

}  // namespace
}  // namespace perfgate::kernels::config
