// Where the API server is and how to authenticate to it: in-cluster (service
// account) or a kubeconfig file. Parsing errors name the file and the field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.h"

namespace perfgate::kube {

struct RestConfig {
  std::string server;  // "https://10.0.0.1:443" (no trailing slash)
  // Trust: PEM bundle in memory (from certificate-authority-data) or a file
  // (in-cluster CA, certificate-authority). Empty both: the system's trust
  // store.
  std::string caPem;
  std::string caFile;
  bool insecureSkipTlsVerify = false;
  // Client certificate authentication (PEM, in memory or file).
  std::string clientCertPem;
  std::string clientCertFile;
  std::string clientKeyPem;
  std::string clientKeyFile;
  // Bearer token; when tokenFile is set the file wins and is re-read when it
  // changes (rotation).
  std::string bearerToken;
  std::string tokenFile;
  // Client-side rate limit (client-go's defaults; the operator raises them).
  double qps = 5.0;
  int burst = 10;
  std::string userAgent = "perfgate";
  // Where this config came from, for messages: "kubeconfig /x/y (context foo)"
  // or "in-cluster".
  std::string source;
  // The default namespace of the context (kubeconfig) or of the service account
  // (in-cluster).
  std::string defaultNamespace;
};

// Parses a kubeconfig file and selects `context` (empty: current-context).
// Relative file paths inside it are resolved against the file's folder. Errors
// name the file and the field, e.g. "kubeconfig /x/y:
// contexts[0].context.cluster: cluster \"foo\" not found". Blocking (reads
// files).
Result<RestConfig> LoadKubeconfig(const std::filesystem::path& path,
                                  const std::string& context = "");

// The same from text; `name` stands for the file in messages, `base_dir`
// resolves relative paths.
Result<RestConfig> ParseKubeconfig(const std::string& yaml_text, const std::string& name,
                                   const std::filesystem::path& base_dir,
                                   const std::string& context = "");

// In-cluster config: KUBERNETES_SERVICE_HOST/PORT from the environment, token,
// CA and namespace from `sa_dir` (default
// /var/run/secrets/kubernetes.io/serviceaccount). Blocking (reads files).
Result<RestConfig> InClusterConfig(
    const std::filesystem::path& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// The config controller-runtime would pick: `kubeconfig_flag` if non-empty,
// else $KUBECONFIG (its first entry), else in-cluster when
// KUBERNETES_SERVICE_HOST is set, else ~/.kube/config.
Result<RestConfig> LoadDefaultConfig(const std::string& kubeconfig_flag = "");

// The bearer token of a config, re-reading tokenFile whenever its modification
// time or size changes (service-account tokens rotate about hourly).
// Thread-safe.
class TokenSource {
 public:
  explicit TokenSource(const RestConfig& config);
  // The current token ("" when none). Blocking (may stat and read a small
  // file). Errors name the file. Thread-safe.
  Result<std::string> Token();

 private:
  std::mutex mu_;
  std::string static_token_;
  std::filesystem::path file_;
  std::string cached_;
  std::filesystem::file_time_type mtime_{};
  std::uintmax_t size_ = 0;
  bool loaded_ = false;
};

}  // namespace perfgate::kube
