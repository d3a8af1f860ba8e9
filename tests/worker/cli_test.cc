// perfgate as a user types it (and the in-pod agent perfgate-worker): exit codes, error
// messages, report files, help and completion.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/report.h"
#include "tests/gpu_presence.h"

namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// A local run records into the user's data directory: these runs keep to a folder of their own.
[[maybe_unused]] const bool kOwnDataHome = [] {
  const fs::path dir = fs::temp_directory_path() / "perfgate-cli-test-data";
  fs::create_directories(dir);
  return setenv("XDG_DATA_HOME", dir.c_str(), 1) == 0;
}();

struct Outcome {
  int exit_code;
  std::string output;  // stdout and stderr
};

Outcome Command(const char* binary, const std::string& args) {
  std::string cmd = std::string(binary) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// perfgate ARGS, as a person types it.
Outcome Perfgate(const std::string& args) { return Command(PERFGATE_BIN, args); }

// perfgate-worker ARGS, as a worker pod runs it.
Outcome Agent(const std::string& args) { return Command(PERFGATE_WORKER_BIN, args); }

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("perfgate-cli-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  static std::string Example(const std::string& name) {
    return std::string(PERFGATE_SOURCE_DIR) + "/examples/" + name;
  }
  fs::path dir_;
};

// A quick spec: small host-stream arrays.
constexpr const char* kQuickHost = R"(apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: quick
spec:
  sampling: {warmup: 1, minRepeats: 5, maxRepeats: 8}
  tests:
    - type: host-stream
      parameters: {arrayBytes: 8388608}
      thresholds:
        - metric: triadBandwidthGBps
          value: 0.1
)";

// A spec written for a gang runs locally as one node, and the worker says so rather than
// letting a user think the cluster was measured.
TEST_F(Cli, GangSpecRunsLocallyAsOneNodeAndSaysSo) {
  const std::string spec = Write("gang.yaml",
                                 "apiVersion: perfgate.io/v1alpha1\n"
                                 "kind: PerfValidation\n"
                                 "metadata: {name: gang}\n"
                                 "spec:\n"
                                 "  gang: {shape: all}\n"
                                 "  sampling: {warmup: 1, minRepeats: 3, maxRepeats: 3}\n"
                                 "  tests:\n"
                                 "    - type: nccl-cpu-loopback\n"
                                 "      parameters: {maxBytes: 4096}\n");
  Outcome o = Perfgate("run " + spec + " --enable-fixtures");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr("spec.gang applies when the operator runs this spec across "
                                  "nodes; here the NCCL tests run over this machine's GPUs only"));
  EXPECT_THAT(o.output, HasSubstr("PASS"));
}

// SIGTERM (the kubelet stopping a preempted or evicted worker) ends perfgate-worker at once
// with 143, from its own handler (in a container it is PID 1, which ignores a signal it has no
// handler for), and nothing is written: no report file, nothing half-done.
TEST_F(Cli, WorkerStopsAtOnceOnSigtermAndWritesNothing) {
  const std::string spec = Write("slow.yaml",
                                 "apiVersion: perfgate.io/v1alpha1\n"
                                 "kind: PerfValidation\n"
                                 "metadata: {name: slow}\n"
                                 "spec:\n"
                                 "  sampling: {warmup: 1, minRepeats: 20, maxRepeats: 20}\n"
                                 "  tests:\n"
                                 "    - type: synthetic\n"
                                 "      parameters: {mean: 100, cv: 0.01, sampleSeconds: 0.5}\n");
  const fs::path report = dir_ / "report.json";
  const fs::path log = dir_ / "worker.log";
  auto read = [](const fs::path& p) {
    std::ostringstream text;
    text << std::ifstream(p).rdbuf();
    return text.str();
  };
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(PERFGATE_WORKER_BIN, "perfgate-worker", "run", spec.c_str(), "--enable-fixtures",
            "--no-store", "--report-json", report.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Measuring by now (a sample every 0.5 s, 21 of them).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, WNOHANG), 0) << "it ended by itself: " << read(log);
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  EXPECT_LT(took, 1.0);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by the signal's default action, not its handler";
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  EXPECT_FALSE(fs::exists(report)) << read(report);
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_TRUE(entry.path() == fs::path(spec) || entry.path() == log) << entry.path();
  }
}

// Progress in a log (stderr a pipe): one plain line as the test starts and one as it ends.
TEST_F(Cli, ProgressInALogIsPlainLines) {
  Outcome o = Perfgate("run " + Write("quick.yaml", kQuickHost) + " --no-store");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr("[1/1] host-stream: started on the host (warm-up 1"));
  EXPECT_THAT(o.output, HasSubstr("[1/1] host-stream: PASS in "));
  EXPECT_THAT(o.output, ::testing::Not(HasSubstr("\r")));
  EXPECT_THAT(o.output, ::testing::Not(HasSubstr("sample 1")));
}

// Progress on a terminal (a pseudo-terminal 72 columns wide): one status line rewritten in
// place with the sample count, then the test's end line in its place.
TEST_F(Cli, ProgressOnATerminalIsOneLineRewrittenInPlace) {
  const std::string spec = Write("quick.yaml", kQuickHost);
  winsize size{};
  size.ws_col = 72;
  size.ws_row = 24;
  int fd = -1;
  const pid_t pid = forkpty(&fd, nullptr, nullptr, &size);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("TERM", "xterm", 1);
    execl(PERFGATE_BIN, PERFGATE_BIN, "run", spec.c_str(), "--no-store",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string out;
  std::array<char, 4096> buf;
  for (ssize_t n; (n = read(fd, buf.data(), buf.size())) > 0;) out.append(buf.data(), n);
  close(fd);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_THAT(out, HasSubstr("\r\033[K[1/1] host-stream: host sample 1 "));
  EXPECT_THAT(out, HasSubstr("\r\033[K[1/1] host-stream: PASS in "));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("started on the host")));
}

TEST_F(Cli, LocalExampleMeasuresHostAndSkipsOptionalGpuTests) {
  std::string json = (dir_ / "r.json").string();
  std::string junit = (dir_ / "r.xml").string();
  Outcome o =
      Perfgate("run " + Example("local.yaml") + " --report-json " + json + " --junit " + junit);
  std::ifstream in(json);
  std::stringstream ss;
  ss << in.rdbuf();
  auto report = perfgate::report::FromJson(ss.str());
  ASSERT_TRUE(report.ok()) << report.status().ToString() << "\n" << o.output;
  bool host = false;
  for (const auto& t : report->tests()) {
    if (t.type() == "host-stream") {
      host = true;
      EXPECT_GE(t.samples(), 3);  // the example's minRepeats
      EXPECT_EQ(t.verdict(), perfgate::v1alpha1::PASS) << t.reason();
      ASSERT_GT(t.metrics_size(), 0);
      // Host memory of any machine of this decade: 1 GB/s .. 2 TB/s.
      EXPECT_GT(t.metrics(0).summary().median(), 1.0);
      EXPECT_LT(t.metrics(0).summary().median(), 2000.0);
    } else if (report->identity().gpus_size() == 0) {
      EXPECT_EQ(t.verdict(), perfgate::v1alpha1::SKIPPED) << t.type();
      EXPECT_THAT(t.reason(), HasSubstr("no CUDA device"));
    }
  }
  EXPECT_TRUE(host);
  if (report->identity().gpus_size() == 0) {
    EXPECT_EQ(o.exit_code, 0) << o.output;
  }
  EXPECT_THAT(o.output, HasSubstr("verdict: "));
  EXPECT_TRUE(fs::file_size(junit) > 0);
}

TEST_F(Cli, RequiredGpuTestsWithoutGpuExitThreeWithCudaText) {
  SKIP_WITH_CUDA_DEVICE();
  std::string spec = Write("gpu.yaml", R"(apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata: {name: gpu}
spec:
  tests:
    - type: hbm-stream
    - type: gemm
)");
  Outcome o = Perfgate("run " + spec);
  EXPECT_EQ(o.exit_code, 3) << o.output;
  EXPECT_THAT(o.output, HasSubstr("ERROR  hbm-stream [gpu]: no CUDA device: "));
  EXPECT_THAT(o.output, HasSubstr("ERROR  gemm [gpu]: no CUDA device: "));
  // In a CUDA build, perfgate and the agent run the real kernels (CUDA's own text above), not
  // the operator's catalog of the same tests without device code.
  if (PERFGATE_CUDA_BUILD) {
    EXPECT_THAT(o.output, ::testing::Not(HasSubstr("built without CUDA"))) << o.output;
    const Outcome agent = Agent("run " + spec + " --no-store");
    EXPECT_THAT(agent.output, ::testing::Not(HasSubstr("built without CUDA"))) << agent.output;
  }
}

TEST_F(Cli, QuickPassExitsZeroAndOnlySelects) {
  std::string spec = Write("q.yaml", kQuickHost);
  Outcome o = Perfgate("run " + spec + " --quiet --only host-stream");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr("verdict: PASS"));
  o = Perfgate("run " + spec + " --only nothing-like-this");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("--only matched no test"));
}

TEST_F(Cli, ImpossibleBoundExitsOne) {
  std::string text = kQuickHost;
  text.replace(text.find("value: 0.1"), 10, "value: 1e9");
  Outcome o = Perfgate("run " + Write("f.yaml", text) + " --quiet");
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_THAT(o.output, HasSubstr("FAIL  host-stream [host]: "));
}

TEST_F(Cli, BadSpecsExitTwoNamingFileLineAndField) {
  struct Case {
    std::string body, expected;
  };
  const std::string head =
      "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nmetadata: {name: b}\nspec:\n";
  const Case cases[] = {
      {"  tests:\n    - type: hbm-strem\n", ":6: spec.tests[0].type: unknown test type"},
      {"  tests:\n    - type: host-stream\n      repeats: 3\n",
       ":7: spec.tests[0].repeats: unknown field \"repeats\""},
      {"  sampling:\n    maxRepeats: many\n  tests:\n    - type: host-stream\n",
       ":6: spec.sampling.maxRepeats: expected an integer"},
      {"  sampling:\n    minRepeats: -3\n  tests:\n    - type: host-stream\n",
       ":6: spec.sampling.minRepeats: must be 1 or more"},
      {"  tests:\n    - type: host-stream\n      thresholds:\n        - metric: tflops\n"
       "          value: 3\n",
       ":8: spec.tests[0].thresholds[0].metric: test type host-stream does not produce metric"},
      {"  tests: [\n", "malformed YAML"},
  };
  int i = 0;
  for (const auto& c : cases) {
    std::string path = Write("bad" + std::to_string(i++) + ".yaml", head + c.body);
    Outcome o = Perfgate("run " + path);
    EXPECT_EQ(o.exit_code, 2) << c.body << o.output;
    EXPECT_THAT(o.output, HasSubstr(path)) << c.body;
    EXPECT_THAT(o.output, HasSubstr(c.expected)) << c.body;
  }
  Outcome o = Perfgate("run /nonexistent.yaml");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("/nonexistent.yaml: cannot read"));
}

// Numbers that are no numbers, and bounds that cannot bind, are invalid input (exit 2) named
// by file, line and field, not a run that passes or fails for nothing.
TEST_F(Cli, MeaninglessBoundsExitTwoNamingFileLineAndField) {
  const std::string head =
      "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nmetadata: {name: b}\nspec:\n"
      "  tests:\n    - type: host-stream\n      thresholds:\n"
      "        - metric: triadBandwidthGBps\n";
  const std::pair<std::string, std::string> cases[] = {
      {"          value: .inf\n",
       ":9: spec.tests[0].thresholds[0].value: expected a finite number, got .inf"},
      {"          value: .nan\n", ":9: spec.tests[0].thresholds[0].value: expected a finite"},
      {"          value: 0\n",
       ":9: spec.tests[0].thresholds[0].value: a \">=\" bound of 0 on triadBandwidthGBps"},
      {"          reference: 200\n          fraction: 1.5\n",
       ":10: spec.tests[0].thresholds[0].fraction: fraction 1.5 asks for more than the reference"},
  };
  int i = 0;
  for (const auto& [bound, expected] : cases) {
    std::string path = Write("m" + std::to_string(i++) + ".yaml", head + bound);
    Outcome o = Perfgate("run " + path + " --quiet");
    EXPECT_EQ(o.exit_code, 2) << bound << o.output;
    EXPECT_THAT(o.output, HasSubstr(path + expected)) << o.output;
  }
}

// A bound of 1e300 fails and says so in a figure a person reads, not in 300 digits.
TEST_F(Cli, HugeBoundsPrintReadably) {
  std::string text = kQuickHost;
  text.replace(text.find("value: 0.1"), 10, "value: 1e300");
  const std::string json = (dir_ / "r.json").string();
  Outcome o = Perfgate("run " + Write("h.yaml", text) + " --quiet --report-json " + json);
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_THAT(o.output, HasSubstr("1e+300"));
  EXPECT_EQ(o.output.find("0000000000"), std::string::npos) << o.output;
}

TEST_F(Cli, ListShowsTestsParametersAndMetrics) {
  Outcome o = Perfgate("list");
  EXPECT_EQ(o.exit_code, 0);
  for (const char* type :
       {"host-stream", "hbm-stream", "gemm", "h2d-d2h", "p2p", "burn", "health", "config",
        "memtest", "power", "consistency", "port-health", "fabric-topology", "nccl-rails",
        "training-step", "decode-step", "sequence-search"}) {
    EXPECT_THAT(o.output, HasSubstr(std::string(type) + "  (")) << type;
  }
  EXPECT_THAT(o.output, HasSubstr("arrayBytes (int, bytes, default 0)"));
  EXPECT_THAT(o.output, HasSubstr("triadBandwidthGBps (GB/s, higher is better)"));
  EXPECT_THAT(o.output, HasSubstr("ratedRateGbps (number, Gb/s, default 0)"));
  EXPECT_THAT(o.output, HasSubstr("linkDownedCount (count, lower is better)"));
  EXPECT_THAT(o.output, HasSubstr("slowestRailBusBandwidthGBps (GB/s, higher is better)"));
  EXPECT_THAT(o.output, HasSubstr("latencyBytes (int, bytes, default 8)"));
  EXPECT_THAT(o.output, HasSubstr("topologyMismatchCount (count, lower is better)"));
  // Fixtures hidden: no entry named synthetic (the word may stand in a description).
  EXPECT_THAT(o.output, ::testing::Not(HasSubstr("synthetic  (")));
  o = Perfgate("list --json");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_THAT(o.output, HasSubstr("\"type\": \"host-stream\""));
}

TEST_F(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(Perfgate("").exit_code, 2);
  EXPECT_EQ(Perfgate("frobnicate").exit_code, 2);
  Outcome o = Perfgate("run " + Write("q.yaml", kQuickHost) + " --colour");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("unknown option --colour"));
  EXPECT_EQ(Perfgate("--help").exit_code, 0);
}

}  // namespace

namespace {

// Every subcommand answers --help with its own usage, and the top help lists them all.
TEST_F(Cli, EveryCommandHasHelpAndTheTopHelpListsThem) {
  const Outcome top = Perfgate("--help");
  ASSERT_EQ(top.exit_code, 0) << top.output;
  for (const char* cmd : {"run", "plan", "list", "report", "compare", "export", "baseline", "store",
                          "summary", "bundle", "rerun", "version", "completion"}) {
    EXPECT_THAT(top.output, HasSubstr(std::string("\n  ") + cmd + " ")) << cmd;
    const Outcome help = Perfgate(std::string(cmd) + " --help");
    EXPECT_EQ(help.exit_code, 0) << cmd << ": " << help.output;
    EXPECT_THAT(help.output, HasSubstr(std::string("Usage: perfgate ") + cmd)) << help.output;
  }
  for (const char* cmd : {"baseline create", "baseline show", "store prune"}) {
    EXPECT_EQ(Perfgate(std::string(cmd) + " --help").exit_code, 0) << cmd;
  }
  EXPECT_THAT(Perfgate("version").output, HasSubstr("perfgate 0."));
  EXPECT_THAT(Perfgate("--version").output, HasSubstr("perfgate 0."));
}

// Bad input a person types: each a message that names it, and exit 2.
TEST_F(Cli, BadInputNamesItselfAndExitsTwo) {
  Outcome o = Perfgate("frobnicate");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("unknown command \"frobnicate\""));
  o = Perfgate("list --colour");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("perfgate list: unknown option --colour"));
  o = Perfgate("list -o xml");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("xml"));
  o = Perfgate("run /nonexistent/spec.yaml");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("/nonexistent/spec.yaml"));
  o = Perfgate("plan /nonexistent/spec.yaml");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("/nonexistent/spec.yaml"));
  o = Perfgate("report /nonexistent/report.json");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("/nonexistent/report.json"));
  o = Perfgate("compare /nonexistent/a /nonexistent/b");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("/nonexistent/a"));
  o = Perfgate("plan " + Example("h200-node.yaml") + " -o json");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("-o json is for a plan resolved against a cluster"));
  o = Perfgate("plan " + Example("h200-node.yaml") + " --gpus 0");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("--gpus"));
  o = Perfgate("baseline");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("perfgate baseline"));
  o = Perfgate("store prune");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("--older-than-days"));
  o = Perfgate("compare a b --margin 150%");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("--margin"));
}

// One plan command: a spec file is priced for this machine (no cluster needed).
TEST_F(Cli, PlanPricesASpecFileHere) {
  const Outcome o = Perfgate("plan " + Example("h200-node.yaml") + " --gpus 8");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr("profile h200-sxm-141gb"));
  EXPECT_THAT(o.output, HasSubstr("a node of 8 GPUs"));
}

// The in-pod agent runs a spec with the same options; the commands that moved name perfgate.
TEST_F(Cli, TheAgentRunsAndNamesTheCommandsThatMoved) {
  Outcome o = Agent("run " + Write("quick.yaml", kQuickHost) + " --quiet --no-store");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr("verdict: PASS"));
  EXPECT_EQ(Agent("list -o json").exit_code, 0);
  for (const char* moved : {"plan x.yaml", "baseline list", "store prune --keep-per-node 3"}) {
    o = Agent(moved);
    EXPECT_EQ(o.exit_code, 2) << moved;
    const std::string word = std::string(moved).substr(0, std::string(moved).find(' '));
    EXPECT_THAT(o.output, HasSubstr("is now `perfgate " + word + "`")) << o.output;
  }
  o = Agent("report x");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr("unknown command"));
}

// Completion generated from the command line itself: bash completes subcommands, options and
// the values of -o; the zsh script loads the same through bashcompinit.
TEST_F(Cli, BashCompletionCompletesCommandsOptionsAndValues) {
  const std::string script = Write("perfgate.bash", Perfgate("completion bash").output);
  auto complete = [&](const std::string& words) {
    const std::string cmd = "bash -c 'source " + script + "; COMP_WORDS=(" + words +
                            "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _perfgate; "
                            "printf \"%s\\n\" \"${COMPREPLY[@]}\"'";
    return Command("", cmd).output;
  };
  EXPECT_THAT(complete("perfgate co"), HasSubstr("compare\ncompletion"));
  EXPECT_THAT(complete("perfgate compare -o \"\""), HasSubstr("table\njson\nmarkdown"));
  EXPECT_THAT(complete("perfgate run --n"), HasSubstr("--no-store"));
  EXPECT_THAT(complete("perfgate baseline c"), HasSubstr("create"));
  EXPECT_THAT(complete("perfgate baseline create x --"), HasSubstr("--from"));
  const Outcome zsh = Perfgate("completion zsh");
  EXPECT_EQ(zsh.exit_code, 0);
  EXPECT_THAT(zsh.output, HasSubstr("bashcompinit"));
  EXPECT_THAT(zsh.output,
              HasSubstr("complete -o filenames -F _perfgate perfgate kubectl-perfgate"));
  const Outcome man = Perfgate("man");
  EXPECT_THAT(man.output, HasSubstr(".SS \"perfgate compare"));
  EXPECT_THAT(man.output, HasSubstr(".SH EXIT STATUS"));
}

}  // namespace
