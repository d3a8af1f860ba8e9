#include "kube/leaderelection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "kube/transport.h"
#include "tests/kube/fakes.h"

namespace perfgate::kube {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;
using SteadyTime = std::chrono::steady_clock::time_point;

// Simulated time that moves only when the test advances it; a sleeper blocks until its time
// has come (or its cancellation fires). Unlike FakeClock, whose sleeps jump time forward at
// once, this lets an elector's wait run beside its attempt. Thread-safe.
class ManualClock final : public Clock {
 public:
  SteadyTime Now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  std::chrono::system_clock::time_point WallNow() const override {
    std::lock_guard lock(mu_);
    return std::chrono::system_clock::time_point(std::chrono::seconds(1800000000)) +
           std::chrono::duration_cast<std::chrono::system_clock::duration>(now_.time_since_epoch());
  }
  bool SleepFor(std::chrono::nanoseconds duration, const Cancellation* cancel) override {
    uint64_t key = 0;
    {
      std::lock_guard lock(mu_);
      key = ++next_key_;
      sleeping_[key] = {now_ + duration, duration.count() <= 0};
    }
    // Keyed, not by reference: a callback may still run after Unregister returns.
    uint64_t id = 0;
    if (cancel != nullptr) id = cancel->OnCancel([this, key] { Wake(key); });
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return sleeping_[key].woken; });
      sleeping_.erase(key);
    }
    if (cancel != nullptr) cancel->Unregister(id);
    return cancel == nullptr || !cancel->cancelled();
  }
  void Advance(std::chrono::nanoseconds d) {
    std::lock_guard lock(mu_);
    now_ += d;
    for (auto& [key, s] : sleeping_) s.woken = s.woken || s.wake <= now_;
    cv_.notify_all();
  }
  // Threads asleep whose time has not come: a woken one counts again once it sleeps again.
  int sleepers() const {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& [key, s] : sleeping_) n += s.woken ? 0 : 1;
    return n;
  }

 private:
  struct Sleeper {
    SteadyTime wake;
    bool woken = false;
  };
  void Wake(uint64_t key) {
    std::lock_guard lock(mu_);
    if (auto it = sleeping_.find(key); it != sleeping_.end()) it->second.woken = true;
    cv_.notify_all();
  }
  mutable std::mutex mu_;
  std::condition_variable cv_;
  SteadyTime now_{1000s};
  uint64_t next_key_ = 0;
  std::map<uint64_t, Sleeper> sleeping_;
};

// Moves `clock` on in `step`s until `done()` holds or `limit` of simulated time has passed.
// Before each step it waits (real time) until `threads()` threads sleep on the clock, so every
// elector sees each instant and an event is observed at most one step late; and it gives an
// attempt just started on its helper thread a moment of real time (an attempt that answers at
// once takes no simulated time).
bool Drive(ManualClock& clock, const std::function<int()>& threads,
           const std::function<bool()>& done, std::chrono::nanoseconds limit,
           std::chrono::nanoseconds step = 100ms) {
  const SteadyTime end = clock.Now() + limit;
  while (clock.Now() < end) {
    if (done()) return true;
    // Time moves only once every thread sleeps. The wait ends as soon as they do; its limit
    // is generous because a loaded machine (CI runs the unit tests beside the end-to-end
    // suites) can take over a second to schedule a woken thread, and time moved under a thread
    // still at work skips its renewals.
    testing::Eventually([&] { return clock.sleepers() >= threads(); }, 10s);
    std::this_thread::sleep_for(1ms);
    if (done()) return true;
    clock.Advance(step);
  }
  return done();
}

// An in-memory Lease with resourceVersion checks, shared by several electors; it logs every
// successful write with the simulated time.
class FakeLeaseStore {
 public:
  struct Write {
    std::string holder;
    SteadyTime at;
  };
  explicit FakeLeaseStore(std::function<SteadyTime()> now = nullptr) : now_(std::move(now)) {}

  Result<LeaseRecord> Get() {
    std::lock_guard lock(mu_);
    if (!record_) return NotFound("lease not found");
    return *record_;
  }
  Result<LeaseRecord> Create(const LeaseRecord& r) {
    std::lock_guard lock(mu_);
    if (record_) return Status(Code::kAlreadyExists, "exists");
    record_ = r;
    record_->resourceVersion = std::to_string(++rv_);
    Log(r);
    return *record_;
  }
  Result<LeaseRecord> Update(const LeaseRecord& r) {
    std::lock_guard lock(mu_);
    if (!record_) return NotFound("lease not found");
    if (r.resourceVersion != record_->resourceVersion) {
      return Status(Code::kAborted, "409 Conflict");
    }
    record_ = r;
    record_->resourceVersion = std::to_string(++rv_);
    Log(r);
    return *record_;
  }
  std::optional<LeaseRecord> record() {
    std::lock_guard lock(mu_);
    return record_;
  }
  std::vector<Write> writes() {
    std::lock_guard lock(mu_);
    return writes_;
  }
  // When `holder` last wrote the lease (renewed or acquired it).
  std::optional<SteadyTime> LastWriteBy(const std::string& holder) {
    std::lock_guard lock(mu_);
    std::optional<SteadyTime> last;
    for (const auto& w : writes_) {
      if (w.holder == holder) last = w.at;
    }
    return last;
  }

 private:
  void Log(const LeaseRecord& r) {
    if (now_) writes_.push_back({r.holderIdentity, now_()});
  }
  std::function<SteadyTime()> now_;
  std::mutex mu_;
  std::optional<LeaseRecord> record_;
  int rv_ = 0;
  std::vector<Write> writes_;
};

// One candidate's view of the store; `partitioned` makes every call fail, like a node cut
// off; `Freeze` makes every call hang until `Thaw`, like an API server that stopped answering
// (then the calls go through, late).
class FakeLock final : public LeaseLock {
 public:
  explicit FakeLock(FakeLeaseStore* store) : store_(store) {}
  Result<LeaseRecord> Get() override {
    RETURN_IF_ERROR(Enter());
    return store_->Get();
  }
  Result<LeaseRecord> Create(const LeaseRecord& r) override {
    RETURN_IF_ERROR(Enter());
    return store_->Create(r);
  }
  Result<LeaseRecord> Update(const LeaseRecord& r) override {
    RETURN_IF_ERROR(Enter());
    return store_->Update(r);
  }
  std::string Describe() const override { return "test/lease"; }
  void Freeze() {
    std::lock_guard lock(mu_);
    frozen_ = true;
  }
  void Thaw() {
    std::lock_guard lock(mu_);
    frozen_ = false;
    cv_.notify_all();
  }
  // Calls waiting for a thaw.
  int hanging() const {
    std::lock_guard lock(mu_);
    return hanging_;
  }
  std::atomic<bool> partitioned{false};

 private:
  Status Enter() {
    if (partitioned) return Unavailable("partitioned");
    std::unique_lock lock(mu_);
    ++hanging_;
    cv_.wait(lock, [&] { return !frozen_; });
    --hanging_;
    return Status::Ok();
  }
  FakeLeaseStore* store_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool frozen_ = false;
  int hanging_ = 0;
};

// Leadership as the callbacks report it, with the simulated instants; fails the test the
// moment two candidates lead at once.
struct Leadership {
  std::mutex mu;
  std::map<std::string, bool> leading;
  std::map<std::string, SteadyTime> started, stopped;
  int overlaps = 0;

  void Configure(LeaderElectionConfig* c, Clock* clock) {
    const std::string id = c->identity;
    c->onStartedLeading = [this, id, clock] {
      std::lock_guard lock(mu);
      for (const auto& [other, is] : leading) {
        if (other != id && is) ++overlaps;
      }
      leading[id] = true;
      started[id] = clock->Now();
    };
    c->onStoppedLeading = [this, id, clock] {
      std::lock_guard lock(mu);
      leading[id] = false;
      stopped[id] = clock->Now();
    };
  }
  bool Leads(const std::string& id) {
    std::lock_guard lock(mu);
    return leading[id];
  }
  bool Started(const std::string& id) {
    std::lock_guard lock(mu);
    return started.count(id) != 0;
  }
  bool Stopped(const std::string& id) {
    std::lock_guard lock(mu);
    return stopped.count(id) != 0;
  }
};

// Runs an elector on its own thread; `running` counts the electors whose Run has not
// returned. Destroyed (a failed assertion included), it stops the elector and waits for it.
class Candidate {
 public:
  Candidate(LeaderElector* elector, std::atomic<int>* running) : running_(running) {
    ++*running_;
    thread_ = std::thread([this, elector] {
      elector->Run(stop_);
      --*running_;
    });
  }
  ~Candidate() { Stop(); }
  Candidate(const Candidate&) = delete;
  Candidate& operator=(const Candidate&) = delete;
  void Stop() {
    stop_.Cancel();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<int>* running_;
  Cancellation stop_;
  std::thread thread_;
};

// Calls `fn` when it goes out of scope (thaws a frozen lock before the candidates stop).
struct Finally {
  std::function<void()> fn;
  ~Finally() { fn(); }
};

TEST(LeaderElectionTest, TheSecondTakesOverAfterTheFirstStopsRenewingAndTheFirstStops) {
  auto clock = std::make_shared<ManualClock>();
  FakeLeaseStore store;
  auto lock_a = std::make_shared<FakeLock>(&store);
  auto lock_b = std::make_shared<FakeLock>(&store);

  LeaderElectionConfig cb;
  cb.identity = "b";
  LeaderElector b(lock_b, cb, clock);

  int a_started = 0, a_stopped = 0;
  SteadyTime a_lost_at{}, b_saw_a_at{};
  LeaderElectionConfig ca;
  ca.identity = "a";
  ca.onStartedLeading = [&] {
    ++a_started;
    // b sees a holding the lease and cannot take it.
    EXPECT_FALSE(b.TryAcquireOrRenew());
    EXPECT_EQ(b.ObservedHolder(), "a");
    b_saw_a_at = clock->Now();
    // Then a is cut off from the API server and can no longer renew.
    lock_a->partitioned = true;
  };
  ca.onStoppedLeading = [&] {
    ++a_stopped;
    a_lost_at = clock->Now();
  };
  LeaderElector a(lock_a, ca, clock);
  const SteadyTime start = clock->Now();
  std::atomic<int> running{0};
  Candidate run_a(&a, &running);  // Run returns when a has lost the lease
  ASSERT_TRUE(Drive(
      *clock, [&] { return running.load(); }, [&] { return running == 0; }, 60s));

  EXPECT_EQ(a_started, 1);
  EXPECT_EQ(a_stopped, 1);
  EXPECT_FALSE(a.IsLeader());
  // a gave up once the renew deadline (10 s) passed without a renewal...
  EXPECT_GE(a_lost_at - start, 10s);
  EXPECT_LT(a_lost_at - start, 15s);
  // ...which is before b may take over: 15 s after b last saw the lease change.
  EXPECT_LT(a_lost_at, b_saw_a_at + 15s);
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock->Advance(b_saw_a_at + 15s - 100ms - clock->Now());
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock->Advance(100ms);
  ASSERT_TRUE(b.TryAcquireOrRenew());
  auto record = store.record();
  EXPECT_EQ(record->holderIdentity, "b");
  EXPECT_EQ(record->leaseTransitions, 1);
  EXPECT_EQ(record->leaseDurationSeconds, 15);
}

TEST(LeaderElectionTest, RenewingKeepsTheLeaseAndItsAcquireTime) {
  auto clock = std::make_shared<FakeClock>();
  FakeLeaseStore store;
  LeaderElectionConfig c;
  c.identity = "a";
  LeaderElector a(std::make_shared<FakeLock>(&store), c, clock);
  ASSERT_TRUE(a.TryAcquireOrRenew());
  auto acquired = store.record()->acquireTime;
  clock->Advance(2s);
  ASSERT_TRUE(a.TryAcquireOrRenew());
  EXPECT_EQ(store.record()->acquireTime, acquired);
  EXPECT_EQ(store.record()->renewTime - acquired, 2s);
  EXPECT_EQ(store.record()->leaseTransitions, 0);
}

TEST(LeaderElectionTest, ShutdownReleasesSoTheNextLeaderNeedNotWait) {
  auto clock = std::make_shared<ManualClock>();
  FakeLeaseStore store([&] { return clock->Now(); });
  Leadership leadership;
  auto config = [&](std::string id) {
    LeaderElectionConfig c;
    c.identity = std::move(id);
    c.leaseDuration = 30s;  // long: b can only win this fast through a's release
    c.renewDeadline = 20s;
    c.retryPeriod = 2s;
    leadership.Configure(&c, clock.get());
    return c;
  };
  LeaderElector a(std::make_shared<FakeLock>(&store), config("a"), clock);
  LeaderElector b(std::make_shared<FakeLock>(&store), config("b"), clock);
  std::atomic<int> running{0};
  auto threads = [&] { return running.load(); };
  Candidate run_a(&a, &running);
  ASSERT_TRUE(Drive(
      *clock, threads, [&] { return leadership.Leads("a"); }, 10s));
  Candidate run_b(&b, &running);
  // b keeps trying for 20 s while a renews: it never leads.
  Drive(
      *clock, threads, [] { return false; }, 20s);
  EXPECT_FALSE(leadership.Started("b"));
  EXPECT_EQ(b.ObservedHolder(), "a");
  EXPECT_TRUE(a.IsLeader());

  run_a.Stop();
  EXPECT_FALSE(leadership.Leads("a"));
  const SteadyTime released = clock->Now();
  ASSERT_TRUE(Drive(
      *clock, threads, [&] { return leadership.Leads("b"); }, 10s));
  // Within b's next retry (2 s, +20% jitter; the clock moves in steps), far from the 30 s
  // lease.
  EXPECT_LE(clock->Now() - released, 2400ms + 500ms);
  run_b.Stop();
  EXPECT_EQ(store.record()->holderIdentity, "");   // b released too
  EXPECT_EQ(store.record()->leaseTransitions, 1);  // one hand-over: a to b
  EXPECT_EQ(leadership.overlaps, 0);
}

// The API server stops answering: the leader's renewal hangs (in the client's retries or the
// transport), and the leader must stop acting on its own clock, before anyone else may take
// the lease, without waiting for the request to come back. When it does come back, late, it
// must not renew a lease its sender no longer acts on.
TEST(LeaderElectionTest, AFrozenApiServerMakesTheLeaderStopWithinTheRenewDeadline) {
  auto clock = std::make_shared<ManualClock>();
  FakeLeaseStore store([&] { return clock->Now(); });
  auto lock = std::make_shared<FakeLock>(&store);
  Leadership leadership;
  LeaderElectionConfig c;
  c.identity = "a";
  leadership.Configure(&c, clock.get());
  int hanging_when_stopped = -1;
  auto stopped = c.onStoppedLeading;
  c.onStoppedLeading = [&, stopped] {
    hanging_when_stopped = lock->hanging();
    stopped();
  };
  auto a = std::make_unique<LeaderElector>(lock, c, clock);
  std::atomic<int> running{0};
  auto threads = [&] { return running.load(); };
  auto run_a = std::make_unique<Candidate>(a.get(), &running);
  Finally thaw{[&] { lock->Thaw(); }};
  ASSERT_TRUE(Drive(
      *clock, threads, [&] { return leadership.Leads("a"); }, 10s));
  // A few renewals, then the freeze.
  Drive(
      *clock, threads, [] { return false; }, 7s);
  ASSERT_GE(store.writes().size(), 3u);
  lock->Freeze();
  ASSERT_TRUE(Drive(
      *clock, threads, [&] { return leadership.Stopped("a"); }, 30s));
  EXPECT_FALSE(a->IsLeader());
  EXPECT_EQ(hanging_when_stopped, 1) << "it stopped because a request came back, not on time";
  // The last renewal written started at most one retry period (2 s) before it was written
  // here; the leader stopped 10 s (renewDeadline) after that start, to the step.
  const SteadyTime last_write = *store.LastWriteBy("a");
  const auto held_after_last_write = leadership.stopped["a"] - last_write;
  EXPECT_LE(held_after_last_write, 10s + 100ms);
  EXPECT_GE(held_after_last_write, 10s - 2s);
  EXPECT_LT(held_after_last_write, 15s) << "another replica could have taken the lease";

  // 20 s of freeze in all; the hung renewal then returns and must write nothing.
  const size_t writes = store.writes().size();
  Drive(
      *clock, threads, [] { return false; }, 10s);
  lock->Thaw();
  run_a.reset();
  a.reset();  // waits for the abandoned attempt to come back
  EXPECT_EQ(store.writes().size(), writes);
}

// Two replicas through a 20 s freeze of the whole API (longer than the 15 s lease): the
// leader stops within its renew deadline, the other takes over only after a full lease
// without a renewal, and at no instant do both lead.
TEST(LeaderElectionTest, NeverTwoLeadersThroughAFrozenApiServer) {
  auto clock = std::make_shared<ManualClock>();
  FakeLeaseStore store([&] { return clock->Now(); });
  auto lock_a = std::make_shared<FakeLock>(&store);
  auto lock_b = std::make_shared<FakeLock>(&store);
  Leadership leadership;
  auto config = [&](std::string id) {
    LeaderElectionConfig c;
    c.identity = std::move(id);
    leadership.Configure(&c, clock.get());
    return c;
  };
  LeaderElector a(lock_a, config("a"), clock);
  LeaderElector b(lock_b, config("b"), clock);
  std::atomic<int> running{0};
  auto threads = [&] { return running.load(); };
  Candidate run_a(&a, &running);
  ASSERT_TRUE(Drive(
      *clock, threads, [&] { return leadership.Leads("a"); }, 10s));
  Candidate run_b(&b, &running);
  Finally thaw{[&] {
    lock_a->Thaw();
    lock_b->Thaw();
  }};
  Drive(
      *clock, threads, [] { return false; }, 9s);
  ASSERT_FALSE(leadership.Started("b"));

  lock_a->Freeze();
  lock_b->Freeze();
  const SteadyTime frozen_at = clock->Now();
  ASSERT_TRUE(Drive(
      *clock, threads, [&] { return leadership.Stopped("a"); }, 20s));
  EXPECT_LE(leadership.stopped["a"] - *store.LastWriteBy("a"), 10s + 100ms);
  Drive(
      *clock, threads, [] { return false; }, 20s - (clock->Now() - frozen_at));
  lock_a->Thaw();
  lock_b->Thaw();
  ASSERT_TRUE(Drive(
      *clock, threads, [&] { return leadership.Leads("b"); }, 30s));

  EXPECT_EQ(leadership.overlaps, 0);
  EXPECT_LT(leadership.stopped["a"], leadership.started["b"]);
  // b took the lease a full lease duration after a's last renewal, not before.
  EXPECT_GE(leadership.started["b"] - *store.LastWriteBy("a"), 15s);
  // a's renewal that hung through the freeze wrote nothing when it came back.
  for (const auto& w : store.writes()) {
    if (w.holder == "a") {
      EXPECT_LT(w.at, frozen_at);
    }
  }
}

// A Lease behind an API server that answers like kube-sim under the soak's faults: armed at
// simulated instants, "the next N requests 429 (Retry-After 1)" and "the next N requests 503"
// (no Retry-After) last until that many requests have come, whenever that is. Thread-safe.
class FaultyLeaseServer final : public Transport {
 public:
  FaultyLeaseServer(std::shared_ptr<Clock> clock, Json lease)
      : clock_(std::move(clock)), lease_(std::move(lease)) {}
  void ThrottleNextRequestsAt(SteadyTime at, int count) { schedule_.push_back({at, 429, count}); }
  void FailNextRequestsAt(SteadyTime at, int count) { schedule_.push_back({at, 503, count}); }

  Result<HttpResponse> Send(const HttpRequest& request) override {
    std::lock_guard lock(mu_);
    const SteadyTime now = clock_->Now();
    for (auto& f : schedule_) {
      if (f.count > 0 && f.at <= now) {
        (f.code == 429 ? throttle_ : fail_) += f.count;
        f.count = 0;
      }
    }
    if (throttle_ > 0) {
      --throttle_;
      return HttpResponse{429, {{"Retry-After", "1"}}, StatusBody(429, "TooManyRequests")};
    }
    if (fail_ > 0) {
      --fail_;
      return HttpResponse{503, {}, StatusBody(503, "ServiceUnavailable")};
    }
    if (request.method == "GET") return HttpResponse{200, {}, lease_.dump()};
    if (request.method != "PUT") return HttpResponse{405, {}, StatusBody(405, "MethodNotAllowed")};
    Json next = Json::parse(request.body);
    if (next["metadata"].value("resourceVersion", "") !=
        lease_["metadata"].value("resourceVersion", "")) {
      return HttpResponse{409, {}, StatusBody(409, "Conflict")};
    }
    next["metadata"]["resourceVersion"] = std::to_string(++rv_);
    lease_ = next;
    return HttpResponse{200, {}, lease_.dump()};
  }
  Result<HttpResponse> Stream(const HttpRequest&, const ChunkCallback&,
                              const Cancellation*) override {
    return Unavailable("no watches here");
  }
  // Faults armed and not yet answered.
  int pending_faults() {
    std::lock_guard lock(mu_);
    return throttle_ + fail_;
  }
  Json lease() {
    std::lock_guard lock(mu_);
    return lease_;
  }

 private:
  struct Fault {
    SteadyTime at;
    int code;
    int count;
  };
  static std::string StatusBody(int code, const std::string& reason) {
    return Json{{"kind", "Status"}, {"status", "Failure"}, {"code", code}, {"reason", reason}}
        .dump();
  }
  std::shared_ptr<Clock> clock_;
  std::mutex mu_;
  std::vector<Fault> schedule_;
  Json lease_;
  int throttle_ = 0;
  int fail_ = 0;
  int rv_ = 100;
};

// The chaos soak's stall: the leader was killed (its lease is never renewed again) and a new
// operator starts while the API server throttles and fails whole runs of requests. It takes
// over once it has seen the lease unchanged for the lease duration, failed reads in between
// or not; before the fix each failing read sat in the client's retries (10 s with Retry-After,
// minutes of 503 backoff), every attempt outlived its deadline and wrote nothing, and the
// candidate was still not leading minutes later.
TEST(LeaderElectionTest, ACandidateTakesOverADeadLeadersLeaseWhileTheApiServerThrottles) {
  auto clock = std::make_shared<ManualClock>();
  const SteadyTime start = clock->Now();
  Json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", "leader"}, {"namespace", "ops"}, {"resourceVersion", "7"}}},
                {"spec",
                 {{"holderIdentity", "killed"},
                  {"leaseDurationSeconds", 15},
                  {"acquireTime", FormatMicroTime(clock->WallNow() - 60s)},
                  {"renewTime", FormatMicroTime(clock->WallNow() - 1s)},
                  {"leaseTransitions", 3}}}};
  auto server = std::make_shared<FaultyLeaseServer>(clock, lease);
  // The soak's two counted episodes, 20 s apart, from the candidate's first request on.
  server->ThrottleNextRequestsAt(start, 30);
  server->FailNextRequestsAt(start + 20s, 20);
  RestConfig rest;
  rest.server = "https://api:6443";
  rest.qps = 0;
  auto client = std::make_shared<Client>(rest, server, ClientOptions{{}, clock});

  LeaderElectionConfig config;
  config.identity = "candidate";
  Leadership leadership;
  leadership.Configure(&config, clock.get());
  auto elector =
      std::make_unique<LeaderElector>(NewLeaseLock(client, "ops", "leader"), config, clock);
  std::atomic<int> running{0};
  auto candidate = std::make_unique<Candidate>(elector.get(), &running);
  const bool led = Drive(
      *clock, [] { return 1; }, [&] { return leadership.Started("candidate"); }, 120s);
  const SteadyTime end = clock->Now();
  // Stopping it: an attempt may sleep in a retry on the simulated clock, so keep time moving
  // until the elector is gone.
  std::atomic<bool> pumping{true};
  std::thread pump([&] {
    while (pumping) {
      clock->Advance(500ms);
      std::this_thread::sleep_for(1ms);
    }
  });
  candidate.reset();
  elector.reset();
  pumping = false;
  pump.join();

  ASSERT_TRUE(led) << "not leading " << (end - start) / 1s << " s after the start, "
                   << server->pending_faults() << " faulty answers still pending";
  // It took over only after the lease had stood still for the lease duration.
  EXPECT_GE(leadership.started["candidate"] - start, 15s);
  const Json taken = server->lease();
  EXPECT_EQ(taken["spec"]["leaseTransitions"], 4);
}

TEST(MicroTimeTest, RoundTripsWithMicroseconds) {
  auto t = std::chrono::system_clock::time_point(std::chrono::microseconds(1764486939123456));
  std::string text = FormatMicroTime(t);
  EXPECT_EQ(text, "2025-11-30T07:15:39.123456Z");
  auto back = ParseMicroTime(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, t);
  auto offset = ParseMicroTime("2025-11-30T09:15:39.123456+02:00");
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(*offset, t);
  EXPECT_FALSE(ParseMicroTime("yesterday").ok());
}

}  // namespace
}  // namespace perfgate::kube
