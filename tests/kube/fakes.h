// Test doubles for the Kubernetes client: a fake clock and a scripted
// transport.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "kube/transport.h"

namespace perfgate::kube::testing {

// Time moves only when told to, or when someone sleeps (a sleep advances it at
// once). Thread-safe.
class FakeClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(now_ns_.load()));
  }
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(1800000000) + std::chrono::nanoseconds(now_ns_.load())));
  }
  bool SleepFor(std::chrono::nanoseconds duration, const Cancellation* cancel) override {
    {
      std::lock_guard lock(mu_);
      sleeps_.push_back(duration);
    }
    if (duration.count() > 0) now_ns_ += duration.count();
    // Yield so a test thread polling for a state is not starved by a retry
    // loop.
    std::this_thread::yield();
    return cancel == nullptr || !cancel->cancelled();
  }
  void Advance(std::chrono::nanoseconds d) { now_ns_ += d.count(); }
  std::vector<std::chrono::nanoseconds> sleeps() const {
    std::lock_guard lock(mu_);
    return sleeps_;
  }

 private:
  std::atomic<int64_t> now_ns_{1'000'000'000'000};
  mutable std::mutex mu_;
  std::vector<std::chrono::nanoseconds> sleeps_;
};

// A scripted reply. For Stream: `chunks` are delivered in order (then `hold`
// keeps the stream open until cancelled, like an idle watch); a non-2xx status
// delivers `body` instead.
struct Reply {
  int status = 200;
  Headers headers;
  std::string body;
  std::vector<std::string> chunks;
  bool hold = false;
  Status error;  // non-OK: the transport fails (no response)

  Reply WithStatus(int s) && {
    status = s;
    return std::move(*this);
  }
  Reply WithHeaders(Headers h) && {
    headers = std::move(h);
    return std::move(*this);
  }
  Reply WithBody(std::string b) && {
    body = std::move(b);
    return std::move(*this);
  }
  Reply WithChunks(std::vector<std::string> c) && {
    chunks = std::move(c);
    return std::move(*this);
  }
  Reply WithError(Status e) && {
    error = std::move(e);
    return std::move(*this);
  }
};

// Matches requests to scripted replies: each request takes the first unused
// script entry whose method matches and whose path starts with the prefix.
// Unscripted: Send answers 599, Stream holds until cancelled (an idle watch).
// Every request is recorded. Thread-safe.
class FakeTransport final : public Transport {
 public:
  void Expect(std::string method, std::string path_prefix, Reply reply) {
    std::lock_guard lock(mu_);
    script_.push_back({std::move(method), std::move(path_prefix), std::move(reply), false});
  }

  Result<HttpResponse> Send(const HttpRequest& request) override {
    auto reply = Take(request);
    if (!reply) return HttpResponse{599, {}, "unscripted request " + request.path};
    if (!reply->error.ok()) return reply->error;
    return HttpResponse{reply->status, reply->headers, reply->body};
  }

  Result<HttpResponse> Stream(const HttpRequest& request, const ChunkCallback& on_chunk,
                              const Cancellation* cancel) override {
    auto reply = Take(request);
    if (!reply) {
      reply = Reply{};
      reply->hold = true;
    }
    if (!reply->error.ok()) return reply->error;
    if (reply->status < 200 || reply->status >= 300) {
      return HttpResponse{reply->status, reply->headers, reply->body};
    }
    for (const auto& chunk : reply->chunks) {
      if (cancel != nullptr && cancel->cancelled()) return Cancelled("cancelled");
      if (!on_chunk(chunk)) return HttpResponse{reply->status, reply->headers, ""};
    }
    if (reply->hold) {
      ++holding_;
      while (cancel != nullptr && !cancel->WaitFor(std::chrono::milliseconds(50))) {
      }
      --holding_;
      return Cancelled("cancelled");
    }
    return HttpResponse{reply->status, reply->headers, ""};
  }

  std::vector<HttpRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  // Script entries not yet used.
  size_t unused() const {
    std::lock_guard lock(mu_);
    size_t n = 0;
    for (const auto& e : script_) n += e.used ? 0 : 1;
    return n;
  }
  int holding() const { return holding_.load(); }

 private:
  struct Entry {
    std::string method;
    std::string prefix;
    Reply reply;
    bool used;
  };
  std::optional<Reply> Take(const HttpRequest& request) {
    std::lock_guard lock(mu_);
    requests_.push_back(request);
    for (auto& e : script_) {
      if (e.used || e.method != request.method) continue;
      if (request.path.rfind(e.prefix, 0) != 0) continue;
      e.used = true;
      return std::move(e.reply);  // used once: no copy stays behind
    }
    return std::nullopt;
  }

  mutable std::mutex mu_;
  std::deque<Entry> script_;
  std::vector<HttpRequest> requests_;
  std::atomic<int> holding_{0};
};

// Polls `pred` (real time) up to `timeout`; true once it holds.
inline bool Eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return pred();
}

}  // namespace perfgate::kube::testing
