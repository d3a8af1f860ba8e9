#include "operator/policy/device_taints.h"

#include "common/node_verdict.h"

#include <algorithm>
#include <cctype>

#include "core/names.h"

namespace perfgate::op {
namespace {

const std::string kGroup = "resource.k8s.io";

bool NotPassed(const Json& test) {
  const auto v = verdict::ParseVerdict(test.value("verdict", ""));
  return v != verdict::Verdict::kPass && v != verdict::Verdict::kSkipped;
}

// "gpu3": a single CUDA ordinal.
std::optional<int> GpuOrdinal(const std::string& device) {
  if (device.size() < 4 || device.rfind("gpu", 0) != 0) return std::nullopt;
  for (size_t i = 3; i < device.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(device[i]))) return std::nullopt;
  }
  return std::stoi(device.substr(3));
}

// A PCI address without its domain's width or case: NVML writes "00000000:3B:00.0", the DRA
// driver "0000:3b:00.0".
std::string NormalPci(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t colon = s.find(':');
  if (colon != std::string::npos && s.find(':', colon + 1) != std::string::npos) {
    std::string domain = s.substr(0, colon);
    domain.erase(0, std::min(domain.find_first_not_of('0'), domain.size()));
    s = (domain.empty() ? "0" : domain) + s.substr(colon);
  }
  return s;
}

// A device attribute's string value by name, unqualified or in any domain ("uuid",
// "gpu.nvidia.com/uuid").
std::string Attribute(const Json& device, const std::string& name) {
  const Json attrs = device.value("attributes", Json::object());
  if (!attrs.is_object()) return "";
  for (const auto& [key, value] : attrs.items()) {
    const size_t slash = key.rfind('/');
    const std::string bare = slash == std::string::npos ? key : key.substr(slash + 1);
    if (bare == name && value.is_object() && value.contains("string") &&
        value["string"].is_string()) {
      return value["string"].get<std::string>();
    }
  }
  return "";
}

std::string ResourceVersionOf(const std::vector<Json>& lists, const std::string& resource,
                              const std::vector<std::string>& preference) {
  for (const auto& version : preference) {
    for (const auto& list : lists) {
      if (list.value("groupVersion", "") != kGroup + "/" + version) continue;
      for (const auto& r : list.value("resources", Json::array())) {
        if (r.value("name", "") == resource) return version;
      }
    }
  }
  return "";
}

}  // namespace

std::vector<FailingGpu> ConfinedGpuFailures(const Json& report) {
  if (verdict::ParseVerdict(report.value("verdict", "")) != verdict::Verdict::kFail) return {};
  std::vector<FailingGpu> out;
  for (const auto& t : report.value("tests", Json::array())) {
    if (!NotPassed(t)) continue;
    const std::string device = t.value("device", "");
    const auto ordinal = GpuOrdinal(device);
    if (!ordinal) return {};
    const bool seen = std::any_of(out.begin(), out.end(),
                                  [&](const FailingGpu& g) { return g.device == device; });
    if (seen) continue;
    FailingGpu g{device, "", ""};
    for (const auto& id : report.value("identity", Json::object()).value("gpus", Json::array())) {
      if (id.value("index", -1) == *ordinal) {
        g.uuid = id.value("uuid", "");
        g.pci_bus_id = id.value("pciBusId", "");
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::optional<std::vector<DraDevice>> MatchDevices(const std::vector<FailingGpu>& gpus,
                                                   const std::vector<Json>& slices,
                                                   const std::string& node) {
  if (gpus.empty()) return std::nullopt;
  std::vector<DraDevice> out;
  for (const auto& gpu : gpus) {
    std::vector<DraDevice> found;
    for (const auto& slice : slices) {
      const Json spec = slice.value("spec", Json::object());
      if (spec.value("nodeName", "") != node) continue;
      for (const auto& dev : spec.value("devices", Json::array())) {
        const std::string uuid = Attribute(dev, "uuid");
        const std::string pci = Attribute(dev, "pciBusID");
        // By UUID where both sides know it, else by PCI bus id.
        const bool matched = !gpu.uuid.empty() && !uuid.empty()
                                 ? uuid == gpu.uuid
                                 : !gpu.pci_bus_id.empty() && !pci.empty() &&
                                       NormalPci(pci) == NormalPci(gpu.pci_bus_id);
        if (matched) {
          found.push_back({gpu.device, spec.value("driver", ""),
                           spec.value("pool", Json::object()).value("name", ""),
                           dev.value("name", "")});
        }
      }
    }
    if (found.size() != 1) return std::nullopt;
    out.push_back(std::move(found.front()));
  }
  return out;
}

std::string DescribeDevices(const std::vector<DraDevice>& devices) {
  std::string out;
  for (const auto& d : devices) {
    out += (out.empty() ? "" : ",") + d.gpu + "=" + d.driver + "/" + d.pool + "/" + d.device;
  }
  return out;
}

Json DeviceTaintRuleObject(const std::string& api_version, const std::string& validation,
                           const std::string& node, const DraDevice& device,
                           const std::string& effect) {
  return {{"apiVersion", api_version},
          {"kind", "DeviceTaintRule"},
          {"metadata",
           {{"name", ObjectName({"perfgate", node, device.device})},
            {"labels", {{kValidationLabel, validation}, {kNodeLabel, node}}}}},
          {"spec",
           {{"deviceSelector",
             {{"driver", device.driver}, {"pool", device.pool}, {"device", device.device}}},
            {"taint", {{"key", kFailedTaint}, {"value", validation}, {"effect", effect}}}}}};
}

DraVersions DraVersionsOf(const std::vector<Json>& resource_lists) {
  return {ResourceVersionOf(resource_lists, "resourceslices", {"v1", "v1beta2", "v1beta1"}),
          ResourceVersionOf(resource_lists, "devicetaintrules", {"v1", "v1beta2", "v1alpha3"})};
}

Result<DraVersions> DeviceTaints::Versions() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (versions_) return *versions_;
  }
  auto get = [&](const std::string& path) -> Result<Json> {
    kube::HttpRequest req;
    req.method = "GET";
    req.path = path;
    req.headers["Accept"] = "application/json";
    ASSIGN_OR_RETURN(std::string body, client_->Do(std::move(req)));
    return Json::parse(body, nullptr, false);
  };
  auto group = get("/apis/" + kGroup);
  if (!group.ok()) {
    if (group.status().code() == Code::kNotFound) return DraVersions{};
    return group.status();
  }
  std::vector<Json> lists;
  for (const auto& v : group->value("versions", Json::array())) {
    ASSIGN_OR_RETURN(Json list, get("/apis/" + kGroup + "/" + v.value("version", "")));
    lists.push_back(std::move(list));
  }
  DraVersions found = DraVersionsOf(lists);
  // Remembered once both are served; a cluster without them may get a driver later.
  if (!found.slices.empty() && !found.taint_rules.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    versions_ = found;
  }
  return found;
}

Result<std::optional<std::vector<DraDevice>>> DeviceTaints::Find(
    const std::string& node, const std::vector<FailingGpu>& gpus) {
  if (gpus.empty()) return std::optional<std::vector<DraDevice>>();
  ASSIGN_OR_RETURN(DraVersions v, Versions());
  if (v.slices.empty() || v.taint_rules.empty()) return std::optional<std::vector<DraDevice>>();
  kube::ListOptions options;
  options.fieldSelector = "spec.nodeName=" + node;
  ASSIGN_OR_RETURN(Json list, client_->ListAll({kGroup, v.slices, "resourceslices"}, "", options));
  std::vector<Json> slices;
  for (const auto& s : list.value("items", Json::array())) slices.push_back(s);
  return MatchDevices(gpus, slices, node);
}

Status DeviceTaints::Taint(const std::string& validation, const std::string& node,
                           const std::vector<DraDevice>& devices, const std::string& effect) {
  ASSIGN_OR_RETURN(DraVersions v, Versions());
  if (v.taint_rules.empty()) {
    return Status(Code::kFailedPrecondition, "the server serves no DeviceTaintRules");
  }
  for (const auto& d : devices) {
    auto created = client_->Create(
        {kGroup, v.taint_rules, "devicetaintrules"}, "",
        DeviceTaintRuleObject(kGroup + "/" + v.taint_rules, validation, node, d, effect));
    if (!created.ok() && created.status().code() != Code::kAlreadyExists) {
      return created.status();
    }
  }
  return Status::Ok();
}

Status DeviceTaints::Untaint(const std::string& node) {
  ASSIGN_OR_RETURN(DraVersions v, Versions());
  if (v.taint_rules.empty()) return Status::Ok();
  const kube::GroupVersionResource rules{kGroup, v.taint_rules, "devicetaintrules"};
  kube::ListOptions options;
  options.labelSelector = std::string(kNodeLabel) + "=" + node;
  ASSIGN_OR_RETURN(Json list, client_->ListAll(rules, "", options));
  for (const auto& r : list.value("items", Json::array())) {
    auto deleted = client_->Delete(rules, "", Name(r));
    if (!deleted.ok() && deleted.status().code() != Code::kNotFound) return deleted.status();
  }
  return Status::Ok();
}

}  // namespace perfgate::op
