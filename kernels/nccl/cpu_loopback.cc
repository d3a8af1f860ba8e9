#include "kernels/nccl/cpu_loopback.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <utility>

#include "kernels/nccl/gang.h"
#include "kernels/nccl/pattern.h"

namespace perfgate::kernels::nccl {
namespace {

Status Aborted(std::string message) { return {Code::kAborted, std::move(message)}; }

constexpr char kHello[] = "perfgate-cpu-loopback";
constexpr double kPollSeconds = 1e-3;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// A socket descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Close();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Close() noexcept {
    if (fd_ >= 0) (void)::close(fd_);
    fd_ = -1;
  }
  int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

Status SetNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return Internal(Errno("fcntl O_NONBLOCK"));
  }
  const int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return Status::Ok();
}

Result<sockaddr_storage> Resolve(const HostPort& address, socklen_t* length) {
  addrinfo hints{};
  hints.ai_family = AF_INET;  // the stand-in speaks IPv4 (loopback in tests, pod IPs in kube-sim)
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  const int rc = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Unavailable("cannot resolve " + address.ToString() + ": " + ::gai_strerror(rc));
  }
  sockaddr_storage out{};
  std::memcpy(&out, found->ai_addr, found->ai_addrlen);
  *length = found->ai_addrlen;
  ::freeaddrinfo(found);
  return out;
}

std::string PeerHost(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof(text));
  return text;
}

// One peer's connection in an exchange: bytes to send and a place for bytes to receive.
struct Transfer {
  int fd = -1;
  int peer = -1;
  const char* send = nullptr;
  std::size_t send_bytes = 0;
  std::size_t sent = 0;
  char* recv = nullptr;
  std::size_t recv_bytes = 0;
  std::size_t received = 0;
};

// One round of non-blocking progress on every transfer: true when all are complete.
Result<bool> Progress(std::vector<Transfer>& transfers, double wait_seconds) {
  std::vector<pollfd> fds;
  std::vector<Transfer*> owners;
  for (auto& t : transfers) {
    short events = 0;
    if (t.sent < t.send_bytes) events |= POLLOUT;
    if (t.received < t.recv_bytes) events |= POLLIN;
    if (events == 0) continue;
    if (t.fd < 0) return Aborted("connection to rank " + std::to_string(t.peer) + " is closed");
    fds.push_back(pollfd{t.fd, events, 0});
    owners.push_back(&t);
  }
  if (fds.empty()) return true;
  const int rc = ::poll(fds.data(), fds.size(), static_cast<int>(wait_seconds * 1000));
  if (rc < 0 && errno != EINTR) return Internal(Errno("poll"));
  for (std::size_t i = 0; rc > 0 && i < fds.size(); ++i) {
    Transfer& t = *owners[i];
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && t.received < t.recv_bytes) {
      const ssize_t n = ::recv(t.fd, t.recv + t.received, t.recv_bytes - t.received, 0);
      if (n == 0) return Aborted("rank " + std::to_string(t.peer) + " closed the connection");
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return Aborted(Errno("receive from rank " + std::to_string(t.peer)));
      }
      if (n > 0) t.received += static_cast<std::size_t>(n);
    }
    if ((fds[i].revents & POLLOUT) != 0 && t.sent < t.send_bytes) {
      const ssize_t n = ::send(t.fd, t.send + t.sent, t.send_bytes - t.sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return Aborted(Errno("send to rank " + std::to_string(t.peer)));
      }
      if (n > 0) t.sent += static_cast<std::size_t>(n);
    }
  }
  for (const auto& t : transfers) {
    if (t.sent < t.send_bytes || t.received < t.recv_bytes) return false;
  }
  return true;
}

// Reads text from `fd` until it ends with `terminator`; true once it does.
Result<bool> ReadUntil(int fd, std::string& text, const std::string& terminator, int peer) {
  pollfd p{fd, POLLIN, 0};
  const int rc = ::poll(&p, 1, static_cast<int>(kPollSeconds * 1000));
  if (rc < 0 && errno != EINTR) return Internal(Errno("poll"));
  if (rc > 0) {
    char buffer[4096];
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n == 0) return Aborted("rank " + std::to_string(peer) + " closed the connection");
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return Aborted(Errno("receive from rank " + std::to_string(peer)));
    }
    if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
  }
  return text.size() >= terminator.size() &&
         text.compare(text.size() - terminator.size(), terminator.size(), terminator) == 0;
}

Status SendAll(int fd, const std::string& text, int peer, const WatchdogOptions& options,
               Clock& clock, const std::string& what) {
  std::vector<Transfer> t(1);
  t[0].fd = fd;
  t[0].peer = peer;
  t[0].send = text.data();
  t[0].send_bytes = text.size();
  return WaitWithWatchdog(
      what, options, [&] { return Progress(t, kPollSeconds); }, [](const std::string&) {}, clock);
}

// Connects to `address`, retrying while nobody listens there yet (the peer may start later).
class Connector {
 public:
  explicit Connector(HostPort address) : address_(std::move(address)) {}
  Result<bool> Step(Clock& clock) {
    if (!fd_.valid()) {
      if (clock.NowSeconds() < retry_at_) return false;
      socklen_t len = 0;
      ASSIGN_OR_RETURN(sockaddr_storage addr, Resolve(address_, &len));
      fd_ = Fd(::socket(addr.ss_family, SOCK_STREAM, 0));
      if (!fd_.valid()) return Internal(Errno("socket"));
      RETURN_IF_ERROR(SetNonBlocking(fd_.get()));
      if (::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), len) == 0) return true;
      if (errno != EINPROGRESS) return Retry(clock);
    }
    pollfd p{fd_.get(), POLLOUT, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(kPollSeconds * 1000));
    if (rc <= 0) return false;
    int error = 0;
    socklen_t len = sizeof(error);
    ::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) return Retry(clock);
    return true;
  }
  Fd Take() { return std::move(fd_); }

 private:
  Result<bool> Retry(Clock& clock) {
    fd_.Close();
    retry_at_ = clock.NowSeconds() + 0.01;
    return false;
  }
  HostPort address_;
  Fd fd_;
  double retry_at_ = 0;
};

// Accepts one connection on a non-blocking listener.
Result<bool> AcceptStep(int listener, Fd& out) {
  pollfd p{listener, POLLIN, 0};
  const int rc = ::poll(&p, 1, static_cast<int>(kPollSeconds * 1000));
  if (rc <= 0) return false;
  const int fd = ::accept(listener, nullptr, nullptr);
  if (fd < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
    return Internal(Errno("accept"));
  }
  out = Fd(fd);
  RETURN_IF_ERROR(SetNonBlocking(fd));
  return true;
}

class CpuLoopbackCommunicator final : public Communicator {
 public:
  CpuLoopbackCommunicator(CpuLoopbackOptions options, Clock& clock)
      : options_(std::move(options)),
        clock_(clock),
        rank_(options_.comm.ranks.front()),
        world_(options_.comm.world_size),
        peers_(static_cast<std::size_t>(world_)) {}

  Status Connect() {
    if (world_ == 1) return Status::Ok();
    const WatchdogOptions wd{options_.comm.init_timeout_seconds, kPollSeconds};
    const double start = clock_.NowSeconds();
    auto remaining = [&] {
      return WatchdogOptions{std::max(0.0, wd.timeout_seconds - (clock_.NowSeconds() - start)),
                             kPollSeconds};
    };
    const std::string where = "CPU stand-in rendezvous of rank " + std::to_string(rank_) + " of " +
                              std::to_string(world_) + " at " + options_.comm.rank0_address;
    auto close_all = [this](const std::string&) { CloseAll(); };
    ASSIGN_OR_RETURN(TcpListener data, TcpListener::Bind({"0.0.0.0", 0}));
    data_port_ = data.port();
    data_listener_ = Fd(data.Release());
    ASSIGN_OR_RETURN(HostPort rank0, ParseHostPort(options_.comm.rank0_address, true));

    std::vector<HostPort> table(static_cast<std::size_t>(world_));
    if (rank_ == 0) {
      TcpListener listener =
          options_.rank0_listener ? std::move(*options_.rank0_listener) : TcpListener{};
      if (listener.fd() < 0) {
        ASSIGN_OR_RETURN(listener, TcpListener::Bind(rank0));
      }
      table[0] = {rank0.host, data_port_};
      std::vector<Fd> hellos(static_cast<std::size_t>(world_));
      std::vector<std::pair<Fd, std::string>> pending;  // accepted, hello not read yet
      int joined = 1;
      auto missing = [&] {
        std::string m;
        for (int r = 1; r < world_; ++r) {
          if (table[r].port == 0) m += (m.empty() ? "" : ",") + std::to_string(r);
        }
        return m;
      };
      Status st = WaitWithWatchdog(
          where + " (rank 0 waiting for its peers)", remaining(),
          [&]() -> Result<bool> {
            Fd accepted;
            ASSIGN_OR_RETURN(bool got, AcceptStep(listener.fd(), accepted));
            if (got) pending.emplace_back(std::move(accepted), std::string());
            for (auto it = pending.begin(); it != pending.end();) {
              ASSIGN_OR_RETURN(bool line, ReadUntil(it->first.get(), it->second, "\n", -1));
              if (!line) {
                ++it;
                continue;
              }
              std::istringstream in(it->second);
              std::string magic;
              int rank = -1;
              int world = -1;
              int port = 0;
              in >> magic >> rank >> world >> port;
              if (magic != kHello || world != world_ || rank < 1 || rank >= world_ ||
                  table[rank].port != 0) {
                return InvalidArgument("rendezvous: unexpected hello \"" + it->second +
                                       "\" (this world has " + std::to_string(world_) + " ranks)");
              }
              table[rank] = {PeerHost(it->first.get()), port};
              hellos[rank] = std::move(it->first);
              it = pending.erase(it);
              ++joined;
            }
            return joined == world_;
          },
          close_all, clock_);
      if (!st.ok() && st.code() == Code::kDeadlineExceeded) {
        return DeadlineExceeded(st.message() + "; ranks never came: " + missing());
      }
      RETURN_IF_ERROR(st);
      std::string reply;
      for (const auto& hp : table) reply += hp.host + " " + std::to_string(hp.port) + "\n";
      reply += "end\n";
      for (int r = 1; r < world_; ++r) {
        RETURN_IF_ERROR(SendAll(hellos[r].get(), reply, r, remaining(), clock_, where));
      }
    } else {
      Connector connector(rank0);
      RETURN_IF_ERROR(WaitWithWatchdog(
          where + " (connecting to rank 0)", remaining(), [&] { return connector.Step(clock_); },
          close_all, clock_));
      Fd to_rank0 = connector.Take();
      const std::string hello = std::string(kHello) + " " + std::to_string(rank_) + " " +
                                std::to_string(world_) + " " + std::to_string(data_port_) + "\n";
      RETURN_IF_ERROR(SendAll(to_rank0.get(), hello, 0, remaining(), clock_, where));
      std::string text;
      RETURN_IF_ERROR(WaitWithWatchdog(
          where + " (waiting for rank 0's table of peers)", remaining(),
          [&] { return ReadUntil(to_rank0.get(), text, "end\n", 0); }, close_all, clock_));
      std::istringstream in(text);
      for (auto& hp : table) in >> hp.host >> hp.port;
      if (!in) return InvalidArgument("rendezvous: malformed table from rank 0: " + text);
    }

    // The mesh: connect to every lower rank, accept every higher one.
    for (int r = 0; r < rank_; ++r) {
      Connector connector(table[r]);
      RETURN_IF_ERROR(WaitWithWatchdog(
          where + " (connecting to rank " + std::to_string(r) + ")", remaining(),
          [&] { return connector.Step(clock_); }, close_all, clock_));
      peers_[r] = connector.Take();
      // Exactly four bytes: the collective's data follows on the same connection at once.
      const std::uint32_t me = htonl(static_cast<std::uint32_t>(rank_));
      RETURN_IF_ERROR(SendAll(peers_[r].get(), std::string(reinterpret_cast<const char*>(&me), 4),
                              r, remaining(), clock_, where));
    }
    for (int accepted = 0; accepted < world_ - 1 - rank_;) {
      Fd fd;
      std::uint32_t wire = 0;
      std::vector<Transfer> hello(1);
      RETURN_IF_ERROR(WaitWithWatchdog(
          where + " (waiting for higher ranks to connect)", remaining(),
          [&]() -> Result<bool> {
            if (!fd.valid()) {
              ASSIGN_OR_RETURN(bool ok, AcceptStep(data_listener_.get(), fd));
              if (!ok) return false;
              hello[0].fd = fd.get();
              hello[0].recv = reinterpret_cast<char*>(&wire);
              hello[0].recv_bytes = sizeof(wire);
            }
            return Progress(hello, kPollSeconds);
          },
          close_all, clock_));
      const int peer = static_cast<int>(ntohl(wire));
      if (peer <= rank_ || peer >= world_ || peers_[peer].valid()) {
        return InvalidArgument("rendezvous: unexpected peer rank " + std::to_string(peer));
      }
      peers_[peer] = std::move(fd);
      ++accepted;
    }
    data_listener_.Close();
    return Status::Ok();
  }

  int world_size() const override { return world_; }
  std::vector<int> ranks() const override { return {rank_}; }

  Status Reserve(std::int64_t elements) override {
    const auto n = static_cast<std::size_t>(std::max<std::int64_t>(elements, 1));
    if (send_.size() < n) send_.resize(n);
    if (recv_.size() < n) recv_.resize(n);
    return Status::Ok();
  }

  Status Fill(const Call& call) override {
    const PatternCall p = Pattern(call);
    const std::int64_t fill_count = call.in_place && call.shape.op == Collective::kAllGather
                                        ? call.shape.nccl_count
                                        : call.shape.send_count;
    std::fill_n(recv_.begin(), std::max(call.shape.recv_count, call.shape.send_count), 0U);
    std::uint32_t* in = Input(call);
    for (std::int64_t i = 0; i < fill_count; ++i) {
      in[i] = InputValue(rank_, static_cast<std::uint64_t>(i), p.seed);
    }
    return Status::Ok();
  }

  Result<double> Run(const Call& call, int iterations) override {
    const double start = clock_.NowSeconds();
    for (int i = 0; i < iterations; ++i) RETURN_IF_ERROR(RunOnce(call));
    const double seconds = clock_.NowSeconds() - start;
    if (options_.corrupt_elements > 0) {
      std::uint32_t* out = recv_.data() + ResultOffset(Pattern(call), call.in_place);
      const std::int64_t n = std::min(options_.corrupt_elements, ResultCount(call));
      for (std::int64_t j = 0; j < n; ++j) out[j] ^= 0x00010000U;
    }
    return seconds;
  }

  Result<std::int64_t> CountWrong(const Call& call) override {
    const PatternCall p = Pattern(call);
    const std::uint32_t* out = recv_.data() + ResultOffset(p, call.in_place);
    std::int64_t wrong = 0;
    for (std::int64_t j = 0; j < ResultCount(call); ++j) {
      wrong += out[j] != ExpectedValue(p, static_cast<std::uint64_t>(j)) ? 1 : 0;
    }
    return wrong;
  }

  std::map<std::string, std::string> Details() const override {
    std::map<std::string, std::string> d = {
        {"communicator",
         "CpuLoopbackCommunicator (test stand-in: host memory over TCP, "
         "no GPU; its figures say nothing about any GPU or network)"},
        {"transport",
         world_ > 1 ? "TCP sockets between processes (CPU stand-in)" : "none (one rank)"},
        {"ranks", std::to_string(world_)}};
    // As NCCL's communicator records it: what the pod was given reached the worker.
    for (const auto& [k, v] : ProcessNcclEnvironment()) d["env " + k] = v;
    return d;
  }

  bool InterNodeSockets() const override { return false; }

 private:
  PatternCall Pattern(const Call& call) const {
    return {call.shape.op, world_, rank_, call.shape.nccl_count, call.seed};
  }
  std::uint32_t* Input(const Call& call) {
    return call.in_place ? recv_.data() + InputOffset(Pattern(call), true) : send_.data();
  }
  static std::int64_t ResultCount(const Call& call) {
    return call.in_place && call.shape.op == Collective::kReduceScatter ? call.shape.nccl_count
                                                                        : call.shape.recv_count;
  }

  void CloseAll() {
    for (auto& p : peers_) p.Close();
    data_listener_.Close();
  }

  // Sends and receives every peer's slice at once, under the watchdog.
  Status Exchange(std::vector<Transfer>& transfers, const std::string& what) {
    return WaitWithWatchdog(
        what, WatchdogOptions{options_.comm.call_timeout_seconds, 0},
        [&] { return Progress(transfers, kPollSeconds); },
        [this](const std::string&) { CloseAll(); }, clock_);
  }

  Transfer To(int peer) {
    Transfer t;
    t.peer = peer;
    t.fd = peers_[peer].get();
    return t;
  }

  Status RunOnce(const Call& call) {
    const auto c = static_cast<std::size_t>(call.shape.nccl_count);
    const std::size_t bytes = c * sizeof(std::uint32_t);
    const std::uint32_t* in = Input(call);
    std::uint32_t* out = recv_.data();
    const int n = world_;
    const int r = rank_;
    const std::string what = "CPU stand-in " + std::string(Info(call.shape.op).name) + " on rank " +
                             std::to_string(r) + " of " + std::to_string(n);
    std::vector<Transfer> transfers;
    auto as_bytes = [](const std::uint32_t* p) { return reinterpret_cast<const char*>(p); };
    auto as_bytes_mut = [](std::uint32_t* p) { return reinterpret_cast<char*>(p); };
    switch (call.shape.op) {
      case Collective::kAllReduce:
      case Collective::kReduceScatter: {
        const bool all = call.shape.op == Collective::kAllReduce;
        const std::size_t slice = c;  // elements each peer contributes to my result
        scratch_.assign(slice * static_cast<std::size_t>(n), 0U);
        for (int p = 0; p < n; ++p) {
          if (p == r) continue;
          Transfer t = To(p);
          t.send = as_bytes(in + (all ? 0 : static_cast<std::size_t>(p) * c));
          t.send_bytes = bytes;
          t.recv = as_bytes_mut(scratch_.data() + static_cast<std::size_t>(p) * slice);
          t.recv_bytes = bytes;
          transfers.push_back(t);
        }
        RETURN_IF_ERROR(Exchange(transfers, what));
        const std::uint32_t* mine = in + (all ? 0 : static_cast<std::size_t>(r) * c);
        std::uint32_t* dst = out + (call.in_place && !all ? static_cast<std::size_t>(r) * c : 0);
        for (std::size_t j = 0; j < c; ++j) {
          std::uint32_t sum = mine[j];
          for (int p = 0; p < n; ++p) {
            if (p != r) sum += scratch_[static_cast<std::size_t>(p) * slice + j];
          }
          dst[j] = sum;
        }
        return Status::Ok();
      }
      case Collective::kAllGather:
      case Collective::kAllToAll: {
        const bool gather = call.shape.op == Collective::kAllGather;
        for (int p = 0; p < n; ++p) {
          if (p == r) continue;
          Transfer t = To(p);
          t.send = as_bytes(in + (gather ? 0 : static_cast<std::size_t>(p) * c));
          t.send_bytes = bytes;
          t.recv = as_bytes_mut(out + static_cast<std::size_t>(p) * c);
          t.recv_bytes = bytes;
          transfers.push_back(t);
        }
        RETURN_IF_ERROR(Exchange(transfers, what));
        const std::uint32_t* mine = in + (gather ? 0 : static_cast<std::size_t>(r) * c);
        std::memmove(out + static_cast<std::size_t>(r) * c, mine, bytes);
        return Status::Ok();
      }
      case Collective::kBroadcast: {
        for (int p = 0; p < n; ++p) {
          if (p == r || (r != 0 && p != 0)) continue;
          Transfer t = To(p);
          if (r == 0) {
            t.send = as_bytes(in);
            t.send_bytes = bytes;
          } else {
            t.recv = as_bytes_mut(out);
            t.recv_bytes = bytes;
          }
          transfers.push_back(t);
        }
        RETURN_IF_ERROR(Exchange(transfers, what));
        if (r == 0) std::memmove(out, in, bytes);
        return Status::Ok();
      }
      case Collective::kSendRecv: {
        if (n == 1) {
          std::memmove(out, in, bytes);
          return Status::Ok();
        }
        const int next = (r + 1) % n;
        const int prev = (r + n - 1) % n;
        Transfer to = To(next);
        to.send = as_bytes(in);
        to.send_bytes = bytes;
        if (next == prev) {  // two ranks: one connection carries both directions
          to.recv = as_bytes_mut(out);
          to.recv_bytes = bytes;
          transfers.push_back(to);
        } else {
          Transfer from = To(prev);
          from.recv = as_bytes_mut(out);
          from.recv_bytes = bytes;
          transfers.push_back(to);
          transfers.push_back(from);
        }
        return Exchange(transfers, what);
      }
    }
    return Internal("unknown collective");
  }

  CpuLoopbackOptions options_;
  Clock& clock_;
  int rank_;
  int world_;
  std::vector<Fd> peers_;
  Fd data_listener_;
  int data_port_ = 0;
  std::vector<std::uint32_t> send_;
  std::vector<std::uint32_t> recv_;
  std::vector<std::uint32_t> scratch_;

  friend Result<std::unique_ptr<Communicator>> CreateCpuLoopbackCommunicator(
      CpuLoopbackOptions options);
};

}  // namespace

Result<TcpListener> TcpListener::Bind(const HostPort& address) {
  socklen_t len = 0;
  ASSIGN_OR_RETURN(sockaddr_storage addr, Resolve(address, &len));
  Fd fd(::socket(addr.ss_family, SOCK_STREAM, 0));
  if (!fd.valid()) return Internal(Errno("socket"));
  const int one = 1;
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    return Unavailable(Errno("bind " + address.ToString()));
  }
  if (::listen(fd.get(), 128) != 0) return Internal(Errno("listen " + address.ToString()));
  RETURN_IF_ERROR(SetNonBlocking(fd.get()));
  sockaddr_in bound{};
  socklen_t bound_len = sizeof(bound);
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &bound_len);
  const int port = ntohs(bound.sin_port);
  return TcpListener(fd.Release(), port);
}

TcpListener::TcpListener(TcpListener&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_) {}

TcpListener& TcpListener::operator=(TcpListener&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) (void)::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
  }
  return *this;
}

TcpListener::~TcpListener() {
  if (fd_ >= 0) (void)::close(fd_);
}

int TcpListener::Release() { return std::exchange(fd_, -1); }

Result<std::unique_ptr<Communicator>> CreateCpuLoopbackCommunicator(CpuLoopbackOptions options) {
  if (options.comm.ranks.size() != 1) {
    return InvalidArgument("the CPU stand-in drives exactly one rank per communicator, not " +
                           std::to_string(options.comm.ranks.size()));
  }
  if (options.comm.world_size < 1 || options.comm.ranks.front() < 0 ||
      options.comm.ranks.front() >= options.comm.world_size) {
    return InvalidArgument("rank " + std::to_string(options.comm.ranks.front()) +
                           " is outside a world of " + std::to_string(options.comm.world_size));
  }
  if (options.comm.world_size > 1 && options.comm.rank0_address.empty()) {
    return InvalidArgument("a CPU stand-in world of " + std::to_string(options.comm.world_size) +
                           " ranks needs rank 0's host:port (NCCL_COMM_ID)");
  }
  Clock& clock = options.clock != nullptr ? *options.clock : SteadyClock();
  auto comm = std::make_unique<CpuLoopbackCommunicator>(std::move(options), clock);
  RETURN_IF_ERROR(comm->Connect());
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace perfgate::kernels::nccl
