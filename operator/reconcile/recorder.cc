#include "operator/reconcile/recorder.h"

#include <algorithm>

#include "common/node_verdict.h"
#include "common/report.h"
#include "core/names.h"
#include "operator/policy/repeated_failures.h"
#include "operator/runtime/log.h"

namespace perfgate::op {
namespace {

bool Recoverable(const Status& st) {
  return st.code() == Code::kUnavailable || st.code() == Code::kResourceExhausted;
}

// The report a PerfResult holds, when it holds one.
Result<v1alpha1::Report> ReportOf(const Json& result) {
  const Json spec = result.value("spec", Json::object());
  if (!spec.contains("report") || !spec["report"].is_object()) {
    return InvalidArgument("PerfResult " + Name(result) + " has no report");
  }
  auto report = report::FromJson(spec["report"].dump());
  if (!report.ok()) return report.status().WithContext("PerfResult " + Name(result));
  return report;
}

}  // namespace

Recorder::Recorder(RecorderOptions options, std::shared_ptr<perfgate::Clock> clock)
    : options_(std::move(options)),
      clock_(clock ? std::move(clock) : RealClock()),
      spool_(options_.spool_dir.empty() ? store::DefaultSpoolDir(options_.url)
                                        : options_.spool_dir) {}

void Recorder::EnsureOpen() {
  if (store_ != nullptr || clock_->Now() < next_open_) return;
  auto opened = store::Open(options_.url);
  if (!opened.ok()) {
    Failed(opened.status());
    return;
  }
  store_ = std::move(opened).value();
  describe_ = store_->Describe();
  if (!error_.empty()) Logger()->info("results store {} is back", describe_);
  error_.clear();
}

void Recorder::Failed(const Status& st) {
  if (error_ != st.message()) Logger()->warn("results store: {}", st.message());
  error_ = st.message();
  if (Recoverable(st) || store_ == nullptr) {
    store_.reset();
    next_open_ = clock_->Now() + options_.reopen_after;
  }
}

const std::map<std::string, v1alpha1::Report>& Recorder::ReadReports(kube::Client& client,
                                                                     const std::string& ns,
                                                                     const Snapshot& s) {
  auto& [report_run, full] = reports_[s.name];
  if (report_run != s.run) {
    report_run = s.run;
    full.clear();
  }
  for (const auto& r : s.results) {
    if (Label(r, kRunLabel) != s.run || full.contains(ResultNode(r))) continue;
    auto got = client.Get(ResultsResource(), ns, Name(r));
    if (!got.ok()) continue;  // read at the next reconcile
    auto report = ReportOf(*got);
    if (report.ok()) full[ResultNode(r)] = std::move(report).value();
  }
  return full;
}

void Recorder::CatchUp() {
  if (store_ == nullptr || spool_.Pending() == 0) return;
  auto drained = spool_.Drain(*store_);
  if (!drained.ok()) {
    Failed(drained.status());
  } else if (*drained > 0) {
    Logger()->info("results store {}: caught up, {} spooled results written", describe_, *drained);
  }
}

void Recorder::ReadBaselines(const Snapshot& s, StoreView* view) {
  if (s.run_complete) baselines_.erase(s.name);
  if (!s.spec || s.run_complete) return;
  auto& [baseline_run, known] = baselines_[s.name];
  if (baseline_run != s.run) {
    baseline_run = s.run;
    known.clear();
  }
  for (const auto& name : BaselinesNamed(s.spec->doc.spec(), s.profiles)) {
    if (known.contains(name)) continue;
    if (store_ == nullptr) {
      view->baseline_errors[name] = Unavailable("results store unavailable: " + error_);
      continue;
    }
    auto got = store_->GetBaseline(name);
    if (got.ok()) {
      known[name] = std::move(got).value();
      continue;
    }
    if (Recoverable(got.status())) Failed(got.status());
    view->baseline_errors[name] =
        got.status().code() == Code::kNotFound
            ? NotFound("baseline \"" + name + "\" not found in " + view->describe)
            : got.status();
  }
  view->baselines = known;
}

void Recorder::ReadHistory(const Snapshot& s, const std::map<std::string, v1alpha1::Report>& full,
                           StoreView* view) {
  auto& [run, by_node] = history_[s.name];
  if (run != s.run || s.run_complete) {
    run = s.run;
    by_node.clear();
  }
  for (const auto& [node, report] : full) {
    if (by_node.contains(node)) continue;
    if (store_ == nullptr) break;
    if (report.tests().empty()) continue;
    store::MetricQuery q;
    q.cluster = options_.cluster;
    q.node = node;
    if (report.profile().empty()) {
      q.validation = s.name;
    } else {
      q.profile = report.profile();
    }
    // One more than wanted: this run's own result may be among them already.
    q.latest_results = options_.history_runs + 1;
    auto got = store_->Metrics(q);
    if (!got.ok()) {
      Failed(got.status());
      view->available = false;
      view->error = error_;
      break;
    }
    std::vector<store::MetricRecord> before;
    std::set<std::string> runs;
    for (auto& m : *got) {
      if (m.key.validation == s.name && m.key.run == s.run) continue;
      runs.insert(m.key.validation + "/" + m.key.run);
      if (static_cast<int>(runs.size()) > options_.history_runs) break;
      before.push_back(std::move(m));
    }
    by_node[node] = std::move(before);
  }
  for (const auto& [node, records] : by_node) {
    if (!records.empty()) view->history[node] = records;
  }
}

void Recorder::ReadRecentVerdicts(const Snapshot& s,
                                  const std::map<std::string, v1alpha1::Report>& full,
                                  StoreView* view) {
  auto& [verdicts_run, verdicts] = verdicts_[s.name];
  if (verdicts_run != s.run) {
    verdicts_run = s.run;
    verdicts.clear();
  }
  const int window = s.spec ? RuleOrDefaults(s.spec->doc.spec().policy().repeatedfailurethreshold(),
                                             s.spec->doc.spec().policy().repeatedfailurewindow())
                                  .window
                            : 0;
  for (const auto& [node, report] : full) {
    if (window <= 0 || store_ == nullptr || verdicts.contains(node)) continue;
    store::ResultQuery q;
    q.cluster = options_.cluster;
    q.node = node;
    q.limit = window + 1;  // this run's own result may be among them already
    auto got = store_->Results(q);
    if (!got.ok()) {
      Failed(got.status());
      view->available = false;
      view->error = error_;
      break;
    }
    std::vector<verdict::Verdict> earlier;
    for (const auto& r : *got) {
      if (r.key.validation == s.name && r.key.run == s.run) continue;
      // A row without a verdict word was never finished: ERROR, as a report without one.
      const verdict::Verdict v =
          verdict::ParseVerdict(r.verdict).value_or(verdict::Verdict::kError);
      if (static_cast<int>(earlier.size()) < window) earlier.push_back(v);
    }
    verdicts[node] = std::move(earlier);
  }
  view->recent_verdicts = verdicts;
}

void Recorder::Observe(kube::Client& client, const std::string& ns, Snapshot* s) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::map<std::string, v1alpha1::Report>& full = ReadReports(client, ns, *s);
  EnsureOpen();
  CatchUp();
  StoreView view;
  view.describe =
      describe_.empty() ? options_.url.substr(0, options_.url.find("://") + 3) + "..." : describe_;
  view.available = Available();
  view.error = error_;
  view.spooled = spool_.Pending();
  ReadBaselines(*s, &view);
  ReadHistory(*s, full, &view);
  ReadRecentVerdicts(*s, full, &view);
  view.reports = full;
  if (s->run_complete) {
    history_.erase(s->name);
    reports_.erase(s->name);
    verdicts_.erase(s->name);
  }
  s->store = std::move(view);
}

bool Recorder::Record(const Snapshot& s, const Decision& d) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool was_available = Available();
  std::vector<const Json*> results;
  for (const auto& r : s.results) {
    if (Label(r, kRunLabel) == s.run) results.push_back(&r);
  }
  for (const auto& w : d.results) results.push_back(&w.result);
  auto& [run, done] = recorded_[s.name];
  if (run != s.run) {
    run = s.run;
    done.clear();
  }
  for (const Json* r : results) {
    const std::string node = ResultNode(*r);
    if (done.contains(node)) continue;
    // The full report read in observe; the operator's own results are whole as they are.
    auto& full = reports_[s.name];
    auto known = full.first == s.run ? full.second.find(node) : full.second.end();
    Result<v1alpha1::Report> report =
        known != full.second.end() ? Result<v1alpha1::Report>(known->second) : ReportOf(*r);
    if (known == full.second.end() && Label(*r, kRunLabel) == s.run &&
        r->value("spec", Json::object()).value("writtenBy", "") != "operator") {
      continue;  // a worker's result whose full report is not read yet: at the next reconcile
    }
    if (!report.ok()) {
      Logger()->warn("{}: not recorded: {}", s.name, report.status().message());
      done.insert(node);
      continue;
    }
    EnsureOpen();
    store::NodeResult result{{options_.cluster, s.name, s.run, node}, std::move(report).value()};
    Status why;
    auto stored = store::PutOrSpool(store_.get(), spool_, result, &why);
    if (!stored.ok()) {
      // Refused for good (or the spool could not be written): said once, not retried.
      Logger()->error("{}: result of {} not recorded: {}", s.name, node, stored.status().message());
      if (Recoverable(stored.status())) continue;
    } else if (*stored == store::Stored::kSpooled && store_ != nullptr) {
      Failed(why);
    }
    done.insert(node);
  }
  return Available() != was_available;
}

}  // namespace perfgate::op
