#include "operator/runtime/index.h"

#include "core/json_fields.h"

namespace perfgate::op {

kube::InformerHandlers LabelIndex::Handlers() {
  return {[this](const nlohmann::json& o) { Put(o); },
          [this](const nlohmann::json& old_object, const nlohmann::json& o) {
            Remove(old_object);
            Put(o);
          },
          [this](const nlohmann::json& o) { Remove(o); }};
}

void LabelIndex::Put(const nlohmann::json& o) {
  std::string v = Label(o, label_);
  if (v.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  by_value_[v][kube::ObjectKey(o)] = o;
}

void LabelIndex::Remove(const nlohmann::json& o) {
  std::string v = Label(o, label_);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_value_.find(v);
  if (it == by_value_.end()) return;
  it->second.erase(kube::ObjectKey(o));
  if (it->second.empty()) by_value_.erase(it);
}

std::vector<nlohmann::json> LabelIndex::Get(const std::string& value) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<nlohmann::json> out;
  auto it = by_value_.find(value);
  if (it == by_value_.end()) return out;
  out.reserve(it->second.size());
  for (const auto& [k, o] : it->second) out.push_back(o);
  return out;
}

}  // namespace perfgate::op
