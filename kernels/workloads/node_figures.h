// The node's part figures the speed-of-light model needs, when the spec gives none: measured
// on this node at set-up, each with a line saying where it came from.
#pragma once

#include <string>

#include "common/result.h"
#include "kernels/cuda/formulas.h"

namespace perfgate::kernels::workloads {

struct Figure {
  double value = 0;
  std::string source;  // "measured at set-up: cuBLASLt 8192^3 bf16" or "spec"
};

// `given` > 0: that value, from the spec. Otherwise the dense matmul TFLOP/s of an
// 8192 x 8192 x 8192 cuBLASLt matmul of `dtype` on `device` (the gemm test's runner), best of
// three timings of 5. Blocking.
Result<Figure> MatmulFigure(double given, int device, gpu::GemmDtype dtype);

// `given` > 0: that value. Otherwise hbm-stream's triad bandwidth on three 256 MiB arrays of
// `device`, averaged over three rounds. Blocking.
Result<Figure> HbmFigure(double given, int device);

}  // namespace perfgate::kernels::workloads
