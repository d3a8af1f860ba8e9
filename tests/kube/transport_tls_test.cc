// TLS through the real cpprest transport against a loopback https listener: the server is
// verified against the configured CA unless the config says insecure, and a client certificate
// is presented when configured. The certificates are in tls_test_certs.h.
#include <arpa/inet.h>
#include <cpprest/http_listener.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kube/client.h"
#include "kube/transport.h"
#include "tests/kube/tls_test_certs.h"

namespace perfgate::kube {
namespace {

namespace http = web::http;
namespace ssl = boost::asio::ssl;
using ::testing::HasSubstr;

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

std::string Base64(const std::string& in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

class TlsServer {
 public:
  explicit TlsServer(bool require_client_cert)
      : port_(FreePort()), listener_(Url(), Config(require_client_cert)) {
    listener_.support([](http::http_request req) {
      req.reply(http::status_codes::OK, R"({"kind":"Node","metadata":{"name":"n1"}})",
                "application/json");
    });
    listener_.open().wait();
  }
  ~TlsServer() { listener_.close().wait(); }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string Url() const { return url() + "/"; }
  static http::experimental::listener::http_listener_config Config(bool require_client_cert) {
    http::experimental::listener::http_listener_config c;
    c.set_ssl_context_callback([require_client_cert](ssl::context& ctx) {
      ctx.use_certificate_chain(boost::asio::buffer(std::string(testing::kTestServerCertPem)));
      ctx.use_private_key(boost::asio::buffer(std::string(testing::kTestServerKeyPem)),
                          ssl::context::pem);
      if (require_client_cert) {
        ctx.add_certificate_authority(boost::asio::buffer(std::string(testing::kTestCaPem)));
        ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
      }
    });
    return c;
  }
  int port_;
  http::experimental::listener::http_listener listener_;
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
