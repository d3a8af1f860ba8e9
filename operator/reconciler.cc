#include "operator/reconciler.h"

#include <google/protobuf/util/json_util.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <thread>

#include "common/labels.h"
#include "common/spec.h"
#include "common/time.h"
#include "kernels/cuda/profile_select.h"
#include "operator/gpu_model.h"
#include "operator/log.h"
#include "worker/plan.h"

namespace perfgate::op {
namespace {

using Clock = std::chrono::system_clock;

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string Hex(uint64_t v, int digits) {
  static const char* kDigits = "0123456789abcdef";
  std::string out(static_cast<size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i) {
    out[static_cast<size_t>(i)] = kDigits[v & 0xf];
    v >>= 4;
  }
  return out;
}

std::string Str(const Json& j, const Json::json_pointer& p) {
  if (!j.contains(p)) return "";
  const Json& v = j.at(p);
  return v.is_string() ? v.get<std::string>() : "";
}

// The ownerReferences of an object owned by a validation: garbage-collected with it (a
// namespaced dependent of the cluster-scoped PerfValidation). A pod or plan is controlled by
// it; a result written for it is only owned.
Json OwnerReferences(const Json& validation, bool controller) {
  Json ref = {{"apiVersion", "perfgate.io/v1alpha1"},
              {"kind", "PerfValidation"},
              {"name", Str(validation, "/metadata/name"_json_pointer)},
              {"uid", Str(validation, "/metadata/uid"_json_pointer)},
              {"blockOwnerDeletion", true}};
  if (controller) ref["controller"] = true;
  return Json::array({ref});
}

int64_t Int(const Json& j, const Json::json_pointer& p, int64_t def = 0) {
  if (!j.contains(p)) return def;
  const Json& v = j.at(p);
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number()) return static_cast<int64_t>(v.get<double>());
  if (v.is_string()) return std::strtoll(v.get<std::string>().c_str(), nullptr, 10);
  return def;
}

std::string Label(const Json& obj, const std::string& key) {
  const Json labels = obj.value("metadata", Json::object()).value("labels", Json::object());
  auto it = labels.find(key);
  return it != labels.end() && it->is_string() ? it->get<std::string>() : "";
}

// The node a worker pod is for: its required affinity names it in full (the label may be
// shortened, common/labels.h).
std::string PodNode(const Json& pod) {
  const std::string node = Str(
      pod,
      "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields/0/values/0"_json_pointer);
  return node.empty() ? Label(pod, "perfgate.io/node") : node;
}

bool Terminal(const Json& pod) {
  std::string phase = Str(pod, "/status/phase"_json_pointer);
  return phase == "Succeeded" || phase == "Failed";
}

int NodeGpus(const Json& node) {
  std::string gpus = Str(node, "/status/allocatable/nvidia.com~1gpu"_json_pointer);
  if (gpus.empty())
    return static_cast<int>(Int(node, "/status/allocatable/nvidia.com~1gpu"_json_pointer));
  return std::atoi(gpus.c_str());
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Cut(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n) + "...";
}

Json SetCondition(const Json& old_status, Json conditions, const std::string& type,
                  const std::string& status, const std::string& reason, const std::string& message,
                  int64_t generation, const std::string& now) {
  Json c = {{"type", type},
            {"status", status},
            {"reason", reason},
            {"message", message},
            {"observedGeneration", generation},
            {"lastTransitionTime", now}};
  for (const auto& o : old_status.value("conditions", Json::array())) {
    if (o.value("type", "") == type && o.value("status", "") == status) {
      c["lastTransitionTime"] = o.value("lastTransitionTime", now);
    }
  }
  conditions.push_back(c);
  return conditions;
}

// The selected nodes' GPU models and how each was found (operator/gpu_model.h).
struct SelectedModels {
  std::map<std::string, NodeGpuModel> known;   // node -> its model
  std::map<std::string, std::string> unknown;  // node -> why no model was found
};

// A model's words, lower-case: GFD's "NVIDIA-H200" and CUDA's "NVIDIA H200" are one model.
std::string ModelKey(const std::string& model) {
  std::string key;
  for (char c : model) {
    key += (c == '-' || c == '_') ? ' '
                                  : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return key;
}

// "NVIDIA H200: node-0, node-1 (GKE label cloud.google.com/gke-accelerator=nvidia-h200-141gb)",
// per model and per way it was found, at most 10 nodes each; models joined by "; ".
std::string DescribeModels(const std::map<std::string, NodeGpuModel>& known) {
  struct Group {
    std::string model;
    std::map<std::string, std::vector<std::string>> nodesByWay;
  };
  std::map<std::string, Group> groups;
  for (const auto& [node, m] : known) {
    Group& g = groups[ModelKey(m.model)];
    if (g.model.empty()) g.model = m.model;
    g.nodesByWay[m.foundBy].push_back(node);
  }
  std::string out;
  for (const auto& [key, g] : groups) {
    std::string part;
    for (const auto& [way, nodes] : g.nodesByWay) {
      std::string names;
      for (size_t i = 0; i < nodes.size() && i < 10; ++i) names += (i ? ", " : "") + nodes[i];
      if (nodes.size() > 10) names += " and " + std::to_string(nodes.size() - 10) + " more";
      part += (part.empty() ? "" : ", ") + names + " (" + way + ")";
    }
    out += (out.empty() ? "" : "; ") + g.model + ": " + part;
  }
  return out;
}

// A PerfProfile object, as the loader would read its file.
Result<spec::Loaded<v1alpha1::PerfProfile>> ProfileFromObject(const Json& obj) {
  const std::string name = Str(obj, "/metadata/name"_json_pointer);
  Json doc = {{"apiVersion", "perfgate.io/v1alpha1"},
              {"kind", "PerfProfile"},
              {"metadata", {{"name", name}}},
              {"spec", obj.value("spec", Json::object())}};
  return spec::ParseProfile(doc.dump(2), "PerfProfile/" + name);
}

// A profile from the cluster, by name.
Result<spec::Loaded<v1alpha1::PerfProfile>> LookupProfile(kube::Client& client,
                                                          const std::string& name) {
  auto obj = client.Get(ProfilesResource(), "", name);
  if (!obj.ok()) {
    if (obj.status().code() == Code::kNotFound) {
      return NotFound("PerfProfile \"" + name + "\" not found in the cluster");
    }
    return obj.status();
  }
  return ProfileFromObject(*obj);
}

struct ResolvedPlan {
  std::string text;  // a PerfValidation document, tests inline
  std::string profile;
  std::string profileVersion;
};

void FillSampling(const v1alpha1::Sampling& from, v1alpha1::Sampling* to) {
  if (!to->has_warmup() && from.has_warmup()) to->set_warmup(from.warmup());
  if (!to->has_minrepeats() && from.has_minrepeats()) to->set_minrepeats(from.minrepeats());
  if (!to->has_maxrepeats() && from.has_maxrepeats()) to->set_maxrepeats(from.maxrepeats());
  if (!to->has_maxseconds() && from.has_maxseconds()) to->set_maxseconds(from.maxseconds());
  if (!to->has_confidence() && from.has_confidence()) to->set_confidence(from.confidence());
  if (to->method().empty()) to->set_method(from.method());
}

// A profile named in the spec certifies only nodes of its GPU models (GFD's label or the
// cloud's; nodes whose model cannot be read cannot be checked). kInvalidArgument naming each
// node of another model and both models.
Status CheckNamedProfileFitsNodes(const std::string& profile,
                                  const spec::Loaded<v1alpha1::PerfProfile>& doc,
                                  const std::map<std::string, std::string>& node_products) {
  const auto& models = doc.doc.spec().gpumodels();
  if (models.empty()) return Status::Ok();
  const kernels::ProfileCandidate candidate{profile, {models.begin(), models.end()}};
  std::string misfits;
  int count = 0;
  for (const auto& [node, product] : node_products) {
    if (product.empty() || kernels::ProfileMatchesGpu(product, candidate)) continue;
    if (++count <= 10) misfits += (misfits.empty() ? "" : ", ") + node + " (" + product + ")";
  }
  if (count == 0) return Status::Ok();
  if (count > 10) misfits += " and " + std::to_string(count - 10) + " more";
  std::string wanted;
  for (const auto& m : models) wanted += (wanted.empty() ? "" : ", ") + m;
  return InvalidArgument("spec.profile: profile \"" + profile + "\" is for GPU models " + wanted +
                         ", and " + std::to_string(count) + " selected node" +
                         (count == 1 ? " has" : "s have") + " another model: " + misfits +
                         "; select nodes of the profile's model, or name their profile");
}

// spec.gpusPerNode that no selected node has: every node would be an ERROR for the same reason,
// which is the spec's, not theirs. Named nodes that do not exist are left to their own ERROR.
Status CheckGpusPerNodeFits(int gpus_per_node, const std::vector<std::string>& selected,
                            const std::map<std::string, Json>& nodes) {
  if (gpus_per_node <= 0) return Status::Ok();
  std::string have;
  int existing = 0;
  for (const auto& n : selected) {
    auto it = nodes.find(n);
    if (it == nodes.end()) continue;
    existing++;
    const int gpus = NodeGpus(it->second);
    if (gpus >= gpus_per_node) return Status::Ok();
    if (existing <= 10) have += (have.empty() ? "" : ", ") + n + " has " + std::to_string(gpus);
  }
  if (existing == 0) return Status::Ok();
  if (existing > 10) have += " and " + std::to_string(existing - 10) + " more";
  return InvalidArgument("spec.gpusPerNode: " + std::to_string(gpus_per_node) +
                         " GPUs per node, and no selected node has that many allocatable "
                         "nvidia.com/gpu: " +
                         have);
}

// Validates the spec exactly as the worker will (BuildPlan), checks a named profile against
// each selected node's GPU model, and inlines the profile. kInvalidArgument (and kNotFound for a
// missing profile) mean an invalid spec.
Result<ResolvedPlan> ResolvePlan(kube::Client& client, const Json& obj, bool fixtures,
                                 const SelectedModels& models) {
  std::map<std::string, std::string> node_products;
  for (const auto& [node, m] : models.known) node_products[node] = m.model;
  const std::string name = Str(obj, "/metadata/name"_json_pointer);
  Json doc = {{"apiVersion", obj.value("apiVersion", "perfgate.io/v1alpha1")},
              {"kind", "PerfValidation"},
              {"metadata", {{"name", name}}},
              {"spec", obj.value("spec", Json::object())}};
  ASSIGN_OR_RETURN(auto loaded, spec::ParseValidation(doc.dump(2), "PerfValidation/" + name));
  std::map<std::string, spec::Loaded<v1alpha1::PerfProfile>> profiles;
  worker::PlanOptions options;
  options.enable_fixtures = fixtures;
  options.profile_lookup =
      [&](const std::string& p) -> Result<spec::Loaded<v1alpha1::PerfProfile>> {
    ASSIGN_OR_RETURN(auto found, LookupProfile(client, p));
    profiles[p] = found;
    return found;
  };
  options.profile_list = [&]() -> Result<std::vector<spec::Loaded<v1alpha1::PerfProfile>>> {
    ASSIGN_OR_RETURN(Json list, client.ListAll(ProfilesResource(), "", kube::ListOptions{}));
    std::vector<spec::Loaded<v1alpha1::PerfProfile>> out;
    for (const auto& item : list.value("items", Json::array())) {
      ASSIGN_OR_RETURN(auto p, ProfileFromObject(item));
      out.push_back(std::move(p));
    }
    return out;
  };
  // `profile: auto` (or neither a profile nor tests): the GPU model is the selected nodes' (GFD's
  // label, else the cloud's own labels), and the candidates are the cluster's PerfProfiles. One
  // validation certifies one model: mixed models are refused, naming which nodes have which.
  const std::string named = obj.value("spec", Json::object()).value("profile", "");
  const bool profile_named = !named.empty() && named != "auto";
  std::map<std::string, std::string> model_keys;  // key -> the model as first seen
  std::set<std::string> labels_read;
  for (const auto& [node, m] : models.known) {
    model_keys.emplace(ModelKey(m.model), m.model);
    labels_read.insert(m.label);
  }
  options.gpu_names = [&]() -> Result<std::vector<std::string>> {
    // A named profile is checked below, node by node, so the message can name them.
    if (profile_named) return Status(Code::kUnavailable, "checked per node");
    if (!models.unknown.empty()) {
      std::string which;
      int count = 0;
      for (const auto& [node, why] : models.unknown) {
        if (++count <= 3)
          which += (which.empty() ? "" : "; ") + std::string("node ") + node + ": " + why;
      }
      if (count > 3) which += "; and " + std::to_string(count - 3) + " more nodes";
      std::string available = "none";
      if (auto all = options.profile_list(); all.ok()) {
        std::vector<kernels::ProfileCandidate> candidates;
        for (const auto& p : *all) {
          const auto& gm = p.doc.spec().gpumodels();
          candidates.push_back({p.doc.metadata().name(), {gm.begin(), gm.end()}});
        }
        available = kernels::DescribeProfiles(candidates);
      }
      return InvalidArgument(which + "; profiles: " + available + "; label the node " +
                             kGpuProductLabel +
                             " (GPU Feature Discovery), leave it out with spec.nodeSelector, or "
                             "name a profile with spec.profile");
    }
    if (model_keys.empty()) {
      return InvalidArgument("no node matches spec.nodeSelector/spec.nodes");
    }
    if (model_keys.size() > 1) {
      std::string names;
      for (const auto& [key, m] : model_keys) names += (names.empty() ? "" : ", ") + m;
      std::string selectors;
      for (const auto& l : labels_read) selectors += (selectors.empty() ? "" : " or ") + l;
      return InvalidArgument(
          "the selected nodes have different GPU models (" + names +
          "): select one with spec.nodeSelector " + selectors +
          ", or split the validation, one per model: " + DescribeModels(models.known));
    }
    return std::vector<std::string>{model_keys.begin()->second};
  };
  auto built = worker::BuildPlan(loaded, options);
  // A model with no profile: say which nodes have it and how it was read.
  if (!built.ok() && !profile_named && !models.known.empty() && models.unknown.empty() &&
      model_keys.size() == 1) {
    return Status(built.status().code(),
                  built.status().message() + " (" + DescribeModels(models.known) + ")");
  }
  ASSIGN_OR_RETURN(worker::Plan plan, std::move(built));
  if (profile_named && profiles.count(plan.profile) != 0) {
    RETURN_IF_ERROR(
        CheckNamedProfileFitsNodes(plan.profile, profiles[plan.profile], node_products));
  }

  v1alpha1::PerfValidation resolved = loaded.doc;
  auto* spec = resolved.mutable_spec();
  // plan.profile: the one named, or the one `auto` picked.
  if (!plan.profile.empty() && profiles.count(plan.profile) != 0) {
    const auto& ps = profiles[plan.profile].doc.spec();
    const auto& level = spec->level() == "full" ? ps.full() : ps.quick();
    FillSampling(level.sampling(), spec->mutable_sampling());
    std::set<std::string> names;
    for (const auto& t : spec->tests()) names.insert(t.name().empty() ? t.type() : t.name());
    for (const auto& t : level.tests()) {
      if (names.insert(t.name().empty() ? t.type() : t.name()).second) *spec->add_tests() = t;
    }
    spec->clear_profile();
    spec->clear_level();
  }
  auto* ann = resolved.mutable_metadata()->mutable_annotations();
  if (!plan.profile.empty()) (*ann)["perfgate.io/profile"] = plan.profile;
  if (!plan.profile_version.empty()) (*ann)["perfgate.io/profile-version"] = plan.profile_version;
  ResolvedPlan out;
  if (!google::protobuf::util::MessageToJsonString(resolved, &out.text).ok()) {
    return Internal("cannot write the resolved plan as JSON");
  }
  out.profile = plan.profile;
  out.profileVersion = plan.profile_version;
  return out;
}

// Runs fn(0..n-1) on up to 8 threads; the first error wins (the rest still run: each call is
// idempotent and the next reconcile retries).
Status ForEachConcurrently(size_t n, const std::function<Status(size_t)>& fn) {
  constexpr size_t kThreads = 8;
  if (n <= 1) return n == 1 ? fn(0) : Status::Ok();
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first;
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) {
      Status st = fn(i);
      std::lock_guard<std::mutex> lock(mu);
      if (!st.ok() && first.ok()) first = st;
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < std::min(n, kThreads); ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  return first;
}

// A loopback port nobody listens on right now (bound to port 0, then released): the
// rendezvous port of a gang whose pods are all local processes (kube-sim).
int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 29500;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// Whether the resolved plan (JSON) runs an NCCL test across nodes: only those need a gang
// (a test with acrossNodes: false, like the profiles' NVLink bound, stays on its node).
bool PlanHasNccl(const Json& plan) {
  for (const auto& t : plan["spec"].value("tests", Json::array())) {
    const Json params = t.value("parameters", Json::object());
    const bool across = !params.contains("acrossNodes") || params["acrossNodes"] != false;
    if (t.value("type", "").rfind("nccl-", 0) == 0 && across) return true;
  }
  return false;
}

// Every rank must make the same NCCL calls in the same order, so a gang's plan samples a
// fixed number of times (docs/nccl.md, "Sampling in a gang"): sequential stopping would let
// ranks stop after different counts and leave the others waiting on the watchdog.
void FixSampling(Json* plan) {
  Json& sampling = (*plan)["spec"]["sampling"];
  if (!sampling.is_object()) sampling = Json::object();
  sampling["method"] = "fixed";
  int64_t repeats = 0;
  if (sampling.contains("maxRepeats")) {
    repeats = Int(sampling, "/maxRepeats"_json_pointer);
  } else if (sampling.contains("minRepeats")) {
    repeats = Int(sampling, "/minRepeats"_json_pointer);
  }
  if (repeats > 0) {
    sampling["minRepeats"] = repeats;
    sampling["maxRepeats"] = repeats;
  }
}

// The NCCL_COMM_ID a live pod of the gang already carries, or "".
std::string CommIdOf(const Json& pod) {
  for (const auto& c : pod["spec"].value("containers", Json::array())) {
    for (const auto& e : c.value("env", Json::array())) {
      if (e.value("name", "") == "NCCL_COMM_ID") return e.value("value", "");
    }
  }
  return "";
}

}  // namespace

std::vector<std::vector<std::string>> GangsOf(const std::vector<std::string>& nodes,
                                              const std::string& shape) {
  std::vector<std::vector<std::string>> gangs;
  if (nodes.empty()) return gangs;
  if (shape != "pairs" || nodes.size() < 2) return {nodes};
  for (size_t i = 0; i + 1 < nodes.size(); i += 2) gangs.push_back({nodes[i], nodes[i + 1]});
  if (nodes.size() % 2 == 1) gangs.back().push_back(nodes.back());
  return gangs;
}

// The run a label belongs to: narrowing rounds run as "<run>-pairs", "<run>-probe",
// "<run>-probe2", ...
std::string BaseRun(const std::string& label) {
  size_t end = label.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(label[end - 1])) != 0) --end;
  for (const std::string stage : {"-pairs", "-probe"}) {
    const size_t digits = label.size() - end;
    if (stage == "-pairs" && digits != 0) continue;
    if (end > stage.size() && label.compare(end - stage.size(), stage.size(), stage) == 0) {
      return label.substr(0, end - stage.size());
    }
  }
  return label;
}

struct Reconciler::NodeOutcome {
  std::string node;
  std::string verdict;  // PASS | FAIL | INCONCLUSIVE | ERROR | "" (not yet)
  std::string test;
  std::string figure;
  std::string reason;
  // The operator wrote its result (never scheduled, crashed, timed out): no worker of it runs.
  bool byOperator = false;
};

kube::GroupVersionResource ValidationsResource() {
  return {"perfgate.io", "v1alpha1", "perfvalidations"};
}
kube::GroupVersionResource ResultsResource() { return {"perfgate.io", "v1alpha1", "perfresults"}; }
kube::GroupVersionResource ProfilesResource() {
  return {"perfgate.io", "v1alpha1", "perfprofiles"};
}
kube::GroupVersionResource ConfigMapsResource() { return {"", "v1", "configmaps"}; }

std::string RunId(int64_t generation, const std::string& rerun_token) {
  std::string id = "g" + std::to_string(generation);
  if (!rerun_token.empty()) id += "-" + Hex(Fnv1a(rerun_token), 8);
  return id;
}

std::string ObjectName(const std::vector<std::string>& parts) {
  std::string joined;
  for (const auto& p : parts) joined += (joined.empty() ? "" : "-") + p;
  std::string out;
  for (char c : Lower(joined)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    out.push_back(ok ? c : '-');
  }
  if (out.size() > 63) out = out.substr(0, 54) + "-" + Hex(Fnv1a(joined), 8);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

bool NodeSelected(const Json& spec, const Json& node) {
  const std::string name = Str(node, "/metadata/name"_json_pointer);
  for (const auto& n : spec.value("nodes", Json::array())) {
    if (n.is_string() && n.get<std::string>() == name) return true;
  }
  const Json selector = spec.value("nodeSelector", Json::object());
  // No selector and no names: every node (a DaemonSet's reading); with names only: those.
  if (selector.empty()) return spec.value("nodes", Json::array()).empty();
  for (auto it = selector.begin(); it != selector.end(); ++it) {
    if (!it->is_string() || Label(node, it.key()) != it->get<std::string>()) return false;
  }
  return true;
}

Reconciler::Reconciler(std::shared_ptr<kube::Client> client, Caches caches, ReconcilerConfig config,
                       std::function<Clock::time_point()> now)
    : client_(std::move(client)),
      caches_(std::move(caches)),
      config_(std::move(config)),
      now_(now ? std::move(now) : [] { return Clock::now(); }) {}

void Reconciler::Event(const Json& obj, const std::string& type, const std::string& reason,
                       const std::string& message) {
  const std::string name = Str(obj, "/metadata/name"_json_pointer);
  const std::string now = FormatRfc3339(now_());
  Json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata",
              {{"name",
                name + "." + Hex(Fnv1a(now + reason + message + std::to_string(++event_seq_)), 16)},
               {"namespace", config_.eventNamespace}}},
             {"involvedObject",
              {{"apiVersion", "perfgate.io/v1alpha1"},
               {"kind", "PerfValidation"},
               {"name", name},
               {"uid", Str(obj, "/metadata/uid"_json_pointer)}}},
             {"type", type},
             {"reason", reason},
             {"message", Cut(message, 1024)},
             {"source", {{"component", "perfgate-operator"}}},
             {"reportingComponent", "perfgate-operator"},
             {"firstTimestamp", now},
             {"lastTimestamp", now},
             {"count", 1}};
  auto created = client_->Create(kube::EventsResource(), config_.eventNamespace, ev);
  if (!created.ok()) Logger()->warn("{}: event {}: {}", name, reason, created.status().message());
}

Status Reconciler::WriteStatus(const Json& obj, const Json& status) {
  if (obj.value("status", Json::object()) == status) return Status::Ok();
  Json updated = obj;
  updated["status"] = status;
  auto r = client_->UpdateStatus(ValidationsResource(), "", updated);
  return r.ok() ? Status::Ok() : r.status();
}

Json Reconciler::BuildPod(const Json& obj, const std::string& run, const std::string& node,
                          const std::string& pod_name, const std::string& config_map, int gpus,
                          int timeout_seconds) {
  const std::string name = Str(obj, "/metadata/name"_json_pointer);
  const Json spec = obj.value("spec", Json::object());
  Json tolerations = Json::array();
  for (const auto& t : spec.value("tolerations", Json::array())) {
    Json tol = Json::object();
    for (const char* k : {"key", "operator", "value", "effect"}) {
      if (t.contains(k) && t[k].is_string() && !t[k].get<std::string>().empty()) tol[k] = t[k];
    }
    tolerations.push_back(tol);
  }
  // A node perfgate failed must still be testable, or it could never pass again.
  tolerations.push_back({{"key", kFailedTaint}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
  // Nor could a node perfgate cordoned: selection already decides which cordoned nodes are
  // tested (perfgate's own cordon, includeCordoned, named nodes), so the pod must run there.
  tolerations.push_back({{"key", "node.kubernetes.io/unschedulable"},
                         {"operator", "Exists"},
                         {"effect", "NoSchedule"}});
  // GPU node pools keep other pods off with this taint (GKE sets nvidia.com/gpu=present by
  // default); a pod that requests GPUs tolerates it, as the ExtendedResourceToleration admission
  // plugin would add.
  tolerations.push_back({{"key", "nvidia.com/gpu"}, {"operator", "Exists"}});
  Json command = {"perfgate-worker", "run", "/etc/perfgate/plan.yaml", "--result", pod_name};
  if (config_.enableFixtures) command.push_back("--enable-fixtures");
  auto field_env = [](const std::string& n, const std::string& path) {
    return Json{{"name", n}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
  };
  Json env = {
      field_env("NODE_NAME", "spec.nodeName"),
      field_env("POD_NAMESPACE", "metadata.namespace"),
      {{"name", "PERFGATE_RUN"}, {"value", run}},
      {{"name", "PERFGATE_VALIDATION"}, {"value", name}},
      {{"name", "PERFGATE_VALIDATION_UID"}, {"value", Str(obj, "/metadata/uid"_json_pointer)}},
      {{"name", "NVIDIA_DRIVER_CAPABILITIES"}, {"value", "compute,utility"}}};
  Json resources = {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}},
                    {"limits", {{"memory", "32Gi"}}}};
  if (gpus > 0) {
    resources["requests"]["nvidia.com/gpu"] = std::to_string(gpus);
    resources["limits"]["nvidia.com/gpu"] = std::to_string(gpus);
  }
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", pod_name},
        {"namespace", config_.nameSpace},
        {"labels",
         {{"app.kubernetes.io/name", "perfgate-worker"},
          {"app.kubernetes.io/managed-by", "perfgate-operator"},
          {"perfgate.io/validation", LabelValue(name)},
          {"perfgate.io/node", LabelValue(node)},
          {"perfgate.io/run", run}}},
        {"ownerReferences", OwnerReferences(obj, /*controller=*/true)}}},
      {"spec",
       {{"restartPolicy", "Never"},
        {"serviceAccountName", config_.workerServiceAccount},
        {"activeDeadlineSeconds", timeout_seconds},
        {"terminationGracePeriodSeconds", 10},
        {"affinity",
         {{"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{"nodeSelectorTerms",
               {{{"matchFields",
                  {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {node}}}}}}}}}}}}}},
        {"tolerations", tolerations},
        // Pod Security "restricted" (docs/operator.md): what a gang adds on top is named there.
        {"securityContext",
         {{"runAsNonRoot", true},
          {"runAsUser", 65532},
          {"runAsGroup", 65532},
          {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
        {"containers",
         {{{"name", "worker"},
           {"image", config_.workerImage},
           {"command", command},
           {"env", env},
           {"resources", resources},
           {"terminationMessagePolicy", "FallbackToLogsOnError"},
           {"securityContext",
            {{"allowPrivilegeEscalation", false}, {"capabilities", {{"drop", {"ALL"}}}}}},
           {"volumeMounts",
            {{{"name", "plan"}, {"mountPath", "/etc/perfgate"}, {"readOnly", true}}}}}}},
        {"volumes", {{{"name", "plan"}, {"configMap", {{"name", config_map}}}}}}}}};
}

Json Reconciler::BuildGangPod(const Json& obj, const std::string& run, const std::string& node,
                              const std::string& pod_name, const std::string& config_map, int gpus,
                              int timeout_seconds, const GangMember& member) {
  Json pod = BuildPod(obj, run, node, pod_name, config_map, gpus, timeout_seconds);
  pod["metadata"]["labels"]["perfgate.io/gang"] = member.gangId;
  Json& container = pod["spec"]["containers"][0];
  auto value_env = [](const std::string& n, const std::string& v) {
    return Json{{"name", n}, {"value", v}};
  };
  container["env"].push_back(value_env("PERFGATE_GANG_SIZE", std::to_string(member.size)));
  container["env"].push_back(value_env("PERFGATE_GANG_RANK", std::to_string(member.rank)));
  container["env"].push_back(value_env("PERFGATE_GANG_ID", member.gangId));
  container["env"].push_back(value_env("NCCL_COMM_ID", member.commId));
  if (gpus > 0) {
    container["env"].push_back(value_env("PERFGATE_GANG_GPUS_PER_NODE", std::to_string(gpus)));
  }
  // NCCL's SHM transport and proxy buffers live in /dev/shm; the runtime's 64 MiB is too small.
  const Json gang = obj["spec"].value("gang", Json::object());
  const std::string shm = gang.value("shmSize", "");
  pod["spec"]["volumes"].push_back(
      {{"name", "dshm"},
       {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", shm.empty() ? "8Gi" : shm}}}});
  container["volumeMounts"].push_back({{"name", "dshm"}, {"mountPath", "/dev/shm"}});
  // RDMA registration pins memory; without IPC_LOCK NCCL drops the IB/RoCE/EFA transport.
  container["securityContext"]["capabilities"]["add"] = {"IPC_LOCK"};
  if (member.rank == 0 && member.headlessService) {
    pod["spec"]["hostname"] = ObjectName({member.gangId, "r0"});
    pod["spec"]["subdomain"] = member.gangId;
  }
  // spec.gang.network (docs/nccl.md, "Pod spec for NCCL"): how this cloud's fast network
  // reaches the pod. BuildPlan has checked the names.
  const Json network = gang.value("network", Json::object());
  if (const std::string ifname = network.value("socketIfname", ""); !ifname.empty()) {
    container["env"].push_back(value_env("NCCL_SOCKET_IFNAME", ifname));
  }
  if (const std::string hca = network.value("ibHca", ""); !hca.empty()) {
    container["env"].push_back(value_env("NCCL_IB_HCA", hca));
  }
  // Named, not temporaries: items() only refers to the object it iterates.
  const Json extra_env = network.value("env", Json::object());
  const Json extra_resources = network.value("resources", Json::object());
  const Json annotations = network.value("podAnnotations", Json::object());
  for (const auto& [k, v] : annotations.items()) {
    if (v.is_string()) pod["metadata"]["annotations"][k] = v;
  }
  for (const auto& [k, v] : extra_env.items()) {
    if (v.is_string()) container["env"].push_back(value_env(k, v.get<std::string>()));
  }
  for (const auto& [k, v] : extra_resources.items()) {
    // Extended resources: request and limit must be equal (as for nvidia.com/gpu above).
    if (!v.is_number_integer()) continue;
    container["resources"]["requests"][k] = std::to_string(v.get<int>());
    container["resources"]["limits"][k] = std::to_string(v.get<int>());
  }
  if (network.value("hostNetwork", false)) {
    pod["spec"]["hostNetwork"] = true;
    // Without it a host-network pod uses the node's resolver and rank 0's Service name fails.
    pod["spec"]["dnsPolicy"] = "ClusterFirstWithHostNet";
  }
  return pod;
}

Status Reconciler::CreateGangService(const Json& obj, const std::string& run,
                                     const std::string& gang_id, int port) {
  Json svc = {{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata",
               {{"name", gang_id},
                {"namespace", config_.nameSpace},
                {"labels",
                 {{"perfgate.io/validation", LabelValue(Str(obj, "/metadata/name"_json_pointer))},
                  {"perfgate.io/run", run}}},
                {"ownerReferences", OwnerReferences(obj, /*controller=*/true)}}},
              {"spec",
               {{"clusterIP", "None"},
                {"publishNotReadyAddresses", true},
                {"selector", {{"perfgate.io/gang", gang_id}}},
                {"ports", {{{"name", "nccl-bootstrap"}, {"port", port}, {"protocol", "TCP"}}}}}}};
  auto created = client_->Create({"", "v1", "services"}, config_.nameSpace, svc);
  if (!created.ok() && created.status().code() != Code::kAlreadyExists) return created.status();
  return Status::Ok();
}

std::string Reconciler::BusyWith(const std::string& validation, const std::string& node) const {
  for (const auto& p : caches_.podsOn(node)) {
    std::string v = Label(p, "perfgate.io/validation");
    if (v != LabelValue(validation) && !Terminal(p) &&
        Str(p, "/metadata/deletionTimestamp"_json_pointer).empty()) {
      return v;
    }
  }
  return "";
}

Status Reconciler::CreatePods(const std::vector<Json>& pods) {
  // Concurrently (a few at a time): one at a time, 1,000 nodes wait ~1,000 round trips.
  return ForEachConcurrently(pods.size(), [&](size_t i) -> Status {
    auto created = client_->Create(kube::PodsResource(), config_.nameSpace, pods[i]);
    if (!created.ok() && created.status().code() != Code::kAlreadyExists) {
      metrics_.errors++;
      return created.status();
    }
    if (created.ok()) metrics_.podsCreated++;
    return Status::Ok();
  });
}

std::string Reconciler::NewCommId(const std::string& gang_id, int port) const {
  return config_.gangRendezvousHost.empty()
             ? ObjectName({gang_id, "r0"}) + "." + gang_id + "." + config_.nameSpace +
                   ".svc:" + std::to_string(port)
             : config_.gangRendezvousHost + ":" + std::to_string(FreeLoopbackPort());
}

Result<std::vector<std::string>> Reconciler::RunNarrowingGangs(
    const GangRun& g, const std::string& stage,
    const std::vector<std::vector<std::string>>& groups) {
  const Json& obj = *g.obj;
  const std::string name = Str(obj, "/metadata/name"_json_pointer);
  const std::string stage_run = g.run + "-" + stage;
  std::map<std::string, Json> results;  // by object name
  for (const auto& r : g.results) {
    if (Label(r, "perfgate.io/run") == stage_run)
      results[Str(r, "/metadata/name"_json_pointer)] = r;
  }
  std::map<std::string, Json> pods;
  for (const auto& p : g.pods) {
    if (Label(p, "perfgate.io/run") == stage_run) pods[Str(p, "/metadata/name"_json_pointer)] = p;
  }
  std::vector<std::string> verdicts(groups.size());
  std::vector<Json> batch;
  std::set<std::string> services;
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::vector<std::string>& group = groups[i];
    const std::string id = ObjectName({name, g.run, stage + std::to_string(i)});
    std::string verdict = "PASS";
    std::string comm;
    std::string error;  // why the round of this group ended without a worker's result
    std::vector<std::string> missing;  // members with neither a result nor a pod
    bool pending = false;
    for (const auto& n : group) {
      const std::string pod_name = ObjectName({id, n});
      auto pod = pods.find(pod_name);
      if (pod != pods.end() && comm.empty()) comm = CommIdOf(pod->second);
      if (auto r = results.find(pod_name); r != results.end()) {
        const std::string v =
            r->second["spec"].value("report", Json::object()).value("verdict", "");
        if (v == "FAIL") {
          verdict = "FAIL";
        } else if (v != "PASS" && verdict != "FAIL") {
          verdict = "ERROR";
        }
        continue;
      }
      pending = true;
      if (pod == pods.end()) {
        missing.push_back(n);
      } else if (Terminal(pod->second)) {
        // The result may be written but not yet in the cache: ask the API.
        if (!client_->Get(ResultsResource(), config_.nameSpace, pod_name).ok()) {
          error = "pod on " + n + " ended (" + Str(pod->second, "/status/phase"_json_pointer) +
                  ") without a result";
        }
      } else if (Str(pod->second, "/spec/nodeName"_json_pointer).empty()) {
        auto created = ParseRfc3339(Str(pod->second, "/metadata/creationTimestamp"_json_pointer));
        if (created && now_() - *created >= config_.schedulingTimeout) {
          std::string why;
          for (const auto& c :
               pod->second.value("status", Json::object()).value("conditions", Json::array())) {
            if (c.value("type", "") == "PodScheduled") why = c.value("message", "");
          }
          error = "pod on " + n + " not scheduled within " +
                  std::to_string(config_.schedulingTimeout.count()) + "s" +
                  (why.empty() ? "" : ": " + why);
        }
      }
    }
    if (!error.empty()) {
      // Recorded as results, so that a later reconcile does not start the round again; the
      // members still running would only wait in NCCL for their watchdog.
      const std::string reason = "narrowing gang of " + std::to_string(group.size()) + ": " + error;
      for (const auto& n : group) {
        const std::string pod_name = ObjectName({id, n});
        if (results.count(pod_name) != 0) continue;
        if (pods.count(pod_name) != 0) {
          auto del = client_->Delete(kube::PodsResource(), config_.nameSpace, pod_name);
          if (!del.ok() && del.status().code() != Code::kNotFound) return del.status();
        }
        RETURN_IF_ERROR(WriteOperatorResult(obj, stage_run, n, pod_name, reason));
      }
      verdicts[i] = verdict == "FAIL" ? "FAIL" : "ERROR";
      continue;
    }
    if (!pending) {
      verdicts[i] = verdict;
      continue;
    }
    if (g.suspended || missing.empty()) continue;
    // A round starts whole, on nodes no other validation is using (as the main run does).
    const bool busy = std::any_of(group.begin(), group.end(),
                                  [&](const std::string& n) { return !BusyWith(name, n).empty(); });
    if (busy && missing.size() == group.size()) continue;
    // Every member at once (a create that failed last time is made now, at the same address).
    if (comm.empty()) comm = NewCommId(id, g.port);
    for (size_t r = 0; r < group.size(); ++r) {
      if (std::find(missing.begin(), missing.end(), group[r]) == missing.end()) continue;
      GangMember m{id, static_cast<int>(r), static_cast<int>(group.size()), comm,
                   config_.gangRendezvousHost.empty()};
      auto node = g.nodes->find(group[r]);
      const int gpus = g.specGpus > 0           ? g.specGpus
                       : node != g.nodes->end() ? NodeGpus(node->second)
                                                : 0;
      if (m.headlessService) services.insert(id);
      batch.push_back(BuildGangPod(obj, stage_run, group[r], ObjectName({id, group[r]}),
                                   g.configMap, gpus, g.timeout, m));
    }
  }
  for (const auto& id : services) RETURN_IF_ERROR(CreateGangService(obj, g.run, id, g.port));
  RETURN_IF_ERROR(CreatePods(batch));
  return verdicts;
}

Result<Reconciler::Narrowing> Reconciler::Narrow(
    const GangRun& g, const std::vector<std::vector<std::string>>& gangs,
    const std::map<std::string, std::string>& verdict_of, const std::string& shape,
    const std::string& mode) {
  auto verdict = [&](const std::vector<std::string>& gang_nodes) {
    auto it = verdict_of.find(gang_nodes.front());
    return it == verdict_of.end() ? std::string() : it->second;
  };
  std::vector<std::string> good;
  std::vector<std::string> suspects;
  // A FAIL is a measurement that points somewhere; an ERROR (e.g. a pod never scheduled)
  // names nobody.
  if (shape == "pairs" && gangs.size() > 1) {
    for (const auto& pair : gangs) {
      const std::string v = verdict(pair);
      auto& into = v == "PASS" ? good : suspects;
      if (v == "PASS" || v == "FAIL") into.insert(into.end(), pair.begin(), pair.end());
    }
  } else if (shape == "all" && mode != "none" && gangs.size() == 1 && gangs[0].size() >= 3 &&
             verdict(gangs[0]) == "FAIL") {
    // The whole gang failed: its nodes run again in pairs. A pair that does not pass (FAIL,
    // or a crash while its peers ran) holds a suspect.
    const auto pairs = GangsOf(gangs[0], "pairs");
    ASSIGN_OR_RETURN(auto pair_verdicts, RunNarrowingGangs(g, "pairs", pairs));
    const auto running = std::count(pair_verdicts.begin(), pair_verdicts.end(), "");
    if (running > 0) {
      return Narrowing{{},
                       "narrowing down: the gang of " + std::to_string(gangs[0].size()) +
                           " failed; its nodes run again in " + std::to_string(pairs.size()) +
                           " pairs (" + std::to_string(running) + " running)"};
    }
    for (size_t i = 0; i < pairs.size(); ++i) {
      auto& into = pair_verdicts[i] == "PASS" ? good : suspects;
      into.insert(into.end(), pairs[i].begin(), pairs[i].end());
    }
  }
  if (mode == "none" || suspects.empty() || good.empty()) return Narrowing{suspects, ""};
  // Each node of a failing pair runs again beside a node that passed: a suspect whose probe
  // passes is cleared (its partner or their link was the problem). One probe per passing node
  // at a time, so that probes never share a node: with more suspects than passing nodes, the
  // probes run in rounds ("<run>-probe", "<run>-probe2", ...), at most kMaxProbeRounds.
  constexpr size_t kMaxProbeRounds = 8;
  const size_t per_round = good.size();
  const size_t rounds = std::min((suspects.size() + per_round - 1) / per_round, kMaxProbeRounds);
  std::vector<std::string> narrowed;
  for (size_t k = 0; k < rounds; ++k) {
    const size_t first = k * per_round;
    const size_t last = std::min(suspects.size(), first + per_round);
    std::vector<std::vector<std::string>> probes;
    for (size_t i = first; i < last; ++i) probes.push_back({good[i - first], suspects[i]});
    ASSIGN_OR_RETURN(
        auto verdicts,
        RunNarrowingGangs(g, k == 0 ? "probe" : "probe" + std::to_string(k + 1), probes));
    const auto running = std::count(verdicts.begin(), verdicts.end(), "");
    if (running > 0) {
      // Still suspects: the ones no probe has cleared yet.
      std::vector<std::string> candidates = narrowed;
      candidates.insert(candidates.end(), suspects.begin() + static_cast<std::ptrdiff_t>(first),
                        suspects.end());
      return Narrowing{candidates,
                       "narrowing down: " + std::to_string(running) +
                           " suspect node(s) of failing pairs run again with a node that passed" +
                           (rounds > 1 ? " (round " + std::to_string(k + 1) + " of " +
                                             std::to_string(rounds) + ")"
                                       : "")};
    }
    for (size_t i = first; i < last; ++i) {
      if (verdicts[i - first] != "PASS") narrowed.push_back(suspects[i]);  // failed or errored
    }
  }
  // Past the last round: unprobed, still suspects.
  for (size_t i = rounds * per_round; i < suspects.size(); ++i) narrowed.push_back(suspects[i]);
  return Narrowing{narrowed, ""};
}

Status Reconciler::WriteOperatorResult(const Json& obj, const std::string& run,
                                       const std::string& node, const std::string& pod_name,
                                       const std::string& reason) {
  const std::string name = Str(obj, "/metadata/name"_json_pointer);
  const Json labels = {{"perfgate.io/validation", LabelValue(name)},
                       {"perfgate.io/node", LabelValue(node)},
                       {"perfgate.io/run", run}};
  Json result = {{"apiVersion", "perfgate.io/v1alpha1"},
                 {"kind", "PerfResult"},
                 {"metadata",
                  {{"name", pod_name},
                   {"namespace", config_.nameSpace},
                   {"labels", labels},
                   {"ownerReferences", OwnerReferences(obj, /*controller=*/false)}}},
                 {"spec",
                  {{"validation", name},
                   {"nodeName", node},
                   {"run", run},
                   {"writtenBy", "operator"},
                   {"worst", Cut(reason, 200)},
                   {"report",
                    {{"validation", name},
                     {"verdict", "ERROR"},
                     {"reason", Cut(reason, 2048)},
                     {"completionTime", FormatRfc3339(now_())}}}}}};
  auto created = client_->Create(ResultsResource(), config_.nameSpace, result);
  if (!created.ok() && created.status().code() != Code::kAlreadyExists) return created.status();
  metrics_.resultsWrittenByOperator++;
  return Status::Ok();
}

Status Reconciler::CleanOldRuns(const Json& obj, const std::string& run, int keep_results) {
  const std::string name = Str(obj, "/metadata/name"_json_pointer);
  for (const auto& pod : caches_.podsOf(name)) {
    if (BaseRun(Label(pod, "perfgate.io/run")) == run) continue;
    auto st = client_->Delete(kube::PodsResource(), config_.nameSpace,
                              Str(pod, "/metadata/name"_json_pointer));
    if (!st.ok() && st.status().code() != Code::kNotFound) return st.status();
  }
  // Old runs, newest first; keep the results of the newest `keep_results`.
  std::map<std::string, std::string> newest;  // run -> newest creationTimestamp
  std::vector<Json> old;
  for (const auto& r : caches_.resultsOf(name)) {
    std::string rr = BaseRun(Label(r, "perfgate.io/run"));
    if (rr == run) continue;
    old.push_back(r);
    newest[rr] = std::max(newest[rr], Str(r, "/metadata/creationTimestamp"_json_pointer));
  }
  std::vector<std::pair<std::string, std::string>> runs;
  for (const auto& [r, t] : newest) runs.emplace_back(t, r);
  std::sort(runs.rbegin(), runs.rend());
  std::set<std::string> keep;
  for (size_t i = 0; i < runs.size() && static_cast<int>(i) < keep_results; ++i) {
    keep.insert(runs[i].second);
  }
  for (const auto& r : old) {
    if (keep.count(BaseRun(Label(r, "perfgate.io/run"))) != 0) continue;
    auto st = client_->Delete(ResultsResource(), config_.nameSpace,
                              Str(r, "/metadata/name"_json_pointer));
    if (!st.ok() && st.status().code() != Code::kNotFound) return st.status();
  }
  // The previous run's plan is no longer read by anyone.
  const std::string previous = Str(obj, "/status/run"_json_pointer);
  if (!previous.empty() && previous != run) {
    const std::string cm = ObjectName({name, previous, "plan"});
    auto st = client_->Delete(ConfigMapsResource(), config_.nameSpace, cm);
    // Refused (an older chart's Role grants no delete): the plan goes with its validation
    // anyway, and a new run must not wait on a clean-up.
    if (!st.ok() && st.status().code() == Code::kPermissionDenied) {
      Logger()->warn("{}: previous plan {} left for garbage collection: {}", name, cm,
                     st.status().message());
    } else if (!st.ok() && st.status().code() != Code::kNotFound) {
      return st.status();
    }
  }
  return Status::Ok();
}

Status Reconciler::ApplyNodeAction(const std::string& node, const std::string& verdict,
                                   const std::string& validation, const std::string& on_failure,
                                   const Json* cached) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    Json n;
    if (attempt == 0 && cached != nullptr) {
      n = *cached;
    } else {
      auto got = client_->Get(kube::NodesResource(), "", node);
      if (!got.ok()) {
        return got.status().code() == Code::kNotFound ? Status::Ok() : got.status();
      }
      n = *got;
    }
    // A Node may be stored without a spec (or labels, annotations): read them as empty.
    if (!n.contains("spec") || !n["spec"].is_object()) n["spec"] = Json::object();
    Json before = n;
    Json& meta = n["metadata"];
    if (!meta.contains("labels")) meta["labels"] = Json::object();
    if (!meta.contains("annotations")) meta["annotations"] = Json::object();
    Json& ann = meta["annotations"];
    meta["labels"][kVerdictLabel] = Lower(verdict == "PASS"   ? "passed"
                                          : verdict == "FAIL" ? "failed"
                                                              : verdict);
    ann[kVerdictByAnnotation] = validation;
    Json taints = n["spec"].value("taints", Json::array());
    auto has_taint = std::any_of(taints.begin(), taints.end(),
                                 [](const Json& t) { return t.value("key", "") == kFailedTaint; });
    if (verdict == "FAIL" && (on_failure == "taint" || on_failure == "taintAndCordon")) {
      if (!has_taint) {
        taints.push_back({{"key", kFailedTaint}, {"value", validation}, {"effect", "NoSchedule"}});
        ann[kTaintedByAnnotation] = validation;
      }
      if (on_failure == "taintAndCordon" && !n["spec"].value("unschedulable", false)) {
        n["spec"]["unschedulable"] = true;
        ann[kCordonedByAnnotation] = validation;
      }
    } else if (verdict == "PASS") {
      // Only what perfgate set: its own taint key, a cordon it recorded.
      if (has_taint) {
        Json kept = Json::array();
        for (const auto& t : taints) {
          if (t.value("key", "") != kFailedTaint) kept.push_back(t);
        }
        taints = kept;
        ann.erase(kTaintedByAnnotation);
      }
      if (ann.contains(kCordonedByAnnotation)) {
        n["spec"]["unschedulable"] = false;
        ann.erase(kCordonedByAnnotation);
      }
    }
    if (taints.empty()) {
      n["spec"].erase("taints");
    } else {
      n["spec"]["taints"] = taints;
    }
    if (n == before) return Status::Ok();
    auto updated = client_->Update(kube::NodesResource(), "", n);
    if (updated.ok()) return Status::Ok();
    if (updated.status().code() != Code::kAborted) return updated.status();
  }
  return Status(Code::kAborted, "node " + node + ": too many update conflicts");
}

Status Reconciler::UndoNodeActions(const std::string& validation) {
  for (const auto& node : caches_.nodes()) {
    const Json ann = node["metadata"].value("annotations", Json::object());
    if (ann.value(kVerdictByAnnotation, "") != validation) continue;
    // This validation's FAIL taint outlives it: a bad GPU stays bad until a later run passes.
    // Another validation's taint does not keep this one's verdict label.
    if (ann.value(kTaintedByAnnotation, "") == validation) continue;
    const std::string name = Str(node, "/metadata/name"_json_pointer);
    for (int attempt = 0; attempt < 5; ++attempt) {
      auto got = client_->Get(kube::NodesResource(), "", name);
      if (!got.ok()) break;
      Json n = *got;
      if (n["metadata"].contains("labels")) n["metadata"]["labels"].erase(kVerdictLabel);
      n["metadata"]["annotations"].erase(kVerdictByAnnotation);
      auto updated = client_->Update(kube::NodesResource(), "", n);
      if (updated.ok() || updated.status().code() != Code::kAborted) break;
    }
  }
  return Status::Ok();
}

Result<ReconcileResult> Reconciler::Finalize(const Json& obj) {
  const std::string name = Str(obj, "/metadata/name"_json_pointer);
  Json finalizers = obj["metadata"].value("finalizers", Json::array());
  if (std::find(finalizers.begin(), finalizers.end(), kFinalizer) == finalizers.end()) {
    return ReconcileResult{};
  }
  for (const auto& pod : caches_.podsOf(name)) {
    auto st = client_->Delete(kube::PodsResource(), config_.nameSpace,
                              Str(pod, "/metadata/name"_json_pointer));
    if (!st.ok() && st.status().code() != Code::kNotFound) return st.status();
  }
  RETURN_IF_ERROR(UndoNodeActions(name));
  Json kept = Json::array();
  for (const auto& f : finalizers) {
    if (f != kFinalizer) kept.push_back(f);
  }
  auto patched =
      client_->Patch(ValidationsResource(), "", name, kube::PatchType::kMerge,
                     {{"metadata",
                       {{"finalizers", kept},
                        {"resourceVersion", Str(obj, "/metadata/resourceVersion"_json_pointer)}}}});
  if (!patched.ok() && patched.status().code() != Code::kNotFound) return patched.status();
  Logger()->info("{}: finalized", name);
  return ReconcileResult{};
}

Status Reconciler::Complete(const Json& obj, Json status, const std::vector<NodeOutcome>& outcomes,
                            const std::map<std::string, Json>& cached_nodes) {
  const std::string name = Str(obj, "/metadata/name"_json_pointer);
  const Json policy = obj.value("spec", Json::object()).value("policy", Json::object());
  const std::string on_failure = policy.value("onFailure", "none");
  RETURN_IF_ERROR(ForEachConcurrently(outcomes.size(), [&](size_t i) -> Status {
    const NodeOutcome& o = outcomes[i];
    auto it = cached_nodes.find(o.node);
    return ApplyNodeAction(o.node, o.verdict, name, on_failure,
                           it == cached_nodes.end() ? nullptr : &it->second);
  }));
  const bool fresh = status.value("completionTime", "").empty();
  int failed = status.value("failed", 0), errors = status.value("errors", 0),
      inconclusive = status.value("inconclusive", 0);
  const int64_t gen = Int(obj, "/metadata/generation"_json_pointer, 1);
  const std::string now = FormatRfc3339(now_());
  const Json old = obj.value("status", Json::object());
  Json conds = Json::array();
  if (failed + errors + inconclusive == 0) {
    std::string msg = "all " + std::to_string(outcomes.size()) + " nodes passed";
    conds = SetCondition(old, conds, "Ready", "True", "Passed", msg, gen, now);
    conds = SetCondition(old, conds, "Complete", "True", "Passed", msg, gen, now);
    conds = SetCondition(old, conds, "Passed", "True", "Passed", msg, gen, now);
    status["verdict"] = "Passed";
    status["message"] = msg;
  } else {
    // The worst node verdict decides, in the words of docs/operator.md's verdict table.
    std::string reason = failed > 0 ? "TestsFailed" : errors > 0 ? "NodeErrors" : "Inconclusive";
    const std::string verdict = failed > 0 ? "Failed" : errors > 0 ? "Error" : "Inconclusive";
    std::string msg = std::to_string(failed + errors + inconclusive) + " of " +
                      std::to_string(outcomes.size()) + " nodes did not pass";
    for (const auto& o : outcomes) {
      if (o.verdict == "PASS") continue;
      msg += "; " + o.node + " " + o.verdict + ": " + Cut(o.reason, 300);
      if (!o.figure.empty() && o.reason.find(o.figure) == std::string::npos) {
        msg += " (" + o.figure + ")";
      }
      if (msg.size() > 1500) break;
    }
    if (const Json suspects = status.value("suspectNodes", Json::array()); !suspects.empty()) {
      std::string names;
      for (const auto& n : suspects) names += (names.empty() ? "" : ", ") + n.get<std::string>();
      msg = "suspect nodes (narrowed down by pairs): " + names + "; " + msg;
    }
    conds = SetCondition(old, conds, "Ready", "False", reason, msg, gen, now);
    conds = SetCondition(old, conds, "Stalled", "True", reason, msg, gen, now);
    conds = SetCondition(old, conds, "Complete", "True", reason, msg, gen, now);
    conds = SetCondition(old, conds, "Passed", "False", reason, msg, gen, now);
    status["verdict"] = verdict;
    status["message"] = Cut(msg, 2000);
  }
  status["conditions"] = conds;
  if (fresh) status["completionTime"] = now;
  RETURN_IF_ERROR(WriteStatus(obj, status));
  if (fresh) {
    for (const auto& o : outcomes) {
      if (o.verdict != "PASS")
        Event(obj, "Warning", "NodeNotPassed", o.node + " " + o.verdict + ": " + o.reason);
    }
    if (const Json suspects = status.value("suspectNodes", Json::array()); !suspects.empty()) {
      std::string names;
      for (const auto& n : suspects) names += (names.empty() ? "" : ", ") + n.get<std::string>();
      Event(obj, "Warning", "SuspectNodes", "narrowed down by pairs: " + names);
    }
    Event(obj, failed + errors + inconclusive == 0 ? "Normal" : "Warning", "Completed",
          status.value("message", ""));
    Logger()->info("{}: run {} complete: {}", name, status.value("run", ""),
                   status.value("message", ""));
  }
  return Status::Ok();
}

Result<ReconcileResult> Reconciler::Reconcile(const std::string& name) {
  metrics_.reconciles++;
  auto got = client_->Get(ValidationsResource(), "", name);
  if (!got.ok()) {
    if (got.status().code() == Code::kNotFound) return ReconcileResult{};
    metrics_.errors++;
    return got.status();
  }
  Json obj = *got;
  if (!Str(obj, "/metadata/deletionTimestamp"_json_pointer).empty()) return Finalize(obj);

  Json finalizers = obj["metadata"].value("finalizers", Json::array());
  if (std::find(finalizers.begin(), finalizers.end(), kFinalizer) == finalizers.end()) {
    finalizers.push_back(kFinalizer);
    auto patched = client_->Patch(
        ValidationsResource(), "", name, kube::PatchType::kMerge,
        {{"metadata",
          {{"finalizers", finalizers},
           {"resourceVersion", Str(obj, "/metadata/resourceVersion"_json_pointer)}}}});
    if (!patched.ok()) return patched.status();
    obj = *patched;
  }

  const Json spec = obj.value("spec", Json::object());
  const Json policy = spec.value("policy", Json::object());
  const int64_t gen = Int(obj, "/metadata/generation"_json_pointer, 1);
  const std::string rerun =
      obj["metadata"].value("annotations", Json::object()).value(kRerunAnnotation, "");
  const std::string run = RunId(gen, rerun);
  const std::string now = FormatRfc3339(now_());
  const Json old_status = obj.value("status", Json::object());
  Json status = old_status;
  if (status.value("run", "") != run) {
    RETURN_IF_ERROR(CleanOldRuns(obj, run, static_cast<int>(policy.value("keepResults", 0))));
    status = {{"run", run}, {"startTime", now}};
    bool announce = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      announce = started_announced_.insert(name + "/" + run).second;
    }
    if (announce) {
      Event(obj, "Normal", "Started", "run " + run + " started");
      Logger()->info("{}: run {} started", name, run);
    }
  }
  status["observedGeneration"] = gen;
  // Complete for this run: nothing left to do (node actions were applied before).
  if (!status.value("completionTime", "").empty()) {
    RETURN_IF_ERROR(WriteStatus(obj, status));
    return ReconcileResult{};
  }

  auto set_running = [&](Json& st, const std::string& reason, const std::string& msg) {
    Json conds = Json::array();
    bool suspended = reason == "Suspended";
    conds = SetCondition(old_status, conds, "Reconciling", suspended ? "False" : "True", reason,
                         msg, gen, now);
    conds = SetCondition(old_status, conds, "Ready", "False", reason, msg, gen, now);
    conds = SetCondition(old_status, conds, "Complete", "False", reason, msg, gen, now);
    conds = SetCondition(old_status, conds, "Passed", "Unknown", reason, msg, gen, now);
    st["conditions"] = conds;
    st["verdict"] = suspended ? "Suspended" : "Running";
    st["message"] = msg;
  };

  // Nodes: selected, with GPUs, not cordoned unless asked.
  std::map<std::string, Json> nodes;
  for (auto& n : caches_.nodes()) nodes[Str(n, "/metadata/name"_json_pointer)] = n;
  std::vector<std::string> selected;
  std::set<std::string> seen;
  const bool include_cordoned = spec.value("includeCordoned", false);
  for (const auto& [n, node] : nodes) {
    if (!NodeSelected(spec, node)) continue;
    bool explicitly = false;
    for (const auto& e : spec.value("nodes", Json::array())) explicitly |= e == n;
    if (!explicitly && NodeGpus(node) <= 0) continue;
    // A cordon perfgate set itself does not exclude the node (it must be re-testable).
    bool cordoned =
        node.value("spec", Json::object()).value("unschedulable", false) &&
        !node["metadata"].value("annotations", Json::object()).contains(kCordonedByAnnotation);
    if (!explicitly && cordoned && !include_cordoned) continue;
    selected.push_back(n);
    seen.insert(n);
  }
  for (const auto& e : spec.value("nodes", Json::array())) {
    if (e.is_string() && seen.insert(e.get<std::string>()).second)
      selected.push_back(e.get<std::string>());
  }
  std::sort(selected.begin(), selected.end());
  // What `profile: auto` picks by: the selected nodes' GPU models.
  SelectedModels models;
  for (const auto& n : selected) {
    auto it = nodes.find(n);
    if (it == nodes.end()) continue;  // named but missing: that node's ERROR, later
    auto model = GpuModelOfNode(it->second["metadata"]
                                    .value("labels", Json::object())
                                    .get<std::map<std::string, std::string>>());
    if (model.ok()) {
      models.known[n] = *model;
    } else {
      models.unknown[n] = model.status().message();
    }
  }

  // The plan: validated exactly as the worker will read it.
  auto plan = ResolvePlan(*client_, obj, config_.enableFixtures, models);
  if (plan.ok()) {
    Status fits =
        CheckGpusPerNodeFits(static_cast<int>(spec.value("gpusPerNode", 0)), selected, nodes);
    if (!fits.ok()) plan = fits;
  }
  // Which model each node has and how it was read (GFD's label or the cloud's), once per run;
  // an invalid spec's status keeps it too, to show what the message is about.
  if (!models.known.empty()) {
    status["gpuModels"] = Cut(DescribeModels(models.known), 1000);
    if (old_status.value("run", "") != run ||
        old_status.value("gpuModels", "") != status["gpuModels"].get<std::string>()) {
      Event(obj, "Normal", "GpuModels", status["gpuModels"].get<std::string>());
    }
  }
  if (!plan.ok()) {
    if (plan.status().code() != Code::kInvalidArgument && plan.status().code() != Code::kNotFound) {
      metrics_.errors++;
      return plan.status();
    }
    Json conds = Json::array();
    const std::string msg = plan.status().message();
    for (const char* t : {"Ready", "Stalled", "Complete", "Passed"}) {
      std::string s = std::string(t) == "Ready" || std::string(t) == "Passed" ? "False" : "True";
      conds = SetCondition(old_status, conds, t, s, "InvalidSpec", msg, gen, now);
    }
    status["conditions"] = conds;
    status["verdict"] = "InvalidSpec";
    status["message"] = Cut(msg, 2000);
    status["completionTime"] = now;
    RETURN_IF_ERROR(WriteStatus(obj, status));
    Event(obj, "Warning", "InvalidSpec", msg);
    return ReconcileResult{};
  }
  // NCCL tests across nodes: gangs (docs/nccl.md). Without NCCL tests a gang option is moot.
  const Json gang_spec = spec.value("gang", Json::object());
  const std::string gang_shape = gang_spec.value("shape", "");
  const int gang_port = gang_spec.value("port", 0) > 0 ? gang_spec.value("port", 0) : 29500;
  bool gang = false;
  if (!gang_shape.empty()) {
    Json plan_json = Json::parse(plan->text, nullptr, false);
    if (!plan_json.is_discarded() && PlanHasNccl(plan_json)) {
      gang = true;
      FixSampling(&plan_json);
      plan->text = plan_json.dump();
    }
  }
  if (!plan->profile.empty()) {
    status["profile"] = plan->profile;
    status["profileVersion"] = plan->profileVersion;
  }

  if (selected.empty()) {
    const std::string msg =
        "no node matches spec.nodeSelector/spec.nodes with allocatable nvidia.com/gpu";
    Json conds = Json::array();
    for (const char* t : {"Ready", "Stalled", "Complete", "Passed"}) {
      std::string s = std::string(t) == "Ready" || std::string(t) == "Passed" ? "False" : "True";
      conds = SetCondition(old_status, conds, t, s, "NoNodesSelected", msg, gen, now);
    }
    status["conditions"] = conds;
    status["verdict"] = "Error";  // nothing could be measured
    status["message"] = msg;
    status["nodes"] = 0;
    status["passedNodes"] = "0/0";
    status["completionTime"] = now;
    RETURN_IF_ERROR(WriteStatus(obj, status));
    Event(obj, "Warning", "NoNodesSelected", msg);
    return ReconcileResult{};
  }

  // The plan's ConfigMap (owned by the validation; one per run).
  const std::string config_map = ObjectName({name, run, "plan"});
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (config_maps_written_.count(config_map) == 0) {
      const Json labels = {{"perfgate.io/validation", LabelValue(name)}, {"perfgate.io/run", run}};
      Json cm = {{"apiVersion", "v1"},
                 {"kind", "ConfigMap"},
                 {"metadata",
                  {{"name", config_map},
                   {"namespace", config_.nameSpace},
                   {"labels", labels},
                   {"ownerReferences", OwnerReferences(obj, /*controller=*/true)}}},
                 {"data", {{"plan.yaml", plan->text}}}};
      auto created = client_->Create(ConfigMapsResource(), config_.nameSpace, cm);
      if (!created.ok() && created.status().code() != Code::kAlreadyExists) return created.status();
      config_maps_written_.insert(config_map);
    }
  }

  // What each node has: a result, a pod, or nothing yet.
  std::map<std::string, Json> results;
  for (auto& r : caches_.resultsOf(name)) {
    if (Label(r, "perfgate.io/run") == run) {
      results[r["spec"].value("nodeName", Label(r, "perfgate.io/node"))] = r;
    }
  }
  std::map<std::string, Json> pods;
  for (auto& p : caches_.podsOf(name)) {
    if (Label(p, "perfgate.io/run") == run) pods[PodNode(p)] = p;
  }
  // Another validation's live worker on `node`, or "".
  auto busy_with = [&](const std::string& node) { return BusyWith(name, node); };

  const int spec_gpus = static_cast<int>(spec.value("gpusPerNode", 0));
  int timeout = static_cast<int>(policy.value("nodeTimeoutSeconds", 0));
  if (timeout <= 0) timeout = config_.defaultNodeTimeoutSeconds;
  int parallelism = static_cast<int>(policy.value("parallelism", 0));
  if (parallelism <= 0) parallelism = static_cast<int>(selected.size());
  const bool suspended = spec.value("suspend", false);

  std::vector<NodeOutcome> outcomes;
  std::vector<std::string> to_start;
  std::vector<std::string> waiting;
  int active = 0;
  std::chrono::milliseconds requeue{0};
  auto record_error = [&](const std::string& node, const std::string& pod_name,
                          const std::string& reason) -> Status {
    RETURN_IF_ERROR(WriteOperatorResult(obj, run, node, pod_name, reason));
    outcomes.push_back({node, "ERROR", "", "", reason, true});
    return Status::Ok();
  };
  for (const auto& node : selected) {
    const std::string pod_name = ObjectName({name, run, node});
    if (auto it = results.find(node); it != results.end()) {
      const Json& report = it->second["spec"].value("report", Json::object());
      NodeOutcome o{node, report.value("verdict", "ERROR"), "",
                    it->second["spec"].value("worst", ""), report.value("reason", "")};
      if (o.verdict == "VERDICT_UNSPECIFIED" || o.verdict.empty()) o.verdict = "ERROR";
      o.byOperator = it->second["spec"].value("writtenBy", "") == "operator";
      for (const auto& t : report.value("tests", Json::array())) {
        if (t.value("verdict", "") != "PASS" && t.value("verdict", "") != "SKIPPED") {
          o.test = t.value("name", "");
          break;
        }
      }
      outcomes.push_back(o);
      continue;
    }
    auto node_it = nodes.find(node);
    if (node_it == nodes.end()) {
      RETURN_IF_ERROR(record_error(node, pod_name, "node " + node + " does not exist"));
      continue;
    }
    const int have = NodeGpus(node_it->second);
    if (spec_gpus > 0 && have < spec_gpus) {
      RETURN_IF_ERROR(record_error(node, pod_name,
                                   "expected " + std::to_string(spec_gpus) +
                                       " GPUs (spec.gpusPerNode), node has " +
                                       std::to_string(have) + " allocatable nvidia.com/gpu"));
      continue;
    }
    auto pod_it = pods.find(node);
    if (pod_it == pods.end()) {
      if (std::string other = busy_with(node); !other.empty()) {
        waiting.push_back(node + " (busy with validation " + other + ")");
      } else {
        to_start.push_back(node);
      }
      outcomes.push_back({node, "", "", "", ""});
      continue;
    }
    const Json& pod = pod_it->second;
    const std::string phase = Str(pod, "/status/phase"_json_pointer);
    if (phase == "Succeeded" || phase == "Failed") {
      // The result may be written but not yet in our cache: ask the API.
      auto direct = client_->Get(ResultsResource(), config_.nameSpace, pod_name);
      if (direct.ok()) {
        requeue = std::chrono::milliseconds(200);
        outcomes.push_back({node, "", "", "", ""});
        continue;
      }
      std::string reason;
      if (phase == "Succeeded") {
        reason = "worker exited 0 without writing its PerfResult";
      } else if (Str(pod, "/status/reason"_json_pointer) == "DeadlineExceeded") {
        reason = "worker timed out: no result within policy.nodeTimeoutSeconds=" +
                 std::to_string(timeout) + "s (pod DeadlineExceeded)";
      } else {
        const Json cs =
            pod.value("status", Json::object()).value("containerStatuses", Json::array());
        Json term =
            cs.empty() ? Json::object() : cs[0]["state"].value("terminated", Json::object());
        reason = "worker failed: exit code " + std::to_string(term.value("exitCode", -1));
        if (!term.value("reason", "").empty()) reason += " (" + term.value("reason", "") + ")";
        std::string message = term.value("message", "");
        if (message.empty()) {
          kube::LogOptions lo;
          lo.tailLines = 5;
          auto logs = client_->Logs(config_.nameSpace, pod_name, lo);
          if (logs.ok()) message = *logs;
        }
        while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
          message.pop_back();
        if (!message.empty()) {
          if (message.size() > 600) message = "..." + message.substr(message.size() - 600);
          reason += ": " + message;
        }
      }
      RETURN_IF_ERROR(record_error(node, pod_name, reason));
      continue;
    }
    // Not finished: never scheduled for too long is an ERROR (a scheduling problem, not a bad GPU).
    if (Str(pod, "/spec/nodeName"_json_pointer).empty()) {
      auto created = ParseRfc3339(Str(pod, "/metadata/creationTimestamp"_json_pointer));
      Clock::duration age = created ? now_() - *created : Clock::duration(0);
      std::string why;
      for (const auto& c : pod.value("status", Json::object()).value("conditions", Json::array())) {
        if (c.value("type", "") == "PodScheduled") why = c.value("message", "");
      }
      if (age >= config_.schedulingTimeout) {
        RETURN_IF_ERROR(record_error(node, pod_name,
                                     "worker pod not scheduled within " +
                                         std::to_string(config_.schedulingTimeout.count()) + "s" +
                                         (why.empty() ? "" : ": " + why)));
        auto del = client_->Delete(kube::PodsResource(), config_.nameSpace, pod_name);
        (void)del;
        continue;
      }
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(config_.schedulingTimeout - age);
      if (requeue.count() == 0 || left < requeue) requeue = left + std::chrono::milliseconds(100);
      // Reported, not fought over: e.g. "Insufficient nvidia.com/gpu" while other pods hold them.
      if (!why.empty()) waiting.push_back(node + " (unscheduled: " + why + ")");
    }
    active++;
    outcomes.push_back({node, "", "", "", ""});
  }

  // Gangs: rank order is the sorted node order; one verdict per gang.
  std::map<std::string, GangMember> members;
  std::vector<std::vector<std::string>> gangs;
  std::map<std::string, size_t> outcome_of;
  for (size_t i = 0; i < outcomes.size(); ++i) outcome_of[outcomes[i].node] = i;
  if (gang) {
    gangs = GangsOf(selected, gang_shape);
    for (size_t g = 0; g < gangs.size(); ++g) {
      const std::string id = ObjectName({name, run, "gang" + std::to_string(g)});
      // Pods already made carry the gang's address: a later reconcile must not move it.
      std::string comm;
      for (const auto& n : gangs[g]) {
        if (auto it = pods.find(n); it != pods.end() && comm.empty()) comm = CommIdOf(it->second);
      }
      if (comm.empty()) comm = NewCommId(id, gang_port);
      for (size_t r = 0; r < gangs[g].size(); ++r) {
        members[gangs[g][r]] = {id, static_cast<int>(r), static_cast<int>(gangs[g].size()), comm,
                                config_.gangRendezvousHost.empty()};
      }
    }
    // A pair that measured below its threshold points at one of its two nodes or the link
    // between them; a whole-cluster gang's FAIL points at nobody in particular.
    for (const auto& gang_nodes : gangs) {
      // The cause: a node's own non-PASS verdict (FAIL first: a rank that stopped on a wrong
      // result leaves the others to their watchdog), before one this rule gave it earlier.
      auto score = [](const NodeOutcome& o) {
        int s = o.verdict == "FAIL" ? 0 : o.verdict == "ERROR" ? 1 : 2;
        return o.reason.rfind("gang of ", 0) == 0 ? s + 10 : s;
      };
      std::optional<NodeOutcome> cause;
      for (const auto& n : gang_nodes) {
        const NodeOutcome& o = outcomes[outcome_of[n]];
        if (o.verdict.empty() || o.verdict == "PASS") continue;
        if (!cause || score(o) < score(*cause)) cause = o;
      }
      if (!cause) continue;
      const std::string gang_reason = cause->reason.rfind("gang of ", 0) == 0
                                          ? cause->reason
                                          : "gang of " + std::to_string(gang_nodes.size()) + ": " +
                                                cause->node + " " + cause->verdict + ": " +
                                                cause->reason;
      for (const auto& n : gang_nodes) {
        NodeOutcome& o = outcomes[outcome_of[n]];
        if (o.verdict.empty()) {
          // A peer that finished on its own may be a moment ahead of this one: let it finish
          // (its own watchdog bounds the wait if it is stuck in NCCL).
          if (!cause->byOperator) continue;
          // Its peer never ran or is gone: without this it would wait in NCCL until its
          // watchdog fires.
          const std::string pod_name = ObjectName({name, run, n});
          if (pods.count(n) != 0) {
            auto del = client_->Delete(kube::PodsResource(), config_.nameSpace, pod_name);
            if (!del.ok() && del.status().code() != Code::kNotFound) return del.status();
          }
          RETURN_IF_ERROR(WriteOperatorResult(obj, run, n, pod_name, gang_reason));
        }
        o.verdict = cause->verdict;
        o.reason = gang_reason;
        if (o.test.empty()) o.test = cause->test;
      }
    }
    status["gangs"] = static_cast<int>(gangs.size());
  }

  if (!suspended) {
    std::vector<Json> batch;
    std::set<std::string> starting(to_start.begin(), to_start.end());
    std::set<std::string> services;
    for (const auto& node : to_start) {
      const std::string pod_name = ObjectName({name, run, node});
      int gpus = spec_gpus > 0 ? spec_gpus : NodeGpus(nodes[node]);
      if (gang) {
        if (!outcomes[outcome_of[node]].verdict.empty()) continue;
        // A gang starts whole: every member is still to run and free (a busy one waits).
        const GangMember& m = members[node];
        bool whole = true;
        for (const auto& g : gangs) {
          if (std::find(g.begin(), g.end(), node) == g.end()) continue;
          for (const auto& peer : g) {
            whole &= outcomes[outcome_of[peer]].verdict.empty() &&
                     (starting.count(peer) != 0 || pods.count(peer) != 0);
          }
        }
        if (!whole) continue;
        if (m.headlessService) services.insert(m.gangId);
        batch.push_back(BuildGangPod(obj, run, node, pod_name, config_map, gpus, timeout, m));
        continue;
      }
      if (active >= parallelism) break;
      batch.push_back(BuildPod(obj, run, node, pod_name, config_map, gpus, timeout));
      active++;
    }
    // Rank 0's name must resolve before it is Ready (publishNotReadyAddresses), since no
    // worker is Ready before the rendezvous.
    for (const auto& id : services) {
      RETURN_IF_ERROR(CreateGangService(obj, run, id, gang_port));
    }
    RETURN_IF_ERROR(CreatePods(batch));
  }

  // Narrowing (docs/nccl.md): once every gang has its verdict, the nodes of failing gangs run
  // again in smaller gangs until the suspects are named.
  const bool all_decided = std::all_of(outcomes.begin(), outcomes.end(),
                                       [](const NodeOutcome& o) { return !o.verdict.empty(); });
  if (gang && all_decided) {
    std::map<std::string, std::string> verdict_of;
    for (const auto& o : outcomes) verdict_of[o.node] = o.verdict;
    const GangRun g{&obj,
                    run,
                    config_map,
                    spec_gpus,
                    &nodes,
                    timeout,
                    gang_port,
                    suspended,
                    caches_.resultsOf(name),
                    caches_.podsOf(name)};
    ASSIGN_OR_RETURN(Narrowing narrowing,
                     Narrow(g, gangs, verdict_of, gang_shape, gang_spec.value("narrow", "pairs")));
    Json suspects = Json::array();
    status.erase("suspectNodes");  // an earlier round's candidates may have been cleared since
    for (const auto& n : narrowing.suspects) {
      if (suspects.size() < 20) suspects.push_back(n);  // the CRD's maxItems
    }
    if (!suspects.empty()) status["suspectNodes"] = suspects;
    if (!narrowing.running.empty()) {
      set_running(status, suspended ? "Suspended" : "Running", narrowing.running);
      RETURN_IF_ERROR(WriteStatus(obj, status));
      return ReconcileResult{std::chrono::seconds(1)};
    }
  }

  int counts[5] = {0, 0, 0, 0, 0};  // pass fail inconclusive error pending
  Json failing = Json::array();
  for (const auto& o : outcomes) {
    if (o.verdict == "PASS") {
      counts[0]++;
    } else if (o.verdict == "FAIL") {
      counts[1]++;
    } else if (o.verdict == "INCONCLUSIVE") {
      counts[2]++;
    } else if (o.verdict == "ERROR") {
      counts[3]++;
    } else {
      counts[4]++;
    }
    if (!o.verdict.empty() && o.verdict != "PASS" && failing.size() < 20) {
      failing.push_back({{"node", o.node},
                         {"verdict", o.verdict},
                         {"test", o.test},
                         {"figure", Cut(o.figure, 200)},
                         {"reason", Cut(o.reason, 500)}});
    }
  }
  status["nodes"] = static_cast<int>(outcomes.size());
  status["passed"] = counts[0];
  status["failed"] = counts[1];
  status["inconclusive"] = counts[2];
  status["errors"] = counts[3];
  status["pending"] = counts[4];
  status["passedNodes"] = std::to_string(counts[0]) + "/" + std::to_string(outcomes.size());
  status["failingNodes"] = failing;
  if (counts[4] == 0) {
    RETURN_IF_ERROR(Complete(obj, status, outcomes, nodes));
    return ReconcileResult{};
  }
  std::string msg = std::to_string(outcomes.size() - static_cast<size_t>(counts[4])) + " of " +
                    std::to_string(outcomes.size()) + " nodes done";
  if (!waiting.empty()) {
    msg += "; waiting for " + waiting.front() +
           (waiting.size() > 1 ? " and " + std::to_string(waiting.size() - 1) + " more" : "");
    if (requeue.count() == 0 || requeue > std::chrono::seconds(5))
      requeue = std::chrono::seconds(5);
  }
  set_running(status, suspended ? "Suspended" : "Running", suspended ? "suspended: " + msg : msg);
  RETURN_IF_ERROR(WriteStatus(obj, status));
  return ReconcileResult{requeue};
}

}  // namespace perfgate::op
