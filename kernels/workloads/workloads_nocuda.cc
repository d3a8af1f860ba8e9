// workload_backend.h when the build has no CUDA (PERFGATE_CUDA=OFF, the operator's catalog):
// every entry point reports that there is no device.
#include "kernels/workloads/workload_backend.h"

namespace perfgate::kernels::workloads {
namespace {
Status NoCuda() { return Unavailable("no CUDA device: built without CUDA (PERFGATE_CUDA=OFF)"); }
}  // namespace

Result<std::unique_ptr<SwAligner>> CreateSwAligner(int /*device*/,
                                                   const align::SequenceSet& /*queries*/,
                                                   const align::SequenceSet& /*targets*/,
                                                   const align::Scoring& /*scoring*/) {
  return NoCuda();
}

Result<std::unique_ptr<TrainingStepRunner>> CreateTrainingStepRunner(
    const TrainingStepConfig& /*config*/) {
  return NoCuda();
}

Result<std::unique_ptr<DecodeStepRunner>> CreateDecodeStepRunner(
    const DecodeStepConfig& /*config*/) {
  return NoCuda();
}

}  // namespace perfgate::kernels::workloads
