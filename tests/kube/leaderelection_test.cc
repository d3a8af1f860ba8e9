#include "kube/leaderelection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/kube/fakes.h"

namespace perfgate::kube {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;

// An in-memory Lease with resourceVersion checks, shared by several electors.
class FakeLeaseStore {
 public:
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
    return *record_;
  }
  std::optional<LeaseRecord> record() {
    std::lock_guard lock(mu_);
    return record_;
  }

 private:
  std::mutex mu_;
  std::optional<LeaseRecord> record_;
  int rv_ = 0;
};

// One candidate's view of the store; `partitioned` makes every call fail, like
// a node cut off.
class FakeLock final : public LeaseLock {
 public:
  explicit FakeLock(FakeLeaseStore* store) : store_(store) {}
  Result<LeaseRecord> Get() override {
    if (partitioned) return Unavailable("partitioned");
    return store_->Get();
  }
  Result<LeaseRecord> Create(const LeaseRecord& r) override {
    if (partitioned) return Unavailable("partitioned");
    return store_->Create(r);
  }
  Result<LeaseRecord> Update(const LeaseRecord& r) override {
    if (partitioned) return Unavailable("partitioned");
    return store_->Update(r);
  }
  std::string Describe() const override { return "test/lease"; }
  std::atomic<bool> partitioned{false};

 private:
  FakeLeaseStore* store_;
};

TEST(LeaderElectionTest, TheSecondTakesOverAfterTheFirstStopsRenewingAndTheFirstStops) {
  auto clock = std::make_shared<FakeClock>();
  FakeLeaseStore store;
  auto lock_a = std::make_shared<FakeLock>(&store);
  auto lock_b = std::make_shared<FakeLock>(&store);

  LeaderElectionConfig cb;
  cb.identity = "b";
  LeaderElector b(lock_b, cb, clock);

  int a_started = 0, a_stopped = 0;
  std::chrono::steady_clock::time_point a_lost_at{};
  LeaderElectionConfig ca;
  ca.identity = "a";
  ca.onStartedLeading = [&] {
    ++a_started;
    // b sees a holding the lease and cannot take it.
    EXPECT_FALSE(b.TryAcquireOrRenew());
    EXPECT_EQ(b.ObservedHolder(), "a");
    // Then a is cut off from the API server and can no longer renew.
    lock_a->partitioned = true;
  };
  ca.onStoppedLeading = [&] {
    ++a_stopped;
    a_lost_at = clock->Now();
  };
  LeaderElector a(lock_a, ca, clock);
  auto start = clock->Now();
  Cancellation never;
  a.Run(never);  // returns when a has lost the lease (its sleeps advance the
                 // fake clock)

  EXPECT_EQ(a_started, 1);
  EXPECT_EQ(a_stopped, 1);
  EXPECT_FALSE(a.IsLeader());
  // a gave up once the renew deadline (10 s) passed without a renewal...
  EXPECT_GE(a_lost_at - start, 10s);
  EXPECT_LT(a_lost_at - start, 15s);
  // ...which is before b may take over (15 s after b last saw a change).
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock->Advance(15s - (a_lost_at - start));
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
  FakeLeaseStore store;
  std::atomic<bool> a_leading{false}, b_leading{false};
  auto fast = [](std::string id, std::atomic<bool>* leading) {
    LeaderElectionConfig c;
    c.identity = std::move(id);
    c.leaseDuration = 30s;  // long: b can only win this fast through a's release
    c.renewDeadline = 20s;
    c.retryPeriod = 20ms;
    c.onStartedLeading = [leading] { *leading = true; };
    c.onStoppedLeading = [leading] { *leading = false; };
    return c;
  };
  LeaderElector a(std::make_shared<FakeLock>(&store), fast("a", &a_leading));
  LeaderElector b(std::make_shared<FakeLock>(&store), fast("b", &b_leading));
  Cancellation stop_a, stop_b;
  std::thread ta([&] { a.Run(stop_a); });
  ASSERT_TRUE(testing::Eventually([&] { return a_leading.load(); }));
  std::thread tb([&] { b.Run(stop_b); });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(b_leading.load());  // never two leaders
  stop_a.Cancel();
  ta.join();
  EXPECT_FALSE(a_leading.load());
  ASSERT_TRUE(testing::Eventually([&] { return b_leading.load(); }, 5s));
  stop_b.Cancel();
  tb.join();
  EXPECT_EQ(store.record()->holderIdentity, "");   // b released too
  EXPECT_EQ(store.record()->leaseTransitions, 1);  // one hand-over: a to b
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
