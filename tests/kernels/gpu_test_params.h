// Test helper: a Params with every declared parameter at its default, parsed the way a user
// writes it in YAML ("8192", "10", "true", "[bf16, fp16]", "[1048576, 4194304]").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/test.h"

namespace perfgate::kernels::testing {

inline std::vector<std::string> SplitList(std::string text) {
  std::vector<std::string> out;
  if (!text.empty() && text.front() == '[') text = text.substr(1);
  if (!text.empty() && text.back() == ']') text.pop_back();
  std::string item;
  for (char c : text + ",") {
    if (c == ',') {
      const auto first = item.find_first_not_of(' ');
      const auto last = item.find_last_not_of(' ');
      if (first != std::string::npos) out.push_back(item.substr(first, last - first + 1));
      item.clear();
    } else {
      item += c;
    }
  }
  return out;
}

inline Params DefaultParams(const TestInfo& info,
                            const std::map<std::string, ParamValue>& overrides = {}) {
  std::map<std::string, ParamValue> values;
  for (const ParamInfo& p : info.params) {
    switch (p.type) {
      case ParamType::kInt:
        values[p.name] = std::int64_t{std::stoll(p.default_value)};
        break;
      case ParamType::kDouble:
        values[p.name] = std::stod(p.default_value);
        break;
      case ParamType::kString:
        values[p.name] = p.default_value;
        break;
      case ParamType::kBool:
        values[p.name] = p.default_value == "true";
        break;
      case ParamType::kStringList:
        values[p.name] = SplitList(p.default_value);
        break;
      case ParamType::kIntList: {
        std::vector<std::int64_t> ints;
        for (const std::string& s : SplitList(p.default_value)) ints.push_back(std::stoll(s));
        values[p.name] = ints;
        break;
      }
    }
  }
  for (const auto& [name, value] : overrides) values[name] = value;
  return Params(std::move(values));
}

}  // namespace perfgate::kernels::testing
