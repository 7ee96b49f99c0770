// tensorize's matching of a block against an intrinsic's description and instantiation of the
// intrinsic's implementation on the matched buffer regions (see tensorize_match.h).
#include "tensorize_match.h"

#include "kiln/arith/analyzer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// ---------------------------------------------------------------------------------------------
// Matching a block against a description

std::string access_text(const Ref<Buffer>& buffer, const std::vector<Expr>& indices) {
  return to_script(make<BufferLoad>(buffer->dtype, buffer, indices));
}

// Walks the description and the block's body side by side. Variables the description defines
// (loops, block iterators, lets) are mapped to the block's; each buffer of the description is
// bound to the region of an actual buffer that the block lists.
class DescMatcher {
 public:
  DescMatcher(const Block* target, arith::Analyzer* analyzer)
      : target_(target), analyzer_(analyzer) {}

  RegionBindings bindings;

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
    if (is_const_int(a->predicate, 1) && !is_const_int(b->predicate, 1)) {
      return fail("block '" + db->name + "' runs only where " + to_script(b->predicate) +
                  ": its tile is cut short (a split whose factors do not divide the extent), and "
                  "the intrinsic computes whole tiles; pad the buffers to a multiple of the tile");
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

// A flat index over a tile (one that leaves a dimension, e.g. B[0, ramp(0, 1, 64)] of a 16x4
// tile) as one index per dimension: the lane's position in the tile, row-major, divided out
// (B[ramp(0, 1, 64) // 4, ramp(0, 1, 64) % 4]). Every index then stays inside its dimension, so
// that regions, bounds and layout transformations see the truth; flattening the actual buffer
// turns a contiguous tile back into one ramp.
std::vector<Expr> split_flat_index(const Buffer& tile, const std::vector<Expr>& indices,
                                   arith::Analyzer* analyzer) {
  size_t n = indices.size();
  std::vector<int64_t> shape(n), strides(n);
  int64_t stride = 1;
  for (size_t k = n; k-- > 0;) {
    shape[k] = *as_const_int(tile.shape[k]);
    strides[k] = stride;
    stride *= shape[k];
  }
  DataType t = indices[n - 1]->dtype.element_of();
  Expr flat;
  for (size_t k = 0; k < n; ++k) {
    Expr term = indices[k] * make_const(t, strides[k]);
    flat = flat.defined() ? flat + term : term;
  }
  flat = analyzer->simplify(flat);
  std::vector<Expr> out(n);
  for (size_t k = 0; k < n; ++k) {
    Expr index = strides[k] == 1 ? flat : floordiv(flat, make_const(t, strides[k]));
    if (k > 0) index = floormod(index, make_const(t, shape[k]));
    out[k] = analyzer->simplify(index);
  }
  return out;
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
  ImplInstantiator(RegionBindings params, std::set<std::string>* names)
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
    return make<BufferLoad>(op->dtype, it->second.buffer,
                            embed(it->second, tile_indices(*op->buffer, op->indices)));
  }

  Stmt visit(const BufferStore* op) override {
    auto it = params_.find(op->buffer.get());
    if (it == params_.end()) return IRMutator::visit(op);
    std::vector<Expr> indices = tile_indices(*op->buffer, op->indices);
    return make<BufferStore>(it->second.buffer, mutate(op->value), embed(it->second, indices));
  }

  Stmt visit(const For* op) override {
    analyzer_.bind(op->loop_var, Range{op->min, op->extent}, true);
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
    for (const IterVar& iv : op->iter_vars) analyzer_.bind(iv.var, iv.dom, true);
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

  // The renewed indices of an access to a parameter tile, one per dimension of the tile: a
  // flat index across the tile is split per dimension (split_flat_index).
  std::vector<Expr> tile_indices(const Buffer& tile, const std::vector<Expr>& original) {
    bool flat = false;
    for (size_t k = 0; k < original.size(); ++k) {
      const int64_t* extent = as_const_int(tile.shape[k]);
      arith::ConstIntBound bound = analyzer_.const_int_bound(original[k]);
      flat |= extent == nullptr || bound.min_value < 0 || bound.max_value >= *extent;
    }
    std::vector<Expr> indices = original;
    mutate_all(&indices);
    if (!flat) return indices;
    return split_flat_index(tile, indices, &analyzer_);
  }

  std::string fresh_name(const std::string& base) {
    std::string name = base;
    for (int i = 1; names_->count(name) != 0; ++i) name = base + "_" + std::to_string(i);
    names_->insert(name);
    return name;
  }

  RegionBindings params_;
  std::set<std::string>* names_;
  arith::Analyzer analyzer_;  // the ranges of the implementation's loops and iterators
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

std::string match_description(const Stmt& desc_body, const Block& block, arith::Analyzer* analyzer,
                              RegionBindings* bindings) {
  DescMatcher matcher(&block, analyzer);
  if (!matcher.stmt(desc_body, block.body)) return matcher.failure();
  *bindings = matcher.bindings;
  return "";
}

std::string flat_access(const Stmt& body, const Buffer& param) {
  arith::Analyzer analyzer;
  FlatAccessFinder finder(&param, &analyzer);
  finder.visit_stmt(body);
  return finder.found;
}

Stmt instantiate_impl(const Block& impl_root, const RegionBindings& params,
                      std::set<std::string>* names, std::vector<Ref<Buffer>>* allocs) {
  ImplInstantiator instantiate(params, names);
  std::vector<Ref<Buffer>> scratch = instantiate.fresh_buffers(impl_root.alloc_buffers);
  allocs->insert(allocs->end(), scratch.begin(), scratch.end());
  return instantiate.mutate(impl_root.body);
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

}  // namespace kiln::schedule
