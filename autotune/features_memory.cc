// Buffer accesses: the stride of a flat index in each loop around it, the unique elements and
// cache lines it touches per loop level (its footprint), the working set of every loop, and the
// bytes each access brings into L1, L2 and L3 per call.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>

#include "autotune/program_analysis.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"

namespace kiln::autotune::detail {

using namespace ir;

namespace {

// An index as sum(coefficients[p] * loop_var[p]) + a constant, over vector lanes
// base + lane * lane_stride. `affine` is false when it is not (a gather or an indirect index);
// the coefficients then mark the loops it depends on with 1.
struct LinearForm {
  std::vector<double> coefficients;
  double lane_stride = 0;
  int lanes = 1;
  bool affine = true;
  bool constant = true;  // no loop variable and a known value
  double value = 0;      // the value when `constant`

  bool invariant() const {
    return lane_stride == 0 &&
           std::all_of(coefficients.begin(), coefficients.end(), [](double c) { return c == 0; });
  }
};

class IndexAnalyzer {
 public:
  IndexAnalyzer(const std::vector<const Var*>& loop_vars,
                const std::vector<std::pair<const Var*, Expr>>& lets)
      : loop_vars_(loop_vars), lets_(lets) {}

  // The form of `e`. Deep or large index expressions (chains of LetStmt values included) are
  // followed up to a fixed number of nodes; beyond it an index depends on every loop.
  LinearForm form(const Expr& e, int depth = 0) {
    LinearForm result = zero();
    if (depth > kMaxDepth || --nodes_left_ < 0) return unknown();
    switch (e->kind()) {
      case NodeKind::IntImm:
        result.value = static_cast<double>(e.as<IntImm>()->value);
        return result;
      case NodeKind::Var:
        return variable(e.as<Var>(), depth);
      case NodeKind::Cast:
        return form(e.as<Cast>()->value, depth + 1);
      case NodeKind::Add:
      case NodeKind::Sub: {
        const auto* op = static_cast<const BinaryNode*>(e.get());
        return combine(form(op->a, depth + 1), form(op->b, depth + 1),
                       e->kind() == NodeKind::Add ? 1.0 : -1.0);
      }
      case NodeKind::Mul: {
        const auto* op = e.as<Mul>();
        LinearForm a = form(op->a, depth + 1), b = form(op->b, depth + 1);
        if (a.constant) return scale(b, a.value);
        if (b.constant) return scale(a, b.value);
        if (a.invariant() && b.invariant() && a.affine && b.affine) {
          a.constant = false;
          return a;
        }
        return opaque(e);
      }
      case NodeKind::FloorDiv:
      case NodeKind::Div: {
        // x // c advances 1/c per unit of x: a stride below one element (reuse across
        // iterations). Lanes of a vector divided no longer form a ramp.
        const auto* op = static_cast<const BinaryNode*>(e.get());
        LinearForm b = form(op->b, depth + 1);
        if (!b.constant || b.value <= 0) return opaque(e);
        LinearForm a = form(op->a, depth + 1);
        if (a.lanes > 1 && a.lane_stride != 0) return opaque(e);
        LinearForm result = scale(a, 1.0 / b.value);
        if (a.constant) result.value = std::floor(a.value / b.value);
        return result;
      }
      case NodeKind::FloorMod:
      case NodeKind::Mod: {
        // x % c keeps x's strides inside one period; the footprint is bounded by the buffer.
        const auto* op = static_cast<const BinaryNode*>(e.get());
        LinearForm b = form(op->b, depth + 1);
        if (!b.constant || b.value <= 0) return opaque(e);
        LinearForm a = form(op->a, depth + 1);
        if (a.lanes > 1 && a.lane_stride != 0) return opaque(e);
        if (a.constant) a.value = std::fmod(a.value, b.value);
        a.constant = a.constant && a.invariant();
        return a;
      }
      case NodeKind::Ramp: {
        const auto* op = e.as<Ramp>();
        LinearForm base = form(op->base, depth + 1);
        LinearForm stride = form(op->stride, depth + 1);
        if (!stride.constant) return opaque(e);
        base.lane_stride = stride.value;
        base.lanes = op->lanes;
        base.constant = base.constant && stride.value == 0;
        return base;
      }
      case NodeKind::Broadcast: {
        const auto* op = e.as<Broadcast>();
        LinearForm value = form(op->value, depth + 1);
        value.lanes = op->lanes;
        return value;
      }
      default:
        return opaque(e);
    }
  }

 private:
  LinearForm zero() const {
    LinearForm f;
    f.coefficients.assign(loop_vars_.size(), 0.0);
    return f;
  }

  LinearForm variable(const Var* var, int depth) {
    for (size_t p = 0; p < loop_vars_.size(); ++p) {
      if (loop_vars_[p] == var) {
        LinearForm f = zero();
        f.coefficients[p] = 1;
        f.constant = false;
        return f;
      }
    }
    // The innermost binding of a LetStmt variable decides its value.
    for (auto it = lets_.rbegin(); it != lets_.rend(); ++it) {
      if (it->first == var) return form(it->second, depth + 1);
    }
    LinearForm f = zero();  // a parameter or a variable of the surrounding code: invariant
    f.constant = false;
    return f;
  }

  static LinearForm scale(LinearForm f, double factor) {
    for (double& c : f.coefficients) c *= factor;
    f.lane_stride *= factor;
    f.value *= factor;
    return f;
  }

  static LinearForm combine(LinearForm a, const LinearForm& b, double sign) {
    for (size_t p = 0; p < a.coefficients.size(); ++p) {
      if (a.affine && b.affine) {
        a.coefficients[p] += sign * b.coefficients[p];
      } else {
        a.coefficients[p] = (a.coefficients[p] != 0 || b.coefficients[p] != 0) ? 1 : 0;
      }
    }
    a.lane_stride += sign * b.lane_stride;
    a.lanes = std::max(a.lanes, b.lanes);
    a.affine = a.affine && b.affine;
    a.constant = a.constant && b.constant;
    a.value += sign * b.value;
    return a;
  }

  // An index the analysis does not follow: it depends on the loops whose variables it uses.
  LinearForm opaque(const Expr& e) {
    LinearForm f = zero();
    f.affine = false;
    f.constant = false;
    f.lanes = std::max(1, e->dtype.lanes());
    f.lane_stride = f.lanes > 1 ? 1 : 0;
    post_order_visit(e, [&](const Node* node) {
      if (node->kind() != NodeKind::Var) return;
      const Var* var = static_cast<const Var*>(node);
      for (size_t p = 0; p < loop_vars_.size(); ++p) {
        if (loop_vars_[p] == var) f.coefficients[p] = 1;
      }
      for (const auto& [let_var, value] : lets_) {
        if (let_var != var) continue;
        LinearForm inner = form(value, kMaxDepth / 2);
        for (size_t p = 0; p < loop_vars_.size(); ++p) {
          if (inner.coefficients[p] != 0) f.coefficients[p] = 1;
        }
      }
    });
    return f;
  }

  // Depends on every loop, as an index the analysis gave up on.
  LinearForm unknown() const {
    LinearForm f;
    f.coefficients.assign(loop_vars_.size(), 1.0);
    f.affine = false;
    f.constant = false;
    return f;
  }

  static constexpr int kMaxDepth = 64;
  const std::vector<const Var*>& loop_vars_;
  const std::vector<std::pair<const Var*, Expr>>& lets_;
  int nodes_left_ = 1024;
};

// Unique elements and cache lines of an affine access over loops of the given (stride, extent),
// lanes included: strides that stay within the contiguous run so far extend it; larger ones
// repeat it as separate rows. Rows closer than a line share lines (the span bounds them).
std::pair<double, double> affine_footprint(std::vector<std::pair<double, double>> dims,
                                           double elements_per_line) {
  std::sort(dims.begin(), dims.end());
  // Loops with equal strides overlap (conv2d's y + ry): their extents add.
  std::vector<std::pair<double, double>> merged;
  for (const auto& [stride, extent] : dims) {
    if (!merged.empty() && merged.back().first == stride) {
      merged.back().second += extent - 1;
    } else {
      merged.emplace_back(stride, extent);
    }
  }
  double run = 1, rows = 1, span = 1;
  for (const auto& [stride, extent] : merged) {
    span += stride * (extent - 1);
    if (rows == 1 && stride <= run) {
      run += stride * (extent - 1);
    } else {
      rows *= extent;
    }
  }
  double unique = std::min(run * rows, span);
  double lines =
      std::min(rows * std::ceil(run / elements_per_line), std::ceil(span / elements_per_line));
  return {unique, std::max(1.0, lines)};
}

// Groups the accesses of a program into patterns (defined below, after Pattern::lines).
void group_patterns(Program* program);

}  // namespace

bool same_pattern(const Access& a, const Access& b) {
  return a.data == b.data && a.affine && b.affine && a.lanes == b.lanes &&
         a.lane_stride == b.lane_stride && a.coefficients == b.coefficients;
}

double access_instructions(const Access& access, const MachineModel& machine) {
  if (access.lanes <= 1) return 1;
  // Lane by lane: a load or store and an insert or extract per lane.
  if (!access.affine || std::fabs(access.lane_stride) > 1) return 2.0 * access.lanes;
  if (access.lane_stride == 0) return 1;  // a broadcast
  DataType type(DataType::kFloat, access.element_bytes * 8, access.lanes);
  return machine.vectors(type);
}

int stride_kind(const Access& access, double* stride) {
  double s = 0;
  if (access.lanes > 1) {
    s = std::fabs(access.lane_stride);
  } else if (!access.coefficients.empty()) {
    s = std::fabs(access.coefficients.back());
  }
  *stride = s;
  if (!access.affine) return kGather;
  if (s < 1) return kReuse;
  return s == 1 ? kUnitStride : kStrided;
}

void analyze_index(const Expr& index, const std::vector<const Var*>& loop_vars,
                   const std::vector<std::pair<const Var*, Expr>>& lets, Access* access) {
  IndexAnalyzer analyzer(loop_vars, lets);
  LinearForm f = analyzer.form(index);
  access->coefficients = std::move(f.coefficients);
  access->affine = f.affine;
  access->lane_stride = access->lanes > 1 ? f.lane_stride : 0;
  access->offset = f.value;
  // A vector index that is not a ramp (lanes from a division, a select…) is a gather.
  if (access->lanes > 1 && f.lanes != access->lanes) access->affine = false;
}

namespace {

// The (stride, extent) of an affine access's lanes and of its loops from `level` inward.
std::vector<std::pair<double, double>> footprint_dims(const Access& access, const Store& store,
                                                      const Program& program, int level) {
  std::vector<std::pair<double, double>> dims;
  if (access.lanes > 1 && access.lane_stride != 0) {
    dims.emplace_back(std::fabs(access.lane_stride), access.lanes);
  }
  for (int p = level; p < store.depth(); ++p) {
    double extent = static_cast<double>(program.loops[store.loops[p]].extent);
    double stride = std::fabs(access.coefficients[p]);
    if (stride != 0 && extent > 1) dims.emplace_back(stride, extent);
  }
  return dims;
}

}  // namespace

void compute_footprints(Program* program, const MachineModel& machine) {
  for (Store& store : program->stores) {
    int depth = store.depth();
    for (Access& access : store.accesses) {
      double per_line =
          std::max(1.0, static_cast<double>(machine.line_bytes) / access.element_bytes);
      double buffer_lines = access.buffer_elements > 0
                                ? std::ceil(access.buffer_elements / per_line)
                                : std::numeric_limits<double>::infinity();
      double buffer_elements = access.buffer_elements > 0 ? access.buffer_elements
                                                          : std::numeric_limits<double>::infinity();
      access.unique_elements.assign(depth + 1, 1.0);
      access.lines.assign(depth + 1, 1.0);
      for (int level = depth; level >= 0; --level) {
        double unique = 1, lines = 1;
        if (access.affine) {
          std::tie(unique, lines) =
              affine_footprint(footprint_dims(access, store, *program, level), per_line);
        } else {
          // A gather: every element it may touch, each on its own line.
          unique = access.lanes;
          for (int p = level; p < depth; ++p) {
            if (access.coefficients[p] != 0) {
              unique *= static_cast<double>(program->loops[store.loops[p]].extent);
            }
          }
          lines = unique;
        }
        access.unique_elements[level] = std::max(1.0, std::min(unique, buffer_elements));
        access.lines[level] = std::max(1.0, std::min(lines, buffer_lines));
      }
    }
  }
  group_patterns(program);
}

double Pattern::lines(const Program& program, int level, int line_bytes) const {
  double largest = 0, sum = 0;
  for (const auto& [s, a] : members) {
    const Access& access = program.stores[s].accesses[a];
    if (access.repeated) continue;
    largest = std::max(largest, access.lines[level]);
    sum += access.lines[level];
  }
  // The first member is never a repeat of another.
  const auto& [first_s, first_a] = members.front();
  const Store& store = program.stores[first_s];
  const Access& first = store.accesses[first_a];
  if (!first.affine) {
    double spread = (max_offset - min_offset) * first.element_bytes / line_bytes;
    return std::min(sum, largest + std::ceil(spread));
  }
  // The members' offsets are one more dimension of the footprint, evenly spaced by offset_step
  // (the unrolled rows of a register tile, a convolution's row taps): over a loop that moves
  // farther than their spread (a channel), the spread repeats.
  std::vector<std::pair<double, double>> dims = footprint_dims(first, store, program, level);
  if (offset_step > 0) {
    double step = static_cast<double>(offset_step);
    dims.emplace_back(step, std::round((max_offset - min_offset) / step) + 1);
  }
  double per_line = std::max(1.0, static_cast<double>(line_bytes) / first.element_bytes);
  double together = affine_footprint(std::move(dims), per_line).second;
  return std::min(sum, std::max(largest, together));
}

namespace {

// What makes two accesses one pattern: the loops around their stores and same_pattern.
struct PatternKey {
  const std::vector<int>* loops;
  const Access* access;
  int unique;  // a gather is a pattern of its own

  bool operator<(const PatternKey& other) const {
    const Access& a = *access;
    const Access& b = *other.access;
    return std::tie(unique, *loops, a.data, a.lanes, a.lane_stride, a.coefficients) <
           std::tie(other.unique, *other.loops, b.data, b.lanes, b.lane_stride, b.coefficients);
  }
};

void group_patterns(Program* program) {
  std::map<PatternKey, int> index;
  int gathers = 0;
  for (size_t s = 0; s < program->stores.size(); ++s) {
    Store& store = program->stores[s];
    for (size_t a = 0; a < store.accesses.size(); ++a) {
      Access& access = store.accesses[a];
      PatternKey key{&store.loops, &access, access.affine ? 0 : ++gathers};
      auto [it, added] = index.emplace(key, static_cast<int>(program->patterns.size()));
      if (added) {
        program->patterns.emplace_back();
        program->patterns.back().min_offset = access.offset;
        program->patterns.back().max_offset = access.offset;
      }
      Pattern& pattern = program->patterns[it->second];
      if (!added) {
        const auto& [first_s, first_a] = pattern.members.front();
        double first = program->stores[first_s].accesses[first_a].offset;
        pattern.offset_step = std::gcd(pattern.offset_step,
                                       static_cast<int64_t>(std::llround(access.offset - first)));
      }
      for (const auto& [other_s, other_a] : pattern.members) {
        const Access& other = program->stores[other_s].accesses[other_a];
        if (other.offset == access.offset && other.is_store == access.is_store) {
          access.repeated = true;
        }
      }
      pattern.min_offset = std::min(pattern.min_offset, access.offset);
      pattern.max_offset = std::max(pattern.max_offset, access.offset);
      pattern.members.emplace_back(static_cast<int>(s), static_cast<int>(a));
      access.pattern = it->second;
    }
  }
}

}  // namespace

MemoryModel model_memory(const Program& program, const MachineModel& machine) {
  MemoryModel model;
  // Step 1. The working set of each loop: per buffer, the most lines one pattern of its accesses
  // in the loop's subtree touches while the loop runs once.
  std::vector<std::tuple<int, const Var*, double>> entries;
  for (const Pattern& pattern : program.patterns) {
    const auto& [s, a] = pattern.members.front();
    const Store& store = program.stores[s];
    for (int level = 0; level < store.depth(); ++level) {
      entries.emplace_back(store.loops[level], store.accesses[a].data,
                           pattern.lines(program, level, machine.line_bytes));
    }
  }
  std::sort(entries.begin(), entries.end());
  model.working_set.assign(program.loops.size(), 0.0);
  for (size_t i = 0; i < entries.size();) {
    size_t j = i;
    double lines = 0;
    while (j < entries.size() && std::get<0>(entries[j]) == std::get<0>(entries[i]) &&
           std::get<1>(entries[j]) == std::get<1>(entries[i])) {
      lines = std::max(lines, std::get<2>(entries[j]));
      ++j;
    }
    model.working_set[std::get<0>(entries[i])] += lines * machine.line_bytes;
    i = j;
  }

  // Step 2. A pattern's lines stay in a cache while the loop that reuses them runs: when the
  // working set of one iteration of a loop fits, consecutive iterations find the lines the
  // previous one brought (the same data, or the rest of a line a small stride left), so the
  // pattern's lines over the whole loop come in from the next level once per run of that loop.
  // That loop is the one around the outermost loop whose working set fits (an access alone
  // always fits: a stream brings each line once).
  auto reusing_level = [&](const Store& store, double capacity, int* fitting_levels) {
    int depth = store.depth();
    int level = depth;
    while (level > 0 && model.working_set[store.loops[level - 1]] <= capacity) --level;
    *fitting_levels = depth - level;
    return level > 0 ? level - 1 : 0;
  };
  model.traffic.resize(program.stores.size());
  for (size_t s = 0; s < program.stores.size(); ++s) {
    model.traffic[s].resize(program.stores[s].accesses.size());
  }
  for (const Pattern& pattern : program.patterns) {
    const auto& [s, a] = pattern.members.front();
    const Store& store = program.stores[s];
    std::vector<double> outer_trips(store.depth() + 1, 1.0);
    for (int l = 0; l < store.depth(); ++l) {
      outer_trips[l + 1] =
          outer_trips[l] * static_cast<double>(program.loops[store.loops[l]].extent);
    }
    int fits_l1 = 0, fits_l2 = 0, fits_l3 = 0;
    int l1 = reusing_level(store, machine.l1_bytes, &fits_l1);
    int l2 = reusing_level(store, machine.l2_bytes, &fits_l2);
    int l3 = reusing_level(store, machine.l3_bytes, &fits_l3);
    for (const auto& [member_s, member_a] : pattern.members) {
      Traffic& traffic = model.traffic[member_s][member_a];
      traffic.fits_l1_levels = fits_l1;
      traffic.fits_l2_levels = fits_l2;
    }
    Traffic& first = model.traffic[s][a];
    double line = machine.line_bytes;
    first.into_l1 = pattern.lines(program, l1, machine.line_bytes) * outer_trips[l1] * line;
    first.into_l2 = pattern.lines(program, l2, machine.line_bytes) * outer_trips[l2] * line;
    first.into_l3 = pattern.lines(program, l3, machine.line_bytes) * outer_trips[l3] * line;
  }
  return model;
}

}  // namespace kiln::autotune::detail
