// hbm-stream kernels. Arrays of doubles read and written as double2 (16-byte accesses: one
// LDG.128 per pair of elements, the widest a thread can issue), grid-stride loops sized to
// fill every SM at full occupancy, so a launch costs a few microseconds against the ~0.5 ms
// a 1 GiB op takes at 4.8 TB/s. The odd last element of an odd-length array is done by
// thread 0.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/device.h"
#include "kernels/cuda/formulas.h"
#include "kernels/cuda/hbm_stream.h"

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
    int per_sm = config.blocks_per_sm;
    if (per_sm <= 0) {
      int max_threads = 0;
      PG_CUDA(cudaDeviceGetAttribute(&max_threads, cudaDevAttrMaxThreadsPerMultiProcessor,
                                     config.device));
      per_sm = std::max(1, max_threads / config.block_size);
    }
    grid_ = sms * per_sm;
    const std::size_t bytes = static_cast<std::size_t>(config.elements) * sizeof(double);
    ASSIGN_OR_RETURN(a_, DeviceBuffer::Allocate(bytes));
    ASSIGN_OR_RETURN(b_, DeviceBuffer::Allocate(bytes));
    ASSIGN_OR_RETURN(c_, DeviceBuffer::Allocate(bytes));
    ASSIGN_OR_RETURN(partials_, DeviceBuffer::Allocate(sizeof(double) * grid_));
    ASSIGN_OR_RETURN(dot_, DeviceBuffer::Allocate(sizeof(double)));
    ASSIGN_OR_RETURN(stream_, Stream::Create());
    for (auto& e : events_) {
      ASSIGN_OR_RETURN(e, Event::Create());
    }
    return Reset();
  }

  Status Reset() override {
    PG_CUDA(cudaSetDevice(config_.device));
    InitKernel<<<grid_, config_.block_size, 0, stream_.get()>>>(
        a_.as<double>(), b_.as<double>(), c_.as<double>(), gpu::kStreamInitA, gpu::kStreamInitB,
        gpu::kStreamInitC, config_.elements);
    PG_CUDA(cudaGetLastError());
    PG_CUDA(cudaStreamSynchronize(stream_.get()));
    return Status::Ok();
  }

  Result<HbmStreamTimings> RunRounds(int rounds) override {
    PG_CUDA(cudaSetDevice(config_.device));
    HbmStreamTimings t;
    const std::int64_t n = config_.elements;
    const int block = config_.block_size;
    cudaStream_t s = stream_.get();
    auto* a = a_.as<double2>();
    auto* b = b_.as<double2>();
    auto* c = c_.as<double2>();
    for (int round = 0; round < rounds; ++round) {
      // One event pair per op: events bracket each kernel on the GPU's timeline, so host-side
      // launch latency is not counted.
      PG_CUDA(cudaEventRecord(events_[0].get(), s));
      CopyKernel<<<grid_, block, 0, s>>>(a, c, n);
      PG_CUDA(cudaEventRecord(events_[1].get(), s));
      ScaleKernel<<<grid_, block, 0, s>>>(b, c, gpu::kStreamScalar, n);
      PG_CUDA(cudaEventRecord(events_[2].get(), s));
      AddKernel<<<grid_, block, 0, s>>>(a, b, c, n);
      PG_CUDA(cudaEventRecord(events_[3].get(), s));
      TriadKernel<<<grid_, block, 0, s>>>(a, b, c, gpu::kStreamScalar, n);
      PG_CUDA(cudaEventRecord(events_[4].get(), s));
      DotKernel<kDotBlock><<<grid_, block, 0, s>>>(a, b, partials_.as<double>(), n);
      SumPartialsKernel<kDotBlock>
          <<<1, kDotBlock, 0, s>>>(partials_.as<double>(), grid_, dot_.as<double>());
      PG_CUDA(cudaEventRecord(events_[5].get(), s));
      PG_CUDA(cudaGetLastError());
      for (int op = 0; op < 5; ++op) {
        ASSIGN_OR_RETURN(const double seconds, ElapsedSeconds(events_[op], events_[op + 1]));
        t.seconds[op] += seconds;
      }
    }
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
    PG_CUDA(
        cudaMemcpy(target->as<double>() + index, &value, sizeof(double), cudaMemcpyHostToDevice));
    return Status::Ok();
  }

  std::string LaunchDescription() const override {
    return "grid " + std::to_string(grid_) + " x " + std::to_string(config_.block_size) +
           " threads, double2 (16-byte) accesses, grid-stride loops";
  }

 private:
  HbmStreamConfig config_;
  int grid_ = 0;
  DeviceBuffer a_, b_, c_, partials_, dot_;
  Stream stream_;
  std::array<Event, 6> events_;
};

}  // namespace

Result<std::unique_ptr<HbmStream>> CreateHbmStream(const HbmStreamConfig& config) {
  auto impl = std::make_unique<HbmStreamImpl>();
  RETURN_IF_ERROR(impl->Init(config));
  return std::unique_ptr<HbmStream>(std::move(impl));
}

}  // namespace perfgate::kernels::cuda
