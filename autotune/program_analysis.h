// The analysis of a lowered program that the features and the analytical prior share: its loops,
// its stores with their arithmetic and buffer accesses, its allocations, the footprint of each
// access per loop level, and the cycle estimate of each store. Private to kiln_autotune.
//
// Files: machine_model.cc (the target's numbers), features_loops.cc (the walk: loops, stores,
// allocations, kernels), features_arithmetic.cc (the arithmetic of a stored value),
// features_memory.cc (index strides, footprints, working sets, cache traffic),
// cost_model_prior.cc (CPU cycles), features_gpu.cc (GPU memory transactions) and
// cost_model_prior_gpu.cc (GPU cycles).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/autotune/cost_model.h"
#include "kiln/autotune/features.h"
#include "kiln/codegen/target.h"
#include "kiln/ir/function.h"

namespace kiln::autotune::detail {

// log2(1 + |x|) with the sign of x: large counts on a scale a tree splits evenly.
double slog(double x);

// ---------------------------------------------------------------------------------------------
// The machine.

// GPU targets: what one multiprocessor (an SM; a compute unit in OpenCL) holds and does per
// cycle, and the chip's memory (machine_model.cc: a typical part of the CUDA architecture, the
// data-center one where there is one; for OpenCL, an A100). Only their ratios matter for
// ranking.
struct GpuModel {
  int multiprocessors = 0;             // 0: not a GPU
  int max_threads_per_sm = 2048;       // resident threads
  int max_blocks_per_sm = 32;          // resident thread blocks
  double registers_per_sm = 65536;     // 32-bit registers
  double shared_bytes_per_sm = 0;      // shared memory of the resident blocks together
  double fp32_lanes_per_sm = 128;      // float adds, multiplies or FMAs per cycle
  double matrix_flops_per_sm = 1024;   // tensor cores: float16 mma.sync flops per cycle
  double issue_per_sm = 4;             // warp instructions per cycle (one per scheduler)
  double l2_bytes_per_sm_cycle = 64;   // L2 bandwidth per multiprocessor
  double dram_bytes_per_cycle = 1000;  // memory bandwidth of the chip
  double memory_latency = 500;         // cycles from a global load to its use
  double launch_cycles = 4000;         // a kernel launch
};

// What the estimates assume about the machine, from the target (machine_model.cc).
struct MachineModel {
  int vector_bits = 128;          // the widest vector register
  int num_vector_registers = 16;  // architectural vector registers
  bool fma = false;               // a multiply feeding an add becomes one instruction
  double l1_bytes = 0, l2_bytes = 0, l3_bytes = 0;  // L1d and L2 of a core, the L3
  int cores = 1;                                    // threads that run a parallel loop
  int line_bytes = 64;                              // cache line
  int warp_size = 0;  // GPU targets: threads that run in lock step; 0 for a CPU
  GpuModel gpu;       // GPU targets

  // Elements of `scalar` per vector register (at least 1).
  int lanes(const ir::DataType& scalar) const;
  // Vector instructions for a value of `type` (lanes > 1 split into registers), at least 1.
  double vectors(const ir::DataType& type) const;
};

MachineModel machine_model(const codegen::Target& target, const MachineOptions& options);

// ---------------------------------------------------------------------------------------------
// The program.

// A loop of the program.
struct Loop {
  const ir::Var* var = nullptr;
  int64_t extent = 1;  // 1 when symbolic
  bool symbolic = false;
  ir::ForKind kind = ir::ForKind::kSerial;
};

// The arithmetic of one stored value, per execution of the store, in element operations (a
// vector node of n lanes counts n). A multiply that feeds an add or subtract is one fused
// multiply-add; neither is counted again.
struct Arithmetic {
  double float_add_sub = 0, float_mul = 0, float_fma = 0, float_div = 0, float_min_max = 0,
         float_compare_select = 0, float_math = 0;
  double int_arith = 0, int_div_mod = 0, int_bitwise = 0, bool_logic = 0, casts = 0;
  // A thread's share of the flops of warp-level matrix instructions (tensor cores' mma: a
  // 16x8x16 one is 2 x 16 x 8 x 16 flops over 32 threads), and its instructions.
  double float_matrix = 0, matrix_instructions = 0;
  double element_ops = 0;         // every operation above (an FMA counts 2, as flops do)
  double vector_element_ops = 0;  // those in nodes of more than one lane
  double float_ops = 0;           // floating-point operations (an FMA counts 2)
  double issue_slots = 0;         // vector-unit instructions, weighted by their cost
};

// Counts the arithmetic of a stored value (loads are leaves: their index arithmetic is
// address computation, not the value's).
Arithmetic count_arithmetic(const ir::Expr& value, const MachineModel& machine);

// One buffer access (the store itself, or a load in its value).
struct Access {
  const ir::Var* data = nullptr;  // the storage's identity
  std::string buffer_name;
  int element_bytes = 4;
  int lanes = 1;
  bool is_store = false;
  bool is_local = false;             // storage allocated by the function (stack or local scope)
  bool affine = true;                // false: a gather (index not affine in the loops)
  bool accumulator = false;          // a load of the very element its store writes
  double lane_stride = 0;            // elements between consecutive lanes
  double offset = 0;                 // the constant part of the index (symbolic parts left out)
  std::vector<double> coefficients;  // elements per iteration of each loop of the store
  double buffer_elements = 0;        // the buffer's size when constant, else 0
  // Footprint per level: footprint[l] covers one execution of the store's loops l..depth-1
  // (footprint[depth] is one execution of the access itself).
  std::vector<double> unique_elements, lines;
  // Accesses of stores under the same loops with the same pattern (same_pattern) form one
  // Program::patterns entry: unrolled copies of a statement read one stream, or a few streams
  // a constant apart. `repeated`: an earlier access of the pattern has the same offset (the
  // compiler loads it once).
  int pattern = -1;
  bool repeated = false;
};

// A store and what surrounds it.
struct Store {
  std::vector<int> loops;  // Program::loops ids, outer to inner
  double trips = 1;        // executions per call
  int lanes = 1;
  ir::DataType dtype;
  Arithmetic arithmetic;
  std::vector<Access> accesses;  // [0] the store, then the loads of its value
  bool accumulates = false;      // the value loads the element it stores (a reduction update)
  int parallel_level = -1;       // position in `loops` of the parallel loop around it
  bool conditional = false;      // under an if inside its innermost loop
  bool streams = false;          // a non-temporal store (kiln/tir/nontemporal.h)
  // Iterations of its innermost loop that the compiler's loop vectorizer is expected to run as
  // one vector (1: none). See auto_vectorize in features_loops.cc.
  int vector_factor = 1;
  int body = -1;    // the innermost loop around it (-1: none); siblings share it
  int kernel = -1;  // GPU: the Program::kernels entry it runs in (-1: none)
  // GPU: executions per thread, thread blocks included (`trips` counts the threadIdx loops of a
  // copy's consumer as well as the copy's own).
  double thread_trips = 1;

  int depth() const { return static_cast<int>(loops.size()); }
};

// An Allocate of the program.
struct Allocation {
  double bytes = 0;  // one execution; 0 when symbolic
  std::string scope;
  double executions = 1;  // how often it runs per call
  bool under_parallel = false;
};

struct Program;

// Accesses that walk one buffer the same way (see Access::pattern).
struct Pattern {
  std::vector<std::pair<int, int>> members;  // (store, access)
  double min_offset = 0, max_offset = 0;     // elements
  int64_t offset_step = 0;  // the largest step dividing the members' offset differences (0: none)

  // Lines the members touch together at a level of their loops: the footprint of one member
  // with their offsets as one more dimension (repeated by every loop that moves farther than
  // their spread), at most the members' lines added.
  double lines(const Program& program, int level, int line_bytes) const;
};

// GPU: a loop bound to a thread index ("threadIdx.x", ...) around an access.
struct ThreadLoop {
  const ir::Var* var = nullptr;
  std::string tag;
  int64_t extent = 1;
};

// GPU: an access of a "shared" or a "global" buffer in a kernel, with what its threads'
// addresses depend on.
struct DeviceAccess {
  ir::Expr index;                 // flat; a Ramp for a vector access
  const ir::Var* data = nullptr;  // the storage's identity
  double buffer_bytes = 0;        // the buffer's size when constant, else 0
  int kernel = -1;                // the Program::kernels entry
  bool is_store = false;
  // Loads of one group run in one iteration of the innermost loop that is not unrolled (the
  // compiler may merge their neighbouring elements into vector reads); -1 for a store.
  int group = -1;
  // The innermost loop around it: its variable, constant extent (0: symbolic), whether it is a
  // serial loop, and the elements the index moves per iteration (NaN: not affine).
  const ir::Var* inner_var = nullptr;
  int64_t inner_extent = 0;
  bool inner_serial = false;
  double inner_stride = 0;
  int element_bytes = 4;
  double trips = 1;                 // executions per thread (thread blocks included)
  std::vector<ThreadLoop> threads;  // the threadIdx loops around it, outer to inner
  std::vector<std::pair<const ir::Var*, ir::Expr>> lets;
};

// GPU: a kernel, the nest under an outermost loop bound to a thread index.
struct Kernel {
  // Per thread index ("blockIdx.x", "threadIdx.y", ...) the largest extent bound to it.
  std::map<std::string, int64_t> extents;
  double shared_bytes = 0;  // "shared" allocations: per thread block
  double local_bytes = 0;   // "local" allocations: per thread

  double threads_per_block() const;  // the threadIdx extents' product
  double blocks() const;             // the blockIdx extents' product
};

struct Program {
  std::vector<Loop> loops;
  std::vector<Store> stores;
  std::vector<Allocation> allocations;
  std::vector<Pattern> patterns;
  std::vector<int> parallel_loops;        // ids of the parallel loops
  std::vector<double> parallel_launches;  // per parallel loop: how often it starts per call
  int symbolic_loops = 0;
  // GPU: the accesses of shared and of global memory under threadIdx loops, and the kernels.
  std::vector<DeviceAccess> shared_accesses, global_accesses;
  std::vector<Kernel> kernels;
};

// Executions of a store per call: its trips, except that a store in a GPU kernel runs its
// executions per thread once in each of the kernel's threads (the trips of a copy under its
// consumer's threadIdx loops count those loops as well as its own).
double executions(const Store& store, const Program& program);

// Arithmetic operations of one call (an FMA counts 2; conversions do not count), or the elements
// stored where there is no arithmetic (cost_model_prior.cc).
double program_operations(const Program& program);

// Walks a lowered function (features_loops.cc). Raises a kValue error naming `api` when the
// function still has blocks.
Program analyze_program(const ir::PrimFunc& lowered, const MachineModel& machine, const char* api);

// Fills the strides and coefficients of one access from its flat index (features_memory.cc).
// `loop_vars` are the loops around the store, outer to inner; `lets` the values of the variables
// bound by LetStmts around it.
void analyze_index(const ir::Expr& index, const std::vector<const ir::Var*>& loop_vars,
                   const std::vector<std::pair<const ir::Var*, ir::Expr>>& lets, Access* access);

// Whether two accesses of one store or of sibling stores walk the same buffer with the same
// strides (they differ at most by a constant offset).
bool same_pattern(const Access& a, const Access& b);

// Load or store instructions of one execution of an access: one per vector register when
// contiguous, one for a broadcast, two per lane (the access and an insert or extract) for a
// gather or a strided vector.
double access_instructions(const Access& access, const MachineModel& machine);

// How an access moves along the innermost loop (its lanes for a vector access): `stride` gets
// the elements per step. A step below one element re-reads the same element.
enum StrideKind { kReuse = 0, kUnitStride = 1, kStrided = 2, kGather = 3 };
int stride_kind(const Access& access, double* stride);

// Fills the footprint of every access of every store and groups the accesses into patterns
// (features_memory.cc).
void compute_footprints(Program* program, const MachineModel& machine);

// ---------------------------------------------------------------------------------------------
// Working sets, cache traffic and cycles.

// Bytes moved into each cache level by one access per call (features_memory.cc).
struct Traffic {
  double into_l1 = 0, into_l2 = 0, into_l3 = 0;  // bytes
  int fits_l1_levels = 0, fits_l2_levels = 0;    // loop levels, from the inside, that fit
};

// The working set of every loop (bytes its subtree touches once) and the traffic of every
// access: traffic[s][a] (features_memory.cc).
struct MemoryModel {
  std::vector<double> working_set;            // per loop id
  std::vector<std::vector<Traffic>> traffic;  // per store, per access
};
MemoryModel model_memory(const Program& program, const MachineModel& machine);

// The cycle estimate of one store (cost_model_prior.cc).
struct StoreEstimate {
  double compute_cycles = 0;  // issue and latency of its instructions, all executions
  double memory_cycles = 0;   // cache-to-cache traffic at the levels' bandwidths
  double latency_cycles = 0;  // the part of compute_cycles that waits on a dependence chain
  double cycles = 0;          // max(compute, memory) over the parallel speedup
  double parallel_efficiency = 1;
  // The register tile of its reduction (0 when it carries none).
  double accumulator_registers = 0;
  double registers_needed = 0;
  double spilled_registers = 0;
  bool promoted = false;  // accumulators kept in registers
};

struct ProgramEstimate {
  std::vector<StoreEstimate> stores;
  MemoryModel memory;
  PriorEstimate total;
  int dominant = -1;  // the store with the most cycles
};

ProgramEstimate estimate_program(const Program& program, const MachineModel& machine);

// ---------------------------------------------------------------------------------------------
// GPU (features_gpu.cc).

// The variables an expression reads, each time it reads them, in an order that structurally
// equal expressions share (structural_hash names free variables by that order only: keys that
// must tell variables apart add them).
std::vector<const ir::Var*> variables_of(const ir::Expr& e);

// The memory transactions of a program's accesses per call (all warps of all thread blocks), the
// fewest their requests could take for the bytes they move, and the requests (load and store
// instructions of a warp), for the threads of the first warp of each access, every other loop
// at its first iteration. Loads are what the compiler makes of the lowered code: a load of an
// element read before in the same iteration of the innermost loop that is not unrolled counts
// once (features_loops.cc), and a thread's scalar loads of 2 or 4 neighbouring elements (up to
// 16 bytes) of a shared array, in one such iteration or along a serial innermost loop, at an
// address the compiler can prove aligned, are one vector read (as NVCC's PTX shows:
// ld.shared.v4); a load that does not change in its serial innermost loop, which stores nothing
// to its buffer, is made once per run of the loop (hoisted). Shared memory: wavefronts by
// the bank model of autotune/space/shared_memory_banks.h (the fewest: 128 bytes each). Global
// memory: the 32-byte sectors a request touches (the fewest: its distinct bytes in whole sectors).
struct WarpTraffic {
  double transactions = 0, fewest = 0, requests = 0;
  double load_requests = 0;  // of the requests, the loads
};
// Per kernel (indexed as Program::kernels).
std::vector<WarpTraffic> shared_traffic(const Program& program, const MachineModel& machine);
std::vector<WarpTraffic> global_traffic(const Program& program, const MachineModel& machine);

// The GPU estimate of one kernel (cost_model_prior_gpu.cc).
struct KernelEstimate {
  WarpTraffic shared, global;  // as above
  double local_words = 0;      // 4-byte words of a thread's local arrays
  double registers = 0;        // estimated 32-bit registers per thread (at most 255)
  double spilled_registers = 0;
  double blocks_per_sm = 0;  // resident thread blocks per multiprocessor (0: cannot launch)
  double occupancy = 0;      // resident warps over the most a multiprocessor holds
  double sm_balance = 0;     // thread blocks over the slots of the busiest multiprocessor
  double compute_cycles = 0, memory_cycles = 0, latency_cycles = 0, cycles = 0;
};

struct GpuEstimate {
  std::vector<KernelEstimate> kernels;
  PriorEstimate total;
  int dominant = -1;  // the kernel with the most cycles
};

GpuEstimate estimate_gpu_program(const Program& program, const MachineModel& machine);

}  // namespace kiln::autotune::detail
