// Resilience end to end: an operator killed while its workers run is taken over without a
// second pod, and two replicas through a frozen API server never both write.
#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

using Clock = std::chrono::system_clock;

bool IsWrite(const kubesim::RequestRecord& r) {
  return r.verb == "create" || r.verb == "update" || r.verb == "patch" || r.verb == "delete" ||
         r.verb == "deletecollection";
}

double SecondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Each node's verdict as its PerfResult says, and who wrote it.
std::map<std::string, std::string> NodeVerdicts(const std::vector<Json>& results) {
  std::map<std::string, std::string> out;
  for (const auto& r : results) {
    out[r["spec"].value("nodeName", "")] =
        r["spec"]["report"].value("verdict", "") + " by " + r["spec"].value("writtenBy", "worker");
  }
  return out;
}

// The synthetic fixture's ground truth on the four nodes: node-1 is slow (50 GB/s against
// >= 90) and FAILs, the others PASS, each written by its own worker.
const std::map<std::string, std::string> kNode1Slow = {{"node-0", "PASS by worker"},
                                                       {"node-1", "FAIL by worker"},
                                                       {"node-2", "PASS by worker"},
                                                       {"node-3", "PASS by worker"}};

std::string LeaderHolder(kubesim::KubeSim& sim) {
  auto lease = sim.Get("coordination.k8s.io", "leases", kNs, "perfgate-operator-leader");
  if (!lease.ok()) return "";
  return (*lease)["spec"].value("holderIdentity", "");
}

int PodCreates(const kubesim::KubeSim& sim) {
  int n = 0;
  for (const auto& r : sim.Requests()) {
    if (r.verb == "create" && r.resource == "pods" && r.code == 201) n++;
  }
  return n;
}

}  // namespace

// SIGKILL while every worker still samples (about 30 s each, longer than the 15 s lease plus
// the restart), then a new operator: it waits out the dead leader's lease, takes over the
// running pods without creating any again, and the verdicts are the fault-free ones. Prints
// the takeover time: from the restart to the lease changing hands, and to the new leader's
// first write.
TEST_F(E2E, OperatorKilledWhileItsPodsRunIsTakenOverWithoutASecondPod) {
  Apply(SyntheticSpec("takeover", "node-1=50", "    onFailure: taint\n", "", "5"));
  ASSERT_TRUE(Eventually(
      [&] {
        auto pods = Pods("takeover");
        return pods.size() == 4 && std::all_of(pods.begin(), pods.end(), [](const Json& p) {
                 return p.value("status", Json::object()).value("phase", "") == "Running";
               });
      },
      60));
  const std::string old_leader = LeaderHolder(*sim_);
  ASSERT_FALSE(old_leader.empty());
  op_.Kill(SIGKILL);
  const auto restarted = Clock::now();
  op_.Start(*sim_);

  // Wait for the lease to change hands; see what runs at that moment.
  std::string new_leader;
  ASSERT_TRUE(Eventually(
      [&] {
        new_leader = LeaderHolder(*sim_);
        return !new_leader.empty() && new_leader != old_leader;
      },
      60));
  const auto acquired = Clock::now();
  int running_at_takeover = 0;
  for (const auto& p : Pods("takeover")) {
    running_at_takeover += p.value("status", Json::object()).value("phase", "") == "Running";
  }
  EXPECT_EQ(running_at_takeover, 4) << "the workers must still run when the new leader takes over";

  ASSERT_TRUE(WaitComplete("takeover"));
  // The new leader's first write other than its lease: the test itself writes nothing here.
  Clock::time_point first_act{};
  for (const auto& r : sim_->Requests()) {
    if (r.user == "kubernetes-admin" && IsWrite(r) && r.time > restarted &&
        r.name != "perfgate-operator-leader") {
      first_act = r.time;
      break;
    }
  }
  ASSERT_NE(first_act, Clock::time_point{}) << "the new leader never wrote";
  std::cerr << "takeover: lease acquired " << SecondsBetween(restarted, acquired)
            << " s after the restart, first write " << SecondsBetween(restarted, first_act)
            << " s after it; " << running_at_takeover << " of 4 workers running then\n";

  EXPECT_EQ(NodeVerdicts(Results("takeover")), kNode1Slow);
  EXPECT_EQ(PodCreates(*sim_), 4) << "a pod was created twice";
  EXPECT_EQ(Pods("takeover").size(), 4u);
  Json v = Validation("takeover");
  EXPECT_EQ(v["status"].value("passedNodes", ""), "3/4") << v.dump(2);
  EXPECT_TRUE(HasPerfgateTaint(Node("node-1")));
}

// Two replicas, each with its own service account (how an audit log tells them apart), and
// the API server frozen for 20 s while the leader's workers run: longer than the 15 s lease.
// The leader stops by its clock 10 s after its last renewal, while the API still answers
// nothing; the other replica leads only after the thaw. In the API server's request records,
// the two never have writes in overlapping windows, and the validation ends with the fault-free
// verdicts.
TEST_F(E2E, TwoReplicasThroughAFrozenApiServerNeverBothWrite) {
  op_.Kill(SIGTERM);  // the fixture's replica; two of our own instead
  const std::string kubeconfig = kubesim::testing::Slurp(sim_->kubeconfigPath());
  const std::string token_key = "token: ";
  const auto token_at = kubeconfig.find(token_key);
  ASSERT_NE(token_at, std::string::npos);
  const auto token_end = kubeconfig.find('\n', token_at);
  std::map<std::string, std::string> kubeconfigs;  // service account -> kubeconfig path
  for (const std::string sa : {"operator-a", "operator-b"}) {
    Apply("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: " + sa +
          "\n  namespace: perfgate-system\n---\n"
          "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n"
          "  name: " +
          sa +
          "\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n"
          "  name: cluster-admin\nsubjects:\n  - kind: ServiceAccount\n    name: " +
          sa + "\n    namespace: perfgate-system\n");
    auto token = sim_->IssueServiceAccountToken(kNs, sa);
    ASSERT_TRUE(token.ok());
    std::string mine = kubeconfig;
    mine.replace(token_at + token_key.size(), token_end - token_at - token_key.size(), *token);
    const std::string path = sim_->workDir() + "/" + sa + ".kubeconfig";
    std::ofstream(path) << mine;
    kubeconfigs[sa] = path;
  }
  const std::string user_a = "system:serviceaccount:perfgate-system:operator-a";
  const std::string user_b = "system:serviceaccount:perfgate-system:operator-b";

  // The lease the fixture's replica released is free: A takes it, then B stands by.
  OperatorProcess a;
  OperatorProcess b;
  a.Start(*sim_, {"--kubeconfig=" + kubeconfigs["operator-a"]});
  ASSERT_TRUE(Eventually([&] { return a.Log().find("became leader") != std::string::npos; }, 30));
  b.Start(*sim_, {"--kubeconfig=" + kubeconfigs["operator-b"]});
  ASSERT_TRUE(Eventually([&] { return b.Log().find("trying to acquire") != std::string::npos; }));

  // About 12 s of sampling per node: the freeze starts while every worker runs.
  Apply(SyntheticSpec("frozen", "node-1=50", "    onFailure: taint\n", "", "2"));
  ASSERT_TRUE(Eventually(
      [&] {
        auto pods = Pods("frozen");
        return pods.size() == 4 && std::all_of(pods.begin(), pods.end(), [](const Json& p) {
                 return p.value("status", Json::object()).value("phase", "") == "Running";
               });
      },
      60));
  sim_->SetFrozen(true);
  const auto frozen_at = Clock::now();
  std::this_thread::sleep_until(frozen_at + std::chrono::seconds(20));
  // Before the thaw: A has stopped by its clock (exit 1), though no request of it came back.
  const std::string a_log = a.Log();
  EXPECT_NE(a_log.find("stopped leading: the lease could not be renewed in time"),
            std::string::npos)
      << a_log;
  EXPECT_EQ(a.Kill(SIGKILL), 1) << "the leader was still running at the end of the freeze";
  EXPECT_TRUE(b.Log().find("became leader") == std::string::npos);
  sim_->SetFrozen(false);
  const auto thawed = Clock::now();

  ASSERT_TRUE(WaitComplete("frozen", 120)) << b.Log();
  EXPECT_EQ(NodeVerdicts(Results("frozen")), kNode1Slow);
  EXPECT_EQ(PodCreates(*sim_), 4);

  // Writes the API server stored (2xx), per replica: A's all end before B's first.
  std::map<std::string, std::pair<Clock::time_point, Clock::time_point>> window;  // user ->
  std::map<std::string, int> writes;
  for (const auto& r : sim_->Requests()) {
    if ((r.user != user_a && r.user != user_b) || !IsWrite(r) || r.code < 200 || r.code >= 300) {
      continue;
    }
    auto [it, fresh] = window.try_emplace(r.user, r.time, r.time);
    if (!fresh) it->second.second = r.time;
    writes[r.user]++;
  }
  ASSERT_EQ(window.count(user_a), 1u);
  ASSERT_EQ(window.count(user_b), 1u) << "the second replica never led";
  const auto& wa = window[user_a];
  const auto& wb = window[user_b];
  std::cerr << "replica A: " << writes[user_a] << " writes, the last "
            << SecondsBetween(frozen_at, wa.second)
            << " s after the freeze began; replica B: " << writes[user_b] << " writes, the first "
            << SecondsBetween(thawed, wb.first) << " s after the thaw\n";
  EXPECT_LT(wa.second, wb.first) << "both replicas wrote in overlapping windows";
  b.Kill(SIGTERM);
}

}  // namespace perfgate::e2e
