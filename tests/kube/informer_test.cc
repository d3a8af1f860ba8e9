#include "kube/informer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "tests/kube/fakes.h"

namespace perfgate::kube {
namespace {

using testing::Eventually;
using testing::FakeClock;
using testing::FakeTransport;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::Reply;
using ::testing::UnorderedElementsAre;

Json Pod(const std::string& name, const std::string& rv) {
  return Json{{"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}}}};
}

std::string List(const std::string& rv, const std::vector<Json>& items,
                 const std::string& cont = "") {
  Json l = {{"kind", "PodList"}, {"metadata", {{"resourceVersion", rv}}}, {"items", items}};
  if (!cont.empty()) l["metadata"]["continue"] = cont;
  return l.dump();
}

std::string Ev(const std::string& type, const Json& object) {
  return Json{{"type", type}, {"object", object}}.dump() + "\n";
}

std::string Gone() {
  return Ev("ERROR", Json{{"kind", "Status"},
                          {"apiVersion", "v1"},
                          {"status", "Failure"},
                          {"code", 410},
                          {"reason", "Expired"},
                          {"message", "too old resource version: 10 (25)"}});
}

// Records handler calls as "add ns/a", "update ns/a 1->2", "delete ns/b".
class Recorder {
 public:
  InformerHandlers Handlers() {
    return {[this](const Json& o) { Record("add " + ObjectKey(o)); },
            [this](const Json& old, const Json& o) {
              Record("update " + ObjectKey(o) + " " + Rv(old) + "->" + Rv(o));
            },
            [this](const Json& o) { Record("delete " + ObjectKey(o)); }};
  }
  std::vector<std::string> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  std::set<std::thread::id> threads() const {
    std::lock_guard lock(mu_);
    return threads_;
  }
  size_t Count(const std::string& prefix) const {
    std::lock_guard lock(mu_);
    return static_cast<size_t>(std::count_if(events_.begin(), events_.end(),
                                             [&](auto& e) { return e.rfind(prefix, 0) == 0; }));
  }

 private:
  static std::string Rv(const Json& o) { return o["metadata"].value("resourceVersion", ""); }
  void Record(std::string e) {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(e));
    threads_.insert(std::this_thread::get_id());
  }
  mutable std::mutex mu_;
  std::vector<std::string> events_;
  std::set<std::thread::id> threads_;
};

class InformerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Informer> Make(int64_t page_size = 500,
                                 std::chrono::seconds resync = std::chrono::seconds(0),
                                 std::function<void(Json&)> transform = nullptr) {
    RestConfig config;
    config.server = "https://api";
    config.qps = 0;
    ClientOptions co;
    co.clock = clock_;
    co.retry.maxRetries = 0;  // the reflector's own backoff is under test
    auto client = std::make_shared<Client>(config, transport_, co);
    InformerOptions o;
    o.reflector.gvr = PodsResource();
    o.reflector.ns = "ns";
    o.reflector.pageSize = page_size;
    o.reflector.seed = 7;
    o.resyncPeriod = resync;
    o.transform = std::move(transform);
    auto informer = std::make_unique<Informer>(client, o, clock_);
    informer->AddHandlers(recorder_.Handlers());
    return informer;
  }
  std::vector<std::string> Paths() const {
    std::vector<std::string> out;
    for (const auto& r : transport_->requests()) out.push_back(r.path);
    return out;
  }

  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  Recorder recorder_;
};

const char kList[] = "/api/v1/namespaces/ns/pods?limit=500";

TEST_F(InformerTest, ExpiredResourceVersionInAWatchEventRelistsAndDeletesWhatWentAway) {
  transport_->Expect("GET", kList,
                     Reply().WithBody(List("10", {Pod("a", "1"), Pod("b", "2"), Pod("c", "3")})));
  transport_->Expect(
      "GET", "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=10",
      Reply().WithChunks(
          {Ev("ADDED", Pod("d", "11")) + Ev("MODIFIED", Pod("a", "12")),
           Ev("BOOKMARK", Json{{"kind", "Pod"}, {"metadata", {{"resourceVersion", "15"}}}}),
           Gone()}));
  // While we were away: b and c deleted, a changed again, e created.
  transport_->Expect(
      "GET", kList, Reply().WithBody(List("25", {Pod("a", "20"), Pod("d", "11"), Pod("e", "18")})));
  auto informer = Make();
  informer->Start();
  ASSERT_TRUE(informer->WaitForSync(std::chrono::seconds(10)));
  ASSERT_TRUE(Eventually([&] { return transport_->holding() == 1; }));  // watching from 25
  ASSERT_TRUE(Eventually([&] { return recorder_.events().size() == 10; }));
  informer->Stop();

  EXPECT_THAT(informer->Keys(), UnorderedElementsAre("ns/a", "ns/d", "ns/e"));
  EXPECT_EQ((*informer->Get("ns/a"))["metadata"]["resourceVersion"], "20");
  EXPECT_EQ(recorder_.events(), (std::vector<std::string>{
                                    "add ns/a", "add ns/b", "add ns/c", "add ns/d",
                                    "update ns/a 1->12", "update ns/a 12->20", "update ns/d 11->11",
                                    "add ns/e", "delete ns/b", "delete ns/c"}));
  auto paths = Paths();
  ASSERT_EQ(paths.size(), 4u);
  EXPECT_THAT(paths[1], HasSubstr("allowWatchBookmarks=true"));
  EXPECT_EQ(paths[2],
            kList);  // the relist asks for the latest state, not the expired version
  EXPECT_THAT(paths[3], HasSubstr("watch=true&resourceVersion=25"));
  EXPECT_EQ(informer->LastResourceVersion(), "25");
  // Handlers ran on one thread, not the caller's.
  auto threads = recorder_.threads();
  EXPECT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
}

TEST_F(InformerTest, Http410OnTheWatchRequestRelists) {
  transport_->Expect("GET", kList, Reply().WithBody(List("10", {Pod("a", "1")})));
  transport_->Expect("GET", "/api/v1/namespaces/ns/pods?watch=true",
                     Reply().WithStatus(410).WithBody(R"({"kind":"Status","code":410})"));
  transport_->Expect("GET", kList, Reply().WithBody(List("30", {Pod("b", "29")})));
  auto informer = Make();
  informer->Start();
  ASSERT_TRUE(Eventually([&] { return transport_->holding() == 1; }));
  ASSERT_TRUE(Eventually([&] { return recorder_.Count("delete ns/a") == 1; }));
  informer->Stop();
  EXPECT_THAT(informer->Keys(), UnorderedElementsAre("ns/b"));
  EXPECT_EQ(recorder_.Count("delete ns/a"), 1u);
}

TEST_F(InformerTest, Http410OnAListWithOurVersionFallsBackToTheLatest) {
  transport_->Expect("GET", kList, Reply().WithBody(List("5", {Pod("a", "1")})));
  // A corrupt stream: the reflector cannot know what it missed, so it relists
  // from rv 6...
  transport_->Expect("GET", "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=5",
                     Reply().WithChunks({Ev("ADDED", Pod("b", "6")), "{garbage\n"}));
  // ... which the server has compacted away: HTTP 410 on the list.
  transport_->Expect("GET",
                     "/api/v1/namespaces/ns/pods?limit=500&resourceVersion=6&"
                     "resourceVersionMatch=NotOlderThan",
                     Reply().WithStatus(410).WithBody(R"({"kind":"Status","code":410,
                                                     "reason":"Expired"})"));
  transport_->Expect("GET", kList, Reply().WithBody(List("40", {Pod("a", "1"), Pod("c", "39")})));
  auto informer = Make();
  informer->Start();
  ASSERT_TRUE(Eventually([&] { return transport_->holding() == 1; }));
  ASSERT_TRUE(Eventually(
      [&] { return recorder_.Count("add ns/c") == 1 && recorder_.Count("delete ns/b") == 1; }));
  informer->Stop();
  EXPECT_EQ(transport_->unused(), 0u);
  EXPECT_THAT(informer->Keys(), UnorderedElementsAre("ns/a", "ns/c"));
  EXPECT_EQ(recorder_.Count("delete ns/b"), 1u);
  EXPECT_EQ(recorder_.Count("add ns/c"), 1u);
  EXPECT_THAT(Paths().back(), HasSubstr("watch=true&resourceVersion=40"));
}

TEST_F(InformerTest, PagedListWhoseContinueTokenExpiresStillSyncsEverything) {
  transport_->Expect("GET", "/api/v1/namespaces/ns/pods?limit=1",
                     Reply().WithBody(List("5", {Pod("a", "1")}, "c1")));
  transport_->Expect("GET", "/api/v1/namespaces/ns/pods?limit=1&continue=c1",
                     Reply().WithStatus(410).WithBody(R"({"kind":"Status","code":410})"));
  transport_->Expect("GET", "/api/v1/namespaces/ns/pods",
                     Reply().WithBody(List("8", {Pod("a", "1"), Pod("b", "7")})));
  auto informer = Make(/*page_size=*/1);
  informer->Start();
  ASSERT_TRUE(informer->WaitForSync(std::chrono::seconds(10)));
  EXPECT_THAT(informer->Keys(), UnorderedElementsAre("ns/a", "ns/b"));
  ASSERT_TRUE(Eventually([&] { return transport_->holding() == 1; }));
  EXPECT_THAT(Paths().back(), HasSubstr("resourceVersion=8"));
}

TEST_F(InformerTest, ANormalWatchEndReconnectsFromTheBookmarkVersion) {
  transport_->Expect("GET", kList, Reply().WithBody(List("5", {})));
  transport_->Expect(
      "GET", "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=5",
      Reply().WithChunks(
          {Ev("ADDED", Pod("b", "6")),
           Ev("BOOKMARK", Json{{"kind", "Pod"}, {"metadata", {{"resourceVersion", "9"}}}})}));
  auto informer = Make();
  informer->Start();
  ASSERT_TRUE(Eventually([&] { return transport_->holding() == 1; }));
  ASSERT_TRUE(Eventually([&] { return recorder_.Count("add ns/b") == 1; }));
  informer->Stop();
  auto paths = Paths();
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_THAT(paths[2], HasSubstr("watch=true&resourceVersion=9"));
  EXPECT_EQ(informer->reflector().lists(), 1);  // no relist for a normal end
  EXPECT_THAT(informer->Keys(), UnorderedElementsAre("ns/b"));
}

TEST_F(InformerTest, AFailedListBacksOffAndIsNotSyncedUntilItSucceeds) {
  transport_->Expect("GET", kList, Reply().WithStatus(500).WithBody("etcd down"));
  transport_->Expect("GET", kList, Reply().WithStatus(429).WithBody("busy"));
  transport_->Expect("GET", kList, Reply().WithBody(List("5", {Pod("a", "1")})));
  auto informer = Make();
  EXPECT_FALSE(informer->HasSynced());
  informer->Start();
  ASSERT_TRUE(informer->WaitForSync(std::chrono::seconds(10)));
  informer->Stop();
  auto sleeps = clock_->sleeps();
  ASSERT_EQ(sleeps.size(), 2u);
  // 0.8 s then 1.6 s, each jittered up to one more step.
  EXPECT_GE(sleeps[0], std::chrono::milliseconds(800));
  EXPECT_LE(sleeps[0], std::chrono::milliseconds(1600));
  EXPECT_GE(sleeps[1], std::chrono::milliseconds(1600));
  EXPECT_LE(sleeps[1], std::chrono::milliseconds(3200));
}

TEST_F(InformerTest, ResyncDeliversAnUpdateForEveryCachedObject) {
  transport_->Expect("GET", kList, Reply().WithBody(List("5", {Pod("a", "1"), Pod("b", "2")})));
  auto informer = Make(500, std::chrono::seconds(30));
  informer->Start();
  ASSERT_TRUE(informer->WaitForSync(std::chrono::seconds(10)));
  EXPECT_EQ(recorder_.Count("update"), 0u);
  clock_->Advance(std::chrono::seconds(31));
  ASSERT_TRUE(Eventually([&] { return recorder_.Count("update") == 2; }));
  EXPECT_EQ(recorder_.Count("update ns/a 1->1"), 1u);
  EXPECT_EQ(recorder_.Count("update ns/b 2->2"), 1u);
  informer->Stop();
}

TEST_F(InformerTest, TransformRunsBeforeObjectsAreStoredOrHandedOut) {
  Json pod = Pod("a", "1");
  pod["metadata"]["managedFields"] = Json::array({{{"manager", "kubectl"}}});
  transport_->Expect("GET", kList, Reply().WithBody(List("5", {pod})));
  pod["metadata"]["resourceVersion"] = "6";
  transport_->Expect("GET", "/api/v1/namespaces/ns/pods?watch=true",
                     Reply().WithChunks({Ev("MODIFIED", pod)}));
  auto informer = Make(500, std::chrono::seconds(0), StripManagedFields);
  std::atomic<int> calls{0}, with_fields{0};
  auto check = [&](const Json& obj) {
    ++calls;
    if (obj["metadata"].contains("managedFields")) ++with_fields;
  };
  informer->AddHandlers({check, [&](const Json&, const Json& obj) { check(obj); }, nullptr});
  informer->Start();
  ASSERT_TRUE(Eventually([&] { return calls.load() == 2; }));
  informer->Stop();
  EXPECT_EQ(with_fields.load(), 0);
  auto stored = informer->Get("ns/a");
  ASSERT_TRUE(stored.has_value());
  EXPECT_FALSE((*stored)["metadata"].contains("managedFields"));
  EXPECT_EQ((*stored)["metadata"]["resourceVersion"], "6");
}

TEST_F(InformerTest, TransformRunsOnEveryWatchEventKindAndOnARelist) {
  auto with_fields = [](Json pod) {
    pod["metadata"]["managedFields"] = Json::array({{{"manager", "kubelet"}}});
    pod["status"] = {{"phase", "Running"}, {"images", Json::array({"a", "b"})}};
    return pod;
  };
  transport_->Expect("GET", kList, Reply().WithBody(List("5", {with_fields(Pod("a", "1"))})));
  transport_->Expect("GET", "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=5",
                     Reply().WithChunks({Ev("ADDED", with_fields(Pod("b", "6"))) +
                                             Ev("DELETED", with_fields(Pod("a", "7"))),
                                         Gone()}));
  // The relist after the 410 brings back c only (b went away meanwhile).
  transport_->Expect("GET", kList, Reply().WithBody(List("9", {with_fields(Pod("c", "8"))})));
  std::atomic<int> transformed{0};
  auto informer = Make(500, std::chrono::seconds(0), [&](Json& o) {
    ++transformed;
    StripManagedFields(o);
    o["status"].erase("images");
  });
  std::mutex mu;
  std::vector<std::string> seen;  // "<event> <key>" for objects that reached a handler unstripped
  auto check = [&](const std::string& event, const Json& obj) {
    std::lock_guard lock(mu);
    const bool stripped = !obj["metadata"].contains("managedFields") &&
                          !obj["status"].contains("images") &&
                          obj["status"].value("phase", "") == "Running";
    seen.push_back(event + " " + ObjectKey(obj) + (stripped ? "" : " UNSTRIPPED"));
  };
  informer->AddHandlers({[&](const Json& o) { check("add", o); },
                         [&](const Json&, const Json& o) { check("update", o); },
                         [&](const Json& o) { check("delete", o); }});
  informer->Start();
  ASSERT_TRUE(Eventually([&] { return recorder_.Count("delete ns/b") == 1; }));
  informer->Stop();
  std::lock_guard lock(mu);
  EXPECT_THAT(seen, ::testing::ElementsAre("add ns/a", "add ns/b", "delete ns/a", "add ns/c",
                                           "delete ns/b"));
  EXPECT_EQ(transformed.load(), 4);  // a (list), b (ADDED), a (DELETED), c (relist)
  auto stored = informer->Get("ns/c");
  ASSERT_TRUE(stored.has_value());
  EXPECT_FALSE((*stored)["metadata"].contains("managedFields"));
  EXPECT_FALSE((*stored)["status"].contains("images"));
}

TEST_F(InformerTest, StopEndsAHangingWatchAndNoHandlerRunsAfterIt) {
  transport_->Expect("GET", kList, Reply().WithBody(List("5", {Pod("a", "1")})));
  auto informer = Make();
  informer->Start();
  ASSERT_TRUE(Eventually([&] { return transport_->holding() == 1; }));
  ASSERT_TRUE(Eventually([&] { return recorder_.Count("add ns/a") == 1; }));
  informer->Stop();
  size_t n = recorder_.events().size();
  informer->Stop();  // idempotent
  EXPECT_EQ(recorder_.events().size(), n);
  EXPECT_EQ(transport_->holding(), 0);
}

}  // namespace
}  // namespace perfgate::kube
