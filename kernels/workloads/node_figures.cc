#include "kernels/workloads/node_figures.h"

#include <algorithm>

#include "kernels/cuda/gemm.h"
#include "kernels/cuda/hbm_stream.h"

namespace perfgate::kernels::workloads {

Result<Figure> MatmulFigure(double given, int device, gpu::GemmDtype dtype) {
  if (given > 0) return Figure{given, "spec"};
  constexpr std::int64_t kSize = 8192;
  constexpr int kIterations = 5;
  cuda::GemmConfig config;
  config.device = device;
  config.dtype = dtype;
  config.m = kSize;
  config.n = kSize;
  config.k = kSize;
  config.algo_candidates = 2;
  ASSIGN_OR_RETURN(auto runner, cuda::CreateGemmRunner(config));
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    ASSIGN_OR_RETURN(const double seconds, runner->Time(kIterations));
    best = std::max(best, gpu::Tflops(gpu::GemmFlops(kSize, kSize, kSize) * kIterations, seconds));
  }
  std::string name;
  for (const auto& d : gpu::GemmDtypes()) {
    if (d.dtype == dtype) name = std::string(d.name);
  }
  return Figure{best, "measured at set-up: cuBLASLt 8192^3 " + name + " matmul"};
}

Result<Figure> HbmFigure(double given, int device) {
  if (given > 0) return Figure{given, "spec"};
  constexpr std::int64_t kElements = (256LL << 20) / 8;
  cuda::HbmStreamConfig config;
  config.device = device;
  config.elements = kElements;
  ASSIGN_OR_RETURN(auto stream, cuda::CreateHbmStream(config));
  RETURN_IF_ERROR(stream->Reset());
  ASSIGN_OR_RETURN(const cuda::HbmStreamTimings t, stream->RunRounds(3));
  const double triad_bytes = gpu::StreamOpBytes(gpu::kStreamOps[3], kElements, 8);
  const double gbps = gpu::BandwidthGBps(triad_bytes, t.seconds[3] / 3);
  return Figure{gbps, "measured at set-up: hbm-stream triad on 3 x 256 MiB"};
}

}  // namespace perfgate::kernels::workloads
