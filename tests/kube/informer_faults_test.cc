// Integration: the informer against kube-sim (a loopback API server) while it drops watches,
// expires watch history (410), throttles (429), fails (500) and answers slowly, with objects
// changing throughout. The informer must end with exactly the server's objects, and its
// handlers must have seen a consistent history: nothing missed, nothing duplicated.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "kube/config.h"
#include "kube/informer.h"
#include "tests/kube-sim/kube_sim.h"
#include "tests/kube/fakes.h"

namespace perfgate::kube {
namespace {

using namespace std::chrono_literals;

constexpr char kNs[] = "faults";

Json ConfigMap(const std::string& name, int value) {
  return Json{{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", name}, {"namespace", kNs}}},
              {"data", {{"value", std::to_string(value)}}}};
}

// key -> resourceVersion
using State = std::map<std::string, std::string>;

State ServerState(const kubesim::KubeSim& sim) {
  State s;
  for (const Json& o : sim.List("", "configmaps", kNs)) {
    s[ObjectKey(o)] = o["metadata"].value("resourceVersion", "");
  }
  return s;
}

State StoreState(const Informer& informer) {
  State s;
  for (const Json& o : informer.List())
    s[ObjectKey(o)] = o["metadata"].value("resourceVersion", "");
  return s;
}

// Applies handler calls to its own map, counting calls that contradict it.
class HandlerMirror {
 public:
  InformerHandlers Handlers() {
    return {[this](const Json& o) {
              std::lock_guard lock(mu_);
              if (!state_.emplace(ObjectKey(o), Rv(o)).second) ++duplicate_adds_;
            },
            [this](const Json&, const Json& o) {
              std::lock_guard lock(mu_);
              auto it = state_.find(ObjectKey(o));
              if (it == state_.end()) {
                ++updates_of_unknown_;
                return;
              }
              it->second = Rv(o);
            },
            [this](const Json& o) {
              std::lock_guard lock(mu_);
              if (state_.erase(ObjectKey(o)) == 0) ++deletes_of_unknown_;
            }};
  }
  State state() const {
    std::lock_guard lock(mu_);
    return state_;
  }
  int contradictions() const {
    std::lock_guard lock(mu_);
    return duplicate_adds_ + updates_of_unknown_ + deletes_of_unknown_;
  }

 private:
  static std::string Rv(const Json& o) { return o["metadata"].value("resourceVersion", ""); }
  mutable std::mutex mu_;
  State state_;
  int duplicate_adds_ = 0;
  int updates_of_unknown_ = 0;
  int deletes_of_unknown_ = 0;
};

class Churn {
 public:
  explicit Churn(kubesim::KubeSim* sim) : sim_(sim) {}
  // One random create, update or delete among `names` objects, straight into the server's store
  // (bypassing faults, so the changes happen whatever the informer is going through).
  void Step() {
    std::string name = "cm-" + std::to_string(rng_() % 40);
    auto current = sim_->Get("", "configmaps", kNs, name);
    int op = static_cast<int>(rng_() % 3);
    if (!current.ok()) {
      (void)sim_->Create("", "configmaps", ConfigMap(name, ++counter_));
    } else if (op == 0) {
      (void)sim_->Delete("", "configmaps", kNs, name);
    } else {
      Json updated = *current;
      updated["data"]["value"] = std::to_string(++counter_);
      (void)sim_->Update("", "configmaps", updated);
    }
  }
  void Steps(int n) {
    for (int i = 0; i < n; ++i) Step();
  }

 private:
  kubesim::KubeSim* sim_;
  std::mt19937 rng_{12345};
  int counter_ = 0;
};

TEST(InformerFaultsTest, StoreEqualsTheServerAfterDroppedWatchesExpiryThrottlingAndErrors) {
  kubesim::Options opts;
  opts.bookmarkIntervalSeconds = 0.2;
  kubesim::KubeSim sim(opts);
  ASSERT_TRUE(sim.Start().ok());
  ASSERT_TRUE(
      sim.Create("", "namespaces",
                 Json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNs}}}})
          .ok());
  Churn churn(&sim);
  churn.Steps(60);

  auto config = LoadKubeconfig(sim.kubeconfigPath());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  config->qps = 100;
  config->burst = 100;
  ClientOptions client_options;
  client_options.retry.baseDelay = 50ms;  // keep the test short; the retry itself is under test
  auto client = NewClient(*config, client_options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  InformerOptions o;
  o.reflector.gvr = {"", "v1", "configmaps"};
  o.reflector.ns = kNs;
  o.reflector.pageSize = 7;  // several pages per list
  o.reflector.backoff.initial = 100ms;
  o.reflector.backoff.max = 400ms;
  Informer informer(*client, o);
  HandlerMirror mirror;
  informer.AddHandlers(mirror.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(20s));

  // A drop only ends a watch the server has already opened: repeat it until the informer has
  // reconnected `more` times, then give the new watch a moment to be established.
  auto drop_until_reconnected = [&](int more) {
    int w = informer.reflector().watches();
    for (int i = 0; i < 100; ++i) {
      sim.DropWatches();
      if (testing::Eventually([&] { return informer.reflector().watches() >= w + more; }, 300ms)) {
        std::this_thread::sleep_for(200ms);
        return true;
      }
    }
    return false;
  };
  std::this_thread::sleep_for(200ms);
  // 1. Dropped watches while objects change.
  for (int i = 0; i < 3; ++i) {
    churn.Steps(10);
    ASSERT_TRUE(drop_until_reconnected(1));
    churn.Steps(10);
  }
  // 2. Expired history while disconnected: the reconnect is slowed so the changes and the expiry
  //    land before the server looks at our resourceVersion; it answers 410 and we relist.
  int lists_before = informer.reflector().lists();
  sim.SetLatencyMs(400);
  for (int i = 0; i < 10 && informer.reflector().lists() == lists_before; ++i) {
    sim.DropWatches();
    churn.Steps(25);  // deletes among them: only a relist can show those
    sim.ExpireWatchHistory();
    testing::Eventually([&] { return informer.reflector().lists() > lists_before; }, 3s);
  }
  ASSERT_GT(informer.reflector().lists(), lists_before) << "no relist after the history expired";
  sim.SetLatencyMs(0);
  ASSERT_TRUE(drop_until_reconnected(1));
  // 3. Throttling, then server errors, on the reconnecting watches.
  sim.ThrottleNextRequests(3, 1);
  churn.Steps(10);
  ASSERT_TRUE(drop_until_reconnected(4));  // three refused, the fourth through
  sim.FailNextRequests(4, 500);
  churn.Steps(10);
  ASSERT_TRUE(drop_until_reconnected(5));
  // 4. Random failures and slow answers while changes keep coming.
  sim.SetFailureFraction(0.3, 503);
  sim.SetLatencyMs(30);
  for (int i = 0; i < 10; ++i) {
    churn.Steps(5);
    if (i % 3 == 0) sim.DropWatches();
    std::this_thread::sleep_for(100ms);
  }
  sim.SetFailureFraction(0, 500);
  sim.SetLatencyMs(0);
  churn.Steps(10);

  // The server is now quiet: the informer must converge to exactly its objects.
  State server = ServerState(sim);
  ASSERT_TRUE(testing::Eventually([&] { return StoreState(informer) == server; }, 30s))
      << "store has " << informer.Size() << " objects, server " << server.size();
  ASSERT_TRUE(testing::Eventually([&] { return mirror.state() == server; }, 10s));
  informer.Stop();
  EXPECT_EQ(mirror.contradictions(), 0);
  EXPECT_GE(informer.reflector().lists(), 2);
  EXPECT_FALSE(server.empty());
  // The faults reached the informer's requests.
  std::map<int, int> codes;
  for (const auto& r : sim.Requests()) ++codes[r.code];
  EXPECT_GE(codes[429], 3);
  EXPECT_GE(codes[500], 4);
  sim.Stop();
}

}  // namespace
}  // namespace perfgate::kube
