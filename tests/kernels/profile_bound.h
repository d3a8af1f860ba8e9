// What a built-in profile's bound says of a test's samples: the bound as profiles/ writes it,
// decided by the verdict rules the runner uses. For the count metrics' tests, so a planted
// error is shown to FAIL the node through the profile, not through a message.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/spec.h"
#include "common/verdict.h"
#include "kernels/test.h"

namespace perfgate::kernels::testing {

// The bound on `metric` of test `type` in `level` ("quick", "full") of the built-in profile
// `profile` (e.g. "h200-sxm-141gb"); fails the calling test when there is none.
inline verdict::Threshold ProfileBound(const std::string& profile, const std::string& level,
                                       const std::string& type, const std::string& metric) {
  verdict::Threshold out;
  auto loaded =
      spec::LoadProfile(std::string(PERFGATE_SOURCE_DIR) + "/profiles/" + profile + ".yaml");
  if (!loaded.ok()) {
    ADD_FAILURE() << loaded.status().ToString();
    return out;
  }
  const auto& tests =
      level == "full" ? loaded->doc.spec().full().tests() : loaded->doc.spec().quick().tests();
  for (const auto& t : tests) {
    if (t.type() != type) continue;
    for (const auto& th : t.thresholds()) {
      if (th.metric() != metric) continue;
      out.metric = metric;
      EXPECT_TRUE(verdict::ParseStatistic(th.statistic(), &out.statistic));
      EXPECT_TRUE(verdict::ParseOp(th.op(), &out.op));
      out.bound = th.value();
      return out;
    }
  }
  ADD_FAILURE() << profile << " " << level << " has no bound on " << type << " " << metric;
  return out;
}

// The verdict of `threshold` on `samples` once sampling has stopped.
inline verdict::Outcome Decide(const verdict::Threshold& threshold,
                               const std::vector<kernels::Sample>& samples) {
  verdict::MetricSamples values;
  for (const auto& s : samples) {
    for (const auto& [metric, v] : s) values[metric].push_back(v);
  }
  verdict::Sampling sampling;
  sampling.min_repeats = 1;
  sampling.max_repeats = static_cast<int>(samples.size());
  const auto a = verdict::Assess({threshold}, values, sampling, verdict::SplitBudget(0.99, 1),
                                 {{threshold.metric, "count"}}, true);
  return a.outcomes.front();
}

}  // namespace perfgate::kernels::testing
