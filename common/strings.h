// Small string helpers every layer may use: written once here, not again per file.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace perfgate {

// `s` without leading and trailing spaces, tabs, carriage returns and newlines.
std::string_view Trim(std::string_view s);

// `s` with ASCII letters in lower case (other bytes unchanged).
std::string Lower(std::string_view s);

// The pieces of `s` between `separator`s, each trimmed; empty pieces are kept ("a,,b" has
// three), and "" gives one empty piece.
std::vector<std::string> Split(std::string_view s, char separator);

// `v` with four significant digits, as printf's %.4g writes it: "12.35", "1.235e+05".
std::string Sig4(double v);

// The environment variable `name`, or "" when it is not set.
std::string EnvVar(const char* name);

// The first `most` of `names` joined by ", ", then " and N more" for the rest: "a, b and 3 more".
std::string NameSome(const std::vector<std::string>& names, std::size_t most);

}  // namespace perfgate
