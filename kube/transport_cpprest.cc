// The only file that includes cpprestsdk (in maintenance mode upstream: keep it
// swappable).
#include <cpprest/http_client.h>
#include <fmt/format.h>

#include <openssl/crypto.h>

#include <boost/asio/ssl.hpp>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <utility>

#include "kube/log.h"
#include "kube/transport.h"

namespace perfgate::kube {

bool HeaderLess::operator()(std::string_view a, std::string_view b) const {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    char x = static_cast<char>(std::tolower(static_cast<unsigned char>(a[i])));
    char y = static_cast<char>(std::tolower(static_cast<unsigned char>(b[i])));
    if (x != y) return x < y;
  }
  return a.size() < b.size();
}

namespace {

namespace http = web::http;
namespace ssl = boost::asio::ssl;

// OpenSSL frees its global locks in an exit handler of its own. cpprest's thread pool is joined
// by a later exit handler, and a pool thread may still be finishing a closed connection's last
// read, which frees that connection's SSL object: against freed locks it deadlocks (the process
// hangs after main returned) or crashes. Told before its first use, OpenSSL leaves that
// clean-up to the process's end, so the pool can finish. Static, so that it precedes any use of
// TLS in a binary that links this transport.
[[maybe_unused]] const bool kOpenSslOutlivesTheThreadPool =
    OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr) == 1;

Result<std::string> ReadPem(const std::string& pem, const std::string& file, const char* field) {
  if (!pem.empty() || file.empty()) return pem;
  std::ifstream in(file, std::ios::binary);
  if (!in) return NotFound(fmt::format("{}: cannot read {}", field, file));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct TlsMaterial {
  std::string caPem;
  std::string certPem;
  std::string keyPem;
};

// Applies our trust and client certificate to a context; errors name the config
// field.
Status ConfigureContext(ssl::context& ctx, const TlsMaterial& tls) {
  boost::system::error_code ec;
  if (!tls.caPem.empty()) {
    // Accept a bundle: add every certificate in the PEM, not just the first.
    std::string_view rest = tls.caPem;
    constexpr std::string_view kEnd = "-----END CERTIFICATE-----";
    int added = 0;
    while (true) {
      auto end = rest.find(kEnd);
      if (end == std::string_view::npos) break;
      std::string_view one = rest.substr(0, end + kEnd.size());
      ctx.add_certificate_authority(boost::asio::buffer(one.data(), one.size()), ec);
      if (ec) return InvalidArgument(fmt::format("certificate-authority: {}", ec.message()));
      ++added;
      rest.remove_prefix(end + kEnd.size());
    }
    if (added == 0) return InvalidArgument("certificate-authority: no PEM certificate found");
  }
  if (!tls.certPem.empty()) {
    ctx.use_certificate_chain(boost::asio::buffer(tls.certPem), ec);
    if (ec) return InvalidArgument(fmt::format("client-certificate: {}", ec.message()));
    ctx.use_private_key(boost::asio::buffer(tls.keyPem), ssl::context::pem, ec);
    if (ec) return InvalidArgument(fmt::format("client-key: {}", ec.message()));
  }
  return Status::Ok();
}

// The request is not named here: the Client adds it to every error.
Status FromException(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const pplx::task_canceled&) {
    return Cancelled("cancelled");
  } catch (const http::http_exception& e) {
    if (e.error_code() == std::errc::timed_out) {
      return DeadlineExceeded(e.what());
    }
    return Unavailable(e.what());
  } catch (const std::exception& e) {
    return Unavailable(e.what());
  } catch (...) {
    return {Code::kUnknown, "unknown error"};
  }
}

// Waits for `task`; every cpprest exception is caught in the task-based
// continuation and becomes a Status, so nothing escapes a pplx task unobserved.
// (pplx needs a default constructible result, hence the optional.)
template <typename T>
Result<T> Await(pplx::task<T> task) {
  struct Outcome {
    std::optional<T> value;
    Status status;
  };
  Outcome outcome = task.then([](pplx::task<T> t) {
                          Outcome o;
                          try {
                            o.value = t.get();
                          } catch (...) {
                            o.status = FromException(std::current_exception());
                          }
                          return o;
                        })
                        .get();
  if (!outcome.value) return outcome.status;
  return std::move(*outcome.value);
}

class CpprestTransport final : public Transport {
 public:
  CpprestTransport(RestConfig config, TlsMaterial tls, CpprestTransportOptions options)
      : config_(std::move(config)), tls_(std::move(tls)), options_(options) {
    client_ = std::make_unique<http::client::http_client>(
        utility::conversions::to_string_t(config_.server),
        MakeConfig(options_.requestTimeoutSeconds));
  }

  Result<HttpResponse> Send(const HttpRequest& request) override {
    std::chrono::seconds timeout = request.idleTimeoutSeconds;
    if (timeout.count() <= 0 || timeout == options_.requestTimeoutSeconds) {
      return Run(*client_, request, nullptr, nullptr);
    }
    // A timeout is a client's setting in cpprest: one pooled client per distinct timeout
    // (there are a handful: the leader election's, the default), kept for its connections.
    http::client::http_client* client = nullptr;
    {
      std::lock_guard lock(clients_mu_);
      auto& slot = clients_by_timeout_[timeout.count()];
      if (!slot) {
        slot = std::make_unique<http::client::http_client>(
            utility::conversions::to_string_t(config_.server), MakeConfig(timeout));
      }
      client = slot.get();
    }
    return Run(*client, request, nullptr, nullptr);
  }

  Result<HttpResponse> Stream(const HttpRequest& request, const ChunkCallback& on_chunk,
                              const Cancellation* cancel) override {
    auto timeout = request.idleTimeoutSeconds.count() > 0 ? request.idleTimeoutSeconds
                                                          : options_.requestTimeoutSeconds;
    // A client per stream: its timeout is the stream's idle timeout, and a
    // watch holds its connection for minutes anyway.
    http::client::http_client client(utility::conversions::to_string_t(config_.server),
                                     MakeConfig(timeout));
    return Run(client, request, &on_chunk, cancel);
  }

 private:
  http::client::http_client_config MakeConfig(std::chrono::seconds timeout) const {
    http::client::http_client_config c;
    c.set_timeout(timeout);
    c.set_validate_certificates(!config_.insecureSkipTlsVerify);
    TlsMaterial tls = tls_;
    c.set_ssl_context_callback([tls](ssl::context& ctx) {
      // Validated in NewCpprestTransport; a failure here cannot happen short of
      // memory.
      if (Status s = ConfigureContext(ctx, tls); !s.ok()) {
        Logger()->error("TLS setup: {}", s.ToString());
      }
    });
    return c;
  }

  Result<HttpResponse> Run(http::client::http_client& client, const HttpRequest& request,
                           const ChunkCallback* on_chunk, const Cancellation* cancel) const {
    http::http_request msg(request.method);
    msg.set_request_uri(web::uri(request.path));
    std::string content_type;
    for (const auto& [k, v] : request.headers) {
      if (!HeaderLess{}(k, "Content-Type") && !HeaderLess{}("Content-Type", k)) {
        content_type = v;
        continue;
      }
      msg.headers().add(k, v);
    }
    if (!request.body.empty() || !content_type.empty()) {
      msg.set_body(request.body, content_type.empty() ? "application/json" : content_type);
    }

    pplx::cancellation_token_source cts;
    uint64_t registration = 0;
    if (cancel != nullptr) registration = cancel->OnCancel([cts] { cts.cancel(); });
    struct Unregister {
      const Cancellation* cancel;
      uint64_t id;
      ~Unregister() {
        if (cancel != nullptr && id != 0) cancel->Unregister(id);
      }
    } unregister{cancel, registration};

    Result<http::http_response> sent = Await(client.request(msg, cts.get_token()));
    if (!sent.ok()) return sent.status();
    http::http_response& response = *sent;

    HttpResponse out;
    out.status = response.status_code();
    for (const auto& [k, v] : response.headers()) out.headers[k] = v;
    const bool success = out.status >= 200 && out.status < 300;
    if (on_chunk == nullptr || !success) {
      auto body = Await(response.extract_utf8string(true));
      if (!body.ok()) return body.status();
      out.body = std::move(*body);
      return out;
    }

    // Stream: hand over whatever has arrived, as soon as it has arrived.
    auto buf = response.body().streambuf();
    std::string chunk;
    constexpr size_t kMaxChunk = size_t{64} * 1024;
    while (true) {
      Result<int> first = Await(buf.bumpc());
      if (cancel != nullptr && cancel->cancelled()) return Cancelled("cancelled");
      if (!first.ok()) return first.status();
      if (*first == std::char_traits<char>::eof()) break;
      chunk.assign(1, static_cast<char>(*first));
      size_t more = std::min<size_t>(
          static_cast<size_t>(std::max<std::streamsize>(0, buf.in_avail())), kMaxChunk);
      if (more > 0) {
        chunk.resize(1 + more);
        auto got = Await(buf.getn(reinterpret_cast<uint8_t*>(chunk.data() + 1), more));
        if (!got.ok()) return got.status();
        chunk.resize(1 + *got);
      }
      if (!(*on_chunk)(chunk)) break;
    }
    return out;
  }

  RestConfig config_;
  TlsMaterial tls_;
  CpprestTransportOptions options_;
  std::unique_ptr<http::client::http_client> client_;
  std::mutex clients_mu_;
  std::map<int64_t, std::unique_ptr<http::client::http_client>> clients_by_timeout_;
};

}  // namespace

Result<std::shared_ptr<Transport>> NewCpprestTransport(const RestConfig& config,
                                                       CpprestTransportOptions options) {
  const std::string where = config.source.empty() ? "config" : config.source;
  TlsMaterial tls;
  auto ca = ReadPem(config.caPem, config.caFile, "certificate-authority");
  if (!ca.ok()) return ca.status().WithContext(where);
  tls.caPem = *ca;
  auto cert = ReadPem(config.clientCertPem, config.clientCertFile, "client-certificate");
  if (!cert.ok()) return cert.status().WithContext(where);
  tls.certPem = *cert;
  auto key = ReadPem(config.clientKeyPem, config.clientKeyFile, "client-key");
  if (!key.ok()) return key.status().WithContext(where);
  tls.keyPem = *key;
  if (config.server.rfind("https://", 0) == 0) {
    try {
      ssl::context probe(ssl::context::tls_client);
      if (Status s = ConfigureContext(probe, tls); !s.ok()) return s.WithContext(where);
    } catch (const std::exception& e) {
      return Internal(fmt::format("{}: TLS context: {}", where, e.what()));
    }
  }
  try {
    return std::shared_ptr<Transport>(
        std::make_shared<CpprestTransport>(config, std::move(tls), options));
  } catch (const std::exception& e) {
    // An unparsable server URL is the usual cause.
    return InvalidArgument(fmt::format("{}: server \"{}\": {}", where, config.server, e.what()));
  }
}

}  // namespace perfgate::kube
