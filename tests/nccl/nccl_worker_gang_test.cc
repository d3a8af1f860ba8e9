// The worker's side of a gang, as the operator's pods would run it: perfgate-worker processes
// with PERFGATE_GANG_* and NCCL_COMM_ID in their environment, on the CPU stand-in
// (nccl-cpu-loopback, --enable-fixtures). Each rank completes the rendezvous and writes its own
// report; a gang whose peer never comes ends in an ERROR naming the missing rank.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX

namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// A port nobody listens on right now (bound to port 0, then released).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

constexpr const char* kSpec = R"(apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: gang
spec:
  sampling: {warmup: 1, minRepeats: 2, maxRepeats: 2, method: fixed, maxSeconds: 60}
  tests:
    - type: nccl-cpu-loopback
      parameters: {collective: reduce_scatter, maxBytes: 65536, stepFactor: 16,
                   initTimeoutSeconds: INIT}
)";

class WorkerGang : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("perfgate-gang-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Spec(int init_timeout_seconds) {
    std::string text = kSpec;
    text.replace(text.find("INIT"), 4, std::to_string(init_timeout_seconds));
    const fs::path p = dir_ / "gang.yaml";
    std::ofstream(p) << text;
    return p.string();
  }

  // Starts rank `rank` of `size` with rank 0 at 127.0.0.1:port; returns its pid.
  pid_t Start(const std::string& spec, int rank, int size, int port) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    env.push_back("PERFGATE_GANG_SIZE=" + std::to_string(size));
    env.push_back("PERFGATE_GANG_RANK=" + std::to_string(rank));
    env.push_back("NCCL_COMM_ID=127.0.0.1:" + std::to_string(port));
    const std::string report = (dir_ / ("rank" + std::to_string(rank) + ".json")).string();
    const std::string log = (dir_ / ("rank" + std::to_string(rank) + ".log")).string();
    std::vector<std::string> args = {PERFGATE_WORKER_BIN, "run",           spec,
                                     "--enable-fixtures", "--report-json", report};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    EXPECT_EQ(::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    return pid;
  }

  static int Wait(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::string Read(const std::string& name) {
    std::ifstream in(dir_ / name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  nlohmann::json Report(int rank) {
    return nlohmann::json::parse(Read("rank" + std::to_string(rank) + ".json"), nullptr, false);
  }
  std::string Log(int rank) { return Read("rank" + std::to_string(rank) + ".log"); }

  fs::path dir_;
};

TEST_F(WorkerGang, FourPodsMeetAtRankZeroAndEachReportsItsOwnResult) {
  constexpr int kPods = 4;
  const std::string spec = Spec(30);
  const int port = FreePort();
  std::vector<pid_t> pids;
  // Rank 0 last: the others must wait for it to listen.
  for (int r = kPods - 1; r >= 0; --r) pids.push_back(Start(spec, r, kPods, port));
  for (pid_t pid : pids) EXPECT_EQ(Wait(pid), 0);
  for (int r = 0; r < kPods; ++r) {
    const nlohmann::json report = Report(r);
    ASSERT_TRUE(report.contains("tests")) << "rank " << r << ":\n" << Log(r);
    const auto& test = report["tests"][0];
    EXPECT_EQ(test["verdict"], "PASS") << Log(r);
    const auto& details = test["details"];
    EXPECT_EQ(details["worldSize"], "4");
    EXPECT_EQ(details["localRanks"], std::to_string(r));
    EXPECT_EQ(details["gang"], "pod rank " + std::to_string(r) + " of 4");
    EXPECT_EQ(details["wrongElementsTotal"], "0");
    bool busbw = false;
    for (const auto& m : test["metrics"]) busbw |= m["name"] == "busBandwidthGBps@64KiB";
    EXPECT_TRUE(busbw) << "rank " << r << " reports no busbw at the largest size";
  }
}

TEST_F(WorkerGang, PeerThatNeverComesIsAnErrorNamingIt) {
  const std::string spec = Spec(1);
  const pid_t rank0 = Start(spec, 0, 2, FreePort());  // rank 1 never starts
  EXPECT_EQ(Wait(rank0), 3);                          // locally: 3 = inconclusive or error
  const nlohmann::json report = Report(0);
  ASSERT_TRUE(report.contains("tests")) << Log(0);
  const auto& test = report["tests"][0];
  EXPECT_EQ(test["verdict"], "ERROR");
  EXPECT_THAT(test["reason"].get<std::string>(), HasSubstr("ranks never came: 1"));
  EXPECT_THAT(test["reason"].get<std::string>(), HasSubstr("aborted by the watchdog"));
}

}  // namespace
