#include "kernels/test.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <utility>

namespace perfgate::kernels {
namespace {

// A test reading a parameter it did not declare, or with the wrong type, is a broken
// invariant (the loader checked the spec against the declaration): crash with the name.
[[noreturn]] void BrokenParam(const std::string& name, const char* what) {
  std::fprintf(stderr, "perfgate: internal error: parameter \"%s\" %s\n", name.c_str(), what);
  std::abort();
}

const ParamValue& Find(const std::map<std::string, ParamValue>& values, const std::string& name) {
  auto it = values.find(name);
  if (it == values.end()) BrokenParam(name, "was not declared by the test");
  return it->second;
}

template <typename T>
const T& Get(const std::map<std::string, ParamValue>& values, const std::string& name) {
  const T* v = std::get_if<T>(&Find(values, name));
  if (v == nullptr) BrokenParam(name, "was read with the wrong type");
  return *v;
}

std::string FormatDouble(double d) {
  std::ostringstream os;
  os.precision(15);
  os << d;
  return os.str();
}

}  // namespace

std::int64_t Params::Int(const std::string& name) const { return Get<std::int64_t>(values_, name); }

double Params::Double(const std::string& name) const {
  if (const auto* i = std::get_if<std::int64_t>(&Find(values_, name))) {
    return static_cast<double>(*i);
  }
  return Get<double>(values_, name);
}

const std::string& Params::String(const std::string& name) const {
  return Get<std::string>(values_, name);
}
bool Params::Bool(const std::string& name) const { return Get<bool>(values_, name); }
const std::vector<std::string>& Params::StringList(const std::string& name) const {
  return Get<std::vector<std::string>>(values_, name);
}
const std::vector<std::int64_t>& Params::IntList(const std::string& name) const {
  return Get<std::vector<std::int64_t>>(values_, name);
}

std::string Params::Format(const ParamValue& value) {
  struct Visitor {
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return FormatDouble(d); }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(const std::vector<std::string>& l) const {
      std::string out = "[";
      for (size_t i = 0; i < l.size(); ++i) out += (i ? ", " : "") + l[i];
      return out + "]";
    }
    std::string operator()(const std::vector<std::int64_t>& l) const {
      std::string out = "[";
      for (size_t i = 0; i < l.size(); ++i) out += (i ? ", " : "") + std::to_string(l[i]);
      return out + "]";
    }
  };
  return std::visit(Visitor{}, value);
}

std::string Target::Name() const {
  switch (scope) {
    case Scope::kHost:
      return "host";
    case Scope::kGpu:
      return devices.empty() ? "gpu?" : "gpu" + std::to_string(devices.front());
    case Scope::kAllGpus:
      if (devices.empty()) return "gpus";
      if (devices.size() == 1) return "gpus" + std::to_string(devices.front());
      return "gpus" + std::to_string(devices.front()) + "-" + std::to_string(devices.back());
  }
  return "?";
}

std::vector<MetricInfo> Test::Metrics(const Params& /*params*/) const { return Info().metrics; }

ValueRange ReachableRange(const MetricInfo& metric) {
  ValueRange r{metric.lowest, metric.highest};
  const std::string& u = metric.unit;
  const bool rate = u.size() > 2 && u.compare(u.size() - 2, 2, "/s") == 0;  // GB/s, TFLOP/s
  if (IsCount(metric) || rate || u == "bool") r.lowest = std::max(r.lowest, 0.0);
  if (u == "bool") r.highest = std::min(r.highest, 1.0);
  return r;
}

std::string BinarySize(std::int64_t bytes, const std::string& separator) {
  constexpr std::int64_t kKiB = 1024;
  constexpr std::int64_t kMiB = kKiB * 1024;
  for (const auto& [unit, name] : {std::pair{kGiB, "GiB"}, {kMiB, "MiB"}, {kKiB, "KiB"}}) {
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + separator + name;
  }
  return std::to_string(bytes) + separator + "B";
}

double nominal::MatmulFlopsPerSecond(const std::string& dtype) {
  if (dtype == "fp8") return 1400e12;
  if (dtype == "bf16" || dtype == "fp16") return 700e12;
  if (dtype == "tf32") return 350e12;
  if (dtype == "fp64") return 47e12;
  return 30e12;  // fp32 without tensor cores, and anything else
}

}  // namespace perfgate::kernels
