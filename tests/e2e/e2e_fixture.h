// The end-to-end fixture: kube-sim with simulated GPU nodes whose kubelet runs the real
// perfgate-worker, the operator as a real process, and helpers every scenario file shares.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "store/store.h"
#include "tests/kube-sim/kube_sim.h"
#include "tests/kube-sim/test_util.h"

extern char** environ;

namespace perfgate::e2e {

using kubesim::Json;
using kubesim::testing::Eventually;
using kubesim::testing::Kubectl;
using kubesim::testing::ResultOfPod;

inline constexpr const char* kWorkerImage = "ghcr.io/perfgate/perfgate-worker";
inline constexpr const char* kNs = "perfgate-system";

class OperatorProcess {
 public:
  ~OperatorProcess() { Kill(SIGKILL); }

  // `extra`: more flags (e.g. --store), kept for later starts.
  void Start(const kubesim::KubeSim& sim, const std::vector<std::string>& extra = {}) {
    if (!extra.empty()) extra_ = extra;
    log_path_ = sim.workDir() + "/operator-" + std::to_string(++starts_) + ".log";
    std::vector<std::string> args = {
        PERFGATE_OPERATOR_BIN, "--kubeconfig=" + sim.kubeconfigPath(),
        "--worker-image=" + std::string(kWorkerImage) + ":e2e", "--namespace=perfgate-system",
        "--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=0",
        "--scheduling-timeout-seconds=3",
        // kube-sim has no DNS: gangs meet on loopback.
        "--gang-rendezvous-host=127.0.0.1", "--leader-elect", "--enable-fixtures"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    ASSERT_EQ(posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
  }
  // Sends `sig` and reaps. Returns the exit status (or -1).
  int Kill(int sig) {
    if (pid_ <= 0) return -1;
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // True once the process has ended by itself (reaped here; Start runs it again).
  bool Exited() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
    pid_ = -1;
    return true;
  }
  std::string Log() const { return kubesim::testing::Slurp(log_path_); }

 private:
  pid_t pid_ = -1;
  int starts_ = 0;
  std::vector<std::string> extra_;
  std::string log_path_;
};

class E2E : public ::testing::Test {
 protected:
  void SetUp() override {
    kubesim::Options o;
    o.nodes = 4;
    o.gpusPerNode = 8;
    o.imageMap[kWorkerImage] = PERFGATE_WORKER_BIN;
    sim_ = std::make_unique<kubesim::KubeSim>(o);
    ASSERT_TRUE(sim_->Start().ok());
    auto crds = Kubectl(*sim_, {"apply", "-f", PERFGATE_CRDS_DIR});
    ASSERT_EQ(crds.exitCode, 0) << crds.err;
    auto rbac = Kubectl(*sim_, {"apply", "-f", std::string(PERFGATE_E2E_TESTDATA) + "/rbac.yaml"});
    ASSERT_EQ(rbac.exitCode, 0) << rbac.err;
    op_.Start(*sim_);
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << "---- operator log ----\n" << op_.Log() << "\n";
    op_.Kill(SIGTERM);
    sim_->Stop();
  }

  // An 8-GPU node with a taint no worker tolerates: its pod is never scheduled.
  perfgate::Status AddUntoleratedNode(const std::string& name) {
    kubesim::NodeSpec node;
    node.name = name;
    node.gpus = 8;
    node.taints =
        Json::array({{{"key", "dedicated"}, {"value", "other"}, {"effect", "NoSchedule"}}});
    return sim_->AddNode(node);
  }

  void Apply(const std::string& yaml) {
    auto r = Kubectl(*sim_, {"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  // kubectl wait --for=condition=Complete; true when it returned 0.
  bool WaitComplete(const std::string& name, int timeoutSeconds = 90) {
    auto r = Kubectl(*sim_, {"wait", "--for=condition=Complete", "pval/" + name,
                             "--timeout=" + std::to_string(timeoutSeconds) + "s"});
    if (r.exitCode != 0) std::cerr << "kubectl wait: " << r.out << r.err << "\n";
    return r.exitCode == 0;
  }
  Json Validation(const std::string& name) {
    auto r = Kubectl(*sim_, {"get", "pval", name, "-o", "json"});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    Json v = Json::parse(r.out, nullptr, false);
    // Before the operator's first look there is no status: read as an empty one, so a poll
    // may ask it for a field (value() on a missing status would throw).
    if (v.is_object() && !v.contains("status")) v["status"] = Json::object();
    return v;
  }
  // Applies `yaml` (the PerfValidation `name`), waits for it to complete, and checks what every
  // refused spec shows: Passed=False, Ready and Stalled with reason InvalidSpec, status.verdict
  // InvalidSpec, no worker pod. Returns the Ready message for the test's own checks.
  std::string ApplyExpectingInvalidSpec(const std::string& name, const std::string& yaml) {
    Apply(yaml);
    EXPECT_TRUE(WaitComplete(name, 30));
    const Json v = Validation(name);
    EXPECT_EQ(Condition(v, "Passed").value("status", ""), "False") << v.dump(2);
    EXPECT_EQ(Condition(v, "Ready").value("reason", ""), "InvalidSpec") << v.dump(2);
    EXPECT_EQ(Condition(v, "Stalled").value("reason", ""), "InvalidSpec");
    EXPECT_EQ(v["status"].value("verdict", ""), "InvalidSpec");
    EXPECT_TRUE(Pods(name).empty());
    return Condition(v, "Ready").value("message", "");
  }
  static Json Condition(const Json& v, const std::string& type) {
    for (const auto& c : v["status"].value("conditions", Json::array())) {
      if (c.value("type", "") == type) return c;
    }
    return Json::object();
  }
  std::vector<Json> Results(const std::string& validation) {
    std::vector<Json> out;
    for (auto& r : sim_->List("perfgate.io", "perfresults", kNs)) {
      if (r["metadata"]["labels"].value("perfgate.io/validation", "") == validation)
        out.push_back(r);
    }
    return out;
  }
  std::vector<Json> Pods(const std::string& validation) {
    std::vector<Json> out;
    for (auto& p : sim_->List("", "pods", kNs)) {
      if (p["metadata"].value("labels", Json::object()).value("perfgate.io/validation", "") ==
          validation) {
        out.push_back(p);
      }
    }
    return out;
  }
  Json Node(const std::string& name) { return *sim_->Get("", "nodes", "", name); }
  static bool HasPerfgateTaint(const Json& node) {
    for (const auto& t : node.value("spec", Json::object()).value("taints", Json::array())) {
      if (t.value("key", "") == "perfgate.io/failed") return true;
    }
    return false;
  }
  static std::string VerdictLabel(const Json& node) {
    return node["metadata"].value("labels", Json::object()).value("perfgate.io/verdict", "");
  }

  // Someone else's training pod (namespace ml) holding `gpus` GPUs of `node` until the file
  // `done` appears.
  std::string StartGpuPod(const std::string& name, const std::string& node, int gpus) {
    const std::string done = sim_->workDir() + "/" + name + ".done";
    Json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"namespace", "ml"}, {"labels", {{"app", "train"}}}}},
        {"spec",
         {{"restartPolicy", "Never"},
          {"terminationGracePeriodSeconds", 2},
          {"nodeSelector", {{"kubernetes.io/hostname", node}}},
          {"containers",
           {{{"name", "train"},
             {"image", "example.com/train:1"},
             {"command",
              {"/bin/sh", "-c",
               "while [ ! -e " + kubesim::testing::ShellQuote(done) + " ]; do sleep 0.1; done"}},
             {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}};
    EXPECT_TRUE(sim_->Create("", "pods", pod).ok());
    EXPECT_TRUE(Eventually([&] { return Phase(name) == "Running"; }));
    return done;
  }
  std::string Phase(const std::string& name) {
    auto p = sim_->Get("", "pods", "ml", name);
    return p.ok() ? p->value("status", Json::object()).value("phase", "") : "<gone>";
  }

  std::unique_ptr<kubesim::KubeSim> sim_;
  OperatorProcess op_;
};

// The start of a PerfValidation `name`, up to `spec:`; its fields follow, indented two spaces.
inline std::string SpecHead(const std::string& name) {
  return "apiVersion: perfgate.io/v1alpha1\n"
         "kind: PerfValidation\n"
         "metadata:\n"
         "  name: " +
         name + "\nspec:\n";
}

// The same, selecting every simulated GPU node.
inline std::string GpuNodesSpec(const std::string& name) {
  return SpecHead(name) +
         "  nodeSelector:\n"
         "    nvidia.com/gpu.present: \"true\"\n";
}

// A validation of the synthetic fixture on every GPU node; `extra_params` and `policy` are
// YAML fragments indented for their place.
inline std::string SyntheticSpec(const std::string& name, const std::string& behaviour,
                                 const std::string& policy = "    onFailure: taint\n",
                                 const std::string& extra_spec = "",
                                 const std::string& sample_seconds = "0") {
  return GpuNodesSpec(name) + extra_spec +
         "  sampling:\n"
         "    warmup: 1\n"
         "    minRepeats: 5\n"
         "    maxRepeats: 10\n"
         "  policy:\n" +
         policy +
         "  tests:\n"
         "    - type: synthetic\n"
         "      parameters:\n"
         "        mean: 100\n"
         "        cv: 0.01\n"
         "        sampleSeconds: " +
         sample_seconds +
         "\n"
         "        behaviour: [" +
         behaviour +
         "]\n"
         "      thresholds:\n"
         "        - metric: bandwidthGBps\n"
         "          statistic: median\n"
         "          op: \">=\"\n"
         "          value: 90\n";
}

// GET /metrics from the operator whose log names its port; "" when it cannot be read.
inline std::string Metrics(const OperatorProcess& op) {
  std::smatch m;
  const std::string log = op.Log();
  static const std::regex kPort("serving /metrics /healthz /readyz on port ([0-9]+)");
  if (!std::regex_search(log, m, kPort)) return "";
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(m[1].str())));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string req = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      ssize_t n = 0;
      while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return out;
}

// The name of the PerfResult in `results` written for `node`; "" when there is none.
inline std::string ResultOf(const std::vector<Json>& results, const std::string& node) {
  for (const auto& r : results) {
    if (r["spec"].value("nodeName", "") == node) return r["metadata"].value("name", "");
  }
  return "";
}

// The real operator against kube-sim in scale mode: the kubelet runs no worker but writes, for
// each pod, the PerfResult that Canned returns (what a worker on that node would write).
class ScaleModeE2E : public E2E {
 protected:
  virtual int Nodes() const { return 2; }
  virtual std::vector<std::string> OperatorFlags() const { return {}; }
  virtual Json Canned(const Json& pod) = 0;

  void SetUp() override {
    kubesim::Options o;
    o.nodes = Nodes();
    o.gpusPerNode = 8;
    o.scaleMode = true;
    sim_ = std::make_unique<kubesim::KubeSim>(o);
    ASSERT_TRUE(sim_->Start().ok());
    sim_->SetScaleModeAction([this](const Json& pod) {
      kubesim::PodOutcome out;
      out.objects.push_back(Canned(pod));
      return out;
    });
    auto crds = Kubectl(*sim_, {"apply", "-f", PERFGATE_CRDS_DIR});
    ASSERT_EQ(crds.exitCode, 0) << crds.err;
    auto rbac = Kubectl(*sim_, {"apply", "-f", std::string(PERFGATE_E2E_TESTDATA) + "/rbac.yaml"});
    ASSERT_EQ(rbac.exitCode, 0) << rbac.err;
    op_.Start(*sim_, OperatorFlags());
  }
};

#ifdef PERFGATE_CLI_DIR
// Puts this build's perfgate (and kubectl-perfgate) first on PATH, so that kubectl finds the
// plugin the e2e tests run.
inline void PluginOnPath() {
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
  const std::string dir = PERFGATE_CLI_DIR;
  if (path != nullptr && std::string(path).find(dir) != std::string::npos) return;
  setenv("PATH", (dir + ":" + (path != nullptr ? path : "")).c_str(), 1);  // NOLINT
}
#endif

}  // namespace perfgate::e2e
