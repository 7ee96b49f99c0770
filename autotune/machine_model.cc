// The numbers the features and the prior take from the target: vector width and registers,
// FMA, cache sizes and the cores that run a parallel loop. Targets whose caches the system does
// not report get typical sizes of current cores. GPU targets: the warp and the multiprocessors'
// resources by architecture.
#include <algorithm>
#include <cmath>

#include "autotune/program_analysis.h"
#include "kiln/runtime/c_runtime_api.h"

namespace kiln::autotune::detail {

namespace {

constexpr double kDefaultL1Bytes = 32 * 1024;
constexpr double kDefaultL2Bytes = 1024 * 1024;
constexpr double kDefaultL3Bytes = 2 * 1024 * 1024;
constexpr int kDefaultWarpSize = 32;

// Per CUDA architecture (compute capability), a typical part's numbers (the data-center one
// where there is one): SMs, resident threads and blocks per SM, shared memory per SM, float
// lanes per SM, memory bandwidth in bytes per SM clock (bandwidth over boost clock), L2
// bandwidth per SM and clock, and the tensor cores' float16 flops (float32 accumulation) per SM
// and clock that mma.sync reaches: the dense peak over SMs and boost clock, on sm_90 and later
// about two thirds of it (the rest needs wgmma, which kiln does not emit).
struct Architecture {
  int capability;
  int multiprocessors, max_threads, max_blocks;
  double shared_kib, fp32_lanes, dram_bytes_per_cycle, l2_bytes_per_sm_cycle, matrix_flops;
};
constexpr Architecture kArchitectures[] = {
    {70, 80, 2048, 32, 96, 64, 590, 32, 1024},       // V100
    {75, 40, 1024, 16, 64, 64, 200, 32, 1024},       // T4
    {80, 108, 2048, 32, 164, 64, 1100, 48, 2048},    // A100
    {86, 84, 1536, 16, 100, 128, 550, 48, 1024},     // A40
    {89, 142, 1536, 24, 100, 128, 350, 48, 512},     // L40
    {90, 132, 2048, 32, 228, 128, 2000, 64, 2730},   // H100
    {100, 148, 2048, 32, 228, 128, 4000, 64, 4096},  // B200
    {120, 170, 1536, 32, 100, 128, 750, 64, 512},    // RTX 5090
};

// The newest architecture at or below `capability` (an OpenCL target, capability 0: the A100's
// numbers).
GpuModel gpu_model(int capability) {
  const Architecture* pick = &kArchitectures[2];
  if (capability > 0) {
    pick = &kArchitectures[0];
    for (const Architecture& a : kArchitectures) {
      if (a.capability <= capability) pick = &a;
    }
  }
  GpuModel gpu;
  gpu.multiprocessors = pick->multiprocessors;
  gpu.max_threads_per_sm = pick->max_threads;
  gpu.max_blocks_per_sm = pick->max_blocks;
  gpu.shared_bytes_per_sm = pick->shared_kib * 1024;
  gpu.fp32_lanes_per_sm = pick->fp32_lanes;
  gpu.dram_bytes_per_cycle = pick->dram_bytes_per_cycle;
  gpu.l2_bytes_per_sm_cycle = pick->l2_bytes_per_sm_cycle;
  gpu.matrix_flops_per_sm = pick->matrix_flops;
  return gpu;
}

}  // namespace

double slog(double x) {
  return x >= 0 ? std::log2(1 + x) : -std::log2(1 - x);
}

int MachineModel::lanes(const ir::DataType& scalar) const {
  int bits = std::max(8, scalar.bits());
  return std::max(1, vector_bits / bits);
}

double MachineModel::vectors(const ir::DataType& type) const {
  int per_register = lanes(type.element_of());
  return std::max(1, (type.lanes() + per_register - 1) / per_register);
}

MachineModel machine_model(const codegen::Target& target, const MachineOptions& options) {
  MachineModel machine;
  // A target without vector registers still computes one element at a time.
  machine.vector_bits = std::max(64, target.vector_register_bits);
  machine.num_vector_registers = target.num_vector_registers > 0 ? target.num_vector_registers : 16;
  machine.fma = target.has_fma && target.fp_contract;
  machine.l1_bytes = static_cast<double>(target.l1d_cache_bytes.value_or(kDefaultL1Bytes));
  machine.l2_bytes = static_cast<double>(target.l2_cache_bytes.value_or(kDefaultL2Bytes));
  machine.l3_bytes = static_cast<double>(target.l3_cache_bytes.value_or(kDefaultL3Bytes));
  if (target.is_gpu()) {
    // A target that promises no lock step (an OpenCL device of warp size 1) still runs its
    // threads in groups on a GPU: 32, as NVIDIA's do, is the estimate.
    int64_t warp = target.gpu.thread_warp_size;
    machine.warp_size = static_cast<int>(warp > 1 ? warp : kDefaultWarpSize);
    machine.gpu = gpu_model(options.gpu_compute_capability > 0 ? options.gpu_compute_capability
                                                               : target.compute_capability());
    if (options.gpu_multiprocessors > 0) machine.gpu.multiprocessors = options.gpu_multiprocessors;
    machine.fma = target.fp_contract;  // every GPU has FMA; the host's CPU does not matter
  }
  if (options.num_cores > 0) {
    machine.cores = options.num_cores;
  } else if (target.is_host) {
    // The pool that runs parallel loops, not the machine's core count: KILN_NUM_THREADS and the
    // process's CPU affinity decide how many threads share a parallel loop.
    machine.cores = std::max(1, static_cast<int>(KilnGetNumThreads()));
  } else {
    machine.cores = std::max(1, options.other_target_cores);
  }
  return machine;
}

}  // namespace kiln::autotune::detail
