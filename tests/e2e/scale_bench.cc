// Scale benchmark (not a test): the real operator process against kube-sim's scale mode, whose
// kubelet completes each worker pod at once and writes a canned passing PerfResult on its
// behalf. Measures, for one validation over N nodes and for V validations at once (N/V nodes
// each): time from apply to all worker pods created and to Complete, the operator's API
// requests per node, and its peak memory and CPU time. See docs/benchmarks.md.
//   operator_scale_bench [--nodes 1000] [--validations 100] [--qps 500] [--burst 1000]
//                        [--workers 4] [--operator PATH] [--realistic-objects]
// --realistic-objects gives every node and PerfResult what a real cluster's carry beyond
// kube-sim's minimal ones (managedFields, a node's images and heartbeats, a report's samples and
// GPU identities), so that what the operator caches is the size it would be.
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
#include <map>
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

// What a managed cluster's GPU node carries beyond kube-sim's: feature-discovery labels,
// managedFields of its writers, heartbeat conditions, its image list, full nodeInfo. Sizes as
// on a cloud GPU node (about 10 KB of JSON).
void MakeNodeRealistic(KubeSim& sim, const std::string& name, int index) {
  auto got = sim.Get("", "nodes", "", name);
  if (!got.ok()) std::abort();
  Json node = *got;
  Json& labels = node["metadata"]["labels"];
  for (const char* feature :
       {"cpu-cpuid.AVX512F", "cpu-cpuid.AMXBF16", "cpu-hardware_multithreading",
        "kernel-version.major", "pci-10de.present", "pci-15b3.present", "system-os_release.ID",
        "memory-numa", "rdma.available", "storage-nonrotationaldisk"}) {
    labels[std::string("feature.node.kubernetes.io/") + feature] = "true";
  }
  labels["nvidia.com/cuda.driver.major"] = "550";
  labels["nvidia.com/cuda.runtime.major"] = "12";
  labels["nvidia.com/gpu.memory"] = "143771";
  labels["nvidia.com/gpu.family"] = "hopper";
  labels["topology.kubernetes.io/zone"] = "zone-" + std::to_string(index % 4);
  node["metadata"]["annotations"] = {
      {"node.alpha.kubernetes.io/ttl", "0"},
      {"volumes.kubernetes.io/controller-managed-attach-detach", "true"},
      {"nfd.node.kubernetes.io/feature-labels",
       "cpu-cpuid.AVX512F,cpu-cpuid.AMXBF16,pci-10de.present,pci-15b3.present,memory-numa"},
      {"nvidia.com/gpu-driver-upgrade-enabled", "true"}};
  Json label_fields = Json::object();
  for (const auto& [k, v] : labels.items()) label_fields["f:" + k] = Json::object();
  auto entry = [](const std::string& manager, const std::string& sub, Json fields) {
    Json e = {{"manager", manager},       {"operation", "Update"},
              {"apiVersion", "v1"},       {"time", "2026-11-30T08:00:00Z"},
              {"fieldsType", "FieldsV1"}, {"fieldsV1", std::move(fields)}};
    if (!sub.empty()) e["subresource"] = sub;
    return e;
  };
  node["metadata"]["managedFields"] = Json::array(
      {entry("kubelet", "",
             {{"f:metadata",
               {{"f:annotations",
                 {{"f:volumes.kubernetes.io/controller-managed-attach-detach", Json::object()}}},
                {"f:labels",
                 {{"f:kubernetes.io/arch", Json::object()},
                  {"f:kubernetes.io/hostname", Json::object()},
                  {"f:kubernetes.io/os", Json::object()}}}}}}),
       entry("nfd-master", "", {{"f:metadata", {{"f:labels", label_fields}}}}),
       entry("kube-controller-manager", "",
             {{"f:metadata",
               {{"f:annotations", {{"f:node.alpha.kubernetes.io/ttl", Json::object()}}}}},
              {"f:spec", {{"f:podCIDR", Json::object()}, {"f:podCIDRs", Json::object()}}}}),
       entry("kubelet", "status",
             {{"f:status",
               {{"f:allocatable", {{"f:nvidia.com/gpu", Json::object()}}},
                {"f:capacity", {{"f:nvidia.com/gpu", Json::object()}}},
                {"f:conditions", Json::object()},
                {"f:images", Json::object()},
                {"f:nodeInfo", {{"f:bootID", Json::object()}}}}}})});
  node["spec"]["podCIDR"] = "10.8." + std::to_string(index % 250) + ".0/24";
  node["spec"]["providerID"] = "sim://" + name;
  auto updated = sim.Update("", "nodes", node);
  if (!updated.ok()) {
    std::fprintf(stderr, "node update: %s\n", updated.status().message().c_str());
    std::abort();
  }
  node = *updated;
  Json& status = node["status"];
  Json conditions = Json::array();
  for (const char* type : {"MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"}) {
    conditions.push_back({{"type", type},
                          {"status", "False"},
                          {"reason", std::string("KubeletHasNo") + type},
                          {"message", std::string("kubelet has no ") + type},
                          {"lastHeartbeatTime", "2026-11-30T08:00:00Z"},
                          {"lastTransitionTime", "2026-11-29T08:00:00Z"}});
  }
  for (const auto& c : status.value("conditions", Json::array())) conditions.push_back(c);
  status["conditions"] = conditions;
  Json images = Json::array();
  for (int i = 0; i < 30; ++i) {
    const std::string repo = "registry.example.com/platform/component-" + std::to_string(i);
    images.push_back(
        {{"names",
          {repo + "@sha256:4f2c9a1e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1" +
               std::to_string(i % 10),
           repo + ":v1." + std::to_string(i)}},
         {"sizeBytes", 100000000 + i * 7654321}});
  }
  status["images"] = images;
  status["nodeInfo"]["machineID"] = "8c2b0a4f5e6d7c8b9a0f1e2d3c4b5a6" + std::to_string(index % 10);
  status["nodeInfo"]["systemUUID"] =
      "8c2b0a4f-5e6d-7c8b-9a0f-1e2d3c4b5a6" + std::to_string(index % 10);
  status["nodeInfo"]["bootID"] = "b0a4c2e1-0d9f-4e8a-b7c6-d5e4f3a2b1c" + std::to_string(index % 10);
  status["nodeInfo"]["kernelVersion"] = "6.1.112+";
  status["nodeInfo"]["osImage"] = "Container-Optimized OS from Google";
  status["nodeInfo"]["kubeProxyVersion"] = "v1.32.0";
  status["daemonEndpoints"] = {{"kubeletEndpoint", {{"Port", 10250}}}};
  status["volumesInUse"] = {"kubernetes.io/csi/pd.csi.storage.gke.io^disk-" + name};
  if (!sim.Update("", "nodes", node, /*status=*/true).ok()) std::abort();
}

// A worker's report as it is written: the machine's identity and each test's samples.
Json RealisticReport(const std::string& node) {
  Json gpus = Json::array();
  for (int g = 0; g < 8; ++g) {
    gpus.push_back({{"index", g},
                    {"name", "NVIDIA H200"},
                    {"uuid", "GPU-" + node + "-" + std::to_string(g)},
                    {"pciBusId", "00000000:" + std::to_string(10 + g) + ":00.0"},
                    {"computeCapability", "9.0"},
                    {"smCount", 132},
                    {"memoryGiB", 139.8}});
  }
  Json tests = Json::array();
  for (const char* name : {"hbm-stream", "gemm-bf16", "h2d-d2h", "nccl-all-reduce"}) {
    Json samples = Json::array();
    for (int i = 0; i < 20; ++i) samples.push_back(100.0 + i * 0.37);
    tests.push_back(
        {{"name", name},
         {"type", name},
         {"device", "all"},
         {"verdict", "PASS"},
         {"samples", 20},
         {"seconds", 12.5},
         {"metrics",
          {{{"name", "bandwidthGBps"},
            {"unit", "GB/s"},
            {"higherIsBetter", true},
            {"summary", {{"n", 20}, {"mean", 103.5}, {"median", 103.5}, {"min", 100.0}}},
            {"samples", samples}}}}});
  }
  return {{"verdict", "PASS"},
          {"reason", ""},
          {"identity", {{"hostname", node}, {"driverVersion", "550.90.07"}, {"gpus", gpus}}},
          {"tests", tests}};
}

struct Phase {
  double podsSeconds = 0;
  double completeSeconds = 0;
  size_t requests = 0;
  // The operator's requests by resource and verb, a refusal apart ("leases create 409").
  std::map<std::string, size_t> byKind;
};

// The operator's requests from the `from`-th request on, by resource and verb: among them its
// node claims (leases: create, update to renew or take over, delete to release, list each
// reconcile) and its leader election (leases get and update every 2 s).
std::map<std::string, size_t> RequestsByKind(const KubeSim& sim, size_t from) {
  std::map<std::string, size_t> out;
  const auto all = sim.Requests();
  for (size_t i = from; i < all.size(); ++i) {
    const auto& r = all[i];
    if (r.user != "kubernetes-admin") continue;
    out[r.resource + " " + r.verb + (r.code >= 400 ? " " + std::to_string(r.code) : "")]++;
  }
  return out;
}

void PrintRequests(const KubeSim& sim, const Phase& p) {
  std::string kinds;
  for (const auto& [kind, n] : p.byKind) {
    kinds += (kinds.empty() ? "" : ", ") + kind + " " + std::to_string(n);
  }
  size_t claims = 0;
  for (const auto& l : sim.List("coordination.k8s.io", "leases", "perfgate-system")) {
    claims += l["metadata"].value("labels", Json::object()).contains("perfgate.io/claim") ? 1 : 0;
  }
  std::printf("  operator requests: %s; node claims left: %zu\n", kinds.c_str(), claims);
}

Phase RunPhase(KubeSim& sim, const std::vector<Json>& validations, size_t expected_pods) {
  const size_t before = OperatorRequests(sim);
  const size_t first = sim.Requests().size();
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
  p.byKind = RequestsByKind(sim, first);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as it comes, also into a file
  int nodes = 1000, validations = 100;
  std::string qps = "500", burst = "1000", workers = "4";
  std::string operator_bin = PERFGATE_OPERATOR_BIN;
  bool realistic = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--realistic-objects") {
      realistic = true;
      continue;
    }
    if (i + 1 >= argc) break;
    if (a == "--nodes") nodes = std::atoi(argv[i + 1]);
    if (a == "--validations") validations = std::atoi(argv[i + 1]);
    if (a == "--qps") qps = argv[i + 1];
    if (a == "--burst") burst = argv[i + 1];
    if (a == "--workers") workers = argv[i + 1];
    if (a == "--operator") operator_bin = argv[i + 1];
    ++i;
  }
  perfgate::kubesim::Options o;
  o.nodes = nodes;
  o.scaleMode = true;
  KubeSim sim(o);
  if (!sim.Start().ok()) return 1;
  if (realistic) {
    for (int n = 0; n < nodes; ++n) MakeNodeRealistic(sim, "node-" + std::to_string(n), n);
  }
  sim.SetScaleModeAction([realistic](const Json& pod) {
    perfgate::kubesim::PodOutcome out;
    const Json labels = pod["metadata"].value("labels", Json::object());
    const std::string node = pod["spec"].value("nodeName", "");
    Json result = perfgate::kubesim::testing::ResultOfPod(
        pod, "synthetic bandwidthGBps median 100.0 (>= 90.00)",
        {{"verdict", "PASS"}, {"reason", ""}});
    if (realistic) {
      Json report = RealisticReport(node);
      report["validation"] = labels.value("perfgate.io/validation", "");
      result["spec"]["report"] = report;
    }
    out.objects.push_back(result);
    return out;
  });
  if (Kubectl(sim, {"apply", "-f", PERFGATE_CRDS_DIR}).exitCode != 0) return 1;
  if (Kubectl(sim, {"apply", "-f", std::string(PERFGATE_E2E_TESTDATA) + "/rbac.yaml"}).exitCode !=
      0) {
    return 1;
  }

  const std::string log = sim.workDir() + "/operator.log";
  std::vector<std::string> args = {operator_bin,
                                   "--kubeconfig=" + sim.kubeconfigPath(),
                                   "--metrics-bind-address=0",
                                   "--health-probe-bind-address=0",
                                   "--enable-fixtures",
                                   "--kube-api-qps=" + qps,
                                   "--kube-api-burst=" + burst,
                                   "--workers=" + workers};
  std::vector<char*> argv2;
  for (auto& a : args) argv2.push_back(a.data());
  argv2.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv2[0], &fa, nullptr, argv2.data(), environ) != 0) return 1;
  // Until the operator's caches have synced (it says so in its log).
  for (int i = 0; i < 600; ++i) {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().find("caches synced") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto [mem0, cpu0] = Usage(pid);

  std::printf("nodes %d%s, client rate limit %s qps / burst %s, %s reconcile workers\n", nodes,
              realistic ? " (realistic objects)" : "", qps.c_str(), burst.c_str(), workers.c_str());
  std::printf("operator %s: caches synced, peak RSS %.0f MiB, CPU %.1f s\n", operator_bin.c_str(),
              mem0, cpu0);
  std::printf(
      "| case | all pods created | all Complete | operator API requests per node | "
      "operator peak RSS | operator CPU | kube-sim + bench CPU |\n");
  const double self0 = SelfCpu();
  Phase one = RunPhase(sim, {Validation("one", {})}, static_cast<size_t>(nodes));
  auto [mem1, cpu1] = Usage(pid);
  const double self1 = SelfCpu();
  std::printf("| 1 validation x %d nodes | %.1f s | %.1f s | %.1f | %.0f MiB | %.1f s | %.1f s |\n",
              nodes, one.podsSeconds, one.completeSeconds,
              static_cast<double>(one.requests) / nodes, mem1, cpu1 - cpu0, self1 - self0);
  PrintRequests(sim, one);

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
  PrintRequests(sim, lots);
  kill(pid, SIGTERM);
  int st = 0;
  waitpid(pid, &st, 0);
  sim.Stop();
  return 0;
}
