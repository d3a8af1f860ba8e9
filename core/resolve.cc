#include "core/resolve.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <functional>
#include <set>

#include "core/plan.h"
#include "kernels/cuda/profile_select.h"
#include "store/baseline_object.h"

namespace perfgate::op {
namespace {

// A PerfProfile object, as the loader would read its file.
Result<spec::Loaded<v1alpha1::PerfProfile>> ProfileFromObject(const Json& obj) {
  const std::string name = Name(obj);
  Json doc = {{"apiVersion", "perfgate.io/v1alpha1"},
              {"kind", "PerfProfile"},
              {"metadata", {{"name", name}}},
              {"spec", obj.value("spec", Json::object())}};
  return spec::ParseProfile(doc.dump(2), "PerfProfile/" + name);
}

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

// `profile: auto` (or neither a profile nor tests): the GPU model of the selected nodes (GFD's
// label, else the cloud's own labels). One validation certifies one model: unknown and mixed
// models are refused, naming which nodes have which and the `candidates` profiles.
Result<std::vector<std::string>> SelectedGpuNames(
    const SelectedModels& models, const std::map<std::string, std::string>& model_keys,
    const std::set<std::string>& labels_read,
    const std::function<Result<std::vector<spec::Loaded<v1alpha1::PerfProfile>>>()>& candidates) {
  if (!models.unknown.empty()) {
    std::string which;
    int count = 0;
    for (const auto& [node, why] : models.unknown) {
      if (++count <= 3)
        which += (which.empty() ? "" : "; ") + std::string("node ") + node + ": " + why;
    }
    if (count > 3) which += "; and " + std::to_string(count - 3) + " more nodes";
    std::string available = "none";
    if (auto all = candidates(); all.ok()) {
      std::vector<kernels::ProfileCandidate> described;
      for (const auto& p : *all) {
        const auto& gm = p.doc.spec().gpumodels();
        described.push_back({p.doc.metadata().name(), {gm.begin(), gm.end()}});
      }
      available = kernels::DescribeProfiles(described);
    }
    return InvalidArgument(which + "; profiles: " + available + "; label the node " +
                           kGpuProductLabel +
                           " (GPU Feature Discovery), leave it out with spec.nodeSelector, or "
                           "name a profile with spec.profile");
  }
  if (model_keys.empty()) return InvalidArgument("no node matches spec.nodeSelector/spec.nodes");
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
}

// The baseline `name`: the PerfBaseline object of that name (read once into `from_cluster`),
// else the store's (docs/store.md); NotFound naming where it was looked for.
Result<const store::Baseline*> FindBaseline(const std::string& name,
                                            const ClusterBaselines* baselines,
                                            const StoreBaselines* store,
                                            std::map<std::string, store::Baseline>* from_cluster) {
  if (auto known = from_cluster->find(name); known != from_cluster->end()) return &known->second;
  if (baselines != nullptr && baselines->by_name.contains(name)) {
    v1alpha1::PerfBaseline object;
    google::protobuf::util::JsonParseOptions o;
    o.ignore_unknown_fields = true;
    if (!google::protobuf::util::JsonStringToMessage(baselines->by_name.at(name).dump(), &object, o)
             .ok()) {
      return InvalidArgument("PerfBaseline \"" + name + "\" cannot be read as a PerfBaseline");
    }
    ASSIGN_OR_RETURN(store::Baseline got, store::BaselineOfObject(object));
    got.name = name;
    return &((*from_cluster)[name] = std::move(got));
  }
  if (store == nullptr) {
    return NotFound("no PerfBaseline \"" + name +
                    "\" in the cluster (and no results store to read baselines from)");
  }
  auto it = store->baselines.find(name);
  if (it != store->baselines.end()) return &it->second;
  auto why = store->baseline_errors.find(name);
  if (why != store->baseline_errors.end() && why->second.code() != Code::kNotFound) {
    return why->second;
  }
  return NotFound("no PerfBaseline \"" + name + "\" in the cluster, and " +
                  (why != store->baseline_errors.end()
                       ? why->second.message()
                       : "baseline \"" + name + "\" not found in the results store"));
}

// The profile's level (its sampling, and its tests the spec does not name) written into `spec`,
// which then names no profile: the worker reads the plan as it is.
void InlineProfile(const v1alpha1::PerfProfileSpec& ps, v1alpha1::PerfValidationSpec* spec) {
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

// Baseline bounds travel as reference and fraction: the worker in its pod reads no store.
Status InlineBaselines(const worker::Plan& plan, const worker::PlanOptions& options,
                       v1alpha1::PerfValidationSpec* spec) {
  for (const auto& t : plan.tests) {
    for (const v1alpha1::Threshold& th : t.threshold_specs) {
      if (th.baseline().empty()) continue;
      ASSIGN_OR_RETURN(const double figure,
                       options.baseline_value(th.baseline(), plan.profile_version, t.name,
                                              th.metric(), th.statistic()));
      for (auto& st : *spec->mutable_tests()) {
        if ((st.name().empty() ? st.type() : st.name()) != t.name) continue;
        for (auto& w : *st.mutable_thresholds()) {
          if (w.baseline() != th.baseline() || w.metric() != th.metric() ||
              w.statistic() != th.statistic()) {
            continue;
          }
          w.set_reference(figure);
          w.set_referencesource("baseline " + th.baseline());
          w.clear_baseline();
        }
      }
    }
  }
  return Status::Ok();
}

// The plan as the workers read it: the spec with the profile's level (`profile`, the one named or
// picked; null for none) and the baselines' figures written in, the profile named in
// annotations.
Result<ResolvedPlan> WriteResolved(const v1alpha1::PerfValidation& doc, const worker::Plan& plan,
                                   const worker::PlanOptions& options,
                                   const v1alpha1::PerfProfileSpec* profile) {
  v1alpha1::PerfValidation resolved = doc;
  if (!plan.profile.empty() && profile != nullptr) {
    InlineProfile(*profile, resolved.mutable_spec());
  }
  RETURN_IF_ERROR(InlineBaselines(plan, options, resolved.mutable_spec()));
  auto* ann = resolved.mutable_metadata()->mutable_annotations();
  if (!plan.profile.empty()) (*ann)["perfgate.io/profile"] = plan.profile;
  if (!plan.profile_version.empty()) (*ann)["perfgate.io/profile-version"] = plan.profile_version;
  ResolvedPlan out;
  if (!google::protobuf::util::MessageToJsonString(resolved, &out.text).ok()) {
    return Internal("cannot write the resolved plan as JSON");
  }
  out.profile = plan.profile;
  out.profile_version = plan.profile_version;
  return out;
}

Result<ResolvedPlan> BuildResolvedPlan(const spec::Loaded<v1alpha1::PerfValidation>& loaded,
                                       const ClusterProfiles& cluster, bool fixtures,
                                       const SelectedModels& models, const StoreBaselines* store,
                                       const ClusterBaselines* baselines) {
  std::map<std::string, std::string> node_products;
  for (const auto& [node, m] : models.known) node_products[node] = m.model;
  std::map<std::string, spec::Loaded<v1alpha1::PerfProfile>> profiles;
  worker::PlanOptions options;
  options.enable_fixtures = fixtures;
  options.profile_lookup =
      [&](const std::string& p) -> Result<spec::Loaded<v1alpha1::PerfProfile>> {
    auto it = cluster.by_name.find(p);
    if (it == cluster.by_name.end()) {
      return NotFound("PerfProfile \"" + p + "\" not found in the cluster");
    }
    ASSIGN_OR_RETURN(auto found, ProfileFromObject(it->second));
    profiles[p] = found;
    return found;
  };
  options.profile_list = [&]() -> Result<std::vector<spec::Loaded<v1alpha1::PerfProfile>>> {
    if (!cluster.listed) return Internal("the cluster's PerfProfiles were not read");
    std::vector<spec::Loaded<v1alpha1::PerfProfile>> out;
    for (const auto& [name, item] : cluster.by_name) {
      ASSIGN_OR_RETURN(auto p, ProfileFromObject(item));
      out.push_back(std::move(p));
    }
    return out;
  };
  const std::string named = loaded.doc.spec().profile();
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
    return SelectedGpuNames(models, model_keys, labels_read, options.profile_list);
  };
  std::map<std::string, store::Baseline> from_cluster;
  options.baseline_value = [&](const std::string& name, const std::string& profile_version,
                               const std::string& test, const std::string& metric,
                               const std::string& statistic) -> Result<double> {
    ASSIGN_OR_RETURN(const store::Baseline* b, FindBaseline(name, baselines, store, &from_cluster));
    if (model_keys.size() != 1) {
      return InvalidArgument(
          "a baseline bound needs one GPU model among the selected nodes (" +
          (models.known.empty() ? std::string("none known") : DescribeModels(models.known)) + ")");
    }
    const std::string key = model_keys.begin()->first;
    return store::BaselineFigure(*b, model_keys.begin()->second, profile_version, test, metric,
                                 statistic,
                                 [&](const std::string& model) { return ModelKey(model) == key; });
  };
  auto built = worker::BuildPlan(loaded, options);
  // A model with no profile: say which nodes have it and how it was read.
  if (!built.ok() && !profile_named && !models.known.empty() && models.unknown.empty() &&
      model_keys.size() == 1) {
    return Status(built.status().code(),
                  built.status().message() + " (" + DescribeModels(models.known) + ")");
  }
  ASSIGN_OR_RETURN(worker::Plan plan, std::move(built));
  if (profile_named && profiles.contains(plan.profile)) {
    RETURN_IF_ERROR(
        CheckNamedProfileFitsNodes(plan.profile, profiles[plan.profile], node_products));
  }

  const auto profile = profiles.find(plan.profile);
  return WriteResolved(loaded.doc, plan, options,
                       profile == profiles.end() ? nullptr : &profile->second.doc.spec());
}

}  // namespace

Result<spec::Loaded<v1alpha1::PerfValidation>> ParseValidationObject(const Json& obj) {
  const std::string name = Name(obj);
  Json doc = {{"apiVersion", obj.value("apiVersion", "perfgate.io/v1alpha1")},
              {"kind", "PerfValidation"},
              {"metadata", {{"name", name}}},
              {"spec", obj.value("spec", Json::object())}};
  return spec::ParseValidation(doc.dump(2), "PerfValidation/" + name);
}

ProfilesNeeded ProfilesToRead(const v1alpha1::PerfValidationSpec& spec) {
  ProfilesNeeded need;
  const std::string& p = spec.profile();
  if (!p.empty() && p != "auto") {
    need.named = p;
  } else {
    need.list = p == "auto" || spec.tests().empty();
  }
  return need;
}

std::set<std::string> BaselinesNamed(const v1alpha1::PerfValidationSpec& spec,
                                     const ClusterProfiles& profiles) {
  std::set<std::string> names;
  for (const auto& t : spec.tests()) {
    for (const auto& th : t.thresholds()) {
      if (!th.baseline().empty()) names.insert(th.baseline());
    }
  }
  for (const auto& [name, profile] : profiles.by_name) {
    for (const char* level : {"quick", "full"}) {
      const Json spec_json = profile.value("spec", Json::object());
      for (const auto& t : spec_json.value(level, Json::object()).value("tests", Json::array())) {
        for (const auto& th : t.value("thresholds", Json::array())) {
          if (!th.value("baseline", "").empty()) names.insert(th.value("baseline", ""));
        }
      }
    }
  }
  return names;
}

Result<ResolvedPlan> ResolvePlan(const spec::Loaded<v1alpha1::PerfValidation>& loaded,
                                 const ClusterProfiles& profiles, bool fixtures,
                                 const std::vector<std::string>& selected,
                                 const std::map<std::string, Json>& nodes,
                                 const SelectedModels& models, const StoreBaselines* store,
                                 const ClusterBaselines* baselines) {
  // A baseline the store could not give now (and the cluster has no PerfBaseline of that name):
  // try again, rather than call the spec invalid.
  if (store != nullptr) {
    for (const auto& [name, why] : store->baseline_errors) {
      if (baselines != nullptr && baselines->by_name.contains(name)) continue;
      if (why.code() == Code::kUnavailable || why.code() == Code::kResourceExhausted) {
        return Status(why.code(), "reading baseline " + name + ": " + why.message());
      }
    }
  }
  ASSIGN_OR_RETURN(ResolvedPlan plan,
                   BuildResolvedPlan(loaded, profiles, fixtures, models, store, baselines));
  RETURN_IF_ERROR(CheckGpusPerNodeFits(loaded.doc.spec().gpuspernode(), selected, nodes));
  // NCCL tests across nodes: gangs (docs/nccl.md). Without NCCL tests a gang option is moot.
  if (!loaded.doc.spec().gang().shape().empty()) {
    Json plan_json = Json::parse(plan.text, nullptr, false);
    if (!plan_json.is_discarded() && PlanHasNccl(plan_json)) {
      plan.gang = true;
      FixSampling(&plan_json);
      plan.text = plan_json.dump();
    }
  }
  // The price, of the plan as the workers get it (a gang's sampling is fixed).
  ASSIGN_OR_RETURN(auto as_sent, spec::ParseValidation(plan.text, "the resolved plan"));
  worker::PlanOptions options;
  options.enable_fixtures = fixtures;
  ASSIGN_OR_RETURN(plan.built, worker::BuildPlan(as_sent, options));
  plan.gpus = loaded.doc.spec().gpuspernode();
  if (plan.gpus <= 0) {
    for (const auto& n : selected) {
      if (auto it = nodes.find(n); it != nodes.end()) {
        plan.gpus = std::max(plan.gpus, NodeGpus(it->second));
      }
    }
  }
  if (plan.gpus <= 0) plan.gpus = worker::kAssumedGpus;
  plan.price = worker::PricePlan(plan.built, plan.gpus);
  return plan;
}

}  // namespace perfgate::op
