// Per-GPU quarantine through Dynamic Resource Allocation (docs/operator.md, "Per-GPU
// quarantine"): when a node's FAIL is confined to some of its GPUs and the cluster publishes
// those GPUs as DRA devices (ResourceSlices), perfgate taints exactly those devices with one
// DeviceTaintRule each instead of tainting the node. Pure, but for DeviceTaints, which talks
// to the API server.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "core/json_fields.h"
#include "kube/client.h"

namespace perfgate::op {

// A GPU a report blames: its device name ("gpu3") and identity (report.identity.gpus[]).
struct FailingGpu {
  std::string device;  // "gpu3"
  std::string uuid;    // "GPU-..."; "" when the report has no identity for it
  std::string pci_bus_id;
};

// The GPUs a finished report's FAIL is confined to: every test that neither passed nor was
// skipped ran on a single GPU ("gpuN"). Empty when the verdict is not FAIL or any such test ran
// on the host, on all GPUs or across nodes (a node-wide failure), or none is named.
std::vector<FailingGpu> ConfinedGpuFailures(const Json& report);

// A DRA device: what a DeviceTaintRule's deviceSelector names.
struct DraDevice {
  std::string gpu;  // the report's name for it, "gpu3"
  std::string driver;
  std::string pool;
  std::string device;
};

// The DRA devices of `node` in `slices` (ResourceSlice objects) that are the `gpus`, matched by
// the attribute uuid or else pciBusID (any driver's; a qualified "gpu.nvidia.com/uuid" too).
// nullopt unless every GPU matches exactly one device.
std::optional<std::vector<DraDevice>> MatchDevices(const std::vector<FailingGpu>& gpus,
                                                   const std::vector<Json>& slices,
                                                   const std::string& node);

// "gpu3=gpu.nvidia.com/node-0/gpu-3,...": the node annotation's value.
std::string DescribeDevices(const std::vector<DraDevice>& devices);

// The DeviceTaintRule tainting `device` of `node` for `validation` with `effect` (NoSchedule |
// NoExecute), in `api_version` ("resource.k8s.io/v1alpha3"). Its name is derived from node and
// device, its labels name the validation and the node.
Json DeviceTaintRuleObject(const std::string& api_version, const std::string& validation,
                           const std::string& node, const DraDevice& device,
                           const std::string& effect);

// The versions of resource.k8s.io the server serves, from its APIGroup discovery document:
// the one to use for ResourceSlices (v1, v1beta2, v1beta1: the first served) and for
// DeviceTaintRules (v1, v1beta2, v1alpha3); "" for none.
struct DraVersions {
  std::string slices;
  std::string taint_rules;
};
DraVersions DraVersionsOf(const std::vector<Json>& resource_lists);

// The API side: discovery (once found, remembered), the node's slices, creating and deleting
// rules. Thread-safe.
class DeviceTaints {
 public:
  explicit DeviceTaints(std::shared_ptr<kube::Client> client) : client_(std::move(client)) {}

  // The DRA devices that are `gpus` on `node`; nullopt when the cluster serves no
  // ResourceSlices or DeviceTaintRules, or not every GPU is published on the node.
  Result<std::optional<std::vector<DraDevice>>> Find(const std::string& node,
                                                     const std::vector<FailingGpu>& gpus);
  // Creates one rule per device (an existing one is left as it is).
  Status Taint(const std::string& validation, const std::string& node,
               const std::vector<DraDevice>& devices, const std::string& effect);
  // Deletes every rule perfgate made for `node`.
  Status Untaint(const std::string& node);

 private:
  Result<DraVersions> Versions();

  std::shared_ptr<kube::Client> client_;
  std::mutex mu_;
  std::optional<DraVersions> versions_;
};

}  // namespace perfgate::op
