// config: the node's settings against what the profile expects (DCGM's "software" and
// deployment checks, the Azure HPC health checks' configuration part): driver and CUDA driver
// versions, persistence, ECC and MIG modes, application clocks and power limit at their
// defaults, GPU-to-NUMA affinity, PCIe ACS redirect and IOMMU translation (which break or slow
// peer-to-peer), NVSwitch fabric registration, NCCL's version, InfiniBand/RoCE ports up at
// their rate. Every mismatch is counted in configMismatchCount, which the profile bounds (<= 0:
// any mismatch FAILs the node), and named in Details: the setting, the value found, the value
// expected. Reads NVML and sysfs only; runs once per node.
#include <memory>
#include <string>

#include "kernels/config/config_check.h"
#include "kernels/config/config_test.h"
#include "kernels/nccl/nccl_communicator.h"
#include "kernels/test_factories.h"
#include "kernels/unmeasured.h"

namespace perfgate::kernels {
namespace config {
namespace {

Expectations FromParams(const Params& p) {
  Expectations e;
  e.min_driver_version = p.String("minDriverVersion");
  e.driver_version = p.String("driverVersion");
  e.min_cuda_driver_version = p.String("minCudaDriverVersion");
  e.min_nccl_version = p.String("minNcclVersion");
  e.persistence_mode = p.Bool("persistenceMode");
  e.ecc_enabled = p.Bool("eccEnabled");
  e.mig_enabled = p.Bool("migEnabled");
  e.app_clocks_at_default = p.Bool("applicationClocksAtDefault");
  e.power_limit_at_default = p.Bool("powerLimitAtDefault");
  e.numa_affinity = p.Bool("numaAffinity");
  e.gpu_numa_nodes = p.IntList("gpuNumaNodes");
  e.no_acs_redirect = p.Bool("noAcsRedirect");
  e.iommu_passthrough = p.Bool("iommuPassthrough");
  e.fabric_manager = p.Bool("fabricManager");
  e.min_active_ib_ports = static_cast<int>(p.Int("minActiveIbPorts"));
  e.min_ib_rate_gbps = p.Double("minIbRateGbps");
  return e;
}

class ConfigRun final : public TestRun {
 public:
  ConfigRun(std::shared_ptr<nvml::Nvml> nvml, ConfigDeps deps, Expectations expect)
      : nvml_(std::move(nvml)), deps_(std::move(deps)), expect_(std::move(expect)) {}

  Result<Sample> RunSample() override {
    const NodeConfig node = GatherConfig(*nvml_, *deps_.fs, deps_.nccl_version());
    const std::vector<Mismatch> mismatches = CheckConfig(node, expect_);
    details_.clear();
    details_["driverVersion"] = node.driver_version.empty() ? "unknown" : node.driver_version;
    details_["cudaDriverVersion"] =
        node.cuda_driver_version.empty() ? "unknown" : node.cuda_driver_version;
    details_["ncclVersion"] = node.nccl_version.empty() ? "none" : node.nccl_version;
    details_["gpus"] = std::to_string(node.gpus.size());
    details_["ibPorts"] = std::to_string(node.ib_ports.size());
    for (std::size_t i = 0; i < node.notes.size(); ++i) {
      details_["note" + std::to_string(i)] = node.notes[i];
    }
    for (std::size_t i = 0; i < mismatches.size(); ++i) {
      details_["mismatch" + std::to_string(i)] = mismatches[i].Text();
    }
    if (!mismatches.empty()) {
      std::string text;
      for (const Mismatch& m : mismatches) text += (text.empty() ? "" : "; ") + m.Text();
      details_[CountedKey("configMismatchCount")] =
          std::to_string(mismatches.size()) + " setting(s) differ from the profile: " + text;
    }
    return Sample{{"configMismatchCount", static_cast<double>(mismatches.size())}};
  }

  std::map<std::string, std::string> Details() const override { return details_; }

 private:
  std::shared_ptr<nvml::Nvml> nvml_;
  ConfigDeps deps_;
  Expectations expect_;
  std::map<std::string, std::string> details_;
};

class ConfigTest final : public Test {
 public:
  explicit ConfigTest(ConfigDeps deps) : deps_(std::move(deps)) {
    info_.type = "config";
    info_.description =
        "node settings against the profile: driver/CUDA/NCCL versions, persistence, ECC and MIG "
        "modes, application clocks and power limit at default, NUMA affinity, PCIe ACS and "
        "IOMMU (peer-to-peer), NVSwitch fabric manager, InfiniBand/RoCE ports; each mismatch "
        "named with the value found and expected";
    info_.scope = Scope::kHost;
    auto text = [](const char* name, const char* description) {
      return ChoiceParam(name, ParamType::kString, "", description, {});
    };
    info_.params = {
        text("minDriverVersion", "lowest NVIDIA driver version (\"550.54.15\"); empty: any"),
        text("driverVersion", "the exact driver version; empty: any"),
        text("minCudaDriverVersion", "lowest CUDA version the driver supports (\"12.4\")"),
        text("minNcclVersion", "lowest NCCL version in the worker (\"2.21\"); empty: any"),
        BoolParam("persistenceMode", true, "persistence mode expected on"),
        BoolParam("eccEnabled", true, "ECC expected on"),
        BoolParam("migEnabled", false, "MIG mode expected on"),
        BoolParam("applicationClocksAtDefault", true,
                  "SM application clock not set below its default"),
        BoolParam("powerLimitAtDefault", true, "power limit equal to its default"),
        BoolParam("numaAffinity", true, "each GPU has a NUMA node (sysfs numa_node >= 0)"),
        ParamInfo{"gpuNumaNodes",
                  ParamType::kIntList,
                  "[]",
                  "",
                  "NUMA node of each GPU in "
                  "NVML order; empty: any",
                  -1,
                  64,
                  {}},
        BoolParam("noAcsRedirect", true,
                  "no PCIe bridge above a GPU redirects peer-to-peer requests (ACS RR/CR)"),
        BoolParam("iommuPassthrough", true, "GPUs' IOMMU groups in identity mode, or no IOMMU"),
        BoolParam("fabricManager", true,
                  "on NVSwitch systems every GPU is registered with the fabric"),
        IntParam("minActiveIbPorts", 0, "ports", "InfiniBand/RoCE ports that must be ACTIVE", 0,
                 1024),
        DoubleParam("minIbRateGbps", "0", "Gb/s", "lowest rate of an ACTIVE port; 0: any", 0, 1e6),
    };
    info_.metrics = {{"configMismatchCount", "count", false,
                      "settings that differ from the profile (each named in Details)"}};
  }

  const TestInfo& Info() const override { return info_; }
  double SampleSeconds(const Params& /*params*/, int /*gpus*/) const override { return 0.05; }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& /*target*/) const override {
    auto nvml = deps_.nvml();
    if (!nvml.ok()) return Unavailable("config: " + nvml.status().message());
    return std::unique_ptr<TestRun>(
        std::make_unique<ConfigRun>(std::move(nvml).value(), deps_, FromParams(params)));
  }

 private:
  ConfigDeps deps_;
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakeConfigTestWith(ConfigDeps deps) {
  return std::make_unique<ConfigTest>(std::move(deps));
}

}  // namespace config

std::unique_ptr<Test> MakeConfigTest() {
  config::ConfigDeps deps;
  deps.nvml = [] { return nvml::SharedNvml(); };
  deps.fs = config::RealHostFs();
  deps.nccl_version = [] { return nccl::NcclLibraryVersion(); };
  return config::MakeConfigTestWith(std::move(deps));
}

}  // namespace perfgate::kernels
