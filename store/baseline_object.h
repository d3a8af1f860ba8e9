// A baseline as a PerfBaseline object (docs/store.md): what `perfgate-worker baseline create
// -o yaml` writes for kubectl and what the operator reads back from the cluster.
#pragma once

#include <string>

#include "common/result.h"
#include "perfgate/v1alpha1/validation.pb.h"
#include "store/store.h"

namespace perfgate::store {

// The PerfBaseline object of `b`, with `from` as where it came from.
v1alpha1::PerfBaseline BaselineObject(const Baseline& b, const v1alpha1::BaselineSelection& from);

// The baseline a PerfBaseline object holds (its name is the object's). kInvalidArgument when a
// figure lacks its test, metric or statistic, or `created` is not an RFC 3339 time.
Result<Baseline> BaselineOfObject(const v1alpha1::PerfBaseline& object);

// The selection `source` describes, as `perfgate-worker baseline create` writes it
// ("--from validation=X,since=T --nodes A,B (PASS results)"); fields it does not name stay
// empty.
v1alpha1::BaselineSelection SelectionOfSource(const std::string& source);

}  // namespace perfgate::store
