#include "worker/history.h"

#include "common/exit_codes.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <sstream>

#include <google/protobuf/util/json_util.h>

#include <nlohmann/json.hpp>

#include "common/report.h"
#include "common/time.h"
#include "common/yaml_emit.h"
#include "kernels/devices.h"
#include "store/baseline_object.h"
#include "store/spool.h"

namespace perfgate::worker {
namespace {

std::string Ratio(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", r);
  return buf;
}

std::string Percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", f * 100);
  return buf;
}

}  // namespace

std::string LocalStoreUrl(const std::string& url) {
  return url.empty() ? "sqlite://" + store::DefaultLocalPath() : url;
}

std::string FormatComparison(const std::vector<MetricComparison>& rows, int runs_before,
                             const std::string& validation, double confidence, double margin) {
  std::ostringstream os;
  os << "compared with the previous "
     << (runs_before == 1 ? "run" : std::to_string(runs_before) + " runs") << " of " << validation
     << " on this machine (ratio now / before, Hodges-Lehmann on log "
     << "samples, " << Percent(confidence) << " interval; flagged beyond " << Percent(margin)
     << "):\n";
  if (rows.empty()) {
    os << "  no metric with samples in both\n";
    return os.str();
  }
  std::vector<std::vector<std::string>> table = {
      {"TEST", "DEVICE", "METRIC", "NOW", "BEFORE", "RATIO", "INTERVAL", ""}};
  for (const auto& r : rows) {
    const std::string unit = r.unit.empty() ? "" : " " + r.unit;
    std::string interval =
        r.ratio.interval.confidence > 0
            ? "[" + Ratio(r.ratio.interval.low) + ", " + Ratio(r.ratio.interval.high) + "]"
            : "-";
    if (r.ratio.interval.confidence > 0 && r.ratio.interval.confidence + 1e-9 < confidence) {
      interval += " (" + Percent(r.ratio.interval.confidence) + ")";
    }
    table.push_back({r.test, r.device, r.metric, report::FormatFigure(r.now_median) + unit,
                     report::FormatFigure(r.before_median) + unit, Ratio(r.ratio.estimate),
                     interval,
                     r.flag < 0   ? "WORSE"
                     : r.flag > 0 ? "BETTER"
                                  : ""});
  }
  os << report::FormatColumns(table);
  for (const auto& r : rows) {
    if (r.flag == 0) continue;
    os << (r.flag < 0 ? "WORSE   " : "BETTER  ") << r.test << " [" << r.device << "] " << r.metric
       << ": " << Ratio(r.ratio.estimate) << " of before, interval [" << Ratio(r.ratio.interval.low)
       << ", " << Ratio(r.ratio.interval.high) << "] beyond the " << Percent(margin) << " margin\n";
  }
  return os.str();
}

void RecordLocalRun(const v1alpha1::Report& report, const HistoryOptions& options,
                    std::ostream& out, std::ostream& err) {
  if (!options.record) return;
  const std::string url = LocalStoreUrl(options.store_url);
  store::NodeResult result;
  result.key.cluster = "local";
  result.key.validation = report.validation();
  result.key.node =
      report.identity().hostname().empty() ? "localhost" : report.identity().hostname();
  result.key.run = (report.starttime().empty() ? NowRfc3339() : report.starttime()) + "/" +
                   std::to_string(getpid());
  result.report = report;

  auto opened = store::Open(url);
  std::unique_ptr<store::Store> store;
  if (opened.ok()) {
    store = std::move(opened).value();
  } else {
    err << "perfgate: warning: the results store is unavailable: " << opened.status().message()
        << "\n";
  }
  store::Spool spool(store::DefaultSpoolDir(url));
  std::vector<store::MetricRecord> before;
  if (store) {
    // Runs that waited for the store go in first, so this one is compared with them too.
    if (auto drained = spool.Drain(*store); !drained.ok()) {
      err << "perfgate: warning: earlier runs still wait in " << spool.dir() << ": "
          << drained.status().message() << "\n";
    }
    store::MetricQuery q;
    q.cluster = "local";
    q.node = result.key.node;
    q.validation = report.validation();
    q.profile = report.profile();
    q.latest_results = options.previous_runs;
    auto got = store->Metrics(q);
    if (got.ok()) {
      before = std::move(got).value();
    } else {
      err << "perfgate: warning: cannot read earlier runs: " << got.status().message() << "\n";
    }
  }
  Status why;
  auto stored = store::PutOrSpool(store.get(), spool, result, &why);
  if (!stored.ok()) {
    err << "perfgate: warning: this run was not recorded: " << stored.status().message() << "\n";
  } else if (*stored == store::Stored::kSpooled) {
    err << "perfgate: warning: this run waits in " << spool.dir()
        << " and is recorded at the next run: " << why.message() << "\n";
  }

  std::set<std::string> runs;
  for (const auto& m : before) runs.insert(m.key.run);
  out << "\n";
  if (runs.empty()) {
    out << "recorded in " << (store ? store->Describe() : url) << ": the first run of "
        << report.validation() << " on this machine; the next one is compared with it\n";
    return;
  }
  out << FormatComparison(CompareWithHistory(report, before, options.confidence, options.margin),
                          static_cast<int>(runs.size()), report.validation(), options.confidence,
                          options.margin);
}

Result<double> BaselineValue(store::Store& store, const std::string& baseline,
                             const std::string& gpu_model, const std::string& profile_version,
                             const std::string& test, const std::string& metric,
                             const std::string& statistic) {
  ASSIGN_OR_RETURN(auto b, store.GetBaseline(baseline));
  return store::BaselineFigure(b, gpu_model, profile_version, test, metric, statistic);
}

std::function<Result<double>(const std::string&, const std::string&, const std::string&,
                             const std::string&, const std::string&)>
LocalBaselineLookup(const std::string& store_url) {
  auto opened = std::make_shared<std::unique_ptr<store::Store>>();
  return [opened, store_url](const std::string& baseline, const std::string& profile_version,
                             const std::string& test, const std::string& metric,
                             const std::string& statistic) -> Result<double> {
    if (!*opened) {
      ASSIGN_OR_RETURN(*opened, store::Open(LocalStoreUrl(store_url)));
    }
    std::string model;
    if (auto gpus = kernels::ListCudaDevices(); gpus.ok() && !gpus->empty()) {
      model = gpus->front().name;
    }
    return BaselineValue(**opened, baseline, model, profile_version, test, metric, statistic);
  };
}

// The results `baseline create` takes: --from KEY=VALUE,... (validation, run, cluster, since,
// until), --nodes, PASS results unless --any-verdict. An error says which part is wrong.
Result<store::ResultQuery> BaselineSelection(const BaselineArgs& args) {
  store::ResultQuery query;
  if (args.from.empty()) return InvalidArgument("baseline create needs --from");
  std::stringstream parts(args.from);
  std::string part;
  while (std::getline(parts, part, ',')) {
    const auto eq = part.find('=');
    const std::string key = part.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : part.substr(eq + 1);
    if (value.empty()) return InvalidArgument("--from: \"" + part + "\" is not KEY=VALUE");
    if (key == "validation") {
      query.validation = value;
    } else if (key == "run") {
      query.run = value;
    } else if (key == "cluster") {
      query.cluster = value;
    } else if (key == "since" || key == "until") {
      auto t = ParseRfc3339(value);
      if (!t) {
        return InvalidArgument("--from: " + key + "=" + value +
                               " is not an RFC 3339 time (2026-06-01T00:00:00Z)");
      }
      const int64_t ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count();
      (key == "since" ? query.since_ms : query.until_ms) = ms;
    } else {
      return InvalidArgument("--from: unknown selection " + key);
    }
  }
  std::stringstream list(args.nodes);
  for (std::string node; std::getline(list, node, ',');) {
    if (!node.empty()) query.nodes.push_back(node);
  }
  if (!args.any_verdict) query.verdict = report::VerdictName(v1alpha1::PASS);
  return query;
}

// `baseline list` and `baseline delete NAME`.
int ListOrDeleteBaseline(const BaselineArgs& args, store::Store& store, std::ostream& out,
                         std::ostream& err) {
  if (args.verb == "list") {
    auto names = store.ListBaselines();
    if (!names.ok()) {
      err << "perfgate: " << names.status().message() << "\n";
      return exit_code::kError;
    }
    for (const auto& n : *names) out << n << "\n";
    return 0;
  }
  auto deleted = store.DeleteBaseline(args.name);
  if (!deleted.ok()) {
    err << "perfgate: " << deleted.status().message() << "\n";
    return exit_code::kError;
  }
  if (!*deleted) {
    err << "perfgate: no baseline \"" << args.name << "\" in " << store.Describe() << "\n";
    return exit_code::kInvalid;
  }
  out << "deleted baseline " << args.name << "\n";
  return 0;
}

// A baseline as a PerfBaseline object (-o json|yaml) for kubectl apply -f -, alone on `out`.
int PrintBaselineObject(const BaselineArgs& args, const store::Baseline& b,
                        const store::Store& store, std::ostream& out, std::ostream& err) {
  std::string text;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = false;
  if (!google::protobuf::util::MessageToJsonString(
           store::BaselineObject(b, store::SelectionOfSource(b.source)), &text, o)
           .ok()) {
    err << "perfgate: cannot write baseline " << b.name << " as JSON\n";
    return exit_code::kError;
  }
  const nlohmann::json object = nlohmann::json::parse(text);
  out << (args.output == "json" ? object.dump(2) : yaml::EmitYaml(object)) << "\n";
  if (args.verb == "create") {
    err << "baseline " << b.name << " created in " << store.Describe() << " (" << b.values.size()
        << " figures)\n";
  }
  return 0;
}

// A baseline as a table: where it came from, then its figures.
void PrintBaselineTable(const store::Baseline& b, const store::Store& store, std::ostream& out) {
  out << "baseline " << b.name << " (" << b.source << ", created "
      << FormatRfc3339(
             std::chrono::system_clock::time_point(std::chrono::milliseconds(b.created_ms)))
      << ", in " << store.Describe() << ")\n";
  std::vector<std::vector<std::string>> table = {
      {"GPU MODEL", "PROFILE", "TEST", "METRIC", "STATISTIC", "VALUE", "N", "LOWEST", "HIGHEST"}};
  for (const auto& v : b.values) {
    table.push_back({v.gpu_model.empty() ? "-" : v.gpu_model,
                     v.profile_version.empty() ? "-" : v.profile_version, v.test, v.metric,
                     v.statistic, report::FormatFigure(v.value), std::to_string(v.count),
                     report::FormatFigure(v.low), report::FormatFigure(v.high)});
  }
  out << report::FormatColumns(table);
}

int Baseline(const BaselineArgs& args, std::ostream& out, std::ostream& err) {
  store::ResultQuery query;
  if (args.verb == "create") {
    Result<store::ResultQuery> selected = BaselineSelection(args);
    if (!selected.ok()) {
      err << "perfgate: " << selected.status().message() << "\n";
      return exit_code::kInvalid;
    }
    query = std::move(selected).value();
  }
  auto opened = store::Open(LocalStoreUrl(args.store_url));
  if (!opened.ok()) {
    err << "perfgate: " << opened.status().message() << "\n";
    return exit_code::kError;
  }
  store::Store& store = **opened;
  if (args.verb == "list" || args.verb == "delete") {
    return ListOrDeleteBaseline(args, store, out, err);
  }
  Result<store::Baseline> b = Status(Code::kUnknown, "");
  if (args.verb == "create") {
    std::string source = "--from " + args.from +
                         (args.nodes.empty() ? "" : " --nodes " + args.nodes) +
                         (args.any_verdict ? "" : " (PASS results)");
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    b = store.CreateBaseline(args.name, query, source, now);
  } else {
    b = store.GetBaseline(args.name);
  }
  if (!b.ok()) {
    err << "perfgate: " << b.status().message() << "\n";
    return b.status().code() == Code::kUnavailable || b.status().code() == Code::kInternal
               ? exit_code::kError
               : exit_code::kInvalid;
  }
  if (!args.output.empty()) return PrintBaselineObject(args, *b, store, out, err);
  PrintBaselineTable(*b, store, out);
  return 0;
}

int PruneStore(const PruneArgs& args, std::ostream& out, std::ostream& err) {
  constexpr int kError = exit_code::kError;
  const std::string& url = args.store_url;
  store::Retention retention;
  if (args.older_than_days > 0) {
    retention.max_age_ms = static_cast<int64_t>(args.older_than_days * 86400 * 1000);
  }
  retention.keep_per_node = args.keep_per_node;
  auto opened = store::Open(LocalStoreUrl(url));
  if (!opened.ok()) {
    err << "perfgate: " << opened.status().message() << "\n";
    return kError;
  }
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  auto pruned = (*opened)->Prune(retention, now);
  if (!pruned.ok()) {
    err << "perfgate: " << pruned.status().message() << "\n";
    return kError;
  }
  out << "deleted " << *pruned << " node result" << (*pruned == 1 ? "" : "s") << " from "
      << (*opened)->Describe() << "\n";
  return 0;
}

}  // namespace perfgate::worker
