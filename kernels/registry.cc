#include "kernels/registry.h"

#include "kernels/test_factories.h"
#include "kernels/workloads/workload_factories.h"
#ifdef PERFGATE_TEST_FIXTURES
#include "kernels/fixtures/fixtures.h"
#endif

namespace perfgate::kernels {
namespace {

// The one explicit list. Order is the order of `perfgate-worker list`.
const std::vector<std::unique_ptr<Test>>& Registry() {
  static const auto* tests = [] {
    auto* v = new std::vector<std::unique_ptr<Test>>();
    v->push_back(MakeHostStreamTest());
    v->push_back(MakeHbmStreamTest());
    v->push_back(MakeGemmTest());
    v->push_back(MakeH2dD2hTest());
    v->push_back(MakeP2pTest());
    v->push_back(MakeBurnTest());
    v->push_back(MakeHealthTest());
    v->push_back(MakeConfigTest());
    v->push_back(MakeMemtestTest());
    v->push_back(MakePowerTest());
    v->push_back(MakeConsistencyTest());
    v->push_back(MakePortHealthTest());
    v->push_back(MakeFabricTopologyTest());
    v->push_back(MakeNcclAllReduceTest());
    v->push_back(MakeNcclAllGatherTest());
    v->push_back(MakeNcclReduceScatterTest());
    v->push_back(MakeNcclAllToAllTest());
    v->push_back(MakeNcclBroadcastTest());
    v->push_back(MakeNcclSendRecvTest());
    v->push_back(MakeNcclRailsTest());
    v->push_back(MakeTrainingStepTest());
    v->push_back(MakeDecodeStepTest());
    v->push_back(MakeSequenceSearchTest());
#ifdef PERFGATE_TEST_FIXTURES
    v->push_back(MakeSyntheticTest());
    v->push_back(MakeNcclCpuLoopbackTest());
    v->push_back(MakeNcclRailsCpuLoopbackTest());
#endif
    return v;
  }();
  return *tests;
}

}  // namespace

std::vector<const Test*> AllTests(bool include_fixtures) {
  std::vector<const Test*> out;
  for (const auto& t : Registry()) {
    if (t->Info().fixture && !include_fixtures) continue;
    out.push_back(t.get());
  }
  return out;
}

std::map<std::string, nccl::RailBackend> RailBackends() {
  std::map<std::string, nccl::RailBackend> out = {{"nccl", nccl::NcclRailBackend()}};
#ifdef PERFGATE_TEST_FIXTURES
  out["cpu-loopback"] = nccl::CpuLoopbackRailBackend();
#endif
  return out;
}

const Test* FindTest(std::string_view type, bool include_fixtures) {
  for (const Test* t : AllTests(include_fixtures)) {
    if (t->Info().type == type) return t;
  }
  return nullptr;
}

}  // namespace perfgate::kernels
