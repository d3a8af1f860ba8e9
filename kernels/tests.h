// Factory functions of every test, one per file; registry.cc lists them once.
#pragma once

#include <memory>

#include "kernels/test.h"

namespace perfgate::kernels {

std::unique_ptr<Test> MakeHostStreamTest();  // host_stream.cc
std::unique_ptr<Test> MakeHbmStreamTest();   // hbm_stream.cc
std::unique_ptr<Test> MakeGemmTest();        // gemm.cc
std::unique_ptr<Test> MakeH2dD2hTest();      // h2d_d2h.cc
std::unique_ptr<Test> MakeP2pTest();         // p2p.cc
std::unique_ptr<Test> MakeBurnTest();        // burn.cc
std::unique_ptr<Test> MakeHealthTest();      // health.cc
// Test-only fixture: samples drawn from a configured distribution (synthetic.cc). The worker
// refuses it unless started with --enable-fixtures, so no real spec passes on invented numbers.
std::unique_ptr<Test> MakeSyntheticTest();

}  // namespace perfgate::kernels
