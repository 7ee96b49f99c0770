// Reduction primitives: rfactor and decompose_reduction, and the helpers of reduction_util.h.
#include "kiln/schedule/reduction.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "instruction_registry.h"
#include "kiln/arith/analyzer.h"
#include "kiln/arith/iter_map.h"
#include "kiln/ir/block_reducer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "reduction_util.h"
#include "schedule_util.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// The reducer of a reduction block (match_block_reducer), or the schedule error that says why
// it has none.
BlockReducer reducer_of(const Ref<PrimFunc>& func, const BlockRealize* realize,
                        const char* primitive) {
  ReducerMismatch mismatch;
  std::optional<BlockReducer> reducer = match_block_reducer(*realize->block, &mismatch);
  if (!reducer) {
    schedule_error(mismatch.kind == ReducerMismatch::kNotReduction ? "NotReductionBlockError"
                                                                   : "NoMatchedReducerError",
                   primitive, mismatch.why, func, realize);
  }
  return *reducer;
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
  BlockReducer reducer = reducer_of(func, realize, primitive);
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
  const std::vector<Ref<Buffer>>& outs = reducer.buffers;
  int ndim = outs[0]->ndim();
  if (factor_axis < -(ndim + 1) || factor_axis > ndim) {
    schedule_error("FactorAxisOutOfRangeError", primitive,
                   "factor_axis " + std::to_string(factor_axis) + " is out of range for the " +
                       std::to_string(ndim) + "-d buffer " + outs[0]->name + ": expected " +
                       std::to_string(-(ndim + 1)) + " <= factor_axis <= " + std::to_string(ndim),
                   func, realize);
  }
  int axis = factor_axis < 0 ? factor_axis + ndim + 1 : factor_axis;
  // Step 5. The intermediate buffers, one per reduced value, one element per value of the
  // rfactor loop.
  std::vector<Ref<Buffer>> rf_buffers;
  for (const Ref<Buffer>& out : outs) {
    std::vector<Expr> rf_shape = with_axis(out->shape, axis, rf_loop->extent);
    rf_buffers.push_back(decl_buffer(rf_shape, out->dtype, out->name + "_rf", out->scope));
  }
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
  for (const Expr& index : reducer.indices) out_indices.push_back(substitute(index, rf_map));
  std::vector<Expr> rf_indices = with_axis(out_indices, axis, rf_iter.var);
  std::vector<Expr> rf_values_combined;
  for (const Expr& value : reducer.values) rf_values_combined.push_back(substitute(value, rf_map));
  std::vector<Expr> rf_elements = elements_of(rf_buffers, rf_indices);
  auto rf_block = make<Block>();
  rf_block->name = fresh_block_name(sch.index(func_name), block->name + "_rf");
  rf_block->iter_vars = rf_iters;
  rf_block->init = store_each(rf_elements, reducer.combiner->identity);
  rf_block->body =
      store_together(rf_elements, combine(*reducer.combiner, rf_elements, rf_values_combined));
  auto to_rf_regions = [&](const std::vector<BufferRegion>& regions) {
    std::vector<BufferRegion> result = substitute_regions(regions, rf_map);
    for (BufferRegion& region : result) {
      for (size_t j = 0; j < outs.size(); ++j) {
        if (!region.buffer.same_as(outs[j])) continue;
        region.buffer = rf_buffers[j];
        region.region.insert(region.region.begin() + axis, Range{rf_iter.var, int32_const(1)});
        break;
      }
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
  for (const Expr& index : reducer.indices) wb_indices.push_back(substitute(index, wb_map));
  std::vector<Expr> partial_indices = with_axis(wb_indices, axis, wb_rf_iter.var);
  std::vector<Expr> wb_elements = elements_of(outs, wb_indices);
  auto wb_block = make<Block>();
  wb_block->name = block->name;
  wb_block->iter_vars = wb_iters;
  wb_block->init = store_each(wb_elements, reducer.combiner->identity);
  wb_block->body = store_together(wb_elements, combine(*reducer.combiner, wb_elements,
                                                       elements_of(rf_buffers, partial_indices)));
  for (const Ref<Buffer>& rf_buffer : rf_buffers) {
    BufferRegion partial_region{rf_buffer, {}};
    for (const Expr& index : partial_indices) {
      partial_region.region.push_back(Range{index, int32_const(1)});
    }
    wb_block->reads.push_back(partial_region);
  }
  for (const BufferRegion& region : substitute_regions(block->reads, wb_map)) {
    bool reduced = std::any_of(outs.begin(), outs.end(),
                               [&](const Ref<Buffer>& out) { return region.buffer.same_as(out); });
    if (reduced) wb_block->reads.push_back(region);
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
  scope->alloc_buffers.insert(scope->alloc_buffers.end(), rf_buffers.begin(), rf_buffers.end());
  scope->body = replace_stmt(loc.scope->body, top, seq({rf_nest, wb}));
  sch.replace(func_name, with_body(func, replace_stmt(func->body, loc.scope, scope)), primitive);
  RV out_rv = sch.new_block_rv(func_name, rf_block->name);
  sch.record(Instruction{
      primitive, Json::array({loop_rv.name()}), {{"factor_axis", factor_axis}}, {out_rv}, Json()});
  return out_rv;
}

// ---------------------------------------------------------------------------------------------
// decompose_reduction

namespace {

// The loops of `loops` that no spatial iterator's binding uses, at the block's first reduction
// step: each at its minimum, where that puts every reduce iterator at the minimum of its domain
// (the step that runs the init); empty otherwise.
VarMap first_step(const Block& block, const BlockRealize& realize,
                  const std::vector<const For*>& loops) {
  arith::Analyzer analyzer;
  VarMap first;
  for (const For* loop : loops) {
    const Var* v = loop->loop_var.get();
    bool spatial = false;
    for (size_t k = 0; k < block.iter_vars.size(); ++k) {
      spatial = spatial || (block.iter_vars[k].type == IterType::kDataPar &&
                            uses_var(realize.iter_values[k], [v](const Var* x) { return x == v; }));
    }
    if (spatial) {
      analyzer.bind(loop->loop_var, Range{loop->min, loop->extent});
    } else {
      first[v] = loop->min;
    }
  }
  for (size_t k = 0; k < block.iter_vars.size(); ++k) {
    const IterVar& iv = block.iter_vars[k];
    if (iv.type == IterType::kDataPar) continue;
    Expr at_first = substitute(realize.iter_values[k], first);
    if (!analyzer.can_prove_equal(at_first, iv.dom.min)) return {};
  }
  return first;
}

}  // namespace

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
  source.first_step = first_step(*block, *realize, below);
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
