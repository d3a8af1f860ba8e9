#include "core/selection.h"

#include <algorithm>
#include <set>

#include "core/names.h"

namespace perfgate::op {

bool NodeSelected(const v1alpha1::PerfValidationSpec& spec, const Json& node) {
  const std::string name = Name(node);
  for (const auto& n : spec.nodes()) {
    if (n == name) return true;
  }
  // No selector and no names: every node (a DaemonSet's reading); with names only: those.
  if (spec.nodeselector().empty()) return spec.nodes().empty();
  for (const auto& [key, value] : spec.nodeselector()) {
    if (Label(node, key) != value) return false;
  }
  return true;
}

bool NodeSelected(const Json& spec, const Json& node) {
  const std::string name = Name(node);
  for (const auto& n : spec.value("nodes", Json::array())) {
    if (n.is_string() && n.get<std::string>() == name) return true;
  }
  const Json selector = spec.value("nodeSelector", Json::object());
  if (selector.empty()) return spec.value("nodes", Json::array()).empty();
  for (auto it = selector.begin(); it != selector.end(); ++it) {
    if (!it->is_string() || Label(node, it.key()) != it->get<std::string>()) return false;
  }
  return true;
}

int NodeGpus(const Json& node) {
  std::string gpus = Str(node, "/status/allocatable/nvidia.com~1gpu"_json_pointer);
  if (gpus.empty())
    return static_cast<int>(Int(node, "/status/allocatable/nvidia.com~1gpu"_json_pointer));
  return std::atoi(gpus.c_str());
}

bool HasRemediationTaint(const v1alpha1::PerfValidationSpec& spec, const Json& node) {
  for (const auto& t : node.value("spec", Json::object()).value("taints", Json::array())) {
    const std::string key = t.is_object() ? t.value("key", "") : "";
    for (const auto& k : spec.remediationtaints()) {
      if (!key.empty() && key == k) return true;
    }
  }
  return false;
}

std::vector<std::string> SelectNodes(const v1alpha1::PerfValidationSpec& spec,
                                     const std::map<std::string, Json>& nodes) {
  std::vector<std::string> selected;
  std::set<std::string> seen;
  const std::set<std::string> named(spec.nodes().begin(), spec.nodes().end());
  for (const auto& [n, node] : nodes) {
    if (!NodeSelected(spec, node)) continue;
    const bool explicitly = named.contains(n);
    if (!explicitly && NodeGpus(node) <= 0) continue;
    // A cordon perfgate set itself does not exclude the node (it must be re-testable).
    const Json meta = node.value("metadata", Json::object());
    const bool cordoned =
        node.value("spec", Json::object()).value("unschedulable", false) &&
        !meta.value("annotations", Json::object()).contains(kCordonedByAnnotation) &&
        !meta.value("annotations", Json::object()).contains(kCordonedForTestAnnotation);
    // Nor does the cordon of a remediation tool that hands the node over with one of
    // spec.remediationTaints: it is there to be tested.
    if (!explicitly && cordoned && !spec.includecordoned() && !HasRemediationTaint(spec, node)) {
      continue;
    }
    selected.push_back(n);
    seen.insert(n);
  }
  for (const auto& n : spec.nodes()) {
    if (seen.insert(n).second) selected.push_back(n);
  }
  std::sort(selected.begin(), selected.end());
  return selected;
}

SelectedModels ModelsOf(const std::vector<std::string>& selected,
                        const std::map<std::string, Json>& nodes) {
  SelectedModels models;
  for (const auto& n : selected) {
    auto it = nodes.find(n);
    if (it == nodes.end()) continue;  // named but missing: that node's ERROR, later
    std::map<std::string, std::string> labels;
    // Named, not a temporary: items() only refers to the object it iterates.
    const Json node_labels =
        it->second.value("metadata", Json::object()).value("labels", Json::object());
    for (const auto& [k, v] : node_labels.items()) {
      if (v.is_string()) labels[k] = v.get<std::string>();
    }
    auto model = GpuModelOfNode(labels);
    if (model.ok()) {
      models.known[n] = *model;
    } else {
      models.unknown[n] = model.status().message();
    }
  }
  return models;
}

std::string ModelKey(const std::string& model) {
  std::string key;
  for (char c : model) {
    key += (c == '-' || c == '_') ? ' '
                                  : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return key;
}

std::string DescribeModels(const std::map<std::string, NodeGpuModel>& known) {
  struct Group {
    std::string model;
    std::map<std::string, std::vector<std::string>> nodes_by_way;
  };
  std::map<std::string, Group> groups;
  for (const auto& [node, m] : known) {
    Group& g = groups[ModelKey(m.model)];
    if (g.model.empty()) g.model = m.model;
    g.nodes_by_way[m.found_by].push_back(node);
  }
  std::string out;
  for (const auto& [key, g] : groups) {
    std::string part;
    for (const auto& [way, nodes] : g.nodes_by_way) {
      std::string names;
      for (size_t i = 0; i < nodes.size() && i < 10; ++i) names += (i ? ", " : "") + nodes[i];
      if (nodes.size() > 10) names += " and " + std::to_string(nodes.size() - 10) + " more";
      part += (part.empty() ? "" : ", ") + names + " (" + way + ")";
    }
    out += (out.empty() ? "" : "; ") + g.model + ": " + part;
  }
  return out;
}

}  // namespace perfgate::op
