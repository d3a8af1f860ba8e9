#include "kube/client.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/kube/fakes.h"

namespace perfgate::kube {
namespace {

using ::testing::ElementsAre;
using testing::FakeClock;
using testing::FakeTransport;
using ::testing::HasSubstr;
using testing::Reply;

const GroupVersionResource kPval{"perfgate.io", "v1alpha1", "perfvalidations"};

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return Json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
              {"code", code},     {"reason", reason},   {"message", message}}
      .dump();
}

class ClientTest : public ::testing::Test {
 protected:
  ClientTest() {
    config_.server = "https://api:6443";
    config_.bearerToken = "tok";
    config_.qps = 0;  // unlimited unless a test says otherwise
  }
  Client MakeClient() {
    ClientOptions o;
    o.clock = clock_;
    return Client(config_, transport_, o);
  }

  RestConfig config_;
  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
};

TEST(ResourcePathTest, CoreGroupsNamespacesSubresourcesAndEscaping) {
  EXPECT_EQ(ResourcePath(PodsResource(), "ns", "p", "log"), "/api/v1/namespaces/ns/pods/p/log");
  EXPECT_EQ(ResourcePath(kPval, "", "x", "status"),
            "/apis/perfgate.io/v1alpha1/perfvalidations/x/status");
  EXPECT_EQ(ResourcePath(NodesResource(), ""), "/api/v1/nodes");
  EXPECT_EQ(ResourcePath(PodsResource(), "", "a b"), "/api/v1/pods/a%20b");
}

TEST_F(ClientTest, ConflictOnStatusUpdateCarriesRequestStatusReasonAndMessage) {
  const std::string message =
      "Operation cannot be fulfilled on perfvalidations.perfgate.io \"x\": the "
      "object has been "
      "modified; please apply your changes to the latest version and try again";
  transport_->Expect("PUT", "/apis/perfgate.io/v1alpha1/perfvalidations/x/status",
                     Reply().WithStatus(409).WithBody(StatusBody(409, "Conflict", message)));
  Client client = MakeClient();
  auto r = client.UpdateStatus(kPval, "", Json{{"metadata", {{"name", "x"}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kAborted);
  EXPECT_EQ(r.status().message(),
            "PUT /apis/perfgate.io/v1alpha1/perfvalidations/x/status: 409 "
            "Conflict: " +
                message);
}

TEST_F(ClientTest, HttpStatusesMapToCodes) {
  struct Case {
    const char* method;
    int status;
    const char* reason;
    Code code;
  };
  const Case cases[] = {
      {"GET", 404, "NotFound", Code::kNotFound},
      {"POST", 409, "AlreadyExists", Code::kAlreadyExists},
      {"GET", 410, "Expired", Code::kGone},
      {"GET", 403, "Forbidden", Code::kPermissionDenied},
      {"GET", 401, "Unauthorized", Code::kUnauthenticated},
      {"POST", 422, "Invalid", Code::kInvalidArgument},
      {"POST", 500, "InternalError", Code::kUnavailable},  // a write: not retried
  };
  Client client = MakeClient();
  for (const Case& c : cases) {
    transport_->Expect(
        c.method, "/api/v1/namespaces/ns/pods",
        Reply().WithStatus(c.status).WithBody(StatusBody(c.status, c.reason, "msg")));
    Result<Json> r = std::string(c.method) == "GET"
                         ? client.Get(PodsResource(), "ns", "p")
                         : client.Create(PodsResource(), "ns", Json{{"kind", "Pod"}});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code) << c.status;
    EXPECT_THAT(r.status().message(), HasSubstr(fmt::format("{} {}: msg", c.status, c.reason)));
  }
}

TEST_F(ClientTest, NonStatusErrorBodyIsQuoted) {
  transport_->Expect("GET", "/api/v1/nodes/n1",
                     Reply().WithStatus(502).WithBody("bad gateway html"));
  config_.qps = 0;
  ClientOptions o;
  o.clock = clock_;
  o.retry.maxRetries = 0;
  Client client(config_, transport_, o);
  auto r = client.Get(NodesResource(), "", "n1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "GET /api/v1/nodes/n1: 502 BadGateway: bad gateway html");
}

TEST_F(ClientTest, RetryAfterIsHonouredOn429) {
  Headers h;
  h["Retry-After"] = "3";
  transport_->Expect("GET", "/api/v1/nodes/n1",
                     Reply().WithStatus(429).WithHeaders(h).WithBody(
                         StatusBody(429, "TooManyRequests", "slow down")));
  transport_->Expect("GET", "/api/v1/nodes/n1",
                     Reply().WithStatus(200).WithBody(R"({"metadata":{"name":"n1"}})"));
  Client client = MakeClient();
  auto r = client.Get(NodesResource(), "", "n1");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["metadata"]["name"], "n1");
  EXPECT_THAT(clock_->sleeps(), ElementsAre(std::chrono::seconds(3)));
  EXPECT_EQ(transport_->requests().size(), 2u);
}

TEST_F(ClientTest, RetriesAreBoundedAndTheLastErrorIsReturned) {
  for (int i = 0; i < 5; ++i) {
    transport_->Expect("GET", "/api/v1/nodes", Reply().WithStatus(503).WithBody("down"));
  }
  ClientOptions o;
  o.clock = clock_;
  o.retry.maxRetries = 3;
  Client client(config_, transport_, o);
  auto r = client.Get(NodesResource(), "", "n1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_EQ(transport_->requests().size(), 4u);  // 1 + 3 retries
  // Without Retry-After: 0.5 s doubling.
  EXPECT_THAT(clock_->sleeps(),
              ElementsAre(std::chrono::milliseconds(500), std::chrono::milliseconds(1000),
                          std::chrono::milliseconds(2000)));
}

TEST_F(ClientTest, AWriteIsRetriedOn5xxOnlyWhenTheServerSaysRetryAfter) {
  Headers h;
  h["retry-after"] = "1";  // header names are case-insensitive
  transport_->Expect("POST", "/api/v1/namespaces/ns/pods", Reply().WithStatus(503).WithHeaders(h));
  transport_->Expect("POST", "/api/v1/namespaces/ns/pods",
                     Reply().WithStatus(201).WithBody(R"({"metadata":{"name":"w-abcde"}})"));
  Client client = MakeClient();
  auto r = client.Create(PodsResource(), "ns", Json{{"metadata", {{"generateName", "w-"}}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["metadata"]["name"], "w-abcde");
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(Json::parse(reqs[0].body)["metadata"]["generateName"], "w-");
  EXPECT_EQ(reqs[0].headers.at("content-type"), "application/json");
}

TEST_F(ClientTest, RequestsCarryTheBearerTokenAndItRotates) {
  auto dir =
      std::filesystem::temp_directory_path() / ("kube-client-token-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto file = dir / "token";
  std::ofstream(file) << "one";
  config_.tokenFile = file.string();
  transport_->Expect("GET", "/api/v1/nodes", Reply().WithBody("{}"));
  transport_->Expect("GET", "/api/v1/nodes", Reply().WithBody("{}"));
  Client client = MakeClient();
  ASSERT_TRUE(client.Get(NodesResource(), "", "a").ok());
  std::ofstream(file) << "two-rotated";
  ASSERT_TRUE(client.Get(NodesResource(), "", "a").ok());
  auto reqs = transport_->requests();
  EXPECT_EQ(reqs[0].headers.at("Authorization"), "Bearer one");
  EXPECT_EQ(reqs[1].headers.at("Authorization"), "Bearer two-rotated");
  std::filesystem::remove_all(dir);
}

TEST_F(ClientTest, ListAllFollowsContinueAndKeepsTheSnapshotVersion) {
  transport_->Expect("GET", "/api/v1/pods?labelSelector=app%3Dw&limit=2",
                     Reply().WithBody(
                         R"({"kind":"PodList","metadata":{"resourceVersion":"7","continue":"c1"},
                       "items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})"));
  transport_->Expect("GET", "/api/v1/pods?labelSelector=app%3Dw&limit=2&continue=c1",
                     Reply().WithBody(R"({"kind":"PodList","metadata":{"resourceVersion":"7"},
                       "items":[{"metadata":{"name":"c"}}]})"));
  Client client = MakeClient();
  ListOptions o;
  o.labelSelector = "app=w";
  o.limit = 2;
  auto list = client.ListAll(PodsResource(), "", o);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ((*list)["items"].size(), 3u);
  EXPECT_EQ((*list)["items"][2]["metadata"]["name"], "c");
  EXPECT_EQ((*list)["metadata"]["resourceVersion"], "7");
  EXPECT_FALSE((*list)["metadata"].contains("continue"));
  EXPECT_EQ(transport_->unused(), 0u);
}

TEST_F(ClientTest, ListAllFallsBackToOneListWhenTheContinueTokenExpires) {
  transport_->Expect("GET", "/api/v1/pods?limit=1",
                     Reply().WithBody(R"({"metadata":{"resourceVersion":"7","continue":"c1"},
                                      "items":[{"metadata":{"name":"a"}}]})"));
  transport_->Expect("GET", "/api/v1/pods?limit=1&continue=c1",
                     Reply().WithStatus(410).WithBody(StatusBody(410, "Expired", "too old")));
  transport_->Expect("GET", "/api/v1/pods", Reply().WithBody(R"({"metadata":{"resourceVersion":"9"},
                                      "items":[{"metadata":{"name":"a"}},
                                               {"metadata":{"name":"b"}}]})"));
  Client client = MakeClient();
  ListOptions o;
  o.limit = 1;
  auto list = client.ListAll(PodsResource(), "", o);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ((*list)["items"].size(), 2u);
  EXPECT_EQ((*list)["metadata"]["resourceVersion"], "9");
  EXPECT_EQ(transport_->requests().back().path, "/api/v1/pods");
}

TEST_F(ClientTest, DeleteSendsPropagationAndPreconditions) {
  transport_->Expect("DELETE", "/api/v1/namespaces/ns/pods/p", Reply().WithBody("{}"));
  Client client = MakeClient();
  DeleteOptions d;
  d.propagationPolicy = "Foreground";
  d.preconditionUid = "u-1";
  d.preconditionResourceVersion = "42";
  ASSERT_TRUE(client.Delete(PodsResource(), "ns", "p", d).ok());
  Json body = Json::parse(transport_->requests()[0].body);
  EXPECT_EQ(body["propagationPolicy"], "Foreground");
  EXPECT_EQ(body["preconditions"]["uid"], "u-1");
  EXPECT_EQ(body["preconditions"]["resourceVersion"], "42");
}

TEST_F(ClientTest, PatchesUseTheirContentTypes) {
  transport_->Expect("PATCH", "/apis/perfgate.io/v1alpha1/perfvalidations/x/status",
                     Reply().WithBody("{}"));
  transport_->Expect("PATCH", "/api/v1/nodes/n", Reply().WithBody("{}"));
  Client client = MakeClient();
  ASSERT_TRUE(
      client
          .PatchStatus(kPval, "", "x", PatchType::kMerge, Json{{"status", {{"phase", "Running"}}}})
          .ok());
  ASSERT_TRUE(
      client
          .Patch(NodesResource(), "", "n", PatchType::kJson,
                 Json::array({{{"op", "add"}, {"path", "/spec/unschedulable"}, {"value", true}}}))
          .ok());
  auto reqs = transport_->requests();
  EXPECT_EQ(reqs[0].headers.at("Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(reqs[1].headers.at("Content-Type"), "application/json-patch+json");
  EXPECT_EQ(Json::parse(reqs[1].body)[0]["op"], "add");
}

TEST_F(ClientTest, LogsAskForTailLinesAndReturnText) {
  transport_->Expect("GET", "/api/v1/namespaces/ns/pods/w/log?container=worker&tailLines=20",
                     Reply().WithBody("line1\nline2\n"));
  Client client = MakeClient();
  LogOptions o;
  o.container = "worker";
  o.tailLines = 20;
  auto text = client.Logs("ns", "w", o);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "line1\nline2\n");
}

TEST_F(ClientTest, TransportFailureNamesTheRequest) {
  transport_->Expect("GET", "/api/v1/nodes", Reply().WithError(Unavailable("connection refused")));
  Client client = MakeClient();
  auto r = client.Get(NodesResource(), "", "n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_EQ(r.status().message(), "GET /api/v1/nodes/n: connection refused");
}

TEST_F(ClientTest, RequestsAreRateLimitedToQpsAfterTheBurst) {
  config_.qps = 5;
  config_.burst = 10;
  for (int i = 0; i < 12; ++i) transport_->Expect("GET", "/api/v1/nodes", Reply().WithBody("{}"));
  Client client = MakeClient();
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(client.Get(NodesResource(), "", "n").ok());
  // The burst of 10 goes at once; then one request per 1/5 s.
  auto sleeps = clock_->sleeps();
  ASSERT_EQ(sleeps.size(), 2u);
  EXPECT_NEAR(std::chrono::duration<double>(sleeps[0]).count(), 0.2, 1e-6);
  EXPECT_NEAR(std::chrono::duration<double>(sleeps[1]).count(), 0.2, 1e-6);
}

TEST(TokenBucketTest, RefillsAtQpsUpToBurst) {
  auto clock = std::make_shared<FakeClock>();
  TokenBucket bucket(2.0, 3, clock);
  EXPECT_TRUE(bucket.TryAcquire());
  EXPECT_TRUE(bucket.TryAcquire());
  EXPECT_TRUE(bucket.TryAcquire());
  EXPECT_FALSE(bucket.TryAcquire());
  clock->Advance(std::chrono::milliseconds(500));  // one token at 2 qps
  EXPECT_TRUE(bucket.TryAcquire());
  EXPECT_FALSE(bucket.TryAcquire());
  clock->Advance(std::chrono::seconds(100));  // never more than the burst
  int got = 0;
  while (bucket.TryAcquire()) ++got;
  EXPECT_EQ(got, 3);
}

TEST(WatchErrorTest, StatusInsideAnErrorEventIsGoneFor410) {
  Json status = Json::parse(StatusBody(410, "Expired", "too old resource version: 5 (10)"));
  Status s = StatusFromWatchError(status);
  EXPECT_EQ(s.code(), Code::kGone);
  EXPECT_THAT(s.message(), HasSubstr("too old resource version"));
}

}  // namespace
}  // namespace perfgate::kube
