// Every status the operator's decision writes must parse, field for field, into
// PerfValidationStatus (proto/perfgate/v1alpha1/status.proto): the CRD's status schema is
// generated from that message, and an API server drops what its schema lacks. The reconcile
// tests' harnesses check each status they decide.
#pragma once

#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "perfgate/v1alpha1/status.pb.h"

namespace perfgate::op {

inline ::testing::AssertionResult StatusFitsTheSchema(const nlohmann::json& status) {
  v1alpha1::PerfValidationStatus parsed;
  const google::protobuf::util::JsonParseOptions strict;  // an unknown field is an error
  const auto st = google::protobuf::util::JsonStringToMessage(status.dump(), &parsed, strict);
  if (st.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "the status does not fit status.proto: " << st.ToString() << "\n"
         << status.dump();
}

}  // namespace perfgate::op
