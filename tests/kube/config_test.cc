#include "kube/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace perfgate::kube {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// base64 of "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"
constexpr char kCaB64[] =
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCi0tLS0tRU5E"
    "IENFUlRJRklDQVRFLS0tLS0K";

std::string GoodKubeconfig() {
  return std::string(R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: other
  cluster:
    server: https://other:6443
- name: lab
  cluster:
    server: https://lab.example:6443/
    certificate-authority-data: )") +
         kCaB64 + R"(
contexts:
- name: prod
  context:
    cluster: other
    user: admin
- name: dev
  context:
    cluster: lab
    user: dev-user
    namespace: perfgate-system
users:
- name: admin
  user:
    client-certificate: certs/admin.crt
    client-key: /abs/admin.key
- name: dev-user
  user:
    token: s3cret
)";
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kubecfg-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path Write(const std::string& name, const std::string& text) const {
    fs::path p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  fs::path path_;
};

TEST(KubeconfigTest, CurrentContextGivesServerCaTokenAndNamespace) {
  auto c = ParseKubeconfig(GoodKubeconfig(), "/home/u/.kube/config", "/home/u/.kube");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://lab.example:6443");  // trailing slash dropped
  EXPECT_EQ(c->caPem, "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n");
  EXPECT_EQ(c->bearerToken, "s3cret");
  EXPECT_EQ(c->defaultNamespace, "perfgate-system");
  EXPECT_FALSE(c->insecureSkipTlsVerify);
  EXPECT_THAT(c->source, HasSubstr("context dev"));
}

TEST(KubeconfigTest, ExplicitContextAndRelativeCertificatePaths) {
  auto c = ParseKubeconfig(GoodKubeconfig(), "/home/u/.kube/config", "/home/u/.kube", "prod");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://other:6443");
  EXPECT_EQ(c->clientCertFile, "/home/u/.kube/certs/admin.crt");
  EXPECT_EQ(c->clientKeyFile, "/abs/admin.key");
  EXPECT_TRUE(c->bearerToken.empty());
}

TEST(KubeconfigTest, InsecureAndTokenFile) {
  std::string text = R"(current-context: c
clusters:
- name: k
  cluster: {server: "https://1.2.3.4", insecure-skip-tls-verify: true}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user: {tokenFile: tok}
)";
  auto c = ParseKubeconfig(text, "/x/cfg", "/x");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->insecureSkipTlsVerify);
  EXPECT_EQ(c->tokenFile, "/x/tok");
}

struct BrokenCase {
  const char* name;
  std::string text;
  std::string expected;  // the whole field-naming part of the message
};

class BrokenKubeconfigTest : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(BrokenKubeconfigTest, ErrorNamesFileAndField) {
  auto c = ParseKubeconfig(GetParam().text, "/x/y", "/x");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("kubeconfig /x/y: " + GetParam().expected));
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  if (pos == std::string::npos) ADD_FAILURE() << "test setup: " << from << " not in config";
  return s.replace(pos, from.size(), to);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BrokenKubeconfigTest,
    ::testing::Values(
        BrokenCase{"ClusterNotFound", Replace(GoodKubeconfig(), "cluster: lab", "cluster: foo"),
                   "contexts[1].context.cluster: cluster \"foo\" not found"},
        BrokenCase{"UserNotFound", Replace(GoodKubeconfig(), "user: dev-user", "user: ghost"),
                   "contexts[1].context.user: user \"ghost\" not found"},
        BrokenCase{"CurrentContextNotFound",
                   Replace(GoodKubeconfig(), "current-context: dev", "current-context: qa"),
                   "current-context: context \"qa\" not found"},
        BrokenCase{"NoCurrentContext",
                   Replace(GoodKubeconfig(), "current-context: dev", "current-context: \"\""),
                   "current-context: not set"},
        BrokenCase{"ServerMissing",
                   Replace(GoodKubeconfig(), "server: https://lab.example:6443/", "foo: bar"),
                   "clusters[1].cluster.server: missing"},
        BrokenCase{"ServerNotUrl",
                   Replace(GoodKubeconfig(), "https://lab.example:6443/", "lab.example"),
                   "clusters[1].cluster.server: \"lab.example\" is not an "
                   "http(s) URL"},
        BrokenCase{"BadBase64", Replace(GoodKubeconfig(), kCaB64, "abc$def"),
                   "clusters[1].cluster.certificate-authority-data: not base64"},
        BrokenCase{"ExecPlugin",
                   Replace(GoodKubeconfig(), "    token: s3cret", "    exec: {command: aws}"),
                   "users[1].user.exec: credential plugins are not supported"},
        BrokenCase{"InsecureNotBool",
                   Replace(GoodKubeconfig(), "    server: https://lab.example:6443/",
                           "    server: https://lab.example:6443/\n    "
                           "insecure-skip-tls-verify: maybe"),
                   "clusters[1].cluster.insecure-skip-tls-verify: must be true "
                   "or false"},
        BrokenCase{"ClustersNotList",
                   "current-context: a\ncontexts:\n- name: a\n  context: "
                   "{cluster: k}\nclusters: {k: 1}\n",
                   "clusters: must be a list"},
        BrokenCase{"YamlSyntax", "current-context: [unclosed\n", "line "}),
    [](const ::testing::TestParamInfo<BrokenCase>& param_info) { return param_info.param.name; });

TEST(KubeconfigTest, CertificateErrorIsAboutTheUserThatIsUsed) {
  // A broken user that the chosen context does not use is not an error.
  std::string text = Replace(GoodKubeconfig(), "    client-key: /abs/admin.key\n", "");
  EXPECT_TRUE(ParseKubeconfig(text, "/x/y", "/x").ok());
  auto prod = ParseKubeconfig(text, "/x/y", "/x", "prod");
  ASSERT_FALSE(prod.ok());
  EXPECT_THAT(prod.status().message(), HasSubstr("users[0].user.client-key"));
}

TEST(KubeconfigTest, MissingFileNamesTheFile) {
  auto c = LoadKubeconfig("/nonexistent/kubeconfig");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kNotFound);
  EXPECT_THAT(c.status().message(), HasSubstr("kubeconfig /nonexistent/kubeconfig"));
}

TEST(KubeconfigTest, LoadsFromFileAndResolvesAgainstItsFolder) {
  TempDir dir;
  std::string text = R"(current-context: c
clusters:
- name: k
  cluster: {server: "https://api:6443", certificate-authority: ca.pem}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user: {token: t}
)";
  auto path = dir.Write("config", text);
  auto c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->caFile, (dir.path() / "ca.pem").string());
}

TEST(InClusterConfigTest, ReadsEnvironmentAndServiceAccountFiles) {
  TempDir dir;
  dir.Write("token", "tok-1\n");
  dir.Write("ca.crt", "pem");
  dir.Write("namespace", "perfgate-system\n");
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto c = InClusterConfig(dir.path());
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->caFile, (dir.path() / "ca.crt").string());
  EXPECT_EQ(c->defaultNamespace, "perfgate-system");
  TokenSource tokens(*c);
  auto t = tokens.Token();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, "tok-1");
}

TEST(InClusterConfigTest, WithoutEnvironmentSaysWhatIsMissing) {
  unsetenv("KUBERNETES_SERVICE_HOST");
  auto c = InClusterConfig("/nonexistent");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("KUBERNETES_SERVICE_HOST"));
}

TEST(TokenSourceTest, RereadsTheFileWhenItRotates) {
  TempDir dir;
  auto path = dir.Write("token", "first-token");
  RestConfig config;
  config.tokenFile = path.string();
  config.bearerToken = "ignored-when-a-file-is-set";
  TokenSource tokens(config);
  EXPECT_EQ(*tokens.Token(), "first-token");
  dir.Write("token", "second-token-longer");
  EXPECT_EQ(*tokens.Token(), "second-token-longer");
  // A rotation that replaces the file is picked up, and a vanished file keeps
  // the last token.
  fs::remove(path);
  EXPECT_EQ(*tokens.Token(), "second-token-longer");
}

TEST(TokenSourceTest, MissingFileAtStartIsUnauthenticatedAndNamesTheFile) {
  RestConfig config;
  config.tokenFile = "/nonexistent/token";
  TokenSource tokens(config);
  auto t = tokens.Token();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kUnauthenticated);
  EXPECT_THAT(t.status().message(), HasSubstr("/nonexistent/token"));
}

}  // namespace
}  // namespace perfgate::kube
