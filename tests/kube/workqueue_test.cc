#include "kube/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "tests/kube/fakes.h"

namespace perfgate::kube {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;

TEST(WorkQueueTest, DuplicatesCollapse) {
  WorkQueue q;
  q.Add("a");
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(q.Get(), "a");
  EXPECT_EQ(q.Get(), "b");
  EXPECT_FALSE(q.TryGet().has_value());
}

TEST(WorkQueueTest, AKeyAddedWhileProcessingWaitsForDoneThenComesBackOnce) {
  WorkQueue q;
  q.Add("a");
  auto key = q.Get();
  ASSERT_EQ(key, "a");
  q.Add("a");
  q.Add("a");
  // Not handed to a second worker while the first holds it.
  EXPECT_FALSE(q.TryGet().has_value());
  q.Done("a");
  EXPECT_EQ(q.TryGet(), "a");
  q.Done("a");
  EXPECT_FALSE(q.TryGet().has_value());
}

TEST(WorkQueueTest, ConcurrentWorkersNeverShareAKeyAndNothingIsLost) {
  WorkQueue q;
  constexpr int kKeys = 40;
  constexpr int kWorkers = 8;
  constexpr int kAddsPerProducer = 4000;
  std::vector<std::atomic<int>> in_flight(kKeys);
  std::vector<std::atomic<int>> processed(kKeys);
  // The last add per key, and the processing that started after it: every key
  // added must be processed at least once after its last add.
  std::mutex mu;
  std::vector<int64_t> last_add(kKeys, -1);
  std::vector<int64_t> last_start(kKeys, -1);
  std::atomic<int64_t> ticket{0};
  std::atomic<bool> overlap{false};

  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      while (auto key = q.Get()) {
        int k = std::stoi(*key);
        if (in_flight[k].fetch_add(1) != 0) overlap = true;
        {
          std::lock_guard lock(mu);
          last_start[k] = ticket++;
        }
        std::this_thread::yield();
        processed[k]++;
        in_flight[k].fetch_sub(1);
        q.Done(*key);
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < 2; ++p) {
    producers.emplace_back([&, p] {
      std::mt19937 rng(p);
      for (int i = 0; i < kAddsPerProducer; ++i) {
        int k = static_cast<int>(rng() % kKeys);
        {
          std::lock_guard lock(mu);
          last_add[k] = ticket++;
        }
        q.Add(std::to_string(k));
      }
    });
  }
  for (auto& t : producers) t.join();
  // Drain, then stop the workers.
  ASSERT_TRUE(testing::Eventually([&] {
    std::lock_guard lock(mu);
    for (int k = 0; k < kKeys; ++k) {
      if (last_add[k] >= 0 && last_start[k] < last_add[k]) return false;
    }
    return q.Len() == 0;
  }));
  q.ShutDown();
  for (auto& t : workers) t.join();
  EXPECT_FALSE(overlap.load()) << "a key was processed by two workers at once";
  int total = 0;
  for (int k = 0; k < kKeys; ++k) total += processed[k];
  // Duplicates collapsed: far fewer runs than adds.
  EXPECT_LT(total, 2 * kAddsPerProducer);
}

TEST(WorkQueueTest, RateLimitedBackoffDoublesFromFiveMillisecondsAndForgetResets) {
  auto clock = std::make_shared<FakeClock>();
  WorkQueue q({}, clock);
  const std::chrono::milliseconds expected[] = {5ms, 10ms, 20ms, 40ms};
  for (auto delay : expected) {
    q.AddRateLimited("k");
    clock->Advance(delay - 1ms);
    EXPECT_FALSE(q.TryGet().has_value()) << delay.count();
    clock->Advance(1ms);
    ASSERT_EQ(q.TryGet(), "k") << delay.count();
    q.Done("k");
  }
  EXPECT_EQ(q.NumRequeues("k"), 4);
  q.Forget("k");
  EXPECT_EQ(q.NumRequeues("k"), 0);
  q.AddRateLimited("k");
  clock->Advance(5ms);
  EXPECT_EQ(q.TryGet(), "k");
}

TEST(WorkQueueTest, BackoffIsCappedAtOneThousandSeconds) {
  auto clock = std::make_shared<FakeClock>();
  WorkQueue q({}, clock);
  for (int i = 0; i < 40; ++i) {
    q.AddRateLimited("k");
    clock->Advance(1000s);
    ASSERT_EQ(q.TryGet(), "k") << "failure " << i;
    q.Done("k");
  }
  q.AddRateLimited("k");
  clock->Advance(999s);
  EXPECT_FALSE(q.TryGet().has_value());
}

TEST(WorkQueueTest, AddAfterKeepsTheEarlierDeadlineAndABlockedGetWakesWhenDue) {
  auto clock = std::make_shared<FakeClock>();
  WorkQueue q({}, clock);
  q.AddAfter("k", 10s);
  q.AddAfter("k", 60s);  // later: ignored
  q.AddAfter("j", 30s);
  std::optional<std::string> got;
  std::thread worker([&] { got = q.Get(); });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(got.has_value());
  clock->Advance(10s);
  worker.join();
  EXPECT_EQ(got, "k");
  EXPECT_FALSE(q.TryGet().has_value());
  clock->Advance(20s);
  EXPECT_EQ(q.TryGet(), "j");
}

TEST(WorkQueueTest, ShutDownWakesBlockedWorkersAndIgnoresNewKeys) {
  WorkQueue q;
  std::atomic<int> returned{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < 3; ++i) {
    workers.emplace_back([&] {
      if (!q.Get().has_value()) ++returned;
    });
  }
  std::this_thread::sleep_for(20ms);
  q.ShutDown();
  for (auto& t : workers) t.join();
  EXPECT_EQ(returned.load(), 3);
  q.Add("late");
  EXPECT_FALSE(q.Get().has_value());
  EXPECT_TRUE(q.ShuttingDown());
}

}  // namespace
}  // namespace perfgate::kube
