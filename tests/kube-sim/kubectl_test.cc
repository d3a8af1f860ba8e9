// The real kubectl (v1.32) against kube-sim: CRD registration, printer columns, strict field
// validation, status subresource, kubectl wait, owner-reference garbage collection.
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/kube-sim/kube_sim.h"
#include "tests/kube-sim/test_util.h"

namespace perfgate::kubesim {
namespace {

using testing::Eventually;
using ::testing::HasSubstr;
using testing::Kubectl;
using ::testing::Not;

const std::string kTestdata = KUBE_SIM_TESTDATA;

class KubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Options o;
    o.nodes = 2;
    o.bookmarkIntervalSeconds = 0.2;
    sim_ = std::make_unique<KubeSim>(o);
    ASSERT_TRUE(sim_->Start().ok());
  }
  void ApplyCrd() {
    auto r = Kubectl(*sim_, {"apply", "-f", kTestdata + "/perfvalidation-crd.yaml"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    ASSERT_THAT(
        r.out,
        HasSubstr(
            "customresourcedefinition.apiextensions.k8s.io/perfvalidations.perfgate.io created"));
  }
  std::unique_ptr<KubeSim> sim_;
};

TEST_F(KubectlTest, CustomResourceLifecycleAsAUserSeesIt) {
  ApplyCrd();
  auto r = Kubectl(*sim_, {"apply", "-f", kTestdata + "/perfvalidation.yaml"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("perfvalidation.perfgate.io/smoke created"));

  // Printer columns from the CRD, through the short name.
  r = Kubectl(*sim_, {"get", "pval"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("NAME +LEVEL +GPUS +READY +AGE"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("smoke +quick +8 +"));

  // Status through the subresource; the main endpoint's generation stays put.
  r = Kubectl(
      *sim_,
      {"patch", "perfvalidation", "smoke", "--subresource=status", "--type=merge", "-p",
       R"({"status":{"conditions":[{"type":"Ready","status":"True","reason":"Passed","message":"all nodes passed"}]}})"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = Kubectl(*sim_, {"wait", "--for=condition=Ready", "perfvalidation/smoke", "--timeout=10s"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("perfvalidation.perfgate.io/smoke condition met"));
  r = Kubectl(*sim_, {"get", "pval", "smoke"});
  EXPECT_THAT(r.out, ::testing::ContainsRegex("smoke +quick +8 +True"));
  auto obj = sim_->Get("perfgate.io", "perfvalidations", "", "smoke");
  ASSERT_TRUE(obj.ok());
  EXPECT_EQ((*obj)["metadata"]["generation"], 1);
  EXPECT_EQ((*obj)["spec"]["suspend"], false) << "schema default applied";

  // A namespaced object owned by the cluster-scoped validation goes with it.
  Json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata",
              {{"name", "owned"},
               {"namespace", "default"},
               {"ownerReferences",
                {{{"apiVersion", "perfgate.io/v1alpha1"},
                  {"kind", "PerfValidation"},
                  {"name", "smoke"},
                  {"uid", (*obj)["metadata"]["uid"]}}}}}},
             {"data", {{"a", "b"}}}};
  r = Kubectl(*sim_, {"create", "-f", "-"}, cm.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // And so does a namespaced custom resource (a PerfResult) owned by it.
  r = Kubectl(*sim_, {"apply", "-f", kTestdata + "/perfresult-crd.yaml"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  Json result = {{"apiVersion", "perfgate.io/v1alpha1"},
                 {"kind", "PerfResult"},
                 {"metadata",
                  {{"name", "smoke-node-0"},
                   {"namespace", "default"},
                   {"ownerReferences", cm["metadata"]["ownerReferences"]}}},
                 {"spec",
                  {{"nodeName", "node-0"},
                   {"verdict", "PASS"},
                   {"tests", {{{"type", "hbm-stream"}, {"bandwidthGBps", 4100.5}}}}}}};
  r = Kubectl(*sim_, {"create", "-f", "-"}, result.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = Kubectl(*sim_, {"get", "pres", "-n", "default"});
  EXPECT_THAT(r.out, ::testing::ContainsRegex("NAME +NODE +VERDICT\nsmoke-node-0 +node-0 +PASS"));
  r = Kubectl(*sim_, {"delete", "pval", "smoke"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("perfvalidation.perfgate.io \"smoke\" deleted"));
  EXPECT_TRUE(Eventually([&] { return !sim_->Get("", "configmaps", "default", "owned").ok(); }));
  EXPECT_TRUE(Eventually(
      [&] { return !sim_->Get("perfgate.io", "perfresults", "default", "smoke-node-0").ok(); }));
  r = Kubectl(*sim_, {"get", "pval", "smoke"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(
      r.err,
      HasSubstr("Error from server (NotFound): perfvalidations.perfgate.io \"smoke\" not found"));
}

TEST_F(KubectlTest, RefusesUnknownFieldsAndWrongTypesNamingTheField) {
  ApplyCrd();
  auto r = Kubectl(*sim_, {"apply", "-f", "-"},
                   "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nmetadata: {name: a}\n"
                   "spec: {level: quick, colour: blue}\n");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err,
              HasSubstr("PerfValidation in version \"v1alpha1\" cannot be handled as a "
                        "PerfValidation: strict decoding error: unknown field \"spec.colour\""));
  r = Kubectl(*sim_, {"apply", "-f", "-"},
              "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nmetadata: {name: b}\n"
              "spec: {level: quick, gpusPerNode: eight}\n");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("spec.gpusPerNode: Invalid value: \"string\": spec.gpusPerNode in "
                               "body must be of type integer: \"string\""));
  r = Kubectl(*sim_, {"apply", "-f", "-"},
              "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nmetadata: {name: c}\n"
              "spec: {level: slow, gpusPerNode: 99}\n");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(
      r.err,
      HasSubstr("spec.level: Unsupported value: \"slow\": supported values: \"quick\", \"full\""));
  EXPECT_THAT(r.err, HasSubstr("spec.gpusPerNode: Invalid value: 99: spec.gpusPerNode in body "
                               "should be less than or equal to 16"));
  r = Kubectl(*sim_, {"apply", "-f", "-"},
              "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nmetadata: {name: d}\nspec: "
              "{profile: x}\n");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("spec.level: Required value"));
  // Nothing refused was stored.
  EXPECT_TRUE(sim_->List("perfgate.io", "perfvalidations").empty());
}

TEST_F(KubectlTest, GenerationBumpsOnSpecChangesOnlyAndStaleUpdatesConflict) {
  ApplyCrd();
  ASSERT_EQ(Kubectl(*sim_, {"apply", "-f", kTestdata + "/perfvalidation.yaml"}).exitCode, 0);
  auto r = Kubectl(*sim_, {"label", "pval", "smoke", "team=gpu"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ((*sim_->Get("perfgate.io", "perfvalidations", "", "smoke"))["metadata"]["generation"],
            1);
  // The main endpoint ignores status.
  r = Kubectl(*sim_, {"patch", "pval", "smoke", "--type=merge", "-p",
                      R"({"spec":{"level":"full"},"status":{"observedGeneration":7}})"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  Json obj = *sim_->Get("perfgate.io", "perfvalidations", "", "smoke");
  EXPECT_EQ(obj["metadata"]["generation"], 2);
  EXPECT_FALSE(obj.contains("status"));
  // Re-applying the file sets level back: a client-side apply merge patch.
  r = Kubectl(*sim_, {"apply", "-f", kTestdata + "/perfvalidation.yaml"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("configured"));
  obj = *sim_->Get("perfgate.io", "perfvalidations", "", "smoke");
  EXPECT_EQ(obj["spec"]["level"], "quick");
  EXPECT_EQ(obj["metadata"]["labels"]["team"], "gpu");
  // A replace carrying an old resourceVersion is refused as kube-apiserver words it.
  Json stale = obj;
  stale["metadata"]["resourceVersion"] = "2";
  stale["spec"]["profile"] = "h200";
  r = Kubectl(*sim_, {"replace", "-f", "-"}, stale.dump());
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err,
              HasSubstr("Operation cannot be fulfilled on perfvalidations.perfgate.io \"smoke\": "
                        "the object has been modified; please apply your changes to the "
                        "latest version and try again"));
  r = Kubectl(*sim_, {"create", "-f", kTestdata + "/perfvalidation.yaml"});
  EXPECT_THAT(r.err, HasSubstr("Error from server (AlreadyExists): error when creating"));
  EXPECT_THAT(r.err, HasSubstr("perfvalidations.perfgate.io \"smoke\" already exists"));
}

TEST_F(KubectlTest, BuiltinsApplyDescribeSelectorsAndNamespaces) {
  const std::string manifest = R"(apiVersion: v1
kind: Namespace
metadata: {name: perfgate-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: perfgate-system, labels: {app: perfgate, tier: x}}
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, namespace: perfgate-system, labels: {app: other}}
data: {k: v}
)";
  auto r = Kubectl(*sim_, {"apply", "-f", "-"}, manifest);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // Re-apply with a change: strategic merge patch for a built-in kind.
  std::string changed = manifest;
  changed.replace(changed.find("data: {k: v}"), 12, "data: {k: w}");
  r = Kubectl(*sim_, {"apply", "-f", "-"}, changed);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("configmap/a configured"));
  EXPECT_EQ((*sim_->Get("", "configmaps", "perfgate-system", "a"))["data"]["k"], "w");
  r = Kubectl(*sim_,
              {"get", "cm", "-n", "perfgate-system", "-l", "app in (perfgate),tier", "-o", "name"});
  EXPECT_EQ(r.out, "configmap/a\n") << r.err;
  r = Kubectl(*sim_, {"get", "cm", "-n", "perfgate-system", "-l", "app!=perfgate", "-o", "name"});
  EXPECT_THAT(r.out, HasSubstr("configmap/b"));
  EXPECT_THAT(r.out, Not(HasSubstr("configmap/a")));
  r = Kubectl(*sim_, {"get", "cm", "-A", "--field-selector", "metadata.name=b", "-o", "name"});
  EXPECT_EQ(r.out, "configmap/b\n") << r.err;
  r = Kubectl(*sim_, {"describe", "node", "node-0"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("nvidia.com/gpu.product=NVIDIA-H200"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("nvidia.com/gpu: +8"));
  // Deleting the namespace takes its contents with it.
  r = Kubectl(*sim_, {"delete", "namespace", "perfgate-system", "--timeout=10s"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(sim_->List("", "configmaps", "perfgate-system").empty());
  EXPECT_FALSE(sim_->Get("", "namespaces", "", "perfgate-system").ok());
}

// Label values are validated as apimachinery's ValidateLabels does, on create and on update,
// whatever the kind: a name (253 characters) does not always fit into a label (63).
TEST_F(KubectlTest, LabelValuesLongerThan63OrMalformedAreInvalid) {
  ApplyCrd();
  const std::string long_value(64, 'a');
  auto r = Kubectl(*sim_, {"apply", "-f", "-"},
                   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plan, namespace: default, "
                   "labels: {perfgate.io/validation: " +
                       long_value + "}}\ndata: {k: v}\n");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("ConfigMap \"plan\" is invalid: metadata.labels: Invalid value: \"" +
                               long_value + "\": must be no more than 63 characters"));
  EXPECT_FALSE(sim_->Get("", "configmaps", "default", "plan").ok());
  r = Kubectl(*sim_, {"apply", "-f", "-"},
              "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nmetadata: {name: a, "
              "labels: {team: " +
                  long_value + "}}\nspec: {level: quick}\n");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("metadata.labels: Invalid value: \"" + long_value +
                               "\": must be no more than 63 characters"));
  // On update (a patch; kubectl label would refuse it before sending): a value that does not
  // end alphanumeric.
  auto label_node = [&](const std::string& value) {
    return Kubectl(*sim_, {"patch", "node", "node-0", "--type=merge", "-p",
                           R"({"metadata":{"labels":{"perfgate.io/verdict":")" + value + "\"}}}"});
  };
  r = label_node("passed-");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(
      r.err,
      HasSubstr("metadata.labels: Invalid value: \"passed-\": a valid label must be an empty "
                "string or consist of alphanumeric characters, '-', '_' or '.', and must start "
                "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                "'12345', regex used for validation is "
                "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"));
  r = label_node(std::string(63, 'b'));
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

// The last Status kubectl received, from its -v=9 log: `"Response Body" body="<Go-quoted JSON>"`.
Json LastStatusBody(const std::string& log) {
  const std::string marker = "\"Response Body\" body=\"";
  Json last;
  for (size_t at = log.find(marker); at != std::string::npos; at = log.find(marker, at + 1)) {
    std::string body;
    for (size_t i = at + marker.size(); i < log.size() && log[i] != '"'; ++i) {
      if (log[i] == '\\' && i + 1 < log.size()) {
        ++i;
        body.push_back(log[i] == 'n' ? '\n' : log[i]);
      } else {
        body.push_back(log[i]);
      }
    }
    Json j = Json::parse(body, nullptr, false);
    if (j.is_object() && j.value("kind", "") == "Status") last = j;
  }
  return last;
}

// IsQualifiedName's RegexError for a name part, as kube-apiserver words it (two spaces before
// each "or": apimachinery's RegexError).
const char* const kNamePartError =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

// Label keys are qualified names (an optional DNS-subdomain prefix and '/', a name of at most 63
// of [A-Za-z0-9._-] alphanumeric at both ends), on create and on update, as ValidateLabels
// checks them: 422 Invalid, one cause per broken rule, in kube-apiserver's words.
TEST_F(KubectlTest, LabelKeysMustBeQualifiedNames) {
  const std::string long_name(64, 'k');
  auto r = Kubectl(*sim_, {"create", "-v=9", "-f", "-"},
                   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plan, namespace: default, "
                   "labels: {perfgate.io/" +
                       long_name + ": v, Perfgate.IO/x: v, a/b/c: v}}\ndata: {k: v}\n");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_FALSE(sim_->Get("", "configmaps", "default", "plan").ok());
  const Json status = LastStatusBody(r.err);
  ASSERT_TRUE(status.is_object()) << r.err.substr(r.err.size() > 2000 ? r.err.size() - 2000 : 0);
  EXPECT_EQ(status.value("code", 0), 422);
  EXPECT_EQ(status.value("reason", ""), "Invalid");
  const Json causes = status["details"]["causes"];
  ASSERT_EQ(causes.size(), 3u) << status.dump(2);
  for (const auto& c : causes) {
    EXPECT_EQ(c.value("reason", ""), "FieldValueInvalid");
    EXPECT_EQ(c.value("field", ""), "metadata.labels");
  }
  // Sorted by key as kube-sim stores them; kube-apiserver's order follows Go's map iteration.
  EXPECT_EQ(causes[0].value("message", ""),
            "Invalid value: \"Perfgate.IO/x\": prefix part a lowercase RFC 1123 subdomain must "
            "consist of lower case alphanumeric characters, '-' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
  EXPECT_EQ(causes[1].value("message", ""),
            "Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')");
  EXPECT_EQ(causes[2].value("message", ""), "Invalid value: \"perfgate.io/" + long_name +
                                                "\": name part must be no more than 63 characters");
  EXPECT_THAT(status.value("message", ""),
              HasSubstr("ConfigMap \"plan\" is invalid: [metadata.labels: Invalid value: "
                        "\"Perfgate.IO/x\": prefix part a lowercase RFC 1123 subdomain"));

  // On update: a name part that does not end alphanumeric; 63 characters are fine.
  auto label_node = [&](const std::string& key) {
    return Kubectl(*sim_, {"patch", "node", "node-0", "--type=merge", "-p",
                           R"({"metadata":{"labels":{")" + key + R"(":"x"}}})"});
  };
  r = label_node("perfgate.io/-bad");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("The Node \"node-0\" is invalid: metadata.labels: Invalid value: "
                               "\"perfgate.io/-bad\": " +
                               std::string(kNamePartError)));
  r = label_node("perfgate.io/" + std::string(63, 'k'));
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

// Names of most kinds are DNS-1123 subdomains, checked with the labels in one answer (ObjectMeta
// validation): every broken rule is a cause, in kube-apiserver's words.
TEST_F(KubectlTest, NamesAreDnsSubdomainsCheckedWithTheLabels) {
  auto r = Kubectl(*sim_, {"create", "-v=9", "-f", "-"},
                   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Plan_A, namespace: default, "
                   "labels: {perfgate.io/-x: v}}\ndata: {k: v}\n");
  EXPECT_NE(r.exitCode, 0);
  const Json status = LastStatusBody(r.err);
  ASSERT_TRUE(status.is_object());
  EXPECT_EQ(status.value("code", 0), 422);
  EXPECT_EQ(status.value("reason", ""), "Invalid");
  const std::string name_error =
      "Invalid value: \"Plan_A\": a lowercase RFC 1123 subdomain must consist of lower case "
      "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
      "character (e.g. 'example.com', regex used for validation is "
      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  EXPECT_EQ(
      status["details"]["causes"],
      Json::array(
          {{{"reason", "FieldValueInvalid"}, {"field", "metadata.name"}, {"message", name_error}},
           {{"reason", "FieldValueInvalid"},
            {"field", "metadata.labels"},
            {"message", "Invalid value: \"perfgate.io/-x\": " + std::string(kNamePartError)}}}));
  EXPECT_EQ(status.value("message", ""),
            "ConfigMap \"Plan_A\" is invalid: [metadata.name: " + name_error +
                ", metadata.labels: Invalid value: " + "\"perfgate.io/-x\": " + kNamePartError +
                "]");
}

// Annotation keys are qualified names whatever their case, and all of an object's annotations
// (keys and values) hold at most 256 KiB: ValidateAnnotations' FieldValueInvalid and
// FieldValueTooLong, in kube-apiserver's words.
TEST_F(KubectlTest, AnnotationKeysAndTotalSizeAreValidated) {
  const std::string key = "perfgate.io/report";
  auto configmap = [&](const std::string& annotations) {
    return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: default\n"
           "  annotations:\n" +
           annotations + "data: {k: v}\n";
  };
  // 262144 bytes in all: at the limit, accepted.
  auto r =
      Kubectl(*sim_, {"create", "-f", "-"},
              configmap("    " + key + ": \"" + std::string(262144 - key.size(), 'x') + "\"\n"));
  ASSERT_EQ(r.exitCode, 0) << r.err.substr(0, 500);
  ASSERT_EQ(Kubectl(*sim_, {"delete", "configmap", "big"}).exitCode, 0);
  // One byte more.
  r = Kubectl(*sim_, {"create", "-v=9", "-f", "-"},
              configmap("    " + key + ": \"" + std::string(262145 - key.size(), 'x') + "\"\n"));
  EXPECT_NE(r.exitCode, 0);
  Json status = LastStatusBody(r.err);
  ASSERT_TRUE(status.is_object());
  EXPECT_EQ(status.value("code", 0), 422);
  EXPECT_EQ(status.value("reason", ""), "Invalid");
  EXPECT_EQ(status["details"]["causes"],
            Json::parse(R"([{"reason": "FieldValueTooLong", "field": "metadata.annotations",
                             "message": "Too long: may not be more than 262144 bytes"}])"));
  EXPECT_EQ(status.value("message", ""),
            "ConfigMap \"big\" is invalid: metadata.annotations: Too long: may not be more than "
            "262144 bytes");
  EXPECT_FALSE(sim_->Get("", "configmaps", "default", "big").ok());

  // Keys: the case of a prefix does not matter; an empty name part does.
  r = Kubectl(*sim_, {"create", "-v=9", "-f", "-"},
              configmap("    Example.COM/Key: fine\n    perfgate.io/: v\n"));
  EXPECT_NE(r.exitCode, 0);
  status = LastStatusBody(r.err);
  ASSERT_TRUE(status.is_object());
  EXPECT_EQ(status.value("code", 0), 422);
  EXPECT_EQ(status["details"]["causes"],
            Json::parse(R"([{"reason": "FieldValueInvalid", "field": "metadata.annotations",
                             "message": "Invalid value: \"perfgate.io/\": name part must be non-empty"},
                            {"reason": "FieldValueInvalid", "field": "metadata.annotations",
                             "message": "Invalid value: \"perfgate.io/\": )" +
                        std::string(kNamePartError) + R"("}])"));
  r = Kubectl(*sim_, {"create", "-f", "-"}, configmap("    Example.COM/Key: fine\n"));
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

// OwnerReferencesPermissionEnforcement (Options::ownerReferencesPermissionEnforcement, as in
// OpenShift): a user who may only create results may own one by a validation, but may not set
// blockOwnerDeletion on it without update on the validation's finalizers.
// The audit log (Options::auditLogPath) names the refused request and the finalizers check the
// plugin made for it, so a test can tell which permissions a caller really needed.
TEST(KubectlOwnerReferences, BlockOwnerDeletionNeedsUpdateOnTheOwnersFinalizers) {
  Options o;
  o.ownerReferencesPermissionEnforcement = true;
  o.workDir = ::testing::TempDir() + "/owner-references";
  o.auditLogPath = o.workDir + "/audit.log";
  KubeSim sim(o);
  ASSERT_TRUE(sim.Start().ok());
  for (const char* crd : {"/perfvalidation-crd.yaml", "/perfresult-crd.yaml"}) {
    auto r = Kubectl(sim, {"apply", "-f", kTestdata + crd});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  auto r = Kubectl(sim, {"apply", "-f", "-"}, R"(apiVersion: v1
kind: ServiceAccount
metadata: {name: writer, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: writer, namespace: default}
rules: [{apiGroups: [perfgate.io], resources: [perfresults], verbs: [create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: writer, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: writer}
subjects: [{kind: ServiceAccount, name: writer, namespace: default}]
)");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(Eventually([&] {
    return Kubectl(sim, {"apply", "-f", "-"},
                   "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nmetadata: {name: "
                   "owner}\nspec: {level: quick}\n")
               .exitCode == 0;
  }));
  const std::string uid =
      (*sim.Get("perfgate.io", "perfvalidations", "", "owner"))["metadata"].value("uid", "");
  r = Kubectl(sim, {"create", "token", "writer"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string token = r.out.substr(0, r.out.find('\n'));
  auto create = [&](const std::string& name, const std::string& block) {
    return Kubectl(
        sim, {"--token=" + token, "create", "-f", "-"},
        "apiVersion: perfgate.io/v1alpha1\nkind: PerfResult\nmetadata:\n  name: " + name +
            "\n  namespace: default\n  ownerReferences:\n  - {apiVersion: "
            "perfgate.io/v1alpha1, kind: PerfValidation, name: owner, uid: " +
            uid + block + "}\nspec: {nodeName: node-0, verdict: PASS}\n");
  };
  r = create("blocking", ", blockOwnerDeletion: true");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("perfresults.perfgate.io \"blocking\" is forbidden: cannot set "
                               "blockOwnerDeletion if an ownerReference refers to a resource you "
                               "can't set finalizers on"));
  EXPECT_FALSE(sim.Get("perfgate.io", "perfresults", "default", "blocking").ok());
  r = create("owned", "");
  EXPECT_EQ(r.exitCode, 0) << r.err;

  // RBAC allowed both creates; the plugin's finalizers check refused the first.
  std::vector<Json> creates;
  std::istringstream audit(testing::Slurp(o.auditLogPath));
  for (std::string line; std::getline(audit, line);) {
    Json e = Json::parse(line);
    if (e["user"].value("username", "") == "system:serviceaccount:default:writer" &&
        e.value("verb", "") == "create") {
      creates.push_back(e);
    }
  }
  ASSERT_EQ(creates.size(), 2u);
  EXPECT_EQ(creates[0]["objectRef"].value("resource", ""), "perfresults");
  EXPECT_EQ(creates[0]["objectRef"].value("apiGroup", ""), "perfgate.io");
  EXPECT_EQ(creates[0]["objectRef"].value("namespace", ""), "default");
  EXPECT_EQ(creates[0]["responseStatus"].value("code", 0), 403);
  EXPECT_EQ(creates[0]["annotations"].value("authorization.k8s.io/decision", ""), "allow");
  EXPECT_EQ(creates[0]["admissionAuthorizations"],
            Json::parse(R"([{"verb": "update", "apiGroup": "perfgate.io",
                "resource": "perfvalidations", "subresource": "finalizers",
                "namespace": "default", "name": "owner", "allowed": false}])"));
  EXPECT_EQ(creates[1]["responseStatus"].value("code", 0), 201);
  EXPECT_FALSE(creates[1].contains("admissionAuthorizations"));
  // A request RBAC refuses says so.
  r = Kubectl(sim, {"--token=" + token, "get", "perfresults", "-n", "default"});
  EXPECT_NE(r.exitCode, 0);
  std::string last;
  std::istringstream again(testing::Slurp(o.auditLogPath));
  for (std::string line; std::getline(again, line);) last = line;
  const Json list = Json::parse(last);
  EXPECT_EQ(list.value("verb", ""), "list");
  EXPECT_EQ(list["responseStatus"].value("code", 0), 403);
  EXPECT_EQ(list["annotations"].value("authorization.k8s.io/decision", ""), "forbid");
}

// As kube-apiserver with its default admission plugins and the node lifecycle controller: a new
// Node is tainted node.kubernetes.io/not-ready:NoSchedule (TaintNodesByCondition) and no pod is
// scheduled there until its Ready condition is True, when the taint goes; a Node is always
// served with a spec, {} when it has nothing in it.
TEST_F(KubectlTest, NewNodesAreTaintedNotReadyUntilTheyReportReady) {
  auto r = Kubectl(*sim_, {"create", "-f", "-"},
                   "apiVersion: v1\nkind: Node\nmetadata: {name: fresh, labels: "
                   "{kubernetes.io/hostname: fresh}}\n");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto taints = [&] {
    return Kubectl(*sim_, {"get", "node", "fresh", "-o", "jsonpath={.spec.taints}"}).out;
  };
  EXPECT_EQ(taints(), R"([{"effect":"NoSchedule","key":"node.kubernetes.io/not-ready"}])");
  r = Kubectl(*sim_, {"apply", "-f", "-"},
              "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  "
              "nodeSelector: {kubernetes.io/hostname: fresh}\n  containers: [{name: c, image: "
              "busybox:1.36}]\n");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto pod_condition = [&] {
    return Kubectl(*sim_, {"get", "pod", "p", "-o",
                           "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}"})
        .out;
  };
  ASSERT_TRUE(Eventually([&] { return !pod_condition().empty(); })) << pod_condition();
  EXPECT_THAT(pod_condition(), HasSubstr("1 node(s) had untolerated taint"));
  EXPECT_THAT(pod_condition(), HasSubstr("node.kubernetes.io/not-ready"));

  Json node = *sim_->Get("", "nodes", "", "fresh");
  node["status"]["conditions"] = Json::array({{{"type", "Ready"}, {"status", "True"}}});
  ASSERT_TRUE(sim_->Update("", "nodes", node, /*status=*/true).ok());
  ASSERT_TRUE(Eventually([&] { return taints().empty(); })) << taints();
  EXPECT_EQ(Kubectl(*sim_, {"get", "node", "fresh", "-o", "jsonpath={.spec}"}).out, "{}");
  EXPECT_TRUE(Eventually([&] {
    return Kubectl(*sim_, {"get", "pod", "p", "-o", "jsonpath={.spec.nodeName}"}).out == "fresh";
  }));
  // A node that stops reporting Ready is tainted again, by the node lifecycle controller this
  // time, which stamps the taint with timeAdded (SwapNodeControllerTaint); admission does not.
  node = *sim_->Get("", "nodes", "", "fresh");
  node["status"]["conditions"] = Json::array({{{"type", "Ready"}, {"status", "False"}}});
  ASSERT_TRUE(sim_->Update("", "nodes", node, /*status=*/true).ok());
  EXPECT_TRUE(Eventually([&] {
    return Kubectl(*sim_, {"get", "node", "fresh", "-o",
                           "jsonpath={.spec.taints[*].key}:{.spec.taints[*].effect}"})
               .out == "node.kubernetes.io/not-ready:NoSchedule";
  })) << taints();
  const Json tainted = sim_->Get("", "nodes", "", "fresh")->at("spec").at("taints");
  ASSERT_EQ(tainted.size(), 1u);
  EXPECT_THAT(tainted[0].value("timeAdded", ""),
              ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T.*Z"));
}

// Pod Security Admission from the namespace's pod-security.kubernetes.io/enforce label, in the
// plugin's words: restricted refuses a pod that sets nothing, baseline refuses an added
// IPC_LOCK, and a pod that meets restricted is admitted.
TEST_F(KubectlTest, PodSecurityLevelsFromNamespaceLabels) {
  auto r = Kubectl(*sim_, {"apply", "-f", "-"}, R"(apiVersion: v1
kind: Namespace
metadata: {name: strict, labels: {pod-security.kubernetes.io/enforce: restricted}}
---
apiVersion: v1
kind: Namespace
metadata: {name: base, labels: {pod-security.kubernetes.io/enforce: baseline}}
)");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(Eventually([&] {
    return sim_->Get("", "serviceaccounts", "strict", "default").ok() &&
           sim_->Get("", "serviceaccounts", "base", "default").ok();
  }));
  auto pod = [](const std::string& ns, const std::string& pod_sc, const std::string& sc) {
    return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: " + ns +
           "}\nspec:\n  securityContext: " + pod_sc +
           "\n  containers:\n  - {name: worker, image: busybox:1.36, securityContext: " + sc +
           "}\n";
  };
  r = Kubectl(*sim_, {"apply", "-f", "-"}, pod("strict", "{}", "{}"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(
      r.err,
      HasSubstr("pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": "
                "allowPrivilegeEscalation != false (container \"worker\" must set "
                "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities "
                "(container \"worker\" must set securityContext.capabilities.drop=[\"ALL\"]), "
                "runAsNonRoot != true (pod or container \"worker\" must set "
                "securityContext.runAsNonRoot=true), seccompProfile (pod or container \"worker\" "
                "must set securityContext.seccompProfile.type to \"RuntimeDefault\" or "
                "\"Localhost\")"));
  r = Kubectl(*sim_, {"apply", "-f", "-"}, pod("base", "{}", "{capabilities: {add: [IPC_LOCK]}}"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("pods \"p\" is forbidden: violates PodSecurity "
                               "\"baseline:latest\": non-default capabilities (container "
                               "\"worker\" must not include \"IPC_LOCK\" in "
                               "securityContext.capabilities.add)"));
  r = Kubectl(*sim_, {"apply", "-f", "-"},
              pod("strict",
                  "{runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}",
                  "{allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}"));
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

// ValidatingAdmissionPolicies are enforced as kube-apiserver enforces them: a binding with
// Deny, the resource rules and namespace selector, match conditions, variables, the message
// (or messageExpression) and reason of the first failed validation, and failurePolicy on an
// expression that errors. A policy that does not compile is refused.
TEST_F(KubectlTest, ValidatingAdmissionPolicyDeniesWithItsMessage) {
  const std::string policy = R"yaml(apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-secrets-in-configmaps}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE", "UPDATE"]
        resources: ["configmaps"]
  matchConditions:
    - name: not-admin-tools
      expression: "!has(object.metadata.labels) || !('tool' in object.metadata.labels)"
  variables:
    - name: keys
      expression: "has(object.data) ? object.data : {}"
  validations:
    - expression: "!('password' in variables.keys)"
      messageExpression: "'configmap ' + object.metadata.name + ' holds a password'"
      reason: Forbidden
    - expression: "request.operation != 'UPDATE' || oldObject.data.size() <= object.data.size()"
      message: "keys may only be added"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-secrets-in-configmaps}
spec:
  policyName: no-secrets-in-configmaps
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {guarded: "yes"}
)yaml";
  auto r = Kubectl(*sim_, {"apply", "-f", "-"}, policy);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_EQ(Kubectl(*sim_, {"create", "namespace", "g"}).exitCode, 0);
  ASSERT_EQ(Kubectl(*sim_, {"label", "namespace", "g", "guarded=yes"}).exitCode, 0);
  ASSERT_EQ(Kubectl(*sim_, {"create", "namespace", "free"}).exitCode, 0);

  r = Kubectl(*sim_, {"-n", "g", "create", "configmap", "c1", "--from-literal=password=x"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("configmaps \"c1\" is forbidden: ValidatingAdmissionPolicy "
                               "'no-secrets-in-configmaps' with binding "
                               "'no-secrets-in-configmaps' denied request: configmap c1 holds a "
                               "password"));
  // Outside the bound namespaces, and for objects the match condition leaves out: admitted.
  EXPECT_EQ(Kubectl(*sim_, {"-n", "free", "create", "configmap", "c1", "--from-literal=password=x"})
                .exitCode,
            0);
  r = Kubectl(*sim_, {"-n", "g", "apply", "-f", "-"},
              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t, labels: {tool: x}}\n"
              "data: {password: x}\n");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  // UPDATE sees oldObject; the reason defaults to Invalid (422).
  ASSERT_EQ(Kubectl(*sim_, {"-n", "g", "create", "configmap", "c2", "--from-literal=a=1",
                            "--from-literal=b=2"})
                .exitCode,
            0);
  r = Kubectl(*sim_, {"-n", "g", "patch", "configmap", "c2", "--type=json", "-p",
                      R"([{"op":"remove","path":"/data/b"}])"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("is invalid"));
  EXPECT_THAT(r.err, HasSubstr("denied request: keys may only be added"));

  // An expression that errors (no data at all: oldObject.data is missing) fails closed.
  ASSERT_EQ(Kubectl(*sim_, {"-n", "g", "create", "configmap", "empty"}).exitCode, 0);
  r = Kubectl(*sim_, {"-n", "g", "label", "configmap", "empty", "x=y"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("resulted in error: no such key: data"));

  // A policy whose expression does not compile is refused at once.
  r = Kubectl(*sim_, {"apply", "-f", "-"},
              "apiVersion: admissionregistration.k8s.io/v1\n"
              "kind: ValidatingAdmissionPolicy\n"
              "metadata: {name: broken}\n"
              "spec:\n"
              "  matchConstraints: {resourceRules: [{apiGroups: [''], apiVersions: [v1], "
              "operations: [CREATE], resources: [pods]}]}\n"
              "  validations: [{expression: \"object.spec.nodeName ==\"}]\n");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("spec.validations[0].expression"));
  EXPECT_THAT(r.err, HasSubstr("compilation failed"));
}

}  // namespace
}  // namespace perfgate::kubesim
