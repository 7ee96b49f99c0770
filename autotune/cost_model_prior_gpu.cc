// The analytical prior of GPU targets: cycles of each kernel from its thread blocks' occupancy of
// the multiprocessors, their instructions, their shared-memory wavefronts and global-memory
// sectors, and the chip's memory bandwidth (the model is described in cost_model.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "autotune/program_analysis.h"

namespace kiln::autotune::detail {

namespace {

// Registers a thread needs besides its local arrays: addresses, indices, loop counters and the
// operands in flight.
constexpr double kBaseRegisters = 32;
constexpr double kMaxRegisters = 255;
// Registers are given to a warp in units of 256 (8 per thread), shared memory to a block with
// 1 KiB the system reserves.
constexpr double kRegisterUnit = 256;
constexpr double kReservedSharedBytes = 1024;
// Cycles from one instruction to a dependent one (float FMA), independent instructions a
// thread has in flight (at most), and global loads in flight per warp.
constexpr double kArithmeticLatency = 4;
constexpr double kMaxIndependent = 8;
constexpr double kLoadsInFlight = 4;
// Sectors a multiprocessor's L1 moves per cycle (128 bytes).
constexpr double kL1SectorsPerCycle = 4;
// Instructions of a float division, and of a math function (exp, log, sqrt, ...).
constexpr double kDivisionInstructions = 8;
constexpr double kMathInstructions = 8;
// Cycles from a tensor cores' mma.sync to one that uses its accumulators, and the independent
// ones a warp has in flight: a fragment of the accumulator per 8 of the thread's local words
// (each takes two m16n8k16, each 4 words).
constexpr double kMatrixLatency = 32;
constexpr double kMatrixWordsPerInstruction = 4;

double product(const std::map<std::string, int64_t>& extents, const char* prefix) {
  double n = 1;
  for (const auto& [tag, extent] : extents) {
    if (tag.rfind(prefix, 0) == 0) n *= static_cast<double>(std::max<int64_t>(extent, 1));
  }
  return n;
}

// Thread instructions of one execution of a store's value.
struct Instructions {
  double fp32 = 0;    // on the float pipes
  double other = 0;   // integer, logic, conversions, division and math sequences, mma
  double matrix = 0;  // flops on the tensor cores
  double mma = 0;     // of which instructions
};

Instructions instructions(const Arithmetic& a) {
  Instructions n;
  // float_fma counts the two operations of each FMA.
  n.fp32 =
      a.float_add_sub + a.float_mul + a.float_fma / 2 + a.float_min_max + a.float_compare_select;
  n.other = a.int_arith + a.int_bitwise + a.bool_logic + a.casts +
            kDivisionInstructions * (a.float_div + a.int_div_mod) +
            kMathInstructions * a.float_math + a.matrix_instructions;
  n.matrix = a.float_matrix;
  n.mma = a.matrix_instructions;
  return n;
}

// Resident thread blocks per multiprocessor: the fewest that the threads, the blocks, the
// shared memory and the registers allow.
double resident_blocks(const GpuModel& gpu, double warps, int warp_size, double shared_bytes,
                       double registers) {
  double blocks = std::min<double>(gpu.max_blocks_per_sm,
                                   std::floor(gpu.max_threads_per_sm / (warps * warp_size)));
  if (shared_bytes > 0) {
    blocks = std::min(blocks,
                      std::floor(gpu.shared_bytes_per_sm / (shared_bytes + kReservedSharedBytes)));
  }
  double per_warp = std::ceil(registers * warp_size / kRegisterUnit) * kRegisterUnit;
  blocks = std::min(blocks, std::floor(std::floor(gpu.registers_per_sm / per_warp) / warps));
  return std::max(0.0, blocks);
}

}  // namespace

double Kernel::threads_per_block() const {
  return product(extents, "threadIdx.");
}

double Kernel::blocks() const {
  return product(extents, "blockIdx.");
}

GpuEstimate estimate_gpu_program(const Program& program, const MachineModel& machine) {
  GpuEstimate estimate;
  const GpuModel& gpu = machine.gpu;
  if (gpu.multiprocessors <= 0 || machine.warp_size <= 0) return estimate;  // a CPU
  size_t num_kernels = program.kernels.size();
  estimate.kernels.resize(num_kernels);
  PriorEstimate& total = estimate.total;
  total.operations = program_operations(program);
  std::vector<WarpTraffic> shared = shared_traffic(program, machine);
  std::vector<WarpTraffic> global = global_traffic(program, machine);
  double warp_size = machine.warp_size;

  // Step 1. Per kernel: thread instructions of its stores, the buffers of global memory it
  // touches.
  std::vector<Instructions> work(num_kernels);
  for (const Store& store : program.stores) {
    if (store.kernel < 0) continue;
    Instructions n = instructions(store.arithmetic);
    work[store.kernel].fp32 += executions(store, program) * n.fp32;
    work[store.kernel].other += executions(store, program) * n.other;
    work[store.kernel].matrix += executions(store, program) * n.matrix;
    work[store.kernel].mma += executions(store, program) * n.mma;
  }
  std::vector<std::map<const ir::Var*, double>> buffers(num_kernels);
  for (const DeviceAccess& access : program.global_accesses) {
    if (access.kernel >= 0) buffers[access.kernel][access.data] = access.buffer_bytes;
  }

  double busy = 0;
  for (size_t k = 0; k < num_kernels; ++k) {
    const Kernel& kernel = program.kernels[k];
    KernelEstimate& out = estimate.kernels[k];
    out.shared = shared[k];
    out.global = global[k];
    double blocks = kernel.blocks();
    double warps = std::ceil(kernel.threads_per_block() / warp_size);

    // Step 2. Occupancy: registers (an estimate: one per 4-byte word of the thread's local
    // arrays, which stay in registers when their indices are constants, plus the base; the
    // kernel's __launch_bounds__ makes the compiler keep a block's registers within a
    // multiprocessor's and spill the rest), the blocks each multiprocessor holds, and those the
    // busiest one runs.
    double local_words = out.local_words = kernel.local_bytes / 4;
    double needed = kBaseRegisters + local_words;
    double most =
        std::min(kMaxRegisters, std::floor(gpu.registers_per_sm / (warps * warp_size) / 8) * 8);
    out.registers = std::min(most, std::ceil(needed / 8) * 8);
    out.spilled_registers = std::max(0.0, needed - most);
    out.blocks_per_sm =
        resident_blocks(gpu, warps, machine.warp_size, kernel.shared_bytes, out.registers);
    if (out.blocks_per_sm < 1) {
      // It cannot launch (too many threads or too much shared memory): the slowest of all.
      out.cycles = out.compute_cycles = 1e30;
      total.cycles += out.cycles;
      continue;
    }
    double busiest = std::ceil(blocks / gpu.multiprocessors);
    double resident = std::min(out.blocks_per_sm, busiest);
    double active_warps = resident * warps;
    out.occupancy = active_warps * warp_size / gpu.max_threads_per_sm;
    out.sm_balance = blocks / (busiest * gpu.multiprocessors);

    // Step 3. The busiest multiprocessor's time: its blocks run `rounds` after one another,
    // `resident` at a time. Throughput: their warp instructions (float ones on the float lanes;
    // all of them, loads and stores included, one per scheduler and cycle), their shared-memory
    // wavefronts (one per cycle), their global sectors through L1 and L2. Latency: in each
    // round a warp's instructions wait kArithmeticLatency per kMaxIndependent (at most) of
    // them, as many as the thread's accumulators allow, its tensor-core instructions
    // kMatrixLatency per as many as its accumulator fragments, and its global loads wait the
    // memory latency per kLoadsInFlight of them (a store does not wait); the round's warps
    // overlap.
    double rounds = std::ceil(busiest / resident);
    double fp32 = busiest * work[k].fp32 / warp_size / blocks;
    double matrix = busiest * work[k].matrix / blocks;
    double issued =
        (work[k].fp32 + work[k].other) / warp_size + out.shared.requests + out.global.requests;
    double compute =
        std::max({fp32 / (gpu.fp32_lanes_per_sm / warp_size),
                  busiest * issued / blocks / gpu.issue_per_sm, matrix / gpu.matrix_flops_per_sm});
    double independent = std::clamp(local_words, 1.0, kMaxIndependent);
    double warp_instructions = issued / (blocks * warps);
    double warp_mma = work[k].mma / warp_size / (blocks * warps);
    double independent_mma = std::max(1.0, local_words / (2 * kMatrixWordsPerInstruction));
    double compute_latency = rounds * (warp_instructions / independent * kArithmeticLatency +
                                       warp_mma / independent_mma * kMatrixLatency);
    double sectors = busiest * out.global.transactions / blocks;
    double bandwidth =
        std::max(sectors / kL1SectorsPerCycle, 32 * sectors / gpu.l2_bytes_per_sm_cycle);
    double warp_loads = out.global.load_requests / (blocks * warps);
    double memory_latency = rounds * std::ceil(warp_loads / kLoadsInFlight) * gpu.memory_latency;
    double wavefronts = busiest * out.shared.transactions / blocks;
    double throughput_cycles = std::max({compute, bandwidth, wavefronts});
    double sm_cycles = std::max({throughput_cycles, compute_latency, memory_latency});
    // A spilled register goes through local memory (L1) where it is used.
    if (out.spilled_registers > 0) sm_cycles *= 1 + out.spilled_registers / out.registers;

    // Step 4. The kernel: the busiest multiprocessor's time, at least the chip's memory
    // traffic (each global buffer it touches moved once), and the launch.
    double dram = 0;
    for (const auto& [data, bytes] : buffers[k]) dram += bytes;
    double dram_cycles = dram / gpu.dram_bytes_per_cycle;
    out.compute_cycles = std::max(compute, compute_latency);
    out.memory_cycles = std::max({bandwidth, memory_latency, wavefronts, dram_cycles});
    out.latency_cycles = std::max(0.0, sm_cycles - throughput_cycles);
    out.cycles = std::max(sm_cycles, dram_cycles) + gpu.launch_cycles;
    total.cycles += out.cycles;
    total.compute_cycles += out.compute_cycles;
    total.memory_cycles += out.memory_cycles;
    total.latency_cycles += out.latency_cycles;
    busy += out.cycles * out.sm_balance;
    if (estimate.dominant < 0 || out.cycles > estimate.kernels[estimate.dominant].cycles) {
      estimate.dominant = static_cast<int>(k);
    }
  }
  if (total.cycles <= 0) total.cycles = gpu.launch_cycles;
  total.parallel_efficiency = busy > 0 ? busy / total.cycles : 0;
  total.throughput = total.operations / total.cycles;
  if (estimate.dominant >= 0) {
    const KernelEstimate& d = estimate.kernels[estimate.dominant];
    total.accumulator_registers = d.local_words;
    total.spilled_registers = d.spilled_registers;
  }
  return estimate;
}

}  // namespace kiln::autotune::detail
