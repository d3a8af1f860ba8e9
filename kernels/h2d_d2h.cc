// h2d-d2h: host<->device copy bandwidth from pinned memory on the GPU's copy engines.
//   one direction:  GB/s = bytes * copies / seconds / 1e9
//   both at once:   GB/s = 2 * bytes * copies / seconds / 1e9 (sum of the two directions)
// Each sample runs every size (1 MiB .. 1 GiB by default) in each direction and both at once;
// a timed batch holds enough copies for about `bytesPerBatch`. The metrics are the largest
// size's figures (small copies measure latency more than the link); the other sizes are in
// Details(). The pinned buffers are allocated from a thread bound to the CPUs of the GPU's
// NUMA node (sysfs local_cpulist), so pages land next to the GPU's root port. The PCIe link
// generation and width are read through NVML while the largest copies run: an idle link
// drops its generation, so a reading taken at rest says nothing. Data are checked by a
// host->device->host round trip of a 64 MiB pattern each sample (and of the largest size
// once at set-up); any difference is a failure.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "kernels/cuda/formulas.h"
#include "kernels/cuda/h2d_d2h.h"
#include "kernels/cuda/test_support.h"
#include "kernels/nvml/nvml.h"
#include "kernels/nvml/readings.h"
#include "kernels/test_factories.h"

namespace perfgate::kernels {
namespace {

constexpr std::int64_t kVerifyBytes = 64LL << 20;

std::string ReadSysfs(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return in ? text.str() : "";
}

// Binds the calling thread to `cpus` until destroyed, then restores its previous mask.
class ScopedAffinity {
 public:
  explicit ScopedAffinity(const std::vector<int>& cpus) {
    if (cpus.empty() || pthread_getaffinity_np(pthread_self(), sizeof(old_), &old_) != 0) return;
    cpu_set_t wanted;
    CPU_ZERO(&wanted);
    for (int cpu : cpus) {
      if (cpu < CPU_SETSIZE) CPU_SET(cpu, &wanted);
    }
    bound_ = pthread_setaffinity_np(pthread_self(), sizeof(wanted), &wanted) == 0;
  }
  ~ScopedAffinity() {
    if (bound_) pthread_setaffinity_np(pthread_self(), sizeof(old_), &old_);
  }
  ScopedAffinity(const ScopedAffinity&) = delete;
  ScopedAffinity& operator=(const ScopedAffinity&) = delete;
  bool bound() const { return bound_; }

 private:
  cpu_set_t old_{};
  bool bound_ = false;
};

struct Direction {
  cuda::CopyDirection direction;
  const char* name;
  const char* metric;
  int ways;
};
constexpr Direction kDirections[] = {
    {cuda::CopyDirection::kHostToDevice, "h2d", "h2dBandwidthGBps", 1},
    {cuda::CopyDirection::kDeviceToHost, "d2h", "d2hBandwidthGBps", 1},
    {cuda::CopyDirection::kBoth, "bidirectional", "bidirectionalBandwidthGBps", 2},
};

class H2dD2hRun final : public TestRun {
 public:
  H2dD2hRun(std::unique_ptr<cuda::HostCopier> copier, std::vector<std::int64_t> sizes,
            std::int64_t batch_bytes, std::shared_ptr<nvml::Nvml> nvml,
            nvml::nvmlDevice_t nvml_device, std::map<std::string, std::string> details)
      : copier_(std::move(copier)),
        sizes_(std::move(sizes)),
        batch_bytes_(batch_bytes),
        nvml_(std::move(nvml)),
        nvml_device_(nvml_device),
        details_(std::move(details)) {}

  Result<Sample> RunSample() override {
    Sample sample;
    std::map<std::string, std::string> per_size;
    std::optional<unsigned> gen;
    std::optional<unsigned> width;
    for (std::int64_t bytes : sizes_) {
      const bool headline = bytes == sizes_.back();
      const int copies = gpu::CopyIterations(bytes, batch_bytes_, 2, 1000);
      for (const Direction& d : kDirections) {
        std::function<void()> probe;
        if (headline && nvml_ != nullptr && d.direction == cuda::CopyDirection::kHostToDevice) {
          probe = [&] {
            // A few readings while the batch runs; the highest is the trained link.
            for (int i = 0; i < 5; ++i) {
              const nvml::Telemetry t = nvml::ReadTelemetry(*nvml_, nvml_device_);
              if (t.pcie_gen) gen = std::max(gen.value_or(0), *t.pcie_gen);
              if (t.pcie_width) width = std::max(width.value_or(0), *t.pcie_width);
              std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
          };
        }
        ASSIGN_OR_RETURN(const double seconds, copier_->Time(d.direction, bytes, copies, probe));
        const double gbps =
            gpu::BandwidthGBps(static_cast<double>(bytes) * copies * d.ways, seconds);
        per_size[std::string(d.name) + " " + gpu::FormatBytes(bytes)] =
            gpu::FormatFixed(gbps, 2) + " GB/s (" + std::to_string(copies) + " copies)";
        if (headline) sample[d.metric] = gbps;
      }
    }
    RETURN_IF_ERROR(copier_->VerifyRoundTrip(std::min(kVerifyBytes, sizes_.back())));
    if (gen) sample["pcieLinkGeneration"] = *gen;
    if (width) sample["pcieLinkWidth"] = *width;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, value] : per_size) details_[key] = value;
    details_["pcieLinkDuringCopy"] =
        gen ? "gen " + std::to_string(*gen) + " x" + std::to_string(width.value_or(0))
            : "not read (NVML unavailable)";
    return sample;
  }

  std::map<std::string, std::string> Details() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return details_;
  }

 private:
  std::unique_ptr<cuda::HostCopier> copier_;
  std::vector<std::int64_t> sizes_;
  std::int64_t batch_bytes_;
  std::shared_ptr<nvml::Nvml> nvml_;
  nvml::nvmlDevice_t nvml_device_ = nullptr;
  mutable std::mutex mu_;
  std::map<std::string, std::string> details_;
};

class H2dD2hTest final : public Test {
 public:
  H2dD2hTest() {
    info_.type = "h2d-d2h";
    info_.description =
        "host<->device copy bandwidth from pinned memory on the GPU's NUMA node, each "
        "direction and both at once, PCIe link read during the copy";
    info_.scope = Scope::kGpu;
    ParamInfo sizes;
    sizes.name = "sizes";
    sizes.type = ParamType::kIntList;
    sizes.default_value = "[1048576, 4194304, 16777216, 67108864, 268435456, 1073741824]";
    sizes.unit = "bytes";
    sizes.description = "copy sizes; the largest is the headline";
    sizes.min = 4096;
    sizes.max = 16.0 * (1LL << 30);
    info_.params = {
        sizes,
        IntParam("bytesPerBatch", 2LL << 30, "bytes",
                 "bytes per timed batch (copies = bytesPerBatch / size, 2..1000)", 1 << 20,
                 64.0 * (1LL << 30)),
        ChoiceParam("numaPin", ParamType::kBool, "true",
                    "allocate pinned memory from the GPU's NUMA node's CPUs", {}),
    };
    info_.metrics = {
        gpu::Metric("h2dBandwidthGBps", "GB/s", true, "host to device, largest size"),
        gpu::Metric("d2hBandwidthGBps", "GB/s", true, "device to host, largest size"),
        gpu::Metric("bidirectionalBandwidthGBps", "GB/s", true,
                    "both directions at once (sum), largest size"),
        gpu::Metric("pcieLinkGeneration", "gen", true, "PCIe generation during the copy"),
        gpu::Metric("pcieLinkWidth", "lanes", true, "PCIe width during the copy"),
    };
  }

  const TestInfo& Info() const override { return info_; }

  // Each size moves bytesPerBatch host to device, device to host, and both ways at once.
  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    return static_cast<double>(params.IntList("sizes").size()) * 3 *
           static_cast<double>(params.Int("bytesPerBatch")) / nominal::kPcieBytesPerSecond;
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& target) const override {
    ASSIGN_OR_RETURN(const int ordinal, gpu::SingleGpu(target));
    ASSIGN_OR_RETURN(const cuda::CudaDeviceFacts facts, cuda::QueryCudaDevice(ordinal));
    std::vector<std::int64_t> sizes = params.IntList("sizes");
    if (sizes.empty()) return InvalidArgument("h2d-d2h: sizes is empty");
    std::sort(sizes.begin(), sizes.end());
    std::map<std::string, std::string> details;
    details["device"] = facts.name + " (" + facts.pci_bus_id + ")";

    std::vector<int> cpus;
    const std::string sysfs = "/sys/bus/pci/devices/" + nvml::NormalizePciBusId(facts.pci_bus_id);
    if (params.Bool("numaPin")) {
      auto parsed = gpu::ParseCpuList(ReadSysfs(sysfs + "/local_cpulist"));
      if (parsed.ok()) cpus = std::move(parsed).value();
    }
    std::string node = ReadSysfs(sysfs + "/numa_node");
    while (!node.empty() && (node.back() == '\n' || node.back() == ' ')) node.pop_back();
    Result<std::unique_ptr<cuda::HostCopier>> copier = Status(Code::kUnknown, "not created");
    {
      ScopedAffinity pin(cpus);
      details["pinnedMemory"] =
          pin.bound() ? "allocated from CPUs of NUMA node " + (node.empty() ? "?" : node)
                      : "not bound to a NUMA node (sysfs local_cpulist unreadable or "
                        "numaPin=false)";
      copier = cuda::CreateHostCopier(ordinal, sizes.back());
    }
    if (!copier.ok()) return copier.status();
    RETURN_IF_ERROR((*copier)->VerifyRoundTrip(sizes.back()));

    std::shared_ptr<nvml::Nvml> nvml;
    nvml::nvmlDevice_t nvml_device = nullptr;
    if (auto loaded = nvml::SharedNvml(); loaded.ok()) {
      if (auto device = (*loaded)->DeviceByPciBusId(facts.pci_bus_id); device.ok()) {
        nvml = *loaded;
        nvml_device = *device;
      }
    }
    return std::unique_ptr<TestRun>(std::make_unique<H2dD2hRun>(
        std::move(copier).value(), std::move(sizes), params.Int("bytesPerBatch"), std::move(nvml),
        nvml_device, std::move(details)));
  }

 private:
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakeH2dD2hTest() { return std::make_unique<H2dD2hTest>(); }

}  // namespace perfgate::kernels
