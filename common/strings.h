// Small string helpers every layer may use: written once here, not again per file.
#pragma once

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

}  // namespace perfgate
