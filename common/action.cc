#include "common/action.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <set>
#include <utility>

namespace perfgate::action {
namespace {

constexpr std::array<std::string_view, 6> kNames = {"none",        "retest", "reset-gpu",
                                                    "reboot-node", "reseat", "rma"};

struct MetricRule {
  std::string_view metric;
  Step step;
  std::string_view why;
};

// Health counters and flags, error counts and port counters: what a failed bound on each says
// about the hardware.
constexpr MetricRule kMetricRules[] = {
    {"eccUncorrectedVolatileCount", Step::kRma,
     "uncorrected ECC errors: the GPU's memory returned data it could not correct"},
    {"eccUncorrectedAggregateCount", Step::kRma, "uncorrected ECC errors over the GPU's life"},
    {"remappedRowsUncorrectableCount", Step::kRma,
     "more rows remapped for uncorrectable errors than the bound allows"},
    {"remappedRowsCorrectableCount", Step::kRma,
     "more rows remapped for correctable errors than the bound allows: the memory is wearing out"},
    {"retiredPagesCount", Step::kRma, "more retired pages than the bound allows"},
    {"rowRemapFailure", Step::kRma, "a row remap failed: the GPU's spare rows are used up"},
    {"retiredPagesDoubleBitCount", Step::kRma, "pages retired for double-bit ECC errors"},
    {"memoryErrorCount", Step::kRma, "memtest read back what it did not write"},
    {"computeErrorCount", Step::kRma,
     "burn's results differ from the reference: the GPU computes wrong answers"},
    {"rowRemapPending", Step::kResetGpu, "a row remap waits for a GPU reset to take effect"},
    {"retiredPagesPending", Step::kResetGpu, "a page retirement waits for a GPU reset"},
    {"eccCorrectedVolatileCount", Step::kResetGpu,
     "corrected ECC errors past the bound: a reset remaps the rows that produce them"},
    {"eccCorrectedAggregateCount", Step::kResetGpu,
     "corrected ECC errors past the bound over the GPU's life"},
    {"nvmlReadErrorCount", Step::kResetGpu, "the driver refused NVML readings of a present GPU"},
    {"gpuFabricNotReady", Step::kRebootNode,
     "the GPU is not registered with the NVSwitch fabric (fabric manager)"},
    {"configMismatchCount", Step::kRebootNode,
     "driver, mode or clock settings differ from the spec's: they take effect on a reboot or "
     "reprovision"},
    {"peerAccessMissingPairCount", Step::kRebootNode,
     "GPU pairs without peer access: ACS or IOMMU settings, or NVLink state, set at boot"},
    {"pcieLinkWidthDegraded", Step::kReseat, "the PCIe link trained narrower than its maximum"},
    {"pcieReplayCount", Step::kReseat, "PCIe link-level errors: a riser, cable or slot"},
    {"nvlinkInactiveLinkCount", Step::kReseat, "NVLink links present but down"},
    {"nvlinkCrcErrorCount", Step::kReseat, "NVLink CRC errors: a link's signal is bad"},
    {"nvlinkReplayErrorCount", Step::kReseat, "NVLink replays: a link's signal is bad"},
    {"nvlinkRecoveryErrorCount", Step::kReseat, "NVLink links retrained during the run"},
    {"hardwareSlowdown", Step::kReseat,
     "hardware slowdown (thermal or power brake): cooling or power delivery"},
    {"portDownCount", Step::kReseat, "a fabric port is down: cable or transceiver"},
    {"portDegradedCount", Step::kReseat, "a fabric port is up below its rated rate or width"},
    {"linkDownedCount", Step::kReseat, "a fabric link went down during the run"},
    {"symbolErrorCount", Step::kReseat, "symbol errors on a fabric link: cable or transceiver"},
    {"linkErrorRecoveryCount", Step::kReseat, "a fabric link retrained during the run"},
    {"portRcvErrorCount", Step::kReseat, "malformed packets received on a fabric port"},
    {"bufferOverrunErrorCount", Step::kReseat, "buffer overruns on a fabric link"},
    {"linkIntegrityErrorCount", Step::kReseat, "local link integrity errors on a fabric port"},
    {"topologyMismatchCount", Step::kReseat,
     "a rail is cabled to another switch than the declared topology: move the cable"},
    {"otherProcessCount", Step::kRetest,
     "another process used the GPU during the run: the figures are not the GPU's own"},
    {"xidEventCount", Step::kResetGpu,
     "XID errors during the run (the XIDs in the details decide: see the XID rows)"},
    {"kernelLogXidCount", Step::kResetGpu,
     "hardware XIDs in the kernel log (the XIDs in the details decide: see the XID rows)"},
};

struct XidRule {
  std::initializer_list<unsigned long long> xids;
  Step step;
  std::string_view why;
};

// From NVIDIA's XID catalog: what each hardware XID points at.
const XidRule kXidRules[] = {
    {{64, 140}, Step::kRma, "a row remap failed, or an ECC error was not recovered"},
    {{74, 144, 145, 146, 147, 148, 149, 150}, Step::kReseat, "an NVLink error"},
    {{79}, Step::kResetGpu, "the GPU fell off the bus: reset it, then test again"},
    {{48, 63, 92, 94, 95},
     Step::kResetGpu,
     "an ECC error or a row remap event: a reset remaps the row"},
    {{61, 62, 119, 120}, Step::kResetGpu, "the GPU's firmware (GSP or a microcontroller) stalled"},
};

std::string XidWhat(const XidRule& rule) {
  std::string what = rule.xids.size() > 1 ? "XIDs " : "XID ";
  bool first = true;
  for (unsigned long long x : rule.xids) {
    what += (first ? "" : ", ") + std::to_string(x);
    first = false;
  }
  return what;
}

// The XIDs of a health result's details ("79, 13"; "none"; "not watched ...").
std::vector<unsigned long long> DetailXids(const v1alpha1::TestResult& t) {
  std::vector<unsigned long long> out;
  for (const char* key : {"xidEvents", "kernelLogXids"}) {
    auto it = t.details().find(key);
    if (it == t.details().end()) continue;
    const std::string& text = it->second;
    for (std::size_t i = 0; i < text.size();) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
        ++i;
        continue;
      }
      std::size_t end = i;
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
      out.push_back(std::strtoull(text.substr(i, end - i).c_str(), nullptr, 10));
      i = end;
    }
  }
  return out;
}

constexpr std::string_view kConsistencyWhy =
    "silent data corruption: the GPU computes other answers than its peers on the same inputs";

struct Finding {
  Step step;
  std::string device;
  std::string evidence;
};

std::string Evidence(const v1alpha1::TestResult& t, const std::string& what, Step step,
                     std::string_view why) {
  return t.name() + " [" + t.device() + "]: " + what + ": " + std::string(StepName(step)) + " (" +
         std::string(why) + ")";
}

void Classify(const v1alpha1::TestResult& t, std::vector<Finding>* out) {
  if (t.verdict() == v1alpha1::PASS || t.verdict() == v1alpha1::SKIPPED) return;
  const std::size_t before = out->size();
  if (t.verdict() == v1alpha1::FAIL) {
    for (const auto& th : t.thresholds()) {
      if (th.verdict() != v1alpha1::FAIL) continue;
      const std::string& metric = th.threshold().metric();
      if (metric == "xidEventCount" || metric == "kernelLogXidCount") {
        for (unsigned long long xid : DetailXids(t)) {
          const FailureClass c = XidClass(xid);
          out->push_back(
              {c.step, t.device(), Evidence(t, "XID " + std::to_string(xid), c.step, c.why)});
        }
        if (out->size() > before) continue;
      }
      if (auto c = MetricClass(metric)) {
        out->push_back({c->step, t.device(), Evidence(t, metric, c->step, c->why)});
      } else {
        out->push_back({Step::kRetest, t.device(),
                        Evidence(t, metric, Step::kRetest,
                                 "a figure below its bound with no fault behind it yet")});
      }
    }
  }
  if (out->size() == before && t.verdict() == v1alpha1::FAIL && t.type() == "consistency") {
    // The odd GPUs' digests are kept as "digest.<computation>.gpuN": one finding per GPU.
    std::set<std::string> odd;
    for (const auto& [key, value] : t.details()) {
      const std::size_t dot = key.rfind('.');
      if (key.rfind("digest.", 0) == 0 && dot != std::string::npos && dot > 7 &&
          key.compare(dot + 1, 3, "gpu") == 0) {
        odd.insert(key.substr(dot + 1));
      }
    }
    if (odd.empty()) odd.insert(t.device());
    for (const std::string& gpu : odd) {
      out->push_back(
          {Step::kRma, gpu, Evidence(t, "digest of " + gpu, Step::kRma, kConsistencyWhy)});
    }
    return;
  }
  if (out->size() == before) {
    const std::string why = t.verdict() == v1alpha1::FAIL ? "it failed: " + t.reason()
                            : t.verdict() == v1alpha1::INCONCLUSIVE
                                ? "no decision within its samples"
                                : "it could not measure: " + t.reason();
    out->push_back({Step::kRetest, t.device(), Evidence(t, "verdict", Step::kRetest, why)});
  }
}

}  // namespace

std::string_view StepName(Step step) { return kNames[static_cast<std::size_t>(step)]; }

std::optional<Step> ParseStep(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<Step>(i);
  }
  return std::nullopt;
}

const std::vector<FailureClass>& ClassTable() {
  static const std::vector<FailureClass> table = [] {
    std::vector<FailureClass> t;
    for (const auto& r : kMetricRules) {
      t.push_back({"metric " + std::string(r.metric), r.step, std::string(r.why)});
    }
    for (const auto& r : kXidRules) t.push_back({XidWhat(r), r.step, std::string(r.why)});
    t.push_back({"another XID", Step::kResetGpu, "reset the GPU, then test again"});
    t.push_back({"a consistency FAIL", Step::kRma, std::string(kConsistencyWhy)});
    t.push_back({"any other failed figure", Step::kRetest,
                 "a figure below its bound with no fault behind it yet"});
    t.push_back(
        {"an INCONCLUSIVE or ERROR test", Step::kRetest, "nothing was learnt about the hardware"});
    std::stable_sort(t.begin(), t.end(), [](const FailureClass& a, const FailureClass& b) {
      return static_cast<int>(a.step) > static_cast<int>(b.step);
    });
    return t;
  }();
  return table;
}

std::optional<FailureClass> MetricClass(std::string_view metric) {
  for (const auto& r : kMetricRules) {
    if (r.metric == metric) return FailureClass{std::string(metric), r.step, std::string(r.why)};
  }
  return std::nullopt;
}

FailureClass XidClass(unsigned long long xid) {
  for (const auto& r : kXidRules) {
    if (std::find(r.xids.begin(), r.xids.end(), xid) != r.xids.end()) {
      return {"XID " + std::to_string(xid), r.step, std::string(r.why)};
    }
  }
  return {"XID " + std::to_string(xid), Step::kResetGpu, "reset the GPU, then test again"};
}

v1alpha1::Action Recommend(const v1alpha1::Report& report) {
  v1alpha1::Action action;
  if (report.verdict() == v1alpha1::PASS) {
    action.set_step(std::string(StepName(Step::kNone)));
    return action;
  }
  std::vector<Finding> findings;
  for (const auto& t : report.tests()) Classify(t, &findings);
  if (findings.empty()) {
    // A node that did not pass with no test to blame (no tests ran, the run stopped).
    findings.push_back({Step::kRetest, "",
                        "node: " + std::string(StepName(Step::kRetest)) + " (" +
                            (report.reason().empty() ? "the run did not finish" : report.reason()) +
                            ")"});
  }
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return static_cast<int>(a.step) > static_cast<int>(b.step);
  });
  const Step worst = findings.front().step;
  action.set_step(std::string(StepName(worst)));
  std::set<std::string> seen;
  std::set<std::string> devices;
  for (const Finding& f : findings) {
    if (seen.insert(f.evidence).second) action.add_evidence(f.evidence);
    if (f.step == worst && !f.device.empty() && f.device != "host") devices.insert(f.device);
  }
  for (const std::string& d : devices) action.add_devices(d);
  return action;
}

Step Escalate(Step step, int earlier_failures, bool gpu_concerned) {
  if (step == Step::kNone || step == Step::kRma) return step;
  int at = static_cast<int>(step);
  for (int i = 0; i < earlier_failures && at < static_cast<int>(Step::kReseat); ++i) {
    ++at;
    if (at == static_cast<int>(Step::kResetGpu) && !gpu_concerned) ++at;
  }
  return static_cast<Step>(at);
}

}  // namespace perfgate::action
