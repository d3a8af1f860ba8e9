#include "kernels/nccl/rails.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <istream>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <utility>

#include "kernels/nccl/nccl_communicator.h"
#include "kernels/nccl/nccl_debug.h"
#include "kernels/unmeasured.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, not in a header

namespace perfgate::kernels::nccl {
namespace {

// What a rail's calls are priced at: one 400 Gb/s NDR NIC, one direction.
constexpr double kRailBytesPerSecond = 50e9;

// Starts each line of a rail child's answers; other lines on its stdout (a library's log) are
// passed over.
constexpr char kAnswer[] = "@perfgate-rail ";

std::string Number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.4g", value);
  return buffer;
}

// "a b" -> {"a", "b"}; a detail's value may hold blanks, so details travel as key=value lines
// with blanks escaped as %20 and %25 for '%'.
std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '%') {
      out += "%25";
    } else if (c == ' ') {
      out += "%20";
    } else if (c == '\n') {
      out += "%0A";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Unescape(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const std::string code = text.substr(i + 1, 2);
      if (code == "25" || code == "20" || code == "0A") {
        out += code == "25" ? '%' : code == "20" ? ' ' : '\n';
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

Result<double> ParseDouble(const std::string& name, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    return InvalidArgument("rail-child: " + name + "=\"" + text + "\" is not a number");
  }
  return v;
}

Result<std::int64_t> ParseInt(const std::string& name, const std::string& text) {
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return InvalidArgument("rail-child: " + name + "=\"" + text + "\" is not an integer");
  }
  return v;
}

// The rest of an answer line, unescaped.
std::string Rest(std::istringstream& words) {
  std::string rest;
  words >> rest;
  return Unescape(rest);
}

}  // namespace

std::vector<std::string> RailJobArgs(const RailJob& job) {
  return {
      "--backend=" + job.backend,
      "--hca=" + job.hca,
      "--port=" + std::to_string(job.port),
      "--device=" + std::to_string(job.device),
      "--rank0=" + job.rank0,
      "--rank=" + std::to_string(job.rank),
      "--world=" + std::to_string(job.world),
      "--bytes=" + std::to_string(job.bytes),
      "--latency-bytes=" + std::to_string(job.latency_bytes),
      "--warmup=" + std::to_string(job.warmup),
      "--iterations=" + std::to_string(job.iterations),
      "--init-timeout=" + Number(job.init_timeout_seconds),
      "--call-timeout=" + Number(job.call_timeout_seconds),
      "--planted-delay=" + Number(job.planted_delay_seconds),
  };
}

Result<RailJob> ParseRailJob(const std::vector<std::string>& args) {
  RailJob job;
  for (const std::string& arg : args) {
    const auto eq = arg.find('=');
    if (!arg.starts_with("--") || eq == std::string::npos) {
      return InvalidArgument("rail-child: \"" + arg + "\" is not --name=value");
    }
    const std::string name = arg.substr(2, eq - 2);
    const std::string value = arg.substr(eq + 1);
    if (name == "backend") {
      job.backend = value;
    } else if (name == "hca") {
      job.hca = value;
    } else if (name == "rank0") {
      job.rank0 = value;
    } else if (name == "port" || name == "device" || name == "rank" || name == "world" ||
               name == "warmup" || name == "iterations") {
      ASSIGN_OR_RETURN(const std::int64_t v, ParseInt(name, value));
      const int i = static_cast<int>(v);
      if (name == "port") job.port = i;
      if (name == "device") job.device = i;
      if (name == "rank") job.rank = i;
      if (name == "world") job.world = i;
      if (name == "warmup") job.warmup = i;
      if (name == "iterations") job.iterations = i;
    } else if (name == "bytes") {
      ASSIGN_OR_RETURN(job.bytes, ParseInt(name, value));
    } else if (name == "latency-bytes") {
      ASSIGN_OR_RETURN(job.latency_bytes, ParseInt(name, value));
    } else if (name == "init-timeout") {
      ASSIGN_OR_RETURN(job.init_timeout_seconds, ParseDouble(name, value));
    } else if (name == "call-timeout") {
      ASSIGN_OR_RETURN(job.call_timeout_seconds, ParseDouble(name, value));
    } else if (name == "planted-delay") {
      ASSIGN_OR_RETURN(job.planted_delay_seconds, ParseDouble(name, value));
    } else {
      return InvalidArgument("rail-child: unknown argument --" + name);
    }
  }
  if (job.hca.empty()) return InvalidArgument("rail-child: --hca is required");
  if (job.world < 2 || job.rank < 0 || job.rank >= job.world) {
    return InvalidArgument("rail-child: rank " + std::to_string(job.rank) + " of " +
                           std::to_string(job.world) + " is not a rank of a gang");
  }
  if (job.rank0.empty()) return InvalidArgument("rail-child: --rank0 is required");
  if (job.bytes < 8 || job.latency_bytes < 8 || job.iterations < 1 || job.warmup < 0) {
    return InvalidArgument("rail-child: sizes must be 8 bytes or more, iterations 1 or more");
  }
  return job;
}

std::vector<std::string> RailHcas(const std::string& ib_hca,
                                  const std::vector<fabric::IbPort>& ports) {
  std::vector<std::string> all;
  for (const fabric::IbPort& p : ports) {
    if (all.empty() || all.back() != p.hca) all.push_back(p.hca);
  }
  if (ib_hca.empty()) return all;
  std::string list = ib_hca;
  const bool exclude = list.front() == '^';
  if (exclude) list.erase(0, 1);
  const bool exact = !list.empty() && list.front() == '=';
  if (exact) list.erase(0, 1);
  std::vector<std::string> names;
  std::istringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) names.push_back(item.substr(0, item.find(':')));
  }
  auto matches = [&](const std::string& hca, const std::string& name) {
    return exact ? hca == name : hca.starts_with(name);
  };
  std::vector<std::string> out;
  if (exclude) {
    for (const std::string& hca : all) {
      if (std::none_of(names.begin(), names.end(),
                       [&](const std::string& n) { return matches(hca, n); })) {
        out.push_back(hca);
      }
    }
    return out;
  }
  for (const std::string& name : names) {
    for (const std::string& hca : all) {
      if (matches(hca, name) && std::find(out.begin(), out.end(), hca) == out.end()) {
        out.push_back(hca);
      }
    }
  }
  return out;
}

Result<RailFigures> MeasureRail(Communicator& comm, const RailJob& job, std::uint32_t seed) {
  const int n = comm.world_size();
  RailFigures figures;
  auto timed = [&](std::int64_t bytes, std::uint32_t call_seed, bool verify) -> Result<double> {
    Call call;
    call.shape = ShapeFor(Collective::kAllReduce, bytes, n);
    call.seed = call_seed;
    RETURN_IF_ERROR(comm.Fill(call));
    if (job.warmup > 0) {
      ASSIGN_OR_RETURN(const double warm, comm.Run(call, job.warmup));
      (void)warm;
    }
    ASSIGN_OR_RETURN(const double seconds, comm.Run(call, job.iterations));
    if (verify) {
      // The timed calls summed into their own output: check one fresh call.
      call.seed ^= 0x80000000U;
      RETURN_IF_ERROR(comm.Fill(call));
      ASSIGN_OR_RETURN(const double once, comm.Run(call, 1));
      (void)once;
      ASSIGN_OR_RETURN(figures.wrong, comm.CountWrong(call));
    }
    return seconds / job.iterations;
  };
  ASSIGN_OR_RETURN(const double per_call, timed(job.bytes, seed * 2, true));
  const CallShape shape = ShapeFor(Collective::kAllReduce, job.bytes, n);
  figures.bus_gbps =
      AlgBandwidthGBps(shape.bytes, per_call) * BusBandwidthFactor(Collective::kAllReduce, n);
  ASSIGN_OR_RETURN(const double small, timed(job.latency_bytes, seed * 2 + 1, false));
  figures.latency_us = small * 1e6;
  return figures;
}

RailBackend NcclRailBackend() {
  return [](const RailJob& job) -> Result<std::unique_ptr<Communicator>> {
    if (job.planted_delay_seconds > 0) {
      return InvalidArgument("a planted delay is for the CPU stand-in only");
    }
    CommunicatorOptions options;
    options.devices = {std::max(job.device, 0)};
    options.world_size = job.world;
    options.ranks = {job.rank};
    options.rank0_address = job.rank0;
    options.init_timeout_seconds = job.init_timeout_seconds;
    options.call_timeout_seconds = job.call_timeout_seconds;
    PrepareNcclConnectRetries(job.init_timeout_seconds);
    // NCCL's log says which transport it chose: the rail's details show it, and a rail that
    // fell back to TCP sockets is caught (RailChildMain).
    const char* tmp = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): read-only
    const std::string log =
        PrepareNcclDebugLog(tmp != nullptr && tmp[0] != '\0' ? std::string(tmp) : "/tmp");
    return CreateNcclCommunicator(options, log);
  };
}

int RailChildMain(const std::vector<std::string>& args,
                  const std::map<std::string, RailBackend>& backends, std::istream& in,
                  std::ostream& out) {
  auto fail = [&out](const std::string& message) {
    out << kAnswer << "error " << Escape(message) << std::endl;
    return 1;
  };
  auto job = ParseRailJob(args);
  if (!job.ok()) return fail(job.status().message());
  auto backend = backends.find(job->backend);
  if (backend == backends.end()) {
    return fail("rail-child: backend " + job->backend + " is not in this binary");
  }
  auto comm = backend->second(*job);
  if (!comm.ok()) return fail(comm.status().message());
  const std::int64_t elements = std::max(job->bytes, job->latency_bytes) / 4 + 1;
  if (Status st = (*comm)->Reserve(elements); !st.ok()) return fail(st.message());
  out << kAnswer << "ready";
  for (const auto& [k, v] : (*comm)->Details()) out << ' ' << Escape(k) << '=' << Escape(v);
  out << std::endl;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string verb;
    std::uint32_t seed = 0;
    if (!(words >> verb >> seed) || verb != "run") return fail("rail-child: bad command " + line);
    auto figures = MeasureRail(**comm, *job, seed);
    if (!figures.ok()) return fail(figures.status().message());
    if ((*comm)->InterNodeSockets()) {
      const auto d = (*comm)->Details();
      const auto t = d.find("transport");
      return fail("NCCL did not use " + job->hca + " (NCCL_IB_HCA=" + job->IbHca() +
                  ") and fell back to plain TCP sockets: " +
                  (t == d.end() ? std::string("NET/Socket") : t->second) +
                  " (the HCA is down, or the pod lacks its RDMA resource)");
    }
    out << kAnswer << "ok " << figures->bus_gbps << ' ' << figures->latency_us << ' '
        << figures->wrong << std::endl;
  }
  return 0;
}

namespace {

// write(2) to a pipe whose reader may be gone: EPIPE instead of SIGPIPE, whose default action
// would end the worker. SIGPIPE is blocked on this thread around the write and a pending one
// consumed.
ssize_t WriteWithoutSigpipe(int fd, const std::string& data) {
  sigset_t pipe_set;
  sigset_t old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  const ssize_t written = ::write(fd, data.data(), data.size());
  if (written < 0 && errno == EPIPE) {
    const timespec zero{0, 0};
    ::sigtimedwait(&pipe_set, nullptr, &zero);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return written;
}

// The rail's child process, spoken to over its stdin and stdout.
class ProcessRail final : public RailChannel {
 public:
  ProcessRail(pid_t pid, int to_child, int from_child, RailJob job)
      : pid_(pid), to_(to_child), from_(from_child), job_(std::move(job)) {}
  ProcessRail(const ProcessRail&) = delete;
  ProcessRail& operator=(const ProcessRail&) = delete;
  ~ProcessRail() override {
    if (to_ >= 0) ::close(to_);  // end of input: the child exits
    if (from_ >= 0) ::close(from_);
    // A child that does not end at once is stuck in its communicator: stop it.
    for (int i = 0; i < 50; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) != 0) return;
      ::usleep(20000);
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }

  // The child's next line, within `seconds`.
  Result<std::string> ReadLine(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (true) {
      if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        if (line.starts_with(kAnswer)) return line.substr(std::strlen(kAnswer));
        continue;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return DeadlineExceeded("rail " + job_.hca + ": no answer from its process within " +
                                Number(seconds) + " s");
      }
      pollfd p{from_, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
      if (ready < 0 && errno != EINTR) return Unavailable(std::strerror(errno));
      if (ready <= 0) continue;
      char chunk[4096];
      const ssize_t got = ::read(from_, chunk, sizeof(chunk));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        return Unavailable("rail " + job_.hca + ": its process ended without an answer");
      }
      buffer_.append(chunk, static_cast<std::size_t>(got));
    }
  }

  Status Ready() override {
    ASSIGN_OR_RETURN(std::string line, ReadLine(job_.init_timeout_seconds + 30));
    std::istringstream words(line);
    std::string verb;
    words >> verb;
    if (verb == "error") {
      return Unavailable("rail " + job_.hca + ": " + Rest(words));
    }
    if (verb != "ready") return Unavailable("rail " + job_.hca + ": unexpected \"" + line + "\"");
    std::string pair;
    while (words >> pair) {
      const auto eq = pair.find('=');
      if (eq != std::string::npos)
        details_[Unescape(pair.substr(0, eq))] = Unescape(pair.substr(eq + 1));
    }
    return Status::Ok();
  }

  Result<RailFigures> Measure(std::uint32_t seed) override {
    const std::string command = "run " + std::to_string(seed) + "\n";
    if (WriteWithoutSigpipe(to_, command) != static_cast<ssize_t>(command.size())) {
      return Unavailable("rail " + job_.hca + ": its process is gone");
    }
    // Four waits (warm-up and timed, two sizes) and the check, each under the call deadline.
    ASSIGN_OR_RETURN(std::string line, ReadLine(5 * job_.call_timeout_seconds + 30));
    std::istringstream words(line);
    std::string verb;
    words >> verb;
    if (verb == "error") {
      return Unavailable(Rest(words));
    }
    RailFigures f;
    if (verb != "ok" || !(words >> f.bus_gbps >> f.latency_us >> f.wrong)) {
      return Unavailable("rail " + job_.hca + ": unexpected \"" + line + "\"");
    }
    return f;
  }

  std::map<std::string, std::string> Details() const override { return details_; }

 private:
  pid_t pid_;
  int to_;
  int from_;
  RailJob job_;
  std::string buffer_;
  std::map<std::string, std::string> details_;
};

class LocalRail final : public RailChannel {
 public:
  LocalRail(std::unique_ptr<Communicator> comm, RailJob job)
      : comm_(std::move(comm)), job_(std::move(job)) {}
  Status Ready() override { return Status::Ok(); }
  Result<RailFigures> Measure(std::uint32_t seed) override {
    return MeasureRail(*comm_, job_, seed);
  }
  std::map<std::string, std::string> Details() const override { return comm_->Details(); }

 private:
  std::unique_ptr<Communicator> comm_;
  RailJob job_;
};

}  // namespace

RailLauncher ProcessRailLauncher(std::string exe) {
  return [exe = std::move(exe)](const RailJob& job) -> Result<std::unique_ptr<RailChannel>> {
    int to_child[2];
    int from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0) return Unavailable(std::strerror(errno));
    if (::pipe2(from_child, O_CLOEXEC) != 0) {
      ::close(to_child[0]);
      ::close(to_child[1]);
      return Unavailable(std::strerror(errno));
    }
    std::vector<std::string> argv_text = {exe, "rail-child"};
    for (auto& a : RailJobArgs(job)) argv_text.push_back(std::move(a));
    std::vector<std::string> env_text;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      if (std::strncmp(*e, "NCCL_IB_HCA=", 12) != 0) env_text.emplace_back(*e);
    }
    env_text.push_back("NCCL_IB_HCA=" + job.IbHca());
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    ::close(to_child[0]);
    ::close(from_child[1]);
    if (rc != 0) {
      ::close(to_child[1]);
      ::close(from_child[0]);
      return Unavailable("rail " + job.hca + ": cannot start " + exe + ": " + std::strerror(rc));
    }
    return std::unique_ptr<RailChannel>(
        std::make_unique<ProcessRail>(pid, to_child[1], from_child[0], job));
  };
}

RailLauncher InProcessRailLauncher(RailBackend backend) {
  return
      [backend = std::move(backend)](const RailJob& job) -> Result<std::unique_ptr<RailChannel>> {
        ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm, backend(job));
        RETURN_IF_ERROR(comm->Reserve(std::max(job.bytes, job.latency_bytes) / 4 + 1));
        return std::unique_ptr<RailChannel>(std::make_unique<LocalRail>(std::move(comm), job));
      };
}

// ---------------------------------------------------------------------------------------------
// The test.

namespace {

struct Rail {
  fabric::IbPort port;
  int device = -1;                       // -1: none (the CPU stand-in)
  std::unique_ptr<RailChannel> channel;  // null: the rail did not start (start_error says why)
  std::string start_error;

  // "mlx5_3 (PCI 0000:9a:00.0, NUMA 1, GPU 3)"
  std::string Text() const {
    std::string placement = port.Placement();
    if (device >= 0) {
      placement += (placement.empty() ? "" : ", ") + std::string("GPU ") + std::to_string(device);
    }
    return placement.empty() ? port.hca : port.hca + " (" + placement + ")";
  }
};

// The metric of one rail: "railBusBandwidthGBps@mlx5_3".
std::string PerRail(const char* metric, const std::string& hca) {
  return std::string(metric) + "@" + hca;
}

class RailsRun final : public TestRun {
 public:
  RailsRun(std::vector<Rail> rails, std::string peers, std::map<std::string, std::string> details)
      : rails_(std::move(rails)), peers_(std::move(peers)), details_(std::move(details)) {}

  Result<Sample> RunSample() override {
    Sample sample;
    struct Seen {
      const Rail* rail = nullptr;
      double bus = 0;
      std::optional<double> latency;
      std::string error;
    };
    std::vector<Seen> seen;
    std::int64_t wrong = 0;
    std::string wrong_at;
    for (Rail& rail : rails_) {
      Seen s;
      s.rail = &rail;
      if (!rail.channel) {
        s.error = rail.start_error;
      } else {
        auto figures = rail.channel->Measure(samples_);
        if (!figures.ok()) {
          s.error = figures.status().message();
          rail.channel.reset();  // its communicator is gone; later samples report it as down
          rail.start_error = "failed in an earlier sample: " + s.error;
        } else {
          s.bus = figures->bus_gbps;
          s.latency = figures->latency_us;
          if (figures->wrong > 0) {
            wrong += figures->wrong;
            if (wrong_at.empty()) wrong_at = rail.Text();
          }
        }
      }
      sample[PerRail("railBusBandwidthGBps", rail.port.hca)] = s.bus;
      if (s.latency) sample[PerRail("railLatencyMicroseconds", rail.port.hca)] = *s.latency;
      seen.push_back(std::move(s));
    }
    ++samples_;
    if (wrong > 0) {
      return DataLoss(std::to_string(wrong) + " result element(s) differ from the expected " +
                      "values across rail " + wrong_at + " with " + peers_ +
                      " (a wrong element is a broken NIC, link, GPU or library)");
    }
    // Slowest first: the rail a bound fails on is named first.
    std::vector<const Seen*> by_bus;
    for (const Seen& s : seen) by_bus.push_back(&s);
    std::stable_sort(by_bus.begin(), by_bus.end(),
                     [](const Seen* a, const Seen* b) { return a->bus < b->bus; });
    std::string bus_text;
    for (const Seen* s : by_bus) {
      bus_text += (bus_text.empty() ? "" : "; ") + s->rail->Text() + " paired with " + peers_ +
                  ": " + (s->error.empty() ? Number(s->bus) + " GB/s" : "no traffic: " + s->error);
    }
    std::vector<const Seen*> by_latency;
    for (const Seen& s : seen) {
      if (s.latency) by_latency.push_back(&s);
    }
    std::stable_sort(by_latency.begin(), by_latency.end(),
                     [](const Seen* a, const Seen* b) { return *a->latency > *b->latency; });
    std::string latency_text;
    for (const Seen* s : by_latency) {
      latency_text += (latency_text.empty() ? "" : "; ") + s->rail->Text() + " paired with " +
                      peers_ + ": " + Number(*s->latency) + " us";
    }
    sample["slowestRailBusBandwidthGBps"] = by_bus.front()->bus;
    std::lock_guard<std::mutex> lock(mu_);
    details_[CountedKey("slowestRailBusBandwidthGBps")] = bus_text;
    if (!by_latency.empty()) {
      sample["slowestRailLatencyMicroseconds"] = *by_latency.front()->latency;
      details_[CountedKey("slowestRailLatencyMicroseconds")] = latency_text;
      details_.erase(NotMeasuredKey("slowestRailLatencyMicroseconds"));
    } else {
      details_[NotMeasuredKey("slowestRailLatencyMicroseconds")] = "no rail carried traffic";
    }
    for (const Seen& s : seen) {
      const std::string key = "rail." + s.rail->port.hca + ".lastSample";
      details_[key] = s.error.empty() ? Number(s.bus) + " GB/s, " + Number(*s.latency) + " us"
                                      : "no traffic: " + s.error;
    }
    return sample;
  }

  std::map<std::string, std::string> Details() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return details_;
  }

 private:
  std::vector<Rail> rails_;
  std::string peers_;
  std::uint32_t samples_ = 0;
  mutable std::mutex mu_;
  std::map<std::string, std::string> details_;
};

// "node-1", or "node-0, node-2, node-3": the other nodes of the gang, from PERFGATE_GANG_NODES;
// by rank when the operator did not say.
std::string PeersOf(const GangConfig& gang, const EnvLookup& env) {
  std::vector<std::string> nodes;
  if (auto list = env(kEnvGangNodes)) {
    std::string item;
    std::istringstream in(*list);
    while (std::getline(in, item, ',')) nodes.push_back(item);
  }
  std::string out;
  for (int r = 0; r < gang.size; ++r) {
    if (r == gang.rank) continue;
    const std::string name = static_cast<std::size_t>(r) < nodes.size() && !nodes[r].empty()
                                 ? nodes[r]
                                 : "pod rank " + std::to_string(r);
    out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

// Seconds planted per call on `hca` here ("node-2/mlx5_1=slow:200" is 200 ms on node-2's
// mlx5_1; NODE_NAME), or 0.
double PlantedDelay(const std::vector<std::string>& behaviour, const std::string& node,
                    const std::string& hca) {
  const std::string prefix = node + "/" + hca + "=slow:";
  for (const auto& entry : behaviour) {
    if (entry.starts_with(prefix)) return std::atof(entry.c_str() + prefix.size()) / 1e3;
  }
  return 0;
}

// Waits for every rail's child to be ready (their rendezvous run side by side); a rail whose
// child did not start, or did not get ready, says why in its details.
void AwaitRails(std::vector<Rail>* rails, std::map<std::string, std::string>* details) {
  for (Rail& rail : *rails) {
    std::string& text = (*details)["rail." + rail.port.hca];
    if (rail.channel) {
      if (Status st = rail.channel->Ready(); !st.ok()) {
        rail.start_error = st.message();
        rail.channel.reset();
      }
    }
    if (rail.channel) {
      const auto d = rail.channel->Details();
      if (auto t = d.find("transport"); t != d.end()) text += ", transport " + t->second;
    } else {
      text += ", did not start: " + rail.start_error;
    }
  }
}

class RailsTest final : public Test {
 public:
  explicit RailsTest(RailTestOptions options) : options_(std::move(options)) {
    info_.type = options_.type;
    info_.description = options_.description;
    // The stand-in drives no GPU.
    info_.scope = options_.fixture ? Scope::kHost : Scope::kAllGpus;
    info_.fixture = options_.fixture;
    info_.params = {
        ChoiceParam("hcas", ParamType::kStringList, "[]",
                    "the rails' HCAs in order (mlx5_0, ...), rail i driving the pod's i-th GPU; "
                    "empty: those the pod's NCCL_IB_HCA selects (spec.gang.network.ibHca), else "
                    "every HCA in /sys/class/infiniband, in name order",
                    {}),
        IntParam("bytes", 1 * kGiB, "bytes", "all_reduce size of the bandwidth figure", 8,
                 16.0 * kGiB),
        IntParam("latencyBytes", 8, "bytes", "all_reduce size of the latency figure", 8, 1 << 20),
        IntParam("warmupIterations", 5, "", "untimed calls per size before the timed ones", 0,
                 1000),
        IntParam("iterations", 20, "", "timed calls per size and rail", 1, 100000),
        IntParam("initTimeoutSeconds", 600, "seconds",
                 "deadline for each rail's rendezvous: gang pods may start minutes apart", 1,
                 86400),
        IntParam("timeoutSeconds", 300, "seconds",
                 "deadline for each wait on a rail's collective; past it the rail counts as "
                 "carrying nothing",
                 1, 86400),
    };
    if (options_.plantable) {
      ParamInfo slow;
      slow.name = "behaviour";
      slow.type = ParamType::kStringList;
      slow.default_value = "[]";
      slow.description =
          "NODE/HCA=slow:MILLISECONDS: that rail of that node sleeps this long "
          "per call";
      info_.params.push_back(slow);
    }
    if (options_.sysfs_root_param) {
      ParamInfo root;
      root.name = "sysfsRoot";
      root.type = ParamType::kString;
      root.default_value = "/sys";
      root.description = "where the fake NICs' sysfs tree is (a recorded one)";
      info_.params.push_back(root);
    }
    MetricInfo bus{"slowestRailBusBandwidthGBps", "GB/s", true,
                   "all_reduce busbw (2(n-1)/n, nccl-tests) of the slowest rail, each rail "
                   "measured alone through its own NIC; a rail that carried nothing counts 0"};
    bus.lowest = 0;
    MetricInfo latency{"slowestRailLatencyMicroseconds", "us", false,
                       "time per all_reduce of latencyBytes on the slowest rail"};
    latency.lowest = 0;
    MetricInfo per_bus{"railBusBandwidthGBps@<hca>", "GB/s", true, "busbw of that rail"};
    per_bus.lowest = 0;
    MetricInfo per_latency{"railLatencyMicroseconds@<hca>", "us", false,
                           "time per small all_reduce on that rail"};
    per_latency.lowest = 0;
    info_.metrics = {bus, latency, per_bus, per_latency};
  }

  const TestInfo& Info() const override { return info_; }

  // The slowest-rail figures, and each rail's where `hcas` names the rails (otherwise they are
  // known only on the node, and each rail's figures are in its details).
  std::vector<MetricInfo> Metrics(const Params& params) const override {
    std::vector<MetricInfo> out = {info_.metrics[0], info_.metrics[1]};
    for (const std::string& hca : params.StringList("hcas")) {
      MetricInfo bus = info_.metrics[2];
      bus.name = PerRail("railBusBandwidthGBps", hca);
      bus.description = "busbw of rail " + hca;
      out.push_back(bus);
      MetricInfo latency = info_.metrics[3];
      latency.name = PerRail("railLatencyMicroseconds", hca);
      latency.description = "time per small all_reduce on rail " + hca;
      out.push_back(latency);
    }
    return out;
  }

  // Every rail (one per GPU, as HGX wires them) in turn: warm-up, timed and checking calls of
  // both sizes through one NIC.
  double SampleSeconds(const Params& params, int gpus) const override {
    const double calls =
        static_cast<double>(params.Int("warmupIterations") + params.Int("iterations") + 1);
    const double per_rail =
        calls * (2 * nominal::kCollectiveLatencySeconds +
                 static_cast<double>(params.Int("bytes")) / kRailBytesPerSecond);
    return per_rail * std::max(1, gpus);
  }

  Result<std::unique_ptr<TestRun>> Prepare(const Params& params,
                                           const Target& target) const override {
    ASSIGN_OR_RETURN(GangConfig gang, GangFromEnv(options_.env));
    if (!gang.multi_node()) {
      return FailedPrecondition(
          "a rail joins two nodes or more: this test runs in a gang (spec.gang), and this pod "
          "is not in one");
    }
    ASSIGN_OR_RETURN(const ChosenPorts chosen_ports, ChoosePorts(params));
    const std::vector<fabric::IbPort>& chosen = chosen_ports.ports;
    const std::string& source = chosen_ports.source;
    const std::vector<int>& devices = target.devices;
    ASSIGN_OR_RETURN(HostPort base, ParseHostPort(gang.rank0->ToString()));
    const std::string node = options_.env("NODE_NAME").value_or("local");

    std::vector<Rail> rails;
    std::map<std::string, std::string> details;
    const std::string peers = PeersOf(gang, options_.env);
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      Rail rail;
      rail.port = chosen[i];
      if (!devices.empty()) rail.device = devices[i % devices.size()];
      const RailJob job = JobFor(params, gang, base, i, rail, node);
      auto channel = options_.launch(job);
      details["rail." + rail.port.hca] = "port " + std::to_string(rail.port.port) + ", " +
                                         rail.port.rate_text + ", " + rail.Text() +
                                         ", NCCL_IB_HCA=" + job.IbHca() + ", meets at " +
                                         job.rank0 + ", paired with " + peers;
      if (channel.ok()) {
        rail.channel = std::move(channel).value();
      } else {
        rail.start_error = channel.status().message();
      }
      rails.push_back(std::move(rail));
    }
    // Every rail's child started at once; their rendezvous run side by side.
    AwaitRails(&rails, &details);
    details["gang"] = (gang.id.empty() ? std::string() : gang.id + ", ") + "pod rank " +
                      std::to_string(gang.rank) + " of " + std::to_string(gang.size);
    details["formula"] =
        "per rail: busbw = S / t * 2(n-1)/n for an all_reduce of S bytes over n nodes, one rank "
        "per node (nccl-tests doc/PERFORMANCE.md); 1 GB = 1e9 bytes";
    details["rails"] =
        std::to_string(rails.size()) + " (" + source + "), measured one after another";
    return std::unique_ptr<TestRun>(
        std::make_unique<RailsRun>(std::move(rails), peers, std::move(details)));
  }

 private:
  // The ports the rails use and where they were named.
  struct ChosenPorts {
    std::vector<fabric::IbPort> ports;
    std::string source;
  };
  Result<ChosenPorts> ChoosePorts(const Params& params) const {
    fabric::PortReader read = options_.read_ports;
    std::string where = options_.where;
    if (options_.sysfs_root_param) {
      const std::string root = params.String("sysfsRoot");
      std::shared_ptr<const config::HostFs> fs = config::RealHostFs();
      read = [fs, root] { return fabric::ReadIbPorts(*fs, root); };
      where = root + "/class/infiniband";
    }
    auto ports = read();
    if (!ports.ok()) {
      if (ports.status().code() == Code::kFailedPrecondition) {
        return FailedPrecondition("nccl-rails: " + ports.status().message());
      }
      return Unavailable("nccl-rails: " + ports.status().message());
    }
    // One port per HCA (the first: a rail is one NIC), in the order asked: hcas, else the
    // pod's NCCL_IB_HCA (spec.gang.network.ibHca: the compute HCAs), else every HCA.
    std::vector<fabric::IbPort> chosen;
    std::vector<std::string> hcas = params.StringList("hcas");
    std::string source = "hcas";
    if (hcas.empty()) {
      const std::string ib_hca = options_.env("NCCL_IB_HCA").value_or("");
      hcas = RailHcas(ib_hca, *ports);
      source = ib_hca.empty() ? "every HCA in " + where : "NCCL_IB_HCA=" + ib_hca;
    }
    for (const std::string& hca : hcas) {
      auto it = std::find_if(ports->begin(), ports->end(),
                             [&](const fabric::IbPort& p) { return p.hca == hca; });
      if (it == ports->end()) {
        return NotFound("nccl-rails: HCA " + hca + " (" + source + ") is not in " + where);
      }
      chosen.push_back(*it);
    }
    if (chosen.empty()) return FailedPrecondition("nccl-rails: no HCA in " + where);
    return ChosenPorts{std::move(chosen), std::move(source)};
  }

  // What rail `i`'s child process runs: its HCA and GPU, where its rank 0 listens, the sizes.
  RailJob JobFor(const Params& params, const GangConfig& gang, const HostPort& base, std::size_t i,
                 const Rail& rail, const std::string& node) const {
    RailJob job;
    job.backend = options_.backend;
    job.hca = rail.port.hca;
    job.port = rail.port.port;
    job.device = rail.device;
    // In rail order on every node: rail i of each node meets at port + 1 + i.
    HostPort at = base;
    at.port = base.port + 1 + static_cast<int>(i);
    job.rank0 = at.ToString();
    job.rank = gang.rank;
    job.world = gang.size;
    job.bytes = params.Int("bytes");
    job.latency_bytes = params.Int("latencyBytes");
    job.warmup = static_cast<int>(params.Int("warmupIterations"));
    job.iterations = static_cast<int>(params.Int("iterations"));
    job.init_timeout_seconds = static_cast<double>(params.Int("initTimeoutSeconds"));
    job.call_timeout_seconds = static_cast<double>(params.Int("timeoutSeconds"));
    if (options_.plantable) {
      job.planted_delay_seconds = PlantedDelay(params.StringList("behaviour"), node, rail.port.hca);
    }
    return job;
  }

  RailTestOptions options_;
  TestInfo info_;
};

}  // namespace

std::unique_ptr<Test> MakeRailTest(RailTestOptions options) {
  return std::make_unique<RailsTest>(std::move(options));
}

}  // namespace perfgate::kernels::nccl

namespace perfgate::kernels {

std::unique_ptr<Test> MakeNcclRailsTest() {
  nccl::RailTestOptions options;
  options.type = "nccl-rails";
  options.description =
      "the gang's network NIC by NIC: per rail, NCCL pinned to that HCA (NCCL_IB_HCA, one child "
      "process per rail) between this node's GPU of the rail and the same rail of the other "
      "nodes; all_reduce bus bandwidth and small-message latency, each failure naming the NIC, "
      "its PCI address and NUMA node and the peer node";
  options.backend = "nccl";
  std::shared_ptr<const config::HostFs> fs = config::RealHostFs();
  options.read_ports = [fs] { return fabric::ReadIbPorts(*fs, "/sys"); };
  options.where = "/sys/class/infiniband";
  options.env = nccl::ProcessEnv();
  options.launch = nccl::ProcessRailLauncher("/proc/self/exe");
  return nccl::MakeRailTest(std::move(options));
}

}  // namespace perfgate::kernels
