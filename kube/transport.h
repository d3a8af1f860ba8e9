// The HTTP transport to the API server, as a pure interface. The cpprestsdk
// implementation lives in transport_cpprest.cc (the only file that includes
// cpprest); tests script a fake.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"
#include "kube/config.h"

namespace perfgate::kube {

// Header names compare case-insensitively, as HTTP says.
struct HeaderLess {
  bool operator()(std::string_view a, std::string_view b) const;
};
using Headers = std::map<std::string, std::string, HeaderLess>;

struct HttpRequest {
  std::string method;  // "GET", "POST", "PUT", "PATCH", "DELETE"
  std::string path;    // absolute path plus query, e.g. "/api/v1/pods?limit=500"
  Headers headers;     // Authorization, Content-Type, Accept, ...
  std::string body;
  // Idle timeout for each read of the response (not a total); 0 = the
  // transport's default.
  std::chrono::seconds idleTimeoutSeconds{0};
  // Whether the client retries a 429. An eviction's 429 is a PodDisruptionBudget's answer,
  // not a busy server: its caller decides when to ask again.
  bool retryTooManyRequests = true;
};

struct HttpResponse {
  int status = 0;  // HTTP status code
  Headers headers;
  // The whole body for Send, and for Stream when the status is not 2xx; empty
  // for a 2xx Stream (its body went to the chunk callback).
  std::string body;
};

// Receives the body of a streamed 2xx response as it arrives, in arbitrary
// pieces. Return false to stop reading (the stream then ends with OK).
using ChunkCallback = std::function<bool(std::string_view chunk)>;

class Transport {
 public:
  virtual ~Transport() = default;

  // Sends one request and reads the whole response. Blocking; thread-safe. An
  // HTTP error status is a response, not an error: the Status is not OK only
  // when no response came (connect, TLS, timeout: kUnavailable /
  // kDeadlineExceeded; cancelled: kCancelled).
  virtual Result<HttpResponse> Send(const HttpRequest& request) = 0;

  // Sends a request whose 2xx body is delivered to `on_chunk` piece by piece as
  // it arrives, on the calling thread. Blocks until the body ends (OK),
  // `on_chunk` returns false (OK), `cancel` (may be null) fires (kCancelled),
  // or the connection fails or stays idle past the idle timeout (kUnavailable /
  // kDeadlineExceeded: for a watch, a normal end followed by a reconnect).
  // Thread-safe; any number of streams may run at once.
  virtual Result<HttpResponse> Stream(const HttpRequest& request, const ChunkCallback& on_chunk,
                                      const Cancellation* cancel) = 0;
};

// Options for the cpprestsdk transport.
struct CpprestTransportOptions {
  // Idle timeout of a request or stream whose HttpRequest::idleTimeoutSeconds is 0.
  std::chrono::seconds requestTimeoutSeconds{30};
};

// The cpprestsdk transport for `config` (server URL, TLS: CA, client
// certificate, insecure). Authorization headers are the Client's job, not the
// transport's. Errors name the config field that is wrong (e.g. an unreadable
// CA file).
Result<std::shared_ptr<Transport>> NewCpprestTransport(const RestConfig& config,
                                                       CpprestTransportOptions options = {});

}  // namespace perfgate::kube
