// perfgate-crdgen DIR: writes crds/*.yaml from the proto descriptors (operator/crd/crds.h).
#include <fstream>
#include <iostream>

#include "operator/crd/crds.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: perfgate-crdgen DIR\n";
    return 2;
  }
  for (const auto& [file, text] : perfgate::op::GenerateCrds()) {
    std::ofstream out(std::string(argv[1]) + "/" + file);
    out << text;
    if (!out) {
      std::cerr << "perfgate-crdgen: cannot write " << argv[1] << "/" << file << "\n";
      return 1;
    }
  }
  return 0;
}
