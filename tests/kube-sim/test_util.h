// Helpers for kube-sim's integration tests: run the real kubectl against a KubeSim and wait
// for conditions without fixed sleeps.
#pragma once

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/kube-sim/kube_sim.h"

namespace perfgate::kubesim::testing {

struct CommandResult {
  int exitCode = -1;
  std::string out;
  std::string err;
};

inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs kubectl with the simulator's kubeconfig, a private HOME (so the discovery cache is the
// test's own) and optional stdin.
inline CommandResult Kubectl(const KubeSim& sim, const std::vector<std::string>& args,
                             const std::string& stdinText = "") {
  std::string dir = sim.workDir();
  static int counter = 0;
  std::string base = dir + "/kubectl-" + std::to_string(++counter);
  std::string cmd =
      "HOME=" + ShellQuote(dir) + " KUBECONFIG=" + ShellQuote(sim.kubeconfigPath()) + " kubectl";
  for (const auto& a : args) cmd += " " + ShellQuote(a);
  if (!stdinText.empty()) {
    std::ofstream(base + ".in") << stdinText;
    cmd += " < " + ShellQuote(base + ".in");
  } else {
    cmd += " < /dev/null";
  }
  cmd += " > " + ShellQuote(base + ".out") + " 2> " + ShellQuote(base + ".err");
  int rc = std::system(cmd.c_str());
  CommandResult r;
  r.exitCode = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = Slurp(base + ".out");
  r.err = Slurp(base + ".err");
  return r;
}

// Polls `pred` until it holds or `timeoutSeconds` pass; true when it held.
inline bool Eventually(const std::function<bool()>& pred, double timeoutSeconds = 10) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<long>(timeoutSeconds * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

// The PerfResult a worker pod of the operator would write, for scale mode (no worker runs): named,
// labelled and owned as the pod is, with `worst` and `report` as its spec says.
inline Json ResultOfPod(const Json& pod, const std::string& worst, Json report) {
  const Json labels = pod["metadata"].value("labels", Json::object());
  const std::string node = pod["spec"].value("nodeName", "");
  Json result = {{"apiVersion", "perfgate.io/v1alpha1"},
                 {"kind", "PerfResult"},
                 {"metadata",
                  {{"name", pod["metadata"].value("name", "")},
                   {"namespace", pod["metadata"].value("namespace", "")},
                   {"labels",
                    {{"perfgate.io/validation", labels.value("perfgate.io/validation", "")},
                     {"perfgate.io/node", node},
                     {"perfgate.io/run", labels.value("perfgate.io/run", "")}}},
                   {"ownerReferences", pod["metadata"]["ownerReferences"]}}},
                 {"spec",
                  {{"validation", labels.value("perfgate.io/validation", "")},
                   {"nodeName", node},
                   {"run", labels.value("perfgate.io/run", "")},
                   {"worst", worst},
                   {"report", std::move(report)}}}};
  // A result is owned by the validation, not controlled by it.
  result["metadata"]["ownerReferences"][0].erase("controller");
  return result;
}

}  // namespace perfgate::kubesim::testing
