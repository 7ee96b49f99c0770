// Reduction primitives: rfactor and decompose_reduction, and the helpers of reduction_util.h.
#include "kiln/schedule/reduction.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "instruction_registry.h"
#include "kiln/arith/analyzer.h"
#include "kiln/arith/iter_map.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "reduction_util.h"
#include "schedule_util.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// ---------------------------------------------------------------------------------------------
// Recognizing a reduction block

enum class Combiner { kSum, kProd, kMax, kMin };

const char* combiner_name(Combiner c) {
  switch (c) {
    case Combiner::kSum:
      return "sum";
    case Combiner::kProd:
      return "prod";
    case Combiner::kMax:
      return "max";
    case Combiner::kMin:
      return "min";
  }
  return "?";
}

Expr combiner_identity(Combiner c, DataType t) {
  switch (c) {
    case Combiner::kSum:
      return make_zero(t);
    case Combiner::kProd:
      return make_one(t);
    case Combiner::kMax:
      return min_value(t);
    case Combiner::kMin:
      return max_value(t);
  }
  return Expr();
}

Expr combine(Combiner c, Expr lhs, Expr rhs) {
  switch (c) {
    case Combiner::kSum:
      return make<Add>(lhs->dtype, lhs, rhs);
    case Combiner::kProd:
      return make<Mul>(lhs->dtype, lhs, rhs);
    case Combiner::kMax:
      return make<Max>(lhs->dtype, lhs, rhs);
    case Combiner::kMin:
      return make<Min>(lhs->dtype, lhs, rhs);
  }
  return Expr();
}

// A block `C[idx] = f(C[idx], x)` with init `C[idx] = identity of f`.
struct ReductionPattern {
  const BufferStore* init = nullptr;
  const BufferStore* update = nullptr;
  Combiner combiner = Combiner::kSum;
  Expr rhs;                // x
  bool load_first = true;  // f(C, x) rather than f(x, C)
};

bool is_load_of(const Expr& e, const BufferStore* store) {
  const auto* load = e.as<BufferLoad>();
  if (load == nullptr || !load->buffer.same_as(store->buffer)) return false;
  if (load->indices.size() != store->indices.size()) return false;
  for (size_t k = 0; k < load->indices.size(); ++k) {
    if (!structural_equal(load->indices[k], store->indices[k])) return false;
  }
  return true;
}

ReductionPattern match_reduction(const Ref<PrimFunc>& func, const BlockRealize* realize,
                                 const char* primitive) {
  const Block* block = realize->block.get();
  auto fail = [&](const std::string& why) {
    schedule_error("NotReductionBlockError", primitive, "block '" + block->name + "' " + why, func,
                   realize);
  };
  ReductionPattern p;
  if (!block->init.defined()) fail("has no init, so it is not a reduction");
  p.init = block->init.as<BufferStore>();
  p.update = block->body.as<BufferStore>();
  if (p.init == nullptr || p.update == nullptr) {
    fail("is not of the form `C[idx] = f(C[idx], x)` with an init `C[idx] = c`: its " +
         std::string(p.init == nullptr ? "init" : "body") + " is a " +
         kind_name(p.init == nullptr ? block->init->kind() : block->body->kind()));
  }
  if (!p.init->buffer.same_as(p.update->buffer) ||
      !is_load_of(make<BufferLoad>(p.init->buffer->dtype, p.init->buffer, p.init->indices),
                  p.update)) {
    fail("initializes " +
         to_script(make<BufferLoad>(p.init->buffer->dtype, p.init->buffer, p.init->indices)) +
         " but updates " +
         to_script(make<BufferLoad>(p.update->buffer->dtype, p.update->buffer, p.update->indices)));
  }
  bool has_reduce = false;
  std::unordered_set<const Var*> reduce_vars;
  for (const IterVar& iv : block->iter_vars) {
    if (iv.type == IterType::kCommReduce) {
      has_reduce = true;
      reduce_vars.insert(iv.var.get());
    } else if (iv.type != IterType::kDataPar) {
      fail("has the " + std::string(iter_type_name(iv.type)) + " iterator '" + iv.var->name +
           "'; a reduction has only spatial and reduce iterators");
    }
  }
  if (!has_reduce) fail("has no reduce iterator");
  for (const Expr& index : p.update->indices) {
    if (uses_any(index, reduce_vars)) {
      fail("stores to " +
           to_script(
               make<BufferLoad>(p.update->buffer->dtype, p.update->buffer, p.update->indices)) +
           ", an element that depends on a reduce iterator");
    }
  }
  // The combiner: the kind of the update's value, with the old value on either side.
  const Expr& value = p.update->value;
  std::optional<Combiner> combiner;
  switch (value->kind()) {
    case NodeKind::Add:
      combiner = Combiner::kSum;
      break;
    case NodeKind::Mul:
      combiner = Combiner::kProd;
      break;
    case NodeKind::Max:
      combiner = Combiner::kMax;
      break;
    case NodeKind::Min:
      combiner = Combiner::kMin;
      break;
    default:
      break;
  }
  std::string update_text = to_script(Stmt(p.update));
  if (!combiner) {
    schedule_error("NoMatchedReducerError", primitive,
                   "the update `" + update_text + "` of block '" + block->name +
                       "' is not a sum, product, max or min of the stored element",
                   func, realize);
  }
  const auto* binary = static_cast<const BinaryNode*>(value.get());
  if (is_load_of(binary->a, p.update) && !is_load_of(binary->b, p.update)) {
    p.rhs = binary->b;
    p.load_first = true;
  } else if (is_load_of(binary->b, p.update) && !is_load_of(binary->a, p.update)) {
    p.rhs = binary->a;
    p.load_first = false;
  } else {
    schedule_error("NoMatchedReducerError", primitive,
                   "the update `" + update_text + "` of block '" + block->name +
                       "' does not combine the stored element with a new value exactly once",
                   func, realize);
  }
  const Buffer* out = p.update->buffer.get();
  bool reads_output = false;
  post_order_visit(p.rhs, [&](const Node* node) {
    if (node->kind() == NodeKind::BufferLoad &&
        static_cast<const BufferLoad*>(node)->buffer.get() == out) {
      reads_output = true;
    }
  });
  if (reads_output) {
    schedule_error("NoMatchedReducerError", primitive,
                   "the update `" + update_text + "` of block '" + block->name + "' reads " +
                       out->name + " in the value it combines",
                   func, realize);
  }
  p.combiner = *combiner;
  Expr identity = combiner_identity(p.combiner, out->dtype);
  // A float max (min) may also start from -inf (+inf): an identity as good as the lowest
  // (largest) finite value that te.max (te.min) uses.
  bool infinite_identity = false;
  if (const auto* f = p.init->value.as<FloatImm>()) {
    infinite_identity = std::isinf(f->value) && f->dtype == out->dtype &&
                        ((p.combiner == Combiner::kMax && f->value < 0) ||
                         (p.combiner == Combiner::kMin && f->value > 0));
  }
  if (!infinite_identity && !structural_equal(identity, p.init->value)) {
    schedule_error("NoMatchedReducerError", primitive,
                   "block '" + block->name + "' combines with " + combiner_name(p.combiner) +
                       " but its init value " + to_script(p.init->value) + " is not the identity " +
                       to_script(identity) + " of " + combiner_name(p.combiner),
                   func, realize);
  }
  return p;
}

arith::IterRanges loop_ranges(const std::vector<const For*>& loops) {
  arith::IterRanges ranges;
  for (const For* loop : loops) ranges[loop->loop_var.get()] = Range{loop->min, loop->extent};
  return ranges;
}

std::vector<Expr> with_axis(std::vector<Expr> indices, int axis, const Expr& value) {
  indices.insert(indices.begin() + axis, value);
  return indices;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

// The condition that holds exactly when some values of `dropped` loops satisfy `condition`, for
// a comparison `a < b` or `a <= b` (or `>`, `>=`) whose `a - b` never decreases as a dropped loop
// grows: then the loops' minimums are the values most likely to satisfy it. The conditions of
// split predicates (`fused index < extent`) have this form. None for any other condition.
std::optional<Expr> satisfiable_at_minimum(const Expr& condition,
                                           const std::vector<const For*>& dropped) {
  Expr lhs, rhs;
  if (const auto* c = condition.as<LT>()) lhs = c->a, rhs = c->b;
  if (const auto* c = condition.as<LE>()) lhs = c->a, rhs = c->b;
  if (const auto* c = condition.as<GT>()) lhs = c->b, rhs = c->a;
  if (const auto* c = condition.as<GE>()) lhs = c->b, rhs = c->a;
  if (!lhs.defined()) return std::nullopt;
  Expr gap = sub(lhs, rhs);
  arith::Analyzer analyzer;
  VarMap at_minimum;
  for (const For* loop : dropped) {
    const Var* v = loop->loop_var.get();
    if (!uses_var(gap, [v](const Var* x) { return x == v; })) continue;
    Expr next = substitute(gap, VarMap{{v, add(loop->loop_var, make_const(v->dtype, 1))}});
    if (!analyzer.can_prove_greater_equal(analyzer.simplify(sub(next, gap)), 0)) {
      return std::nullopt;
    }
    at_minimum[v] = loop->min;
  }
  return analyzer.simplify(substitute(condition, at_minimum));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// rfactor

RV rfactor(Schedule& sch, const RV& loop_rv, int factor_axis) {
  const char* primitive = "rfactor";
  // Step 1. Resolve the loop and its one block.
  const LoopLocation& loop_loc = sch.loop(loop_rv, primitive);
  const std::string& func_name = sch.func_name(loop_rv);
  Ref<PrimFunc> func = sch.func(func_name);
  const For* rf_loop = loop_loc.loop;
  std::vector<const Block*> under = blocks_under(rf_loop->body);
  if (under.size() != 1) {
    schedule_error("NotSingleChildBlockError", primitive,
                   "loop '" + rf_loop->loop_var->name + "' holds " + std::to_string(under.size()) +
                       " blocks; rfactor needs exactly one reduction block under it",
                   func, rf_loop);
  }
  const BlockLocation& loc = *sch.index(func_name).find_block(under[0]->name);
  const Block* block = loc.block;
  const BlockRealize* realize = loc.realize;
  const For* top = loc.loops.front();
  std::vector<const Block*> beside = blocks_under(Stmt(top));
  if (beside.size() != 1) {
    std::vector<std::string> names;
    for (const Block* b : beside) names.push_back(b->name);
    schedule_error("NotSingleChildBlockError", primitive,
                   "the outermost loop '" + top->loop_var->name + "' of block '" + block->name +
                       "' holds the blocks " + quoted_list(names) +
                       "; the write-back of rfactor follows that loop, so the block must be "
                       "alone under it",
                   func, top);
  }
  // Step 2. The block must be a reduction with a known combiner and affine bindings.
  ReductionPattern pattern = match_reduction(func, realize, primitive);
  arith::Analyzer analyzer;
  arith::IterRanges ranges = loop_ranges(loc.loops);
  if (!arith::is_affine_binding(*realize, ranges, &analyzer, arith::IterMapLevel::kSurjective)) {
    schedule_error("NotAffineBindingError", primitive,
                   "the bindings of block '" + block->name + "' are not affine in its loops", func,
                   realize);
  }
  // Step 3. Classify the loops: each binds spatial or reduce iterators, not both.
  std::unordered_set<const Var*> spatial_loops, reduce_loops;
  for (const For* loop : loc.loops) {
    const Var* v = loop->loop_var.get();
    std::string spatial_iter, reduce_iter;
    for (size_t k = 0; k < block->iter_vars.size(); ++k) {
      if (!uses_var(realize->iter_values[k], [v](const Var* x) { return x == v; })) continue;
      std::string& slot =
          block->iter_vars[k].type == IterType::kDataPar ? spatial_iter : reduce_iter;
      if (slot.empty()) slot = block->iter_vars[k].var->name;
    }
    if (!spatial_iter.empty() && !reduce_iter.empty()) {
      schedule_error("LoopPropertyError", primitive,
                     "loop '" + v->name + "' binds both the spatial iterator '" + spatial_iter +
                         "' and the reduce iterator '" + reduce_iter + "' of block '" +
                         block->name + "'",
                     func, loop);
    }
    if (!spatial_iter.empty()) spatial_loops.insert(v);
    if (!reduce_iter.empty()) reduce_loops.insert(v);
  }
  const Var* rf_var = rf_loop->loop_var.get();
  if (reduce_loops.count(rf_var) == 0) {
    schedule_error("LoopPropertyError", primitive,
                   "loop '" + rf_var->name + "' binds no reduce iterator of block '" + block->name +
                       "'" + (spatial_loops.count(rf_var) ? "; it binds a spatial one" : ""),
                   func, rf_loop);
  }
  // Step 4. The position of the new dimension.
  const Ref<Buffer>& out = pattern.update->buffer;
  int ndim = out->ndim();
  if (factor_axis < -(ndim + 1) || factor_axis > ndim) {
    schedule_error("FactorAxisOutOfRangeError", primitive,
                   "factor_axis " + std::to_string(factor_axis) + " is out of range for the " +
                       std::to_string(ndim) + "-d buffer " + out->name + ": expected " +
                       std::to_string(-(ndim + 1)) + " <= factor_axis <= " + std::to_string(ndim),
                   func, realize);
  }
  int axis = factor_axis < 0 ? factor_axis + ndim + 1 : factor_axis;
  // Step 5. The intermediate buffer, one element per value of the rfactor loop.
  std::vector<Expr> rf_shape = with_axis(out->shape, axis, rf_loop->extent);
  Ref<Buffer> rf_buffer = decl_buffer(rf_shape, out->dtype, out->name + "_rf", out->scope);
  // Step 6. The rfactor block: the rfactor loop becomes a spatial iterator; a reduce iterator
  // bound through it is replaced by its binding over new iterators of the loops it uses.
  IterVar rf_iter{make_var("v_" + rf_var->name, rf_var->dtype),
                  Range{rf_loop->min, rf_loop->extent}, IterType::kDataPar};
  std::vector<IterVar> rf_iters{rf_iter};
  std::vector<Expr> rf_values{rf_loop->loop_var};
  VarMap rf_map;                                     // old iterators -> rfactor block terms
  VarMap loop_to_iter{{rf_var, Expr(rf_iter.var)}};  // reduce loops -> rfactor block iterators
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    const IterVar& iv = block->iter_vars[k];
    const Expr& binding = realize->iter_values[k];
    if (iv.type == IterType::kDataPar ||
        !uses_var(binding, [rf_var](const Var* x) { return x == rf_var; })) {
      IterVar copy_iv{make_var(iv.var->name, iv.var->dtype), iv.dom, iv.type};
      rf_map[iv.var.get()] = copy_iv.var;
      rf_iters.push_back(copy_iv);
      rf_values.push_back(binding);
      continue;
    }
    for (const For* loop : loc.loops) {
      const Var* v = loop->loop_var.get();
      if (loop_to_iter.count(v) || !uses_var(binding, [v](const Var* x) { return x == v; })) {
        continue;
      }
      IterVar loop_iv{make_var("v_" + v->name, v->dtype), Range{loop->min, loop->extent},
                      IterType::kCommReduce};
      loop_to_iter[v] = loop_iv.var;
      rf_iters.push_back(loop_iv);
      rf_values.push_back(loop->loop_var);
    }
    rf_map[iv.var.get()] = substitute(binding, loop_to_iter);
  }
  std::vector<Expr> out_indices;
  for (const Expr& index : pattern.update->indices)
    out_indices.push_back(substitute(index, rf_map));
  std::vector<Expr> rf_indices = with_axis(out_indices, axis, rf_iter.var);
  Expr rf_load = make<BufferLoad>(out->dtype, rf_buffer, rf_indices);
  Expr rf_rhs = substitute(pattern.rhs, rf_map);
  auto rf_block = make<Block>();
  rf_block->name = fresh_block_name(sch.index(func_name), block->name + "_rf");
  rf_block->iter_vars = rf_iters;
  rf_block->init = make<BufferStore>(rf_buffer, pattern.init->value, rf_indices);
  rf_block->body =
      make<BufferStore>(rf_buffer,
                        pattern.load_first ? combine(pattern.combiner, rf_load, rf_rhs)
                                           : combine(pattern.combiner, rf_rhs, rf_load),
                        rf_indices);
  auto to_rf_regions = [&](const std::vector<BufferRegion>& regions) {
    std::vector<BufferRegion> result = substitute_regions(regions, rf_map);
    for (BufferRegion& region : result) {
      if (!region.buffer.same_as(out)) continue;
      region.buffer = rf_buffer;
      region.region.insert(region.region.begin() + axis, Range{rf_iter.var, int32_const(1)});
    }
    return result;
  };
  rf_block->reads = to_rf_regions(block->reads);
  rf_block->writes = to_rf_regions(block->writes);
  rf_block->alloc_buffers = block->alloc_buffers;
  rf_block->annotations = block->annotations;
  Stmt rf_realize = make<BlockRealize>(rf_values, realize->predicate, rf_block);
  // Step 7. The write-back block, under copies of the spatial loops and the rfactor loop.
  VarMap wb_loops;
  std::vector<Ref<For>> wb_nest;
  for (const For* loop : loc.loops) {
    const Var* v = loop->loop_var.get();
    if (spatial_loops.count(v) == 0 && v != rf_var) continue;
    auto c = copy(loop);
    c->loop_var = make_var(v->name, v->dtype);
    c->min = substitute(loop->min, wb_loops);
    c->extent = substitute(loop->extent, wb_loops);
    wb_loops[v] = c->loop_var;
    wb_nest.push_back(c);
  }
  IterVar wb_rf_iter{make_var(rf_iter.var->name, rf_var->dtype), rf_iter.dom,
                     IterType::kCommReduce};
  std::vector<IterVar> wb_iters{wb_rf_iter};
  std::vector<Expr> wb_values{wb_loops.at(rf_var)};
  VarMap wb_map;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    const IterVar& iv = block->iter_vars[k];
    if (iv.type != IterType::kDataPar) continue;
    IterVar copy_iv{make_var(iv.var->name, iv.var->dtype), iv.dom, iv.type};
    wb_map[iv.var.get()] = copy_iv.var;
    wb_iters.push_back(copy_iv);
    wb_values.push_back(substitute(realize->iter_values[k], wb_loops));
  }
  std::vector<Expr> wb_indices;
  for (const Expr& index : pattern.update->indices) wb_indices.push_back(substitute(index, wb_map));
  Expr wb_out = make<BufferLoad>(out->dtype, out, wb_indices);
  Expr wb_partial =
      make<BufferLoad>(out->dtype, rf_buffer, with_axis(wb_indices, axis, wb_rf_iter.var));
  auto wb_block = make<Block>();
  wb_block->name = block->name;
  wb_block->iter_vars = wb_iters;
  wb_block->init = make<BufferStore>(out, pattern.init->value, wb_indices);
  wb_block->body =
      make<BufferStore>(out,
                        pattern.load_first ? combine(pattern.combiner, wb_out, wb_partial)
                                           : combine(pattern.combiner, wb_partial, wb_out),
                        wb_indices);
  BufferRegion partial_region{rf_buffer, {}};
  for (const Expr& index : with_axis(wb_indices, axis, wb_rf_iter.var)) {
    partial_region.region.push_back(Range{index, int32_const(1)});
  }
  wb_block->reads = {partial_region};
  for (const BufferRegion& region : substitute_regions(block->reads, wb_map)) {
    if (region.buffer.same_as(out)) wb_block->reads.push_back(region);
  }
  wb_block->writes = substitute_regions(block->writes, wb_map);
  wb_block->annotations = block->annotations;
  // The write-back reads exactly the elements of the intermediate buffer that the rfactor block
  // wrote: a condition over loops that it does not copy (reduce loops) becomes the condition
  // that some values of those loops satisfy it.
  std::vector<const For*> dropped;
  for (const For* loop : loc.loops) {
    if (wb_loops.count(loop->loop_var.get()) == 0) dropped.push_back(loop);
  }
  std::vector<Expr> wb_conditions;
  for (const Expr& condition : conjuncts(realize->predicate)) {
    std::optional<Expr> kept = satisfiable_at_minimum(condition, dropped);
    if (!kept) {
      schedule_error("PredicateNotSupportedError", primitive,
                     "the predicate condition '" + to_script(condition) + "' of block '" +
                         block->name +
                         "' constrains its reduce loops in a way the write-back block cannot "
                         "reproduce; expected comparisons that loosen as those loops shrink, "
                         "such as the bounds checks of split",
                     func, realize);
    }
    Expr kept_here = substitute(*kept, wb_loops);
    bool known = is_const_int(kept_here, 1) ||
                 std::any_of(wb_conditions.begin(), wb_conditions.end(),
                             [&](const Expr& c) { return structural_equal(c, kept_here); });
    if (!known) wb_conditions.push_back(kept_here);
  }
  Stmt wb = make<BlockRealize>(wb_values, conjunction(wb_conditions), wb_block);
  for (size_t k = wb_nest.size(); k-- > 0;) {
    wb_nest[k]->body = wb;
    wb = wb_nest[k];
  }
  // Step 8. Replace: the loop nest with the rfactor block, then the write-back nest; the
  // intermediate buffer is allocated by the scope block.
  Stmt rf_nest = replace_stmt(Stmt(top), realize, rf_realize);
  auto scope = copy(loc.scope);
  scope->alloc_buffers.push_back(rf_buffer);
  scope->body = replace_stmt(loc.scope->body, top, seq({rf_nest, wb}));
  sch.replace(func_name, with_body(func, replace_stmt(func->body, loc.scope, scope)), primitive);
  RV out_rv = sch.new_block_rv(func_name, rf_block->name);
  sch.record(Instruction{
      primitive, Json::array({loop_rv.name()}), {{"factor_axis", factor_axis}}, {out_rv}, Json()});
  return out_rv;
}

// ---------------------------------------------------------------------------------------------
// decompose_reduction

RV decompose_reduction(Schedule& sch, const RV& block_rv, const RV& loop_rv) {
  const char* primitive = "decompose_reduction";
  // Step 1. Resolve the block and the loop; the block must have an init.
  const BlockLocation& loc = sch.block(block_rv, primitive);
  const LoopLocation& loop_loc = sch.loop(loop_rv, primitive);
  const std::string& func_name = sch.func_name(block_rv);
  Ref<PrimFunc> func = sch.func(func_name);
  const Block* block = loc.block;
  const BlockRealize* realize = loc.realize;
  const For* loop = loop_loc.loop;
  if (!block->init.defined()) {
    schedule_error("NotReductionBlockError", primitive,
                   "block '" + block->name + "' has no init to decompose", func, realize);
  }
  // Step 2. The loop must be one of the block's loops.
  auto position = std::find(loc.loops.begin(), loc.loops.end(), loop);
  if (position == loc.loops.end()) {
    schedule_error(
        "LoopPositionError", primitive,
        "loop '" + loop->loop_var->name + "' is not an ancestor of block '" + block->name + "'",
        func, loop);
  }
  // Step 3. No loop above it may bind a reduce iterator, and the init must use none.
  std::unordered_set<const Var*> reduce_vars;
  std::vector<IterVar> spatial_iters;
  std::vector<Expr> spatial_values;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    const IterVar& iv = block->iter_vars[k];
    if (iv.type == IterType::kDataPar) {
      spatial_iters.push_back(iv);
      spatial_values.push_back(realize->iter_values[k]);
    } else {
      reduce_vars.insert(iv.var.get());
    }
  }
  for (auto it = loc.loops.begin(); it != position; ++it) {
    const Var* v = (*it)->loop_var.get();
    for (size_t k = 0; k < block->iter_vars.size(); ++k) {
      const IterVar& iv = block->iter_vars[k];
      if (iv.type == IterType::kDataPar) continue;
      if (uses_var(realize->iter_values[k], [v](const Var* x) { return x == v; })) {
        schedule_error("LoopHeightError", primitive,
                       "loop '" + v->name + "', above loop '" + loop->loop_var->name +
                           "', binds the reduce iterator '" + iv.var->name + "' of block '" +
                           block->name +
                           "'; the init can only be placed above every loop of the reduction",
                       func, *it);
      }
    }
  }
  if (uses_var(block->init, [&](const Var* x) { return reduce_vars.count(x) != 0; })) {
    schedule_error("NotReductionBlockError", primitive,
                   "the init of block '" + block->name + "' uses a reduce iterator", func, realize);
  }
  std::vector<const For*> below(position, loc.loops.end());
  std::string why;
  if (!loops_map_one_to_one(*realize, below, &why)) {
    schedule_error("LoopHeightError", primitive,
                   "from loop '" + loop->loop_var->name +
                       "' down, the loops do not map one to one "
                       "onto the iterators of block '" +
                       block->name + "' (" + why +
                       "), so the reduction would run more than once after one init",
                   func, loop);
  }
  // Step 4. The init nest: copies of the loops under `loop` that the spatial iterators use.
  InitSource source;
  source.block_name = fresh_block_name(sch.index(func_name), block->name + "_init");
  source.iters = spatial_iters;
  source.bindings = spatial_values;
  source.predicate = realize->predicate;
  source.loops = below;
  source.init = block->init;
  source.writes = block->writes;
  std::string conflict;
  Stmt init_nest = make_init_nest(source, &conflict);
  if (!init_nest.defined()) {
    schedule_error("LoopHeightError", primitive,
                   "the condition " + conflict + " of block '" + block->name +
                       "' depends both on loops the init keeps and on reduce loops, so the init "
                       "block cannot be given a predicate",
                   func, realize);
  }
  // Step 5. Replace: the init nest goes right before the loop; the block loses its init.
  auto reduced = copy(block);
  reduced->init = nullptr;
  Stmt new_loop = replace_stmt(Stmt(loop), block, reduced);
  sch.replace(func_name,
              with_body(func, replace_stmt(func->body, loop, seq({init_nest, new_loop}))),
              primitive);
  RV out = sch.new_block_rv(func_name, source.block_name);
  sch.record(Instruction{
      primitive, Json::array({block_rv.name(), loop_rv.name()}), Json::object(), {out}, Json()});
  return out;
}

void register_reduction_instructions(std::vector<InstructionKind>* kinds) {
  kinds->push_back({"rfactor",
                    {"loop"},
                    false,
                    [](Schedule& sch, const Json& in, const Json& attrs, const Json&) {
                      return std::vector<RV>{rfactor(sch, rv_from_json(in.at(0), "rfactor"),
                                                     attrs.at("factor_axis").get<int>())};
                    }});
  kinds->push_back({"decompose_reduction",
                    {"block", "loop"},
                    false,
                    [](Schedule& sch, const Json& in, const Json&, const Json&) {
                      return std::vector<RV>{
                          decompose_reduction(sch, rv_from_json(in.at(0), "decompose_reduction"),
                                              rv_from_json(in.at(1), "decompose_reduction"))};
                    }});
}

}  // namespace kiln::schedule
