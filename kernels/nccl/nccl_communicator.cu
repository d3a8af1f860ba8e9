// NCCL on the node's GPUs: non-blocking communicators, group calls over local devices, fill and
// verify kernels from pattern.h, and the watchdog on every wait.
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/device.h"
#include "kernels/nccl/gang.h"
#include "kernels/nccl/nccl_communicator.h"
#include "kernels/nccl/nccl_debug.h"
#include "kernels/nccl/pattern.h"
#include "kernels/nccl/watchdog.h"

namespace perfgate::kernels::nccl {
namespace {

Status Aborted(std::string message) { return {Code::kAborted, std::move(message)}; }

using cuda::DeviceBuffer;
using cuda::Stream;

Status NcclStatus(ncclResult_t result, const char* what, ncclComm_t comm = nullptr) {
  if (result == ncclSuccess || result == ncclInProgress) return Status::Ok();
  std::string message = std::string(what) + ": " + ncclGetErrorString(result);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && last[0] != '\0') message += " (" + std::string(last) + ")";
  if (result == ncclSystemError || result == ncclRemoteError) return Unavailable(message);
  return Internal(message);
}

#define PG_NCCL(expr) RETURN_IF_ERROR(NcclStatus((expr), #expr))

__global__ void FillKernel(std::uint32_t* buffer, std::int64_t count, int rank,
                           std::uint32_t seed) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += stride) {
    buffer[i] = InputValue(rank, static_cast<std::uint64_t>(i), seed);
  }
}

__global__ void CountWrongKernel(const std::uint32_t* result, std::int64_t count, PatternCall call,
                                 unsigned long long* wrong) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  unsigned long long mine = 0;
  for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; j < count;
       j += stride) {
    mine += result[j] != ExpectedValue(call, static_cast<std::uint64_t>(j)) ? 1 : 0;
  }
  if (mine != 0) atomicAdd(wrong, mine);
}

// ncclAlltoAll is new in NCCL 2.28; the GPU machine's NCCL (from PyTorch's wheels) may be
// older, and a direct reference would keep the whole worker from loading there. Look it up at
// run time; without it alltoall.cc does what it does with sends and receives.
using AlltoAllFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                                    cudaStream_t);
AlltoAllFn FindAlltoAll() {
  static const AlltoAllFn fn =
      reinterpret_cast<AlltoAllFn>(dlsym(RTLD_DEFAULT, "ncclAlltoAll"));  // NOLINT
  return fn;
}

// NCCL reads NCCL_COMM_ID in ncclGetUniqueId and, for rank 0, in ncclCommInitRankConfig. A
// gang pod carries the gang's address there, which is right for a communicator across the
// gang and wrong for one over this node's GPUs only (acrossNodes: false): its rank 0 would try
// to listen on another pod's address. So, from the unique id to the end of the init group, the
// variable says what this communicator needs (the gang's address, or nothing), and is put back
// afterwards. Tests run one at a time; the lock keeps two inits from interleaving.
class ScopedCommIdEnv {
 public:
  explicit ScopedCommIdEnv(const std::string& rank0_address) : lock_(Mutex()) {
    if (const char* old = std::getenv("NCCL_COMM_ID"))
      saved_ = old;  // NOLINT(concurrency-mt-unsafe)
    if (rank0_address.empty()) {
      ::unsetenv("NCCL_COMM_ID");
    } else if (!saved_) {  // a gang's own variable is kept exactly as the pod has it
      ::setenv("NCCL_COMM_ID", rank0_address.c_str(), 1);
    }
  }
  ~ScopedCommIdEnv() {
    if (saved_) {
      ::setenv("NCCL_COMM_ID", saved_->c_str(), 1);
    } else {
      ::unsetenv("NCCL_COMM_ID");
    }
  }
  ScopedCommIdEnv(const ScopedCommIdEnv&) = delete;
  ScopedCommIdEnv& operator=(const ScopedCommIdEnv&) = delete;

 private:
  static std::mutex& Mutex() {
    static std::mutex mu;
    return mu;
  }
  std::lock_guard<std::mutex> lock_;
  std::optional<std::string> saved_;
};

// NCCL's calls on one rank's communicator and stream, for the collectives' run_nccl.
class RankCalls final : public NcclCalls {
 public:
  RankCalls(ncclComm_t comm, cudaStream_t stream) : comm_(comm), stream_(stream) {}
  Status AllReduceSum(const std::uint32_t* send, std::uint32_t* recv, std::size_t count) override {
    return NcclStatus(ncclAllReduce(send, recv, count, ncclUint32, ncclSum, comm_, stream_),
                      "ncclAllReduce", comm_);
  }
  Status AllGather(const std::uint32_t* send, std::uint32_t* recv,
                   std::size_t send_count) override {
    return NcclStatus(ncclAllGather(send, recv, send_count, ncclUint32, comm_, stream_),
                      "ncclAllGather", comm_);
  }
  Status ReduceScatterSum(const std::uint32_t* send, std::uint32_t* recv,
                          std::size_t recv_count) override {
    return NcclStatus(
        ncclReduceScatter(send, recv, recv_count, ncclUint32, ncclSum, comm_, stream_),
        "ncclReduceScatter", comm_);
  }
  bool HasAlltoAll() const override { return FindAlltoAll() != nullptr; }
  Status AlltoAll(const std::uint32_t* send, std::uint32_t* recv, std::size_t count) override {
    AlltoAllFn fn = FindAlltoAll();
    if (fn == nullptr) return Unimplemented("ncclAlltoAll: not in this NCCL (before 2.28)");
    return NcclStatus(fn(send, recv, count, ncclUint32, comm_, stream_), "ncclAlltoAll", comm_);
  }
  Status Broadcast(const std::uint32_t* send, std::uint32_t* recv, std::size_t count,
                   int root) override {
    return NcclStatus(ncclBroadcast(send, recv, count, ncclUint32, root, comm_, stream_),
                      "ncclBroadcast", comm_);
  }
  Status Send(const std::uint32_t* send, std::size_t count, int peer) override {
    return NcclStatus(ncclSend(send, count, ncclUint32, peer, comm_, stream_), "ncclSend", comm_);
  }
  Status Recv(std::uint32_t* recv, std::size_t count, int peer) override {
    return NcclStatus(ncclRecv(recv, count, ncclUint32, peer, comm_, stream_), "ncclRecv", comm_);
  }

 private:
  ncclComm_t comm_;
  cudaStream_t stream_;
};

int Blocks(std::int64_t count) {
  return static_cast<int>(std::clamp<std::int64_t>((count + 255) / 256, 1, 4096));
}

struct LocalRank {
  int device = 0;
  int rank = 0;
  ncclComm_t comm = nullptr;
  Stream stream;
  cuda::Event start, stop;  // around Run's calls on `stream`
  DeviceBuffer send;
  DeviceBuffer recv;
  DeviceBuffer counter;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(CommunicatorOptions options, std::string debug_log)
      : options_(std::move(options)), debug_log_(std::move(debug_log)) {
    log_offset_ = LogSize();
  }

  ~NcclCommunicator() override {
    if (aborted_) return;
    // Finalize flushes outstanding work; a peer that is gone would make it wait forever, so it
    // runs under the watchdog too, and ends in an abort.
    for (auto& l : locals_) {
      if (l.comm != nullptr) (void)ncclCommFinalize(l.comm);
    }
    Status st = WaitComms("ncclCommFinalize", WatchdogOptions{30, 1e-3});
    for (auto& l : locals_) {
      if (l.comm == nullptr) continue;
      if (st.ok()) {
        (void)ncclCommDestroy(l.comm);
      } else {
        (void)ncclCommAbort(l.comm);
      }
      l.comm = nullptr;
    }
  }

  Status Init() {
    const int n = static_cast<int>(options_.devices.size());
    locals_.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      RETURN_IF_ERROR(cuda::RequireCudaDevice(options_.devices[i]));
      locals_[i].device = options_.devices[i];
      locals_[i].rank = options_.ranks[i];
      ASSIGN_OR_RETURN(locals_[i].stream, Stream::Create());
      ASSIGN_OR_RETURN(locals_[i].start, cuda::Event::Create());
      ASSIGN_OR_RETURN(locals_[i].stop, cuda::Event::Create());
      ASSIGN_OR_RETURN(locals_[i].counter, DeviceBuffer::Allocate(sizeof(unsigned long long)));
    }
    {
      // With NCCL_COMM_ID set, every process gets the same id from rank 0's address, and rank
      // 0's init starts the bootstrap root there; without it the id (and root) is made here.
      ScopedCommIdEnv comm_id(options_.rank0_address);
      ncclUniqueId id;
      PG_NCCL(ncclGetUniqueId(&id));
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      PG_NCCL(ncclGroupStart());
      const Status started = [&]() -> Status {
        for (auto& l : locals_) {
          PG_CUDA(cudaSetDevice(l.device));
          const ncclResult_t r =
              ncclCommInitRankConfig(&l.comm, options_.world_size, id, l.rank, &config);
          if (r != ncclSuccess && r != ncclInProgress) {
            return NcclStatus(r, "ncclCommInitRankConfig");
          }
        }
        return Status::Ok();
      }();
      const ncclResult_t end = ncclGroupEnd();
      if (!started.ok() || (end != ncclSuccess && end != ncclInProgress)) {
        // The communicators created before the failure belong to a world that can never form:
        // abort them now (a failed init leaves its own handle null), rather than leave them to
        // a destructor whose finalize would wait for peers that never come.
        AbortAll();
        return started.ok() ? NcclStatus(end, "ncclGroupEnd (init)") : started;
      }
    }
    std::string ranks;
    for (const auto& l : locals_) ranks += (ranks.empty() ? "" : ",") + std::to_string(l.rank);
    const std::string what =
        "NCCL init of rank(s) " + ranks + " of " + std::to_string(options_.world_size) +
        (options_.rank0_address.empty()
             ? std::string(" (unique id made in this process)")
             : " (rendezvous at rank 0, NCCL_COMM_ID=" + options_.rank0_address + ")");
    Status st = WaitComms(what, WatchdogOptions{options_.init_timeout_seconds, 1e-3});
    if (st.code() == Code::kDeadlineExceeded) {
      return DeadlineExceeded(st.message() +
                              ": the other ranks never joined (not started, not reachable, or a "
                              "different world size)");
    }
    return st;
  }

  int world_size() const override { return options_.world_size; }
  std::vector<int> ranks() const override { return options_.ranks; }

  Status Reserve(std::int64_t elements) override {
    const std::size_t bytes =
        static_cast<std::size_t>(std::max<std::int64_t>(elements, 1)) * kElementBytes;
    for (auto& l : locals_) {
      PG_CUDA(cudaSetDevice(l.device));
      if (l.send.bytes() < bytes) {
        l.send = DeviceBuffer();
        ASSIGN_OR_RETURN(l.send, DeviceBuffer::Allocate(bytes));
      }
      if (l.recv.bytes() < bytes) {
        l.recv = DeviceBuffer();
        ASSIGN_OR_RETURN(l.recv, DeviceBuffer::Allocate(bytes));
      }
    }
    return Status::Ok();
  }

  Status Fill(const Call& call) override {
    for (auto& l : locals_) {
      PG_CUDA(cudaSetDevice(l.device));
      const CallPlacement at = PlaceCall(call, options_.world_size, l.rank);
      const std::int64_t clear = std::max(call.shape.recv_count, call.shape.send_count);
      PG_CUDA(cudaMemsetAsync(l.recv.get(), 0, static_cast<std::size_t>(clear) * kElementBytes,
                              l.stream.get()));
      std::uint32_t* in =
          call.in_place ? l.recv.as<std::uint32_t>() + at.input_offset : l.send.as<std::uint32_t>();
      FillKernel<<<Blocks(at.input_count), 256, 0, l.stream.get()>>>(in, at.input_count, l.rank,
                                                                     call.seed);
      PG_CUDA(cudaGetLastError());
    }
    for (auto& l : locals_) {
      PG_CUDA(cudaSetDevice(l.device));
      PG_CUDA(cudaStreamSynchronize(l.stream.get()));
    }
    return Status::Ok();
  }

  Result<double> Run(const Call& call, int iterations) override {
    if (aborted_) return Aborted("the communicator was aborted by the watchdog earlier");
    const std::string what = "NCCL " + std::string(Info(call.shape.op).name) + " of " +
                             std::to_string(call.shape.bytes) + " bytes on " +
                             std::to_string(options_.world_size) + " ranks";
    // Timed on the GPU: an event on every local rank's stream before the first call and after
    // the last; the figure is the slowest local rank's. The host's polling below is not timed.
    for (auto& l : locals_) {
      PG_CUDA(cudaSetDevice(l.device));
      PG_CUDA(cudaEventRecord(l.start.get(), l.stream.get()));
    }
    for (int i = 0; i < iterations; ++i) {
      PG_NCCL(ncclGroupStart());
      for (auto& l : locals_) {
        PG_CUDA(cudaSetDevice(l.device));
        Status st = Launch(call, l);
        if (!st.ok()) {
          (void)ncclGroupEnd();
          return st;
        }
      }
      const ncclResult_t end = ncclGroupEnd();
      if (end != ncclSuccess && end != ncclInProgress) {
        return NcclStatus(end, "ncclGroupEnd", locals_.front().comm);
      }
      // A non-blocking communicator may still be enqueueing: wait before the next NCCL call.
      if (end == ncclInProgress) {
        RETURN_IF_ERROR(WaitComms(what, WatchdogOptions{options_.call_timeout_seconds, 0}));
      }
    }
    for (auto& l : locals_) {
      PG_CUDA(cudaSetDevice(l.device));
      PG_CUDA(cudaEventRecord(l.stop.get(), l.stream.get()));
    }
    RETURN_IF_ERROR(WaitStreams(what));
    double slowest = 0;
    for (auto& l : locals_) {
      PG_CUDA(cudaSetDevice(l.device));
      float ms = 0;
      PG_CUDA(cudaEventElapsedTime(&ms, l.start.get(), l.stop.get()));
      slowest = std::max(slowest, static_cast<double>(ms) / 1e3);
    }
    return slowest;
  }

  Result<std::int64_t> CountWrong(const Call& call) override {
    std::int64_t wrong = 0;
    for (auto& l : locals_) {
      PG_CUDA(cudaSetDevice(l.device));
      const CallPlacement at = PlaceCall(call, options_.world_size, l.rank);
      PG_CUDA(cudaMemsetAsync(l.counter.get(), 0, sizeof(unsigned long long), l.stream.get()));
      CountWrongKernel<<<Blocks(at.result_count), 256, 0, l.stream.get()>>>(
          l.recv.as<std::uint32_t>() + at.result_offset, at.result_count, at.pattern,
          l.counter.as<unsigned long long>());
      PG_CUDA(cudaGetLastError());
      unsigned long long host = 0;
      PG_CUDA(cudaMemcpyAsync(&host, l.counter.get(), sizeof(host), cudaMemcpyDeviceToHost,
                              l.stream.get()));
      PG_CUDA(cudaStreamSynchronize(l.stream.get()));
      wrong += static_cast<std::int64_t>(host);
    }
    return wrong;
  }

  std::map<std::string, std::string> Details() const override {
    std::map<std::string, std::string> d;
    d["communicator"] = "NCCL, non-blocking communicators, one rank per GPU, group calls";
    d["ncclVersion"] = NcclLibraryVersion();
    const TransportReport report = Transport();
    d["transport"] = debug_log_.empty() ? "unknown: NCCL_DEBUG in the spec hides NCCL's INFO lines"
                                        : report.Summary();
    if (!report.network.empty()) d["ncclNetwork"] = report.network;
    for (const auto& [k, v] : ProcessNcclEnvironment()) d["env " + k] = v;
    return d;
  }

  bool InterNodeSockets() const override {
    const bool multi_node = options_.world_size > static_cast<int>(locals_.size());
    return multi_node && Transport().InterNodeSockets();
  }

 private:
  // The collective's own file says which NCCL calls it makes (CollectiveRules::run_nccl).
  Status Launch(const Call& call, LocalRank& l) {
    const CallPlacement at = PlaceCall(call, options_.world_size, l.rank);
    RankCalls calls(l.comm, l.stream.get());
    return Info(call.shape.op)
        .rules->run_nccl(
            calls, BuffersFor(call, at, l.send.as<std::uint32_t>(), l.recv.as<std::uint32_t>()));
  }

  // Polls every local communicator until none is in progress.
  Status WaitComms(const std::string& what, const WatchdogOptions& options) {
    return WaitWithWatchdog(
        what, options,
        [this]() -> Result<bool> {
          bool done = true;
          for (auto& l : locals_) {
            if (l.comm == nullptr) continue;
            ncclResult_t async = ncclSuccess;
            PG_NCCL(ncclCommGetAsyncError(l.comm, &async));
            if (async == ncclInProgress) {
              done = false;
            } else if (async != ncclSuccess) {
              AbortAll();
              return NcclStatus(async, "asynchronous NCCL error", nullptr);
            }
          }
          return done;
        },
        [this](const std::string&) { AbortAll(); });
  }

  // Polls the streams (and NCCL's asynchronous errors) until all work is done.
  Status WaitStreams(const std::string& what) {
    return WaitWithWatchdog(
        what, WatchdogOptions{options_.call_timeout_seconds, 0},
        [this]() -> Result<bool> {
          bool done = true;
          for (auto& l : locals_) {
            if (l.comm == nullptr) return Aborted("communicator aborted");
            const cudaError_t q = cudaStreamQuery(l.stream.get());
            if (q == cudaErrorNotReady) {
              done = false;
            } else if (q != cudaSuccess) {
              return cuda::CudaStatus(q, "cudaStreamQuery");
            }
            ncclResult_t async = ncclSuccess;
            PG_NCCL(ncclCommGetAsyncError(l.comm, &async));
            if (async != ncclSuccess && async != ncclInProgress) {
              AbortAll();
              return NcclStatus(async, "asynchronous NCCL error", nullptr);
            }
          }
          return done;
        },
        [this](const std::string&) { AbortAll(); });
  }

  void AbortAll() {
    for (auto& l : locals_) {
      if (l.comm != nullptr) (void)ncclCommAbort(l.comm);
      l.comm = nullptr;
    }
    aborted_ = true;
  }

  std::int64_t LogSize() const {
    if (debug_log_.empty()) return 0;
    std::ifstream in(debug_log_, std::ios::binary | std::ios::ate);
    return in ? static_cast<std::int64_t>(in.tellg()) : 0;
  }

  TransportReport Transport() const {
    if (debug_log_.empty()) return {};
    std::ifstream in(debug_log_, std::ios::binary);
    if (!in) return {};
    in.seekg(log_offset_);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return ParseNcclDebugLog(text);
  }

  CommunicatorOptions options_;
  std::string debug_log_;
  std::int64_t log_offset_ = 0;
  std::vector<LocalRank> locals_;
  bool aborted_ = false;
};

}  // namespace

Result<std::unique_ptr<Communicator>> CreateNcclCommunicator(const CommunicatorOptions& options,
                                                             const std::string& debug_log) {
  if (options.devices.empty() || options.devices.size() != options.ranks.size()) {
    return InvalidArgument("NCCL needs one global rank per local device");
  }
  for (int d : options.devices) RETURN_IF_ERROR(cuda::RequireCudaDevice(d));
  auto comm = std::make_unique<NcclCommunicator>(options, debug_log);
  RETURN_IF_ERROR(comm->Init());
  return std::unique_ptr<Communicator>(std::move(comm));
}

std::string NcclLibraryVersion() {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess || version == 0) return "";
  // NCCL_VERSION(X,Y,Z) is X*10000 + Y*100 + Z since 2.9.
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

bool BuiltWithNccl() { return true; }

}  // namespace perfgate::kernels::nccl
