#include "kernels/nccl/collective.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "kernels/test.h"

namespace perfgate::kernels::nccl {

const CollectiveInfo& Info(Collective op) {
  for (const auto& c : kCollectives) {
    if (c.op == op) return c;
  }
  return kCollectives.front();  // unreachable: every enumerator is in the table
}

std::optional<Collective> CollectiveByName(std::string_view name) {
  for (const auto& c : kCollectives) {
    if (c.name == name) return c.op;
  }
  return std::nullopt;
}

CallShape ShapeFor(Collective op, std::int64_t bytes, int world_size) {
  const std::int64_t n = std::max(world_size, 1);
  const std::int64_t count = std::max<std::int64_t>(bytes / kElementBytes, 1);
  // Arrays split between ranks hold at least one element per rank.
  const std::int64_t per_rank = std::max<std::int64_t>(count / n, 1);
  CallShape s;
  s.op = op;
  s.world_size = static_cast<int>(n);
  Info(op).rules->shape(count, per_rank, n, &s);
  return s;
}

double BusBandwidthFactor(Collective op, int world_size) {
  return Info(op).rules->bus_factor(std::max(world_size, 1));
}

bool BusBandwidthMeaningful(int world_size) { return world_size >= 2; }

double AlgBandwidthGBps(std::int64_t bytes, double seconds) {
  if (seconds <= 0) return 0;
  return static_cast<double>(bytes) / seconds / 1e9;
}

Result<std::vector<std::int64_t>> SweepSizes(std::int64_t min_bytes, std::int64_t max_bytes,
                                             std::int64_t factor) {
  if (min_bytes < 1) return InvalidArgument("minBytes must be at least 1");
  if (max_bytes < min_bytes) {
    return InvalidArgument("maxBytes " + std::to_string(max_bytes) + " is below minBytes " +
                           std::to_string(min_bytes));
  }
  if (factor < 2) return InvalidArgument("stepFactor must be at least 2");
  std::vector<std::int64_t> sizes;
  for (std::int64_t s = min_bytes; s <= max_bytes; s *= factor) {
    sizes.push_back(s);
    if (s > max_bytes / factor) break;  // the next step would overflow or pass max
  }
  // Thresholds usually name the largest size: it is always measured, even off the steps.
  if (sizes.back() != max_bytes) sizes.push_back(max_bytes);
  return sizes;
}

std::string SizeLabel(std::int64_t bytes) { return BinarySize(bytes, ""); }

std::string AlgBandwidthMetric(std::int64_t bytes, bool in_place) {
  return std::string(in_place ? "inPlaceAlgBandwidthGBps@" : "algBandwidthGBps@") +
         SizeLabel(bytes);
}

std::string BusBandwidthMetric(std::int64_t bytes, bool in_place) {
  return std::string(in_place ? "inPlaceBusBandwidthGBps@" : "busBandwidthGBps@") +
         SizeLabel(bytes);
}

std::string TimeMetric(std::int64_t bytes) { return "timeMicroseconds@" + SizeLabel(bytes); }

namespace {

// Every other rank p is sent input + p * stride and sends its part into `into(p)`.
Status ExchangeWithPeers(HostExchange& host, const RankBuffers& b, std::size_t stride,
                         const std::function<std::uint32_t*(int peer)>& into) {
  std::vector<PeerTransfer> transfers;
  for (int p = 0; p < b.world_size; ++p) {
    if (p == b.rank) continue;
    PeerTransfer t;
    t.peer = p;
    t.send = b.input + static_cast<std::size_t>(p) * stride;
    t.send_count = b.count;
    t.recv = into(p);
    t.recv_count = b.count;
    transfers.push_back(t);
  }
  return host.Exchange(transfers);
}

}  // namespace

Status SumWithPeers(HostExchange& host, const RankBuffers& b, std::size_t stride) {
  const auto n = static_cast<std::size_t>(b.world_size);
  std::uint32_t* received = host.Scratch(b.count * n);  // peer p's part at p * count
  RETURN_IF_ERROR(ExchangeWithPeers(
      host, b, stride, [&](int p) { return received + static_cast<std::size_t>(p) * b.count; }));
  const std::uint32_t* mine = b.input + static_cast<std::size_t>(b.rank) * stride;
  for (std::size_t j = 0; j < b.count; ++j) {
    std::uint32_t sum = mine[j];
    for (std::size_t p = 0; p < n; ++p) {
      if (p != static_cast<std::size_t>(b.rank)) sum += received[p * b.count + j];
    }
    b.output[j] = sum;  // in place, output may be `mine`: element j is read before it is written
  }
  return Status::Ok();
}

Status GatherFromPeers(HostExchange& host, const RankBuffers& b, std::size_t stride) {
  RETURN_IF_ERROR(ExchangeWithPeers(
      host, b, stride, [&](int p) { return b.output + static_cast<std::size_t>(p) * b.count; }));
  const std::uint32_t* mine = b.input + static_cast<std::size_t>(b.rank) * stride;
  std::memmove(b.output + static_cast<std::size_t>(b.rank) * b.count, mine,
               b.count * sizeof(std::uint32_t));
  return Status::Ok();
}

}  // namespace perfgate::kernels::nccl
