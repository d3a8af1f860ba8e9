// The plan of a PerfValidation whose spec is `spec_body` (YAML under `spec:`), read as file
// "s.yaml": what a user's spec meets, for the plan tests.
#pragma once

#include <string>

#include "common/spec.h"
#include "core/plan.h"

namespace perfgate::worker {

inline Result<Plan> PlanOf(const std::string& spec_body, const PlanOptions& options = {}) {
  auto loaded = spec::ParseValidation(
      "apiVersion: perfgate.io/v1alpha1\nkind: PerfValidation\nmetadata:\n  name: t\nspec:\n" +
          spec_body,
      "s.yaml");
  if (!loaded.ok()) return loaded.status();
  return BuildPlan(*loaded, options);
}

}  // namespace perfgate::worker
