#include "tests/kube-sim/https_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace perfgate::kubesim {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Status";
  }
}

// One client connection: over TLS (`ssl`), or plain on `fd` when `ssl` is null.
class Connection : public HttpResponder {
 public:
  Connection(SSL* ssl, int fd) : ssl_(ssl), fd_(fd) {}

  bool WriteAll(std::string_view data) {
    while (!data.empty()) {
      const int n = ssl_ != nullptr
                        ? SSL_write(ssl_, data.data(), static_cast<int>(data.size()))
                        : static_cast<int>(::send(fd_, data.data(), data.size(), MSG_NOSIGNAL));
      if (n <= 0) {
        broken_ = true;
        return false;
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads until `buf_` holds at least `want` bytes past `pos`; false on EOF/error.
  bool Fill(size_t want) {
    char tmp[16384];
    while (buf_.size() < want) {
      const int n = ssl_ != nullptr ? SSL_read(ssl_, tmp, sizeof tmp)
                                    : static_cast<int>(::recv(fd_, tmp, sizeof tmp, 0));
      if (n <= 0) return false;
      buf_.append(tmp, static_cast<size_t>(n));
    }
    return true;
  }

  bool ReadLine(std::string& line) {
    for (;;) {
      size_t eol = buf_.find("\r\n");
      if (eol != std::string::npos) {
        line = buf_.substr(0, eol);
        buf_.erase(0, eol + 2);
        return true;
      }
      if (buf_.size() > (1 << 20)) return false;
      if (!Fill(buf_.size() + 1)) return false;
    }
  }

  bool ReadRequest(HttpRequest& req) {
    std::string line;
    do {
      if (!ReadLine(line)) return false;
    } while (line.empty());
    size_t sp1 = line.find(' ');
    size_t sp2 = line.rfind(' ');
    if (sp1 == std::string::npos || sp2 == sp1) return false;
    req.method = line.substr(0, sp1);
    std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    size_t q = target.find('?');
    req.path = PercentDecode(target.substr(0, q));
    if (q != std::string::npos) {
      std::string qs = target.substr(q + 1);
      size_t start = 0;
      while (start <= qs.size()) {
        size_t amp = qs.find('&', start);
        std::string kv =
            qs.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
        if (!kv.empty()) {
          size_t eq = kv.find('=');
          std::string k = kv.substr(0, eq);
          std::string v = eq == std::string::npos ? "" : kv.substr(eq + 1);
          std::replace(v.begin(), v.end(), '+', ' ');
          req.query[PercentDecode(k)] = PercentDecode(v);
        }
        if (amp == std::string::npos) break;
        start = amp + 1;
      }
    }
    for (;;) {
      if (!ReadLine(line)) return false;
      if (line.empty()) break;
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string value = line.substr(colon + 1);
      size_t b = value.find_first_not_of(" \t");
      value = b == std::string::npos ? "" : value.substr(b);
      std::string name = Lower(line.substr(0, colon));
      auto it = req.headers.find(name);
      if (it != req.headers.end()) {
        it->second += "," + value;
      } else {
        req.headers[name] = value;
      }
    }
    if (Lower(req.Header("transfer-encoding")).find("chunked") != std::string::npos) {
      for (;;) {
        if (!ReadLine(line)) return false;
        size_t size = std::stoul(line, nullptr, 16);
        if (size == 0) {
          ReadLine(line);
          break;
        }
        if (!Fill(size + 2)) return false;
        req.body.append(buf_, 0, size);
        buf_.erase(0, size + 2);
      }
    } else {
      std::string cl = req.Header("content-length");
      size_t len = cl.empty() ? 0 : std::stoul(cl);
      if (!Fill(len)) return false;
      req.body = buf_.substr(0, len);
      buf_.erase(0, len);
    }
    closeAfter_ = Lower(req.Header("connection")) == "close";
    return true;
  }

  void Reset() {
    sent_ = false;
    chunked_ = false;
  }

  void Send(int status, std::string_view contentType, std::string_view body,
            const std::map<std::string, std::string>& extraHeaders) override {
    if (sent_) return;
    sent_ = true;
    std::string head =
        "HTTP/1.1 " + std::to_string(status) + " " + std::string(ReasonPhrase(status)) + "\r\n";
    head += "Content-Type: " + std::string(contentType) + "\r\n";
    head += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    head += "Cache-Control: no-cache, private\r\n";
    for (const auto& [k, v] : extraHeaders) head += k + ": " + v + "\r\n";
    if (closeAfter_) head += "Connection: close\r\n";
    head += "\r\n";
    head.append(body);
    WriteAll(head);
  }

  bool StartChunked(int status, std::string_view contentType) override {
    if (sent_) return false;
    sent_ = true;
    chunked_ = true;
    std::string head =
        "HTTP/1.1 " + std::to_string(status) + " " + std::string(ReasonPhrase(status)) + "\r\n";
    head += "Content-Type: " + std::string(contentType) + "\r\n";
    head += "Transfer-Encoding: chunked\r\nCache-Control: no-cache, private\r\n\r\n";
    return WriteAll(head);
  }

  bool WriteChunk(std::string_view data) override {
    if (data.empty()) return !broken_;
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string chunk = size;
    chunk.append(data);
    chunk += "\r\n";
    return WriteAll(chunk);
  }

  void EndChunked() override {
    if (chunked_) WriteAll("0\r\n\r\n");
    chunked_ = false;
  }

  void CloseAfter() override { closeAfter_ = true; }
  bool sent() const override { return sent_; }
  bool closeAfter() const { return closeAfter_ || broken_; }

 private:
  SSL* ssl_;
  int fd_;
  std::string buf_;
  bool sent_ = false;
  bool chunked_ = false;
  bool closeAfter_ = false;
  bool broken_ = false;
};

}  // namespace

std::string PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      unsigned v = 0;
      if (std::sscanf(std::string(s.substr(i + 1, 2)).c_str(), "%2x", &v) == 1) {
        out.push_back(static_cast<char>(v));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::string PercentEncode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

HttpsServer::~HttpsServer() { Stop(); }

Status HttpsServer::Start(const std::string& host, int port, const std::string& certPem,
                          const std::string& keyPem, HttpHandler handler,
                          const std::string& clientCaPem) {
  RETURN_IF_ERROR(UseTls(certPem, keyPem, clientCaPem));
  return Listen(host, port, std::move(handler));
}

Status HttpsServer::StartPlain(const std::string& host, int port, HttpHandler handler) {
  return Listen(host, port, std::move(handler));
}

Status HttpsServer::UseTls(const std::string& certPem, const std::string& keyPem,
                           const std::string& clientCaPem) {
  ctx_ = SSL_CTX_new(TLS_server_method());
  if (ctx_ == nullptr) return Internal("SSL_CTX_new failed");
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  BIO* cb = BIO_new_mem_buf(certPem.data(), static_cast<int>(certPem.size()));
  X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
  BIO_free(cb);
  BIO* kb = BIO_new_mem_buf(keyPem.data(), static_cast<int>(keyPem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
  BIO_free(kb);
  if (cert == nullptr || key == nullptr || SSL_CTX_use_certificate(ctx_, cert) != 1 ||
      SSL_CTX_use_PrivateKey(ctx_, key) != 1) {
    X509_free(cert);
    EVP_PKEY_free(key);
    return Internal("loading the serving certificate failed");
  }
  X509_free(cert);
  EVP_PKEY_free(key);
  if (clientCaPem.empty()) return Status::Ok();
  // x509 client authentication: a client without a certificate signed by the CA is refused in
  // the handshake, as kube-apiserver refuses one under --client-ca-file when nothing else
  // authenticates it.
  BIO* ab = BIO_new_mem_buf(clientCaPem.data(), static_cast<int>(clientCaPem.size()));
  X509* ca = PEM_read_bio_X509(ab, nullptr, nullptr, nullptr);
  BIO_free(ab);
  if (ca == nullptr || X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_), ca) != 1) {
    X509_free(ca);
    return Internal("loading the client CA failed");
  }
  X509_free(ca);
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return Status::Ok();
}

Status HttpsServer::Listen(const std::string& host, int port, HttpHandler handler) {
  handler_ = std::move(handler);
  // A client that hangs up mid-watch must end that watch, not the process.
  ::signal(SIGPIPE, SIG_IGN);
  listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return InvalidArgument("--listen: not an IPv4 address: " + host);
  }
  if (::bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Unavailable("bind " + host + ":" + std::to_string(port) + ": " + std::strerror(errno));
  }
  ::listen(listenFd_, 128);
  socklen_t len = sizeof addr;
  ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptThread_ = std::thread([this] { AcceptLoop(); });
  return Status::Ok();
}

void HttpsServer::AcceptLoop() {
  while (!stopping_) {
    int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) return;
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::vector<std::thread> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        ::close(fd);
        return;
      }
      // Join connections that have ended, so a long test run does not pile up threads.
      for (int id : finished_) {
        auto it = threads_.find(id);
        if (it != threads_.end()) {
          done.push_back(std::move(it->second));
          threads_.erase(it);
        }
      }
      finished_.clear();
      openFds_.insert(fd);
      int id = nextId_++;
      threads_[id] = std::thread([this, fd, id] { Serve(fd, id); });
    }
    for (auto& t : done) t.join();
  }
}

void HttpsServer::Serve(int fd, int id) {
  SSL* ssl = nullptr;
  if (ctx_ != nullptr) {
    ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, fd);
  }
  if (ssl == nullptr || SSL_accept(ssl) == 1) {
    Connection conn(ssl, fd);
    while (!stopping_) {
      HttpRequest req;
      bool read = false;
      try {
        read = conn.ReadRequest(req);
      } catch (const std::exception&) {
        read = false;  // a malformed length or chunk size: drop the connection
      }
      if (!read) break;
      conn.Reset();
      try {
        handler_(req, conn);
      } catch (const std::exception& e) {
        // A handler bug must answer 500 and keep the server up, as kube-apiserver's panic
        // recovery does.
        std::fprintf(stderr, "kube-sim: %s %s: %s\n", req.method.c_str(), req.path.c_str(),
                     e.what());
        std::string body =
            std::string(R"({"kind":"Status","apiVersion":"v1","status":"Failure",)") +
            R"("reason":"InternalError","code":500,"message":"Internal error occurred"})";
        conn.Send(500, "application/json", body, {});
      }
      if (!conn.sent()) conn.Send(500, "text/plain", "no response", {});
      if (conn.closeAfter()) break;
    }
    if (ssl != nullptr) SSL_shutdown(ssl);
  }
  if (ssl != nullptr) SSL_free(ssl);
  std::lock_guard<std::mutex> lock(mu_);
  if (openFds_.erase(fd) > 0) ::close(fd);
  finished_.push_back(id);
}

void HttpsServer::Stop() {
  if (listenFd_ < 0) return;
  stopping_ = true;
  ::shutdown(listenFd_, SHUT_RDWR);
  ::close(listenFd_);
  if (acceptThread_.joinable()) acceptThread_.join();
  std::map<int, std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : openFds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (auto& [id, t] : threads) t.join();
  listenFd_ = -1;
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  ctx_ = nullptr;
}

}  // namespace perfgate::kubesim
