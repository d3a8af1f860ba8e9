// WritePerfResult through the kube client (cluster.h). The GPU bundle builds without it
// (cluster_stub.cc) so that it does not carry cpprest and OpenSSL.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>

#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "kube/client.h"
#include "kube/config.h"
#include "worker/cluster.h"

namespace perfgate::worker {
namespace {

// The in-cluster client and the namespace to write in.
Result<std::pair<std::shared_ptr<kube::Client>, std::string>> Connect(const ClusterTarget& target) {
  const std::string sa_dir = EnvVar("PERFGATE_SERVICE_ACCOUNT_DIR").empty()
                                 ? "/var/run/secrets/kubernetes.io/serviceaccount"
                                 : EnvVar("PERFGATE_SERVICE_ACCOUNT_DIR");
  ASSIGN_OR_RETURN(kube::RestConfig config, kube::InClusterConfig(sa_dir));
  std::string ns = target.name_space.empty() ? config.defaultNamespace : target.name_space;
  ASSIGN_OR_RETURN(auto client, kube::NewClient(config));
  return std::make_pair(std::move(client), ns);
}

Status CreateRetrying(kube::Client& client, const kube::GroupVersionResource& gvr,
                      const std::string& ns, const nlohmann::json& object,
                      std::chrono::seconds timeout, const std::string& what, std::string* uid) {
  auto attempt = [&]() -> Status {
    auto created = client.Create(gvr, ns, object);
    if (!created.ok()) return created.status();
    if (uid != nullptr)
      *uid = created->value("metadata", nlohmann::json::object()).value("uid", "");
    return Status::Ok();
  };
  auto on_retry = [&](int n, const Status& error, std::chrono::milliseconds wait) {
    std::cerr << "perfgate-worker: writing " << what << " failed (attempt " << n
              << "): " << error.message() << "; retrying in " << wait.count() << " ms\n";
  };
  const uint64_t seed = std::hash<std::string>{}(what) ^ static_cast<uint64_t>(getpid());
  return RetryResultWrite(attempt, timeout, WriteBackoff{}, *RealClock(), seed, on_retry);
}

}  // namespace

Status WriteDiagnosisConfigMap(const ClusterTarget& target, const std::string& object_json) {
  ASSIGN_OR_RETURN(auto connected, Connect(target));
  nlohmann::json object = nlohmann::json::parse(object_json, nullptr, false);
  if (object.is_discarded()) return InvalidArgument("the diagnosis ConfigMap is not JSON");
  object["metadata"]["namespace"] = connected.second;
  // A bundle is worth less than the result: a short wait, not the result's.
  return CreateRetrying(*connected.first, {"", "v1", "configmaps"}, connected.second, object,
                        std::min(target.result_write_timeout, std::chrono::seconds(60)),
                        "ConfigMap " + object["metadata"].value("name", ""), nullptr);
}

Status WritePerfResult(const ClusterTarget& target, const v1alpha1::Report& report,
                       std::string* uid) {
  if (target.result_name.empty()) return InvalidArgument("no PerfResult name (--result)");
  // PERFGATE_SERVICE_ACCOUNT_DIR: the token, ca.crt and namespace where the standard path is
  // not the pod's own (a kubelet that cannot mount per pod there).
  const std::string sa_dir = EnvVar("PERFGATE_SERVICE_ACCOUNT_DIR").empty()
                                 ? "/var/run/secrets/kubernetes.io/serviceaccount"
                                 : EnvVar("PERFGATE_SERVICE_ACCOUNT_DIR");
  ASSIGN_OR_RETURN(kube::RestConfig config, kube::InClusterConfig(sa_dir));
  ClusterTarget t = target;
  if (t.name_space.empty()) t.name_space = config.defaultNamespace;
  if (t.name_space.empty()) return InvalidArgument("no namespace for the PerfResult");
  ASSIGN_OR_RETURN(std::string text, PerfResultJson(t, report));
  const nlohmann::json object = nlohmann::json::parse(text);
  ASSIGN_OR_RETURN(auto client, kube::NewClient(config));
  auto attempt = [&]() -> Status {
    auto created = client->Create({"perfgate.io", "v1alpha1", "perfresults"}, t.name_space, object);
    if (!created.ok()) return created.status();
    if (uid != nullptr) {
      *uid = created->value("metadata", nlohmann::json::object()).value("uid", "");
    }
    return Status::Ok();
  };
  auto on_retry = [&](int n, const Status& error, std::chrono::milliseconds wait) {
    std::cerr << "perfgate-worker: writing PerfResult " << t.result_name << " failed (attempt " << n
              << "): " << error.message() << "; retrying in " << wait.count() << " ms\n";
  };
  const uint64_t seed = std::hash<std::string>{}(t.result_name) ^ static_cast<uint64_t>(getpid());
  return RetryResultWrite(attempt, t.result_write_timeout, WriteBackoff{}, *RealClock(), seed,
                          on_retry);
}

}  // namespace perfgate::worker
