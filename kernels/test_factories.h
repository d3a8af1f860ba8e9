// Factory functions of every product test, one per file; registry.cc lists them once.
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
std::unique_ptr<Test> MakeConfigTest();      // config.cc
std::unique_ptr<Test> MakeMemtestTest();     // memtest.cc
std::unique_ptr<Test> MakePowerTest();       // power.cc
std::unique_ptr<Test> MakePortHealthTest();  // fabric/port_health.cc
// The rails' cabling as declared, against the LLDP neighbours the node sees.
std::unique_ptr<Test> MakeFabricTopologyTest();  // fabric/topology.cc
// Silent data corruption: the node's GPUs' outputs compared with each other.
std::unique_ptr<Test> MakeConsistencyTest();  // consistency.cc
// NCCL collectives (one shared harness in kernels/nccl/), one file each.
std::unique_ptr<Test> MakeNcclAllReduceTest();      // nccl/all_reduce.cc
std::unique_ptr<Test> MakeNcclAllGatherTest();      // nccl/all_gather.cc
std::unique_ptr<Test> MakeNcclReduceScatterTest();  // nccl/reduce_scatter.cc
std::unique_ptr<Test> MakeNcclAllToAllTest();       // nccl/alltoall.cc
std::unique_ptr<Test> MakeNcclBroadcastTest();      // nccl/broadcast.cc
std::unique_ptr<Test> MakeNcclSendRecvTest();       // nccl/sendrecv.cc
// The gang's network rail by rail: NCCL pinned to one HCA per child process.
std::unique_ptr<Test> MakeNcclRailsTest();  // nccl/rails.cc
// The fixture tests (synthetic, nccl-cpu-loopback) are declared in kernels/fixtures/fixtures.h.

}  // namespace perfgate::kernels
