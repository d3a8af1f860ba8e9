// The small SQL connection the store's one implementation (sql_store.cc) runs on; one per
// backend (sqlite.cc, postgres.cc). Internal to store/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"

namespace perfgate::store::sql {

// A parameter or a column value. PostgreSQL hands every column back as text; the getters
// below read either form.
using Value = std::variant<std::monostate, int64_t, double, std::string>;
using Row = std::vector<Value>;

int64_t AsInt(const Value& v);
double AsDouble(const Value& v);
std::string AsText(const Value& v);
bool IsNull(const Value& v);

enum class Dialect { kSqlite, kPostgres };

class Connection {
 public:
  virtual ~Connection() = default;
  // Runs one statement with `?` placeholders bound to `params` in order; returns its rows.
  // Blocking. Errors: kUnavailable (the server cannot be reached: retry later),
  // kResourceExhausted (disk full), kAlreadyExists (a unique key taken), others kInternal.
  virtual Result<std::vector<Row>> Query(std::string_view sql,
                                         const std::vector<Value>& params) = 0;
  // Runs one or more statements with no parameters (schema text).
  virtual Status ExecScript(std::string_view sql) = 0;
  virtual Dialect dialect() const = 0;
  virtual std::string Describe() const = 0;
};

// SQLite in the file at `path` (created with its folder if missing). `max_pages` > 0 caps the
// file at that many pages.
Result<std::unique_ptr<Connection>> OpenSqlite(const std::string& path, int64_t max_pages);
// PostgreSQL through libpq; `conninfo` is a URI or a keyword string. Reconnects by itself
// when the server comes back after an outage.
Result<std::unique_ptr<Connection>> OpenPostgres(const std::string& conninfo);

}  // namespace perfgate::store::sql
