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
  // Step 3. The iterators: outer ones for outer parts, inner ones for inner parts.
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
      outer_values.push_back(substitute(binding, unit_inner));
      vmap[iv.var.get()] = outer.var;
    } else if (!d.has_outer) {
      inner_iters.push_back(iv);
      inner_values.push_back(binding);
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
    bool uses_inner = uses_var(c, [&](const Var* v) { return inner_vars.count(v) != 0; });
    (uses_inner ? inner_conditions : outer_conditions).push_back(c);
  }
  // Step 5. The inner block: its iterators, its body over them and the outer ones, no init.
  auto inner_block = copy(block);
  inner_block->iter_vars = inner_iters;
  inner_block->init = nullptr;
  for (auto* regions : {&inner_block->reads, &inner_block->writes}) {
    for (BufferRegion& region : *regions) {
      for (Range& r : region.region) r = Range{substitute(r.min, vmap), substitute(r.extent, vmap)};
    }
  }
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

// ---------------------------------------------------------------------------------------------
// Matching a block against a description

// Where a buffer of the description (or implementation) lies in an actual buffer: the region
// starting at `base`, aligned on the trailing dimensions.
struct RegionBinding {
  Ref<Buffer> buffer;
  std::vector<Expr> base;
};

std::string access_text(const Ref<Buffer>& buffer, const std::vector<Expr>& indices) {
  return to_script(make<BufferLoad>(buffer->dtype, buffer, indices));
}

std::string region_text(const BufferRegion& region) {
  std::string out;
  for (const Range& r : region.region) {
    std::string item = is_const_int(r.extent, 1)
                           ? to_script(r.min)
                           : to_script(r.min) + ":" + to_script(r.min + r.extent);
    out += (out.empty() ? "" : ", ") + item;
  }
  return region.buffer->name + "[" + out + "]";
}

std::string shape_text(const Buffer& buffer) {
  std::string out;
  for (const Expr& e : buffer.shape) out += (out.empty() ? "" : ", ") + to_script(e);
  return "[" + out + "]";
}

// Walks the description and the block's body side by side. Variables the description defines
// (loops, block iterators, lets) are mapped to the block's; each buffer of the description is
// bound to the region of an actual buffer that the block lists.
class DescMatcher {
 public:
  DescMatcher(const Block* target, arith::Analyzer* analyzer)
      : target_(target), analyzer_(analyzer) {}

  std::unordered_map<const Buffer*, RegionBinding> bindings;

  const std::string& failure() const { return failure_; }

  bool stmt(const Stmt& d, const Stmt& t) {
    if (d->kind() != t->kind()) {
      return fail("the description has a " + std::string(kind_name(d->kind())) +
                  " where the block has a " + kind_name(t->kind()) + ":\n  description: " +
                  first_line(to_script(d)) + "\n  block:       " + first_line(to_script(t)));
    }
    switch (d->kind()) {
      case NodeKind::For: {
        const auto* a = d.as<For>();
        const auto* b = t.as<For>();
        if (!same_value(a->min, b->min) || !same_value(a->extent, b->extent)) {
          return fail("the description's loop '" + a->loop_var->name + "' runs over [" +
                      to_script(a->min) + ", " + to_script(a->min + a->extent) +
                      ") but the block's loop '" + b->loop_var->name + "' over [" +
                      to_script(b->min) + ", " + to_script(b->min + b->extent) + ")");
        }
        define(a->loop_var, b->loop_var, Range{b->min, b->extent});
        return stmt(a->body, b->body);
      }
      case NodeKind::BlockRealize:
        return realize(d.as<BlockRealize>(), t.as<BlockRealize>());
      case NodeKind::SeqStmt: {
        const auto* a = d.as<SeqStmt>();
        const auto* b = t.as<SeqStmt>();
        if (a->seq.size() != b->seq.size()) {
          return fail("the description runs " + std::to_string(a->seq.size()) +
                      " statements in sequence where the block runs " +
                      std::to_string(b->seq.size()));
        }
        for (size_t k = 0; k < a->seq.size(); ++k) {
          if (!stmt(a->seq[k], b->seq[k])) return false;
        }
        return true;
      }
      case NodeKind::BufferStore: {
        const auto* a = d.as<BufferStore>();
        const auto* b = t.as<BufferStore>();
        if (a->buffer->dtype != b->buffer->dtype) {
          return fail("the description stores to " + access_text(a->buffer, a->indices) +
                      " with dtype " + a->buffer->dtype.str() + "; the block stores to " +
                      access_text(b->buffer, b->indices) + " with dtype " + b->buffer->dtype.str());
        }
        return access(a->buffer, a->indices, b->buffer, b->indices, "stores to") &&
               expr(a->value, b->value);
      }
      case NodeKind::IfThenElse: {
        const auto* a = d.as<IfThenElse>();
        const auto* b = t.as<IfThenElse>();
        if (a->else_case.defined() != b->else_case.defined()) {
          return fail("one of the description and the block has an else branch, the other not");
        }
        return expr(a->condition, b->condition) && stmt(a->then_case, b->then_case) &&
               (!a->else_case.defined() || stmt(a->else_case, b->else_case));
      }
      case NodeKind::LetStmt: {
        const auto* a = d.as<LetStmt>();
        const auto* b = t.as<LetStmt>();
        if (!expr(a->value, b->value)) return false;
        define(a->var, b->var);
        return stmt(a->body, b->body);
      }
      case NodeKind::Evaluate:
        return expr(d.as<Evaluate>()->value, t.as<Evaluate>()->value);
      default:
        return fail(std::string("tensorize cannot match a ") + kind_name(d->kind()) +
                    " of a description");
    }
  }

 private:
  static std::string first_line(const std::string& text) {
    std::string line = text.substr(0, text.find('\n'));
    return line.size() > 100 ? line.substr(0, 100) + " …" : line;
  }

  bool fail(const std::string& message) {
    if (failure_.empty()) failure_ = message;
    return false;
  }

  void define(const Ref<Var>& d, const Ref<Var>& t) { vars_[d.get()] = t; }
  void define(const Ref<Var>& d, const Ref<Var>& t, const Range& range) {
    vars_[d.get()] = t;
    analyzer_->bind(t, range, true);
  }

  // The description's expression in the block's variables.
  Expr translate(const Expr& e) const { return substitute(e, vars_); }

  bool same_value(const Expr& d, const Expr& t) {
    return d->dtype == t->dtype && analyzer_->can_prove_equal(translate(d), t);
  }

  bool realize(const BlockRealize* a, const BlockRealize* b) {
    const Block* da = a->block.get();
    const Block* db = b->block.get();
    if (da->iter_vars.size() != db->iter_vars.size()) {
      return fail("the description's block '" + da->name + "' has " +
                  std::to_string(da->iter_vars.size()) + " iterators, the block '" + db->name +
                  "' " + std::to_string(db->iter_vars.size()));
    }
    for (size_t k = 0; k < da->iter_vars.size(); ++k) {
      const IterVar& x = da->iter_vars[k];
      const IterVar& y = db->iter_vars[k];
      if (x.type != y.type || !same_value(x.dom.min, y.dom.min) ||
          !same_value(x.dom.extent, y.dom.extent)) {
        return fail("iterator " + std::to_string(k) + " of the description's block is " +
                    iter_text(x) + ", of the block '" + db->name + "' " + iter_text(y));
      }
      if (!expr(a->iter_values[k], b->iter_values[k])) return false;
      define(x.var, y.var, y.dom);
    }
    if (!expr(a->predicate, b->predicate)) return false;
    if (db->init.defined()) {
      return fail("block '" + db->name + "' has an init; the description has none");
    }
    return stmt(da->body, db->body);
  }

  static std::string iter_text(const IterVar& iv) {
    return "'" + iv.var->name + "' (" + iter_type_name(iv.type) + ", [" + to_script(iv.dom.min) +
           ", " + to_script(iv.dom.min + iv.dom.extent) + "))";
  }

  // The region of `buffer` in the block's writes, else its reads.
  const BufferRegion* region_of(const Buffer* buffer) const {
    for (const auto* regions : {&target_->writes, &target_->reads}) {
      for (const BufferRegion& r : *regions) {
        if (r.buffer.get() == buffer) return &r;
      }
    }
    return nullptr;
  }

  bool bind(const Ref<Buffer>& d, const Ref<Buffer>& t) {
    auto it = bindings.find(d.get());
    if (it != bindings.end()) {
      if (it->second.buffer.same_as(t)) return true;
      return fail("the description's buffer " + d->name + " stands for " + it->second.buffer->name +
                  " elsewhere, but here the block accesses " + t->name);
    }
    const BufferRegion* region = region_of(t.get());
    if (region == nullptr) {
      return fail("block '" + target_->name + "' does not list " + t->name +
                  " among the buffers it reads or writes");
    }
    int n = t->ndim(), m = d->ndim();
    bool fits = n >= m;
    for (int k = 0; fits && k < n; ++k) {
      const Range& r = region->region[k];
      Expr want = k < n - m ? make_const(r.extent->dtype, 1) : d->shape[k - (n - m)];
      fits = analyzer_->can_prove_equal(r.extent, cast(r.extent->dtype, want));
    }
    if (!fits) {
      return fail("the description's buffer " + d->name + " is a " + shape_text(*d) +
                  " tile, but the block accesses the region " + region_text(*region));
    }
    RegionBinding binding{t, {}};
    for (const Range& r : region->region) binding.base.push_back(r.min);
    bindings[d.get()] = binding;
    return true;
  }

  bool access(const Ref<Buffer>& d, const std::vector<Expr>& di, const Ref<Buffer>& t,
              const std::vector<Expr>& ti, const char* verb) {
    if (!bind(d, t)) return false;
    const RegionBinding& binding = bindings.at(d.get());
    int n = t->ndim(), m = d->ndim();
    for (int k = 0; k < n; ++k) {
      Expr want = k < n - m ? binding.base[k] : binding.base[k] + translate(di[k - (n - m)]);
      if (!analyzer_->can_prove_equal(ti[k], want)) {
        std::vector<Expr> expected = binding.base;
        for (int j = 0; j < m; ++j) {
          expected[n - m + j] = analyzer_->simplify(expected[n - m + j] + translate(di[j]));
        }
        return fail("the description " + std::string(verb) + " " + access_text(d, di) +
                    ", which is " + access_text(t, expected) + " of the region " +
                    region_text(*region_of(t.get())) + ", but the block " + verb + " " +
                    access_text(t, ti));
      }
    }
    return true;
  }

  bool expr(const Expr& d, const Expr& t) {
    if (d->kind() != t->kind() || d->dtype != t->dtype) {
      if (d->kind() == NodeKind::BufferLoad && t->kind() == NodeKind::BufferLoad) {
        const auto* a = d.as<BufferLoad>();
        const auto* b = t.as<BufferLoad>();
        return fail("the description's block reads " + access_text(a->buffer, a->indices) +
                    " with dtype " + a->dtype.str() + "; the block reads " +
                    access_text(b->buffer, b->indices) + " with dtype " + b->dtype.str());
      }
      if (d->kind() == t->kind()) {
        return fail("the description computes `" + to_script(d) + "` with dtype " + d->dtype.str() +
                    " where the block computes `" + to_script(t) + "` with dtype " +
                    t->dtype.str());
      }
      return fail("the description computes `" + to_script(d) + "` where the block computes `" +
                  to_script(t) + "`");
    }
    switch (d->kind()) {
      case NodeKind::IntImm:
        return d.as<IntImm>()->value == t.as<IntImm>()->value || mismatch(d, t);
      case NodeKind::FloatImm:
        return d.as<FloatImm>()->value == t.as<FloatImm>()->value || mismatch(d, t);
      case NodeKind::StringImm:
        return d.as<StringImm>()->value == t.as<StringImm>()->value || mismatch(d, t);
      case NodeKind::Var: {
        auto it = vars_.find(d.as<Var>());
        return (it != vars_.end() && it->second.get() == t.get()) || mismatch(d, t);
      }
      case NodeKind::Not:
        return expr(d.as<Not>()->a, t.as<Not>()->a);
      case NodeKind::Select: {
        const auto* a = d.as<Select>();
        const auto* b = t.as<Select>();
        return expr(a->condition, b->condition) && expr(a->true_value, b->true_value) &&
               expr(a->false_value, b->false_value);
      }
      case NodeKind::Cast:
        return expr(d.as<Cast>()->value, t.as<Cast>()->value);
      case NodeKind::Call: {
        const auto* a = d.as<Call>();
        const auto* b = t.as<Call>();
        if (a->op != b->op || a->args.size() != b->args.size()) return mismatch(d, t);
        for (size_t k = 0; k < a->args.size(); ++k) {
          if (!expr(a->args[k], b->args[k])) return false;
        }
        return true;
      }
      case NodeKind::Ramp: {
        const auto* a = d.as<Ramp>();
        const auto* b = t.as<Ramp>();
        return (a->lanes == b->lanes || mismatch(d, t)) && expr(a->base, b->base) &&
               expr(a->stride, b->stride);
      }
      case NodeKind::Broadcast: {
        const auto* a = d.as<Broadcast>();
        const auto* b = t.as<Broadcast>();
        return (a->lanes == b->lanes || mismatch(d, t)) && expr(a->value, b->value);
      }
      case NodeKind::Let: {
        const auto* a = d.as<Let>();
        const auto* b = t.as<Let>();
        if (!expr(a->value, b->value)) return false;
        define(a->var, b->var);
        return expr(a->body, b->body);
      }
      case NodeKind::BufferLoad: {
        const auto* a = d.as<BufferLoad>();
        const auto* b = t.as<BufferLoad>();
        return access(a->buffer, a->indices, b->buffer, b->indices, "reads");
      }
      case NodeKind::Reduce:
        return mismatch(d, t);
      default: {
        const auto* a = static_cast<const BinaryNode*>(d.get());
        const auto* b = static_cast<const BinaryNode*>(t.get());
        return expr(a->a, b->a) && expr(a->b, b->b);
      }
    }
  }

  bool mismatch(const Expr& d, const Expr& t) {
    return fail("the description has `" + to_script(d) + "` where the block has `" + to_script(t) +
                "`");
  }

  const Block* target_;
  arith::Analyzer* analyzer_;
  VarMap vars_;
  std::string failure_;
};

// ---------------------------------------------------------------------------------------------
// Instantiating the implementation

// The start `base` plus an index of the tile; a vector index keeps its form.
Expr offset_index(const Expr& base, const Expr& index) {
  if (is_const_int(base, 0)) return index;
  Expr b = cast(index->dtype.element_of(), base);
  auto plus = [&b](const Expr& e) { return is_const_int(e, 0) ? b : b + e; };
  if (const auto* r = index.as<Ramp>()) return ramp(plus(r->base), r->stride, r->lanes);
  if (const auto* v = index.as<Broadcast>()) return broadcast(plus(v->value), v->lanes);
  return plus(index);
}

std::vector<Expr> embed(const RegionBinding& binding, const std::vector<Expr>& indices) {
  std::vector<Expr> out = binding.base;
  size_t lead = out.size() - indices.size();
  for (size_t j = 0; j < indices.size(); ++j) {
    out[lead + j] = offset_index(binding.base[lead + j], indices[j]);
  }
  return out;
}

// A copy of the implementation's body with fresh definitions (loops, iterators, lets, buffers,
// block names) and its parameter buffers replaced by the regions they are bound to.
class ImplInstantiator : public IRMutator {
 public:
  ImplInstantiator(std::unordered_map<const Buffer*, RegionBinding> params,
                   std::set<std::string>* names)
      : params_(std::move(params)), names_(names) {}
  using IRMutator::mutate;

  std::vector<Ref<Buffer>> fresh_buffers(const std::vector<Ref<Buffer>>& buffers) {
    std::vector<Ref<Buffer>> out;
    for (const Ref<Buffer>& b : buffers) {
      auto c = copy(b.get());
      c->data = make_var(b->data->name, b->data->dtype);
      buffers_[b.get()] = c;
      out.push_back(c);
    }
    return out;
  }

 protected:
  using IRMutator::visit;

  Ref<Buffer> mutate_buffer(const Ref<Buffer>& buffer) override {
    auto it = buffers_.find(buffer.get());
    return it == buffers_.end() ? buffer : it->second;
  }

  Expr visit(const Var* op) override {
    auto it = vars_.find(op);
    return it == vars_.end() ? Expr(op) : it->second;
  }

  Expr visit(const BufferLoad* op) override {
    auto it = params_.find(op->buffer.get());
    if (it == params_.end()) return IRMutator::visit(op);
    std::vector<Expr> indices = op->indices;
    mutate_all(&indices);
    return make<BufferLoad>(op->dtype, it->second.buffer, embed(it->second, indices));
  }

  Stmt visit(const BufferStore* op) override {
    auto it = params_.find(op->buffer.get());
    if (it == params_.end()) return IRMutator::visit(op);
    std::vector<Expr> indices = op->indices;
    mutate_all(&indices);
    return make<BufferStore>(it->second.buffer, mutate(op->value), embed(it->second, indices));
  }

  Stmt visit(const For* op) override {
    Ref<Var> fresh = renew(op->loop_var);
    Stmt visited = IRMutator::visit(op);
    auto loop = copy(visited.as<For>());
    loop->loop_var = fresh;
    return loop;
  }

  Stmt visit(const LetStmt* op) override {
    Ref<Var> fresh = renew(op->var);
    Expr value = mutate(op->value);
    return make<LetStmt>(fresh, value, mutate(op->body));
  }

  Expr visit(const Let* op) override {
    Ref<Var> fresh = renew(op->var);
    Expr value = mutate(op->value);
    return let(fresh, value, mutate(op->body));
  }

  Stmt visit(const Block* op) override {
    std::vector<IterVar> iters = op->iter_vars;
    for (IterVar& iv : iters) iv.var = renew(iv.var);
    std::vector<Ref<Buffer>> allocs = fresh_buffers(op->alloc_buffers);
    Stmt visited = IRMutator::visit(op);
    auto block = copy(visited.as<Block>());
    block->iter_vars = iters;
    block->alloc_buffers = allocs;
    block->name = fresh_name(op->name);
    for (auto* regions : {&block->reads, &block->writes}) {
      for (BufferRegion& region : *regions) {
        auto it = params_.find(region.buffer.get());
        if (it == params_.end()) continue;
        std::vector<Range> ranges;
        size_t lead = it->second.base.size() - region.region.size();
        for (size_t k = 0; k < it->second.base.size(); ++k) {
          const Expr& base = it->second.base[k];
          ranges.push_back(k < lead ? Range{base, make_const(base->dtype, 1)}
                                    : Range{offset_index(base, region.region[k - lead].min),
                                            region.region[k - lead].extent});
        }
        region = BufferRegion{it->second.buffer, ranges};
      }
    }
    return block;
  }

 private:
  Ref<Var> renew(const Ref<Var>& v) {
    Ref<Var> fresh = make<Var>(v->name, v->dtype, v->is_size_var);
    vars_[v.get()] = fresh;
    return fresh;
  }

  std::string fresh_name(const std::string& base) {
    std::string name = base;
    for (int i = 1; names_->count(name) != 0; ++i) name = base + "_" + std::to_string(i);
    names_->insert(name);
    return name;
  }

  std::unordered_map<const Buffer*, RegionBinding> params_;
  std::set<std::string>* names_;
  std::unordered_map<const Var*, Expr> vars_;
  std::unordered_map<const Buffer*, Ref<Buffer>> buffers_;
};

// Finds the first access of a parameter buffer whose index leaves the tile's dimension (a flat
// index over the tile), knowing the ranges of the loops and iterators around it.
class FlatAccessFinder : public IRVisitor {
 public:
  FlatAccessFinder(const Buffer* param, arith::Analyzer* analyzer)
      : param_(param), analyzer_(analyzer) {}
  std::string found;  // the access, as text; empty when there is none

 protected:
  using IRVisitor::visit;
  void visit(const For* op) override {
    analyzer_->bind(op->loop_var, Range{op->min, op->extent}, true);
    IRVisitor::visit(op);
  }
  void visit(const Block* op) override {
    for (const IterVar& iv : op->iter_vars) analyzer_->bind(iv.var, iv.dom, true);
    IRVisitor::visit(op);
  }
  void visit(const BufferLoad* op) override {
    check(op->buffer, op->indices);
    IRVisitor::visit(op);
  }
  void visit(const BufferStore* op) override {
    check(op->buffer, op->indices);
    IRVisitor::visit(op);
  }

 private:
  void check(const Ref<Buffer>& buffer, const std::vector<Expr>& indices) {
    if (buffer.get() != param_ || !found.empty()) return;
    for (size_t k = 0; k < indices.size(); ++k) {
      const int64_t* extent = as_const_int(buffer->shape[k]);
      arith::ConstIntBound bound = analyzer_->const_int_bound(indices[k]);
      if (extent == nullptr || bound.min_value < 0 || bound.max_value >= *extent) {
        found = access_text(buffer, indices);
        return;
      }
    }
  }
  const Buffer* param_;
  arith::Analyzer* analyzer_;
};

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

void tensorize(Schedule& sch, const RV& rv, const std::string& intrin_name) {
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
  // Step 2. The intrinsic.
  TensorIntrin intrin = get_tensor_intrin(intrin_name);
  // Step 3. Match the block's body against the description.
  arith::Analyzer analyzer;
  for (const IterVar& iv : block->iter_vars) analyzer.bind(iv.var, iv.dom, true);
  DescMatcher matcher(block, &analyzer);
  const Block* desc_root = intrin.desc->body.as<BlockRealize>()->block.get();
  if (!matcher.stmt(desc_root->body, block->body)) {
    schedule_error("TensorizeMismatchError", primitive,
                   "block '" + block->name + "' does not match the description of intrinsic '" +
                       intrin_name + "': " + matcher.failure(),
                   func, target.get());
  }
  // Step 4. Bind the implementation's buffers to the regions of the description's.
  const Block* impl_root = intrin.impl->body.as<BlockRealize>()->block.get();
  std::unordered_map<const Buffer*, RegionBinding> params;
  for (size_t k = 0; k < intrin.desc->params.size(); ++k) {
    Ref<Buffer> d = intrin.desc->buffer_of(intrin.desc->params[k]);
    Ref<Buffer> i = intrin.impl->buffer_of(intrin.impl->params[k]);
    auto it = matcher.bindings.find(d.get());
    if (it == matcher.bindings.end()) {
      schedule_error("TensorizeMismatchError", primitive,
                     "the description of intrinsic '" + intrin_name +
                         "' never accesses its buffer " + d->name +
                         ", so it cannot be bound to a region",
                     func, target.get());
    }
    // Step 5. A flat index over the tile is right only where the region is contiguous.
    arith::Analyzer impl_analyzer;
    FlatAccessFinder finder(i.get(), &impl_analyzer);
    finder.visit_stmt(impl_root->body);
    const std::string& flat = finder.found;
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
  ImplInstantiator instantiate(params, &names);
  auto new_block = copy(block);
  std::vector<Ref<Buffer>> scratch = instantiate.fresh_buffers(impl_root->alloc_buffers);
  new_block->alloc_buffers.insert(new_block->alloc_buffers.end(), scratch.begin(), scratch.end());
  new_block->body = instantiate.mutate(impl_root->body);
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
