#include "kernels/nccl/nccl_debug.h"
#include "common/strings.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

namespace perfgate::kernels::nccl {
namespace {

// "NET/IB/0/GDRDMA" -> "NET/IB"; "P2P/CUMEM/read" -> "P2P/CUMEM"; "SHM/direct/direct" -> "SHM".
std::string TransportName(std::string_view via) {
  const auto first = via.find('/');
  if (first == std::string_view::npos) return std::string(via);
  const std::string_view head = via.substr(0, first);
  if (head == "SHM") return "SHM";
  const auto second = via.find('/', first + 1);
  return std::string(via.substr(0, second));
}

}  // namespace

TransportReport ParseNcclDebugLog(std::string_view text) {
  TransportReport r;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const auto info = line.find("NCCL INFO ");
    if (info == std::string_view::npos) continue;
    const std::string_view msg = Trim(line.substr(info + 10));
    if (msg.rfind("NCCL version ", 0) == 0) {
      r.version = std::string(Trim(msg.substr(13)));
    } else if (msg.rfind("Using network ", 0) == 0) {
      r.network = std::string(Trim(msg.substr(14)));
    } else if (msg.rfind("NET/IB", 0) == 0 && msg.find("Using") != std::string_view::npos) {
      if (msg.find("/RoCE") != std::string_view::npos) r.roce = true;
    } else if (msg.rfind("Channel ", 0) == 0) {
      const auto via = msg.find(" via ");
      if (via == std::string_view::npos) continue;
      std::string_view what = Trim(msg.substr(via + 5));
      what = what.substr(0, what.find(' '));
      r.channel_transports.insert(TransportName(what));
      if (what.rfind("NET/", 0) == 0 && what.find("GDRDMA") != std::string_view::npos) {
        r.gdr = true;
      }
    } else if (msg.rfind("Pattern ", 0) == 0) {
      const auto type = msg.find("type ");
      if (type != std::string_view::npos && msg.substr(type + 5, 3) == "NVL") r.nvlink = true;
    } else if (msg.find("NVLS multicast support is available") != std::string_view::npos) {
      r.nvls = true;
    } else if (msg.rfind("comm 0x", 0) == 0) {
      const auto nodes = msg.find("nNodes ");
      if (nodes != std::string_view::npos)
        r.nodes = std::atoi(std::string(msg.substr(nodes + 7, 8)).c_str());
    }
  }
  return r;
}

bool TransportReport::InterNodeSockets() const {
  if (channel_transports.contains("NET/Socket")) return true;
  const bool net_channel =
      std::any_of(channel_transports.begin(), channel_transports.end(),
                  [](const std::string& t) { return t.rfind("NET/", 0) == 0; });
  return network == "Socket" && (net_channel || nodes > 1);
}

std::string TransportReport::Summary() const {
  if (Empty()) return "unknown: NCCL logged no INFO lines about its channels";
  std::vector<std::string> parts;
  std::string intra;
  for (const auto& t : channel_transports) {
    if (t.rfind("P2P", 0) == 0) {
      intra += std::string(intra.empty() ? "" : ", ") + (nvlink ? "NVLink" : "peer-to-peer") +
               " (" + t + ")";
    } else if (t == "SHM") {
      intra += std::string(intra.empty() ? "" : ", ") + "shared host memory (SHM)";
    }
  }
  if (nvls) intra += std::string(intra.empty() ? "" : ", ") + "NVLS multicast";
  if (!intra.empty()) parts.push_back(intra + " within a node");
  for (const auto& t : channel_transports) {
    if (t == "NET/Socket") {
      parts.emplace_back("plain TCP sockets (NET/Socket) between nodes");
    } else if (t.rfind("NET/", 0) == 0) {
      const std::string fabric = t == "NET/IB" ? (roce ? "RoCE" : "InfiniBand") : t.substr(4);
      std::string part = fabric;
      part += gdr ? " with GPUDirect RDMA (" : " without GPUDirect RDMA (";
      part += t;
      part += ") between nodes";
      parts.push_back(std::move(part));
    }
  }
  if (parts.empty()) parts.emplace_back("no inter-GPU channels (one rank)");
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += "; ";
    out += p;
  }
  return out;
}

std::string ExpandNcclDebugFile(const std::string& pattern, const std::string& hostname, int pid) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      if (pattern[i + 1] == 'h') {
        out += hostname;
        ++i;
        continue;
      }
      if (pattern[i + 1] == 'p') {
        out += std::to_string(pid);
        ++i;
        continue;
      }
    }
    out += pattern[i];
  }
  return out;
}

std::string PrepareNcclDebugLog(const std::string& directory) {
  static std::once_flag once;
  static std::string path;
  std::call_once(once, [&] {
    // NOLINTBEGIN(concurrency-mt-unsafe): once, before the first NCCL call
    const char* level = std::getenv("NCCL_DEBUG");
    if (level != nullptr) {
      const std::string l = level;
      if (l != "INFO" && l != "TRACE") return;  // the spec chose less: respect it
    } else {
      ::setenv("NCCL_DEBUG", "INFO", 0);
    }
    if (std::getenv("NCCL_DEBUG_SUBSYS") == nullptr) {
      ::setenv("NCCL_DEBUG_SUBSYS", "INIT,NET,GRAPH,ENV", 0);
    }
    const char* file = std::getenv("NCCL_DEBUG_FILE");
    std::string pattern = file != nullptr ? file : directory + "/perfgate-nccl.%h.%p.log";
    if (file == nullptr) ::setenv("NCCL_DEBUG_FILE", pattern.c_str(), 0);
    // NOLINTEND(concurrency-mt-unsafe)
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    std::string short_host = host;  // NCCL's %h is the hostname up to its first dot
    short_host = short_host.substr(0, short_host.find('.'));
    path = ExpandNcclDebugFile(pattern, short_host, static_cast<int>(::getpid()));
  });
  return path;
}

}  // namespace perfgate::kernels::nccl
