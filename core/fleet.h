// Many nodes' reports read into one list: the input of `perfgate report` (and of anything
// else that looks at a fleet). Reads report JSON files (`perfgate-worker run --report-json`),
// PerfResult objects and lists of them (`kubectl get perfresults -o json`), and folders of
// such files.
#pragma once

#include <string>
#include <vector>

#include "common/compare.h"
#include "common/result.h"
#include "common/stats.h"
#include "perfgate/v1alpha1/report.pb.h"

namespace perfgate::fleet {

// One node's result in one run.
struct NodeReport {
  std::string node;        // the PerfResult's nodeName, else the report's hostname
  std::string validation;  // the validation (or local spec) it ran for
  std::string run;         // the run id ("g3"); empty for a local report
  std::string source;      // the file it came from, for messages
  std::string worst;       // a PerfResult's spec.worst: the figure closest to failing
  v1alpha1::Report report;
};

// Every node report in `text`: a Report, a PerfResult or a List of PerfResults (JSON).
// `source` names the text in errors.
Result<std::vector<NodeReport>> ParseReports(const std::string& text, const std::string& source);

// Every node report under `paths`: files as ParseReports reads them, folders by their *.json
// files (recursively, sorted by name). A file that is not one of the three kinds is an error
// that names it; an empty result is an error too.
Result<std::vector<NodeReport>> LoadReports(const std::vector<std::string>& paths);

// The command that downloads the node's diagnosis bundle ("kubectl perfgate bundle VALIDATION
// NODE"); "" when the report names no bundle or no validation (a local run's bundle is a folder).
std::string BundleCommand(const NodeReport& r);

// The GPU model of a report ("NVIDIA H200"), "" when it ran on no GPU.
std::string GpuModel(const v1alpha1::Report& report);

// One figure of one node: a threshold's observed statistic (with its bound and verdict), or
// for a metric no threshold checks, its median. Figures of size-swept metrics
// ("busBandwidthGBps@1MiB") without a threshold are left out: they are curves (NcclCurves).
struct Figure {
  std::string node;
  std::string model;  // GPU model, "" on a machine without GPUs
  std::string test;   // the test's name in the spec
  std::string device;
  std::string metric;
  std::string unit;
  std::string statistic;  // "median", "p05", ...
  std::string op;         // ">=", "<=", ... ("" without a threshold)
  double value = 0;
  double bound = 0;  // meaningful when op is set
  bool higher_is_better = true;
  v1alpha1::Verdict verdict = v1alpha1::VERDICT_UNSPECIFIED;  // the threshold's; unset without
};
std::vector<Figure> Figures(const std::vector<NodeReport>& reports);

// Which figures belong together: test, metric, statistic and op.
std::string GroupKey(const Figure& f);

// A node whose figure lags its peers: among the figures of the same group and GPU model, it lags
// the other nodes' figures as comparison::LaggingPeers says (worse than their median by the
// rule's margin, and an outlier of the spread between them). A figure that fails its own
// threshold is a failure: it is not listed, and it is no peer for the others. Sorted worst first.
struct Lagging {
  Figure figure;
  double peer_median = 0;    // the other nodes' median
  double ratio = 0;          // figure / peerMedian
  double z = 0;              // robust z, signed so that negative is worse
  int peers = 0;             // the other nodes it was compared with
  stats::Interval interval;  // of the ratio
};
std::vector<Lagging> FindLagging(const std::vector<Figure>& figures,
                                 const comparison::PeerRule& rule = {});

// A node whose consistency digests differ from its peers'. The consistency test puts the
// strict majority of a node's GPUs' digest of each computation in its details
// ("digest.gemm-bf16": "0x..."); nodes of the same GPU model, driver version and CUDA version
// that ran the test with the same parameters compute the same bits, so they must have the same
// digests. Per such group and computation, at least three nodes, and a digest more than half of
// them share: every node with another digest is listed (its GPUs agree with each other, but not
// with the other nodes: all of them wrong the same way, or not the build its peers run). A
// group without such a majority names nobody. Sorted by node, then test and computation.
struct DigestOutlier {
  std::string node;
  std::string model;   // GPU model
  std::string driver;  // the identity's driverVersion
  std::string cuda;    // the identity's cudaVersion
  std::string test;    // the test's name in the spec
  std::string computation;
  std::string digest;       // the node's
  std::string peer_digest;  // the majority's
  int agreeing = 0;         // nodes with the majority's digest
  int nodes = 0;            // nodes of the group with a digest of this computation
};
std::vector<DigestOutlier> FindDigestOutliers(const std::vector<NodeReport>& reports);

// A node's peer-to-peer matrix from the p2p test's details ("pair gpu0->gpu1": "peer 389.1 GB/s,
// no peer 21.0 GB/s"): the best of the two, GB/s, by ordered pair. Empty without a p2p test.
struct P2pMatrix {
  std::string node;
  int gpus = 0;                           // ordinals 0..gpus-1
  std::vector<std::vector<double>> gbps;  // [src][dst]; NaN on the diagonal and where unknown
};
std::vector<P2pMatrix> P2pMatrices(const std::vector<NodeReport>& reports);

// A node's bus bandwidth against message size for one collective test (out of place).
struct NcclCurve {
  std::string node;
  std::string test;
  std::vector<std::pair<double, double>> points;  // (bytes, median busbw GB/s), by bytes
};
std::vector<NcclCurve> NcclCurves(const std::vector<NodeReport>& reports);

// "128MiB" -> 134217728; -1 when it is not such a size.
double ParseSize(const std::string& label);

}  // namespace perfgate::fleet
