#include "store/spool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/report.h"

namespace perfgate::store {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> SpooledFiles(const std::string& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".json") files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());  // names start with a fixed-width time: oldest first
  return files;
}

bool Retryable(const Status& st) {
  return st.code() == Code::kUnavailable || st.code() == Code::kResourceExhausted;
}

}  // namespace

std::string DefaultSpoolDir(const std::string& url) {
  if (url.rfind("sqlite:", 0) == 0 || url.find("://") == std::string::npos) {
    std::string path = url;
    for (const char* scheme : {"sqlite://", "sqlite:"}) {
      if (path.rfind(scheme, 0) == 0) {
        path = path.substr(std::string_view(scheme).size());
        break;
      }
    }
    return path.substr(0, path.find('?')) + ".spool";
  }
  char name[32];
  std::snprintf(name, sizeof name, "spool-%016zx", std::hash<std::string>{}(url));
  return (fs::path(DefaultLocalPath()).parent_path() / name).string();
}

Status Spool::Add(const NodeResult& result) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Unavailable("cannot create the spool " + dir_ + ": " + ec.message());
  ASSIGN_OR_RETURN(std::string report, report::ToJson(result.report));
  nlohmann::json doc = {{"cluster", result.key.cluster},
                        {"validation", result.key.validation},
                        {"run", result.key.run},
                        {"node", result.key.node},
                        {"report", nlohmann::json::parse(report)}};
  const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  char name[64];
  std::snprintf(name, sizeof name, "%020lld-%06lld.json", static_cast<long long>(now),
                sequence_++ % 1000000);
  Status st = report::WriteFileAtomic((fs::path(dir_) / name).string(), doc.dump());
  return st.ok() ? st : st.WithContext("spooling a result");
}

int Spool::Pending() const { return static_cast<int>(SpooledFiles(dir_).size()); }

Result<int> Spool::Drain(Store& store) {
  int written = 0;
  for (const auto& file : SpooledFiles(dir_)) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    NodeResult result;
    bool readable = false;
    try {
      const auto doc = nlohmann::json::parse(text.str());
      result.key = {doc.at("cluster").get<std::string>(), doc.at("validation").get<std::string>(),
                    doc.at("run").get<std::string>(), doc.at("node").get<std::string>()};
      auto parsed = report::FromJson(doc.at("report").dump());
      if (parsed.ok()) {
        result.report = std::move(parsed).value();
        readable = true;
      }
    } catch (const nlohmann::json::exception&) {
    }
    if (!readable) {
      std::error_code ec;
      fs::rename(file, fs::path(file).replace_extension(".refused"), ec);
      continue;
    }
    auto stored = store.Put(result);
    std::error_code ec;
    if (!stored.ok()) {
      if (Retryable(stored.status())) return stored.status();
      // The database refuses this one for good: set it aside rather than block the rest.
      fs::rename(file, fs::path(file).replace_extension(".refused"), ec);
      continue;
    }
    fs::remove(file, ec);
    if (*stored) ++written;
  }
  return written;
}

Result<Stored> PutOrSpool(Store* store, Spool& spool, const NodeResult& result, Status* why) {
  Status failed = Unavailable("the store is not open");
  if (store != nullptr) {
    auto drained = spool.Drain(*store);
    if (drained.ok()) {
      auto put = store->Put(result);
      if (put.ok()) return *put ? Stored::kWritten : Stored::kAlreadyStored;
      failed = put.status();
    } else {
      failed = drained.status();
    }
    if (!Retryable(failed)) return failed;
  }
  RETURN_IF_ERROR(spool.Add(result));
  if (why != nullptr) *why = failed;
  return Stored::kSpooled;
}

}  // namespace perfgate::store
