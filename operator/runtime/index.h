// An index of an informer's objects by one label's value, kept by informer handlers, so a
// reconcile reads its own validation's pods and results instead of copying the whole cache
// (what made 100 validations over 1,000 nodes CPU-bound; docs/benchmarks.md).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/informer.h"

namespace perfgate::op {

class LabelIndex {
 public:
  explicit LabelIndex(std::string label) : label_(std::move(label)) {}

  // Handlers that keep the index; register them on the informer before Start.
  kube::InformerHandlers Handlers();
  // Copies of the objects whose label has `value`. Thread-safe, non-blocking.
  std::vector<nlohmann::json> Get(const std::string& value) const;

 private:
  void Remove(const nlohmann::json& object);
  void Put(const nlohmann::json& object);

  std::string label_;
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, nlohmann::json>> by_value_;  // value -> key -> obj
};

}  // namespace perfgate::op
