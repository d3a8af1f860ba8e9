// kube-sim: a loopback Kubernetes API server for tests (see docs/kube-sim.md).
//   kube-sim --listen 127.0.0.1:0 --kubeconfig-out PATH [--nodes N] [--gpus-per-node G]
//            [--gpu-product NAME] [--image-map IMAGE=BINARY ...] [--scale-mode] [--verbose]
//            [--owner-references-permission-enforcement] [--audit-log PATH]
// Serves until SIGTERM or SIGINT.
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "tests/kube-sim/kube_sim.h"

namespace {

int Usage(const char* why) {
  std::fprintf(stderr,
               "kube-sim: %s\nusage: kube-sim --listen HOST:PORT --kubeconfig-out PATH "
               "[--nodes N] [--gpus-per-node G] [--gpu-product NAME] "
               "[--image-map IMAGE=BINARY ...] [--scale-mode] [--work-dir DIR] [--verbose]\n"
               "       [--owner-references-permission-enforcement] [--audit-log PATH]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  perfgate::kubesim::Options opts;
  opts.port = -1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--listen") {
      std::string v = next();
      size_t colon = v.rfind(':');
      if (colon == std::string::npos) return Usage("--listen wants HOST:PORT");
      opts.host = v.substr(0, colon);
      opts.port = std::atoi(v.substr(colon + 1).c_str());
    } else if (a == "--kubeconfig-out") {
      opts.kubeconfigPath = next();
    } else if (a == "--nodes") {
      opts.nodes = std::atoi(next().c_str());
    } else if (a == "--gpus-per-node") {
      opts.gpusPerNode = std::atoi(next().c_str());
    } else if (a == "--gpu-product") {
      opts.gpuProduct = next();
    } else if (a == "--image-map") {
      std::string v = next();
      size_t eq = v.find('=');
      if (eq == std::string::npos) return Usage("--image-map wants IMAGE=BINARY");
      opts.imageMap[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (a == "--scale-mode") {
      opts.scaleMode = true;
    } else if (a == "--owner-references-permission-enforcement") {
      opts.ownerReferencesPermissionEnforcement = true;
    } else if (a == "--audit-log") {
      opts.auditLogPath = next();
    } else if (a == "--work-dir") {
      opts.workDir = next();
    } else if (a == "--verbose") {
      opts.quiet = false;
    } else {
      return Usage(("unknown flag " + a).c_str());
    }
  }
  if (opts.port < 0) return Usage("--listen is required");
  if (opts.kubeconfigPath.empty()) return Usage("--kubeconfig-out is required");

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // every thread inherits the mask

  perfgate::kubesim::KubeSim sim(opts);
  perfgate::Status st = sim.Start();
  if (!st.ok()) {
    std::fprintf(stderr, "kube-sim: %s\n", st.ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "kube-sim: serving %s, kubeconfig %s\n", sim.url().c_str(),
               sim.kubeconfigPath().c_str());
  int sig = 0;
  sigwait(&set, &sig);
  sim.Stop();
  return 0;
}
