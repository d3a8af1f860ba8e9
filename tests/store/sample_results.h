// Node results as a worker writes them, for the store's tests and its volume benchmark.
#pragma once

#include <cstdint>
#include <string>

#include "common/time.h"
#include "store/store.h"

namespace perfgate::store::testing {

struct SampleShape {
  std::string gpu_model = "NVIDIA H200";
  int gpus = 2;
  // Metrics per GPU test (gemm-like, on each GPU), beside host-stream's two on the host.
  int gpu_metrics = 3;
  int samples = 6;
  // Every figure is multiplied by this (a slower node: 0.92).
  double scale = 1.0;
  std::string profile = "h200-sxm-141gb";
  std::string profile_version = "3";
};

inline NodeResult SampleResult(const std::string& node, const std::string& validation,
                               const std::string& run, int64_t time_s,
                               const SampleShape& shape = {}) {
  NodeResult r;
  r.key = {"test-cluster", validation, run, node};
  auto& rep = r.report;
  rep.set_validation(validation);
  rep.set_profile(shape.profile);
  rep.set_profileversion(shape.profile_version);
  rep.set_verdict(v1alpha1::PASS);
  rep.set_reason("every required test passed");
  const auto t0 = std::chrono::system_clock::time_point(std::chrono::seconds(time_s));
  rep.set_starttime(FormatRfc3339(t0 - std::chrono::seconds(300)));
  rep.set_completiontime(FormatRfc3339(t0));
  rep.set_samplecap(64);
  auto* id = rep.mutable_identity();
  id->set_hostname(node);
  id->set_cpumodel("AMD EPYC 9654 96-Core Processor");
  id->set_cpucores(192);
  id->set_kernel("6.1.0-28-amd64");
  id->set_driverversion("570.86.15");
  id->set_cudaversion("12.8");
  id->set_ncclversion("2.25.1");
  id->set_topology("GPU0 GPU1 NV18; NUMA 0-1");
  for (int g = 0; g < shape.gpus; ++g) {
    auto* gi = id->add_gpus();
    gi->set_index(g);
    gi->set_name(shape.gpu_model);
    gi->set_uuid("GPU-" + node + "-" + std::to_string(g));
    gi->set_pcibusid("00000000:" + std::to_string(17 + g) + ":00.0");
    gi->set_vbios("96.00.AF.00.01");
    gi->set_powerlimitw(700);
    gi->set_smclockmhz(1980);
    gi->set_eccmode("Enabled");
    gi->set_migmode("Disabled");
    gi->set_persistencemode("Enabled");
  }
  auto add_metric = [&](v1alpha1::TestResult* t, const std::string& name, double base) {
    auto* m = t->add_metrics();
    m->set_name(name);
    m->set_unit("GB/s");
    m->set_higherisbetter(true);
    auto* s = m->mutable_summary();
    s->set_n(shape.samples);
    double sum = 0;
    for (int i = 0; i < shape.samples; ++i) {
      // A small spread around the figure, the same every run.
      const double v = base * shape.scale * (1.0 + 0.004 * ((i * 7) % 5 - 2));
      m->add_samples(v);
      sum += v;
    }
    s->set_mean(sum / shape.samples);
    s->set_median(base * shape.scale);
    s->set_min(base * shape.scale * 0.992);
    s->set_max(base * shape.scale * 1.008);
    s->set_p05(base * shape.scale * 0.993);
    s->set_p95(base * shape.scale * 1.007);
    s->set_stddev(base * shape.scale * 0.005);
    s->set_cv(0.005);
    s->mutable_medianci()->set_low(base * shape.scale * 0.995);
    s->mutable_medianci()->set_high(base * shape.scale * 1.005);
    s->mutable_medianci()->set_confidence(0.95);
  };
  auto* host = rep.add_tests();
  host->set_name("host-stream");
  host->set_type("host-stream");
  host->set_device("host");
  host->set_verdict(v1alpha1::PASS);
  host->set_samples(shape.samples);
  host->set_stopreason("decided");
  (*host->mutable_parameters())["arrayBytes"] = "1073741824";
  add_metric(host, "triadBandwidthGBps", 300);
  add_metric(host, "copyBandwidthGBps", 250);
  auto* th = host->add_thresholds();
  th->mutable_threshold()->set_metric("triadBandwidthGBps");
  th->mutable_threshold()->set_statistic("median");
  th->mutable_threshold()->set_op(">=");
  th->set_bound(100);
  th->set_observed(300 * shape.scale);
  th->set_verdict(v1alpha1::PASS);
  th->mutable_interval()->set_low(290 * shape.scale);
  th->mutable_interval()->set_highunbounded(true);
  for (int g = 0; g < shape.gpus; ++g) {
    auto* t = rep.add_tests();
    t->set_name("gemm");
    t->set_type("gemm");
    t->set_device("gpu" + std::to_string(g));
    t->set_verdict(v1alpha1::PASS);
    t->set_samples(shape.samples);
    for (int k = 0; k < shape.gpu_metrics; ++k) {
      add_metric(t, "metric" + std::to_string(k), 1000.0 + 10.0 * k);
    }
  }
  auto* skipped = rep.add_tests();
  skipped->set_name("p2p");
  skipped->set_type("p2p");
  skipped->set_device("gpus");
  skipped->set_verdict(v1alpha1::SKIPPED);
  skipped->set_reason("not applicable: one GPU");
  rep.set_passed(1 + shape.gpus);
  rep.set_skipped(1);
  return r;
}

// Metric summaries in one SampleResult.
inline int SampleMetricCount(const SampleShape& shape) {
  return 2 + shape.gpus * shape.gpu_metrics;
}

}  // namespace perfgate::store::testing
