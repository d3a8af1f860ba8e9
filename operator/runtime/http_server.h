// A tiny HTTP/1.0 server for /healthz, /readyz and /metrics on plain sockets (one thread,
// GET only, Connection: close). Kept in this one file so the operator needs no HTTP stack of
// its own beyond the kube client's.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "common/result.h"

namespace perfgate::op {

struct HttpReply {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  // `handler` gets the path (no query) and runs on the server thread.
  explicit HttpServer(std::function<HttpReply(const std::string& path)> handler);
  ~HttpServer();
  // Binds "host:port" (port 0: any free one) and starts serving. Non-blocking.
  Status Start(const std::string& address);
  // The bound port. Thread-safe after Start.
  int port() const { return port_; }
  // Stops and joins. Blocking; idempotent.
  void Stop();

 private:
  void Loop();
  std::function<HttpReply(const std::string&)> handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace perfgate::op
