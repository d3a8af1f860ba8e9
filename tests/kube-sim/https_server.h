// A small blocking HTTPS/1.1 server for kube-sim (and plain HTTP for the client transport's
// tests): one thread per connection, keep-alive, chunked streaming from the connection's own
// thread (what a watch needs). Written here rather than on cpprest's http_listener because a
// test server must bind port 0 and report the port it got, a watch handler must own its
// connection for as long as it streams, and the listener's close races a response still in
// flight (a crash in about one run of 300).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/result.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace perfgate::kubesim {

struct HttpRequest {
  std::string method;
  std::string path;                            // percent-decoded, without the query
  std::map<std::string, std::string> query;    // percent-decoded
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string Header(const std::string& lowerName) const {
    auto it = headers.find(lowerName);
    return it == headers.end() ? std::string() : it->second;
  }
  std::string Query(const std::string& name) const {
    auto it = query.find(name);
    return it == query.end() ? std::string() : it->second;
  }
};

// Writes one response on the connection. Not thread-safe: used by the connection's thread.
class HttpResponder {
 public:
  virtual ~HttpResponder() = default;
  // Sends a complete response with Content-Length.
  virtual void Send(int status, std::string_view contentType, std::string_view body,
                    const std::map<std::string, std::string>& extraHeaders = {}) = 0;
  // Starts a chunked response; returns false when the client has gone.
  virtual bool StartChunked(int status, std::string_view contentType) = 0;
  // Writes one chunk and flushes it; false when the client has gone.
  virtual bool WriteChunk(std::string_view data) = 0;
  // Ends a chunked response (the connection may be reused afterwards).
  virtual void EndChunked() = 0;
  // Closes the connection after this response instead of keeping it alive.
  virtual void CloseAfter() = 0;
  virtual bool sent() const = 0;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponder&)>;

class HttpsServer {
 public:
  HttpsServer() = default;
  ~HttpsServer();
  HttpsServer(const HttpsServer&) = delete;
  HttpsServer& operator=(const HttpsServer&) = delete;

  // Binds host:port (port 0 picks a free one) and starts accepting TLS connections. Blocking
  // until bound. With `clientCaPem`, a client must present a certificate signed by that CA.
  Status Start(const std::string& host, int port, const std::string& certPem,
               const std::string& keyPem, HttpHandler handler, const std::string& clientCaPem = "");
  // The same in plain HTTP: for the client transport's own tests.
  Status StartPlain(const std::string& host, int port, HttpHandler handler);
  // Stops accepting, shuts every open connection down and joins their threads. Handlers that
  // stream must notice (WriteChunk returns false) or be woken by their owner first.
  void Stop();
  int port() const { return port_; }

 private:
  Status UseTls(const std::string& certPem, const std::string& keyPem,
                const std::string& clientCaPem);
  Status Listen(const std::string& host, int port, HttpHandler handler);
  void AcceptLoop();
  void Serve(int fd, int id);

  SSL_CTX* ctx_ = nullptr;
  int listenFd_ = -1;
  int port_ = 0;
  HttpHandler handler_;
  std::atomic<bool> stopping_{false};
  std::thread acceptThread_;
  std::mutex mu_;
  std::set<int> openFds_;
  std::map<int, std::thread> threads_;  // connection id -> thread
  std::vector<int> finished_;           // ids whose thread has returned
  int nextId_ = 0;
};

std::string PercentDecode(std::string_view s);
std::string PercentEncode(std::string_view s);

}  // namespace perfgate::kubesim
