// GPU: the transactions a lowered program's accesses take for a warp: wavefronts of shared
// memory, by the bank model the postprocessor pad_shared_tiles pads tiles with
// (autotune/space/shared_memory_banks.h), and 32-byte sectors of global memory. Unrolled copies
// of an access differ by a constant in their index, which moves every thread's address alike:
// each pattern is evaluated once (with the constant's part of a bank word or a sector). A
// thread's neighbouring scalar reads of a shared array are merged into vector reads where the
// compiler can prove them aligned (merged_reads). Per kernel.
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "autotune/program_analysis.h"
#include "autotune/space/shared_memory_banks.h"
#include "kiln/arith/analyzer.h"
#include "kiln/arith/evaluate.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/structural.h"

namespace kiln::autotune::detail {

using namespace ir;

namespace {

// `index` without the constant it adds at its top (`e + c`, `c + e`, `e - c`), into `*shift`.
Expr without_constant(const Expr& index, int64_t* shift) {
  if (const auto* add = index.as<Add>()) {
    if (const int64_t* c = as_const_int(add->b)) {
      *shift += *c;
      return without_constant(add->a, shift);
    }
    if (const int64_t* c = as_const_int(add->a)) {
      *shift += *c;
      return without_constant(add->b, shift);
    }
  }
  if (const auto* sub = index.as<Sub>()) {
    if (const int64_t* c = as_const_int(sub->b)) {
      *shift -= *c;
      return without_constant(sub->a, shift);
    }
  }
  return index;
}

// The threads of a block around an access: per threadIdx axis ("threadIdx.x", ...) the largest
// extent of its loops.
std::map<std::string, int64_t> thread_extents(const DeviceAccess& access) {
  std::map<std::string, int64_t> extents;
  for (const ThreadLoop& loop : access.threads) {
    extents[loop.tag] = std::max(extents[loop.tag], loop.extent);
  }
  return extents;
}

int64_t block_threads(const DeviceAccess& access) {
  int64_t threads = 1;
  for (const auto& [tag, extent] : thread_extents(access)) threads *= extent;
  return threads;
}

// The elements one access's warp moves, thread-major with `lanes` per thread; empty when an
// index is not integer arithmetic of loop variables.
std::vector<int64_t> warp_elements(const DeviceAccess& access, const Expr& index, int warp,
                                   int* lanes) {
  Expr base = index, stride;
  *lanes = 1;
  if (const auto* ramp = index.as<Ramp>()) {
    base = ramp->base;
    stride = ramp->stride;
    *lanes = ramp->lanes;
  } else if (index->dtype.lanes() != 1) {
    return {};
  }
  // Every variable at 0 (the first iteration of its loop) but the threads' and the lets'.
  std::unordered_map<const Var*, int64_t> values;
  for (const Var* var : variables_of(index)) values[var] = 0;
  for (const auto& [var, value] : access.lets) {
    for (const Var* used : variables_of(value)) values[used] = 0;
  }
  std::map<std::string, int64_t> extents = thread_extents(access);
  auto extent = [&](const char* tag) { return extents.count(tag) ? extents[tag] : int64_t{1}; };
  int64_t x = extent("threadIdx.x"), y = extent("threadIdx.y"), z = extent("threadIdx.z");
  int64_t threads = std::min<int64_t>(warp, x * y * z);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(threads) * *lanes);
  for (int64_t t = 0; t < threads; ++t) {
    for (const ThreadLoop& loop : access.threads) {
      values[loop.var] = loop.tag == "threadIdx.x"   ? t % x
                         : loop.tag == "threadIdx.y" ? t / x % y
                                                     : t / (x * y) % z;
    }
    for (const auto& [var, value] : access.lets) {
      std::optional<int64_t> v = arith::evaluate_int(value, values);
      if (!v) return {};
      values[var] = *v;
    }
    std::optional<int64_t> first = arith::evaluate_int(base, values);
    std::optional<int64_t> step = stride.defined() ? arith::evaluate_int(stride, values) : 0;
    if (!first || !step) return {};
    for (int lane = 0; lane < *lanes; ++lane) out.push_back(*first + lane * *step);
  }
  return out;
}

// Global memory moves 32-byte sectors.
constexpr int kSectorBytes = 32;

// The transactions of one request of a warp and the fewest it could take.
using RequestCost = std::pair<double, double>;

RequestCost shared_request(const std::vector<int64_t>& elements, int per_thread,
                           int element_bytes) {
  double bytes = static_cast<double>(elements.size()) * element_bytes;
  return {request_wavefronts(elements, per_thread, element_bytes),
          std::max(1.0, std::ceil(bytes / (kSharedBanks * kSharedBankBytes)))};
}

RequestCost global_request(const std::vector<int64_t>& elements, int, int element_bytes) {
  std::set<int64_t> distinct(elements.begin(), elements.end());
  std::set<int64_t> sectors;
  for (int64_t e : distinct) {
    int64_t first = e * element_bytes, last = first + element_bytes - 1;
    for (int64_t s = arith::floor_divide(first, kSectorBytes);
         s <= arith::floor_divide(last, kSectorBytes); ++s) {
      sectors.insert(s);
    }
  }
  double bytes = static_cast<double>(distinct.size()) * element_bytes;
  return {static_cast<double>(sectors.size()), std::max(1.0, std::ceil(bytes / kSectorBytes))};
}

// An access's index without its constant, and the constant.
struct Split {
  Expr pattern;
  int64_t shift = 0;
};

Split split_constant(const Expr& index) {
  Split out;
  if (const auto* ramp = index.as<Ramp>()) {
    Expr base = without_constant(ramp->base, &out.shift);
    out.pattern = make<Ramp>(ramp->dtype, base, ramp->stride, ramp->lanes);
  } else {
    out.pattern = without_constant(index, &out.shift);
  }
  return out;
}

// structural_hash names free variables by their order: the variables themselves tell a thread's
// index from a loop's.
uint64_t pattern_key(const Expr& pattern, uint64_t seed) {
  uint64_t key = structural_hash(pattern) * 31 + seed;
  for (const Var* var : variables_of(pattern)) {
    key = key * 1000003 + reinterpret_cast<uintptr_t>(var);
  }
  return key;
}

// `e` with the lets around `access` substituted, innermost first.
Expr with_lets(const DeviceAccess& access, Expr e) {
  for (auto let = access.lets.rbegin(); let != access.lets.rend(); ++let) {
    e = substitute(e, VarMap{{let->first, let->second}});
  }
  return e;
}

// Whether every value of `index` is a multiple of `width` (its modular set).
bool aligned_to(const Expr& index, int64_t width) {
  arith::Analyzer analyzer;
  arith::ModularSet modular = analyzer.modular_set(index);
  return modular.coeff % width == 0 && modular.base % width == 0;
}

// How the compiler reads an access: `lanes` elements per request (0: part of an earlier
// access's request), one request per `iterations` executions.
struct Merge {
  int lanes = 1;
  double iterations = 1;
};

// A thread's scalar loads of a shared array become vector reads of up to 16 bytes where the
// compiler can prove the address aligned (every term of the index a multiple of the vector;
// shared arrays are 16-byte aligned), as NVRTC's PTX shows (ld.shared.v4): loads of one group
// (DeviceAccess::group) that read 2 or 4 neighbouring elements, and a load that moves one
// element per iteration of a serial innermost loop whose extent the vector divides (NVRTC
// unrolls such a loop: fully up to 32 iterations, by 4 or 8 beyond, and merges the copies'
// reads). Global loads are not merged: kernels do not know their arguments' alignment.
std::vector<Merge> merged_reads(const std::vector<DeviceAccess>& accesses) {
  std::vector<Merge> merged(accesses.size());
  auto scalar_load = [](const DeviceAccess& a) {
    return a.group >= 0 && a.index.as<Ramp>() == nullptr && a.element_bytes <= 8;
  };
  // Step 1. Neighbouring loads of one group: (group, pattern) -> shift -> access.
  std::map<std::pair<int, uint64_t>, std::map<int64_t, size_t>> runs;
  for (size_t i = 0; i < accesses.size(); ++i) {
    const DeviceAccess& a = accesses[i];
    if (!scalar_load(a)) continue;
    Split split = split_constant(a.index);
    runs[{a.group, pattern_key(split.pattern, static_cast<uint64_t>(a.element_bytes))}].emplace(
        split.shift, i);
  }
  for (const auto& [group, shifts] : runs) {
    if (shifts.size() < 2) continue;
    const DeviceAccess& first = accesses[shifts.begin()->second];
    Expr pattern = with_lets(first, split_constant(first.index).pattern);
    std::set<int64_t> absorbed;
    for (const auto& [shift, index] : shifts) {
      if (absorbed.count(shift) != 0) continue;
      for (int width = 16 / first.element_bytes; width >= 2; width /= 2) {
        bool whole = aligned_to(pattern + make_const(pattern->dtype, shift), width);
        for (int e = 1; e < width && whole; ++e) {
          whole = shifts.count(shift + e) != 0 && absorbed.count(shift + e) == 0;
        }
        if (!whole) continue;
        merged[index].lanes = width;
        for (int e = 1; e < width; ++e) {
          absorbed.insert(shift + e);
          merged[shifts.at(shift + e)].lanes = 0;
        }
        break;
      }
    }
  }
  // Step 2. A load along a serial innermost loop, `width` iterations a request.
  for (size_t i = 0; i < accesses.size(); ++i) {
    const DeviceAccess& a = accesses[i];
    if (merged[i].lanes != 1 || !scalar_load(a) || !a.inner_serial || a.inner_stride != 1 ||
        a.inner_var == nullptr) {
      continue;
    }
    Expr index = with_lets(a, a.index);
    for (int width = 16 / a.element_bytes; width >= 2; width /= 2) {
      if (a.inner_extent <= 0 || a.inner_extent % width != 0) continue;
      const Var* var = a.inner_var;
      Expr unrolled = substitute(index, VarMap{{var, Expr(Ref<Var>(var)) * width}});
      if (!aligned_to(unrolled, width)) continue;
      merged[i] = Merge{width, static_cast<double>(width)};
      break;
    }
  }
  return merged;
}

// A load whose element does not change in its serial innermost loop, of a buffer no store in
// that loop writes, is made once per run of the loop (the compiler hoists it out, as NVRTC's
// PTX shows).
void hoist_invariant_loads(const std::vector<DeviceAccess>& accesses, std::vector<Merge>* merged) {
  std::set<std::pair<const Var*, const Var*>> stored;  // (loop, buffer)
  for (const DeviceAccess& a : accesses) {
    if (a.is_store) stored.emplace(a.inner_var, a.data);
  }
  for (size_t i = 0; i < accesses.size(); ++i) {
    const DeviceAccess& a = accesses[i];
    if (a.is_store || !a.inner_serial || a.inner_stride != 0 || a.inner_extent <= 1 ||
        stored.count({a.inner_var, a.data}) != 0) {
      continue;
    }
    (*merged)[i].iterations *= static_cast<double>(a.inner_extent);
  }
}

// The traffic of `accesses`, each pattern of index evaluated once; a constant shift by part of
// `unit_bytes` (a bank word, a sector) changes what a request touches.
template <class Cost>
std::vector<WarpTraffic> traffic(const Program& program, const std::vector<DeviceAccess>& accesses,
                                 const MachineModel& machine, int unit_bytes, bool merge,
                                 Cost cost_of) {
  std::vector<WarpTraffic> per_kernel(program.kernels.size());
  if (machine.warp_size <= 0) return per_kernel;
  // Per pattern: the traffic of one execution by one warp (requests < 0: not evaluated).
  std::unordered_map<uint64_t, WarpTraffic> patterns;
  std::vector<Merge> merged = merge ? merged_reads(accesses) : std::vector<Merge>(accesses.size());
  hoist_invariant_loads(accesses, &merged);
  for (size_t i = 0; i < accesses.size(); ++i) {
    const DeviceAccess& access = accesses[i];
    int lanes = merged[i].lanes;
    if (lanes == 0) continue;  // part of an earlier access's vector read
    auto [pattern, shift] = split_constant(access.index);
    // A shift by part of a unit regroups the elements into units; of a vector read, realigns it.
    int64_t per_unit = std::max<int64_t>({1, unit_bytes / access.element_bytes, lanes});
    int64_t part = ((shift % per_unit) + per_unit) % per_unit;
    if (lanes > 1) {
      pattern = make<Ramp>(pattern->dtype.with_lanes(lanes), pattern, make_const(pattern->dtype, 1),
                           lanes);
    }
    uint64_t key = pattern_key(
        pattern,
        (static_cast<uint64_t>(part) * 31 + static_cast<uint64_t>(access.element_bytes)) * 31 +
            static_cast<uint64_t>(lanes));
    auto it = patterns.find(key);
    if (it == patterns.end()) {
      int lanes = 1;
      std::vector<int64_t> elements = warp_elements(access, pattern, machine.warp_size, &lanes);
      WarpTraffic one;
      one.requests = -1;
      if (!elements.empty()) {
        for (int64_t& e : elements) e += part;
        // Requests of at most 16 bytes per thread.
        int chunk = std::max(1, std::min(lanes, 16 / access.element_bytes));
        int threads = static_cast<int>(elements.size()) / lanes;
        one.requests = 0;
        for (int first = 0; first < lanes; first += chunk) {
          int count = std::min(chunk, lanes - first);
          std::vector<int64_t> moved;
          for (int t = 0; t < threads; ++t) {
            for (int e = first; e < first + count; ++e) {
              moved.push_back(elements[static_cast<size_t>(t) * lanes + e]);
            }
          }
          RequestCost c = cost_of(moved, count, access.element_bytes);
          one.transactions += c.first;
          one.fewest += c.second;
          one.requests += 1;
        }
      }
      it = patterns.emplace(key, one).first;
    }
    const WarpTraffic& one = it->second;
    if (one.requests < 0 || access.kernel < 0) continue;
    WarpTraffic& total = per_kernel[static_cast<size_t>(access.kernel)];
    double warps = std::ceil(static_cast<double>(block_threads(access)) / machine.warp_size);
    double trips = access.trips / merged[i].iterations;
    total.transactions += trips * warps * one.transactions;
    total.fewest += trips * warps * one.fewest;
    total.requests += trips * warps * one.requests;
    if (!access.is_store) total.load_requests += trips * warps * one.requests;
  }
  return per_kernel;
}

}  // namespace

std::vector<const Var*> variables_of(const Expr& e) {
  std::vector<const Var*> vars;
  post_order_visit(e, [&](const Node* node) {
    if (node->kind() == NodeKind::Var) vars.push_back(static_cast<const Var*>(node));
  });
  return vars;
}

std::vector<WarpTraffic> shared_traffic(const Program& program, const MachineModel& machine) {
  return traffic(program, program.shared_accesses, machine, kSharedBankBytes, /*merge=*/true,
                 shared_request);
}

std::vector<WarpTraffic> global_traffic(const Program& program, const MachineModel& machine) {
  return traffic(program, program.global_accesses, machine, kSectorBytes, /*merge=*/false,
                 global_request);
}

}  // namespace kiln::autotune::detail
