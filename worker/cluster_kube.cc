// WritePerfResult through the kube client (cluster.h). The GPU bundle builds without it
// (cluster_stub.cc) so that it does not carry cpprest and OpenSSL.
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "kube/client.h"
#include "kube/config.h"
#include "worker/cluster.h"

namespace perfgate::worker {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

}  // namespace

Status WritePerfResult(const ClusterTarget& target, const v1alpha1::Report& report) {
  if (target.resultName.empty()) return InvalidArgument("no PerfResult name (--result)");
  // PERFGATE_SERVICE_ACCOUNT_DIR: the token, ca.crt and namespace where the standard path is
  // not the pod's own (a kubelet that cannot mount per pod there).
  const std::string sa_dir = Env("PERFGATE_SERVICE_ACCOUNT_DIR").empty()
                                 ? "/var/run/secrets/kubernetes.io/serviceaccount"
                                 : Env("PERFGATE_SERVICE_ACCOUNT_DIR");
  ASSIGN_OR_RETURN(kube::RestConfig config, kube::InClusterConfig(sa_dir));
  ClusterTarget t = target;
  if (t.nameSpace.empty()) t.nameSpace = config.defaultNamespace;
  if (t.nameSpace.empty()) return InvalidArgument("no namespace for the PerfResult");
  ASSIGN_OR_RETURN(std::string text, PerfResultJson(t, report));
  ASSIGN_OR_RETURN(auto client, kube::NewClient(config));
  auto created = client->Create({"perfgate.io", "v1alpha1", "perfresults"}, t.nameSpace,
                                nlohmann::json::parse(text));
  if (!created.ok() && created.status().code() != Code::kAlreadyExists) return created.status();
  return Status::Ok();
}

}  // namespace perfgate::worker
