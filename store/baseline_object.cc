#include "store/baseline_object.h"

#include <chrono>
#include <sstream>

#include "common/time.h"

namespace perfgate::store {

v1alpha1::PerfBaseline BaselineObject(const Baseline& b, const v1alpha1::BaselineSelection& from) {
  v1alpha1::PerfBaseline out;
  out.set_apiversion("perfgate.io/v1alpha1");
  out.set_kind("PerfBaseline");
  out.mutable_metadata()->set_name(b.name);
  auto* spec = out.mutable_spec();
  spec->set_source(b.source);
  *spec->mutable_from() = from;
  spec->set_created(FormatRfc3339(
      std::chrono::system_clock::time_point(std::chrono::milliseconds(b.created_ms))));
  for (const auto& v : b.values) {
    auto* w = spec->add_values();
    w->set_gpumodel(v.gpu_model);
    w->set_profileversion(v.profile_version);
    w->set_test(v.test);
    w->set_metric(v.metric);
    w->set_statistic(v.statistic);
    w->set_value(v.value);
    w->set_count(v.count);
    w->set_low(v.low);
    w->set_high(v.high);
  }
  return out;
}

Result<Baseline> BaselineOfObject(const v1alpha1::PerfBaseline& object) {
  Baseline b;
  b.name = object.metadata().name();
  const auto& spec = object.spec();
  b.source = spec.source();
  if (!spec.created().empty()) {
    auto t = ParseRfc3339(spec.created());
    if (!t) {
      return InvalidArgument("PerfBaseline " + b.name + ": spec.created \"" + spec.created() +
                             "\" is not an RFC 3339 time");
    }
    b.created_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count();
  }
  for (int i = 0; i < spec.values_size(); ++i) {
    const auto& v = spec.values(i);
    if (v.test().empty() || v.metric().empty() || v.statistic().empty()) {
      return InvalidArgument("PerfBaseline " + b.name + ": spec.values[" + std::to_string(i) +
                             "] needs test, metric and statistic");
    }
    b.values.push_back({v.gpumodel(), v.profileversion(), v.test(), v.metric(), v.statistic(),
                        v.value(), v.count(), v.low(), v.high()});
  }
  return b;
}

v1alpha1::BaselineSelection SelectionOfSource(const std::string& source) {
  v1alpha1::BaselineSelection from;
  std::string rest = source;
  const std::string pass = " (PASS results)";
  if (rest.size() >= pass.size() &&
      rest.compare(rest.size() - pass.size(), pass.size(), pass) == 0) {
    rest.resize(rest.size() - pass.size());
  } else {
    from.set_anyverdict(true);
  }
  std::string nodes;
  if (auto n = rest.find(" --nodes "); n != std::string::npos) {
    nodes = rest.substr(n + 9);
    rest.resize(n);
  }
  if (rest.rfind("--from ", 0) == 0) rest = rest.substr(7);
  std::stringstream parts(rest);
  for (std::string part; std::getline(parts, part, ',');) {
    const auto eq = part.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = part.substr(0, eq);
    const std::string value = part.substr(eq + 1);
    if (key == "validation") {
      from.set_validation(value);
    } else if (key == "run") {
      from.set_run(value);
    } else if (key == "cluster") {
      from.set_cluster(value);
    } else if (key == "since") {
      from.set_since(value);
    } else if (key == "until") {
      from.set_until(value);
    }
  }
  std::stringstream list(nodes);
  for (std::string node; std::getline(list, node, ',');) {
    if (!node.empty()) from.add_nodes(node);
  }
  return from;
}

}  // namespace perfgate::store
