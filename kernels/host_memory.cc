#include "kernels/host_memory.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>
#include <vector>

#include "kernels/test.h"

namespace perfgate::kernels {
namespace {

namespace fs = std::filesystem;

std::string ReadWord(const fs::path& file) {
  std::ifstream in(file);
  std::string word;
  in >> word;
  return word;
}

// "32768K" (what Linux writes), "105M", "1G", "512" -> bytes; 0 when it does not parse.
std::int64_t ParseCacheSize(const std::string& size) {
  if (size.empty() || std::isdigit(static_cast<unsigned char>(size.front())) == 0) return 0;
  std::int64_t bytes = std::stoll(size);
  switch (size.back()) {
    case 'K':
    case 'k':
      return bytes << 10U;
    case 'M':
      return bytes << 20U;
    case 'G':
      return bytes << 30U;
    default:
      return bytes;
  }
}

// A directory's entries named <prefix><digits>.
std::vector<fs::path> Numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
        std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
      out.push_back(entry.path());
    }
  }
  return out;
}

}  // namespace

HostMemorySystem ReadHostMemorySystem(const std::string& sysfs_root) {
  struct Cache {
    int level;
    std::int64_t bytes;
  };
  // One entry per distinct cache: (level, type, id or the cpus that share it).
  std::map<std::tuple<int, std::string, std::string>, Cache> caches;
  const fs::path system = fs::path(sysfs_root) / "devices" / "system";
  for (const fs::path& cpu : Numbered(system / "cpu", "cpu")) {
    for (const fs::path& index : Numbered(cpu / "cache", "index")) {
      const std::string type = ReadWord(index / "type");
      const std::string level = ReadWord(index / "level");
      if (type == "Instruction" || level.empty() ||
          std::isdigit(static_cast<unsigned char>(level.front())) == 0) {
        continue;
      }
      const std::string id = ReadWord(index / "id");
      const std::string cpus = ReadWord(index / "shared_cpu_list");
      // Without an id, the cpus sharing the cache name it; a cache with neither is one per cpu.
      const std::string key = !id.empty()     ? "id " + id
                              : !cpus.empty() ? "cpus " + cpus
                                              : "cpu " + cpu.filename().string();
      caches[{std::stoi(level), type, key}] = {std::stoi(level),
                                               ParseCacheSize(ReadWord(index / "size"))};
    }
  }
  HostMemorySystem out;
  for (const auto& [key, cache] : caches) out.llc_level = std::max(out.llc_level, cache.level);
  for (const auto& [key, cache] : caches) {
    if (cache.level != out.llc_level || cache.bytes <= 0) continue;
    ++out.llc_instances;
    out.llc_total_bytes += cache.bytes;
    out.llc_largest_bytes = std::max(out.llc_largest_bytes, cache.bytes);
  }
  out.numa_nodes = static_cast<int>(Numbered(system / "node", "node").size());
  return out;
}

std::int64_t StreamArrayBytes(const HostMemorySystem& memory) {
  constexpr std::int64_t kUnknownCache = 32LL << 20;
  constexpr std::int64_t kFloor = 64LL << 20;
  const std::int64_t cache = memory.llc_total_bytes > 0 ? memory.llc_total_bytes : kUnknownCache;
  return std::max(4 * cache, kFloor);
}

std::string LastLevelCacheText(const HostMemorySystem& memory) {
  if (memory.llc_instances == 0) return "no cache in sysfs";
  std::string text = "L" + std::to_string(memory.llc_level) + ": ";
  if (memory.llc_instances == 1) return text + BinarySize(memory.llc_total_bytes, " ");
  if (memory.llc_largest_bytes * memory.llc_instances == memory.llc_total_bytes) {
    text += std::to_string(memory.llc_instances) + " x " +
            BinarySize(memory.llc_largest_bytes, " ") + " = ";
  } else {
    text += std::to_string(memory.llc_instances) + " instances, ";
  }
  return text + BinarySize(memory.llc_total_bytes, " ");
}

std::map<int, int> PageNodes(const void* base, std::int64_t bytes, int pages) {
  std::map<int, int> nodes;
  const std::int64_t page = sysconf(_SC_PAGESIZE);
  if (page <= 0 || bytes < page || pages <= 0) return nodes;
  const std::int64_t count = std::min<std::int64_t>(pages, bytes / page);
  const std::int64_t stride = bytes / count / page * page;
  std::vector<void*> addresses(static_cast<std::size_t>(count));
  const auto first = reinterpret_cast<std::uintptr_t>(base);  // NOLINT(performance-no-int-to-ptr)
  for (std::int64_t i = 0; i < count; ++i) {
    addresses[static_cast<std::size_t>(i)] =
        reinterpret_cast<void*>(first + static_cast<std::uintptr_t>(i * stride));  // NOLINT
  }
  std::vector<int> status(addresses.size(), -1);
  // With no target nodes, move_pages moves nothing and says where each page is.
  if (syscall(SYS_move_pages, 0, static_cast<unsigned long>(count), addresses.data(), nullptr,
              status.data(), 0) != 0) {
    return nodes;
  }
  for (int node : status) {
    if (node >= 0) ++nodes[node];
  }
  return nodes;
}

}  // namespace perfgate::kernels
