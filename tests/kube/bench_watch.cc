// Benchmark (not a test): watch events decoded per second, and the memory an informer store
// needs per 1,000 cached pod-sized (~3 KB) objects. Side by side, in the same run: plain
// nlohmann::json::parse of the same bytes (the floor our decoder sits on).
//
//   cmake --build build -j2 --target kube_bench_watch
//   ./build/tests/kube/kube_bench_watch --benchmark_min_time=2
//
// Figures and the machine they came from: docs/benchmarks.md.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <string>
#include <vector>

#include "kube/informer.h"
#include "kube/watch.h"
#include "tests/kube/fakes.h"

namespace perfgate::kube {
namespace {

// mallinfo2 counts the main arena only: make every thread allocate there, so the informer's
// threads' allocations are counted.
const int kOneArena = mallopt(M_ARENA_MAX, 1);

// A worker pod as the API server returns it: labels, annotations, owner, managedFields, one
// container with env, resources and mounts, status with conditions. About 3 KB of JSON.
Json RealisticPod(int i) {
  std::string name = "perfgate-worker-" + std::to_string(i);
  Json container = {
      {"name", "worker"},
      {"image",
       "ghcr.io/perfgate/worker:v0.1.0@sha256:"
       "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"},
      {"args", {"run", "--plan", "/etc/perfgate/plan.json", "--result", "perfresult"}},
      {"env",
       {{{"name", "NVIDIA_DRIVER_CAPABILITIES"}, {"value", "compute,utility"}},
        {{"name", "PERFGATE_NODE"},
         {"valueFrom", {{"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", "spec.nodeName"}}}}}},
        {{"name", "NCCL_DEBUG"}, {"value", "WARN"}}}},
      {"resources",
       {{"limits", {{"nvidia.com/gpu", "8"}, {"memory", "64Gi"}}},
        {"requests", {{"nvidia.com/gpu", "8"}, {"cpu", "16"}, {"memory", "64Gi"}}}}},
      {"volumeMounts",
       {{{"name", "plan"}, {"mountPath", "/etc/perfgate"}, {"readOnly", true}},
        {{"name", "kube-api-access-x7k2p"},
         {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"},
         {"readOnly", true}}}},
      {"terminationMessagePath", "/dev/termination-log"},
      {"terminationMessagePolicy", "FallbackToLogsOnError"},
      {"imagePullPolicy", "IfNotPresent"}};
  Json conditions = Json::array();
  for (const char* type :
       {"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"}) {
    conditions.push_back({{"type", type},
                          {"status", "True"},
                          {"lastProbeTime", nullptr},
                          {"lastTransitionTime", "2026-11-30T07:15:39Z"}});
  }
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", "perfgate-system"},
        {"uid", "1f0e6c3a-8d2b-4c51-9a7e-" + std::to_string(100000000000 + i)},
        {"resourceVersion", std::to_string(1000000 + i)},
        {"creationTimestamp", "2026-11-30T07:15:39Z"},
        {"labels",
         {{"app.kubernetes.io/name", "perfgate-worker"},
          {"app.kubernetes.io/managed-by", "perfgate-operator"},
          {"perfgate.io/validation", "h200-acceptance"},
          {"perfgate.io/node", "gpu-node-" + std::to_string(i)}}},
        {"annotations", {{"perfgate.io/plan-hash", "9c1185a5c5e9fc54612808977ee8f548b2258d31"}}},
        {"ownerReferences",
         {{{"apiVersion", "perfgate.io/v1alpha1"},
           {"kind", "PerfValidation"},
           {"name", "h200-acceptance"},
           {"uid", "7d9f3c2e-1b4a-4e8f-a6d5-0c2b9e8f7a61"},
           {"controller", true},
           {"blockOwnerDeletion", true}}}},
        {"managedFields",
         {{{"manager", "perfgate-operator"},
           {"operation", "Update"},
           {"apiVersion", "v1"},
           {"time", "2026-11-30T07:15:39Z"},
           {"fieldsType", "FieldsV1"},
           {"fieldsV1",
            {{"f:metadata", {{"f:labels", {{"f:app.kubernetes.io/name", Json::object()}}}}}}}}}}}},
      {"spec",
       {{"nodeName", "gpu-node-" + std::to_string(i)},
        {"restartPolicy", "Never"},
        {"serviceAccountName", "perfgate-worker"},
        {"schedulerName", "default-scheduler"},
        {"priority", 0},
        {"tolerations",
         {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}},
        {"containers", {container}},
        {"volumes",
         {{{"name", "plan"}, {"configMap", {{"name", name + "-plan"}}}},
          {{"name", "kube-api-access-x7k2p"},
           {"projected", {{"defaultMode", 420}, {"sources", Json::array()}}}}}}}},
      {"status",
       {{"phase", "Running"},
        {"hostIP", "10.0.12.34"},
        {"podIP", "10.244.3.17"},
        {"startTime", "2026-11-30T07:15:39Z"},
        {"qosClass", "Burstable"},
        {"conditions", conditions},
        {"containerStatuses",
         {{{"name", "worker"},
           {"ready", true},
           {"restartCount", 0},
           {"started", true},
           {"image", "ghcr.io/perfgate/worker:v0.1.0"},
           {"imageID",
            "ghcr.io/perfgate/worker@sha256:"
            "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"},
           {"containerID", "containerd://" + std::string(64, 'a')},
           {"state", {{"running", {{"startedAt", "2026-11-30T07:15:41Z"}}}}}}}}}}};
}

// `n` MODIFIED events as one watch body.
std::string WatchBody(int n) {
  std::string body;
  for (int i = 0; i < n; ++i) {
    body += Json{{"type", "MODIFIED"}, {"object", RealisticPod(i)}}.dump();
    body += '\n';
  }
  return body;
}

constexpr int kEvents = 1000;

// The decoder fed in 4 KiB pieces (a typical read size), so most events span two pieces.
void BM_WatchDecode(benchmark::State& state) {
  const std::string body = WatchBody(kEvents);
  const size_t piece = static_cast<size_t>(state.range(0));
  int64_t events = 0;
  for (auto _ : state) {
    WatchDecoder decoder;
    for (size_t off = 0; off < body.size(); off += piece) {
      Status s = decoder.Feed(std::string_view(body).substr(off, piece), [&](WatchEvent&& e) {
        benchmark::DoNotOptimize(e.object);
        ++events;
        return Status::Ok();
      });
      if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    }
  }
  state.SetItemsProcessed(events);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(body.size()));
  state.counters["bytes_per_event"] = static_cast<double>(body.size()) / kEvents;
}
BENCHMARK(BM_WatchDecode)->Arg(4096)->Arg(65536)->Unit(benchmark::kMillisecond);

// Reference: nlohmann::json::parse on each event line, already split, no framing.
void BM_JsonParseReference(benchmark::State& state) {
  const std::string body = WatchBody(kEvents);
  std::vector<std::string_view> lines;
  for (size_t start = 0; start < body.size();) {
    size_t nl = body.find('\n', start);
    lines.push_back(std::string_view(body).substr(start, nl - start));
    start = nl + 1;
  }
  for (auto _ : state) {
    for (auto line : lines) {
      Json j = Json::parse(line.begin(), line.end());
      benchmark::DoNotOptimize(j);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kEvents);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_JsonParseReference)->Unit(benchmark::kMillisecond);

// Heap bytes held by an informer that has synced `n` pods (glibc mallinfo2: bytes in use),
// reported per 1,000 objects. The fake transport serves the list; the watch then idles.
void BM_InformerStoreMemory(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Json items = Json::array();
  size_t text_bytes = 0;
  for (int i = 0; i < n; ++i) {
    items.push_back(RealisticPod(i));
    text_bytes += items.back().dump().size();
  }
  const std::string list_body =
      Json{{"kind", "PodList"}, {"metadata", {{"resourceVersion", "1"}}}, {"items", items}}.dump();
  items = Json();
  // Reference: the same objects parsed into a plain vector on this thread.
  double reference_per_1000 = 0;
  {
    malloc_trim(0);
    const size_t before = mallinfo2().uordblks;
    Json list = Json::parse(list_body);
    std::vector<Json> objects;
    objects.reserve(static_cast<size_t>(n));
    for (auto& item : list["items"]) objects.push_back(std::move(item));
    list = Json();
    malloc_trim(0);
    reference_per_1000 = static_cast<double>(mallinfo2().uordblks - before) * 1000.0 / n;
  }
  double per_1000 = 0;
  for (auto _ : state) {
    // Measured from before the scripted reply is copied in: the transport frees that copy when
    // it serves the list, and it must not be subtracted from the store's bytes.
    malloc_trim(0);
    const size_t before = mallinfo2().uordblks;
    auto transport = std::make_shared<testing::FakeTransport>();
    transport->Expect("GET", "/api/v1/namespaces/perfgate-system/pods",
                      testing::Reply().WithBody(list_body));
    RestConfig config;
    config.server = "https://api";
    config.qps = 0;
    auto client = std::make_shared<Client>(config, transport);
    InformerOptions o;
    o.reflector.gvr = PodsResource();
    o.reflector.ns = "perfgate-system";
    o.reflector.pageSize = 0;
    {
      Informer informer(client, o);
      informer.Start();
      if (!informer.WaitForSync(std::chrono::seconds(60))) state.SkipWithError("no sync");
      // Stop joins both threads, so the transient list body and deltas are gone; the store
      // stays. What remains above `before` is the store (plus the idle informer's few bytes).
      informer.Stop();
      malloc_trim(0);
      const size_t after = mallinfo2().uordblks;
      per_1000 = static_cast<double>(after - before) * 1000.0 / n;
      if (informer.Size() != static_cast<size_t>(n)) state.SkipWithError("store incomplete");
    }
  }
  state.counters["heap_bytes_per_1000_objects"] = per_1000;
  state.counters["vector_of_json_bytes_per_1000"] = reference_per_1000;
  state.counters["one_arena"] = kOneArena;
  state.counters["json_text_bytes_per_object"] = static_cast<double>(text_bytes) / n;
}
BENCHMARK(BM_InformerStoreMemory)
    ->Arg(1000)
    ->Arg(10000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace perfgate::kube

BENCHMARK_MAIN();
