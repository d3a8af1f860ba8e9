// The one explicit list of tests a worker can run (see registry.cc).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/nccl/rails.h"
#include "kernels/test.h"

namespace perfgate::kernels {

// Every registered test, in the order `perfgate-worker list` shows them. Fixture tests
// (kernels/fixtures/, for the operator's end-to-end tests) are included only when
// `include_fixtures` is set, and exist only in a build with PERFGATE_TEST_FIXTURES=ON.
std::vector<const Test*> AllTests(bool include_fixtures = false);

// nullptr when no test has that type (fixtures are found only when included).
const Test* FindTest(std::string_view type, bool include_fixtures = false);

// What a rail's child process (`perfgate-worker rail-child`, nccl-rails) may run on: "nccl",
// and in a build with fixtures "cpu-loopback" (the CPU stand-in).
std::map<std::string, nccl::RailBackend> RailBackends();

}  // namespace perfgate::kernels
