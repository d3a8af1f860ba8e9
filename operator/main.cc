// perfgate-operator: reconciles PerfValidations (see docs/operator.md).
//   perfgate-operator [--kubeconfig PATH] [--leader-elect] [--namespace perfgate-system]
//                     [--worker-image IMAGE] [--worker-service-account NAME]
//                     [--metrics-bind-address :8080] [--health-probe-bind-address :8081]
//                     [--log-format json|text] [--workers N] [--enable-fixtures]
//                     [--metrics-per-node] [--store off|URL|postgres] [--cluster-name NAME]
#include <signal.h>
#include <unistd.h>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/labels.h"
#include "common/strings.h"
#include "common/time.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/informer.h"
#include "kube/leaderelection.h"
#include "operator/policy/disruption.h"
#include "operator/reconcile/reconciler.h"
#include "operator/runtime/cache_strip.h"
#include "operator/runtime/controller.h"
#include "operator/runtime/http_server.h"
#include "operator/runtime/index.h"
#include "operator/runtime/log.h"
#include "operator/runtime/metrics.h"

namespace {

using perfgate::Cancellation;
using perfgate::Clock;
using perfgate::LabelValue;
using perfgate::ParseRfc3339;
using perfgate::RealClock;
using perfgate::Status;
using perfgate::op::Json;
namespace kube = perfgate::kube;
namespace op = perfgate::op;

const char* kUsage = R"(perfgate-operator: reconciles perfgate.io PerfValidations.

flags:
  --kubeconfig PATH                 kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)
  --namespace NS                    where worker pods and PerfResults live (perfgate-system)
  --worker-image IMAGE              the worker's container image
  --worker-service-account NAME     the worker pods' service account (perfgate-worker)
  --yield-priority-class NAME       the PriorityClass of workers under spec.disruption.policy
                                    yield (perfgate-yield, which the chart ships)
  --leader-elect                    hold a Lease before reconciling (for more than one replica)
  --metrics-bind-address ADDR       /metrics (default :8080; 0 disables)
  --metrics-per-node                also per-node series: each node's verdict, and of its latest
                                    result the figures, bounds and test verdicts (docs/reports.md)
  --health-probe-bind-address ADDR  /healthz and /readyz (default :8081; 0 disables)
  --log-format json|text            (text)
  --workers N                       concurrent reconciles (4)
  --kube-api-qps Q, --kube-api-burst B  client-side rate limit (50, 100)
  --scheduling-timeout-seconds N    a worker pod unscheduled this long gives its node ERROR (300)
  --gang-rendezvous-host HOST       NCCL gangs meet at HOST:<a free port> instead of rank 0's
                                    headless Service name (kube-sim, which has no DNS)
  --enable-fixtures                 let workers run test-only fixtures (end-to-end tests only)
  --diagnostics-volume JSON         a volume source (e.g. {"persistentVolumeClaim":{"claimName":
                                    "perfgate-bundles"}}) mounted into worker pods, where a node
                                    with a failing test keeps its diagnosis bundle
                                    (docs/diagnostics.md); default none
  --store off|URL|postgres          the results store every completed PerfResult is recorded in
                                    (off): sqlite:///var/lib/perfgate/results.db,
                                    postgresql://host/db, or postgres: the URL in
                                    $PERFGATE_STORE_DSN (from a Secret)
  --cluster-name NAME               this cluster's name in the store (default)
  --store-spool-dir DIR             where results wait while the store is away (beside a SQLite
                                    file; for PostgreSQL $HOME/.local/share/perfgate/spool-*)
  --store-retry-seconds N           how often waiting results are tried again (30)
  --max-quarantined N|P%            the brake on mass quarantine: a validation without
                                    policy.maxQuarantined taints or cordons at most this many of
                                    its nodes, all together at most this many of the cluster's
                                    GPU nodes (50%)
  --clock-start TIME                rehearsal only: the time validations see starts at TIME
                                    (RFC 3339) and runs at the real pace, to try a schedule,
                                    its starting deadline and an outage in seconds
)";

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop = true; }

struct Flags {
  std::string kubeconfig;
  std::string name_space = "perfgate-system";
  std::string worker_image = "ghcr.io/perfgate/perfgate-worker:latest";
  std::string worker_service_account = "perfgate-worker";
  std::string yield_priority_class = "perfgate-yield";
  bool leader_elect = false;
  std::string metrics_address = ":8080";
  std::string health_address = ":8081";
  std::string log_format = "text";
  int workers = 4;
  int scheduling_timeout_seconds = 300;
  double kube_api_qps = 50;
  int kube_api_burst = 100;
  bool enable_fixtures = false;
  std::string gang_rendezvous_host;
  std::string diagnostics_volume;
  bool metrics_per_node = false;
  std::string store = "off";
  std::string cluster_name = "default";
  std::string store_spool_dir;
  int store_retry_seconds = 30;
  std::string max_quarantined = "50%";
  // Rehearsal only: the reconciler's clock starts at this time.
  std::string clock_start;
};

// A whole number of at least `least` into `*out`.
bool AtLeast(const std::string& value, int least, int* out) {
  *out = std::max(least, std::atoi(value.c_str()));
  return true;
}

// --diagnostics-volume: one volume source, as in a pod's volumes[] entry without its name.
bool DiagnosticsVolume(const std::string& value, Flags* f) {
  const Json source = Json::parse(value, nullptr, false);
  if (!source.is_object() || source.size() != 1 || source.contains("name")) {
    std::cerr << "perfgate-operator: --diagnostics-volume: expected one volume source as "
                 "JSON, e.g. {\"persistentVolumeClaim\":{\"claimName\":\"bundles\"}}, got "
              << value << "\n";
    return false;
  }
  f->diagnostics_volume = value;
  return true;
}

using Setter = std::function<bool(const std::string&, Flags*)>;

// The flags that take a value, each with what sets it: false for a value it refuses.
const std::map<std::string, Setter>& ValueFlags() {
  auto text = [](std::string Flags::*field, bool allow_empty = true) -> Setter {
    return [field, allow_empty](const std::string& v, Flags* f) {
      if (!allow_empty && v.empty()) return false;
      f->*field = v;
      return true;
    };
  };
  static const std::map<std::string, Setter> kSetters = {
      {"--kubeconfig", text(&Flags::kubeconfig)},
      {"--namespace", text(&Flags::name_space)},
      {"--worker-image", text(&Flags::worker_image)},
      {"--worker-service-account", text(&Flags::worker_service_account)},
      {"--yield-priority-class", text(&Flags::yield_priority_class, false)},
      {"--metrics-bind-address", text(&Flags::metrics_address)},
      {"--health-probe-bind-address", text(&Flags::health_address)},
      {"--gang-rendezvous-host", text(&Flags::gang_rendezvous_host)},
      {"--store", text(&Flags::store)},
      {"--cluster-name", text(&Flags::cluster_name, false)},
      {"--store-spool-dir", text(&Flags::store_spool_dir)},
      {"--diagnostics-volume", DiagnosticsVolume},
      {"--log-format",
       [](const std::string& v, Flags* f) {
         if (v != "json" && v != "text") return false;
         f->log_format = v;
         return true;
       }},
      {"--workers", [](const std::string& v, Flags* f) { return AtLeast(v, 1, &f->workers); }},
      {"--kube-api-burst",
       [](const std::string& v, Flags* f) { return AtLeast(v, 1, &f->kube_api_burst); }},
      {"--store-retry-seconds",
       [](const std::string& v, Flags* f) { return AtLeast(v, 1, &f->store_retry_seconds); }},
      {"--scheduling-timeout-seconds",
       [](const std::string& v, Flags* f) {
         return AtLeast(v, 1, &f->scheduling_timeout_seconds);
       }},
      {"--kube-api-qps",
       [](const std::string& v, Flags* f) {
         f->kube_api_qps = std::max(1.0, std::atof(v.c_str()));
         return true;
       }},
      {"--max-quarantined",
       [](const std::string& v, Flags* f) {
         if (!op::NodeCount(v, 1, "--max-quarantined").ok()) return false;
         f->max_quarantined = v;
         return true;
       }},
      {"--clock-start",
       [](const std::string& v, Flags* f) {
         if (!ParseRfc3339(v)) return false;
         f->clock_start = v;
         return true;
       }},
  };
  return kSetters;
}

bool ParseFlags(int argc, char** argv, Flags* f) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    std::string value;
    bool has_value = false;
    if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    }
    bool ok = true;
    if (a == "--leader-elect") {
      f->leader_elect = !has_value || value == "true";
    } else if (a == "--enable-fixtures") {
      f->enable_fixtures = true;
    } else if (a == "--metrics-per-node") {
      f->metrics_per_node = !has_value || value == "true";
    } else if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (auto it = ValueFlags().find(a); it != ValueFlags().end()) {
      // "--flag=value" or "--flag value".
      if (!has_value && i + 1 < args.size()) {
        value = args[++i];
        has_value = true;
      }
      ok = has_value && it->second(value, f);
      if (!ok && has_value && a == "--diagnostics-volume") return false;  // said why already
    } else {
      ok = false;
    }
    if (!ok) {
      std::cerr << "perfgate-operator: bad flag " << a << (has_value ? " " + value : "") << "\n\n"
                << kUsage;
      return false;
    }
  }
  return true;
}

// One JSON object per line; the message is escaped (it often quotes API errors).
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    Json line = {{"ts", FormatTs(msg.time)},
                 {"level", std::string(spdlog::level::to_string_view(msg.level).data(),
                                       spdlog::level::to_string_view(msg.level).size())},
                 {"logger", std::string(msg.logger_name.data(), msg.logger_name.size())},
                 {"msg", std::string(msg.payload.data(), msg.payload.size())}};
    std::string text = line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }

 private:
  static std::string FormatTs(spdlog::log_clock::time_point t) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[40];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    char out[48];
    std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms % 1000));
    return out;
  }
};

void SetUpLogging(const std::string& format) {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  if (format == "json") {
    sink->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    sink->set_formatter(std::make_unique<spdlog::pattern_formatter>(
        "%Y-%m-%dT%H:%M:%S.%eZ %l %n: %v", spdlog::pattern_time_type::utc));
  }
  for (const char* name : {"operator", "kube"}) {
    auto logger = std::make_shared<spdlog::logger>(name, sink);
    spdlog::register_logger(logger);
  }
}

kube::Informer* MakeInformer(std::shared_ptr<kube::Client> client, kube::GroupVersionResource gvr,
                             const std::string& ns, const std::string& selector,
                             std::function<void(Json&)> transform,
                             std::vector<std::unique_ptr<kube::Informer>>* keep) {
  kube::InformerOptions o;
  o.reflector.gvr = std::move(gvr);
  o.reflector.ns = ns;
  o.reflector.labelSelector = selector;
  o.resyncPeriod = std::chrono::seconds(300);
  o.transform = std::move(transform);
  keep->push_back(std::make_unique<kube::Informer>(std::move(client), o));
  return keep->back().get();
}

// The reconciler's settings from the flags.
op::ReconcilerConfig ReconcilerConfigOf(const Flags& flags) {
  op::ReconcilerConfig rc;
  rc.name_space = flags.name_space;
  rc.worker_image = flags.worker_image;
  rc.worker_service_account = flags.worker_service_account;
  rc.yield_priority_class = flags.yield_priority_class;
  rc.enable_fixtures = flags.enable_fixtures;
  rc.scheduling_timeout = std::chrono::seconds(flags.scheduling_timeout_seconds);
  rc.gang_rendezvous_host = flags.gang_rendezvous_host;
  rc.diagnostics_volume = flags.diagnostics_volume;
  rc.store_retry = std::chrono::seconds(flags.store_retry_seconds);
  rc.max_quarantined = flags.max_quarantined;
  return rc;
}

// The time validations see: the real time, or (schedules rehearsed, --clock-start) a time that
// starts at --clock-start and runs at the real pace from there.
class StartedClock final : public Clock {
 public:
  explicit StartedClock(std::chrono::system_clock::time_point start)
      : start_(start), origin_(RealClock()->Now()) {}
  std::chrono::steady_clock::time_point Now() const override { return RealClock()->Now(); }
  std::chrono::system_clock::time_point WallNow() const override {
    return start_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                        RealClock()->Now() - origin_);
  }
  bool SleepFor(std::chrono::nanoseconds duration, const Cancellation* cancel) override {
    return RealClock()->SleepFor(duration, cancel);
  }

 private:
  std::chrono::system_clock::time_point start_;
  std::chrono::steady_clock::time_point origin_;
};

std::shared_ptr<Clock> ClockOf(const Flags& flags) {
  if (flags.clock_start.empty()) return RealClock();
  op::Logger()->warn("--clock-start: validations see the time from {} on, not the real time",
                     flags.clock_start);
  return std::make_shared<StartedClock>(*ParseRfc3339(flags.clock_start));
}

// Whether --store names a results store.
bool StoreEnabled(const Flags& flags) { return flags.store != "off" && !flags.store.empty(); }

// Gives the reconciler its results store (--store), or says there is none. False (and logged)
// when the store's URL is missing.
bool SetUpStore(const Flags& flags, const op::ReconcilerConfig& rc, op::Reconciler* reconciler) {
  auto log = op::Logger();
  if (!StoreEnabled(flags)) {
    log->warn(
        "no results store (--store=off): completed results are not kept beyond the PerfResults "
        "and nodes are not checked for regressions; --store=sqlite://... on a volume or "
        "--store=postgres keeps them (docs/store.md)");
    return true;
  }
  op::RecorderOptions ro;
  ro.url = flags.store;
  if (ro.url == "postgres" || ro.url == "postgresql") {
    ro.url = perfgate::EnvVar("PERFGATE_STORE_DSN");
    if (ro.url.empty()) {
      log->error("--store={} reads the store's URL from $PERFGATE_STORE_DSN, which is not set",
                 flags.store);
      return false;
    }
  }
  ro.cluster = flags.cluster_name;
  ro.spool_dir = flags.store_spool_dir;
  ro.reopen_after = std::min<std::chrono::milliseconds>(std::chrono::seconds(10), rc.store_retry);
  reconciler->SetRecorder(std::make_shared<op::Recorder>(ro));
  log->info("recording results of cluster {} in the results store", flags.cluster_name);
  return true;
}

// The operator's informers and what the reconciler reads through them.
struct Informers {
  std::vector<std::unique_ptr<kube::Informer>> all;
  kube::Informer* validations = nullptr;
  kube::Informer* pods = nullptr;
  kube::Informer* results = nullptr;
  kube::Informer* nodes = nullptr;
  // The indexes are attached first: handlers run in order, and a reconcile queued by the next
  // handler must find the object that triggered it.
  op::LabelIndex pods_by_validation{"perfgate.io/validation"};
  op::LabelIndex pods_by_node{"perfgate.io/node"};
  op::LabelIndex results_by_validation{"perfgate.io/validation"};

  // Validations, worker pods and results in our namespace, nodes. Each keeps only what the
  // operator reads (operator/runtime/cache_strip.h).
  Informers(const std::shared_ptr<kube::Client>& client, const Flags& flags) {
    validations =
        MakeInformer(client, op::ValidationsResource(), "", "", op::StripValidation, &all);
    pods = MakeInformer(client, kube::PodsResource(), flags.name_space, "perfgate.io/validation",
                        op::StripWorkerPod, &all);
    results = MakeInformer(
        client, op::ResultsResource(), flags.name_space, "",
        [per_node = flags.metrics_per_node](Json& r) { op::StripResult(r, per_node); }, &all);
    nodes = MakeInformer(client, kube::NodesResource(), "", "", op::StripNode, &all);
    pods->AddHandlers(pods_by_validation.Handlers());
    pods->AddHandlers(pods_by_node.Handlers());
    results->AddHandlers(results_by_validation.Handlers());
  }

  op::Caches Caches() {
    return {[this] { return nodes->List(); },
            [this](const std::string& v) { return pods_by_validation.Get(LabelValue(v)); },
            [this](const std::string& n) { return pods_by_node.Get(LabelValue(n)); },
            [this](const std::string& v) { return results_by_validation.Get(LabelValue(v)); }};
  }

  std::vector<kube::Informer*> Pointers() const {
    std::vector<kube::Informer*> out;
    out.reserve(all.size());
    for (const auto& inf : all) out.push_back(inf.get());
    return out;
  }
};

// /healthz, /readyz and /metrics.
struct Endpoints {
  const Flags& flags;
  const Informers& informers;
  op::Reconciler& reconciler;
  const op::Controller& controller;
  const std::atomic<bool>& leading;

  op::HttpReply operator()(const std::string& path) const {
    if (path == "/healthz") return {200, "text/plain", "ok\n"};
    if (path == "/readyz") {
      return controller.Synced() ? op::HttpReply{200, "text/plain", "ok\n"}
                                 : op::HttpReply{503, "text/plain", "caches not synced\n"};
    }
    if (path != "/metrics") return {404, "text/plain", "not found\n"};
    auto& m = reconciler.metrics();
    op::MetricsSnapshot snapshot;
    snapshot.reconciles = m.reconciles.load();
    snapshot.reconcile_errors = m.errors.load();
    snapshot.pods_created = m.pods_created.load();
    snapshot.results_written_by_operator = m.results_written_by_operator.load();
    snapshot.queue_depth = controller.QueueDepth();
    snapshot.leading = leading;
    snapshot.store_enabled = StoreEnabled(flags);
    snapshot.validations = informers.validations->List();
    snapshot.nodes = informers.nodes->List();
    snapshot.per_node = flags.metrics_per_node;
    if (flags.metrics_per_node) snapshot.results = informers.results->List();
    return {200, "text/plain; version=0.0.4; charset=utf-8", op::RenderMetrics(snapshot)};
  }
};

// Serves `handler` on --metrics-bind-address and --health-probe-bind-address ("" or "0": not
// served). False (and logged) when an address cannot be bound.
bool Serve(const Flags& flags, const std::function<op::HttpReply(const std::string&)>& handler,
           std::vector<std::unique_ptr<op::HttpServer>>* servers) {
  for (const auto& addr : {flags.metrics_address, flags.health_address}) {
    if (addr.empty() || addr == "0") continue;
    servers->push_back(std::make_unique<op::HttpServer>(handler));
    Status st = servers->back()->Start(addr);
    if (!st.ok()) {
      op::Logger()->error("{}", st.message());
      return false;
    }
    op::Logger()->info("serving /metrics /healthz /readyz on port {}", servers->back()->port());
  }
  return true;
}

// Leader election (--leader-elect): the controller starts when this replica leads; losing the
// lease other than by shutting down ends the process at once, as controller-runtime does.
class Election {
 public:
  Election(const std::shared_ptr<kube::Client>& client, const Flags& flags,
           op::Controller* controller, std::vector<kube::Informer*> informers,
           std::atomic<bool>* leading) {
    kube::LeaderElectionConfig lc;
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    lc.identity = std::string(host) + "_" + std::to_string(std::random_device{}());
    lc.onStartedLeading = [controller, informers = std::move(informers), leading] {
      *leading = true;
      op::Logger()->info("became leader");
      controller->Start(informers);  // returns at once: the controller's threads sync
    };
    lc.onStoppedLeading = [] {
      if (g_stop) {
        op::Logger()->info("stopped leading");
        return;
      }
      // Lost, not given up: another replica may lead from the lease's expiry on, and a
      // reconcile still running here could write after that. The Deployment starts this
      // replica again as a candidate.
      op::Logger()->error("stopped leading: the lease could not be renewed in time; exiting now");
      op::Logger()->flush();
      std::_Exit(1);
    };
    elector_ = std::make_unique<kube::LeaderElector>(
        kube::NewLeaseLock(client, flags.name_space, "perfgate-operator-leader"), lc);
    thread_ = std::thread([this] { elector_->Run(stop_); });
  }
  Election(const Election&) = delete;
  Election& operator=(const Election&) = delete;
  // Stops campaigning (giving up the lease) and waits for the elector.
  ~Election() {
    stop_.Cancel();
    if (thread_.joinable()) thread_.join();
  }

 private:
  perfgate::Cancellation stop_;
  std::unique_ptr<kube::LeaderElector> elector_;
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) return 2;
  SetUpLogging(flags.log_format);
  auto log = op::Logger();

  auto config = kube::LoadDefaultConfig(flags.kubeconfig);
  if (!config.ok()) {
    log->error("cannot load the cluster config: {}", config.status().message());
    return 1;
  }
  config->qps = flags.kube_api_qps;
  config->burst = flags.kube_api_burst;
  config->userAgent = "perfgate-operator";
  auto client_or = kube::NewClient(*config);
  if (!client_or.ok()) {
    log->error("cannot create the client: {}", client_or.status().message());
    return 1;
  }
  std::shared_ptr<kube::Client> client = *client_or;

  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  signal(SIGPIPE, SIG_IGN);

  Informers informers(client, flags);
  const op::ReconcilerConfig rc = ReconcilerConfigOf(flags);
  op::Reconciler reconciler(client, informers.Caches(), rc, ClockOf(flags));
  if (!SetUpStore(flags, rc, &reconciler)) return 2;

  op::ControllerOptions co;
  co.workers = flags.workers;
  op::Controller controller(
      [&reconciler](const std::string& name) { return reconciler.Reconcile(name); }, co);
  op::EnqueueValidationsOn(
      controller, {informers.validations, informers.pods, informers.results, informers.nodes});
  std::atomic<bool> leading{!flags.leader_elect};
  std::vector<std::unique_ptr<op::HttpServer>> servers;
  if (!Serve(flags, Endpoints{flags, informers, reconciler, controller, leading}, &servers)) {
    return 1;
  }

  // The caches start (and the workers once they have synced) when this replica leads.
  std::unique_ptr<Election> election;
  if (flags.leader_elect) {
    election =
        std::make_unique<Election>(client, flags, &controller, informers.Pointers(), &leading);
  } else {
    controller.Start(informers.Pointers());
  }

  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  log->info("shutting down");
  // The workers first, while this replica still holds the lease (a Start the elector asks for
  // after this does nothing); then the elector; then the informers, whose handlers enqueue
  // into the controller.
  controller.Stop();
  election.reset();
  for (auto& inf : informers.all) inf->Stop();
  for (auto& s : servers) s->Stop();
  log->info("stopped");
  return 0;
}
