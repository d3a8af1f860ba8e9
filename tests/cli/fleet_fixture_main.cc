// perfgate-fleet-fixture DIR NODES FAILING LAGGING: writes a synthetic fleet's node reports
// (report JSON, one file per node) into DIR, for the report's browser test.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "common/report.h"
#include "tests/cli/fleet_fixture.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: perfgate-fleet-fixture DIR NODES FAILING LAGGING\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  for (const auto& r :
       perfgate::testing::Fleet(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]))) {
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
