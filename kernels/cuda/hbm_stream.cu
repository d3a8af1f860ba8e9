// hbm-stream kernels. Arrays of doubles read and written as double2 (16-byte accesses: one
// LDG.128 per pair of elements, the widest a thread can issue), grid-stride loops whose grid
// is exactly the blocks that fit on the SMs at once (from each compiled kernel's registers
// and shared memory), so every launch is one wave. The odd last element of an odd-length
// array is done by thread 0.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/device.h"
#include "kernels/cuda/formulas.h"
#include "kernels/cuda/hbm_stream.h"
#include "kernels/cuda/launch_gate.cuh"

namespace perfgate::kernels::cuda {
namespace {

__global__ void InitKernel(double* __restrict__ a, double* __restrict__ b, double* __restrict__ c,
                           double va, double vb, double vc, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    a[i] = va;
    b[i] = vb;
    c[i] = vc;
  }
}

// Grid-stride loop over pairs of elements; `body` handles pair i.
#define PG_STREAM_LOOP(body)                                                              \
  const std::int64_t pairs = n / 2;                                                       \
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;          \
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; \
       i < pairs; i += stride) {                                                          \
    body;                                                                                 \
  }

__global__ void CopyKernel(const double2* __restrict__ a, double2* __restrict__ c, std::int64_t n) {
  PG_STREAM_LOOP(c[i] = a[i]);
  if ((n & 1) && blockIdx.x == 0 && threadIdx.x == 0) {
    reinterpret_cast<double*>(c)[n - 1] = reinterpret_cast<const double*>(a)[n - 1];
  }
}

__global__ void ScaleKernel(double2* __restrict__ b, const double2* __restrict__ c, double s,
                            std::int64_t n) {
  PG_STREAM_LOOP({
    const double2 v = c[i];
    b[i] = make_double2(s * v.x, s * v.y);
  });
  if ((n & 1) && blockIdx.x == 0 && threadIdx.x == 0) {
    reinterpret_cast<double*>(b)[n - 1] = s * reinterpret_cast<const double*>(c)[n - 1];
  }
}

__global__ void AddKernel(const double2* __restrict__ a, const double2* __restrict__ b,
                          double2* __restrict__ c, std::int64_t n) {
  PG_STREAM_LOOP({
    const double2 x = a[i];
    const double2 y = b[i];
    c[i] = make_double2(x.x + y.x, x.y + y.y);
  });
  if ((n & 1) && blockIdx.x == 0 && threadIdx.x == 0) {
    reinterpret_cast<double*>(c)[n - 1] =
        reinterpret_cast<const double*>(a)[n - 1] + reinterpret_cast<const double*>(b)[n - 1];
  }
}

__global__ void TriadKernel(double2* __restrict__ a, const double2* __restrict__ b,
                            const double2* __restrict__ c, double s, std::int64_t n) {
  PG_STREAM_LOOP({
    const double2 x = b[i];
    const double2 y = c[i];
    a[i] = make_double2(x.x + s * y.x, x.y + s * y.y);
  });
  if ((n & 1) && blockIdx.x == 0 && threadIdx.x == 0) {
    reinterpret_cast<double*>(a)[n - 1] =
        reinterpret_cast<const double*>(b)[n - 1] + s * reinterpret_cast<const double*>(c)[n - 1];
  }
}

// Block-level partial sums; a second one-block launch adds the partials, so the figure includes
// the whole reduction (BabelStream reads the partials back to the host instead).
template <int kBlock>
__global__ void DotKernel(const double2* __restrict__ a, const double2* __restrict__ b,
                          double* __restrict__ partials, std::int64_t n) {
  __shared__ double shared[kBlock];
  double sum = 0;
  PG_STREAM_LOOP({
    const double2 x = a[i];
    const double2 y = b[i];
    sum += x.x * y.x + x.y * y.y;
  });
  if ((n & 1) && blockIdx.x == 0 && threadIdx.x == 0) {
    sum += reinterpret_cast<const double*>(a)[n - 1] * reinterpret_cast<const double*>(b)[n - 1];
  }
  shared[threadIdx.x] = sum;
  __syncthreads();
  for (int offset = blockDim.x / 2; offset > 0; offset /= 2) {
    if (threadIdx.x < offset) shared[threadIdx.x] += shared[threadIdx.x + offset];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = shared[0];
}

template <int kBlock>
__global__ void SumPartialsKernel(const double* __restrict__ partials, int count,
                                  double* __restrict__ out) {
  __shared__ double shared[kBlock];
  double sum = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) sum += partials[i];
  shared[threadIdx.x] = sum;
  __syncthreads();
  for (int offset = blockDim.x / 2; offset > 0; offset /= 2) {
    if (threadIdx.x < offset) shared[threadIdx.x] += shared[threadIdx.x + offset];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = shared[0];
}

__global__ void GatherKernel(const double* __restrict__ a, const double* __restrict__ b,
                             const double* __restrict__ c, const std::int64_t* __restrict__ index,
                             int count, double* __restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    out[i] = a[index[i]];
    out[count + i] = b[index[i]];
    out[2 * count + i] = c[index[i]];
  }
}

constexpr int kDotBlock = 1024;
// Rounds queued behind one gate: 16 rounds are 177 launches and event records, below the
// gate's backlog (LaunchGate::kMaxBacklog), so every batch is queued whole before it runs.
constexpr int kRoundsPerGate = 16;
constexpr int kEventsPerRound = 5;  // each op's end; the first op starts at the previous end

enum LaunchIndex { kCopyLaunch, kScaleLaunch, kAddLaunch, kTriadLaunch, kDotLaunch, kInitLaunch };

class HbmStreamImpl final : public HbmStream {
 public:
  Status Init(const HbmStreamConfig& config) {
    config_ = config;
    RETURN_IF_ERROR(RequireCudaDevice(config.device));
    if (config.elements < 2) return InvalidArgument("hbm-stream needs at least 2 elements");
    if (config.block_size < 32 || config.block_size > kDotBlock ||
        (config.block_size & (config.block_size - 1)) != 0) {
      return InvalidArgument("blockSize must be a power of two in [32, 1024]");
    }
    int sms = 0;
    PG_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, config.device));
    RETURN_IF_ERROR(Plan(kCopyLaunch, "copy", CopyKernel, sms));
    RETURN_IF_ERROR(Plan(kScaleLaunch, "scale", ScaleKernel, sms));
    RETURN_IF_ERROR(Plan(kAddLaunch, "add", AddKernel, sms));
    RETURN_IF_ERROR(Plan(kTriadLaunch, "triad", TriadKernel, sms));
    RETURN_IF_ERROR(Plan(kDotLaunch, "dot", DotKernel<kDotBlock>, sms));
    RETURN_IF_ERROR(Plan(kInitLaunch, "init", InitKernel, sms));
    const std::size_t bytes = static_cast<std::size_t>(config.elements) * sizeof(double);
    ASSIGN_OR_RETURN(a_, DeviceBuffer::Allocate(bytes));
    ASSIGN_OR_RETURN(b_, DeviceBuffer::Allocate(bytes));
    ASSIGN_OR_RETURN(c_, DeviceBuffer::Allocate(bytes));
    ASSIGN_OR_RETURN(partials_,
                     DeviceBuffer::Allocate(sizeof(double) * launches_[kDotLaunch].grid));
    ASSIGN_OR_RETURN(dot_, DeviceBuffer::Allocate(sizeof(double)));
    ASSIGN_OR_RETURN(gate_, LaunchGate::Create());
    ASSIGN_OR_RETURN(stream_, Stream::Create());
    events_.resize(1 + kEventsPerRound * kRoundsPerGate);
    for (auto& e : events_) {
      ASSIGN_OR_RETURN(e, Event::Create());
    }
    return Reset();
  }

  Status Reset() override {
    PG_CUDA(cudaSetDevice(config_.device));
    InitKernel<<<launches_[kInitLaunch].grid, config_.block_size, 0, stream_.get()>>>(
        a_.as<double>(), b_.as<double>(), c_.as<double>(), gpu::kStreamInitA, gpu::kStreamInitB,
        gpu::kStreamInitC, config_.elements);
    PG_CUDA(cudaGetLastError());
    PG_CUDA(cudaStreamSynchronize(stream_.get()));
    return Status::Ok();
  }

  Result<HbmStreamTimings> RunRounds(int rounds) override {
    PG_CUDA(cudaSetDevice(config_.device));
    HbmStreamTimings t;
    for (int done = 0; done < rounds;) {
      const int batch = std::min(rounds - done, kRoundsPerGate);
      RETURN_IF_ERROR(RunGatedBatch(batch, &t));
      done += batch;
    }
    cudaStream_t s = stream_.get();
    PG_CUDA(cudaMemcpyAsync(&t.last_dot, dot_.get(), sizeof(double), cudaMemcpyDeviceToHost, s));
    PG_CUDA(cudaStreamSynchronize(s));
    return t;
  }

  Status ReadBack(const std::vector<std::int64_t>& indices, std::vector<double>* a,
                  std::vector<double>* b, std::vector<double>* c) override {
    PG_CUDA(cudaSetDevice(config_.device));
    const int count = static_cast<int>(indices.size());
    for (std::int64_t i : indices) {
      if (i < 0 || i >= config_.elements) return InvalidArgument("index out of range");
    }
    ASSIGN_OR_RETURN(DeviceBuffer index, DeviceBuffer::Allocate(sizeof(std::int64_t) * count));
    ASSIGN_OR_RETURN(DeviceBuffer out, DeviceBuffer::Allocate(sizeof(double) * 3 * count));
    PG_CUDA(cudaMemcpyAsync(index.get(), indices.data(), sizeof(std::int64_t) * count,
                            cudaMemcpyHostToDevice, stream_.get()));
    GatherKernel<<<(count + 255) / 256, 256, 0, stream_.get()>>>(
        a_.as<double>(), b_.as<double>(), c_.as<double>(), index.as<std::int64_t>(), count,
        out.as<double>());
    PG_CUDA(cudaGetLastError());
    std::vector<double> host(3 * static_cast<std::size_t>(count));
    PG_CUDA(cudaMemcpyAsync(host.data(), out.get(), sizeof(double) * host.size(),
                            cudaMemcpyDeviceToHost, stream_.get()));
    PG_CUDA(cudaStreamSynchronize(stream_.get()));
    a->assign(host.begin(), host.begin() + count);
    b->assign(host.begin() + count, host.begin() + 2 * count);
    c->assign(host.begin() + 2 * count, host.end());
    return Status::Ok();
  }

  Status WriteElement(char array, std::int64_t index, double value) override {
    PG_CUDA(cudaSetDevice(config_.device));
    if (index < 0 || index >= config_.elements) return InvalidArgument("index out of range");
    const DeviceBuffer* target = array == 'a' ? &a_ : array == 'b' ? &b_ : &c_;
    // On the kernels' stream: a plain cudaMemcpy goes to the legacy stream, which a
    // non-blocking stream does not wait for, so the next kernel could run before the write.
    PG_CUDA(cudaMemcpyAsync(target->as<double>() + index, &value, sizeof(double),
                            cudaMemcpyHostToDevice, stream_.get()));
    PG_CUDA(cudaStreamSynchronize(stream_.get()));
    return Status::Ok();
  }

  std::vector<HbmStreamLaunch> Launches() const override {
    return {launches_.begin(), launches_.end()};
  }

  std::string LaunchDescription() const override {
    const HbmStreamLaunch& copy = launches_[kCopyLaunch];
    std::string text = "grid " + std::to_string(copy.grid) + " x " + std::to_string(copy.block) +
                       " threads (" + std::to_string(copy.grid / std::max(1, copy.sm_count)) +
                       " per SM, one wave; blocks that fit per SM at registers/thread:";
    for (int i = kCopyLaunch; i <= kDotLaunch; ++i) {
      text += std::string(i == kCopyLaunch ? " " : ", ") + launches_[i].kernel + " " +
              std::to_string(launches_[i].resident_per_sm) + " at " +
              std::to_string(launches_[i].registers);
    }
    text += "), double2 (16-byte) accesses, grid-stride loops";
    if (capped_) {
      text += "; blocksPerSm " + std::to_string(config_.blocks_per_sm) +
              " capped at what fits (more would run a second, partial wave)";
    }
    return text;
  }

 private:
  // Sizes kernel `index`'s grid from its compiled attributes on this device.
  template <typename Kernel>
  Status Plan(LaunchIndex index, const char* name, Kernel kernel, int sms) {
    cudaFuncAttributes attributes{};
    PG_CUDA(cudaFuncGetAttributes(&attributes, kernel));
    int resident = 0;
    PG_CUDA(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, config_.block_size, 0));
    if (resident < 1) {
      return FailedPrecondition(std::string("hbm-stream ") + name + " kernel (" +
                                std::to_string(attributes.numRegs) +
                                " registers/thread) does not fit on an SM at blockSize " +
                                std::to_string(config_.block_size));
    }
    const gpu::StreamGrid grid = gpu::StreamGridFor(sms, resident, config_.blocks_per_sm);
    if (index != kInitLaunch) capped_ = capped_ || grid.capped;
    HbmStreamLaunch& launch = launches_[index];
    launch.kernel = name;
    launch.grid = grid.blocks;
    launch.block = config_.block_size;
    launch.registers = attributes.numRegs;
    launch.resident_per_sm = resident;
    launch.sm_count = sms;
    return Status::Ok();
  }

  // Queues `batch` rounds behind a closed gate, opens it, waits, and adds each op's time.
  Status RunGatedBatch(int batch, HbmStreamTimings* t) {
    RETURN_IF_ERROR(gate_.Hold(stream_.get()));
    const Status queued = QueueRounds(batch);
    // Open the gate whatever happened: the stream must drain before we return.
    gate_.Open();
    RETURN_IF_ERROR(queued);
    const std::size_t last = static_cast<std::size_t>(batch * kEventsPerRound);
    PG_CUDA(cudaEventSynchronize(events_[last].get()));
    RETURN_IF_ERROR(gate_.CheckOpenedInTime("hbm-stream (" + std::to_string(batch) + " rounds)"));
    for (std::size_t i = 0; i < last; ++i) {
      float ms = 0;
      PG_CUDA(cudaEventElapsedTime(&ms, events_[i].get(), events_[i + 1].get()));
      t->seconds[i % kEventsPerRound] += static_cast<double>(ms) / 1e3;
    }
    return Status::Ok();
  }

  // Records events_[0], then per round each op followed by its end event; the start of each op
  // is the end of the one before it.
  Status QueueRounds(int batch) {
    const std::int64_t n = config_.elements;
    const int block = config_.block_size;
    cudaStream_t s = stream_.get();
    auto* a = a_.as<double2>();
    auto* b = b_.as<double2>();
    auto* c = c_.as<double2>();
    PG_CUDA(cudaEventRecord(events_[0].get(), s));
    for (int round = 0; round < batch; ++round) {
      const auto end = [&](int op) {
        return events_[static_cast<std::size_t>(round * kEventsPerRound + op + 1)].get();
      };
      CopyKernel<<<launches_[kCopyLaunch].grid, block, 0, s>>>(a, c, n);
      PG_CUDA(cudaEventRecord(end(0), s));
      ScaleKernel<<<launches_[kScaleLaunch].grid, block, 0, s>>>(b, c, gpu::kStreamScalar, n);
      PG_CUDA(cudaEventRecord(end(1), s));
      AddKernel<<<launches_[kAddLaunch].grid, block, 0, s>>>(a, b, c, n);
      PG_CUDA(cudaEventRecord(end(2), s));
      TriadKernel<<<launches_[kTriadLaunch].grid, block, 0, s>>>(a, b, c, gpu::kStreamScalar, n);
      PG_CUDA(cudaEventRecord(end(3), s));
      const int dot_grid = launches_[kDotLaunch].grid;
      DotKernel<kDotBlock><<<dot_grid, block, 0, s>>>(a, b, partials_.as<double>(), n);
      SumPartialsKernel<kDotBlock>
          <<<1, kDotBlock, 0, s>>>(partials_.as<double>(), dot_grid, dot_.as<double>());
      PG_CUDA(cudaEventRecord(end(4), s));
    }
    PG_CUDA(cudaGetLastError());
    return Status::Ok();
  }

  HbmStreamConfig config_;
  std::array<HbmStreamLaunch, 6> launches_{};
  bool capped_ = false;
  DeviceBuffer a_, b_, c_, partials_, dot_;
  LaunchGate gate_;
  Stream stream_;
  std::vector<Event> events_;
};

}  // namespace

Result<std::unique_ptr<HbmStream>> CreateHbmStream(const HbmStreamConfig& config) {
  auto impl = std::make_unique<HbmStreamImpl>();
  RETURN_IF_ERROR(impl->Init(config));
  return std::unique_ptr<HbmStream>(std::move(impl));
}

}  // namespace perfgate::kernels::cuda
