// perfgate: the one command a person types (cli/app.h), also the kubectl plugin
// (kubectl-perfgate).
#include "cli/app.h"

int main(int argc, char** argv) { return perfgate::cli::Main(argc, argv); }
