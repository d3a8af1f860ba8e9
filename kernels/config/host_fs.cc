#include "kernels/config/host_fs.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace perfgate::kernels::config {
namespace {

Status Failed(const std::string& what, const std::string& path, int error) {
  const std::string message = what + " " + path + ": " + std::strerror(error);
  return error == ENOENT ? NotFound(message) : Unavailable(message);
}

class RealFs final : public HostFs {
 public:
  Result<std::string> Read(const std::string& path) const override {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) return Failed("open", path, errno);
    std::string bytes;
    char buffer[4096];
    for (;;) {
      const std::size_t n = std::fread(buffer, 1, sizeof(buffer), file);
      bytes.append(buffer, n);
      if (n < sizeof(buffer)) break;
    }
    const bool failed = std::ferror(file) != 0;
    const int error = errno;
    std::fclose(file);
    if (failed) return Failed("read", path, error);
    return bytes;
  }

  Result<std::vector<std::string>> List(const std::string& path) const override {
    std::error_code ec;
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      names.push_back(entry.path().filename().string());
    }
    if (ec) return Failed("list", path, ec.value());
    std::sort(names.begin(), names.end());
    return names;
  }

  Result<std::string> Resolve(const std::string& path) const override {
    std::error_code ec;
    auto resolved = std::filesystem::canonical(path, ec);
    if (ec) return Failed("resolve", path, ec.value());
    return resolved.string();
  }
};

}  // namespace

std::unique_ptr<HostFs> RealHostFs() { return std::make_unique<RealFs>(); }

}  // namespace perfgate::kernels::config
