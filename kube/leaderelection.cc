#include "kube/leaderelection.h"

#include <fmt/format.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <random>
#include <utility>

#include "kube/log.h"

namespace perfgate::kube {

std::string FormatMicroTime(std::chrono::system_clock::time_point t) {
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch());
  auto secs = std::chrono::floor<std::chrono::seconds>(micros);
  auto tt = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&tt, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (micros - secs).count());
}

Result<std::chrono::system_clock::time_point> ParseMicroTime(const std::string& text) {
  int y = 0;
  int mo = 0;
  int d = 0;
  int h = 0;
  int mi = 0;
  int s = 0;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &consumed) !=
      6) {
    return InvalidArgument(fmt::format("not an RFC 3339 time: \"{}\"", text));
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  auto t = std::chrono::system_clock::from_time_t(timegm(&tm));
  auto i = static_cast<size_t>(consumed);
  if (i < text.size() && text[i] == '.') {
    ++i;
    int64_t frac = 0;
    int digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (digits < 6) {
        frac = frac * 10 + (text[i] - '0');
        ++digits;
      }
      ++i;
    }
    while (digits++ < 6) frac *= 10;
    t += std::chrono::microseconds(frac);
  }
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    int oh = 0;
    int om = 0;
    if (std::sscanf(text.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2) {
      return InvalidArgument(fmt::format("bad time zone in \"{}\"", text));
    }
    auto offset = std::chrono::hours(oh) + std::chrono::minutes(om);
    t = text[i] == '+' ? t - offset : t + offset;
  }
  return t;
}

namespace {

class ApiLeaseLock final : public LeaseLock {
 public:
  ApiLeaseLock(std::shared_ptr<Client> client, std::string ns, std::string name)
      : client_(std::move(client)), ns_(std::move(ns)), name_(std::move(name)) {}

  Result<LeaseRecord> Get() override {
    ASSIGN_OR_RETURN(Json lease, client_->Get(LeasesResource(), ns_, name_));
    return FromJson(lease);
  }
  Result<LeaseRecord> Create(const LeaseRecord& record) override {
    ASSIGN_OR_RETURN(Json lease, client_->Create(LeasesResource(), ns_, ToJson(record)));
    return FromJson(lease);
  }
  Result<LeaseRecord> Update(const LeaseRecord& record) override {
    ASSIGN_OR_RETURN(Json lease, client_->Update(LeasesResource(), ns_, ToJson(record)));
    return FromJson(lease);
  }
  std::string Describe() const override { return ns_ + "/" + name_; }

 private:
  Json ToJson(const LeaseRecord& r) const {
    Json meta = {{"name", name_}, {"namespace", ns_}};
    if (!r.resourceVersion.empty()) meta["resourceVersion"] = r.resourceVersion;
    Json spec = {{"holderIdentity", r.holderIdentity},
                 {"leaseDurationSeconds", r.leaseDurationSeconds},
                 {"acquireTime", FormatMicroTime(r.acquireTime)},
                 {"renewTime", FormatMicroTime(r.renewTime)},
                 {"leaseTransitions", r.leaseTransitions}};
    return {{"apiVersion", "coordination.k8s.io/v1"},
            {"kind", "Lease"},
            {"metadata", std::move(meta)},
            {"spec", std::move(spec)}};
  }
  Result<LeaseRecord> FromJson(const Json& lease) const {
    LeaseRecord r;
    if (lease.contains("metadata") && lease["metadata"].is_object()) {
      r.resourceVersion = lease["metadata"].value("resourceVersion", "");
    }
    if (!lease.contains("spec") || !lease["spec"].is_object()) return r;
    const Json& spec = lease["spec"];
    r.holderIdentity = spec.value("holderIdentity", "");
    r.leaseDurationSeconds = spec.value("leaseDurationSeconds", 0);
    r.leaseTransitions = spec.value("leaseTransitions", 0);
    for (auto [field, out] :
         {std::pair{"acquireTime", &r.acquireTime}, std::pair{"renewTime", &r.renewTime}}) {
      std::string text = spec.value(field, "");
      if (text.empty()) continue;
      auto t = ParseMicroTime(text);
      if (!t.ok()) {
        return t.status().WithContext(fmt::format("lease {}: spec.{}", Describe(), field));
      }
      *out = *t;
    }
    return r;
  }

  std::shared_ptr<Client> client_;
  std::string ns_;
  std::string name_;
};

bool SameRecord(const LeaseRecord& a, const LeaseRecord& b) {
  return a.holderIdentity == b.holderIdentity && a.renewTime == b.renewTime &&
         a.resourceVersion == b.resourceVersion && a.leaseTransitions == b.leaseTransitions;
}

RetryOptions LeaseRetryOptions() {
  RetryOptions r;
  r.maxRetries = 4;
  r.baseDelay = std::chrono::milliseconds(500);
  r.maxDelay = std::chrono::milliseconds(1000);
  r.maxRetryAfter = std::chrono::seconds(1);
  // Half the default renew deadline, as client-go's leader election sets its client's
  // timeout: a request on a connection the server dropped without a word fails in 5 s
  // instead of the transport's 30.
  r.tryTimeout = std::chrono::seconds(5);
  return r;
}

}  // namespace

std::shared_ptr<LeaseLock> NewLeaseLock(const std::shared_ptr<Client>& client, std::string ns,
                                        std::string name) {
  // Each lease request gives up within about 4 s (at most 5 tries, 1 s apart at
  // most, whatever Retry-After says), so a Get and an Update fit in one attempt's
  // renew deadline: with the client's own retries (10, Retry-After honoured, 5xx
  // backoff to 30 s) one failing read took 10 s to minutes, every attempt outlived
  // its deadline and was abandoned, and a candidate never took over a dead
  // leader's lease while the API server kept throttling.
  return std::make_shared<ApiLeaseLock>(client->WithRetry(LeaseRetryOptions()), std::move(ns),
                                        std::move(name));
}

struct LeaderElector::AttemptState {
  Cancellation done;       // the attempt has returned
  Cancellation abandoned;  // Run stopped waiting for it
  std::atomic<bool> held{false};
};

LeaderElector::LeaderElector(std::shared_ptr<LeaseLock> lock, LeaderElectionConfig config,
                             std::shared_ptr<Clock> clock)
    : lock_(std::move(lock)),
      config_(std::move(config)),
      clock_(clock ? std::move(clock) : RealClock()) {}

LeaderElector::~LeaderElector() {
  if (attempt_thread_.joinable()) attempt_thread_.join();
}

std::string LeaderElector::ObservedHolder() const {
  std::lock_guard lock(mu_);
  return observed_ ? observed_->holderIdentity : "";
}

bool LeaderElector::TryAcquireOrRenew() { return TryAcquireOrRenew(nullptr); }

bool LeaderElector::HeldByLiveOther(const LeaseRecord& current, std::string* previous_holder) {
  bool held_by_live_other = false;
  {
    std::lock_guard lock(mu_);
    *previous_holder = observed_ ? observed_->holderIdentity : "";
    if (!observed_ || !SameRecord(*observed_, current)) {
      observed_ = current;
      observed_at_ = clock_->Now();
    }
    const bool held_by_other =
        !current.holderIdentity.empty() && current.holderIdentity != config_.identity;
    auto lease = std::chrono::seconds(std::max(1, current.leaseDurationSeconds));
    held_by_live_other = held_by_other && observed_at_ + lease > clock_->Now();
  }
  if (held_by_live_other && *previous_holder != current.holderIdentity && config_.onNewLeader) {
    config_.onNewLeader(current.holderIdentity);
  }
  return held_by_live_other;
}

bool LeaderElector::TryAcquireOrRenew(const Cancellation* abandoned) {
  // An attempt Run gave up on must not write after the fact: a lease renewed
  // by a replica that no longer leads makes the next leader wait a whole lease.
  auto given_up = [&] {
    if (abandoned == nullptr || !abandoned->cancelled()) return false;
    Logger()->info("lease {}: attempt came back after its deadline; not writing",
                   lock_->Describe());
    return true;
  };
  auto wall = clock_->WallNow();
  int32_t duration_s = static_cast<int32_t>(
      std::chrono::duration_cast<std::chrono::seconds>(config_.leaseDuration).count());
  LeaseRecord mine;
  mine.holderIdentity = config_.identity;
  mine.leaseDurationSeconds = std::max(1, duration_s);
  mine.acquireTime = wall;
  mine.renewTime = wall;

  auto current = lock_->Get();
  if (!current.ok()) {
    if (current.status().code() != Code::kNotFound) {
      Logger()->warn("lease {}: {}", lock_->Describe(), current.status().ToString());
      return false;
    }
    if (given_up()) return false;
    auto created = lock_->Create(mine);
    if (!created.ok()) {
      Logger()->info("lease {}: create: {}", lock_->Describe(), created.status().ToString());
      return false;
    }
    std::lock_guard lock(mu_);
    observed_ = *created;
    observed_at_ = clock_->Now();
    return true;
  }

  std::string previous_holder;
  if (HeldByLiveOther(*current, &previous_holder)) return false;

  if (given_up()) return false;
  LeaseRecord next = mine;
  next.resourceVersion = current->resourceVersion;
  if (current->holderIdentity == config_.identity) {
    next.acquireTime = current->acquireTime;
    next.leaseTransitions = current->leaseTransitions;
  } else {
    next.leaseTransitions = current->leaseTransitions + 1;
  }
  auto updated = lock_->Update(next);
  if (!updated.ok()) {
    Logger()->info("lease {}: update: {}", lock_->Describe(), updated.status().ToString());
    return false;
  }
  {
    std::lock_guard lock(mu_);
    observed_ = *updated;
    observed_at_ = clock_->Now();
  }
  if (previous_holder != config_.identity && config_.onNewLeader) {
    config_.onNewLeader(config_.identity);
  }
  return true;
}

Status LeaderElector::Release() {
  LeaseRecord record;
  {
    std::lock_guard lock(mu_);
    if (!observed_ || observed_->holderIdentity != config_.identity) return Status::Ok();
    record = *observed_;
  }
  // An empty holder with a 1 s lease lets a successor acquire at once
  // (client-go does the same).
  record.holderIdentity.clear();
  record.leaseDurationSeconds = 1;
  record.renewTime = clock_->WallNow();
  auto updated = lock_->Update(record);
  if (!updated.ok()) return updated.status().WithContext("release lease " + lock_->Describe());
  std::lock_guard lock(mu_);
  observed_ = *updated;
  observed_at_ = clock_->Now();
  return Status::Ok();
}

bool LeaderElector::WaitForAttempt(const AttemptState& state,
                                   std::chrono::steady_clock::time_point deadline,
                                   const Cancellation& stop) {
  // One cancellation wakes the wait for either; shared, as a callback may still
  // be running on the cancelling thread when this returns.
  auto wake = std::make_shared<Cancellation>();
  const uint64_t on_done = state.done.OnCancel([wake] { wake->Cancel(); });
  const uint64_t on_stop = stop.OnCancel([wake] { wake->Cancel(); });
  while (!state.done.cancelled() && !stop.cancelled()) {
    const auto now = clock_->Now();
    if (now >= deadline) break;
    clock_->SleepFor(deadline - now, wake.get());
  }
  state.done.Unregister(on_done);
  stop.Unregister(on_stop);
  return state.done.cancelled();
}

LeaderElector::Outcome LeaderElector::Attempt(std::chrono::steady_clock::time_point deadline,
                                              const Cancellation& stop) {
  if (attempt_thread_.joinable()) {
    // The previous attempt outlived its deadline and may still be waiting for
    // the API server: one at a time.
    if (!WaitForAttempt(*attempt_, deadline, stop)) return Outcome::kTimedOut;
    attempt_thread_.join();
  }
  auto state = std::make_shared<AttemptState>();
  attempt_ = state;
  attempt_thread_ = std::thread([this, state] {
    state->held = TryAcquireOrRenew(&state->abandoned);
    state->done.Cancel();
  });
  if (WaitForAttempt(*state, deadline, stop)) {
    return state->held ? Outcome::kHeld : Outcome::kNotHeld;
  }
  state->abandoned.Cancel();
  return Outcome::kTimedOut;
}

void LeaderElector::Run(const Cancellation& stop) {
  std::mt19937_64 rng(std::hash<std::string>{}(config_.identity));
  std::uniform_real_distribution<double> jitter(1.0, 1.2);
  Logger()->info("lease {}: {} trying to acquire", lock_->Describe(), config_.identity);
  // When the last successful attempt started: the API server wrote the lease
  // no earlier, so the others' leaseDuration runs from no earlier either.
  std::chrono::steady_clock::time_point renewed_at{};
  bool acquired = false;
  while (!stop.cancelled()) {
    const auto started = clock_->Now();
    if (Attempt(started + config_.renewDeadline, stop) == Outcome::kHeld) {
      renewed_at = started;
      acquired = true;
      break;
    }
    auto wait =
        std::chrono::duration_cast<std::chrono::nanoseconds>(config_.retryPeriod * jitter(rng));
    clock_->SleepFor(wait, &stop);
  }
  if (!acquired) return;

  leader_ = true;
  Logger()->info("lease {}: {} is the leader", lock_->Describe(), config_.identity);
  if (config_.onStartedLeading) config_.onStartedLeading();
  bool shutdown = false;
  while (true) {
    const auto deadline = renewed_at + config_.renewDeadline;
    // Between attempts too, leadership ends at the deadline, not after a sleep.
    const auto now = clock_->Now();
    if (now >= deadline) break;
    if (!clock_->SleepFor(std::min<std::chrono::nanoseconds>(config_.retryPeriod, deadline - now),
                          &stop)) {
      shutdown = true;
      break;
    }
    if (clock_->Now() >= deadline) break;
    const auto started = clock_->Now();
    const Outcome outcome = Attempt(deadline, stop);
    if (outcome == Outcome::kHeld) {
      renewed_at = started;
    } else if (stop.cancelled()) {
      shutdown = true;
      break;
    }
  }
  leader_ = false;
  if (shutdown) {
    Logger()->info("lease {}: {} stopped leading (shutdown)", lock_->Describe(), config_.identity);
  } else {
    Logger()->error("lease {}: {} lost the lease (no renewal for {} ms)", lock_->Describe(),
                    config_.identity, config_.renewDeadline.count());
  }
  // Stop acting before the lease is handed over.
  if (config_.onStoppedLeading) config_.onStoppedLeading();
  if (shutdown && config_.releaseOnCancel) {
    // After an attempt abandoned on shutdown, what we hold is unknown: release
    // only what we last saw ourselves write, and only once that attempt is back.
    if (attempt_thread_.joinable()) attempt_thread_.join();
    if (Status s = Release(); !s.ok()) Logger()->warn("{}", s.ToString());
  }
}

}  // namespace perfgate::kube
