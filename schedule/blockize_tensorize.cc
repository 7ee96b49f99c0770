// blockize and tensorize: the division of block bindings into outer and inner parts, the outer
// block, the matching of a block against an intrinsic's description, and the instantiation of
// the intrinsic's implementation on the matched buffer regions.
#include "kiln/schedule/blockize_tensorize.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "instruction_registry.h"
#include "kiln/arith/analyzer.h"
#include "kiln/arith/int_set.h"
#include "kiln/arith/iter_map.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/schedule/tensor_intrin.h"
#include "reduction_util.h"
#include "schedule_util.h"
#include "tensorize_match.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// ---------------------------------------------------------------------------------------------
// Dividing a binding into outer and inner parts

using VarSet = std::unordered_set<const Var*>;

// One term of a binding: a digit of one loop, or of a fusion of loops all on one side.
struct Term {
  arith::IterSplitExpr split;
  bool inner;
};

void mark_vars(const arith::IterMark& mark, std::vector<const Var*>* out) {
  if (mark.var.defined()) {
    out->push_back(mark.var.get());
    return;
  }
  for (const arith::IterSplitExpr& arg : mark.fused->args) mark_vars(*arg.source, out);
}

// Appends the terms of `split` (scaled by `scale`) to `out`, opening fusions of loops from both
// sides into their digits. False, with the reason in `why`, for a digit of such a fusion that
// is not the whole of it.
bool expand_split(const arith::IterSplitExpr& split, const Expr& scale, const VarSet& inner,
                  arith::Analyzer* analyzer, std::vector<Term>* out, std::string* why) {
  const arith::IterMark& mark = *split.source;
  Expr total = analyzer->simplify(split.scale * scale);
  std::vector<const Var*> vars;
  mark_vars(mark, &vars);
  size_t inner_count = std::count_if(vars.begin(), vars.end(),
                                     [&inner](const Var* v) { return inner.count(v) != 0; });
  if (inner_count == 0 || inner_count == vars.size()) {
    out->push_back(Term{arith::IterSplitExpr{split.source, split.lower_factor, split.extent, total},
                        inner_count != 0});
    return true;
  }
  if (is_const_int(split.lower_factor, 1) && analyzer->can_prove_equal(split.extent, mark.extent)) {
    for (const arith::IterSplitExpr& arg : mark.fused->args) {
      if (!expand_split(arg, total, inner, analyzer, out, why)) return false;
    }
    return true;
  }
  *why = "it takes a part of " + to_script(arith::to_expr(mark)) +
         ", which fuses loops from both sides of the blockized loop";
  return false;
}

// binding = outer * inner_extent + inner, with outer over the outer loops and inner over the
// inner loops ranging over [0, inner_extent).
struct Division {
  bool has_outer = false;
  bool has_inner = false;
  Expr outer, inner;
  int64_t inner_extent = 1;
};

std::optional<Division> divide(const arith::IterSumExpr& sum, const VarSet& inner,
                               arith::Analyzer* analyzer, std::string* why) {
  DataType t = sum.base.defined() ? sum.base->dtype : DataType::int32();
  Expr base = sum.base.defined() ? sum.base : make_zero(t);
  std::vector<Term> terms;
  for (const arith::IterSplitExpr& arg : sum.args) {
    if (!expand_split(arg, make_one(t), inner, analyzer, &terms, why)) return std::nullopt;
  }
  std::vector<Term> inner_terms, outer_terms;
  for (const Term& term : terms) (term.inner ? inner_terms : outer_terms).push_back(term);
  Division d;
  d.has_outer = !outer_terms.empty();
  d.has_inner = !inner_terms.empty();
  if (!d.has_inner) return d;
  // The inner terms must be the digits of one dense mixed-radix number.
  for (const Term& term : inner_terms) {
    if (as_const_int(term.split.scale) == nullptr || as_const_int(term.split.extent) == nullptr) {
      *why = "the inner part " + to_script(arith::to_expr(term.split)) + " has a symbolic extent";
      return std::nullopt;
    }
  }
  std::sort(inner_terms.begin(), inner_terms.end(), [](const Term& a, const Term& b) {
    return *as_const_int(a.split.scale) < *as_const_int(b.split.scale);
  });
  int64_t expected = 1;
  Expr inner_expr;
  for (const Term& term : inner_terms) {
    if (*as_const_int(term.split.scale) != expected) {
      *why =
          "its inner terms do not form a dense number: " + to_script(arith::to_expr(term.split)) +
          " has scale " + std::to_string(*as_const_int(term.split.scale)) + " where " +
          std::to_string(expected) + " is needed";
      return std::nullopt;
    }
    expected *= *as_const_int(term.split.extent);
    Expr e = arith::to_expr(term.split);
    inner_expr = inner_expr.defined() ? inner_expr + e : e;
  }
  d.inner_extent = expected;
  if (!d.has_outer) {
    d.inner = is_const_int(base, 0) ? inner_expr : inner_expr + base;
    return d;
  }
  d.inner = inner_expr;
  Expr extent = make_const(t, expected);
  Expr outer_expr;
  for (const Term& term : outer_terms) {
    if (!analyzer->can_prove(eq(floormod(term.split.scale, extent), make_zero(t)))) {
      *why = "the outer term " + to_script(arith::to_expr(term.split)) +
             " is not a multiple of the inner extent " + std::to_string(expected);
      return std::nullopt;
    }
    arith::IterSplitExpr scaled = term.split;
    scaled.scale = analyzer->simplify(floordiv(term.split.scale, extent));
    Expr e = arith::to_expr(scaled);
    outer_expr = outer_expr.defined() ? outer_expr + e : e;
  }
  if (!analyzer->can_prove(eq(floormod(base, extent), make_zero(t)))) {
    *why = "its offset " + to_script(base) + " is not a multiple of the inner extent " +
           std::to_string(expected);
    return std::nullopt;
  }
  if (!is_const_int(base, 0)) outer_expr = outer_expr + floordiv(base, extent);
  d.outer = analyzer->simplify(outer_expr);
  return d;
}

// ---------------------------------------------------------------------------------------------
// Building the outer block

// Simplifies the indices of loads and stores and the regions of blocks (after the blockize
// substitution, `(v_o*16 + v_i) // 16` with v_i in [0, 16) becomes v_o).
class IndexSimplifier : public IRMutator {
 public:
  explicit IndexSimplifier(arith::Analyzer* analyzer) : analyzer_(analyzer) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const BufferLoad* op) override {
    Expr visited = IRMutator::visit(op);
    const auto* load = visited.as<BufferLoad>();
    std::vector<Expr> indices = simplified(load->indices);
    return make<BufferLoad>(load->dtype, load->buffer, indices);
  }
  Stmt visit(const BufferStore* op) override {
    Stmt visited = IRMutator::visit(op);
    const auto* store = visited.as<BufferStore>();
    return make<BufferStore>(store->buffer, store->value, simplified(store->indices));
  }
  Stmt visit(const Block* op) override {
    Stmt visited = IRMutator::visit(op);
    auto block = copy(visited.as<Block>());
    for (auto* regions : {&block->reads, &block->writes}) {
      for (BufferRegion& region : *regions) {
        for (Range& r : region.region) {
          r = Range{analyzer_->simplify(r.min), analyzer_->simplify(r.extent)};
        }
      }
    }
    return block;
  }

 private:
  std::vector<Expr> simplified(std::vector<Expr> indices) {
    for (Expr& index : indices) index = analyzer_->simplify(index);
    return indices;
  }
  arith::Analyzer* analyzer_;
};

struct Blockized {
  Ref<PrimFunc> func;       // the function with the outer block
  Ref<BlockRealize> outer;  // the outer block's realize, as placed in `func`
};

Blockized build_blockize(Schedule& sch, const RV& loop_rv, const char* primitive) {
  // Step 1. Resolve the loop and the one block under it.
  const LoopLocation& loop_loc = sch.loop(loop_rv, primitive);
  const std::string& func_name = sch.func_name(loop_rv);
  Ref<PrimFunc> func = sch.func(func_name);
  const For* loop = loop_loc.loop;
  std::vector<const BlockRealize*> children = child_block_realizes(loop->body);
  if (children.size() != 1) {
    schedule_error("NotSingleChildBlockError", primitive,
                   "loop '" + loop->loop_var->name + "' holds " + std::to_string(children.size()) +
                       " blocks; blockize needs exactly one",
                   func, loop);
  }
  FunctionIndex& index = sch.index(func_name);
  const BlockLocation& loc = *index.find_block(children[0]->block->name);
  const Block* block = loc.block;
  const BlockRealize* realize = loc.realize;
  auto position = std::find(loc.loops.begin(), loc.loops.end(), loop);
  internal_check(position != loc.loops.end()) << "blockize: the loop is not above its block";
  std::vector<const For*> inner_loops(position, loc.loops.end());
  VarSet inner_vars;
  for (const For* l : inner_loops) inner_vars.insert(l->loop_var.get());
  // Step 2. The bindings must be affine; divide each into outer and inner parts.
  arith::Analyzer analyzer;
  arith::IterRanges ranges;
  for (const For* l : loc.loops) ranges[l->loop_var.get()] = Range{l->min, l->extent};
  arith::IterMapResult map =
      arith::detect_iter_map(realize->iter_values, ranges, realize->predicate,
                             arith::IterMapLevel::kSurjective, &analyzer);
  if (!map.ok()) {
    schedule_error("NotAffineBindingError", primitive,
                   "the bindings of block '" + block->name +
                       "' are not affine in its loops: " + map.errors.front(),
                   func, realize);
  }
  std::vector<Division> divisions;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    std::string why;
    std::optional<Division> d = divide(map.indices[k], inner_vars, &analyzer, &why);
    const IterVar& iv = block->iter_vars[k];
    if (d && d->has_outer && d->has_inner && !is_const_int(iv.dom.min, 0)) {
      why = "its domain starts at " + to_script(iv.dom.min) + ", not 0";
      d.reset();
    }
    if (!d) {
      schedule_error("SubspaceNotDivisibleError", primitive,
                     "the binding " + to_script(realize->iter_values[k]) + " of iterator '" +
                         iv.var->name + "' of block '" + block->name +
                         "' does not divide into a part over the loops above '" +
                         loop->loop_var->name + "' and a part over the loops from it down: " + why,
                     func, realize);
    }
    divisions.push_back(*d);
  }
  std::string why;
  if (block->init.defined() && !loops_map_one_to_one(*realize, inner_loops, &why)) {
    schedule_error("SubspaceNotDivisibleError", primitive,
                   "from loop '" + loop->loop_var->name +
                       "' down, the loops do not map one to one "
                       "onto the iterators of block '" +
                       block->name + "' (" + why +
                       "), so its init cannot move to the outer block: the reduction would run "
                       "more than once after one init",
                   func, realize);
  }
  // Step 3. The iterators: outer ones for outer parts, inner ones for inner parts.
  auto uses_inner_loop = [&](const Expr& e) {
    return uses_var(e, [&](const Var* v) { return inner_vars.count(v) != 0; });
  };
  auto uses_outer_loop = [&](const Expr& e) {
    return uses_var(e,
                    [&](const Var* v) { return inner_vars.count(v) == 0 && ranges.count(v) != 0; });
  };
  VarMap unit_inner;  // inner loops of extent 1 are their min in outer bindings
  for (const For* l : inner_loops) {
    if (is_const_int(l->extent, 1)) unit_inner[l->loop_var.get()] = l->min;
  }
  std::vector<IterVar> outer_iters, inner_iters;
  std::vector<Expr> outer_values, inner_values;
  VarMap vmap;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    const IterVar& iv = block->iter_vars[k];
    const Division& d = divisions[k];
    const Expr& binding = realize->iter_values[k];
    DataType t = iv.var->dtype;
    if (!d.has_inner) {
      IterVar outer{make_var(iv.var->name, t), iv.dom, iv.type};
      outer_iters.push_back(outer);
      // A binding that the inner loops move by no step (a part of extent 1 of a fused loop,
      // `fused // 4` with `fused < 4`) is its normalized form over the outer loops.
      Expr value = substitute(binding, unit_inner);
      if (uses_inner_loop(value)) value = cast(t, arith::to_expr(map.indices[k]));
      internal_check(!uses_inner_loop(value))
          << "blockize: the outer binding " << to_script(value) << " uses an inner loop";
      outer_values.push_back(value);
      vmap[iv.var.get()] = outer.var;
    } else if (!d.has_outer) {
      // A binding that the outer loops move by no step (`(f0 * 24 + f2) % 6` with f2 < 6) is
      // its normalized form over the inner loops.
      inner_iters.push_back(iv);
      inner_values.push_back(uses_outer_loop(binding) ? cast(t, arith::to_expr(map.indices[k]))
                                                      : binding);
    } else {
      Expr extent = make_const(t, d.inner_extent);
      IterVar outer{make_var(iv.var->name + "_o", t),
                    Range{make_zero(t), analyzer.simplify(floordiv(
                                            iv.dom.extent + (d.inner_extent - 1), extent))},
                    iv.type};
      IterVar inner{make_var(iv.var->name + "_i", t), Range{make_zero(t), extent}, iv.type};
      outer_iters.push_back(outer);
      outer_values.push_back(cast(t, d.outer));
      inner_iters.push_back(inner);
      inner_values.push_back(cast(t, d.inner));
      vmap[iv.var.get()] = outer.var * extent + inner.var;
    }
  }
  // Step 4. The predicate: conditions over outer loops only go to the outer block.
  std::vector<Expr> outer_conditions, inner_conditions;
  for (const Expr& c : conjuncts(realize->predicate)) {
    (uses_inner_loop(c) ? inner_conditions : outer_conditions).push_back(c);
  }
  // Inside the outer block the outer loops are out of scope: in the inner bindings and
  // conditions, an outer loop of extent 1 is its min, and one that an outer iterator is bound to
  // is that iterator.
  {
    VarMap outer_loops;
    for (const For* l : loc.loops) {
      if (inner_vars.count(l->loop_var.get()) == 0 && is_const_int(l->extent, 1)) {
        outer_loops[l->loop_var.get()] = l->min;
      }
    }
    for (size_t k = 0; k < outer_iters.size(); ++k) {
      const auto* v = outer_values[k].as<Var>();
      if (v != nullptr && outer_loops.count(v) == 0) outer_loops[v] = outer_iters[k].var;
    }
    auto rewrite = [&](const Expr& e) {
      Expr r = substitute(e, outer_loops);
      return r.same_as(e) ? e : analyzer.simplify(r);
    };
    for (Expr& value : inner_values) value = rewrite(value);
    for (Expr& c : inner_conditions) {
      c = rewrite(c);
      if (uses_outer_loop(c)) {
        schedule_error("SubspaceNotDivisibleError", primitive,
                       "the condition " + to_script(c) + " of block '" + block->name +
                           "' mixes the loops from '" + loop->loop_var->name +
                           "' down with loops above it that no iterator of the outer block "
                           "stands for",
                       func, realize);
      }
    }
    for (const Expr& value : inner_values) {
      internal_check(!uses_outer_loop(value))
          << "blockize: an inner binding still uses a loop above the outer block";
    }
  }
  // Where a condition over inner loops cut the last tile of a split short, the outer loops run
  // past the outer iterators' domains; no inner instance runs there, so the outer block need
  // not either.
  {
    arith::Analyzer outer;
    for (const For* l : loc.loops) {
      if (inner_vars.count(l->loop_var.get()) == 0) {
        outer.bind(l->loop_var, Range{l->min, l->extent});
      }
    }
    arith::ConstraintScope known(&outer, conjunction(outer_conditions));
    std::vector<Expr> bounds;
    for (size_t k = 0; k < outer_iters.size(); ++k) {
      const Range& dom = outer_iters[k].dom;
      const Expr& value = outer_values[k];
      if (!outer.can_prove(ge(value, dom.min))) bounds.push_back(ge(value, dom.min));
      if (!outer.can_prove(lt(value, dom.min + dom.extent))) {
        bounds.push_back(lt(value, outer.simplify(dom.min + dom.extent)));
      }
    }
    outer_conditions.insert(outer_conditions.end(), bounds.begin(), bounds.end());
  }
  // Step 5. The inner block: its iterators, its body over them and the outer ones, no init.
  auto inner_block = copy(block);
  inner_block->iter_vars = inner_iters;
  inner_block->init = nullptr;
  inner_block->reads = substitute_regions(block->reads, vmap);
  inner_block->writes = substitute_regions(block->writes, vmap);
  inner_block->body = substitute(block->body, vmap);
  {
    // Simplify the substituted indices knowing the ranges of the new iterators.
    arith::Analyzer iters;
    for (const auto* group : {&outer_iters, &inner_iters}) {
      for (const IterVar& iv : *group) iters.bind(iv.var, iv.dom);
    }
    IndexSimplifier simplifier(&iters);
    Stmt simplified = simplifier.mutate(Stmt(inner_block));
    inner_block = copy(simplified.as<Block>());
  }
  auto inner_realize = make<BlockRealize>(inner_values, conjunction(inner_conditions), inner_block);
  // Step 6. The outer block: what the inner block touches over all inner iterations.
  std::unordered_map<const Var*, Range> inner_doms;
  for (const IterVar& iv : inner_iters) inner_doms[iv.var.get()] = iv.dom;
  arith::IntSetMap dom_map = arith::int_set_map(inner_doms);
  auto relax = [&](const std::vector<BufferRegion>& regions) {
    std::vector<BufferRegion> out;
    for (const BufferRegion& region : regions) {
      out.push_back(BufferRegion{
          region.buffer,
          arith::eval_region(region.region, dom_map, &analyzer, region.buffer->shape)});
    }
    return out;
  };
  auto outer_block = make<Block>();
  outer_block->name = fresh_block_name(index, block->name + "_o");
  outer_block->iter_vars = outer_iters;
  outer_block->reads = relax(inner_block->reads);
  outer_block->writes = relax(inner_block->writes);
  outer_block->body = replace_stmt(Stmt(loop), realize, inner_realize);
  if (block->init.defined()) {
    InitSource source;
    source.block_name = fresh_block_name(index, block->name + "_init");
    for (size_t k = 0; k < inner_iters.size(); ++k) {
      if (inner_iters[k].type != IterType::kDataPar) continue;
      source.iters.push_back(inner_iters[k]);
      source.bindings.push_back(inner_values[k]);
    }
    source.predicate = conjunction(inner_conditions);
    source.loops = inner_loops;
    source.init = substitute(block->init, vmap);
    source.writes = inner_block->writes;
    source.always_block = false;
    std::string conflict;
    outer_block->init = make_init_nest(source, &conflict);
    if (!outer_block->init.defined()) {
      schedule_error("SubspaceNotDivisibleError", primitive,
                     "the condition " + conflict + " of block '" + block->name +
                         "' mixes the loops the init of the outer block keeps with reduce loops",
                     func, realize);
    }
  }
  auto outer_realize = make<BlockRealize>(outer_values, conjunction(outer_conditions), outer_block);
  return Blockized{with_body(func, replace_stmt(func->body, loop, outer_realize)), outer_realize};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The primitives

RV blockize(Schedule& sch, const RV& loop_rv) {
  const char* primitive = "blockize";
  const std::string func_name = sch.func_name(loop_rv);
  Blockized result = build_blockize(sch, loop_rv, primitive);
  sch.replace(func_name, result.func, primitive);
  RV out = sch.new_block_rv(func_name, result.outer->block->name);
  sch.record(Instruction{primitive, Json::array({loop_rv.name()}), Json::object(), {out}, Json()});
  return out;
}

void tensorize(Schedule& sch, const RV& rv, const std::string& intrin_name,
               const IntrinTarget* target_info) {
  const char* primitive = "tensorize";
  // Step 1. The block: a loop is blockized first (nothing is installed before the end).
  const std::string func_name = sch.func_name(rv);
  Ref<PrimFunc> func;
  Ref<BlockRealize> target;
  if (rv.kind == RVKind::kLoop) {
    Blockized result = build_blockize(sch, rv, primitive);
    func = result.func;
    target = result.outer;
  } else {
    func = sch.func(func_name);
    target = Ref<BlockRealize>(sch.block(rv, primitive).realize);
  }
  const Block* block = target->block.get();
  // Step 2. The intrinsic, and the target's features when the target is known.
  TensorIntrin intrin = get_tensor_intrin(intrin_name);
  if (target_info != nullptr) {
    std::vector<std::string> missing = missing_features(intrin, *target_info);
    if (!missing.empty()) {
      std::string needs, lacks;
      for (const std::string& f : intrin.required_features)
        needs += (needs.empty() ? "" : ", ") + f;
      for (const std::string& f : missing) lacks += (lacks.empty() ? "" : ", ") + f;
      schedule_error("TensorizeTargetError", primitive,
                     "intrinsic '" + intrin_name + "' needs the target features " + needs +
                         "; the target '" + target_info->name + "' lacks " + lacks + " (" +
                         target_features_text(*target_info) + ")",
                     func, target.get());
    }
  }
  // Step 3. Match the block's body against the description.
  arith::Analyzer analyzer;
  for (const IterVar& iv : block->iter_vars) analyzer.bind(iv.var, iv.dom, true);
  const Block* desc_root = intrin.desc->body.as<BlockRealize>()->block.get();
  std::unordered_map<const Buffer*, RegionBinding> bindings;
  std::string mismatch = match_description(desc_root->body, *block, &analyzer, &bindings);
  if (!mismatch.empty()) {
    schedule_error("TensorizeMismatchError", primitive,
                   "block '" + block->name + "' does not match the description of intrinsic '" +
                       intrin_name + "': " + mismatch,
                   func, target.get());
  }
  // Step 4. Bind the implementation's buffers to the regions of the description's.
  const Block* impl_root = intrin.impl->body.as<BlockRealize>()->block.get();
  std::unordered_map<const Buffer*, RegionBinding> params;
  for (size_t k = 0; k < intrin.desc->params.size(); ++k) {
    Ref<Buffer> d = intrin.desc->buffer_of(intrin.desc->params[k]);
    Ref<Buffer> i = intrin.impl->buffer_of(intrin.impl->params[k]);
    auto it = bindings.find(d.get());
    if (it == bindings.end()) {
      schedule_error("TensorizeMismatchError", primitive,
                     "the description of intrinsic '" + intrin_name +
                         "' never accesses its buffer " + d->name +
                         ", so it cannot be bound to a region",
                     func, target.get());
    }
    // Step 5. A flat index over the tile is right only where the region is contiguous.
    std::string flat = flat_access(impl_root->body, *i);
    const Buffer& actual = *it->second.buffer;
    int lead = actual.ndim() - i->ndim();
    bool contiguous = actual.strides.empty();
    for (int j = 1; contiguous && j < i->ndim(); ++j) {
      contiguous = analyzer.can_prove_equal(actual.shape[lead + j], i->shape[j]);
    }
    if (!flat.empty() && !contiguous) {
      BufferRegion region{it->second.buffer, {}};
      for (int k = 0; k < actual.ndim(); ++k) {
        const Expr& base = it->second.base[k];
        Expr extent = k < lead ? make_const(base->dtype, 1) : cast(base->dtype, i->shape[k - lead]);
        region.region.push_back(Range{base, extent});
      }
      schedule_error("TensorizeLayoutError", primitive,
                     "the implementation of intrinsic '" + intrin_name + "' reads its " +
                         shape_text(*i) + " tile " + i->name + " as one contiguous vector (" +
                         flat + "), but the tile is bound to " + region_text(region) +
                         " of a buffer of shape " + shape_text(actual) +
                         ", which is not contiguous; lay the buffer out so that its trailing "
                         "dimensions are the tile's",
                     func, target.get());
    }
    params[i.get()] = it->second;
  }
  // Step 6. The new body: the implementation, instantiated on the regions.
  FunctionIndex index(func);
  std::set<std::string> names(index.block_names().begin(), index.block_names().end());
  auto new_block = copy(block);
  new_block->body = instantiate_impl(*impl_root, params, &names, &new_block->alloc_buffers);
  new_block->annotations[kTensorIntrinAnnotation] = make<StringImm>(intrin_name);
  // Step 7. Replace; the loops and blocks of the old body are gone.
  std::vector<const Var*> removed_loops;
  post_order_visit(block->body, [&removed_loops](const Node* node) {
    if (node->kind() == NodeKind::For) {
      removed_loops.push_back(static_cast<const For*>(node)->loop_var.get());
    }
  });
  std::vector<std::string> removed_blocks;
  for (const Block* b : blocks_under(block->body)) removed_blocks.push_back(b->name);
  sch.replace(func_name, with_body(func, replace_stmt(func->body, block, new_block)), primitive,
              removed_loops, removed_blocks);
  sch.record(Instruction{
      primitive, Json::array({rv.name()}), {{"tensor_intrin", intrin_name}}, {}, Json()});
}

void register_blockize_tensorize_instructions(std::vector<InstructionKind>* kinds) {
  kinds->push_back(
      {"blockize", {"loop"}, false, [](Schedule& sch, const Json& in, const Json&, const Json&) {
         return std::vector<RV>{blockize(sch, rv_from_json(in.at(0), "blockize"))};
       }});
  kinds->push_back({"tensorize",
                    {"block_or_loop"},
                    false,
                    [](Schedule& sch, const Json& in, const Json& attrs, const Json&) {
                      tensorize(sch, rv_from_json(in.at(0), "tensorize"),
                                attrs.at("tensor_intrin").get<std::string>());
                      return std::vector<RV>{};
                    }});
}

}  // namespace kiln::schedule
