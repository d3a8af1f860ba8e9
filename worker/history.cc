#include "worker/history.h"

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
    err << "perfgate-worker: warning: the results store is unavailable: "
        << opened.status().message() << "\n";
  }
  store::Spool spool(store::DefaultSpoolDir(url));
  std::vector<store::MetricRecord> before;
  if (store) {
    // Runs that waited for the store go in first, so this one is compared with them too.
    if (auto drained = spool.Drain(*store); !drained.ok()) {
      err << "perfgate-worker: warning: earlier runs still wait in " << spool.dir() << ": "
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
      err << "perfgate-worker: warning: cannot read earlier runs: " << got.status().message()
          << "\n";
    }
  }
  Status why;
  auto stored = store::PutOrSpool(store.get(), spool, result, &why);
  if (!stored.ok()) {
    err << "perfgate-worker: warning: this run was not recorded: " << stored.status().message()
        << "\n";
  } else if (*stored == store::Stored::kSpooled) {
    err << "perfgate-worker: warning: this run waits in " << spool.dir()
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

int BaselineCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  constexpr int kInvalid = 2, kError = 3;
  const char* usage =
      "usage:\n"
      "  perfgate-worker baseline create NAME --from SELECTION [--nodes A,B,...] [--any-verdict]\n"
      "      [-o yaml|json]\n"
      "  perfgate-worker baseline show NAME [-o yaml|json]\n"
      "  perfgate-worker baseline list\n"
      "  perfgate-worker baseline delete NAME\n"
      "  every one takes --store URL (default: the local SQLite store)\n"
      "  -o yaml|json: the baseline as a PerfBaseline object, for kubectl apply -f -\n"
      "SELECTION: comma-separated validation=NAME, run=ID, cluster=NAME, since=TIME, until=TIME\n"
      "  (RFC 3339), e.g. --from validation=h200-acceptance,since=2026-06-01T00:00:00Z\n";
  if (args.empty()) {
    err << usage;
    return kInvalid;
  }
  const std::string& verb = args[0];
  std::string name, url, from, nodes, output;
  bool any_verdict = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--store" || a == "--from" || a == "--nodes" || a == "-o" || a == "--output") {
      if (i + 1 >= args.size()) {
        err << "perfgate-worker: " << a << " needs a value\n";
        return kInvalid;
      }
      (a == "--store" ? url : a == "--from" ? from : a == "--nodes" ? nodes : output) = args[++i];
    } else if (a == "--any-verdict") {
      any_verdict = true;
    } else if (!a.empty() && a[0] != '-' && name.empty()) {
      name = a;
    } else {
      err << "perfgate-worker: baseline: unexpected " << a << "\n" << usage;
      return kInvalid;
    }
  }
  if (verb != "list" && name.empty()) {
    err << "perfgate-worker: baseline " << verb << " needs a NAME\n" << usage;
    return kInvalid;
  }
  if (verb != "create" && verb != "show" && verb != "list" && verb != "delete") {
    err << "perfgate-worker: baseline: unknown command " << verb << "\n" << usage;
    return kInvalid;
  }
  if (!output.empty() &&
      ((output != "yaml" && output != "json") || (verb != "create" && verb != "show"))) {
    err << "perfgate-worker: baseline " << verb << ": -o takes yaml or json, with create or show\n"
        << usage;
    return kInvalid;
  }
  store::ResultQuery query;
  if (verb == "create") {
    if (from.empty()) {
      err << "perfgate-worker: baseline create needs --from\n" << usage;
      return kInvalid;
    }
    std::stringstream parts(from);
    std::string part;
    while (std::getline(parts, part, ',')) {
      const auto eq = part.find('=');
      const std::string key = part.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : part.substr(eq + 1);
      if (value.empty()) {
        err << "perfgate-worker: --from: \"" << part << "\" is not KEY=VALUE\n" << usage;
        return kInvalid;
      }
      if (key == "validation") {
        query.validation = value;
      } else if (key == "run") {
        query.run = value;
      } else if (key == "cluster") {
        query.cluster = value;
      } else if (key == "since" || key == "until") {
        auto t = ParseRfc3339(value);
        if (!t) {
          err << "perfgate-worker: --from: " << key << "=" << value
              << " is not an RFC 3339 time (2026-06-01T00:00:00Z)\n";
          return kInvalid;
        }
        const int64_t ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count();
        (key == "since" ? query.since_ms : query.until_ms) = ms;
      } else {
        err << "perfgate-worker: --from: unknown selection " << key << "\n" << usage;
        return kInvalid;
      }
    }
    std::stringstream list(nodes);
    for (std::string node; std::getline(list, node, ',');) {
      if (!node.empty()) query.nodes.push_back(node);
    }
    if (!any_verdict) query.verdict = "PASS";
  }

  auto opened = store::Open(LocalStoreUrl(url));
  if (!opened.ok()) {
    err << "perfgate-worker: " << opened.status().message() << "\n";
    return kError;
  }
  store::Store& store = **opened;
  if (verb == "list") {
    auto names = store.ListBaselines();
    if (!names.ok()) {
      err << "perfgate-worker: " << names.status().message() << "\n";
      return kError;
    }
    for (const auto& n : *names) out << n << "\n";
    return 0;
  }
  if (verb == "delete") {
    auto deleted = store.DeleteBaseline(name);
    if (!deleted.ok()) {
      err << "perfgate-worker: " << deleted.status().message() << "\n";
      return kError;
    }
    if (!*deleted) {
      err << "perfgate-worker: no baseline \"" << name << "\" in " << store.Describe() << "\n";
      return kInvalid;
    }
    out << "deleted baseline " << name << "\n";
    return 0;
  }
  Result<store::Baseline> b = Status(Code::kUnknown, "");
  if (verb == "create") {
    std::string source = "--from " + from + (nodes.empty() ? "" : " --nodes " + nodes) +
                         (any_verdict ? "" : " (PASS results)");
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    b = store.CreateBaseline(name, query, source, now);
  } else {
    b = store.GetBaseline(name);
  }
  if (!b.ok()) {
    err << "perfgate-worker: " << b.status().message() << "\n";
    return b.status().code() == Code::kUnavailable || b.status().code() == Code::kInternal
               ? kError
               : kInvalid;
  }
  if (!output.empty()) {
    // The PerfBaseline object alone on stdout, for kubectl apply -f -.
    std::string text;
    google::protobuf::util::JsonPrintOptions o;
    o.preserve_proto_field_names = false;
    if (!google::protobuf::util::MessageToJsonString(
             store::BaselineObject(*b, store::SelectionOfSource(b->source)), &text, o)
             .ok()) {
      err << "perfgate-worker: cannot write baseline " << b->name << " as JSON\n";
      return kError;
    }
    const nlohmann::json object = nlohmann::json::parse(text);
    out << (output == "json" ? object.dump(2) : yaml::EmitYaml(object)) << "\n";
    if (verb == "create") {
      err << "baseline " << b->name << " created in " << store.Describe() << " ("
          << b->values.size() << " figures)\n";
    }
    return 0;
  }
  out << "baseline " << b->name << " (" << b->source << ", created "
      << FormatRfc3339(
             std::chrono::system_clock::time_point(std::chrono::milliseconds(b->created_ms)))
      << ", in " << store.Describe() << ")\n";
  std::vector<std::vector<std::string>> table = {
      {"GPU MODEL", "PROFILE", "TEST", "METRIC", "STATISTIC", "VALUE", "N", "LOWEST", "HIGHEST"}};
  for (const auto& v : b->values) {
    table.push_back({v.gpu_model.empty() ? "-" : v.gpu_model,
                     v.profile_version.empty() ? "-" : v.profile_version, v.test, v.metric,
                     v.statistic, report::FormatFigure(v.value), std::to_string(v.count),
                     report::FormatFigure(v.low), report::FormatFigure(v.high)});
  }
  out << report::FormatColumns(table);
  return 0;
}

int StoreCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  constexpr int kInvalid = 2, kError = 3;
  const char* usage =
      "usage: perfgate-worker store prune [--older-than-days N] [--keep-per-node N] "
      "[--store URL]\n";
  if (args.empty() || args[0] != "prune") {
    err << usage;
    return kInvalid;
  }
  std::string url;
  store::Retention retention;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if ((a != "--older-than-days" && a != "--keep-per-node" && a != "--store") ||
        i + 1 >= args.size()) {
      err << "perfgate-worker: store prune: unexpected " << a << "\n" << usage;
      return kInvalid;
    }
    const std::string& v = args[++i];
    if (a == "--store") {
      url = v;
      continue;
    }
    char* end = nullptr;
    const double n = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || !(n > 0)) {
      err << "perfgate-worker: " << a << ": expected a positive number, got \"" << v << "\"\n";
      return kInvalid;
    }
    if (a == "--older-than-days") {
      retention.max_age_ms = static_cast<int64_t>(n * 86400 * 1000);
    } else {
      retention.keep_per_node = static_cast<int>(n);
    }
  }
  if (retention.max_age_ms == 0 && retention.keep_per_node == 0) {
    err << "perfgate-worker: store prune needs --older-than-days or --keep-per-node\n" << usage;
    return kInvalid;
  }
  auto opened = store::Open(LocalStoreUrl(url));
  if (!opened.ok()) {
    err << "perfgate-worker: " << opened.status().message() << "\n";
    return kError;
  }
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  auto pruned = (*opened)->Prune(retention, now);
  if (!pruned.ok()) {
    err << "perfgate-worker: " << pruned.status().message() << "\n";
    return kError;
  }
  out << "deleted " << *pruned << " node result" << (*pruned == 1 ? "" : "s") << " from "
      << (*opened)->Describe() << "\n";
  return 0;
}

}  // namespace perfgate::worker
