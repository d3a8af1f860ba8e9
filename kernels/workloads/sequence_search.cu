// The GPU Smith-Waterman scorer of sequence-search: inter-sequence parallelism (CUDASW++'s
// inter-task scheme) with one thread per database sequence and one grid row per query. The
// query and BLOSUM62 sit in shared memory; each thread sweeps its target residue by residue
// (columns) and the query inside (rows), keeping the previous column's H and the horizontal
// gap state E per query residue in local memory, which the hardware interleaves across the
// threads of a warp (coalesced). Same recurrences as the host scorer (alignment.cc).
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/device.h"
#include "kernels/cuda/formulas.h"
#include "kernels/cuda/launch_gate.cuh"
#include "kernels/workloads/workload_backend.h"

namespace perfgate::kernels::workloads {
namespace {

using cuda::DeviceBuffer;
using cuda::Event;
using cuda::Stream;

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads)
    SmithWatermanKernel(const std::uint8_t* query_residues, const std::int64_t* query_offsets,
                        const std::uint8_t* target_residues, const std::int64_t* target_offsets,
                        int targets, const std::int8_t* matrix, int open_extend, int extend,
                        int* scores) {
  __shared__ std::int8_t sub[align::kAlphabet * align::kAlphabet];
  __shared__ std::uint8_t query[kMaxQueryLength];
  const int q = blockIdx.y;
  const std::int64_t q_begin = query_offsets[q];
  const int q_length = static_cast<int>(query_offsets[q + 1] - q_begin);
  for (int i = threadIdx.x; i < align::kAlphabet * align::kAlphabet; i += blockDim.x) {
    sub[i] = matrix[i];
  }
  for (int i = threadIdx.x; i < q_length; i += blockDim.x) query[i] = query_residues[q_begin + i];
  __syncthreads();
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= targets) return;

  int h[kMaxQueryLength];  // H of the previous column, per query residue
  int e[kMaxQueryLength];  // best score ending with a target residue against a gap
  for (int i = 0; i < q_length; ++i) {
    h[i] = 0;
    e[i] = 0;
  }
  int best = 0;
  const std::int64_t t_end = target_offsets[t + 1];
  for (std::int64_t j = target_offsets[t]; j < t_end; ++j) {
    // BLOSUM62 is symmetric: the target residue's row serves as its column.
    const std::int8_t* column = sub + target_residues[j] * align::kAlphabet;
    int diagonal = 0;  // H[i-1][j-1]
    int up = 0;        // H[i-1][j]
    int f = 0;         // best score ending with a query residue against a gap
    for (int i = 0; i < q_length; ++i) {
      e[i] = max(h[i] - open_extend, e[i] - extend);
      f = max(up - open_extend, f - extend);
      const int value = max(max(0, diagonal + column[query[i]]), max(e[i], f));
      diagonal = h[i];
      h[i] = value;
      up = value;
      best = max(best, value);
    }
  }
  scores[static_cast<std::int64_t>(q) * targets + t] = best;
}

class SwAlignerImpl final : public SwAligner {
 public:
  Status Init(int device, const align::SequenceSet& queries, const align::SequenceSet& targets,
              const align::Scoring& scoring) {
    device_ = device;
    queries_ = static_cast<int>(queries.size());
    targets_ = static_cast<int>(targets.size());
    scoring_ = scoring;
    for (std::size_t q = 0; q < queries.size(); ++q) {
      if (queries.length(q) > kMaxQueryLength) {
        return InvalidArgument("query " + std::to_string(q) + " has " +
                               std::to_string(queries.length(q)) + " residues, the GPU scorer " +
                               "takes at most " + std::to_string(kMaxQueryLength));
      }
    }
    PG_CUDA(cudaSetDevice(device));
    ASSIGN_OR_RETURN(stream_, Stream::Create());
    ASSIGN_OR_RETURN(start_, Event::Create());
    ASSIGN_OR_RETURN(stop_, Event::Create());
    ASSIGN_OR_RETURN(gate_, cuda::LaunchGate::Create());
    RETURN_IF_ERROR(Upload(queries.residues, &query_residues_));
    RETURN_IF_ERROR(Upload(queries.offsets, &query_offsets_));
    RETURN_IF_ERROR(Upload(targets.residues, &target_residues_));
    RETURN_IF_ERROR(Upload(targets.offsets, &target_offsets_));
    const align::SubstitutionMatrix& m = align::Blosum62();
    RETURN_IF_ERROR(Upload(std::vector<std::int8_t>(m.begin(), m.end()), &matrix_));
    ASSIGN_OR_RETURN(scores_,
                     DeviceBuffer::Allocate(sizeof(int) * static_cast<std::size_t>(queries_) *
                                            static_cast<std::size_t>(targets_)));
    PG_CUDA(cudaStreamSynchronize(stream_.get()));
    cudaFuncAttributes attributes{};
    PG_CUDA(cudaFuncGetAttributes(&attributes, SmithWatermanKernel));
    registers_ = attributes.numRegs;
    local_bytes_ = static_cast<std::int64_t>(attributes.localSizeBytes);
    return Status::Ok();
  }

  Result<double> Run() override {
    PG_CUDA(cudaSetDevice(device_));
    const dim3 grid((targets_ + kThreads - 1) / kThreads, queries_);
    // Behind the launch gate: the window opens once the kernel is queued.
    return cuda::TimeBehindGate(
        gate_, stream_.get(), start_, stop_, "sequence-search", [&]() -> Status {
          SmithWatermanKernel<<<grid, kThreads, 0, stream_.get()>>>(
              query_residues_.as<std::uint8_t>(), query_offsets_.as<std::int64_t>(),
              target_residues_.as<std::uint8_t>(), target_offsets_.as<std::int64_t>(), targets_,
              matrix_.as<std::int8_t>(), scoring_.gap_open + scoring_.gap_extend,
              scoring_.gap_extend, scores_.as<int>());
          PG_CUDA(cudaGetLastError());
          return Status::Ok();
        });
  }

  Result<std::vector<int>> Scores() override {
    PG_CUDA(cudaSetDevice(device_));
    std::vector<int> out(static_cast<std::size_t>(queries_) * targets_);
    PG_CUDA(cudaMemcpyAsync(out.data(), scores_.get(), sizeof(int) * out.size(),
                            cudaMemcpyDeviceToHost, stream_.get()));
    PG_CUDA(cudaStreamSynchronize(stream_.get()));
    return out;
  }

  std::string Description() const override {
    return "one thread per target, grid " + std::to_string((targets_ + kThreads - 1) / kThreads) +
           " x " + std::to_string(queries_) + " blocks of " + std::to_string(kThreads) +
           " threads, " + std::to_string(registers_) + " registers/thread, " +
           gpu::FormatBytes(local_bytes_) + " local memory/thread";
  }

 private:
  template <typename T>
  Status Upload(const std::vector<T>& host, DeviceBuffer* out) {
    ASSIGN_OR_RETURN(*out, DeviceBuffer::Allocate(sizeof(T) * host.size()));
    if (!host.empty()) {
      PG_CUDA(cudaMemcpyAsync(out->get(), host.data(), sizeof(T) * host.size(),
                              cudaMemcpyHostToDevice, stream_.get()));
    }
    // The host vector may go away once this returns.
    PG_CUDA(cudaStreamSynchronize(stream_.get()));
    return Status::Ok();
  }

  int device_ = 0;
  int queries_ = 0;
  int targets_ = 0;
  align::Scoring scoring_;
  Stream stream_;
  Event start_, stop_;
  cuda::LaunchGate gate_;
  DeviceBuffer query_residues_, query_offsets_, target_residues_, target_offsets_, matrix_, scores_;
  int registers_ = 0;
  std::int64_t local_bytes_ = 0;
};

}  // namespace

Result<std::unique_ptr<SwAligner>> CreateSwAligner(int device, const align::SequenceSet& queries,
                                                   const align::SequenceSet& targets,
                                                   const align::Scoring& scoring) {
  RETURN_IF_ERROR(cuda::RequireCudaDevice(device));
  auto impl = std::make_unique<SwAlignerImpl>();
  RETURN_IF_ERROR(impl->Init(device, queries, targets, scoring));
  return std::unique_ptr<SwAligner>(std::move(impl));
}

}  // namespace perfgate::kernels::workloads
