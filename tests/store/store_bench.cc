// The store at fleet volume (docs/benchmarks.md): NODES node results of METRICS metric
// summaries each, per run, inserted one node result per transaction as the operator would;
// then the regression query for one node (its newest results for one test, device and
// metric) and a fleet baseline build over one validation.
//   perfgate-store-bench --store URL [--nodes 10000] [--metrics 100] [--runs 1] [--samples 8]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "store/store.h"
#include "tests/store/sample_results.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

int Fail(const std::string& what, const perfgate::Status& st) {
  std::fprintf(stderr, "perfgate-store-bench: %s: %s\n", what.c_str(), st.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  int nodes = 10000, metrics = 100, runs = 1, samples = 8, queries = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const std::string v = argv[i + 1];
    if (a == "--store") {
      url = v;
    } else if (a == "--nodes") {
      nodes = std::atoi(v.c_str());
    } else if (a == "--metrics") {
      metrics = std::atoi(v.c_str());
    } else if (a == "--runs") {
      runs = std::atoi(v.c_str());
    } else if (a == "--samples") {
      samples = std::atoi(v.c_str());
    } else if (a == "--queries") {
      queries = std::atoi(v.c_str());
    } else {
      std::fprintf(stderr, "perfgate-store-bench: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (url.empty() || nodes < 1 || metrics < 3 || runs < 1) {
    std::fprintf(stderr,
                 "usage: perfgate-store-bench --store URL [--nodes N] [--metrics M>=3] "
                 "[--runs R] [--samples S] [--queries Q]\n");
    return 2;
  }
  auto opened = perfgate::store::Open(url);
  if (!opened.ok()) return Fail("opening " + url, opened.status());
  perfgate::store::Store& store = **opened;

  // 8 GPUs x k metrics + 2 host metrics = metrics (the rest on gpu0's test).
  perfgate::store::testing::SampleShape shape;
  shape.gpus = 8;
  shape.gpu_metrics = (metrics - 2) / 8;
  shape.samples = samples;
  const int per_result = perfgate::store::testing::SampleMetricCount(shape);

  const int64_t t0 = 1790000000;
  const auto start = Clock::now();
  long long summaries = 0;
  for (int r = 0; r < runs; ++r) {
    for (int n = 0; n < nodes; ++n) {
      shape.scale = 1.0 + 0.001 * ((n * 37 + r * 11) % 41 - 20);
      auto result = perfgate::store::testing::SampleResult("node-" + std::to_string(n),
                                                           "fleet-" + std::to_string(r), "run-1",
                                                           t0 + r * 86400 + n, shape);
      auto put = store.Put(result);
      if (!put.ok()) return Fail("storing node " + std::to_string(n), put.status());
      summaries += per_result;
    }
  }
  const double insert_s = Seconds(start);
  std::printf("store            %s\n", store.Describe().c_str());
  std::printf(
      "inserted         %lld metric summaries (%d node results x %d runs x %d metrics, "
      "%d samples each)\n",
      summaries, nodes, runs, per_result, samples);
  std::printf("insert           %.1f s: %.0f summaries/s, %.0f node results/s\n", insert_s,
              summaries / insert_s, nodes * runs / insert_s);

  std::vector<double> ms;
  for (int q = 0; q < queries; ++q) {
    perfgate::store::MetricQuery hq;
    hq.node = "node-" + std::to_string((q * 7919) % nodes);
    hq.profile = shape.profile;
    hq.test = "gemm";
    hq.device = "gpu3";
    hq.metric = "metric1";
    hq.latest_results = 5;
    const auto qs = Clock::now();
    auto got = store.Metrics(hq);
    ms.push_back(Seconds(qs) * 1000);
    if (!got.ok()) return Fail("history query", got.status());
    if (static_cast<int>(got->size()) != std::min(runs, 5)) {
      std::fprintf(stderr, "perfgate-store-bench: history query found %zu results, not %d\n",
                   got->size(), std::min(runs, 5));
      return 1;
    }
  }
  std::sort(ms.begin(), ms.end());
  std::printf(
      "history query    one node, one metric, newest 5 results (with samples): median "
      "%.2f ms, p95 %.2f ms over %d nodes\n",
      ms[ms.size() / 2], ms[ms.size() * 95 / 100], queries);

  perfgate::store::ResultQuery from;
  from.validation = "fleet-0";
  const std::string name =
      "bench-" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  const auto bs = Clock::now();
  auto b = store.CreateBaseline(name, from, "validation fleet-0", 0);
  const double baseline_s = Seconds(bs);
  if (!b.ok()) return Fail("baseline", b.status());
  std::printf("fleet baseline   from %d node results (%lld summaries): %.2f s, %zu values\n", nodes,
              static_cast<long long>(nodes) * per_result, baseline_s, b->values.size());
  (void)store.DeleteBaseline(name);
  return 0;
}
