// Loop transformations: split, fuse, reorder, add_unit_loop.
#include "kiln/schedule/loop_transformation.h"

#include <algorithm>
#include <limits>
#include <set>

#include "instruction_registry.h"
#include "kiln/arith/analyzer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "schedule_util.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

std::string describe_factor(const SplitFactor& factor) {
  if (std::holds_alternative<std::monostate>(factor)) return "None";
  if (const int64_t* v = std::get_if<int64_t>(&factor)) return std::to_string(*v);
  return std::get<RV>(factor).name();
}

Json factor_json(const SplitFactor& factor) {
  if (std::holds_alternative<std::monostate>(factor)) return Json();
  if (const int64_t* v = std::get_if<int64_t>(&factor)) return Json(*v);
  return Json(std::get<RV>(factor).name());
}

SplitFactor factor_from_json(const Json& value) {
  if (value.is_null()) return std::monostate{};
  if (value.is_number_integer()) return value.get<int64_t>();
  return rv_from_json(value, "split");
}

Json rv_names(const std::vector<RV>& rvs) {
  Json out = Json::array();
  for (const RV& rv : rvs) out.push_back(rv.name());
  return out;
}

// The loops of `rvs`, checked to be distinct.
std::vector<const LoopLocation*> distinct_loops(Schedule& sch, const std::vector<RV>& rvs,
                                                const char* primitive) {
  if (rvs.empty()) schedule_error("InvalidLoopsError", primitive, "no loop was given");
  std::vector<const LoopLocation*> loops;
  std::set<const For*> seen;
  for (const RV& rv : rvs) {
    const LoopLocation& loc = sch.loop(rv, primitive);
    if (!seen.insert(loc.loop).second) {
      schedule_error("InvalidLoopsError", primitive,
                     "loop '" + loc.loop->loop_var->name + "' is given more than once",
                     sch.func(sch.func_name(rv)), loc.loop);
    }
    if (sch.func_name(rv) != sch.func_name(rvs[0])) {
      schedule_error("InvalidLoopsError", primitive, "the loops belong to different functions");
    }
    loops.push_back(&loc);
  }
  return loops;
}

// Throws LoopIterTypeError when `loop` binds iterators of more than one kind (spatial and
// reduce) in the blocks under it.
void check_single_iter_type(Schedule& sch, const Ref<PrimFunc>& func, const For* loop,
                            const char* primitive) {
  const Var* v = loop->loop_var.get();
  auto is_loop_var = [v](const Var* x) { return x == v; };
  const IterVar* spatial = nullptr;
  const IterVar* other = nullptr;
  const Block* where = nullptr;
  std::vector<const BlockRealize*> pending = child_block_realizes(loop->body);
  while (!pending.empty() && other == nullptr) {
    const BlockRealize* realize = pending.back();
    pending.pop_back();
    const Block* block = realize->block.get();
    for (size_t k = 0; k < block->iter_vars.size(); ++k) {
      if (!uses_var(realize->iter_values[k], is_loop_var)) continue;
      const IterVar& iv = block->iter_vars[k];
      if (iv.type == IterType::kDataPar) {
        if (spatial == nullptr) spatial = &iv;
      } else if (other == nullptr) {
        other = &iv;
        where = block;
      }
    }
    for (const BlockRealize* inner : child_block_realizes(block->body)) pending.push_back(inner);
  }
  if (spatial != nullptr && other != nullptr) {
    schedule_error("LoopIterTypeError", primitive,
                   "loop '" + v->name + "' binds both the spatial iterator '" + spatial->var->name +
                       "' and the " + iter_type_name(other->type) + " iterator '" +
                       other->var->name + "' (block '" + where->name +
                       "'); moving it could run a reduction step before its init",
                   func, loop);
  }
}

Ref<For> make_loop(const Ref<Var>& var, Expr min, Expr extent, Stmt body) {
  return make<For>(var, std::move(min), std::move(extent), ForKind::kSerial, std::move(body));
}

}  // namespace

std::vector<RV> split(Schedule& sch, const RV& loop_rv, const std::vector<SplitFactor>& factors,
                      bool preserve_unit_iters) {
  const char* primitive = "split";
  // Step 1. Resolve the loop and the factors.
  const LoopLocation& loc = sch.loop(loop_rv, primitive);
  const std::string& func_name = sch.func_name(loop_rv);
  Ref<PrimFunc> func = sch.func(func_name);
  const For* loop = loc.loop;
  std::string factor_text;
  for (const SplitFactor& f : factors) {
    factor_text += (factor_text.empty() ? "" : ", ") + describe_factor(f);
  }
  factor_text = "[" + factor_text + "]";
  if (factors.empty()) {
    schedule_error("InvalidSplitFactorsError", primitive, "no factors were given", func, loop);
  }
  int none_index = -1;
  std::vector<int64_t> values(factors.size(), 1);
  for (size_t k = 0; k < factors.size(); ++k) {
    const SplitFactor& f = factors[k];
    if (std::holds_alternative<std::monostate>(f)) {
      if (none_index >= 0) {
        schedule_error("InvalidSplitFactorsError", primitive,
                       "factors " + factor_text + " of loop '" + loop->loop_var->name +
                           "' have more than one None; at most one factor can be inferred",
                       func, loop);
      }
      none_index = static_cast<int>(k);
      continue;
    }
    int64_t value = 0;
    if (const int64_t* v = std::get_if<int64_t>(&f)) {
      value = *v;
    } else {
      const int64_t* c = as_const_int(sch.expr(std::get<RV>(f), primitive));
      if (c == nullptr) {
        schedule_error("InvalidSplitFactorsError", primitive,
                       "factor " + describe_factor(f) + " is not a constant", func, loop);
      }
      value = *c;
    }
    if (value <= 0) {
      schedule_error("InvalidSplitFactorsError", primitive,
                     "factors " + factor_text + " of loop '" + loop->loop_var->name +
                         "' must be positive, found " + std::to_string(value),
                     func, loop);
    }
    values[k] = value;
  }
  // Step 2. Infer the missing factor and decide whether a predicate is needed. The factors and
  // their product must fit the loop variable's type.
  arith::Analyzer analyzer;
  DataType index_type = loop->loop_var->dtype;
  int64_t known_product = 1;
  for (size_t k = 0; k < values.size(); ++k) {
    if (static_cast<int>(k) == none_index) continue;
    if (__builtin_mul_overflow(known_product, values[k], &known_product) ||
        !fits_dtype(known_product, index_type)) {
      schedule_error("InvalidSplitFactorsError", primitive,
                     "factors " + factor_text + " of loop '" + loop->loop_var->name +
                         "' multiply to more than its type " + index_type.str() + " can hold",
                     func, loop);
    }
  }
  std::vector<Expr> extents(factors.size());
  for (size_t k = 0; k < values.size(); ++k) extents[k] = make_const(index_type, values[k]);
  if (none_index >= 0) {
    Expr product = make_const(index_type, known_product);
    extents[none_index] = analyzer.simplify(floordiv(loop->extent + (known_product - 1), product));
  } else if (!analyzer.can_prove(ge(make_const(index_type, known_product), loop->extent))) {
    schedule_error("InvalidSplitFactorsError", primitive,
                   "factors " + factor_text + " multiply to " + std::to_string(known_product) +
                       ", less than the extent " + to_script(loop->extent) + " of loop '" +
                       loop->loop_var->name + "'",
                   func, loop);
  }
  // Step 3. Build the new loops: the old variable is min + a mixed-radix sum of the new ones.
  std::vector<Ref<Var>> vars;
  Expr index;
  for (size_t k = 0; k < extents.size(); ++k) {
    vars.push_back(make_var(loop->loop_var->name + "_" + std::to_string(k), index_type));
    index = index.defined() ? index * extents[k] + vars.back() : Expr(vars.back());
  }
  index = analyzer.simplify(index);
  Expr total = extents[0];
  for (size_t k = 1; k < extents.size(); ++k) total = total * extents[k];
  total = analyzer.simplify(total);
  Expr value = is_const_int(loop->min, 0) ? index : loop->min + index;
  Stmt body = substitute(loop->body, VarMap{{loop->loop_var.get(), value}});
  if (!analyzer.can_prove_equal(total, loop->extent)) {
    body = add_predicate(body, lt(index, loop->extent));
  }
  Stmt nest = body;
  for (size_t k = extents.size(); k-- > 0;) {
    nest = make_loop(vars[k], make_zero(index_type), extents[k], nest);
  }
  // Step 4. Replace and record.
  sch.replace(func_name, with_body(func, replace_stmt(func->body, loop, nest)), primitive,
              {loop->loop_var.get()});
  std::vector<RV> out;
  for (const Ref<Var>& v : vars) out.push_back(sch.new_loop_rv(func_name, v));
  Json factor_list = Json::array();
  for (const SplitFactor& f : factors) factor_list.push_back(factor_json(f));
  sch.record(Instruction{primitive,
                         Json::array({loop_rv.name(), factor_list}),
                         {{"preserve_unit_iters", preserve_unit_iters}},
                         out,
                         Json()});
  return out;
}

RV fuse(Schedule& sch, const std::vector<RV>& loop_rvs, bool preserve_unit_iters) {
  const char* primitive = "fuse";
  // Step 1. Resolve the loops and check that they are directly nested.
  std::vector<const LoopLocation*> locs = distinct_loops(sch, loop_rvs, primitive);
  const std::string& func_name = sch.func_name(loop_rvs[0]);
  Ref<PrimFunc> func = sch.func(func_name);
  for (size_t k = 0; k + 1 < locs.size(); ++k) {
    if (locs[k]->loop->body.get() != locs[k + 1]->loop) {
      schedule_error("LoopsNotNestedError", primitive,
                     "loop '" + locs[k + 1]->loop->loop_var->name +
                         "' is not the only statement in the body of loop '" +
                         locs[k]->loop->loop_var->name + "'",
                     func, locs[k]->loop);
    }
  }
  // Step 2. Build the fused loop: each old variable is a digit of the fused one. The fused
  // variable is int64 when the product of the extents may not fit the loops' type (two loops
  // of 65536 make 2^32 iterations; symbolic extents of int32 variables may too).
  arith::Analyzer analyzer;
  bind_enclosing_ranges(sch.index(func_name), locs[0]->loop, &analyzer);
  DataType index_type = locs[0]->loop->loop_var->dtype;
  std::string name;
  Expr product = make_one(DataType::int64());
  for (const LoopLocation* l : locs) {
    if (l->loop->loop_var->dtype.bits() > index_type.bits()) index_type = l->loop->loop_var->dtype;
    name += l->loop->loop_var->name + "_";
    product = product * cast(DataType::int64(), l->loop->extent);
  }
  if (index_type.bits() < 64 &&
      analyzer.const_int_bound(product).max_value > std::numeric_limits<int32_t>::max()) {
    index_type = DataType::int64();
  }
  Ref<Var> fused = make_var(name + "fused", index_type);
  VarMap vmap;
  Expr stride = make_one(index_type);
  for (size_t k = locs.size(); k-- > 0;) {
    const For* l = locs[k]->loop;
    Expr digit = is_const_int(stride, 1) ? Expr(fused) : floordiv(fused, stride);
    if (k > 0) digit = floormod(digit, cast(index_type, l->extent));
    digit = analyzer.simplify(digit);
    if (!is_const_int(l->min, 0)) digit = cast(index_type, l->min) + digit;
    vmap[l->loop_var.get()] = cast(l->loop_var->dtype, digit);
    stride = analyzer.simplify(stride * cast(index_type, l->extent));
  }
  Stmt body = substitute(locs.back()->loop->body, vmap);
  Stmt fused_loop = make_loop(fused, make_zero(index_type), stride, body);
  // Step 3. Replace and record.
  std::vector<const Var*> removed;
  for (const LoopLocation* l : locs) removed.push_back(l->loop->loop_var.get());
  sch.replace(func_name, with_body(func, replace_stmt(func->body, locs[0]->loop, fused_loop)),
              primitive, removed);
  RV out = sch.new_loop_rv(func_name, fused);
  sch.record(Instruction{primitive,
                         Json::array({rv_names(loop_rvs)}),
                         {{"preserve_unit_iters", preserve_unit_iters}},
                         {out},
                         Json()});
  return out;
}

void reorder(Schedule& sch, const std::vector<RV>& loop_rvs) {
  const char* primitive = "reorder";
  // Step 1. Resolve the loops.
  std::vector<const LoopLocation*> locs = distinct_loops(sch, loop_rvs, primitive);
  const std::string& func_name = sch.func_name(loop_rvs[0]);
  Ref<PrimFunc> func = sch.func(func_name);
  FunctionIndex& index = sch.index(func_name);
  std::set<const For*> wanted;
  for (const LoopLocation* l : locs) wanted.insert(l->loop);
  // Step 2. Find the outermost loop: the one none of the others is an ancestor of.
  auto depth_of = [&](const For* loop) {
    int depth = 0;
    for (const StmtNode* p = index.parent(loop); p != nullptr; p = index.parent(p)) ++depth;
    return depth;
  };
  const For* top = locs[0]->loop;
  for (const LoopLocation* l : locs) {
    if (depth_of(l->loop) < depth_of(top)) top = l->loop;
  }
  // Step 3. Walk down the chain of single-child loops from the top and collect the path.
  std::vector<const For*> path;
  size_t found = 0;
  const For* current = top;
  while (true) {
    path.push_back(current);
    if (wanted.count(current) != 0) ++found;
    if (found == wanted.size()) break;
    const For* next = current->body.as<For>();
    if (next == nullptr) {
      std::string names;
      for (const LoopLocation* l : locs) {
        if (std::find(path.begin(), path.end(), l->loop) == path.end()) {
          names += (names.empty() ? "'" : ", '") + l->loop->loop_var->name + "'";
        }
      }
      schedule_error("LoopsNotNestedError", primitive,
                     "the loops are not on one chain of directly nested loops: below loop '" +
                         current->loop_var->name + "' the body is a " +
                         kind_name(current->body->kind()) + ", not a loop, so " + names +
                         " cannot be reached from loop '" + top->loop_var->name + "'",
                     func, current);
    }
    current = next;
  }
  // Step 4. A loop that binds both a spatial and a reduce iterator must keep its place: moving
  // it could run a reduction step of an output point before that point's init.
  for (const LoopLocation* l : locs) check_single_iter_type(sch, func, l->loop, primitive);
  // Step 5. Assign the given loops, in order, to the positions that the set occupies.
  std::vector<const For*> order = path;
  size_t next_given = 0;
  for (const For*& slot : order) {
    if (wanted.count(slot) != 0) slot = locs[next_given++]->loop;
  }
  for (size_t k = 0; k < order.size(); ++k) {
    for (size_t inner = k + 1; inner < order.size(); ++inner) {
      const Var* v = order[inner]->loop_var.get();
      auto uses = [v](const Var* x) { return x == v; };
      if (uses_var(order[k]->min, uses) || uses_var(order[k]->extent, uses)) {
        schedule_error("LoopDependenceError", primitive,
                       "the extent of loop '" + order[k]->loop_var->name + "' depends on loop '" +
                           v->name + "', which would be moved inside it",
                       func, order[k]);
      }
    }
  }
  // Step 6. Rebuild the chain from the bottom.
  Stmt body = path.back()->body;
  for (size_t k = order.size(); k-- > 0;) {
    auto loop = copy(order[k]);
    loop->body = body;
    body = loop;
  }
  sch.replace(func_name, with_body(func, replace_stmt(func->body, top, body)), primitive);
  sch.record(Instruction{primitive, Json::array({rv_names(loop_rvs)}), Json::object(), {}, Json()});
}

RV add_unit_loop(Schedule& sch, const RV& block_or_loop) {
  const char* primitive = "add_unit_loop";
  // Step 1. The statement the new loop wraps: the loop, or the block's realize.
  const std::string& func_name = sch.func_name(block_or_loop);
  Ref<PrimFunc> func = sch.func(func_name);
  const StmtNode* target = nullptr;
  if (block_or_loop.kind == RVKind::kLoop) {
    target = sch.loop(block_or_loop, primitive).loop;
  } else {
    const BlockLocation& loc = sch.block(block_or_loop, primitive);
    if (loc.realize == nullptr || loc.scope == nullptr) {
      schedule_error("RootBlockError", primitive,
                     "block '" + loc.block->name + "' is the root block, which no loop can enclose",
                     func, loc.block);
    }
    target = loc.realize;
  }
  // Step 2. Wrap it, replace and record.
  Ref<Var> var = make_var("u", DataType::int32());
  Stmt loop = make_loop(var, int32_const(0), int32_const(1), Stmt(target));
  sch.replace(func_name, with_body(func, replace_stmt(func->body, target, loop)), primitive);
  RV out = sch.new_loop_rv(func_name, var);
  sch.record(
      Instruction{primitive, Json::array({block_or_loop.name()}), Json::object(), {out}, Json()});
  return out;
}

void register_loop_transformation_instructions(std::vector<InstructionKind>* kinds) {
  kinds->push_back({"split",
                    {"loop", "factors"},
                    true,
                    [](Schedule& sch, const Json& in, const Json& attrs, const Json&) {
                      std::vector<SplitFactor> factors;
                      for (const Json& f : in.at(1)) factors.push_back(factor_from_json(f));
                      return split(sch, rv_from_json(in.at(0), "split"), factors,
                                   attrs.value("preserve_unit_iters", true));
                    }});
  kinds->push_back({"fuse",
                    {"*loops"},
                    false,
                    [](Schedule& sch, const Json& in, const Json& attrs, const Json&) {
                      std::vector<RV> loops;
                      for (const Json& l : in.at(0)) loops.push_back(rv_from_json(l, "fuse"));
                      return std::vector<RV>{
                          fuse(sch, loops, attrs.value("preserve_unit_iters", true))};
                    }});
  kinds->push_back({"reorder",
                    {"*ordered_loops"},
                    false,
                    [](Schedule& sch, const Json& in, const Json&, const Json&) {
                      std::vector<RV> loops;
                      for (const Json& l : in.at(0)) loops.push_back(rv_from_json(l, "reorder"));
                      reorder(sch, loops);
                      return std::vector<RV>{};
                    }});
  kinds->push_back({"add_unit_loop",
                    {"block_or_loop"},
                    false,
                    [](Schedule& sch, const Json& in, const Json&, const Json&) {
                      return std::vector<RV>{
                          add_unit_loop(sch, rv_from_json(in.at(0), "add_unit_loop"))};
                    }});
}

}  // namespace kiln::schedule
