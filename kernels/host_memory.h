// The host's memory system as sysfs describes it: the last-level cache summed over every
// instance (all sockets, every CCX or slice), and the NUMA nodes. host-stream sizes its arrays
// from it (STREAM's rule) and reports it. The sysfs root is a parameter so unit tests read
// recorded trees (tests/kernels/sysfs/).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace perfgate::kernels {

struct HostMemorySystem {
  // The highest cache level any cpu shows (3 on x86 servers and Grace); 0 when sysfs shows
  // no cache.
  int llc_level = 0;
  int llc_instances = 0;             // distinct caches of that level (by id, else by cpus)
  std::int64_t llc_total_bytes = 0;  // their sizes summed
  std::int64_t llc_largest_bytes = 0;
  int numa_nodes = 0;  // devices/system/node/nodeN; 0 when sysfs shows none
};

// Reads <sysfs_root>/devices/system/cpu/cpu*/cache/index*/{level,type,size,shared_cpu_list,id}
// and <sysfs_root>/devices/system/node/node*. Instruction caches are left out; a cache shared
// by many cpus counts once. Never fails: what is missing stays 0. Blocking.
HostMemorySystem ReadHostMemorySystem(const std::string& sysfs_root);

// STREAM's rule for each array: at least 4x the sum of all last-level caches, and at least
// 64 MiB; 4x 32 MiB when sysfs shows no cache. Pure.
std::int64_t StreamArrayBytes(const HostMemorySystem& memory);

// "L3: 24 x 32 MiB = 768 MiB", "no cache in sysfs". Pure.
std::string LastLevelCacheText(const HostMemorySystem& memory);

// The NUMA node of up to `pages` pages spread over [base, base + bytes), as the kernel
// reports them (move_pages): node -> pages. Pages whose node the kernel does not tell (not
// yet touched, or move_pages unavailable) are left out; empty when none is known. Blocking.
std::map<int, int> PageNodes(const void* base, std::int64_t bytes, int pages);

class Test;
// The host-stream test reading the memory system under `sysfs_root` ("/sys" in the worker);
// host_stream.cc.
std::unique_ptr<Test> MakeHostStreamTestWith(const std::string& sysfs_root);

}  // namespace perfgate::kernels
