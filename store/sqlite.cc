// The SQLite connection: one file, WAL journal, prepared statements kept per SQL text.
#include <sqlite3.h>

#include <filesystem>
#include <map>

#include "store/sql.h"

namespace perfgate::store::sql {
namespace {

Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  const std::string msg = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return {Code::kResourceExhausted, msg + " (the disk or the store's size cap is full)"};
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
      return Unavailable(msg);
    case SQLITE_CONSTRAINT:
      return {Code::kAlreadyExists, msg};
    default:
      return Internal(msg);
  }
}

class SqliteConnection final : public Connection {
 public:
  SqliteConnection(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteConnection() override {
    for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
    sqlite3_close_v2(db_);
  }
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  Result<std::vector<Row>> Query(std::string_view sql, const std::vector<Value>& params) override {
    sqlite3_stmt* stmt = nullptr;
    auto it = statements_.find(std::string(sql));
    if (it != statements_.end()) {
      stmt = it->second;
    } else {
      const int rc =
          sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
      if (rc != SQLITE_OK) return SqliteError(db_, rc, "preparing " + Head(sql));
      statements_.emplace(std::string(sql), stmt);
    }
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    for (std::size_t i = 0; i < params.size(); ++i) {
      const int idx = static_cast<int>(i) + 1;
      const Value& v = params[i];
      int rc = SQLITE_OK;
      if (std::holds_alternative<int64_t>(v)) {
        rc = sqlite3_bind_int64(stmt, idx, std::get<int64_t>(v));
      } else if (std::holds_alternative<double>(v)) {
        rc = sqlite3_bind_double(stmt, idx, std::get<double>(v));
      } else if (std::holds_alternative<std::string>(v)) {
        const auto& s = std::get<std::string>(v);
        rc = sqlite3_bind_text(stmt, idx, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
      } else {
        rc = sqlite3_bind_null(stmt, idx);
      }
      if (rc != SQLITE_OK) return SqliteError(db_, rc, "binding " + Head(sql));
    }
    std::vector<Row> rows;
    for (;;) {
      const int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        Status st = SqliteError(db_, rc, Head(sql));
        sqlite3_reset(stmt);
        return st;
      }
      const int cols = sqlite3_column_count(stmt);
      Row row(cols);
      for (int c = 0; c < cols; ++c) {
        switch (sqlite3_column_type(stmt, c)) {
          case SQLITE_INTEGER:
            row[c] = static_cast<int64_t>(sqlite3_column_int64(stmt, c));
            break;
          case SQLITE_FLOAT:
            row[c] = sqlite3_column_double(stmt, c);
            break;
          case SQLITE_NULL:
            break;
          default: {
            const auto* text = sqlite3_column_text(stmt, c);
            const int len = sqlite3_column_bytes(stmt, c);
            row[c] =
                std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(len));
          }
        }
      }
      rows.push_back(std::move(row));
    }
    sqlite3_reset(stmt);
    return rows;
  }

  Status ExecScript(std::string_view sql) override {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &err);
    if (rc == SQLITE_OK) return Status::Ok();
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return SqliteError(nullptr, rc, msg);
  }

  Dialect dialect() const override { return Dialect::kSqlite; }
  std::string Describe() const override { return "sqlite://" + path_; }

 private:
  static std::string Head(std::string_view sql) {
    return std::string(sql.substr(0, std::min<std::size_t>(sql.size(), 60)));
  }

  sqlite3* db_;
  std::string path_;
  std::map<std::string, sqlite3_stmt*, std::less<>> statements_;
};

}  // namespace

Result<std::unique_ptr<Connection>> OpenSqlite(const std::string& path, int64_t max_pages) {
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return Unavailable("cannot create " + parent.string() + ": " + ec.message());
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status st = SqliteError(db, rc, "opening " + path);
    sqlite3_close_v2(db);
    return st;
  }
  auto conn = std::make_unique<SqliteConnection>(db, path);
  sqlite3_busy_timeout(db, 10000);
  std::string pragmas =
      "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;";
  if (max_pages > 0) pragmas += " PRAGMA max_page_count=" + std::to_string(max_pages) + ";";
  Status st = conn->ExecScript(pragmas);
  if (!st.ok()) return st.WithContext(path);
  return std::unique_ptr<Connection>(std::move(conn));
}

}  // namespace perfgate::store::sql
