// The PostgreSQL connection through libpq: parameters and results as text, `?` placeholders
// turned into $1, $2, ...; a lost connection is re-established on the next call.
#include <libpq-fe.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "store/sql.h"

namespace perfgate::store::sql {
namespace {

std::string Trimmed(const char* s) {
  std::string out = s ? s : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// "postgresql://user:secret@host/db" -> "postgresql://user@host/db" for messages.
std::string WithoutPassword(const std::string& conninfo) {
  const auto scheme = conninfo.find("://");
  if (scheme != std::string::npos) {
    const auto at = conninfo.find('@', scheme);
    const auto colon = conninfo.find(':', scheme + 3);
    if (at != std::string::npos && colon != std::string::npos && colon < at) {
      return conninfo.substr(0, colon) + conninfo.substr(at);
    }
    return conninfo;
  }
  const auto pw = conninfo.find("password=");
  if (pw == std::string::npos) return conninfo;
  const auto end = conninfo.find(' ', pw);
  return conninfo.substr(0, pw) + "password=***" +
         (end == std::string::npos ? "" : conninfo.substr(end));
}

std::string Numbered(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int n = 0;
  for (char c : sql) {
    if (c == '?') {
      out += '$';
      out += std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

std::string Text(const Value& v) {
  if (std::holds_alternative<int64_t>(v)) return std::to_string(std::get<int64_t>(v));
  if (std::holds_alternative<double>(v)) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", std::get<double>(v));
    return buf;
  }
  return std::get<std::string>(v);
}

void IgnoreNotice(void*, const char*) {}

class PostgresConnection final : public Connection {
 public:
  PostgresConnection(PGconn* conn, const std::string& conninfo)
      : conn_(conn), described_("postgresql:" + WithoutPassword(conninfo)) {
    PQsetNoticeProcessor(conn_, IgnoreNotice, nullptr);
  }
  ~PostgresConnection() override { PQfinish(conn_); }
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  Result<std::vector<Row>> Query(std::string_view sql, const std::vector<Value>& params) override {
    RETURN_IF_ERROR(Connected());
    // Each statement is prepared once per connection (a reconnect forgets them).
    auto prepared = prepared_.find(std::string(sql));
    if (prepared == prepared_.end()) {
      const std::string name = "s" + std::to_string(prepared_.size());
      PGresult* prep = PQprepare(conn_, name.c_str(), Numbered(sql).c_str(),
                                 static_cast<int>(params.size()), nullptr);
      if (PQresultStatus(prep) != PGRES_COMMAND_OK) {
        Status st = Error(prep, sql);
        PQclear(prep);
        return st;
      }
      PQclear(prep);
      prepared = prepared_.emplace(std::string(sql), name).first;
    }
    std::vector<std::string> texts;
    std::vector<const char*> values;
    texts.reserve(params.size());
    for (const Value& v : params) {
      if (std::holds_alternative<std::monostate>(v)) {
        texts.emplace_back();
        values.push_back(nullptr);
      } else {
        texts.push_back(Text(v));
        values.push_back(texts.back().c_str());
      }
    }
    PGresult* res = PQexecPrepared(conn_, prepared->second.c_str(), static_cast<int>(params.size()),
                                   values.data(), nullptr, nullptr, 0);
    const ExecStatusType status = PQresultStatus(res);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      Status st = Error(res, sql);
      PQclear(res);
      return st;
    }
    std::vector<Row> rows;
    const int n = PQntuples(res);
    const int cols = PQnfields(res);
    rows.reserve(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      Row row(static_cast<std::size_t>(cols));
      for (int c = 0; c < cols; ++c) {
        if (!PQgetisnull(res, r, c)) {
          row[static_cast<std::size_t>(c)] =
              std::string(PQgetvalue(res, r, c), static_cast<std::size_t>(PQgetlength(res, r, c)));
        }
      }
      rows.push_back(std::move(row));
    }
    PQclear(res);
    return rows;
  }

  Status ExecScript(std::string_view sql) override {
    RETURN_IF_ERROR(Connected());
    PGresult* res = PQexec(conn_, std::string(sql).c_str());
    const ExecStatusType status = PQresultStatus(res);
    Status st =
        status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK ? Status::Ok() : Error(res, sql);
    PQclear(res);
    return st;
  }

  Dialect dialect() const override { return Dialect::kPostgres; }
  std::string Describe() const override { return described_; }

 private:
  Status Connected() {
    if (PQstatus(conn_) == CONNECTION_OK) return Status::Ok();
    prepared_.clear();  // the server forgot them with the session
    PQreset(conn_);
    if (PQstatus(conn_) == CONNECTION_OK) return Status::Ok();
    return Unavailable(described_ + ": " + Trimmed(PQerrorMessage(conn_)));
  }

  Status Error(PGresult* res, std::string_view sql) {
    const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    std::string msg = Trimmed(res ? PQresultErrorMessage(res) : PQerrorMessage(conn_));
    if (msg.empty()) msg = Trimmed(PQerrorMessage(conn_));
    msg = described_ + ": " + msg + " (in " +
          std::string(sql.substr(0, std::min<std::size_t>(sql.size(), 60))) + ")";
    const std::string code = state ? state : "";
    if (PQstatus(conn_) != CONNECTION_OK || code.rfind("08", 0) == 0 || code == "57P01" ||
        code == "57P02" || code == "57P03") {
      return Unavailable(msg);
    }
    if (code == "53100") return {Code::kResourceExhausted, msg};
    if (code == "23505") return {Code::kAlreadyExists, msg};
    return Internal(msg);
  }

  PGconn* conn_;
  std::string described_;
  std::map<std::string, std::string, std::less<>> prepared_;  // SQL -> statement name
};

}  // namespace

Result<std::unique_ptr<Connection>> OpenPostgres(const std::string& conninfo) {
  PGconn* conn = PQconnectdb(conninfo.c_str());
  if (conn == nullptr) return Unavailable("postgresql: out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    Status st = Unavailable("postgresql:" + WithoutPassword(conninfo) + ": " +
                            Trimmed(PQerrorMessage(conn)));
    PQfinish(conn);
    return st;
  }
  return std::unique_ptr<Connection>(std::make_unique<PostgresConnection>(conn, conninfo));
}

}  // namespace perfgate::store::sql
