#include "kernels/fabric/topology.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include "kernels/fabric/port_health.h"
#include "kernels/test_factories.h"
#include "kernels/unmeasured.h"

namespace perfgate::kernels::fabric {

Result<std::vector<ExpectedRail>> ParseExpectedTopology(const std::vector<std::string>& entries) {
  std::vector<ExpectedRail> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (const std::string& entry : entries) {
    const auto slash = entry.find('/');
    const auto eq = entry.find('=');
    if (slash == std::string::npos || eq == std::string::npos || slash == 0 || eq < slash + 2 ||
        eq + 1 >= entry.size()) {
      return InvalidArgument("expected: \"" + entry + "\" is not NODE/HCA=SWITCH");
    }
    ExpectedRail rail{entry.substr(0, slash), entry.substr(slash + 1, eq - slash - 1),
                      entry.substr(eq + 1)};
    if (!seen.insert({rail.node, rail.hca}).second) {
      return InvalidArgument("expected: " + rail.node + "/" + rail.hca + " is declared twice");
    }
    out.push_back(std::move(rail));
  }
  return out;
}

std::map<std::string, LldpNeighbour> ParseLldpKeyValue(const std::string& text) {
  std::map<std::string, LldpNeighbour> out;
  std::map<std::string, std::string> descr;
  std::istringstream in(text);
  std::string line;
  auto field = [&](const std::string& suffix, std::string* ifname, std::string* value) {
    const auto at = line.find(suffix + "=");
    if (!line.starts_with("lldp.") || at == std::string::npos || at <= 5) return false;
    *ifname = line.substr(5, at - 5);
    *value = line.substr(at + suffix.size() + 1);
    return true;
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string ifname;
    std::string value;
    if (field(".chassis.name", &ifname, &value)) {
      out[ifname].switch_name = value;
    } else if (field(".port.ifname", &ifname, &value)) {
      out[ifname].switch_port = value;
    } else if (field(".port.descr", &ifname, &value)) {
      descr[ifname] = value;
    }
  }
  for (auto& [ifname, n] : out) {
    if (n.switch_port.empty() && descr.contains(ifname)) n.switch_port = descr[ifname];
  }
  return out;
}

std::map<std::string, std::vector<std::string>> HcaInterfaces(const config::HostFs& fs,
                                                              const std::string& sysfs_root,
                                                              const std::vector<IbPort>& ports) {
  std::map<std::string, std::vector<std::string>> out;
  for (const IbPort& port : ports) {
    if (out.contains(port.hca)) continue;
    auto names = fs.List(sysfs_root + "/class/infiniband/" + port.hca + "/device/net");
    if (names.ok() && !names->empty()) out[port.hca] = *names;
  }
  return out;
}

std::string RailCabling::Text(const std::string& node) const {
  std::string text = node + " " + hca;
  std::string where = placement;
  if (!interfaces.empty()) where += (where.empty() ? "" : ", ") + interfaces;
  if (!where.empty()) text += " (" + where + ")";
  text += ": expected " + expected + ", seen " + (seen.empty() ? std::string("nothing") : seen);
  return text;
}

std::vector<RailCabling> CompareTopology(const std::string& node,
                                         const std::vector<ExpectedRail>& expected,
                                         const std::vector<IbPort>& ports,
                                         const std::map<std::string, std::vector<std::string>>& ifs,
                                         const std::map<std::string, LldpNeighbour>& lldp) {
  // This node's own entries, then "*" ones for HCAs it does not name.
  std::map<std::string, std::string> want;
  for (const ExpectedRail& e : expected) {
    if (e.node == node) want[e.hca] = e.switch_name;
  }
  for (const ExpectedRail& e : expected) {
    if (e.node == "*" && !want.contains(e.hca)) want[e.hca] = e.switch_name;
  }
  std::vector<RailCabling> out;
  for (const auto& [hca, sw] : want) {
    RailCabling c;
    c.hca = hca;
    c.expected = sw;
    const IbPort* port = nullptr;
    for (const IbPort& p : ports) {
      if (p.hca == hca) {
        port = &p;
        break;
      }
    }
    if (port == nullptr) {
      c.seen = "no such HCA here";
      c.mismatch = true;
      out.push_back(std::move(c));
      continue;
    }
    c.placement = port->Placement();
    std::set<std::string> switches;
    if (auto it = ifs.find(hca); it != ifs.end()) {
      for (const std::string& name : it->second) {
        c.interfaces += (c.interfaces.empty() ? "" : ", ") + name;
        if (auto n = lldp.find(name); n != lldp.end() && !n->second.switch_name.empty()) {
          switches.insert(n->second.switch_name);
          c.seen += (c.seen.empty() ? "" : ", ") + n->second.switch_name;
          if (!n->second.switch_port.empty()) c.seen += " port " + n->second.switch_port;
        }
      }
    }
    c.mismatch = switches.size() != 1 || !switches.contains(sw);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace perfgate::kernels::fabric

namespace perfgate::kernels {
namespace {

using fabric::RailCabling;

// The outcome is decided in Prepare (the cabling does not change between samples); each sample
// reports it again.
class TopologyRun final : public TestRun {
 public:
  TopologyRun(int mismatches, std::map<std::string, std::string> details)
      : mismatches_(mismatches), details_(std::move(details)) {}
  Result<Sample> RunSample() override {
    return Sample{{"topologyMismatchCount", static_cast<double>(mismatches_)}};
  }
  std::map<std::string, std::string> Details() const override { return details_; }

 private:
  int mismatches_;
  std::map<std::string, std::string> details_;
};

// lldpctl's keyvalue output: from `file`, else from running lldpctl. FailedPrecondition when
// lldpctl is not here.
Result<std::string> LldpText(const std::string& file) {
  if (!file.empty()) {
    std::shared_ptr<const config::HostFs> fs = config::RealHostFs();
    auto text = fs->Read(file);
    if (!text.ok()) return Unavailable("fabric-topology: lldpFile " + text.status().message());
    return *text;
  }
  // NOLINTNEXTLINE(cert-env33-c): a fixed command, no input from the spec
  FILE* pipe = ::popen("lldpctl -f keyvalue 2>/dev/null", "r");
  if (pipe == nullptr) return Unavailable("fabric-topology: cannot run lldpctl");
  std::string text;
  std::array<char, 4096> chunk{};
  std::size_t got = 0;
  while ((got = std::fread(chunk.data(), 1, chunk.size(), pipe)) > 0)
    text.append(chunk.data(), got);
  const int rc = ::pclose(pipe);
  if (rc != 0) {
    return FailedPrecondition(
        "fabric-topology: `lldpctl -f keyvalue` failed (lldpd is not running here, or its "
        "socket is not in the pod): no LLDP neighbours to compare; give lldpFile");
  }
  return text;
}

class TopologyTest final : public Test {
 public:
  TopologyTest(std::shared_ptr<const config::HostFs> fs, std::string sysfs_root,
               std::function<std::string()> node_name)
      : fs_(std::move(fs)), root_(std::move(sysfs_root)), node_name_(std::move(node_name)) {
    info_.type = "fabric-topology";
    info_.description =
        "the cabling as declared: each rail's switch from the node's LLDP neighbours (RoCE), "
        "compared with the spec's expected NODE/HCA=SWITCH; a mismatch names the node, the NIC "
        "and the expected and seen switch";
    info_.scope = Scope::kHost;
    info_.params = {
        ChoiceParam("expected", ParamType::kStringList, "[]",
                    "the declared cabling, NODE/HCA=SWITCH entries (NODE * for every node); "
                    "empty, or nothing for this node: not applicable",
                    {}),
        ChoiceParam("lldpFile", ParamType::kString, "",
                    "a file of `lldpctl -f keyvalue` output (an agent's); empty: run lldpctl "
                    "here",
                    {}),
    };
    info_.metrics = {MetricInfo{"topologyMismatchCount", "count", false,
                                "declared rails whose switch differs from the one seen, or that "
                                "see none (each named in counted.topologyMismatchCount)"}};
  }

  const TestInfo& Info() const override { return info_; }
  double SampleSeconds(const Params& /*params*/, int /*gpus*/) const override { return 0.01; }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& /*target*/) const override {
    ASSIGN_OR_RETURN(std::vector<fabric::ExpectedRail> expected,
                     fabric::ParseExpectedTopology(params.StringList("expected")));
    const std::string node = node_name_();
    bool mine = false;
    for (const auto& e : expected) mine = mine || e.node == node || e.node == "*";
    if (!mine) {
      return FailedPrecondition("fabric-topology: no rail of node " + node +
                                " is declared in expected");
    }
    auto ports = fabric::ReadIbPorts(*fs_, root_);
    if (!ports.ok()) {
      if (ports.status().code() == Code::kFailedPrecondition) {
        return FailedPrecondition("fabric-topology: " + ports.status().message());
      }
      return Unavailable("fabric-topology: " + ports.status().message());
    }
    ASSIGN_OR_RETURN(std::string lldp_text, LldpText(params.String("lldpFile")));
    const auto cabling =
        fabric::CompareTopology(node, expected, *ports, fabric::HcaInterfaces(*fs_, root_, *ports),
                                fabric::ParseLldpKeyValue(lldp_text));
    std::map<std::string, std::string> details;
    std::string counted;
    int mismatches = 0;
    for (const RailCabling& c : cabling) {
      details["rail." + c.hca] = c.Text(node) + (c.mismatch ? " (mismatch)" : "");
      if (!c.mismatch) continue;
      ++mismatches;
      counted += (counted.empty() ? "" : "; ") + c.Text(node);
    }
    if (!counted.empty()) details[CountedKey("topologyMismatchCount")] = counted;
    details["source"] =
        params.String("lldpFile").empty() ? "lldpctl -f keyvalue" : params.String("lldpFile");
    return std::unique_ptr<TestRun>(std::make_unique<TopologyRun>(mismatches, std::move(details)));
  }

 private:
  std::shared_ptr<const config::HostFs> fs_;
  std::string root_;
  std::function<std::string()> node_name_;
  TestInfo info_;
};

std::string NodeName() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read-only
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr && node[0] != '\0') {
    return node;
  }
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) == 0) return host.data();
  return "local";
}

}  // namespace

std::unique_ptr<Test> MakeFabricTopologyTestWith(std::shared_ptr<const config::HostFs> fs,
                                                 std::string sysfs_root,
                                                 std::function<std::string()> node_name) {
  return std::make_unique<TopologyTest>(std::move(fs), std::move(sysfs_root), std::move(node_name));
}

std::unique_ptr<Test> MakeFabricTopologyTest() {
  return MakeFabricTopologyTestWith(config::RealHostFs(), "/sys", NodeName);
}

}  // namespace perfgate::kernels
