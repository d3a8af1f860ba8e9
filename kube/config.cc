#include "kube/config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

namespace perfgate::kube {
namespace {

namespace fs = std::filesystem;

Result<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("cannot read {}", path.string()));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

Result<std::string> DecodeBase64(std::string_view in) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::array<int, 256> table{};
  table.fill(-1);
  for (size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int>(i);
  }
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
    int v = table[static_cast<unsigned char>(c)];
    if (v < 0) return InvalidArgument(fmt::format("not base64 (character '{}')", c));
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

// Field access with errors that name the field path.
class Fields {
 public:
  explicit Fields(std::string file) : file_(std::move(file)) {}

  Status Error(const std::string& field, const std::string& what) const {
    return InvalidArgument(fmt::format("kubeconfig {}: {}: {}", file_, field, what));
  }

  // A string field; "" when absent. Errors when present but not a scalar.
  Result<std::string> String(const YAML::Node& parent, const std::string& parent_path,
                             const char* key) const {
    YAML::Node n = parent[key];
    if (!n || n.IsNull()) return std::string();
    if (!n.IsScalar()) return Error(Join(parent_path, key), "must be a string");
    return n.Scalar();
  }

  Result<bool> Bool(const YAML::Node& parent, const std::string& parent_path,
                    const char* key) const {
    YAML::Node n = parent[key];
    if (!n || n.IsNull()) return false;
    bool value = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, value)) {
      return Error(Join(parent_path, key), "must be true or false");
    }
    return value;
  }

  // Finds `name` in a named list (clusters, contexts, users); returns the inner
  // map (list[i].<inner>) and its path.
  Result<std::pair<YAML::Node, std::string>> Named(const YAML::Node& root, const char* list,
                                                   const char* inner, const std::string& name,
                                                   const std::string& referrer,
                                                   const char* kind) const {
    YAML::Node seq = root[list];
    if (seq && !seq.IsNull() && !seq.IsSequence()) return Error(list, "must be a list");
    if (seq && seq.IsSequence()) {
      for (size_t i = 0; i < seq.size(); ++i) {
        std::string path = fmt::format("{}[{}]", list, i);
        if (!seq[i].IsMap()) return Error(path, "must be a mapping");
        ASSIGN_OR_RETURN(std::string n, String(seq[i], path, "name"));
        if (n != name) continue;
        YAML::Node body = seq[i][inner];
        std::string body_path = Join(path, inner);
        if (!body || !body.IsMap()) return Error(body_path, "missing or not a mapping");
        return std::make_pair(body, body_path);
      }
    }
    return Error(referrer, fmt::format("{} \"{}\" not found", kind, name));
  }

  static std::string Join(const std::string& a, const char* b) {
    return a.empty() ? std::string(b) : a + "." + b;
  }

 private:
  std::string file_;
};

std::string ResolvePath(const fs::path& base_dir, const std::string& p) {
  if (p.empty()) return p;
  fs::path path(p);
  if (path.is_relative()) path = base_dir / path;
  return path.lexically_normal().string();
}

// A base64 `*-data` field (a PEM inline), decoded; empty when absent. One that does not decode
// is named.
Result<std::string> PemField(Fields& f, const YAML::Node& node, const std::string& path,
                             const char* key) {
  ASSIGN_OR_RETURN(std::string data, f.String(node, path, key));
  if (data.empty()) return std::string();
  auto pem = DecodeBase64(data);
  if (!pem.ok()) return f.Error(Fields::Join(path, key), pem.status().message());
  return *pem;
}

// The cluster entry `cl_node` (at `cl_path`): the server's URL, its CA, whether TLS is checked.
Status ReadCluster(Fields& f, const YAML::Node& cl_node, const std::string& cl_path,
                   const fs::path& base_dir, RestConfig* config) {
  ASSIGN_OR_RETURN(config->server, f.String(cl_node, cl_path, "server"));
  if (config->server.empty()) return f.Error(cl_path + ".server", "missing");
  if (config->server.rfind("https://", 0) != 0 && config->server.rfind("http://", 0) != 0) {
    return f.Error(cl_path + ".server",
                   fmt::format("\"{}\" is not an http(s) URL", config->server));
  }
  while (!config->server.empty() && config->server.back() == '/') config->server.pop_back();
  ASSIGN_OR_RETURN(config->caPem, PemField(f, cl_node, cl_path, "certificate-authority-data"));
  ASSIGN_OR_RETURN(std::string ca_file, f.String(cl_node, cl_path, "certificate-authority"));
  config->caFile = ResolvePath(base_dir, ca_file);
  ASSIGN_OR_RETURN(config->insecureSkipTlsVerify,
                   f.Bool(cl_node, cl_path, "insecure-skip-tls-verify"));
  return Status::Ok();
}

// The user entry `u` (at `u_path`): a token (or its file) or a client certificate and key
// (inline or files); credential plugins are refused.
Status ReadUser(Fields& f, const YAML::Node& u, const std::string& u_path, const fs::path& base_dir,
                RestConfig* config) {
  ASSIGN_OR_RETURN(config->bearerToken, f.String(u, u_path, "token"));
  ASSIGN_OR_RETURN(std::string token_file, f.String(u, u_path, "tokenFile"));
  config->tokenFile = ResolvePath(base_dir, token_file);
  ASSIGN_OR_RETURN(config->clientCertPem, PemField(f, u, u_path, "client-certificate-data"));
  ASSIGN_OR_RETURN(config->clientKeyPem, PemField(f, u, u_path, "client-key-data"));
  ASSIGN_OR_RETURN(std::string cert_file, f.String(u, u_path, "client-certificate"));
  config->clientCertFile = ResolvePath(base_dir, cert_file);
  ASSIGN_OR_RETURN(std::string key_file, f.String(u, u_path, "client-key"));
  config->clientKeyFile = ResolvePath(base_dir, key_file);
  bool has_cert = !config->clientCertPem.empty() || !config->clientCertFile.empty();
  bool has_key = !config->clientKeyPem.empty() || !config->clientKeyFile.empty();
  if (has_cert != has_key) {
    return f.Error(u_path + (has_cert ? ".client-key" : ".client-certificate"),
                   "a client certificate needs both a certificate and a key");
  }
  if (u["exec"] || u["auth-provider"]) {
    // Deliberately unsupported: running credential plugins from an operator
    // is a security decision; say so rather than failing later with a 401.
    return f.Error(u_path + (u["exec"] ? ".exec" : ".auth-provider"),
                   "credential plugins are not supported; use a token or "
                   "client certificate");
  }
  return Status::Ok();
}

}  // namespace

Result<RestConfig> ParseKubeconfig(const std::string& yaml_text, const std::string& name,
                                   const fs::path& base_dir, const std::string& context) {
  Fields f(name);
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("kubeconfig {}: line {} column {}: {}", name,
                                       e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (!root.IsMap()) return f.Error("(document)", "not a kubeconfig mapping");

  try {
    std::string context_name = context;
    std::string context_ref = "current-context";
    if (context_name.empty()) {
      ASSIGN_OR_RETURN(context_name, f.String(root, "", "current-context"));
      if (context_name.empty()) return f.Error("current-context", "not set and no context given");
    } else {
      context_ref = "(--context)";
    }
    ASSIGN_OR_RETURN(auto ctx,
                     f.Named(root, "contexts", "context", context_name, context_ref, "context"));
    const auto& [ctx_node, ctx_path] = ctx;
    ASSIGN_OR_RETURN(std::string cluster_name, f.String(ctx_node, ctx_path, "cluster"));
    if (cluster_name.empty()) return f.Error(ctx_path + ".cluster", "missing");
    ASSIGN_OR_RETURN(std::string user_name, f.String(ctx_node, ctx_path, "user"));

    RestConfig config;
    config.source = fmt::format("kubeconfig {} (context {})", name, context_name);
    ASSIGN_OR_RETURN(config.defaultNamespace, f.String(ctx_node, ctx_path, "namespace"));

    ASSIGN_OR_RETURN(auto cl, f.Named(root, "clusters", "cluster", cluster_name,
                                      ctx_path + ".cluster", "cluster"));
    const auto& [cl_node, cl_path] = cl;
    RETURN_IF_ERROR(ReadCluster(f, cl_node, cl_path, base_dir, &config));

    if (!user_name.empty()) {
      ASSIGN_OR_RETURN(auto us,
                       f.Named(root, "users", "user", user_name, ctx_path + ".user", "user"));
      const auto& [u, u_path] = us;
      RETURN_IF_ERROR(ReadUser(f, u, u_path, base_dir, &config));
    }
    if (config.server.rfind("http://", 0) == 0 && !config.bearerToken.empty()) {
      // Sending a bearer token in clear text is what an attacker on the path
      // hopes for.
      return f.Error(cl_path + ".server", "a bearer token needs an https:// server");
    }
    return config;
  } catch (const YAML::Exception& e) {
    return f.Error("(document)", e.what());
  }
}

Result<RestConfig> LoadKubeconfig(const fs::path& path, const std::string& context) {
  auto text = ReadFile(path);
  if (!text.ok()) {
    return NotFound(fmt::format("kubeconfig {}: cannot read the file", path.string()));
  }
  fs::path base = path.has_parent_path() ? path.parent_path() : fs::path(".");
  return ParseKubeconfig(*text, path.string(), base, context);
}

Result<RestConfig> InClusterConfig(const fs::path& sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return FailedPrecondition(
        "in-cluster config: KUBERNETES_SERVICE_HOST and "
        "KUBERNETES_SERVICE_PORT must be set");
  }
  RestConfig config;
  std::string h(host);
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6 literal
  config.server = fmt::format("https://{}:{}", h, port);
  config.tokenFile = (sa_dir / "token").string();
  config.caFile = (sa_dir / "ca.crt").string();
  config.source = "in-cluster";
  std::error_code ec;
  if (!fs::exists(config.tokenFile, ec)) {
    return NotFound(fmt::format("in-cluster config: token file {} not found", config.tokenFile));
  }
  if (!fs::exists(config.caFile, ec)) {
    return NotFound(fmt::format("in-cluster config: CA file {} not found", config.caFile));
  }
  if (auto ns = ReadFile(sa_dir / "namespace"); ns.ok()) {
    std::string n = *ns;
    while (!n.empty() && (n.back() == '\n' || n.back() == ' ')) n.pop_back();
    config.defaultNamespace = n;
  }
  return config;
}

Result<RestConfig> LoadDefaultConfig(const std::string& kubeconfig_flag) {
  if (!kubeconfig_flag.empty()) return LoadKubeconfig(kubeconfig_flag);
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::string first(env);
    first = first.substr(0, first.find(':'));
    return LoadKubeconfig(first);
  }
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST"); host != nullptr && *host) {
    return InClusterConfig();
  }
  const char* home = std::getenv("HOME");
  if (home == nullptr) return NotFound("no kubeconfig: set --kubeconfig or KUBECONFIG");
  return LoadKubeconfig(fs::path(home) / ".kube" / "config");
}

TokenSource::TokenSource(const RestConfig& config)
    : static_token_(config.bearerToken), file_(config.tokenFile) {}

Result<std::string> TokenSource::Token() {
  if (file_.empty()) return static_token_;
  std::lock_guard lock(mu_);
  std::error_code ec;
  auto mtime = fs::last_write_time(file_, ec);
  auto size = ec ? 0 : fs::file_size(file_, ec);
  if (ec) {
    // A rotation replaces the file via a symlink swap; between the two a stat
    // can fail. Keep the last token rather than failing the request.
    if (loaded_) return cached_;
    return Status(Code::kUnauthenticated,
                  fmt::format("token file {}: {}", file_.string(), ec.message()));
  }
  if (!loaded_ || mtime != mtime_ || size != size_) {
    auto text = ReadFile(file_);
    if (!text.ok()) {
      if (loaded_) return cached_;
      return Status(Code::kUnauthenticated,
                    fmt::format("token file {}: cannot read", file_.string()));
    }
    std::string t = *text;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    cached_ = std::move(t);
    mtime_ = mtime;
    size_ = size;
    loaded_ = true;
  }
  return cached_;
}

}  // namespace perfgate::kube
