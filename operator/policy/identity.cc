#include "operator/policy/identity.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "core/names.h"
#include "operator/policy/watch_nodes.h"

namespace perfgate::op {
namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool AllDigits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

}  // namespace

std::string ResultIdentity::Describe() const {
  std::string out = "driver " + (driver.empty() ? std::string("unknown") : driver);
  if (gpus.empty()) return out;
  out += ", GPUs ";
  for (size_t i = 0; i < gpus.size(); ++i) out += (i == 0 ? "" : "; ") + gpus[i];
  return Cut(out, 600);
}

ResultIdentity IdentityOfResult(const Json& result) {
  ResultIdentity id;
  const Json* identity = nullptr;
  const Json::json_pointer p("/spec/report/identity");
  if (result.contains(p) && result.at(p).is_object()) identity = &result.at(p);
  if (identity == nullptr) return id;
  id.driver = identity->value("driverVersion", "");
  const Json gpus = identity->value("gpus", Json::array());
  if (!gpus.is_array()) return id;
  for (const auto& g : gpus) {
    if (!g.is_object()) continue;
    const std::string uuid = g.value("uuid", "");
    const std::string vbios = g.value("vbios", "");
    if (uuid.empty() && vbios.empty()) continue;
    id.gpus.push_back(uuid + (vbios.empty() ? "" : " vbios " + vbios));
  }
  return id;
}

std::string LabelledDriver(const Json& node) {
  const Json labels = node.value("metadata", Json::object()).value("labels", Json::object());
  auto get = [&](const char* k) {
    auto it = labels.find(k);
    return it != labels.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::string driver = get("nvidia.com/cuda.driver.major");
  if (driver.empty()) return driver;
  for (const char* k : {"nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev"}) {
    if (get(k).empty()) break;
    driver += "." + get(k);
  }
  return driver;
}

bool DriverDiffers(const std::string& reported, const std::string& labelled) {
  if (reported.empty() || labelled.empty()) return false;
  const std::vector<std::string> r = Split(reported, '.');
  const std::vector<std::string> l = Split(labelled, '.');
  // NVML's version is numbers and dots; anything else (the CUDA fallback) is not comparable.
  if (!std::all_of(r.begin(), r.end(), AllDigits)) return false;
  for (size_t i = 0; i < l.size(); ++i) {
    if (i >= r.size()) return true;
    if (l[i] != r[i]) return true;
  }
  return false;
}

std::string GpuChange(const ResultIdentity& was, const ResultIdentity& now) {
  if (was.gpus.empty() || now.gpus.empty() || was.gpus == now.gpus) return "";
  std::vector<std::string> gone;
  std::vector<std::string> added;
  for (const auto& g : was.gpus) {
    if (std::find(now.gpus.begin(), now.gpus.end(), g) == now.gpus.end()) gone.push_back(g);
  }
  for (const auto& g : now.gpus) {
    if (std::find(was.gpus.begin(), was.gpus.end(), g) == was.gpus.end()) added.push_back(g);
  }
  if (gone.empty() && added.empty()) return "";  // the same GPUs in another order
  auto list = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i == 0 ? "" : ", ") + v[i];
    return out.empty() ? std::string("none") : out;
  };
  return Cut("GPUs gone: " + list(gone) + "; new: " + list(added), 800);
}

void RecordGpuChanges(const Snapshot& s, Decision* d) {
  if (!d->status) return;
  std::map<std::string, const Json*> current;
  for (const auto& r : s.results) {
    if (Label(r, kRunLabel) != s.run) continue;
    const std::string node = ResultNode(r);
    if (Name(r) == WorkerName(s, node)) current[node] = &r;
  }
  // Each node's newest result of an earlier run, in one pass (a large fleet keeps thousands).
  std::map<std::string, const Json*> previous_of;
  for (const auto& r : s.results) {
    if (BaseRun(Label(r, kRunLabel)) == s.run) continue;
    const Json*& best = previous_of[ResultNode(r)];
    if (best == nullptr || Str(r, "/metadata/creationTimestamp"_json_pointer) >
                               Str(*best, "/metadata/creationTimestamp"_json_pointer)) {
      best = &r;
    }
  }
  Json changes = d->status->value("gpuChanges", Json::array());
  bool added = false;
  for (const auto& o : d->outcomes) {
    if (!o.verdict) continue;
    auto it = current.find(o.node);
    if (it == current.end()) continue;
    const Json& result = *it->second;
    const std::string name = Name(result);
    bool known = false;
    for (const auto& c : changes) known |= c.value("result", "") == name;
    if (known) continue;
    const ResultIdentity now = IdentityOfResult(result);
    if (now.gpus.empty()) continue;
    auto prev = previous_of.find(o.node);
    if (prev == previous_of.end()) continue;
    const Json* previous = prev->second;
    const std::string change = GpuChange(IdentityOfResult(*previous), now);
    if (change.empty()) continue;
    d->events.push_back({"Warning", "GpuChanged",
                         o.node + ": its GPUs are not those of its previous result " +
                             Name(*previous) + " (" + change +
                             "); this result measured the new ones",
                         true, s.name + "/gpu/" + name});
    if (changes.size() >= 20) changes.erase(changes.begin());
    changes.push_back({{"node", o.node},
                       {"result", name},
                       {"previousResult", Name(*previous)},
                       {"change", change}});
    added = true;
  }
  if (added) (*d->status)["gpuChanges"] = std::move(changes);
}

}  // namespace perfgate::op
