// Factory functions of the workload tests, one per file; registry.cc lists them once.
#pragma once

#include <memory>

#include "kernels/test.h"

namespace perfgate::kernels {

std::unique_ptr<Test> MakeTrainingStepTest();    // workloads/training_step.cc
std::unique_ptr<Test> MakeDecodeStepTest();      // workloads/decode_step.cc
std::unique_ptr<Test> MakeSequenceSearchTest();  // workloads/sequence_search.cc

}  // namespace perfgate::kernels
