// The feature vector: the per-store analysis of program_analysis.h aggregated into one row of
// fixed length. One function writes every feature with its name, so that names and values
// cannot drift apart.
#include "kiln/autotune/features.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "autotune/program_analysis.h"
#include "kiln/autotune/cost_model.h"
#include "kiln/support/error.h"

namespace kiln::autotune {

using namespace detail;

namespace {

// Accesses of the dominant store described one by one, largest traffic first.
constexpr int kAccessSlots = 4;

// Receives each feature in order: its value, and its name while the names are being listed.
class FeatureSink {
 public:
  FeatureSink(std::vector<float>* values, std::vector<std::string>* names)
      : values_(values), names_(names) {}
  void operator()(const std::string& name, double value) {
    // Features are finite whatever the program: an unknown quantity is 0.
    values_->push_back(std::isfinite(value) ? static_cast<float>(value) : 0.0f);
    if (names_ != nullptr) names_->push_back(name);
  }

 private:
  std::vector<float>* values_;
  std::vector<std::string>* names_;
};

double ratio(double a, double b) {
  return b != 0 ? a / b : 0;
}

// log2(bytes / capacity): negative while a footprint fits.
double log_ratio(double bytes, double capacity) {
  return std::log2(std::max(bytes, 1.0) / std::max(capacity, 1.0));
}

struct Context {
  const Program& program;
  const MachineModel& machine;
  const ProgramEstimate& estimate;
  const GpuEstimate& gpu;  // GPU targets (no kernels on a CPU)
};

void write_program(const Context& c, FeatureSink& put) {
  const Program& p = c.program;
  double ops = 0, float_ops = 0, vector_ops = 0, fma = 0, bytes = 0, work = 0, parallel_work = 0;
  double stored_bytes = 0, streamed_bytes = 0;
  int max_depth = 0;
  std::map<const ir::Var*, double> unique_bytes;
  for (const Store& s : p.stores) {
    ops += s.trips * s.arithmetic.element_ops;
    float_ops += s.trips * s.arithmetic.float_ops;
    vector_ops += s.trips * s.arithmetic.vector_element_ops;
    fma += s.trips * s.arithmetic.float_fma;
    double w = s.trips * std::max(1.0, s.arithmetic.element_ops);
    work += w;
    if (s.parallel_level >= 0) parallel_work += w;
    max_depth = std::max(max_depth, s.depth());
    double stored = s.trips * s.accesses[0].lanes * s.accesses[0].element_bytes;
    stored_bytes += stored;
    if (s.streams) streamed_bytes += stored;
    for (const Access& a : s.accesses) {
      bytes += s.trips * a.lanes * a.element_bytes;
      double& unique = unique_bytes[a.data];
      unique = std::max(unique, a.unique_elements[0] * a.element_bytes);
    }
  }
  double total_unique = 0;
  for (const auto& entry : unique_bytes) total_unique += entry.second;
  double launches = std::accumulate(p.parallel_launches.begin(), p.parallel_launches.end(), 0.0);
  put("program.log_operations", slog(ops));
  put("program.log_float_operations", slog(float_ops));
  put("program.log_int_operations", slog(ops - float_ops));
  put("program.log_bytes_accessed", slog(bytes));
  put("program.log_unique_bytes", slog(total_unique));
  put("program.log_intensity", slog(ratio(ops, total_unique)));
  put("program.log_stores", slog(static_cast<double>(p.stores.size())));
  put("program.log_loops", slog(static_cast<double>(p.loops.size())));
  put("program.max_depth", max_depth);
  put("program.vector_share", ratio(vector_ops, ops));
  put("program.fma_share", ratio(fma, float_ops));
  put("program.parallel_share", ratio(parallel_work, work));
  put("program.log_parallel_launches", slog(launches));
  put("program.symbolic_loops", p.symbolic_loops);
  put("program.streamed_store_share", ratio(streamed_bytes, stored_bytes));
}

void write_target(const Context& c, FeatureSink& put) {
  const MachineModel& m = c.machine;
  put("target.log_float32_lanes", std::log2(m.lanes(ir::DataType::float32())));
  put("target.vector_registers", m.num_vector_registers);
  put("target.fma", m.fma ? 1 : 0);
  put("target.log_cores", std::log2(m.cores));
  put("target.log_l1_kib", std::log2(m.l1_bytes / 1024));
  put("target.log_l2_kib", std::log2(m.l2_bytes / 1024));
}

void write_arithmetic(const Context& c, FeatureSink& put) {
  Arithmetic sum;
  double slots = 0, max_ops = 0;
  for (const Store& s : c.program.stores) {
    const Arithmetic& a = s.arithmetic;
    double t = s.trips;
    sum.float_add_sub += t * a.float_add_sub;
    sum.float_mul += t * a.float_mul;
    sum.float_fma += t * a.float_fma;
    sum.float_div += t * a.float_div;
    sum.float_min_max += t * a.float_min_max;
    sum.float_compare_select += t * a.float_compare_select;
    sum.float_math += t * a.float_math;
    sum.int_arith += t * a.int_arith;
    sum.int_div_mod += t * a.int_div_mod;
    sum.int_bitwise += t * a.int_bitwise;
    sum.bool_logic += t * a.bool_logic;
    sum.casts += t * a.casts;
    sum.float_matrix += t * a.float_matrix;
    slots += t * a.issue_slots;
    max_ops = std::max(max_ops, a.element_ops);
  }
  put("arith.float_add_sub", slog(sum.float_add_sub));
  put("arith.float_mul", slog(sum.float_mul));
  put("arith.float_fma", slog(sum.float_fma));
  put("arith.float_div", slog(sum.float_div));
  put("arith.float_min_max", slog(sum.float_min_max));
  put("arith.float_compare_select", slog(sum.float_compare_select));
  put("arith.float_math", slog(sum.float_math));
  put("arith.int_arith", slog(sum.int_arith));
  put("arith.int_div_mod", slog(sum.int_div_mod));
  put("arith.int_bitwise", slog(sum.int_bitwise));
  put("arith.bool_logic", slog(sum.bool_logic));
  put("arith.casts", slog(sum.casts));
  put("arith.float_matrix", slog(sum.float_matrix));
  put("arith.log_vector_instructions", slog(slots));
  put("arith.log_max_store_operations", slog(max_ops));
}

void write_vectors(const Context& c, FeatureSink& put) {
  double work = 0, store_ratio = 0, max_ratio = 0, full = 0, partial = 0;
  double load_trips = 0, load_ratio = 0, gathers = 0, auto_vectorized = 0;
  for (const Store& s : c.program.stores) {
    double w = s.trips * std::max(1.0, s.arithmetic.element_ops);
    int target_lanes = c.machine.lanes(s.dtype.element_of());
    double r = static_cast<double>(s.lanes) / target_lanes;
    work += w;
    store_ratio += w * r;
    max_ratio = std::max(max_ratio, r);
    if (s.lanes >= target_lanes && s.lanes > 1) full += w;
    if (s.lanes > 1 && s.lanes % target_lanes != 0) partial += w;
    if (s.vector_factor > 1) auto_vectorized += w;
    for (const Access& a : s.accesses) {
      if (!a.affine) gathers += s.trips * a.lanes;
      if (a.is_store) continue;
      int lanes = c.machine.lanes(ir::DataType(ir::DataType::kFloat, a.element_bytes * 8));
      load_trips += s.trips;
      load_ratio += s.trips * a.lanes / lanes;
    }
  }
  put("vector.store_lanes_ratio", ratio(store_ratio, work));
  put("vector.max_store_lanes_ratio", max_ratio);
  put("vector.load_lanes_ratio", ratio(load_ratio, load_trips));
  put("vector.full_share", ratio(full, work));
  put("vector.partial_share", ratio(partial, work));
  put("vector.log_gather_elements", slog(gathers));
  // Scalar loops the compiler's loop vectorizer is expected to turn into vectors.
  put("vector.auto_vectorized_share", ratio(auto_vectorized, work));
}

void write_loops(const Context& c, FeatureSink& put) {
  const Program& p = c.program;
  double work = 0, depth = 0, inner = 0;
  int unrolled = 0;
  for (const Loop& loop : p.loops) unrolled += loop.kind == ir::ForKind::kUnrolled;
  for (const Store& s : p.stores) {
    double w = s.trips * std::max(1.0, s.arithmetic.element_ops);
    work += w;
    depth += w * s.depth();
    if (s.depth() > 0) inner += w * slog(static_cast<double>(p.loops[s.loops.back()].extent));
  }
  double dominant_inner = 0, dominant_trips = 0, siblings = 0, extent = 0, per_core = 0, idle = 0;
  if (c.estimate.dominant >= 0) {
    const Store& d = p.stores[c.estimate.dominant];
    dominant_trips = d.trips;
    if (d.depth() > 0) dominant_inner = static_cast<double>(p.loops[d.loops.back()].extent);
    for (const Store& s : p.stores) siblings += s.body == d.body;
    if (d.parallel_level >= 0) {
      extent = static_cast<double>(p.loops[d.loops[d.parallel_level]].extent);
      per_core = extent / c.machine.cores;
      double slots = std::ceil(extent / c.machine.cores) * c.machine.cores;
      idle = slots > 0 ? 1 - extent / slots : 0;
    }
  }
  put("loop.depth", ratio(depth, work));
  put("loop.log_innermost_extent", ratio(inner, work));
  put("loop.unrolled_loops", unrolled);
  put("dominant.log_trips", slog(dominant_trips));
  put("dominant.log_innermost_extent", slog(dominant_inner));
  put("dominant.log_stores_in_body", slog(siblings));
  put("dominant.log_parallel_extent", slog(extent));
  put("dominant.parallel_extent_per_core", per_core);
  put("dominant.parallel_idle_share", idle);
}

void write_register_tile(const Context& c, FeatureSink& put) {
  StoreEstimate d;
  if (c.estimate.dominant >= 0) d = c.estimate.stores[c.estimate.dominant];
  put("tile.log_accumulator_registers", slog(d.accumulator_registers));
  put("tile.registers_per_vector_register", d.registers_needed / c.machine.num_vector_registers);
  put("tile.log_spilled_registers", slog(d.spilled_registers));
  put("tile.in_registers", d.promoted ? 1 : 0);
  put("tile.latency_share",
      ratio(c.estimate.total.latency_cycles, c.estimate.total.compute_cycles));
}

void write_memory(const Context& c, FeatureSink& put) {
  const Program& p = c.program;
  double loads = 0, stores = 0, into_l1 = 0, into_l2 = 0, into_l3 = 0, total_bytes = 0;
  double by_kind[4] = {0, 0, 0, 0};
  for (size_t s = 0; s < p.stores.size(); ++s) {
    const Store& store = p.stores[s];
    for (size_t a = 0; a < store.accesses.size(); ++a) {
      const Access& access = store.accesses[a];
      double instructions = store.trips * access_instructions(access, c.machine);
      (access.is_store ? stores : loads) += instructions;
      const Traffic& traffic = c.estimate.memory.traffic[s][a];
      into_l1 += traffic.into_l1;
      into_l2 += traffic.into_l2;
      into_l3 += traffic.into_l3;
      double bytes = store.trips * access.lanes * access.element_bytes;
      double stride = 0;
      by_kind[stride_kind(access, &stride)] += bytes;
      total_bytes += bytes;
    }
  }
  double working_set = 0;
  int fits_l1 = 0, fits_l2 = 0;
  if (c.estimate.dominant >= 0) {
    const Store& d = p.stores[c.estimate.dominant];
    if (d.depth() > 0) working_set = c.estimate.memory.working_set[d.loops.back()];
    const Traffic& traffic = c.estimate.memory.traffic[c.estimate.dominant][0];
    fits_l1 = traffic.fits_l1_levels;
    fits_l2 = traffic.fits_l2_levels;
  }
  put("memory.log_load_instructions", slog(loads));
  put("memory.log_store_instructions", slog(stores));
  put("memory.log_bytes_into_l1", slog(into_l1));
  put("memory.log_bytes_into_l2", slog(into_l2));
  put("memory.log_bytes_into_l3", slog(into_l3));
  put("memory.reuse_share", ratio(by_kind[kReuse], total_bytes));
  put("memory.unit_stride_share", ratio(by_kind[kUnitStride], total_bytes));
  put("memory.strided_share", ratio(by_kind[kStrided], total_bytes));
  put("memory.gather_share", ratio(by_kind[kGather], total_bytes));
  put("dominant.log_innermost_working_set", slog(working_set));
  put("dominant.levels_fitting_l1", fits_l1);
  put("dominant.levels_fitting_l2", fits_l2);
}

void write_accesses(const Context& c, FeatureSink& put) {
  const Program& p = c.program;
  std::vector<int> order;
  const Store* d = nullptr;
  if (c.estimate.dominant >= 0) {
    d = &p.stores[c.estimate.dominant];
    order.resize(d->accesses.size());
    std::iota(order.begin(), order.end(), 0);
    const auto& traffic = c.estimate.memory.traffic[c.estimate.dominant];
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
      double bx = d->accesses[x].lanes * d->accesses[x].element_bytes;
      double by = d->accesses[y].lanes * d->accesses[y].element_bytes;
      if (traffic[x].into_l1 != traffic[y].into_l1) return traffic[x].into_l1 > traffic[y].into_l1;
      return bx > by;
    });
  }
  for (int slot = 0; slot < kAccessSlots; ++slot) {
    std::string prefix = "access" + std::to_string(slot) + ".";
    const Access* a = nullptr;
    const Traffic* t = nullptr;
    if (slot < static_cast<int>(order.size())) {
      a = &d->accesses[order[slot]];
      t = &c.estimate.memory.traffic[c.estimate.dominant][order[slot]];
    }
    // Footprint of the innermost k loops (k = 1, 2, 3), lanes included.
    auto level = [&](int k) { return std::max(0, d->depth() - k); };
    auto footprint = [&](int k) {
      return a == nullptr ? 0 : a->unique_elements[level(k)] * a->element_bytes;
    };
    auto lines = [&](int k) { return a == nullptr ? 0 : a->lines[level(k)]; };
    double stride = 0;
    int kind = a == nullptr ? 0 : stride_kind(*a, &stride);
    double reuse = a == nullptr ? 0 : d->trips * a->lanes / a->unique_elements[0];
    put(prefix + "present", a != nullptr);
    put(prefix + "is_store", a != nullptr && a->is_store);
    put(prefix + "is_accumulator", a != nullptr && a->accumulator);
    put(prefix + "log_bytes", a == nullptr ? 0 : slog(a->lanes * a->element_bytes));
    put(prefix + "log_stride", slog(stride));
    put(prefix + "stride_kind", kind);
    put(prefix + "log_footprint_1", slog(footprint(1)));
    put(prefix + "log_footprint_2", slog(footprint(2)));
    put(prefix + "log_footprint_3", slog(footprint(3)));
    put(prefix + "log_lines_1", slog(lines(1)));
    put(prefix + "log_lines_2", slog(lines(2)));
    put(prefix + "log_lines_3", slog(lines(3)));
    put(prefix + "log_reuse", slog(reuse));
    put(prefix + "is_local", a != nullptr && a->is_local);
    put(prefix + "footprint_3_vs_l1",
        a == nullptr ? 0 : log_ratio(footprint(3), c.machine.l1_bytes));
    put(prefix + "footprint_3_vs_l2",
        a == nullptr ? 0 : log_ratio(footprint(3), c.machine.l2_bytes));
    put(prefix + "log_bytes_into_l1", t == nullptr ? 0 : slog(t->into_l1));
    put(prefix + "log_bytes_into_l2", t == nullptr ? 0 : slog(t->into_l2));
  }
}

void write_allocations(const Context& c, FeatureSink& put) {
  double local = 0, global = 0, shared = 0, largest = 0, in_parallel = 0, executions = 0;
  for (const Allocation& a : c.program.allocations) {
    (a.scope == "shared" ? shared : a.scope == "global" ? global : local) += a.bytes;
    largest = std::max(largest, a.bytes);
    in_parallel += a.under_parallel;
    executions += a.executions;
  }
  put("alloc.log_local_bytes", slog(local));
  put("alloc.log_global_bytes", slog(global));
  put("alloc.log_shared_bytes", slog(shared));
  put("alloc.count", static_cast<double>(c.program.allocations.size()));
  put("alloc.log_largest_bytes", slog(largest));
  put("alloc.under_parallel", in_parallel);
  put("alloc.log_executions", slog(executions));
}

void write_prior(const Context& c, FeatureSink& put) {
  const PriorEstimate& t = c.estimate.total;
  double memory_bound = 0, cycles = 0;
  for (const StoreEstimate& s : c.estimate.stores) {
    cycles += s.cycles;
    if (s.memory_cycles > s.compute_cycles) memory_bound += s.cycles;
  }
  put("prior.log_cycles", slog(t.cycles));
  put("prior.log_compute_cycles", slog(t.compute_cycles));
  put("prior.log_memory_cycles", slog(t.memory_cycles));
  put("prior.log_throughput", slog(t.throughput));
  put("prior.parallel_efficiency", t.parallel_efficiency);
  put("prior.memory_bound_share", ratio(memory_bound, cycles));
}

// GPU targets (0 on a CPU): threads per block, thread blocks, and of shared and of global
// memory the transactions over the fewest their requests could take (1: no bank conflict, every
// access coalesced), the transactions and the requests per call; of the GPU prior's kernel with
// the most cycles its registers, occupancy and balance over the multiprocessors, and the
// prior's cycles.
void write_gpu(const Context& c, FeatureSink& put) {
  // Per thread index ("blockIdx.x", "threadIdx.y", ...) the largest extent a kernel binds to it.
  std::map<std::string, int64_t> largest;
  for (const Kernel& kernel : c.program.kernels) {
    for (const auto& [tag, extent] : kernel.extents) largest[tag] = std::max(largest[tag], extent);
  }
  auto product = [&](const char* prefix) {
    if (c.machine.warp_size <= 0) return 0.0;
    double n = 1;
    bool any = false;
    for (const auto& [tag, extent] : largest) {
      if (tag.rfind(prefix, 0) != 0) continue;
      n *= static_cast<double>(extent);
      any = true;
    }
    return any ? n : 0.0;
  };
  put("gpu.log_threads_per_block", slog(product("threadIdx.")));
  put("gpu.log_thread_blocks", slog(product("blockIdx.")));
  WarpTraffic shared, global;
  for (const KernelEstimate& k : c.gpu.kernels) {
    shared.transactions += k.shared.transactions;
    shared.fewest += k.shared.fewest;
    shared.requests += k.shared.requests;
    global.transactions += k.global.transactions;
    global.fewest += k.global.fewest;
    global.requests += k.global.requests;
  }
  put("gpu.shared_bank_conflicts", ratio(shared.transactions, shared.fewest));
  put("gpu.log_shared_wavefronts", slog(shared.transactions));
  put("gpu.log_shared_requests", slog(shared.requests));
  put("gpu.global_sectors_over_fewest", ratio(global.transactions, global.fewest));
  put("gpu.log_global_sectors", slog(global.transactions));
  put("gpu.log_global_requests", slog(global.requests));
  KernelEstimate d;
  if (c.gpu.dominant >= 0) d = c.gpu.kernels[c.gpu.dominant];
  put("gpu.registers_per_thread", d.registers);
  put("gpu.occupancy", d.occupancy);
  put("gpu.sm_balance", d.sm_balance);
  put("gpu.log_kernels", slog(static_cast<double>(c.gpu.kernels.size())));
  put("gpu.prior_log_cycles", c.gpu.kernels.empty() ? 0.0 : slog(c.gpu.total.cycles));
  put("gpu.prior_memory_share",
      ratio(c.gpu.total.memory_cycles, c.gpu.total.memory_cycles + c.gpu.total.compute_cycles));
}

void write_features(const Context& c, FeatureSink& put) {
  write_program(c, put);
  write_target(c, put);
  write_arithmetic(c, put);
  write_vectors(c, put);
  write_loops(c, put);
  write_register_tile(c, put);
  write_memory(c, put);
  write_accesses(c, put);
  write_allocations(c, put);
  write_prior(c, put);
  write_gpu(c, put);
}

std::vector<std::string> list_names() {
  Program empty;
  MachineModel machine;
  ProgramEstimate estimate = estimate_program(empty, machine);
  GpuEstimate gpu = estimate_gpu_program(empty, machine);
  std::vector<float> values;
  std::vector<std::string> names;
  FeatureSink sink(&values, &names);
  write_features(Context{empty, machine, estimate, gpu}, sink);
  return names;
}

}  // namespace

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = list_names();
  return names;
}

CandidateAnalysis analyze_candidate(const ir::Ref<ir::PrimFunc>& lowered,
                                    const codegen::Target& target, const MachineOptions& options,
                                    const char* api) {
  user_check(lowered.defined()) << api << ": expected a lowered PrimFunc, found None";
  MachineModel machine = machine_model(target, options);
  Program program = analyze_program(*lowered, machine, api);
  ProgramEstimate estimate = estimate_program(program, machine);
  GpuEstimate gpu = estimate_gpu_program(program, machine);
  CandidateAnalysis result;
  result.features.reserve(feature_names().size());
  FeatureSink sink(&result.features, nullptr);
  write_features(Context{program, machine, estimate, gpu}, sink);
  internal_check(result.features.size() == feature_names().size())
      << api << ": wrote " << result.features.size() << " features, expected "
      << feature_names().size();
  result.prior = target.is_gpu() ? gpu.total.throughput : estimate.total.throughput;
  return result;
}

std::vector<float> extract_features(const ir::Ref<ir::PrimFunc>& lowered,
                                    const codegen::Target& target, const MachineOptions& options,
                                    const char* api) {
  return analyze_candidate(lowered, target, options, api).features;
}

}  // namespace kiln::autotune
