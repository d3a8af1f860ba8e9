#include "store/store.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>

#include <cstdio>
#include <cstdlib>
#include <set>

#include "common/time.h"
#include "store/sql.h"
#include "store/sql_store.h"

namespace perfgate::store {
namespace {

std::string FieldText(const google::protobuf::Message& m,
                      const google::protobuf::FieldDescriptor* f) {
  const auto* r = m.GetReflection();
  using FD = google::protobuf::FieldDescriptor;
  switch (f->cpp_type()) {
    case FD::CPPTYPE_STRING:
      return r->GetString(m, f);
    case FD::CPPTYPE_INT32:
      return std::to_string(r->GetInt32(m, f));
    case FD::CPPTYPE_UINT32:
      return std::to_string(r->GetUInt32(m, f));
    case FD::CPPTYPE_BOOL:
      return r->GetBool(m, f) ? "true" : "false";
    case FD::CPPTYPE_DOUBLE:
    case FD::CPPTYPE_FLOAT: {
      const double v = f->cpp_type() == FD::CPPTYPE_DOUBLE ? r->GetDouble(m, f) : r->GetFloat(m, f);
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.15g", v);
      return buf;
    }
    case FD::CPPTYPE_ENUM:
      return r->GetEnum(m, f)->name();
    default:
      return "";
  }
}

// Every set scalar field of `m` as prefix + jsonName; repeated messages as prefix + name + i.
void Flatten(const google::protobuf::Message& m, const std::string& prefix,
             std::map<std::string, std::string>* out) {
  const auto* r = m.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const auto* f : fields) {
    using FD = google::protobuf::FieldDescriptor;
    if (f->is_repeated()) {
      if (f->cpp_type() != FD::CPPTYPE_MESSAGE) continue;
      const int n = r->FieldSize(m, f);
      // gpus -> gpu0., gpu1., ...
      std::string base = f->json_name();
      if (base.size() > 1 && base.back() == 's') base.pop_back();
      out->emplace(prefix + f->json_name() + "Count", std::to_string(n));
      for (int i = 0; i < n; ++i) {
        Flatten(r->GetRepeatedMessage(m, f, i), prefix + base + std::to_string(i) + ".", out);
      }
    } else if (f->cpp_type() == FD::CPPTYPE_MESSAGE) {
      Flatten(r->GetMessage(m, f), prefix + f->json_name() + ".", out);
    } else {
      out->emplace(prefix + f->json_name(), FieldText(m, f));
    }
  }
}

}  // namespace

std::string GpuModel(const v1alpha1::Report& report) {
  return report.identity().gpus().empty() ? "" : report.identity().gpus(0).name();
}

std::map<std::string, std::string> IdentityRows(const v1alpha1::Report& report) {
  std::map<std::string, std::string> rows;
  Flatten(report.identity(), "", &rows);
  return rows;
}

int64_t ResultTimeMs(const v1alpha1::Report& report) {
  for (const std::string* t : {&report.completiontime(), &report.starttime()}) {
    if (auto tp = ParseRfc3339(*t)) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(tp->time_since_epoch()).count();
    }
  }
  return 0;
}

std::string DefaultLocalPath() {
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && xdg[0] == '/') {
    return std::string(xdg) + "/perfgate/results.db";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && home[0] != '\0' ? home : ".") +
         "/.local/share/perfgate/results.db";
}

Result<double> BaselineFigure(const Baseline& b, const std::string& gpu_model,
                              const std::string& profile_version, const std::string& test,
                              const std::string& metric, const std::string& statistic,
                              const std::function<bool(const std::string&)>& same_model) {
  for (const auto& v : b.values) {
    const bool model = same_model ? same_model(v.gpu_model) : v.gpu_model == gpu_model;
    if (model && v.profile_version == profile_version && v.test == test && v.metric == metric &&
        v.statistic == statistic) {
      return v.value;
    }
  }
  std::set<std::string> models;
  for (const auto& v : b.values) {
    models.insert((v.gpu_model.empty() ? "no GPU" : v.gpu_model) + " (profile version " +
                  (v.profile_version.empty() ? "none" : v.profile_version) + ")");
  }
  std::string have;
  for (const auto& m : models) have += (have.empty() ? "" : ", ") + m;
  return NotFound("baseline \"" + b.name + "\" has no " + statistic + " " + metric + " of " + test +
                  " for " + (gpu_model.empty() ? "a machine without GPUs" : gpu_model) +
                  " at profile version " + (profile_version.empty() ? "none" : profile_version) +
                  " (it holds: " + have + ")");
}

Result<std::unique_ptr<Store>> Open(const std::string& url) {
  auto starts = [&](std::string_view p) { return url.rfind(p, 0) == 0; };
  std::unique_ptr<sql::Connection> conn;
  if (starts("postgresql://") || starts("postgres://")) {
    ASSIGN_OR_RETURN(conn, sql::OpenPostgres(url));
  } else if (starts("postgresql:")) {
    ASSIGN_OR_RETURN(conn, sql::OpenPostgres(url.substr(std::string_view("postgresql:").size())));
  } else if (starts("sqlite:") || url.find("://") == std::string::npos) {
    std::string path = url;
    if (starts("sqlite://")) {
      path = url.substr(9);
    } else if (starts("sqlite:")) {
      path = url.substr(7);
    }
    int64_t max_pages = 0;
    if (auto q = path.find('?'); q != std::string::npos) {
      const std::string query = path.substr(q + 1);
      path = path.substr(0, q);
      constexpr std::string_view kCap = "max_size_mb=";
      if (query.rfind(kCap, 0) != 0) {
        return InvalidArgument("store URL " + url + ": unknown option \"" + query +
                               "\" (sqlite takes max_size_mb=N)");
      }
      char* end = nullptr;
      const double mb = std::strtod(query.c_str() + kCap.size(), &end);
      if (end == query.c_str() + kCap.size() || *end != '\0' || !(mb > 0)) {
        return InvalidArgument("store URL " + url + ": max_size_mb must be a positive number");
      }
      max_pages = static_cast<int64_t>(mb * 1024 * 1024 / 4096);
      if (max_pages < 1) max_pages = 1;
    }
    if (path.empty()) return InvalidArgument("store URL " + url + " names no file");
    ASSIGN_OR_RETURN(conn, sql::OpenSqlite(path, max_pages));
  } else {
    return InvalidArgument("store URL " + url +
                           ": unknown scheme (use sqlite:///path or postgresql://host/db)");
  }
  return MakeSqlStore(std::move(conn));
}

}  // namespace perfgate::store
