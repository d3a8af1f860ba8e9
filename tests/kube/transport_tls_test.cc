// TLS through the real cpprest transport against a loopback https server (kube-sim's): the
// server is verified against the configured CA unless the config says insecure, and a client
// certificate is presented when configured. The certificates are in tls_test_certs.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include "kube/client.h"
#include "kube/transport.h"
#include "tests/kube-sim/https_server.h"
#include "tests/kube/tls_test_certs.h"

namespace perfgate::kube {
namespace {

using ::testing::HasSubstr;

std::string Base64(const std::string& in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// Answers every request with node n1; with `require_client_cert`, only to a client whose
// certificate the test CA signed.
class TlsServer {
 public:
  explicit TlsServer(bool require_client_cert) {
    const Status started = server_.Start(
        "127.0.0.1", 0, testing::kTestServerCertPem, testing::kTestServerKeyPem,
        [](const kubesim::HttpRequest&, kubesim::HttpResponder& out) {
          out.Send(200, "application/json", R"({"kind":"Node","metadata":{"name":"n1"}})");
        },
        require_client_cert ? testing::kTestCaPem : "");
    EXPECT_TRUE(started.ok()) << started.ToString();
  }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(server_.port()); }

 private:
  kubesim::HttpsServer server_;
};

Result<HttpResponse> GetNode(const RestConfig& config) {
  auto transport = NewCpprestTransport(config);
  if (!transport.ok()) return transport.status();
  HttpRequest r;
  r.method = "GET";
  r.path = "/api/v1/nodes/n1";
  return (*transport)->Send(r);
}

TEST(TlsTransportTest, ServerIsVerifiedAgainstTheConfiguredCa) {
  TlsServer server(false);
  RestConfig config;
  config.server = server.url();
  config.caPem = testing::kTestCaPem;
  auto r = GetNode(config);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

TEST(TlsTransportTest, AServerOutsideTheTrustedCasIsRefused) {
  TlsServer server(false);
  RestConfig config;
  config.server = server.url();  // no CA: the system store, which does not know the test CA
  auto r = GetNode(config);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
}

TEST(TlsTransportTest, InsecureSkipTlsVerifyAcceptsAnyServer) {
  TlsServer server(false);
  RestConfig config;
  config.server = server.url();
  config.insecureSkipTlsVerify = true;
  auto r = GetNode(config);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

TEST(TlsTransportTest, ClientCertificateIsPresentedWhenConfigured) {
  TlsServer server(true);
  RestConfig config;
  config.server = server.url();
  config.caPem = testing::kTestCaPem;
  EXPECT_FALSE(GetNode(config).ok());  // the server insists on a client certificate
  config.clientCertPem = testing::kTestClientCertPem;
  config.clientKeyPem = testing::kTestClientKeyPem;
  auto r = GetNode(config);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

TEST(TlsTransportTest, KubeconfigToClientOverTls) {
  TlsServer server(true);
  std::string kubeconfig =
      "current-context: c\nclusters:\n- name: k\n  cluster:\n    server: " + server.url() +
      "\n    certificate-authority-data: " + Base64(testing::kTestCaPem) +
      "\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
      "users:\n- name: u\n  user:\n    client-certificate-data: " +
      Base64(testing::kTestClientCertPem) +
      "\n    client-key-data: " + Base64(testing::kTestClientKeyPem) + "\n";
  auto config = ParseKubeconfig(kubeconfig, "test-kubeconfig", "/");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto client = NewClient(*config);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto node = (*client)->Get(NodesResource(), "", "n1");
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ((*node)["metadata"]["name"], "n1");
}

TEST(TlsTransportTest, BrokenClientKeyIsReportedWhenTheTransportIsMade) {
  RestConfig config;
  config.server = "https://127.0.0.1:1";
  config.clientCertPem = testing::kTestClientCertPem;
  config.clientKeyPem = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n";
  config.source = "kubeconfig /k";
  auto transport = NewCpprestTransport(config);
  ASSERT_FALSE(transport.ok());
  EXPECT_THAT(transport.status().message(), HasSubstr("kubeconfig /k: client-key:"));
}

}  // namespace
}  // namespace perfgate::kube
