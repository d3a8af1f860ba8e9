// port-health: the node's InfiniBand/RoCE ports, from sysfs (fabric/ports.h). Prepare reads
// every port; each sample waits intervalSeconds, reads them again and reports, over the
// window since Prepare:
//   portDownCount      ports not ACTIVE and LinkUp
//   portDegradedCount  ports up below their rated rate or width (ratedRateGbps, ratedWidth)
//   linkDownedCount, symbolErrorCount, linkErrorRecoveryCount, portRcvErrorCount,
//   bufferOverrunErrorCount, linkIntegrityErrorCount: the largest increase of that counter on
//                      one port (a bound is per port: errors spread over eight rails are not
//                      one bad cable)
//   slowestPortRateGbps, narrowestPortWidth: of the ports that are up
// Every count names its ports in counted.<metric>, so a FAIL says which port; port.<hca>/<n>
// gives each port's state, rate, link layer, PCI address, NUMA node and counter increases.
//
// The window is the test's own: the runner has no hook around the other tests, so the
// increases are those of port-health's samples. A spec lists it after its load (the profiles
// list it last) to read the ports' state and rate as the load left them, and the errors of the
// window that follows. IB counters saturate rather than wrap; one that went backwards was reset
// (perfquery -R) and counts from zero.
//
// A machine without /sys/class/infiniband has no port to check: SKIPPED with that reason.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels/fabric/port_health.h"
#include "kernels/fabric/ports.h"
#include "kernels/test_factories.h"
#include "kernels/unmeasured.h"

namespace perfgate::kernels {
namespace {

using fabric::IbPort;

// The counters whose increase is a metric, with the sysfs file each comes from.
struct CounterMetric {
  const char* metric;
  const char* counter;
  const char* description;
};
constexpr CounterMetric kCounters[] = {
    {"linkDownedCount", "link_downed",
     "times one port's link went down in the window (the most on any port)"},
    {"symbolErrorCount", "symbol_error",
     "symbol errors on one port's lanes in the window (the most on any port)"},
    {"linkErrorRecoveryCount", "link_error_recovery",
     "link retrains after errors on one port in the window (the most on any port)"},
    {"portRcvErrorCount", "port_rcv_errors",
     "received packets with errors on one port in the window (the most on any port)"},
    {"bufferOverrunErrorCount", "excessive_buffer_overrun_errors",
     "receive buffer overruns on one port in the window (the most on any port)"},
    {"linkIntegrityErrorCount", "local_link_integrity_errors",
     "local physical errors past their threshold on one port in the window (the most on any "
     "port)"},
};

std::string Number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

std::uint64_t Counter(const IbPort& port, const std::string& name) {
  auto it = port.counters.find(name);
  return it == port.counters.end() ? 0 : it->second;
}

// The increase from `before` to `after`; a counter that went backwards was reset and counts
// from zero.
std::uint64_t Increase(std::uint64_t before, std::uint64_t after) {
  return after >= before ? after - before : after;
}

// "mlx5_5/1 (PCI 0000:c0:00.0, NUMA 1)"
std::string PortText(const IbPort& port) {
  std::string text = port.Name();
  const std::string placement = port.Placement();
  return placement.empty() ? text : text + " (" + placement + ")";
}

void Append(std::string* list, const std::string& item) {
  *list += (list->empty() ? "" : "; ") + item;
}

struct Rated {
  double rate_gbps = 0;
  int width = 0;
};

class PortHealthRun final : public TestRun {
 public:
  PortHealthRun(fabric::PortReader read, std::vector<IbPort> before, Rated rated,
                double interval_seconds, std::map<std::string, std::string> details)
      : read_(std::move(read)),
        before_(std::move(before)),
        rated_(rated),
        interval_seconds_(interval_seconds),
        details_(std::move(details)) {}

  Result<Sample> RunSample() override {
    if (interval_seconds_ > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(interval_seconds_));
    }
    auto read = read_();
    if (!read.ok()) return Unavailable("port-health: " + read.status().message());
    std::map<std::string, const IbPort*> now;
    for (const IbPort& port : *read) now[port.Name()] = &port;

    Sample sample;
    std::map<std::string, std::string> counted;
    std::map<std::string, std::string> ports;
    int down = 0;
    int degraded = 0;
    double slowest = -1;
    int narrowest = -1;
    std::map<std::string, std::uint64_t> worst;
    for (const auto& c : kCounters) worst[c.metric] = 0;
    for (const IbPort& was : before_) {
      auto it = now.find(was.Name());
      if (it == now.end()) {
        ++down;
        Append(&counted["portDownCount"], PortText(was) + " is gone from sysfs");
        ports[was.Name()] = "gone from sysfs since the test began";
        continue;
      }
      const IbPort& port = *it->second;
      std::string text =
          port.state + ", " + port.phys_state + ", " + port.rate_text + ", " + port.link_layer;
      if (const std::string placement = port.Placement(); !placement.empty()) {
        text += ", " + placement;
      }
      if (!port.Up()) {
        ++down;
        Append(&counted["portDownCount"],
               PortText(port) + " " + port.state + " (" + port.phys_state + ")");
      } else {
        slowest = slowest < 0 ? port.rate_gbps : std::min(slowest, port.rate_gbps);
        narrowest = narrowest < 0 ? port.width : std::min(narrowest, port.width);
        if (port.rate_gbps < rated_.rate_gbps || port.width < rated_.width) {
          ++degraded;
          Append(&counted["portDegradedCount"],
                 PortText(port) + " at " + port.rate_text + ", rated " + Number(rated_.rate_gbps) +
                     " Gb/sec on " + std::to_string(rated_.width) + " lanes");
        }
      }
      text += "; in the window:";
      const char* sep = " ";
      for (const auto& c : kCounters) {
        const std::uint64_t increase = Increase(Counter(was, c.counter), Counter(port, c.counter));
        text += sep + std::string(c.counter) + " +" + std::to_string(increase);
        sep = ", ";
        if (increase == 0) continue;
        worst[c.metric] = std::max(worst[c.metric], increase);
        Append(&counted[c.metric], PortText(port) + " " + c.counter + " +" +
                                       std::to_string(increase) + " (" +
                                       std::to_string(Counter(was, c.counter)) + " -> " +
                                       std::to_string(Counter(port, c.counter)) + ")");
      }
      ports[port.Name()] = text;
    }
    sample["portDownCount"] = down;
    sample["portDegradedCount"] = degraded;
    for (const auto& [metric, value] : worst) sample[metric] = static_cast<double>(value);

    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(details_, [](const auto& entry) {
      return entry.first.starts_with(kCountedPrefix) ||
             entry.first.starts_with(kNotApplicablePrefix) || entry.first.starts_with("port.");
    });
    if (slowest >= 0) {
      sample["slowestPortRateGbps"] = slowest;
      sample["narrowestPortWidth"] = narrowest;
    } else {
      details_[NotApplicableKey("slowestPortRateGbps")] = "no port is up";
      details_[NotApplicableKey("narrowestPortWidth")] = "no port is up";
    }
    for (auto& [metric, text] : counted) details_[CountedKey(metric)] = std::move(text);
    for (auto& [name, text] : ports) details_["port." + name] = std::move(text);
    return sample;
  }

  std::map<std::string, std::string> Details() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return details_;
  }

 private:
  fabric::PortReader read_;
  std::vector<IbPort> before_;
  Rated rated_;
  double interval_seconds_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> details_;
};

// The ports of the HCAs named (all when none is); NotFound naming an HCA that is not here.
Result<std::vector<IbPort>> Select(std::vector<IbPort> ports, const std::vector<std::string>& hcas,
                                   const std::string& where) {
  if (hcas.empty()) return ports;
  std::vector<IbPort> out;
  for (const std::string& hca : hcas) {
    bool found = false;
    for (const IbPort& port : ports) {
      if (port.hca != hca) continue;
      out.push_back(port);
      found = true;
    }
    if (!found) {
      std::string present;
      for (const IbPort& port : ports) {
        if (present.find(port.hca) == std::string::npos) Append(&present, port.hca);
      }
      return NotFound(
          "port-health: HCA " + hca + " (in hcas) is not in " + where +
          (present.empty() ? std::string(", which holds none") : ", which holds " + present));
    }
  }
  return out;
}

class PortHealthTest final : public Test {
 public:
  PortHealthTest(fabric::PortReader read, std::string where)
      : read_(std::move(read)), where_(std::move(where)) {
    info_.type = "port-health";
    info_.description =
        "InfiniBand/RoCE ports from sysfs, before and after a window: ports down, below their "
        "rated rate or width, links that went down and error counters' increases, each failure "
        "naming the port, its PCI address and NUMA node";
    info_.scope = Scope::kHost;
    info_.params = {
        ChoiceParam("hcas", ParamType::kStringList, "[]",
                    "HCAs to check (mlx5_0, ...); empty: every HCA in /sys/class/infiniband", {}),
        DoubleParam("ratedRateGbps", "0", "Gb/s",
                    "the rate every port should run at; 0: the fastest port here", 0, 1e5),
        IntParam("ratedWidth", 0, "lanes",
                 "the lanes every port should run on; 0: the widest port here", 0, 32),
        DoubleParam("intervalSeconds", "5", "seconds",
                    "wait before each reading; the window is the test's samples together", 0, 3600),
    };
    auto count = [](const char* name, const char* description) {
      return MetricInfo{name, "count", false, description};
    };
    info_.metrics = {
        count("portDownCount", "ports not ACTIVE and LinkUp at the end of the window"),
        count("portDegradedCount", "ports up below their rated rate or width"),
    };
    for (const auto& c : kCounters) info_.metrics.push_back(count(c.metric, c.description));
    MetricInfo rate{"slowestPortRateGbps", "Gb/s", true, "the slowest port's rate, of those up"};
    rate.lowest = 0;
    info_.metrics.push_back(rate);
    MetricInfo width{"narrowestPortWidth", "lanes", true,
                     "the fewest lanes a port that is up runs on (4 for 4X)"};
    width.lowest = 1;
    width.highest = 32;
    info_.metrics.push_back(width);
  }

  const TestInfo& Info() const override { return info_; }

  double SampleSeconds(const Params& params, int /*gpus*/) const override {
    return params.Double("intervalSeconds") + 0.01;
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& /*target*/) const override {
    auto read = read_();
    if (!read.ok()) {
      if (read.status().code() == Code::kFailedPrecondition) {
        return FailedPrecondition("port-health: " + read.status().message());
      }
      return Unavailable("port-health: " + read.status().message());
    }
    const std::vector<std::string>& hcas = params.StringList("hcas");
    ASSIGN_OR_RETURN(std::vector<IbPort> ports, Select(std::move(read).value(), hcas, where_));
    if (ports.empty()) return FailedPrecondition("port-health: no port in " + where_);
    Rated rated{params.Double("ratedRateGbps"), static_cast<int>(params.Int("ratedWidth"))};
    std::map<std::string, std::string> details;
    if (rated.rate_gbps == 0) {
      for (const IbPort& port : ports) rated.rate_gbps = std::max(rated.rate_gbps, port.rate_gbps);
      details["ratedRate"] = Number(rated.rate_gbps) + " Gb/sec, the fastest port here";
    } else {
      details["ratedRate"] = Number(rated.rate_gbps) + " Gb/sec, ratedRateGbps";
    }
    if (rated.width == 0) {
      for (const IbPort& port : ports) rated.width = std::max(rated.width, port.width);
      details["ratedWidth"] = std::to_string(rated.width) + " lanes, the widest port here";
    } else {
      details["ratedWidth"] = std::to_string(rated.width) + " lanes, ratedWidth";
    }
    std::string names;
    for (const IbPort& port : ports) Append(&names, port.Name());
    details["ports"] = std::to_string(ports.size()) + " (" + names + ")";
    fabric::PortReader selected = [read = read_, hcas,
                                   where = where_]() -> Result<std::vector<IbPort>> {
      ASSIGN_OR_RETURN(std::vector<IbPort> now, read());
      std::vector<IbPort> out;
      for (IbPort& port : now) {
        if (hcas.empty() || std::find(hcas.begin(), hcas.end(), port.hca) != hcas.end()) {
          out.push_back(std::move(port));
        }
      }
      return out;
    };
    return std::unique_ptr<TestRun>(
        std::make_unique<PortHealthRun>(std::move(selected), std::move(ports), rated,
                                        params.Double("intervalSeconds"), std::move(details)));
  }

 private:
  fabric::PortReader read_;
  std::string where_;
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakePortHealthTestWith(fabric::PortReader read, std::string where) {
  return std::make_unique<PortHealthTest>(std::move(read), std::move(where));
}

std::unique_ptr<Test> MakePortHealthTest() {
  std::shared_ptr<const config::HostFs> fs = config::RealHostFs();
  return MakePortHealthTestWith([fs] { return fabric::ReadIbPorts(*fs, "/sys"); },
                                "/sys/class/infiniband");
}

}  // namespace perfgate::kernels
