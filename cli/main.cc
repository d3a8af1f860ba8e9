// perfgate: the one command a person types (cli/app.h), also the kubectl plugin
// (kubectl-perfgate).
#include <iostream>
#include <string>
#include <vector>

#include "cli/app.h"
#include "kernels/registry.h"

int main(int argc, char** argv) {
  // nccl-rails' child, one per rail, when `perfgate run` runs a gang (kernels/nccl/rails.h):
  // not a command people type.
  if (argc > 1 && std::string(argv[1]) == "rail-child") {
    return perfgate::kernels::nccl::RailChildMain(std::vector<std::string>(argv + 2, argv + argc),
                                                  perfgate::kernels::RailBackends(), std::cin,
                                                  std::cout);
  }
  return perfgate::cli::Main(argc, argv);
}
