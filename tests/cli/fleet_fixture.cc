#include "tests/cli/fleet_fixture.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <tuple>

#include "common/stats.h"

namespace perfgate::testing {
namespace {

// Adds a metric with `n` samples around `centre` (relative spread `cv`) to `t`.
v1alpha1::MetricResult* AddMetric(v1alpha1::TestResult* t, const std::string& name,
                                  const std::string& unit, bool higher, double centre, double cv,
                                  std::mt19937_64& rng, int n = 5) {
  std::normal_distribution<double> noise(0.0, cv);
  std::vector<double> samples;
  for (int i = 0; i < n; ++i) samples.push_back(centre * (1 + noise(rng)));
  const stats::Summary s = stats::Summarize(samples, 0.95);
  auto* m = t->add_metrics();
  m->set_name(name);
  m->set_unit(unit);
  m->set_higherisbetter(higher);
  auto* sum = m->mutable_summary();
  sum->set_n(s.n);
  sum->set_mean(s.mean);
  sum->set_median(s.median);
  sum->set_stddev(s.stddev);
  sum->set_min(s.min);
  sum->set_max(s.max);
  sum->set_p05(s.p05);
  sum->set_p95(s.p95);
  sum->set_cv(s.cv);
  for (double v : samples) m->add_samples(v);
  return m;
}

// A median threshold `op` `bound` on the metric `m` of `t`; returns its verdict.
v1alpha1::Verdict AddThreshold(v1alpha1::TestResult* t, const v1alpha1::MetricResult& m,
                               const std::string& statistic, const std::string& op, double bound) {
  const double observed = statistic == "max" ? m.summary().max() : m.summary().median();
  const bool ok = op == ">=" ? observed >= bound : observed <= bound;
  auto* th = t->add_thresholds();
  th->mutable_threshold()->set_metric(m.name());
  th->mutable_threshold()->set_statistic(statistic);
  th->mutable_threshold()->set_op(op);
  th->mutable_threshold()->set_value(bound);
  th->set_bound(bound);
  th->set_observed(observed);
  th->set_verdict(ok ? v1alpha1::PASS : v1alpha1::FAIL);
  char reason[160];
  std::snprintf(reason, sizeof reason, "%s %s %.4g %s %.4g", m.name().c_str(), statistic.c_str(),
                observed, ok ? "meets" : "misses", bound);
  th->set_reason(reason);
  return th->verdict();
}

v1alpha1::TestResult* AddTest(v1alpha1::Report* r, const std::string& type,
                              const std::string& device) {
  auto* t = r->add_tests();
  t->set_name(type);
  t->set_type(type);
  t->set_device(device);
  t->set_verdict(v1alpha1::PASS);
  t->set_samples(5);
  t->set_stopreason("decided");
  return t;
}

void Judge(v1alpha1::TestResult* t, v1alpha1::Verdict v, const std::string& why) {
  if (v == v1alpha1::FAIL && t->verdict() != v1alpha1::FAIL) {
    t->set_verdict(v1alpha1::FAIL);
    t->set_reason(why);
  }
}

}  // namespace

v1alpha1::Report NodeReport(const std::string& node, int gpus, std::uint64_t seed, Quirk quirk,
                            const NodeSetup& setup) {
  std::mt19937_64 rng(seed);
  v1alpha1::Report r;
  r.set_validation("h200-fleet-acceptance");
  r.set_profile("h200-sxm-141gb");
  r.set_profileversion("3");
  r.set_starttime("2026-12-01T10:00:00Z");
  r.set_completiontime("2026-12-01T10:04:10Z");
  auto* id = r.mutable_identity();
  id->set_hostname(node);
  id->set_cpumodel("Intel(R) Xeon(R) Platinum 8480+");
  id->set_cpucores(112);
  id->set_kernel(setup.kernel);
  id->set_driverversion(setup.driver);
  id->set_cudaversion("12.8");
  id->set_ncclversion("2.25.1");
  for (int g = 0; g < gpus; ++g) {
    auto* gpu = id->add_gpus();
    gpu->set_index(g);
    gpu->set_name("NVIDIA H200");
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "GPU-%08llx-%04x-4c2e-9a51-%012llx",
                  static_cast<unsigned long long>(seed & 0xffffffff), g,
                  static_cast<unsigned long long>(seed * 1000003ULL + g) & 0xffffffffffffULL);
    gpu->set_uuid(uuid);
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + g * 0x10);
    gpu->set_pcibusid(bus);
    gpu->set_vbios("96.00.A5.00.01");
    gpu->set_computecapability("9.0");
    gpu->set_smcount(132);
    gpu->set_memorygib(141);
    gpu->set_powerlimitw(700);
    gpu->set_eccmode("Enabled");
    gpu->set_migmode("Disabled");
    gpu->set_persistencemode("Enabled");
  }
  std::mt19937_64 node_rng(setup.node_seed != 0 ? setup.node_seed : seed);
  const double node_speed = 1 + std::normal_distribution<double>(0, 0.004)(node_rng);
  if (setup.node_seed == 0) rng = node_rng;  // the same draws as before node seeds existed
  const double hbm_speed = node_speed * setup.hbm_factor;
  for (int g = 0; g < gpus; ++g) {
    const std::string dev = "gpu" + std::to_string(g);
    auto* hbm = AddTest(&r, "hbm-stream", dev);
    const double triad = (quirk == Quirk::kFailingHbm && g == 3) ? 3100 : 4310 * hbm_speed;
    const auto* m = AddMetric(hbm, "triadBandwidthGBps", "GB/s", true, triad, 0.004, rng);
    Judge(hbm, AddThreshold(hbm, *m, "median", ">=", 3840),
          "triadBandwidthGBps median below 3840 GB/s");
    AddMetric(hbm, "copyBandwidthGBps", "GB/s", true, 4120 * hbm_speed, 0.004, rng);

    auto* gemm = AddTest(&r, "gemm", dev);
    const double slow = quirk == Quirk::kLaggingGemm ? 0.92 : 1.0;
    m = AddMetric(gemm, "bf16Tflops", "TFLOP/s", true, 745 * slow * node_speed, 0.006, rng);
    Judge(gemm, AddThreshold(gemm, *m, "median", ">=", 600), "bf16Tflops below 600");
    m = AddMetric(gemm, "fp8Tflops", "TFLOP/s", true, 1290 * slow * node_speed, 0.006, rng);
    Judge(gemm, AddThreshold(gemm, *m, "median", ">=", 1100), "fp8Tflops below 1100");

    auto* health = AddTest(&r, "health", dev);
    m = AddMetric(health, "eccUncorrectedVolatileCount", "count", false, 0, 0, rng, 1);
    Judge(health, AddThreshold(health, *m, "max", "<=", 0), "uncorrected ECC errors");
  }
  auto* p2p = AddTest(&r, "p2p", "gpu");
  double worst = 1e9;
  for (int s = 0; s < gpus; ++s) {
    for (int d = 0; d < gpus; ++d) {
      if (s == d) continue;
      double bw = 367 * (1 + std::normal_distribution<double>(0, 0.01)(rng));
      if (quirk == Quirk::kSlowP2pPair && s == 2 && d == 5) bw = 121;
      worst = std::min(worst, bw);
      char text[80];
      std::snprintf(text, sizeof text, "peer %.1f GB/s, no peer %.1f GB/s", bw,
                    21.5 * (1 + std::normal_distribution<double>(0, 0.01)(rng)));
      (*p2p->mutable_details())["pair gpu" + std::to_string(s) + "->gpu" + std::to_string(d)] =
          text;
    }
  }
  const auto* wp = AddMetric(p2p, "worstPairBandwidthGBps", "GB/s", true, worst, 0.002, rng);
  Judge(p2p, AddThreshold(p2p, *wp, "median", ">=", 300), "worst pair below 300 GB/s");

  auto* nccl = AddTest(&r, "nccl-all-reduce", "gpu");
  for (double bytes = 1024; bytes <= 8.0 * 1024 * 1024 * 1024; bytes *= 2) {
    const double bus = 478 * node_speed * bytes / (bytes + 24.0 * 1024 * 1024);
    int exp = 0;
    double b = bytes;
    while (b >= 1024 && exp < 3) {
      b /= 1024;
      ++exp;
    }
    static const char* kUnits[] = {"B", "KiB", "MiB", "GiB"};
    const std::string label = std::to_string(static_cast<long long>(b)) + kUnits[exp];
    const auto* bw = AddMetric(nccl, "busBandwidthGBps@" + label, "GB/s", true, bus, 0.01, rng);
    if (label == "8GiB") Judge(nccl, AddThreshold(nccl, *bw, "median", ">=", 400), "busbw low");
  }
  auto* host = AddTest(&r, "host-stream", "host");
  const auto* triad =
      AddMetric(host, "triadBandwidthGBps", "GB/s", true, 312 * node_speed, 0.01, rng);
  Judge(host, AddThreshold(host, *triad, "median", ">=", 200), "host triad below 200");

  r.set_verdict(v1alpha1::PASS);
  for (const auto& t : r.tests()) {
    if (t.verdict() == v1alpha1::FAIL) {
      r.set_verdict(v1alpha1::FAIL);
      r.set_reason(t.name() + " [" + t.device() + "]: " + t.reason());
      r.set_failed(r.failed() + 1);
    } else {
      r.set_passed(r.passed() + 1);
    }
  }
  return r;
}

std::vector<fleet::NodeReport> Fleet(int nodes, int failing, int lagging, std::uint64_t seed) {
  std::vector<fleet::NodeReport> out;
  for (int i = 0; i < nodes; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "node-%03d", i);
    Quirk quirk = Quirk::kHealthy;
    if (i < failing) {
      quirk = i % 2 == 0 ? Quirk::kFailingHbm : Quirk::kSlowP2pPair;
    } else if (i < failing + lagging) {
      quirk = Quirk::kLaggingGemm;
    }
    fleet::NodeReport r;
    r.node = name;
    r.validation = "h200-fleet-acceptance";
    r.run = "g1";
    r.report = NodeReport(name, 8, seed * 7919 + static_cast<std::uint64_t>(i), quirk);
    out.push_back(std::move(r));
  }
  return out;
}

AbPair DriverUpgrade(int nodes, int upgraded, int new_kernel, double hbm_factor,
                     std::uint64_t seed) {
  AbPair out;
  for (int i = 0; i < nodes; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "node-%03d", i);
    const std::uint64_t node_seed = seed * 7919 + static_cast<std::uint64_t>(i) + 1;
    NodeSetup before;
    before.node_seed = node_seed;
    NodeSetup after = before;
    if (i < upgraded) {
      after.driver = "575.51.03";
      after.hbm_factor = hbm_factor;
    }
    if (i >= nodes - new_kernel) after.kernel = "6.8.0-52-generic";
    for (auto [side, setup, stream] :
         {std::tuple{&out.a, before, 1000003ULL}, std::tuple{&out.b, after, 2000003ULL}}) {
      fleet::NodeReport r;
      r.node = name;
      r.validation = "h200-fleet-acceptance";
      r.run = side == &out.a ? "g1" : "g2";
      r.report = NodeReport(name, 8, node_seed * stream, Quirk::kHealthy, setup);
      side->push_back(std::move(r));
    }
  }
  return out;
}

std::vector<fleet::NodeReport> ThreeClusters(int nodes, double hbm_factor, std::uint64_t seed) {
  std::vector<fleet::NodeReport> out;
  const struct {
    const char* name;
    const char* driver;
    const char* kernel;
    double hbm;
  } clusters[] = {{"east", "570.124.06", "6.8.0-49-generic", 1.0},
                  {"west", "570.124.06", "6.8.0-52-generic", 1.0},
                  {"central", "575.51.03", "6.8.0-52-generic", hbm_factor}};
  std::uint64_t k = 0;
  for (const auto& c : clusters) {
    for (int i = 0; i < nodes; ++i) {
      char name[48];
      std::snprintf(name, sizeof name, "%s-%03d", c.name, i);
      NodeSetup setup;
      setup.driver = c.driver;
      setup.kernel = c.kernel;
      setup.hbm_factor = c.hbm;
      fleet::NodeReport r;
      r.node = name;
      r.validation = "h200-fleet-acceptance";
      r.run = "g1";
      r.report = NodeReport(name, 8, seed * 104729 + ++k, Quirk::kHealthy, setup);
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace perfgate::testing
