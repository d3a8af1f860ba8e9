// libFuzzer target: any bytes as a spec file, through the loader and the plan builder. Must
// never crash, hang or leak; every rejection is an InvalidArgument naming the problem.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/spec.h"
#include "core/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto loaded = perfgate::spec::ParseValidation(text, "fuzz.yaml");
  if (!loaded.ok()) {
    if (loaded.status().code() != perfgate::Code::kInvalidArgument) std::abort();
    return 0;
  }
  perfgate::worker::PlanOptions options;  // no profile folders, no GPUs
  auto plan = perfgate::worker::BuildPlan(*loaded, options);
  if (!plan.ok() && plan.status().code() != perfgate::Code::kInvalidArgument) std::abort();
  return 0;
}
