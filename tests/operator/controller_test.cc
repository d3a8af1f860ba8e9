// The controller loop driven by a fake reconcile: requeue policy (backoff on error,
// requeueAfter), one worker per key, re-handling of a key added meanwhile, and shutdown.
#include "operator/runtime/controller.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/kube/fakes.h"

namespace perfgate::op {
namespace {

using kube::testing::Eventually;
using kube::testing::FakeClock;
using Json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A gate a reconcile waits at until the test opens it.
class Gate {
 public:
  void Open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Records every reconcile (key and the fake clock's time) and answers from a script: the n-th
// call gets replies[n], later calls succeed without a requeue.
class ScriptedReconcile {
 public:
  ScriptedReconcile(std::shared_ptr<FakeClock> clock, std::vector<Result<ReconcileResult>> replies)
      : clock_(std::move(clock)), replies_(std::move(replies)) {}

  ReconcileFunc Func() {
    return [this](const std::string& key) -> Result<ReconcileResult> {
      std::lock_guard lock(mu_);
      size_t n = calls_.size();
      calls_.push_back({key, clock_->Now()});
      if (n < replies_.size()) return replies_[n];
      return ReconcileResult{};
    };
  }
  size_t count() const {
    std::lock_guard lock(mu_);
    return calls_.size();
  }
  std::chrono::steady_clock::time_point at(size_t i) const {
    std::lock_guard lock(mu_);
    return calls_.at(i).second;
  }

 private:
  std::shared_ptr<FakeClock> clock_;
  std::vector<Result<ReconcileResult>> replies_;
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> calls_;
};

ControllerOptions FakeClockOptions(std::shared_ptr<FakeClock> clock, int workers = 2) {
  ControllerOptions o;
  o.workers = workers;
  o.clock = std::move(clock);
  o.queue.baseDelay = seconds(1);
  o.queue.maxDelay = seconds(1000);
  o.queue.pollInterval = milliseconds(1);
  return o;
}

// The n-th reconcile has run and its requeue is decided (so the fake clock may move on).
bool Handled(const Controller& c, const std::function<size_t()>& count, size_t n) {
  return Eventually([&] { return count() == n && c.ActiveWorkers() == 0; });
}

// Nothing more happens for a while (real time): what a test waits before saying "not called".
void Settle() { std::this_thread::sleep_for(milliseconds(60)); }

Status Failed() { return Status(Code::kUnavailable, "api server unavailable"); }

ReconcileResult RequeueAfter(milliseconds after) {
  ReconcileResult r;
  r.requeue_after = after;
  return r;
}

TEST(ControllerTest, AFailedReconcileIsRetriedAfterGrowingDelaysAndSuccessResetsThem) {
  auto clock = std::make_shared<FakeClock>();
  ScriptedReconcile reconcile(clock, {Failed(), Failed(), Failed(), Failed(), ReconcileResult{},
                                      Failed(), ReconcileResult{}});
  Controller c(reconcile.Func(), FakeClockOptions(clock));
  c.Start({});
  auto calls = [&] { return reconcile.count(); };
  c.Enqueue("a");
  ASSERT_TRUE(Handled(c, calls, 1));
  // Failures 1..4: retried after 1 s, 2 s, 4 s, 8 s, and not a millisecond earlier.
  for (int k = 0; k < 4; ++k) {
    const auto delay = seconds(1) * (1 << k);
    clock->Advance(delay - milliseconds(1));
    Settle();
    ASSERT_EQ(reconcile.count(), static_cast<size_t>(k + 1)) << "retry " << k << " came early";
    clock->Advance(milliseconds(1));
    ASSERT_TRUE(Handled(c, calls, static_cast<size_t>(k + 2)));
    EXPECT_EQ(reconcile.at(k + 1) - reconcile.at(k), delay);
  }
  // The fifth call succeeded: no retry however long we wait.
  clock->Advance(seconds(100));
  Settle();
  EXPECT_EQ(reconcile.count(), 5u);
  // A new failure starts again from the first delay, not the sixth.
  c.Enqueue("a");
  ASSERT_TRUE(Handled(c, calls, 6));
  clock->Advance(seconds(1));
  ASSERT_TRUE(Eventually([&] { return reconcile.count() == 7; }));
  EXPECT_EQ(reconcile.at(6) - reconcile.at(5), seconds(1));
  c.Stop();
}

TEST(ControllerTest, RequeueAfterRunsTheKeyAgainWhenAsked) {
  auto clock = std::make_shared<FakeClock>();
  ScriptedReconcile reconcile(clock, {RequeueAfter(milliseconds(30000)), ReconcileResult{}});
  Controller c(reconcile.Func(), FakeClockOptions(clock));
  c.Start({});
  auto calls = [&] { return reconcile.count(); };
  c.Enqueue("a");
  ASSERT_TRUE(Handled(c, calls, 1));
  clock->Advance(milliseconds(29999));
  Settle();
  EXPECT_EQ(reconcile.count(), 1u);
  clock->Advance(milliseconds(1));
  ASSERT_TRUE(Handled(c, calls, 2));
  EXPECT_EQ(reconcile.at(1) - reconcile.at(0), seconds(30));
  // The second asked for nothing: no third.
  clock->Advance(seconds(600));
  Settle();
  EXPECT_EQ(reconcile.count(), 2u);
  c.Stop();
}

TEST(ControllerTest, NoKeyIsHandledByTwoWorkersAtOnce) {
  std::mutex mu;
  std::map<std::string, int> in_flight;
  int overlaps = 0, busiest = 0, running = 0;
  std::atomic<int> calls{0};
  ControllerOptions o;
  o.workers = 16;
  Controller c(
      [&](const std::string& key) -> Result<ReconcileResult> {
        {
          std::lock_guard lock(mu);
          if (++in_flight[key] > 1) ++overlaps;
          busiest = std::max(busiest, ++running);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        {
          std::lock_guard lock(mu);
          --in_flight[key];
          --running;
        }
        ++calls;
        return ReconcileResult{};
      },
      o);
  c.Start({});
  const std::vector<std::string> keys = {"a", "b", "c", "d"};
  std::vector<std::thread> adders;
  for (int t = 0; t < 4; ++t) {
    adders.emplace_back([&] {
      for (int i = 0; i < 3000; ++i) {
        c.Enqueue(keys[static_cast<size_t>(i) % keys.size()]);
        if (i % 16 == 0) std::this_thread::yield();
      }
    });
  }
  for (auto& t : adders) t.join();
  ASSERT_TRUE(Eventually([&] { return c.QueueDepth() == 0; }));
  c.Stop();
  EXPECT_EQ(overlaps, 0);
  // The workers did run side by side (on different keys): the check above could have failed.
  EXPECT_GT(busiest, 1);
  // Duplicates collapsed: far fewer reconciles than adds, but each key handled.
  EXPECT_LT(calls.load(), 12000);
  EXPECT_GE(calls.load(), 4);
  EXPECT_EQ(in_flight.size(), keys.size());
}

TEST(ControllerTest, AKeyAddedWhileBeingHandledIsHandledAgainAfterwards) {
  Gate gate;
  std::atomic<int> calls{0}, concurrent{0}, overlaps{0};
  ControllerOptions o;
  o.workers = 4;
  Controller c(
      [&](const std::string&) -> Result<ReconcileResult> {
        if (++concurrent > 1) ++overlaps;
        if (++calls == 1) gate.Wait();
        --concurrent;
        return ReconcileResult{};
      },
      o);
  c.Start({});
  c.Enqueue("a");
  ASSERT_TRUE(Eventually([&] { return calls.load() == 1; }));
  // Two adds while the first reconcile runs: one more reconcile, after it, not beside it.
  c.Enqueue("a");
  c.Enqueue("a");
  Settle();
  EXPECT_EQ(calls.load(), 1);
  gate.Open();
  ASSERT_TRUE(Eventually([&] { return calls.load() == 2; }));
  Settle();
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(overlaps.load(), 0);
  c.Stop();
}

TEST(ControllerTest, StopWaitsForReconcilesInFlightJoinsEveryWorkerAndRunsNoMore) {
  Gate gate;
  std::atomic<int> started{0}, finished{0};
  ControllerOptions o;
  o.workers = 3;
  Controller c(
      [&](const std::string&) -> Result<ReconcileResult> {
        ++started;
        gate.Wait();
        ++finished;
        return ReconcileResult{};
      },
      o);
  c.Start({});
  for (int i = 0; i < 20; ++i) c.Enqueue("v" + std::to_string(i));
  ASSERT_TRUE(Eventually([&] { return started.load() == 3; }));  // every worker busy
  std::atomic<bool> stopped{false};
  int finished_when_stopped = -1;
  std::thread stopper([&] {
    c.Stop();
    finished_when_stopped = finished.load();
    stopped = true;
  });
  Settle();
  EXPECT_FALSE(stopped.load()) << "Stop returned while reconciles were still running";
  gate.Open();
  stopper.join();
  // The three in flight finished before Stop returned; the 17 still queued were dropped.
  EXPECT_EQ(finished_when_stopped, 3);
  EXPECT_EQ(started.load(), 3);
  c.Enqueue("late");
  Settle();
  EXPECT_EQ(started.load(), 3);
  c.Stop();  // idempotent
}

TEST(ControllerTest, StopFromTwoThreadsAtOnceJoinsOnce) {
  // A signal handler's shutdown and a leader elector's may both stop the controller.
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> calls{0};
    ControllerOptions o;
    o.workers = 4;
    Controller c(
        [&](const std::string&) -> Result<ReconcileResult> {
          ++calls;
          return ReconcileResult{};
        },
        o);
    c.Start({});
    c.Enqueue("a");
    ASSERT_TRUE(Eventually([&] { return calls.load() == 1; }));
    std::thread other([&] { c.Stop(); });
    c.Stop();
    other.join();
    EXPECT_EQ(c.ActiveWorkers(), 0);
  }
}

TEST(ControllerTest, StopWhileCachesHaveNotSyncedReturnsAndNothingIsReconciled) {
  // An informer whose list never succeeds (the fake API server answers 599) never syncs.
  auto transport = std::make_shared<kube::testing::FakeTransport>();
  kube::RestConfig config;
  config.server = "https://api";
  config.qps = 0;
  kube::ClientOptions co;
  co.retry.maxRetries = 0;
  auto client = std::make_shared<kube::Client>(config, transport, co);
  kube::InformerOptions io;
  io.reflector.gvr = kube::NodesResource();
  kube::Informer nodes(client, io);

  std::atomic<int> calls{0};
  ControllerOptions o;
  o.sync_poll_interval = milliseconds(10);
  Controller c(
      [&](const std::string&) -> Result<ReconcileResult> {
        ++calls;
        return ReconcileResult{};
      },
      o);
  c.Start({&nodes});
  c.Enqueue("a");
  ASSERT_TRUE(Eventually([&] { return !transport->requests().empty(); }));  // it is listing
  Settle();
  EXPECT_FALSE(c.Synced());
  EXPECT_EQ(calls.load(), 0) << "reconciled before the caches synced";
  const auto t0 = std::chrono::steady_clock::now();
  c.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(2));
  nodes.Stop();
  EXPECT_EQ(calls.load(), 0);
}

TEST(ControllerTest, WorkersStartOnceTheCachesHaveSynced) {
  auto transport = std::make_shared<kube::testing::FakeTransport>();
  transport->Expect("GET", "/api/v1/nodes",
                    kube::testing::Reply().WithBody(Json{
                        {"kind", "NodeList"},
                        {"metadata", {{"resourceVersion", "3"}}},
                        {"items", {}}}.dump()));
  kube::RestConfig config;
  config.server = "https://api";
  config.qps = 0;
  auto client = std::make_shared<kube::Client>(config, transport, kube::ClientOptions{});
  kube::InformerOptions io;
  io.reflector.gvr = kube::NodesResource();
  kube::Informer nodes(client, io);

  std::atomic<int> calls{0};
  ControllerOptions o;
  o.sync_poll_interval = milliseconds(10);
  Controller c(
      [&](const std::string&) -> Result<ReconcileResult> {
        ++calls;
        return ReconcileResult{};
      },
      o);
  c.Enqueue("queued-before-start");
  c.Start({&nodes});
  ASSERT_TRUE(Eventually([&] { return c.Synced(); }));
  ASSERT_TRUE(Eventually([&] { return calls.load() == 1; }));
  c.Stop();
  nodes.Stop();
}

TEST(ControllerTest, AReconcileThatThrowsIsRetriedLikeAFailure) {
  auto clock = std::make_shared<FakeClock>();
  std::atomic<int> calls{0};
  Controller c(
      [&](const std::string&) -> Result<ReconcileResult> {
        if (++calls == 1) throw std::runtime_error("type must be string, but is null");
        return ReconcileResult{};
      },
      FakeClockOptions(clock));
  c.Start({});
  c.Enqueue("a");
  ASSERT_TRUE(Handled(
      c, [&] { return static_cast<size_t>(calls.load()); }, 1));
  clock->Advance(seconds(1));
  ASSERT_TRUE(Eventually([&] { return calls.load() == 2; }));
  c.Stop();
}

// Handlers: what an informer event enqueues.

Json Pod(Json owners, Json labels) {
  return {
      {"metadata",
       {{"name", "p"}, {"resourceVersion", "1"}, {"ownerReferences", owners}, {"labels", labels}}}};
}

TEST(ControllerTest, AWorkerPodOrResultEnqueuesTheValidationThatOwnsIt) {
  // The owner reference names the validation in full; the label only when it has to.
  EXPECT_EQ(OwningValidation(Pod(Json::array({{{"kind", "ConfigMap"}, {"name", "cm"}},
                                              {{"kind", "PerfValidation"}, {"name", "full-name"}}}),
                                 {{"perfgate.io/validation", "short"}})),
            std::vector<std::string>{"full-name"});
  EXPECT_EQ(OwningValidation(Pod(Json::array(), {{"perfgate.io/validation", "by-label"}})),
            std::vector<std::string>{"by-label"});
  EXPECT_TRUE(OwningValidation(Pod(Json::array(), Json::object())).empty());
  EXPECT_TRUE(OwningValidation(Json::object()).empty());

  std::mutex mu;
  std::vector<std::string> keys;
  Controller c(
      [&](const std::string& key) -> Result<ReconcileResult> {
        std::lock_guard lock(mu);
        keys.push_back(key);
        return ReconcileResult{};
      },
      ControllerOptions{});
  auto h = c.EnqueueFor(OwningValidation);
  h.onDelete(Pod(Json::array({{{"kind", "PerfValidation"}, {"name", "gone"}}}), {}));
  h.onAdd(Pod(Json::array(), Json::object()));  // nobody's: nothing
  c.Start({});
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard lock(mu);
    return keys.size() == 1;
  }));
  Settle();
  std::lock_guard lock(mu);
  EXPECT_EQ(keys, std::vector<std::string>{"gone"});
}

std::string ListOf(const std::string& kind, const std::vector<Json>& items) {
  return Json{{"kind", kind + "List"}, {"metadata", {{"resourceVersion", "10"}}}, {"items", items}}
      .dump();
}

TEST(ControllerTest, ANodeEventEnqueuesOnlyTheValidationsStillRunning) {
  auto transport = std::make_shared<kube::testing::FakeTransport>();
  using kube::testing::Reply;
  transport->Expect(
      "GET", "/apis/perfgate.io/v1alpha1/perfvalidations?",
      Reply().WithBody(
          ListOf("PerfValidation", {{{"metadata", {{"name", "running"}, {"resourceVersion", "1"}}}},
                                    {{"metadata", {{"name", "done"}, {"resourceVersion", "2"}}},
                                     {"status", {{"completionTime", "2026-12-01T10:00:00Z"}}}}})));
  transport->Expect("GET", "/api/v1/namespaces/ns/pods?", Reply().WithBody(ListOf("Pod", {})));
  transport->Expect("GET", "/apis/perfgate.io/v1alpha1/namespaces/ns/perfresults?",
                    Reply().WithBody(ListOf("PerfResult", {})));
  transport->Expect("GET", "/api/v1/nodes?",
                    Reply().WithBody(ListOf(
                        "Node", {{{"metadata", {{"name", "n1"}, {"resourceVersion", "3"}}}}})));
  kube::RestConfig config;
  config.server = "https://api";
  config.qps = 0;
  auto client = std::make_shared<kube::Client>(config, transport, kube::ClientOptions{});
  auto informer = [&](kube::GroupVersionResource gvr, const std::string& ns) {
    kube::InformerOptions io;
    io.reflector.gvr = std::move(gvr);
    io.reflector.ns = ns;
    return std::make_unique<kube::Informer>(client, io);
  };
  auto validations = informer(ValidationsResource(), "");
  auto pods = informer(kube::PodsResource(), "ns");
  auto results = informer(ResultsResource(), "ns");
  auto nodes = informer(kube::NodesResource(), "");

  std::mutex mu;
  std::map<std::string, int> calls;
  auto count = [&](const std::string& key) {
    std::lock_guard lock(mu);
    return calls[key];
  };
  ControllerOptions o;
  o.sync_poll_interval = milliseconds(10);
  Controller c(
      [&](const std::string& key) -> Result<ReconcileResult> {
        std::lock_guard lock(mu);
        ++calls[key];
        return ReconcileResult{};
      },
      o);
  EnqueueValidationsOn(c, {validations.get(), pods.get(), results.get(), nodes.get()});
  // Every validation is reconciled once its informer lists it.
  c.Start({validations.get(), pods.get(), results.get()});
  ASSERT_TRUE(Eventually([&] { return count("running") == 1 && count("done") == 1; }));
  // Then a node appears: the running validation may select it; the complete one may not.
  nodes->Start();
  ASSERT_TRUE(Eventually([&] { return count("running") == 2; }));
  Settle();
  EXPECT_EQ(count("done"), 1);
  c.Stop();
  for (auto* inf : {validations.get(), pods.get(), results.get(), nodes.get()}) inf->Stop();
}

TEST(ControllerTest, AnUpdateThatChangesOnlyTheResourceVersionEnqueuesNothingWhenAsked) {
  std::atomic<int> calls{0};
  Controller c(
      [&](const std::string&) -> Result<ReconcileResult> {
        ++calls;
        return ReconcileResult{};
      },
      ControllerOptions{});
  c.Start({});
  auto keys = [](const Json&) { return std::vector<std::string>{"running"}; };
  auto on_change = c.EnqueueFor(keys, /*skip_unchanged=*/true);
  Json a = {{"metadata", {{"name", "node-1"}, {"resourceVersion", "7"}}},
            {"spec", {{"unschedulable", false}}}};
  Json b = a;
  b["metadata"]["resourceVersion"] = "8";  // e.g. a heartbeat the cache dropped
  on_change.onUpdate(a, b);
  on_change.onUpdate(b, b);  // a resync
  Settle();
  EXPECT_EQ(calls.load(), 0);
  Json cordoned = b;
  cordoned["spec"]["unschedulable"] = true;
  on_change.onUpdate(b, cordoned);
  ASSERT_TRUE(Eventually([&] { return calls.load() == 1; }));
  // Without skip_unchanged every update counts, resyncs included.
  auto always = c.EnqueueFor(keys);
  always.onUpdate(b, b);
  ASSERT_TRUE(Eventually([&] { return calls.load() == 2; }));
  c.Stop();
}

}  // namespace
}  // namespace perfgate::op
