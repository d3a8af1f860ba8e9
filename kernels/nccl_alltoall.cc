// nccl-alltoall: rank r sends part p of its array to rank p and receives rank p's part r.
//   S     = count * n * 4 bytes (each rank's whole send buffer; count is NCCL's per-peer count)
//   algbw = S / t
//   busbw = algbw * (n-1)/n     (n-1 of the n parts leave the rank; nccl-tests
//                                doc/PERFORMANCE.md, "AlltoAll")
// Expected result: element p*c + k of rank r holds input(p, r*c + k). NCCL defines no in-place
// alltoall: out of place only.
// With one rank busbw is not reported (it needs two ranks or more); algbw stands alone.
// The sweep, iterations, verification and gang handling are the shared harness's
// (kernels/nccl/harness.h).
#include "kernels/nccl/harness.h"
#include "kernels/tests.h"

namespace perfgate::kernels {

std::unique_ptr<Test> MakeNcclAllToAllTest() {
  return nccl::MakeCollectiveTest(nccl::Collective::kAllToAll, nccl::NcclFactory());
}

}  // namespace perfgate::kernels
