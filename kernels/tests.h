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
// NCCL collectives (one shared harness in kernels/nccl/), one file each.
std::unique_ptr<Test> MakeNcclAllReduceTest();      // nccl_all_reduce.cc
std::unique_ptr<Test> MakeNcclAllGatherTest();      // nccl_all_gather.cc
std::unique_ptr<Test> MakeNcclReduceScatterTest();  // nccl_reduce_scatter.cc
std::unique_ptr<Test> MakeNcclAllToAllTest();       // nccl_alltoall.cc
std::unique_ptr<Test> MakeNcclBroadcastTest();      // nccl_broadcast.cc
std::unique_ptr<Test> MakeNcclSendRecvTest();       // nccl_sendrecv.cc
// Test-only fixture: the NCCL harness on the CPU stand-in (kernels/nccl/cpu_loopback.h), for
// gangs without GPUs; refused unless --enable-fixtures.
std::unique_ptr<Test> MakeNcclCpuLoopbackTest();
// Test-only fixture: samples drawn from a configured distribution (synthetic.cc). The worker
// refuses it unless started with --enable-fixtures, so no real spec passes on invented numbers.
std::unique_ptr<Test> MakeSyntheticTest();

}  // namespace perfgate::kernels
