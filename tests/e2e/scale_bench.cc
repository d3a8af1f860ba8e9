// Scale benchmark (not a test): the real operator process against kube-sim's scale mode, whose
// kubelet completes each worker pod at once and writes a canned passing PerfResult on its
// behalf. Measures, for one validation over N nodes and for V validations at once (N/V nodes
// each): time from apply to all worker pods created and to Complete, the operator's API
// requests per node, and its peak memory and CPU time. See docs/benchmarks.md.
//   operator_scale_bench [--nodes 1000] [--validations 100] [--qps 500] [--burst 1000]
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/kube-sim/kube_sim.h"
#include "tests/kube-sim/test_util.h"

extern char** environ;

namespace {

using perfgate::kubesim::Json;
using perfgate::kubesim::KubeSim;
using perfgate::kubesim::testing::Kubectl;
using SteadyClock = std::chrono::steady_clock;

double Seconds(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Peak resident set (VmHWM, MiB) and CPU seconds (user+system) of `pid`.
std::pair<double, double> Usage(pid_t pid) {
  double hwm_mib = 0;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) hwm_mib = std::stod(line.substr(6)) / 1024.0;
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  std::istringstream rest(text.substr(text.rfind(')') + 2));
  std::vector<std::string> f;
  for (std::string x; rest >> x;) f.push_back(x);
  // Fields after "(comm)": state is [0]; utime [11], stime [12].
  double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  double cpu = f.size() > 12 ? (std::stod(f[11]) + std::stod(f[12])) / ticks : 0;
  return {hwm_mib, cpu};
}

// CPU seconds of this process: kube-sim (in-process) and the benchmark's own polling.
double SelfCpu() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

size_t OperatorRequests(const KubeSim& sim) {
  size_t n = 0;
  for (const auto& r : sim.Requests()) n += r.user == "kubernetes-admin" ? 1 : 0;
  return n;
}

Json Validation(const std::string& name, const std::vector<std::string>& nodes) {
  Json spec = {
      {"tests",
       {{{"type", "synthetic"}, {"thresholds", {{{"metric", "bandwidthGBps"}, {"value", 90}}}}}}}};
  if (nodes.empty()) {
    spec["nodeSelector"] = {{"nvidia.com/gpu.present", "true"}};
  } else {
    spec["nodes"] = nodes;
  }
  return {{"apiVersion", "perfgate.io/v1alpha1"},
          {"kind", "PerfValidation"},
          {"metadata", {{"name", name}}},
          {"spec", spec}};
}

struct Phase {
  double podsSeconds = 0;
  double completeSeconds = 0;
  size_t requests = 0;
};

Phase RunPhase(KubeSim& sim, const std::vector<Json>& validations, size_t expected_pods) {
  const size_t before = OperatorRequests(sim);
  const auto t0 = SteadyClock::now();
  for (const auto& v : validations) {
    if (!sim.Create("perfgate.io", "perfvalidations", v).ok()) std::abort();
  }
  Phase p;
  std::set<std::string> names;
  for (const auto& v : validations) names.insert(v["metadata"]["name"].get<std::string>());
  bool pods_done = false;
  while (Seconds(t0, SteadyClock::now()) < 600) {
    if (!pods_done) {
      size_t pods = 0;
      for (const auto& pod : sim.List("", "pods", "perfgate-system")) {
        auto labels = pod["metadata"].value("labels", Json::object());
        pods += names.count(labels.value("perfgate.io/validation", "")) != 0 ? 1 : 0;
      }
      if (pods >= expected_pods) {
        p.podsSeconds = Seconds(t0, SteadyClock::now());
        pods_done = true;
      }
    }
    size_t complete = 0;
    for (const auto& v : sim.List("perfgate.io", "perfvalidations")) {
      if (names.count(v["metadata"].value("name", "")) == 0) continue;
      complete += v.value("status", Json::object()).value("completionTime", "").empty() ? 0 : 1;
    }
    if (pods_done && complete == validations.size()) {
      p.completeSeconds = Seconds(t0, SteadyClock::now());
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  p.requests = OperatorRequests(sim) - before;
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 1000, validations = 100;
  std::string qps = "500", burst = "1000", workers = "4";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--nodes") nodes = std::atoi(argv[i + 1]);
    if (a == "--validations") validations = std::atoi(argv[i + 1]);
    if (a == "--qps") qps = argv[i + 1];
    if (a == "--burst") burst = argv[i + 1];
    if (a == "--workers") workers = argv[i + 1];
  }
  perfgate::kubesim::Options o;
  o.nodes = nodes;
  o.scaleMode = true;
  KubeSim sim(o);
  if (!sim.Start().ok()) return 1;
  sim.SetScaleModeAction([](const Json& pod) {
    perfgate::kubesim::PodOutcome out;
    const Json labels = pod["metadata"].value("labels", Json::object());
    const std::string node = pod["spec"].value("nodeName", "");
    Json result = {{"apiVersion", "perfgate.io/v1alpha1"},
                   {"kind", "PerfResult"},
                   {"metadata",
                    {{"name", pod["metadata"].value("name", "")},
                     {"namespace", pod["metadata"].value("namespace", "")},
                     {"labels",
                      {{"perfgate.io/validation", labels.value("perfgate.io/validation", "")},
                       {"perfgate.io/node", node},
                       {"perfgate.io/run", labels.value("perfgate.io/run", "")}}},
                     {"ownerReferences", pod["metadata"]["ownerReferences"]}}},
                   {"spec",
                    {{"validation", labels.value("perfgate.io/validation", "")},
                     {"nodeName", node},
                     {"run", labels.value("perfgate.io/run", "")},
                     {"worst", "synthetic bandwidthGBps median 100.0 (>= 90.00)"},
                     {"report", {{"verdict", "PASS"}, {"reason", ""}}}}}};
    result["metadata"]["ownerReferences"][0].erase("controller");
    out.objects.push_back(result);
    return out;
  });
  if (Kubectl(sim, {"apply", "-f", PERFGATE_CRDS_DIR}).exitCode != 0) return 1;
  if (Kubectl(sim, {"apply", "-f", std::string(PERFGATE_E2E_TESTDATA) + "/rbac.yaml"}).exitCode !=
      0) {
    return 1;
  }

  const std::string log = sim.workDir() + "/operator.log";
  std::vector<std::string> args = {
      PERFGATE_OPERATOR_BIN,       "--kubeconfig=" + sim.kubeconfigPath(),
      "--metrics-bind-address=0",  "--health-probe-bind-address=0",
      "--enable-fixtures",         "--kube-api-qps=" + qps,
      "--kube-api-burst=" + burst, "--workers=" + workers};
  std::vector<char*> argv2;
  for (auto& a : args) argv2.push_back(a.data());
  argv2.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv2[0], &fa, nullptr, argv2.data(), environ) != 0) return 1;
  std::this_thread::sleep_for(std::chrono::seconds(2));  // caches synced

  std::printf("nodes %d, client rate limit %s qps / burst %s, %s reconcile workers\n", nodes,
              qps.c_str(), burst.c_str(), workers.c_str());
  std::printf(
      "| case | all pods created | all Complete | operator API requests per node | "
      "operator peak RSS | operator CPU | kube-sim + bench CPU |\n");
  const double self0 = SelfCpu();
  Phase one = RunPhase(sim, {Validation("one", {})}, static_cast<size_t>(nodes));
  auto [mem1, cpu1] = Usage(pid);
  const double self1 = SelfCpu();
  std::printf("| 1 validation x %d nodes | %.1f s | %.1f s | %.1f | %.0f MiB | %.1f s | %.1f s |\n",
              nodes, one.podsSeconds, one.completeSeconds,
              static_cast<double>(one.requests) / nodes, mem1, cpu1, self1 - self0);

  std::vector<Json> many;
  const int per = nodes / validations;
  for (int v = 0; v < validations; ++v) {
    std::vector<std::string> names;
    for (int k = 0; k < per; ++k) names.push_back("node-" + std::to_string(v * per + k));
    many.push_back(Validation("v" + std::to_string(v), names));
  }
  Phase lots = RunPhase(sim, many, static_cast<size_t>(per * validations));
  auto [mem2, cpu2] = Usage(pid);
  const double self2 = SelfCpu();
  std::printf(
      "| %d validations x %d nodes | %.1f s | %.1f s | %.1f | %.0f MiB | %.1f s | %.1f s |\n",
      validations, per, lots.podsSeconds, lots.completeSeconds,
      static_cast<double>(lots.requests) / (per * validations), mem2, cpu2 - cpu1, self2 - self1);
  kill(pid, SIGTERM);
  int st = 0;
  waitpid(pid, &st, 0);
  sim.Stop();
  return 0;
}
