// The analytical prior: cycles of each store from its instructions, its reduction's register
// tile, its cache traffic and its parallel balance (the model is described in cost_model.h).
#include <algorithm>
#include <cmath>
#include <map>

#include "autotune/program_analysis.h"
#include "kiln/support/error.h"

namespace kiln::autotune {

namespace detail {

namespace {

// Per cycle: vector instructions (two pipes), loads, stores, instructions issued.
constexpr double kVectorPipes = 2;
constexpr double kLoadsPerCycle = 2;
constexpr double kStoresPerCycle = 1;
constexpr double kIssueWidth = 4;
// Bytes per cycle and core brought into L1 (from L2), into L2 (from L3), into L3 (from memory).
constexpr double kIntoL1BytesPerCycle = 32;
constexpr double kIntoL2BytesPerCycle = 16;
constexpr double kIntoL3BytesPerCycle = 8;
// Latency of a float add or FMA, and of an accumulator that goes through memory (store to load
// forwarding added); integer adds take one cycle.
constexpr double kFloatLatency = 4;
constexpr double kMemoryLatency = 9;
constexpr double kIntLatency = 1;
// The most accumulator registers a compiler unrolls a tile into.
constexpr double kMaxUnrolledAccumulators = 64;
constexpr double kParallelLaunchCycles = 5000;
constexpr double kCallCycles = 100;

// How a reduction store keeps its accumulators (see cost_model.h).
struct Reduction {
  int carrier = -1;       // the loop id that carries it, -1: none
  double tile_trips = 1;  // executions per iteration of the carrier
  bool tile_constant = true;
};

// The innermost loop the stored element does not depend on carries the reduction (loops of one
// iteration are no loops); the loops inside it form the tile.
Reduction find_reduction(const Store& store, const Program& program) {
  Reduction reduction;
  if (!store.accumulates) return reduction;
  const Access& target = store.accesses[0];
  for (int level = store.depth() - 1; level >= 0; --level) {
    const Loop& loop = program.loops[store.loops[level]];
    if (loop.extent <= 1) continue;
    if (target.coefficients[level] == 0) {
      reduction.carrier = store.loops[level];
      return reduction;
    }
    reduction.tile_trips *= static_cast<double>(loop.extent);
    reduction.tile_constant =
        reduction.tile_constant && !loop.symbolic && loop.kind != ir::ForKind::kParallel;
  }
  return Reduction();
}

bool varies_in_tile(const Access& access, const Store& store, int carrier_level) {
  for (int level = carrier_level + 1; level < store.depth(); ++level) {
    if (access.coefficients[level] != 0) return true;
  }
  return false;
}

// A vector register holds a contiguous vector; a strided one is moved lane by lane.
bool contiguous(const Access& access) {
  return access.affine && (access.lanes == 1 || access.lane_stride == 1);
}

// The register tile of one carrying loop, over the reduction stores it carries.
struct Tile {
  double accumulators = 0;  // vector registers of distinct accumulators
  double operands = 0;      // operand vectors of one store
  double executions = 0;    // store executions per iteration of the carrier
  double chain = 1;         // updates of one accumulator per iteration (a dependence chain)
  bool unrollable = true;   // constant tile loops and contiguous accumulators
  std::map<std::pair<int, double>, int> updates;  // per accumulator (pattern, offset)
};

}  // namespace

double executions(const Store& store, const Program& program) {
  if (store.kernel < 0) return store.trips;
  return store.thread_trips * program.kernels[store.kernel].threads_per_block();
}

double program_operations(const Program& program) {
  // Conversions are not operations of the function (count_flops leaves them out; a tensor
  // core converts its float16 operands inside its instruction), so that the candidates of one
  // function that convert in different places do as many operations.
  double operations = 0, stored = 0;
  for (const Store& store : program.stores) {
    const Arithmetic& a = store.arithmetic;
    operations += executions(store, program) * (a.element_ops - a.casts);
    stored += executions(store, program) * store.lanes;
  }
  return operations > 0 ? operations : stored;
}

ProgramEstimate estimate_program(const Program& program, const MachineModel& machine) {
  ProgramEstimate estimate;
  estimate.memory = model_memory(program, machine);
  size_t num_stores = program.stores.size();
  estimate.stores.resize(num_stores);

  // Step 1. The reductions, and the register tile of each carrying loop.
  std::vector<Reduction> reductions(num_stores);
  std::map<int, Tile> tiles;
  for (size_t s = 0; s < num_stores; ++s) {
    const Store& store = program.stores[s];
    reductions[s] = find_reduction(store, program);
    if (reductions[s].carrier < 0) continue;
    Tile& tile = tiles[reductions[s].carrier];
    const Access& target = store.accesses[0];
    // The loop vectorizer packs vector_factor accumulators of its loop into one register.
    if (!target.repeated) {
      tile.accumulators +=
          reductions[s].tile_trips * machine.vectors(store.dtype) / store.vector_factor;
    }
    int& updates = tile.updates[{target.pattern, target.offset}];
    ++updates;
    tile.chain = std::max(tile.chain, static_cast<double>(updates));
    tile.executions += reductions[s].tile_trips;
    tile.unrollable = tile.unrollable && reductions[s].tile_constant && contiguous(target);
    double operands = 0;
    for (const Access& access : store.accesses) {
      if (!access.is_store && !access.accumulator && !access.repeated) {
        operands += access.lanes > 1 && access.lane_stride != 0
                        ? machine.vectors(store.dtype.with_lanes(access.lanes))
                        : 1;
      }
    }
    tile.operands = std::max(tile.operands, operands);
  }

  // Step 2. Issue time of one execution of each store.
  std::map<int, int> siblings;  // stores per innermost loop body
  for (const Store& store : program.stores) ++siblings[store.body];
  std::vector<double> issue(num_stores, 0.0);
  for (size_t s = 0; s < num_stores; ++s) {
    const Store& store = program.stores[s];
    StoreEstimate& out = estimate.stores[s];
    int carrier_level = -1;
    const Tile* tile = nullptr;
    if (reductions[s].carrier >= 0) {
      tile = &tiles[reductions[s].carrier];
      carrier_level = static_cast<int>(
          std::find(store.loops.begin(), store.loops.end(), reductions[s].carrier) -
          store.loops.begin());
      out.accumulator_registers = tile->accumulators;
      out.registers_needed = tile->accumulators + tile->operands;
      out.promoted = tile->unrollable && tile->accumulators <= kMaxUnrolledAccumulators;
      if (out.promoted) {
        out.spilled_registers = std::max(0.0, out.registers_needed - machine.num_vector_registers);
      }
    }
    double inner_extent =
        store.depth() > 0 ? static_cast<double>(program.loops[store.loops.back()].extent) : 1;
    double loads = 0, stores = 0;
    for (const Access& access : store.accesses) {
      double count = access_instructions(access, machine);
      if (access.is_store || access.accumulator) {
        if (out.promoted) continue;  // the accumulator lives in a register
        (access.is_store ? stores : loads) += count;
        continue;
      }
      // The compiler loads once what an earlier copy of the statement loaded, hoists loads
      // that do not change in the innermost loop, and loads operands that do not change
      // inside an unrolled tile once per iteration of the carrier.
      if (access.repeated) continue;
      double reuse = 1;
      if (access.affine && store.depth() > 0 && access.coefficients.back() == 0) {
        reuse = std::max(reuse, inner_extent);
      }
      if (out.promoted && !varies_in_tile(access, store, carrier_level)) {
        reuse = std::max(reuse, reductions[s].tile_trips);
      }
      loads += count / reuse;
    }
    if (out.spilled_registers > 0) {
      loads += out.spilled_registers / tile->executions;
      stores += out.spilled_registers / tile->executions;
    }
    double overhead = 0;
    if (store.body >= 0 && program.loops[store.body].kind != ir::ForKind::kUnrolled) {
      overhead = 1.0 / siblings[store.body];
    }
    double slots = store.arithmetic.issue_slots;
    double uops = slots + loads + stores + overhead;
    // The loop vectorizer runs vector_factor iterations with the instructions of one.
    issue[s] = std::max({slots / kVectorPipes, loads / kLoadsPerCycle, stores / kStoresPerCycle,
                         uops / kIssueWidth}) /
               store.vector_factor;
  }

  // Step 3. Dependence chains: an iteration of a carrying loop lasts at least the latency of
  // the longest chain of updates of one accumulator.
  std::map<int, double> tile_issue;
  for (size_t s = 0; s < num_stores; ++s) {
    if (reductions[s].carrier >= 0) {
      tile_issue[reductions[s].carrier] += reductions[s].tile_trips * issue[s];
    }
  }

  // Step 4. Compute, memory and parallel balance of each store, and the totals.
  PriorEstimate& total = estimate.total;
  double serial_cycles = 0, busy_cycles = 0;
  for (size_t s = 0; s < num_stores; ++s) {
    const Store& store = program.stores[s];
    StoreEstimate& out = estimate.stores[s];
    double factor = 1;
    if (reductions[s].carrier >= 0) {
      double latency = !store.dtype.is_float() ? kIntLatency
                       : out.promoted          ? kFloatLatency
                                               : kMemoryLatency;
      double per_iteration = tile_issue[reductions[s].carrier];
      double chain = tiles[reductions[s].carrier].chain;
      if (per_iteration > 0) factor = std::max(1.0, latency * chain / per_iteration);
    }
    out.compute_cycles = store.trips * issue[s] * factor;
    out.latency_cycles = store.trips * issue[s] * (factor - 1);
    for (const Traffic& traffic : estimate.memory.traffic[s]) {
      out.memory_cycles += traffic.into_l1 / kIntoL1BytesPerCycle +
                           traffic.into_l2 / kIntoL2BytesPerCycle +
                           traffic.into_l3 / kIntoL3BytesPerCycle;
    }
    double serial = std::max(out.compute_cycles, out.memory_cycles);
    double speedup = 1;
    if (store.parallel_level >= 0) {
      double extent = static_cast<double>(program.loops[store.loops[store.parallel_level]].extent);
      if (extent >= 1) {
        double rounds = std::ceil(extent / machine.cores);
        speedup = extent / rounds;
      }
    }
    out.parallel_efficiency = speedup / machine.cores;
    out.cycles = serial / speedup;
    total.compute_cycles += out.compute_cycles;
    total.memory_cycles += out.memory_cycles;
    total.latency_cycles += out.latency_cycles;
    total.cycles += out.cycles;
    serial_cycles += serial;
    busy_cycles += serial * out.parallel_efficiency;
    if (estimate.dominant < 0 || out.cycles > estimate.stores[estimate.dominant].cycles) {
      estimate.dominant = static_cast<int>(s);
    }
  }
  total.operations = program_operations(program);
  for (double launches : program.parallel_launches)
    total.cycles += launches * kParallelLaunchCycles;
  total.cycles += kCallCycles;
  total.parallel_efficiency = serial_cycles > 0 ? busy_cycles / serial_cycles : 1.0 / machine.cores;
  total.throughput = total.operations / total.cycles;
  if (estimate.dominant >= 0) {
    total.accumulator_registers = estimate.stores[estimate.dominant].accumulator_registers;
    total.spilled_registers = estimate.stores[estimate.dominant].spilled_registers;
  }
  return estimate;
}

}  // namespace detail

namespace {

const ir::PrimFunc& checked(const ir::Ref<ir::PrimFunc>& lowered, const char* api) {
  user_check(lowered.defined()) << api << ": expected a lowered PrimFunc, found None";
  return *lowered;
}

}  // namespace

PriorEstimate estimate_prior(const ir::Ref<ir::PrimFunc>& lowered, const codegen::Target& target,
                             const MachineOptions& options, const char* api) {
  detail::MachineModel machine = detail::machine_model(target, options);
  detail::Program program = detail::analyze_program(checked(lowered, api), machine, api);
  if (target.is_gpu()) return detail::estimate_gpu_program(program, machine).total;
  return detail::estimate_program(program, machine).total;
}

double analytical_prior(const ir::Ref<ir::PrimFunc>& lowered, const codegen::Target& target,
                        const MachineOptions& options, const char* api) {
  return estimate_prior(lowered, target, options, api).throughput;
}

}  // namespace kiln::autotune
