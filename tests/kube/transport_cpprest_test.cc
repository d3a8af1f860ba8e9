// The real cpprest transport against a loopback server (kube-sim's, in plain HTTP): a
// chunked watch is delivered event by event, and a watch that goes quiet past the idle timeout
// ends and the reflector reconnects.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "kube/informer.h"
#include "kube/leaderelection.h"
#include "kube/transport.h"
#include "tests/kube-sim/https_server.h"
#include "tests/kube/fakes.h"

namespace perfgate::kube {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

// A port nothing listens on (asked of the kernel, then closed).
int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

std::string Ev(const std::string& type, const std::string& name, const std::string& rv) {
  return Json{{"type", type},
              {"object",
               {{"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}}}}}}
             .dump() +
         "\n";
}

// A loopback API server whose handler is set per test. A handler runs on its connection's
// thread and may stream: each WriteChunk goes out as one chunk.
class LoopbackServer {
 public:
  explicit LoopbackServer(kubesim::HttpHandler handler) {
    const Status started = server_.StartPlain("127.0.0.1", 0, std::move(handler));
    EXPECT_TRUE(started.ok()) << started.ToString();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }

 private:
  kubesim::HttpsServer server_;
};

constexpr char kEmptyPodList[] =
    R"({"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[]})";

TEST(CpprestTransportTest, PlainRequestRoundTrip) {
  LoopbackServer server([](const kubesim::HttpRequest& req, kubesim::HttpResponder& out) {
    std::string target = req.path;
    for (const auto& [k, v] : req.query) {
      target += (target == req.path ? "?" : "&") + k + "=" + v;
    }
    const std::string auth = req.Header("authorization");
    out.Send(409, "application/json", R"({"kind":"Status","reason":"Conflict","message":"m"})",
             {{"Retry-After", "0"},
              {"X-Method", req.method},
              {"X-Path", target},
              {"X-Auth", auth.empty() ? "none" : auth}});
  });
  RestConfig config;
  config.server = server.url();
  auto transport = NewCpprestTransport(config);
  ASSERT_TRUE(transport.ok()) << transport.status().ToString();
  HttpRequest r;
  r.method = "PUT";
  r.path = "/apis/g/v1/things/x?dryRun=All";
  r.headers["Authorization"] = "Bearer t";
  r.body = "{}";
  auto resp = (*transport)->Send(r);
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->status, 409);
  EXPECT_EQ(resp->headers.at("x-method"), "PUT");
  EXPECT_EQ(resp->headers.at("X-Path"), "/apis/g/v1/things/x?dryRun=All");
  EXPECT_EQ(resp->headers.at("X-Auth"), "Bearer t");
  EXPECT_THAT(resp->body, HasSubstr("Conflict"));
}

TEST(CpprestTransportTest, NoServerIsUnavailableAndTheClientNamesTheRequest) {
  RestConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(FreeLoopbackPort());
  auto transport = NewCpprestTransport(config);
  ASSERT_TRUE(transport.ok());
  Client client(config, *transport);
  auto node = client.Get(NodesResource(), "", "n1");
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.status().code(), Code::kUnavailable);
  EXPECT_THAT(node.status().message(), HasSubstr("GET /api/v1/nodes/n1: "));
}

// A server that reads each request and never answers, as one behind a connection a proxy or
// load balancer has silently dropped; the requests are answered when the test ends.
class SilentServer {
 public:
  SilentServer()
      : server_([this](const kubesim::HttpRequest&, kubesim::HttpResponder& out) {
          ended_.WaitFor(60s);
          out.Send(503, "text/plain", "ending");
        }) {}
  ~SilentServer() { ended_.Cancel(); }
  std::string url() const { return server_.url(); }

 private:
  Cancellation ended_;
  LoopbackServer server_;
};

TEST(CpprestTransportTest, ATryTimeoutEndsARequestTheServerNeverAnswers) {
  SilentServer server;
  RestConfig config;
  config.server = server.url();
  auto transport = NewCpprestTransport(config);  // its own default: 30 s
  ASSERT_TRUE(transport.ok());
  RetryOptions retry;
  retry.tryTimeout = 1s;
  Client client(config, *transport, ClientOptions{retry, nullptr});
  auto start = std::chrono::steady_clock::now();
  auto node = client.Get(NodesResource(), "", "n1");
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.status().code(), Code::kDeadlineExceeded) << node.status().ToString();
  EXPECT_THAT(node.status().message(), HasSubstr("GET /api/v1/nodes/n1: "));
  EXPECT_LT(took, 20s) << "the request waited for the transport's 30 s, not its own 1 s";
}

TEST(CpprestTransportTest, ALeaseReadTheServerNeverAnswersFailsWellWithinTheRenewDeadline) {
  SilentServer server;
  RestConfig config;
  config.server = server.url();
  auto transport = NewCpprestTransport(config);
  ASSERT_TRUE(transport.ok());
  auto client = std::make_shared<Client>(config, *transport);
  auto lock = NewLeaseLock(client, "ops", "leader");
  auto start = std::chrono::steady_clock::now();
  auto lease = lock->Get();
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(lease.ok());
  EXPECT_EQ(lease.status().code(), Code::kDeadlineExceeded) << lease.status().ToString();
  // 5 s per try: a renewal's read and write still fit in the 10 s renew deadline.
  EXPECT_LT(took, 9s);
}

TEST(CpprestTransportTest, UnreadableCaFileIsNamed) {
  RestConfig config;
  config.server = "https://127.0.0.1:1";
  config.caFile = "/nonexistent/ca.crt";
  config.source = "kubeconfig /k";
  auto transport = NewCpprestTransport(config);
  ASSERT_FALSE(transport.ok());
  EXPECT_THAT(transport.status().message(),
              HasSubstr("kubeconfig /k: certificate-authority: cannot read "
                        "/nonexistent/ca.crt"));
}

TEST(CpprestTransportTest, WatchEventsArriveOneByOneWhileTheStreamIsOpen) {
  std::promise<void> first_seen;
  auto first_seen_future = first_seen.get_future().share();
  std::atomic<bool> server_waited_ok{false};
  LoopbackServer server(
      [&, first_seen_future](const kubesim::HttpRequest&, kubesim::HttpResponder& out) {
        out.StartChunked(200, "application/json");
        out.WriteChunk(Ev("ADDED", "a", "1"));
        // The second event is written only after the client has decoded the first: this only
        // passes if the transport streams instead of buffering the body.
        server_waited_ok = first_seen_future.wait_for(10s) == std::future_status::ready;
        std::string second = Ev("ADDED", "b", "2");
        out.WriteChunk(second.substr(0, 10));  // split mid-event across chunks
        out.WriteChunk(second.substr(10));
        out.EndChunked();
      });
  RestConfig config;
  config.server = server.url();
  auto transport = NewCpprestTransport(config);
  ASSERT_TRUE(transport.ok());
  Client client(config, *transport);
  std::vector<std::string> names;
  ListOptions o;
  o.timeoutSeconds = 5;
  Status s = client.Watch(
      PodsResource(), "ns", o,
      [&](WatchEvent&& e) {
        names.push_back(e.object["metadata"]["name"]);
        if (names.size() == 1) first_seen.set_value();
        return Status::Ok();
      },
      nullptr);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(server_waited_ok.load());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
}

TEST(CpprestTransportTest, AQuietWatchEndsAtTheIdleTimeoutAndTheInformerReconnects) {
  std::atomic<int> watches{0};
  Cancellation quiet_over;
  LoopbackServer server([&](const kubesim::HttpRequest& req, kubesim::HttpResponder& out) {
    if (req.Query("watch").empty()) {
      out.Send(200, "application/json", kEmptyPodList);
      return;
    }
    const int n = ++watches;
    out.StartChunked(200, "application/json");
    // The first watch then goes silent, longer than the client's 1 s idle timeout, without
    // closing.
    out.WriteChunk(n == 1 ? Ev("ADDED", "a", "6") : Ev("ADDED", "b", "7"));
    quiet_over.WaitFor(10s);
    out.EndChunked();
  });
  RestConfig config;
  config.server = server.url();
  config.qps = 0;
  auto transport = NewCpprestTransport(config);
  ASSERT_TRUE(transport.ok());
  auto client = std::make_shared<Client>(config, *transport);
  InformerOptions o;
  o.reflector.gvr = PodsResource();
  o.reflector.ns = "ns";
  o.reflector.watchIdleTimeout = 1s;
  o.reflector.backoff.initial = 10ms;  // keep the test short; the reconnect is what matters
  o.reflector.backoff.max = 20ms;
  Informer informer(client, o);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(10s));
  ASSERT_TRUE(testing::Eventually([&] { return informer.Size() == 2; }, 15s));
  EXPECT_GE(watches.load(), 2);
  EXPECT_EQ(informer.LastResourceVersion(), "7");
  informer.Stop();
  quiet_over.Cancel();
}

}  // namespace
}  // namespace perfgate::kube

namespace perfgate::kube {
namespace {

TEST(CpprestTransportTest, StopCancelsAnOpenWatchWithoutWaitingForItsTimeout) {
  Cancellation server_done;
  LoopbackServer server([&](const kubesim::HttpRequest& req, kubesim::HttpResponder& out) {
    if (req.Query("watch").empty()) {
      out.Send(200, "application/json", kEmptyPodList);
      return;
    }
    out.StartChunked(200, "application/json");
    out.WriteChunk(Ev("ADDED", "a", "6"));
    server_done.WaitFor(20s);
    out.EndChunked();
  });
  RestConfig config;
  config.server = server.url();
  auto transport = NewCpprestTransport(config);
  ASSERT_TRUE(transport.ok());
  InformerOptions o;
  o.reflector.gvr = PodsResource();
  o.reflector.ns = "ns";
  o.reflector.watchIdleTimeout = 60s;
  Informer informer(std::make_shared<Client>(config, *transport), o);
  informer.Start();
  ASSERT_TRUE(testing::Eventually([&] { return informer.Size() == 1; }));
  auto start = std::chrono::steady_clock::now();
  informer.Stop();
  // Shutdown must not hang on a quiet watch (the idle timeout here is a minute).
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  server_done.Cancel();
}

}  // namespace
}  // namespace perfgate::kube
