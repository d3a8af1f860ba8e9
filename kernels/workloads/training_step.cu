// The device side of training-step: per GPU (one data-parallel rank each, one process, one
// NCCL communicator per device from ncclCommInitAll), the forward and backward matmuls on a
// compute stream and the gradient buckets' all-reduces on a communication stream, ordered by
// one event per bucket, as PyTorch DDP overlaps them. One host thread queues every rank's work;
// the all-reduce of a bucket is one NCCL group over the ranks.
#include <nccl.h>

#include <algorithm>
#include <map>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/device.h"
#include "kernels/cuda/launch_gate.cuh"
#include "kernels/workloads/lt_matmul.cuh"
#include "kernels/workloads/transformer.h"
#include "kernels/workloads/workload_backend.h"

namespace perfgate::kernels::workloads {
namespace {

using cuda::DeviceBuffer;
using cuda::Event;
using cuda::Stream;

Status NcclStatus(ncclResult_t result, const char* what) {
  if (result == ncclSuccess) return Status::Ok();
  return Internal(std::string(what) + ": " + ncclGetErrorString(result));
}
#define PG_NCCL(expr) RETURN_IF_ERROR(NcclStatus((expr), #expr))

class NcclComm {
 public:
  NcclComm() = default;
  explicit NcclComm(ncclComm_t c) : c_(c) {}
  NcclComm(NcclComm&& o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
  NcclComm& operator=(NcclComm&& o) noexcept {
    if (this != &o) {
      Release();
      c_ = std::exchange(o.c_, nullptr);
    }
    return *this;
  }
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ~NcclComm() { Release(); }
  ncclComm_t get() const { return c_; }

 private:
  void Release() noexcept {
    if (c_ != nullptr) (void)ncclCommDestroy(c_);
    c_ = nullptr;
  }
  ncclComm_t c_ = nullptr;
};

constexpr std::size_t kWorkspaceBytes = 32u << 20;

struct Rank {
  int device = 0;
  Stream compute, comm;
  LtContext lt;
  std::vector<LtPlan> forward, backward;
  DeviceBuffer a, b, scratch, gradients, workspace;
  std::vector<Event> bucket_ready;
  Event start, end, comm_start, comm_end, comm_done;
  NcclComm nccl;
};

class TrainingStepRunnerImpl final : public TrainingStepRunner {
 public:
  Status Init(const TrainingStepConfig& config) {
    config_ = config;
    const gpu::GemmDtypeInfo info =
        *gpu::FindGemmDtype(config.dtype == gpu::GemmDtype::kFp16 ? "fp16" : "bf16");
    element_bytes_ = info.input_bytes;
    nccl_type_ = config.dtype == gpu::GemmDtype::kFp16 ? ncclFloat16 : ncclBfloat16;
    buckets_ = PlanBuckets(config.backward, config.bucket_bytes / element_bytes_);
    std::int64_t a_elements = 0;
    std::int64_t b_elements = 0;
    std::int64_t c_elements = 0;
    for (const auto* list : {&config.forward, &config.backward}) {
      for (const MatmulShape& s : *list) {
        a_elements = std::max(a_elements, s.k * s.m);
        b_elements = std::max(b_elements, s.k * s.n);
        if (s.weight_gradient) {
          gradient_elements_ += s.m * s.n;
        } else {
          c_elements = std::max(c_elements, s.m * s.n);
        }
      }
    }
    for (int device : config.devices) RETURN_IF_ERROR(cuda::RequireCudaDevice(device));
    // NCCL sets up its connections on the host in the first all-reduce (the warm-up step),
    // behind the gate: allow it far longer than a host needs to queue launches.
    ASSIGN_OR_RETURN(gate_, cuda::LaunchGate::Create(60'000'000'000ULL));
    ranks_.resize(config.devices.size());
    std::vector<ncclComm_t> comms(config.devices.size(), nullptr);
    PG_NCCL(ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), config.devices.data()));
    for (std::size_t r = 0; r < ranks_.size(); ++r) ranks_[r].nccl = NcclComm(comms[r]);
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      Rank& rank = ranks_[r];
      rank.device = config.devices[r];
      PG_CUDA(cudaSetDevice(rank.device));
      ASSIGN_OR_RETURN(rank.compute, Stream::Create());
      ASSIGN_OR_RETURN(rank.comm, Stream::Create());
      for (Event* e : {&rank.start, &rank.end, &rank.comm_start, &rank.comm_end, &rank.comm_done}) {
        ASSIGN_OR_RETURN(*e, Event::Create());
      }
      for (std::size_t b = 0; b < buckets_.begin.size(); ++b) {
        ASSIGN_OR_RETURN(Event e, Event::Create());
        rank.bucket_ready.push_back(std::move(e));
      }
      ASSIGN_OR_RETURN(rank.a, DeviceBuffer::Allocate(a_elements * element_bytes_));
      ASSIGN_OR_RETURN(rank.b, DeviceBuffer::Allocate(b_elements * element_bytes_));
      ASSIGN_OR_RETURN(rank.scratch, DeviceBuffer::Allocate(c_elements * element_bytes_));
      ASSIGN_OR_RETURN(rank.gradients, DeviceBuffer::Allocate(gradient_elements_ * element_bytes_));
      ASSIGN_OR_RETURN(rank.workspace, DeviceBuffer::Allocate(kWorkspaceBytes));
      // Each rank sees different data, as data-parallel ranks do.
      const std::uint64_t seed = cuda::Mix64(config.seed + 977 * r);
      WithElementType(config.dtype, [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        FillUniformKernel<T>
            <<<1024, 256, 0, rank.compute.get()>>>(rank.a.as<T>(), a_elements, seed);
        FillUniformKernel<T>
            <<<1024, 256, 0, rank.compute.get()>>>(rank.b.as<T>(), b_elements, seed + 1);
      });
      PG_CUDA(cudaGetLastError());
      PG_LT(cublasLtCreate(rank.lt.out()));
      for (const MatmulShape& s : config.forward) {
        rank.forward.emplace_back();
        RETURN_IF_ERROR(rank.forward.back()
                            .Init(rank.lt.get(), config.dtype, s.m, s.n, s.k, kWorkspaceBytes)
                            .WithContext(s.name));
      }
      for (const MatmulShape& s : config.backward) {
        rank.backward.emplace_back();
        RETURN_IF_ERROR(rank.backward.back()
                            .Init(rank.lt.get(), config.dtype, s.m, s.n, s.k, kWorkspaceBytes)
                            .WithContext(s.name));
      }
      PG_CUDA(cudaStreamSynchronize(rank.compute.get()));
    }
    return Status::Ok();
  }

  Result<double> Step() override { return Queue(true, true); }
  Result<double> ComputeOnly() override { return Queue(true, false); }
  Result<double> CommOnly() override { return Queue(false, true); }

  Result<std::vector<std::vector<double>>> ReadGradients(
      const std::vector<std::int64_t>& indices) override {
    std::vector<std::vector<double>> out;
    const int count = static_cast<int>(indices.size());
    for (Rank& rank : ranks_) {
      PG_CUDA(cudaSetDevice(rank.device));
      ASSIGN_OR_RETURN(DeviceBuffer d_indices,
                       DeviceBuffer::Allocate(sizeof(std::int64_t) * indices.size()));
      ASSIGN_OR_RETURN(DeviceBuffer d_values,
                       DeviceBuffer::Allocate(sizeof(double) * indices.size()));
      PG_CUDA(cudaMemcpyAsync(d_indices.get(), indices.data(),
                              sizeof(std::int64_t) * indices.size(), cudaMemcpyHostToDevice,
                              rank.compute.get()));
      WithElementType(config_.dtype, [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        GatherKernel<T><<<(count + 127) / 128, 128, 0, rank.compute.get()>>>(
            rank.gradients.as<T>(), d_indices.as<std::int64_t>(), count, d_values.as<double>());
      });
      PG_CUDA(cudaGetLastError());
      std::vector<double> values(indices.size());
      PG_CUDA(cudaMemcpyAsync(values.data(), d_values.get(), sizeof(double) * values.size(),
                              cudaMemcpyDeviceToHost, rank.compute.get()));
      PG_CUDA(cudaStreamSynchronize(rank.compute.get()));
      out.push_back(std::move(values));
    }
    return out;
  }

  std::int64_t gradient_elements() const override { return gradient_elements_; }
  int buckets() const override { return static_cast<int>(buckets_.begin.size()); }

  std::string Description() const override {
    int nccl_version = 0;
    (void)ncclGetVersion(&nccl_version);
    return std::to_string(ranks_.size()) + " data-parallel ranks, " +
           std::to_string(config_.forward.size() + config_.backward.size()) +
           " cuBLASLt matmuls (TN, heuristic's first algorithm) per step, " +
           std::to_string(buckets_.begin.size()) + " gradient buckets of " +
           gpu::FormatBytes(config_.bucket_bytes) + ", NCCL " + std::to_string(nccl_version);
  }

 private:
  // Queues one step's matmuls and/or all-reduces on every rank behind the launch gate and
  // returns the slowest rank's seconds. Blocking.
  Result<double> Queue(bool compute, bool communicate) {
    // Every rank's compute stream waits at the gate; the communication streams wait on the
    // start events behind it. The windows open once the step is queued (or on a backlog of
    // LaunchGate::kMaxBacklog operations per rank).
    for (Rank& rank : ranks_) {
      PG_CUDA(cudaSetDevice(rank.device));
      const Status held = gate_.Hold(rank.compute.get());
      if (!held.ok()) return Drain(held);
    }
    const Status queued = QueueStep(compute, communicate);
    gate_.Open();
    if (!queued.ok()) return Drain(queued);
    double slowest = 0;
    for (Rank& rank : ranks_) {
      PG_CUDA(cudaSetDevice(rank.device));
      ASSIGN_OR_RETURN(const double seconds, cuda::ElapsedSeconds(rank.start, rank.end));
      slowest = std::max(slowest, seconds);
    }
    RETURN_IF_ERROR(gate_.CheckOpenedInTime("training-step"));
    return slowest;
  }

  // Opens the gate and waits for every rank's streams, then returns `error`.
  Status Drain(Status error) {
    gate_.Open();
    for (Rank& rank : ranks_) {
      (void)cudaSetDevice(rank.device);
      (void)cudaStreamSynchronize(rank.compute.get());
      (void)cudaStreamSynchronize(rank.comm.get());
    }
    return error;
  }

  // The step's work, from the start events to the end events. Non-blocking.
  Status QueueStep(bool compute, bool communicate) {
    for (Rank& rank : ranks_) {
      PG_CUDA(cudaSetDevice(rank.device));
      PG_CUDA(cudaEventRecord(rank.start.get(), rank.compute.get()));
      // The communication stream starts with the step, not before it.
      PG_CUDA(cudaStreamWaitEvent(rank.comm.get(), rank.start.get(), 0));
    }
    if (compute) {
      for (std::size_t i = 0; i < config_.forward.size(); ++i) {
        for (Rank& rank : ranks_) {
          PG_CUDA(cudaSetDevice(rank.device));
          RETURN_IF_ERROR(rank.forward[i].Run(rank.a.get(), rank.b.get(), rank.scratch.get(),
                                              rank.workspace.get(), kWorkspaceBytes,
                                              rank.compute.get()));
        }
        gate_.Queued(2);  // per rank: cuBLASLt may add a split-K reduction kernel
      }
    }
    std::int64_t gradient_offset = 0;
    for (std::size_t i = 0; i < config_.backward.size(); ++i) {
      const MatmulShape& s = config_.backward[i];
      if (compute) {
        for (Rank& rank : ranks_) {
          PG_CUDA(cudaSetDevice(rank.device));
          void* c = s.weight_gradient ? static_cast<char*>(rank.gradients.get()) +
                                            gradient_offset * element_bytes_
                                      : rank.scratch.get();
          RETURN_IF_ERROR(rank.backward[i].Run(rank.a.get(), rank.b.get(), c, rank.workspace.get(),
                                               kWorkspaceBytes, rank.compute.get()));
        }
        gate_.Queued(2);
      }
      if (s.weight_gradient) gradient_offset += s.m * s.n;
      if (!communicate) continue;
      for (const int bucket : buckets_.ready_after[i]) {
        for (Rank& rank : ranks_) {
          PG_CUDA(cudaSetDevice(rank.device));
          PG_CUDA(cudaEventRecord(rank.bucket_ready[bucket].get(), rank.compute.get()));
          PG_CUDA(cudaStreamWaitEvent(rank.comm.get(), rank.bucket_ready[bucket].get(), 0));
        }
        PG_NCCL(ncclGroupStart());
        for (Rank& rank : ranks_) {
          char* p =
              static_cast<char*>(rank.gradients.get()) + buckets_.begin[bucket] * element_bytes_;
          const ncclResult_t r =
              ncclAllReduce(p, p, static_cast<std::size_t>(buckets_.count[bucket]), nccl_type_,
                            ncclSum, rank.nccl.get(), rank.comm.get());
          if (r != ncclSuccess) {
            (void)ncclGroupEnd();
            return NcclStatus(r, "ncclAllReduce");
          }
        }
        PG_NCCL(ncclGroupEnd());
        gate_.Queued(3);  // per rank: the event, the wait and the all-reduce
      }
    }
    for (Rank& rank : ranks_) {
      PG_CUDA(cudaSetDevice(rank.device));
      PG_CUDA(cudaEventRecord(rank.comm_done.get(), rank.comm.get()));
      PG_CUDA(cudaStreamWaitEvent(rank.compute.get(), rank.comm_done.get(), 0));
      PG_CUDA(cudaEventRecord(rank.end.get(), rank.compute.get()));
    }
    return Status::Ok();
  }

  TrainingStepConfig config_;
  int element_bytes_ = 2;
  ncclDataType_t nccl_type_ = ncclBfloat16;
  Buckets buckets_;
  std::int64_t gradient_elements_ = 0;
  std::vector<Rank> ranks_;
  cuda::LaunchGate gate_;
};

}  // namespace

Result<std::unique_ptr<TrainingStepRunner>> CreateTrainingStepRunner(
    const TrainingStepConfig& config) {
  if (config.devices.empty()) return InvalidArgument("training-step needs at least one device");
  RETURN_IF_ERROR(cuda::RequireCudaDevice(config.devices.front()));
  auto impl = std::make_unique<TrainingStepRunnerImpl>();
  RETURN_IF_ERROR(impl->Init(config));
  return std::unique_ptr<TrainingStepRunner>(std::move(impl));
}

}  // namespace perfgate::kernels::workloads
