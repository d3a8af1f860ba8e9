// perfgate-fleet-fixture: writes synthetic node reports (report JSON, one file per node) for the
// browser and CLI tests.
//   perfgate-fleet-fixture DIR NODES FAILING LAGGING        one fleet into DIR
//   perfgate-fleet-fixture --ab DIR NODES UPGRADED NEW_KERNEL HBM_FACTOR
//       the same nodes twice, into DIR/a and DIR/b (DriverUpgrade)
//   perfgate-fleet-fixture --clusters DIR NODES HBM_FACTOR
//       three clusters into DIR/east, DIR/west, DIR/central (ThreeClusters)
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "common/report.h"
#include "tests/cli/fleet_fixture.h"

namespace {

int Write(const std::filesystem::path& dir, const std::vector<perfgate::fleet::NodeReport>& rs) {
  std::filesystem::create_directories(dir);
  for (const auto& r : rs) {
    auto json = perfgate::report::ToJson(r.report);
    if (!json.ok()) {
      std::cerr << json.status().message() << "\n";
      return 1;
    }
    if (auto st = perfgate::report::WriteFileAtomic((dir / (r.node + ".json")).string(), *json);
        !st.ok()) {
      std::cerr << st.message() << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 6 && args[0] == "--ab") {
    const auto pair = perfgate::testing::DriverUpgrade(std::stoi(args[2]), std::stoi(args[3]),
                                                       std::stoi(args[4]), std::stod(args[5]));
    const std::filesystem::path dir = args[1];
    const int rc = Write(dir / "a", pair.a);
    return rc != 0 ? rc : Write(dir / "b", pair.b);
  }
  if (args.size() == 4 && args[0] == "--clusters") {
    const auto all = perfgate::testing::ThreeClusters(std::stoi(args[2]), std::stod(args[3]));
    const std::filesystem::path dir = args[1];
    for (const char* cluster : {"east", "west", "central"}) {
      std::vector<perfgate::fleet::NodeReport> some;
      for (const auto& r : all) {
        if (r.node.rfind(cluster, 0) == 0) some.push_back(r);
      }
      if (const int rc = Write(dir / cluster, some); rc != 0) return rc;
    }
    return 0;
  }
  if (args.size() != 4) {
    std::cerr << "usage: perfgate-fleet-fixture DIR NODES FAILING LAGGING\n"
                 "       perfgate-fleet-fixture --ab DIR NODES UPGRADED NEW_KERNEL HBM_FACTOR\n"
                 "       perfgate-fleet-fixture --clusters DIR NODES HBM_FACTOR\n";
    return 2;
  }
  return Write(args[0], perfgate::testing::Fleet(std::atoi(argv[2]), std::atoi(argv[3]),
                                                 std::atoi(argv[4])));
}
