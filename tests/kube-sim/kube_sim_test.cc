// kube-sim's API machinery seen through the real kubectl: authentication, watches with
// bookmarks and expiry, paging, fault injection, finalizers and foreground deletion.
#include "tests/kube-sim/kube_sim.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "tests/kube-sim/test_util.h"

namespace perfgate::kubesim {
namespace {

using ::testing::ContainsRegex;
using testing::Eventually;
using ::testing::HasSubstr;
using testing::Kubectl;
using ::testing::Not;

Json ConfigMap(const std::string& name, Json extraMeta = Json::object()) {
  Json md = {{"name", name}, {"namespace", "default"}};
  md.update(extraMeta);
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", md}, {"data", {{"k", "v"}}}};
}

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Options o;
    o.bookmarkIntervalSeconds = 0.2;
    sim_ = std::make_unique<KubeSim>(o);
    ASSERT_TRUE(sim_->Start().ok());
  }
  std::unique_ptr<KubeSim> sim_;
};

TEST_F(ApiTest, KubeconfigCarriesTheRealPortAndUnknownTokensGet401) {
  EXPECT_THAT(testing::Slurp(sim_->kubeconfigPath()), HasSubstr("server: " + sim_->url()));
  EXPECT_NE(sim_->port(), 0);
  auto r = Kubectl(*sim_, {"get", "namespaces", "-o", "name"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("namespace/default"));
  r = Kubectl(*sim_, {"--token=not-a-token", "get", "pods"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("Unauthorized"));
}

TEST_F(ApiTest, WatchFromAResourceVersionSendsLaterEventsAndBookmarks) {
  ASSERT_TRUE(sim_->Create("", "configmaps", ConfigMap("before")).ok());
  uint64_t from = sim_->resourceVersion();
  ASSERT_TRUE(sim_->Create("", "configmaps", ConfigMap("c1", {{"labels", {{"app", "x"}}}})).ok());
  Json c1 = *sim_->Get("", "configmaps", "default", "c1");
  c1["data"]["k"] = "w";
  ASSERT_TRUE(sim_->Update("", "configmaps", c1).ok());
  ASSERT_TRUE(sim_->Delete("", "configmaps", "default", "c1").ok());
  auto r = Kubectl(*sim_, {"get", "--raw",
                           "/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true&"
                           "timeoutSeconds=1&resourceVersion=" +
                               std::to_string(from)});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("\"before\"")));
  EXPECT_THAT(r.out, ContainsRegex("\"type\":\"ADDED\".*\"name\":\"c1\""));
  EXPECT_THAT(r.out, ContainsRegex("\"type\":\"MODIFIED\".*\"k\":\"w\""));
  EXPECT_THAT(r.out, ContainsRegex("\"type\":\"DELETED\".*\"name\":\"c1\""));
  EXPECT_THAT(r.out, HasSubstr("\"type\":\"BOOKMARK\""));
  // A label selector turns a change out of the selection into DELETED for that watcher.
  ASSERT_TRUE(sim_->Create("", "configmaps", ConfigMap("c2", {{"labels", {{"app", "x"}}}})).ok());
  uint64_t afterCreate = sim_->resourceVersion();
  Json c2 = *sim_->Get("", "configmaps", "default", "c2");
  c2["metadata"]["labels"]["app"] = "y";
  ASSERT_TRUE(sim_->Update("", "configmaps", c2).ok());
  r = Kubectl(*sim_, {"get", "--raw",
                      "/api/v1/namespaces/default/"
                      "configmaps?watch=1&timeoutSeconds=1&labelSelector=app%3Dx&resourceVersion=" +
                          std::to_string(afterCreate)});
  EXPECT_THAT(r.out, ContainsRegex("\"type\":\"DELETED\".*\"name\":\"c2\""));
}

TEST_F(ApiTest, ExpiredResourceVersionsAnswerLikeKubeApiserver) {
  ASSERT_TRUE(sim_->Create("", "configmaps", ConfigMap("a")).ok());
  ASSERT_TRUE(sim_->Create("", "configmaps", ConfigMap("b")).ok());
  uint64_t old = sim_->resourceVersion();
  auto page = Kubectl(*sim_, {"get", "--raw", "/api/v1/namespaces/default/configmaps?limit=1"});
  ASSERT_EQ(page.exitCode, 0) << page.err;
  Json first = Json::parse(page.out);
  ASSERT_TRUE(first["metadata"].contains("continue"));
  EXPECT_EQ(first["items"].size(), 1u);
  auto next = Kubectl(*sim_, {"get", "--raw",
                              "/api/v1/namespaces/default/configmaps?limit=1&continue=" +
                                  first["metadata"]["continue"].get<std::string>()});
  ASSERT_EQ(next.exitCode, 0) << next.err;
  EXPECT_NE(Json::parse(next.out)["items"][0]["metadata"]["name"],
            first["items"][0]["metadata"]["name"]);

  ASSERT_TRUE(sim_->Create("", "configmaps", ConfigMap("c")).ok());
  sim_->ExpireWatchHistory();
  auto r = Kubectl(
      *sim_, {"get", "--raw",
              "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1&resourceVersion=" +
                  std::to_string(old)});
  ASSERT_EQ(r.exitCode, 0) << r.err;  // HTTP 200 with an ERROR event, as kube-apiserver does
  Json ev = Json::parse(r.out.substr(0, r.out.find('\n')));
  EXPECT_EQ(ev["type"], "ERROR");
  EXPECT_EQ(ev["object"]["code"], 410);
  EXPECT_EQ(ev["object"]["reason"], "Expired");
  EXPECT_EQ(ev["object"]["message"], "too old resource version: " + std::to_string(old) + " (" +
                                         std::to_string(sim_->resourceVersion()) + ")");
  r = Kubectl(*sim_, {"get", "--raw",
                      "/api/v1/namespaces/default/configmaps?limit=1&continue=" +
                          first["metadata"]["continue"].get<std::string>()});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err,
              HasSubstr("Error from server (Expired): The provided continue parameter is too old"));
}

TEST_F(ApiTest, InjectedFaultsReachTheClient) {
  sim_->ThrottleNextRequests(1, 1);
  auto r = Kubectl(*sim_, {"get", "--raw", "/api/v1/namespaces/default/configmaps"});
  EXPECT_EQ(r.exitCode, 0) << "client-go retries a 429 after Retry-After: " << r.err;
  int throttled = 0;
  for (const auto& rec : sim_->Requests()) throttled += rec.code == 429 ? 1 : 0;
  EXPECT_EQ(throttled, 1);

  sim_->FailNextRequests(1, 500);
  r = Kubectl(*sim_, {"get", "--raw", "/api/v1/namespaces/default/configmaps"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("Internal error occurred: injected by kube-sim"));

  // The admin endpoint does the same over HTTP, for a kube-sim in another process.
  r = Kubectl(*sim_, {"create", "--raw", "/kube-sim/faults", "-f", "-"},
              R"({"failNext":1,"failCode":503})");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = Kubectl(*sim_, {"get", "--raw", "/api/v1/namespaces/default/configmaps?limit=1",
                      "--request-timeout=2s"});
  EXPECT_NE(r.exitCode, 0);

  // A dropped watch ends at once instead of at its timeout.
  auto watch = std::async(std::launch::async, [&] {
    return Kubectl(
        *sim_, {"get", "--raw", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=30"});
  });
  ASSERT_TRUE(Eventually([&] {
    for (const auto& rec : sim_->Requests()) {
      if (rec.verb == "watch") return true;
    }
    return false;
  }));
  // The request is logged before its stream is registered: drop until the stream has gone.
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(Eventually([&] {
    sim_->DropWatches();
    return watch.wait_for(std::chrono::milliseconds(50)) == std::future_status::ready;
  }));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST_F(ApiTest, FinalizersHoldDeletionAndForegroundWaitsForDependents) {
  ASSERT_TRUE(
      sim_->Create("", "configmaps", ConfigMap("held", {{"finalizers", {"example.com/hold"}}}))
          .ok());
  auto r = Kubectl(*sim_, {"delete", "cm", "held", "--wait=false"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto held = sim_->Get("", "configmaps", "default", "held");
  ASSERT_TRUE(held.ok()) << "a finalizer keeps the object";
  EXPECT_TRUE((*held)["metadata"].contains("deletionTimestamp"));
  r = Kubectl(*sim_,
              {"patch", "cm", "held", "--type=merge", "-p", R"({"metadata":{"finalizers":null}})"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_FALSE(sim_->Get("", "configmaps", "default", "held").ok());

  Json owner = *sim_->Create("", "configmaps", ConfigMap("owner"));
  Json ref = {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"name", "owner"},
              {"uid", owner["metadata"]["uid"]},
              {"blockOwnerDeletion", true}};
  ASSERT_TRUE(sim_->Create("", "configmaps", ConfigMap("dep", {{"ownerReferences", {ref}}})).ok());
  r = Kubectl(*sim_, {"delete", "cm", "owner", "--cascade=foreground", "--timeout=10s"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_FALSE(sim_->Get("", "configmaps", "default", "owner").ok());
  EXPECT_FALSE(sim_->Get("", "configmaps", "default", "dep").ok());

  // Orphan propagation keeps the dependent and drops its owner reference.
  owner = *sim_->Create("", "configmaps", ConfigMap("owner2"));
  ref["name"] = "owner2";
  ref["uid"] = owner["metadata"]["uid"];
  ASSERT_TRUE(sim_->Create("", "configmaps", ConfigMap("dep2", {{"ownerReferences", {ref}}})).ok());
  r = Kubectl(*sim_, {"delete", "cm", "owner2", "--cascade=orphan", "--timeout=10s"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(Eventually([&] { return !sim_->Get("", "configmaps", "default", "owner2").ok(); }));
  auto dep2 = sim_->Get("", "configmaps", "default", "dep2");
  ASSERT_TRUE(dep2.ok());
  EXPECT_FALSE((*dep2)["metadata"].contains("ownerReferences"));
}

// Node claims rely on these two answers being exactly a real server's: a second create of a
// Lease is 409 AlreadyExists, an update carrying a resourceVersion that is no longer current is
// 409 Conflict.
TEST_F(ApiTest, LeaseCreateConflictAndStaleResourceVersionAreRefused) {
  const std::string lease =
      R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"claim-node-0","namespace":"default"},"spec":{"holderIdentity":"a/g1","leaseDurationSeconds":60}})";
  auto r = Kubectl(*sim_, {"create", "-f", "-", "-o", "json"}, lease);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string rv = Json::parse(r.out)["metadata"]["resourceVersion"];
  r = Kubectl(*sim_, {"create", "-f", "-"}, lease);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("Error from server (AlreadyExists): error when creating"));
  EXPECT_THAT(r.err, HasSubstr(R"(leases.coordination.k8s.io "claim-node-0" already exists)"));
  // Someone takes it over with the resourceVersion read...
  Json taken = Json::parse(lease);
  taken["metadata"]["resourceVersion"] = rv;
  taken["spec"]["holderIdentity"] = "b/g1";
  r = Kubectl(*sim_, {"replace", "-f", "-"}, taken.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // ...and a second taker with the same, now stale, resourceVersion loses.
  taken["spec"]["holderIdentity"] = "c/g1";
  r = Kubectl(*sim_, {"replace", "-f", "-"}, taken.dump());
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("Error from server (Conflict)"));
  EXPECT_THAT(
      r.err,
      HasSubstr(
          R"(Operation cannot be fulfilled on leases.coordination.k8s.io "claim-node-0": the object has been modified; please apply your changes to the latest version and try again)"));
  EXPECT_EQ((*sim_->Get("coordination.k8s.io", "leases", "default", "claim-node-0"))["spec"].value(
                "holderIdentity", ""),
            "b/g1");
}

TEST_F(ApiTest, GenerateNameLeasesAndServiceAccountTokens) {
  auto r = Kubectl(
      *sim_, {"create", "-f", "-", "-o", "name"},
      R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"generateName":"perfgate-","namespace":"default"},"spec":{"holderIdentity":"a","leaseDurationSeconds":15}})");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, ContainsRegex("^lease.coordination.k8s.io/perfgate-[a-z0-9]{5}\n$"));
  r = Kubectl(*sim_, {"create", "serviceaccount", "bot"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = Kubectl(*sim_, {"create", "token", "bot", "--duration=10m"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::string token = r.out.substr(0, r.out.find('\n'));
  r = Kubectl(*sim_, {"--token=" + token, "auth", "whoami"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("system:serviceaccount:default:bot"));
  r = Kubectl(
      *sim_, {"--token=" + token, "auth", "can-i", "create", "perfvalidations.perfgate.io/status"});
  EXPECT_EQ(r.out, "no\n");
  r = Kubectl(*sim_, {"--token=" + token, "get", "configmaps"});
  EXPECT_THAT(
      r.err,
      HasSubstr(
          "configmaps is forbidden: User \"system:serviceaccount:default:bot\" "
          "cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""));
  // The token dies with its service account.
  ASSERT_EQ(Kubectl(*sim_, {"delete", "serviceaccount", "bot"}).exitCode, 0);
  r = Kubectl(*sim_, {"--token=" + token, "get", "configmaps"});
  EXPECT_THAT(r.err, HasSubstr("Unauthorized"));
}

TEST_F(ApiTest, ResourceNamesRulesCoverGetsAndSingleNameListsOnly) {
  const std::string rbac = R"(apiVersion: v1
kind: ServiceAccount
metadata: {name: reader, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: one-configmap, namespace: default}
rules:
- apiGroups: [""]
  resources: [configmaps]
  resourceNames: [mine]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader-one-configmap, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: one-configmap}
subjects:
- {kind: ServiceAccount, name: reader, namespace: default}
)";
  ASSERT_EQ(Kubectl(*sim_, {"apply", "-f", "-"}, rbac).exitCode, 0);
  ASSERT_TRUE(sim_->Create("", "configmaps", ConfigMap("mine")).ok());
  ASSERT_TRUE(sim_->Create("", "configmaps", ConfigMap("other")).ok());
  auto token = sim_->IssueServiceAccountToken("default", "reader");
  ASSERT_TRUE(token.ok());
  std::string t = "--token=" + *token;
  EXPECT_EQ(Kubectl(*sim_, {t, "get", "cm", "mine", "-o", "name"}).out, "configmap/mine\n");
  auto r = Kubectl(*sim_, {t, "get", "cm", "other"});
  EXPECT_THAT(
      r.err,
      HasSubstr("configmaps \"other\" is forbidden: User \"system:serviceaccount:default:reader\" "
                "cannot get resource \"configmaps\""));
  r = Kubectl(*sim_, {t, "get", "--raw",
                      "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dmine"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  r = Kubectl(*sim_, {t, "get", "cm"});
  EXPECT_THAT(r.err, HasSubstr("cannot list resource \"configmaps\""));
}

}  // namespace
}  // namespace perfgate::kubesim
