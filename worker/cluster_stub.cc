// WritePerfResult for a worker built without the kube client (the GPU bundle).
#include "worker/cluster.h"

namespace perfgate::worker {

Status WritePerfResult(const ClusterTarget& /*target*/, const v1alpha1::Report& /*report*/,
                       std::string* /*uid*/) {
  return Unimplemented("this perfgate-worker was built without cluster mode (PERFGATE_BUNDLE)");
}

Status WriteDiagnosisConfigMap(const ClusterTarget& /*target*/,
                               const std::string& /*object_json*/) {
  return Unimplemented("this perfgate-worker was built without cluster mode (PERFGATE_BUNDLE)");
}

}  // namespace perfgate::worker
