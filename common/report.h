// Report writers: the readable table, protobuf JSON of the Report message, JUnit XML.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/verdict.h"
#include "perfgate/v1alpha1/report.pb.h"

namespace perfgate::report {

// "PASS", "FAIL", ... ("UNSPECIFIED" for 0).
std::string VerdictName(v1alpha1::Verdict v);

// The one mapping between the API's verdict and the rules' (common/verdict.h). A report
// without a verdict (VERDICT_UNSPECIFIED) was never finished and reads as ERROR. Order verdicts
// with verdict::Severity (common/node_verdict.h).
v1alpha1::Verdict ToProto(verdict::Verdict v);
verdict::Verdict FromProto(v1alpha1::Verdict v);

// The CUDA ordinal of a test result's device ("gpu3" -> 3); -1 for "host" or anything else.
int DeviceOrdinal(const std::string& device);

// A measured figure or bound as people read it: "2403.5", "11.71", "0.0042"; past a million or
// below 0.0001 in four significant digits ("1e+300", not 300 digits); "-" when not a number.
std::string FormatFigure(double v);

// The value of `statistic` ("median", "p05", "ciLow", ...; "median" for an unknown name).
double StatisticValue(const v1alpha1::Summary& s, const std::string& statistic);

// Text made safe inside XML or HTML elements and attribute values.
std::string XmlEscape(const std::string& s);

// Rows as columns, the way kubectl prints them: each column as wide as its widest cell plus
// `gap` spaces, the last cell of a row unpadded, trailing spaces dropped, "\n" after every row.
// Rows may differ in length.
std::string FormatColumns(const std::vector<std::vector<std::string>>& rows, std::size_t gap = 2);

// The table `perfgate-worker run` ends with: test, device, metric, statistic, value, bound,
// verdict; then one line per non-passing test with its reason; then the overall verdict.
std::string FormatTable(const v1alpha1::Report& report);

// Protobuf JSON (lowerCamelCase names, every field printed), parseable back into Report.
Result<std::string> ToJson(const v1alpha1::Report& report);
Result<v1alpha1::Report> FromJson(const std::string& text);

// JUnit XML: one testsuite, one testcase per test result ("name [device]"); FAIL is a
// <failure>, ERROR and INCONCLUSIVE an <error>, SKIPPED <skipped>; figures in <system-out>.
std::string ToJUnit(const v1alpha1::Report& report);

// Writes `text` to `path` atomically (temp file + rename).
Status WriteFileAtomic(const std::string& path, const std::string& text);

}  // namespace perfgate::report
