// compact_buffer_allocation: measures the index intervals that the accesses to each allocated
// buffer cover inside its allocating block, and shrinks the buffer to them.
#include "kiln/tir/compact_buffer_allocation.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/arith/analyzer.h"
#include "kiln/arith/int_set.h"
#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/storage_align.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;
using arith::Analyzer;
using arith::IntSet;

namespace {

// A buffer's replacement: the compact buffer and, per dimension, what is subtracted from an
// index (null for a dimension that keeps its extent).
struct Compaction {
  Ref<Buffer> buffer;
  std::vector<Expr> offsets;
};

// The index sets of every access to the buffers one block allocates, with the loops, block
// iterators and let variables inside the block relaxed to their sets.
class RegionCollector : public IRVisitor {
 public:
  // `scope`'s buffers, only those in shared memory when `shared_only`; `thread_loops` are loops
  // around the scope relaxed too (the threadIdx and vthread loops around a "shared" buffer: all
  // of a block's threads share it).
  RegionCollector(const Block* scope, Analyzer* analyzer, bool shared_only = false,
                  const std::vector<const For*>& thread_loops = {})
      : analyzer_(analyzer) {
    for (const Ref<Buffer>& b : scope->alloc_buffers) {
      if (shared_only && !is_shared_scope(b->scope)) continue;
      sets[b.get()];
      data_vars_[b->data.get()] = b.get();
    }
    for (const For* loop : thread_loops) {
      define(loop->loop_var.get(), IntSet::interval(loop->min, loop->min + loop->extent - 1));
    }
  }

  // Per buffer, the sets of each access, one vector per dimension.
  std::unordered_map<const Buffer*, std::vector<std::vector<IntSet>>> sets;
  // Per buffer, the alignments storage_align recorded on the blocks writing it.
  std::unordered_map<const Buffer*, std::vector<StorageAlign>> aligns;
  // Buffers whose data variable is used directly; they cannot be compacted.
  std::unordered_set<const Buffer*> opaque;
  // Variables defined inside the scope: an offset must not use them.
  std::unordered_set<const Var*> inner_vars;

  void run(const Block* scope) {
    visit_stmt(scope->init);
    visit_stmt(scope->body);
  }

 protected:
  using IRVisitor::visit;

  void visit(const For* op) override {
    IntSet first = relax(op->min);
    IntSet last = relax(op->min + op->extent - 1);
    define(op->loop_var.get(), IntSet::interval(first.min(), last.max()));
    IRVisitor::visit(op);
  }

  void visit(const BlockRealize* op) override {
    const Block* block = op->block.get();
    for (size_t k = 0; k < block->iter_vars.size() && k < op->iter_values.size(); ++k) {
      // The set of the bound value, not cut to the iterator's domain: a tile at the edge of a
      // split keeps the tile's length (the predicate skips the rest), which is a constant even
      // when the domain is symbolic. The domain serves when the value is unbounded.
      IntSet bound = relax(op->iter_values[k]);
      if (!bound.has_lower_bound() || !bound.has_upper_bound()) {
        bound = IntSet::from_range(block->iter_vars[k].dom);
      }
      define(block->iter_vars[k].var.get(), bound);
    }
    IRVisitor::visit(op);
  }

  // A block's read and write regions count as accesses: an opaque or vector access inside
  // (a tensorized body reading a whole tile through one flat ramp) may reach past what its
  // indices alone say, and the regions are the block's promise of what it touches.
  void visit(const Block* op) override {
    auto annotation = op->annotations.find(kStorageAlignAnnotation);
    if (annotation != op->annotations.end()) {
      for (const StorageAlign& e : parse_storage_align(annotation->second)) {
        if (e.buffer_index < 0 || e.buffer_index >= static_cast<int64_t>(op->writes.size()))
          continue;
        const Buffer* written = op->writes[e.buffer_index].buffer.get();
        if (sets.count(written) != 0) aligns[written].push_back(e);
      }
    }
    for (const auto* regions : {&op->reads, &op->writes}) {
      for (const BufferRegion& r : *regions) {
        auto it = sets.find(r.buffer.get());
        if (it == sets.end()) continue;
        it->second.resize(r.region.size());
        for (size_t d = 0; d < r.region.size(); ++d) {
          IntSet first = relax(r.region[d].min);
          IntSet last = relax(r.region[d].min + r.region[d].extent - 1);
          it->second[d].push_back(IntSet::interval(first.min(), last.max()));
        }
      }
    }
    IRVisitor::visit(op);
  }

  void visit(const LetStmt* op) override {
    define(op->var.get(), relax(op->value));
    IRVisitor::visit(op);
  }

  void visit(const Let* op) override {
    define(op->var.get(), relax(op->value));
    IRVisitor::visit(op);
  }

  void visit(const BufferLoad* op) override {
    access(op->buffer.get(), op->indices);
    IRVisitor::visit(op);
  }

  void visit(const BufferStore* op) override {
    access(op->buffer.get(), op->indices);
    IRVisitor::visit(op);
  }

  void visit(const Var* op) override {
    auto it = data_vars_.find(op);
    if (it != data_vars_.end()) opaque.insert(it->second);
  }

 private:
  IntSet relax(const Expr& e) { return arith::eval_set(analyzer_->simplify(e), dom_, analyzer_); }

  void define(const Var* var, const IntSet& set) {
    dom_[var] = set;
    inner_vars.insert(var);
  }

  void access(const Buffer* buffer, const std::vector<Expr>& indices) {
    auto it = sets.find(buffer);
    if (it == sets.end()) return;
    it->second.resize(indices.size());
    for (size_t d = 0; d < indices.size(); ++d) it->second[d].push_back(relax(indices[d]));
  }

  Analyzer* analyzer_;
  arith::IntSetMap dom_;
  std::unordered_map<const Var*, const Buffer*> data_vars_;
};

// The compaction of `buffer` from the sets of its accesses, or null when nothing shrinks.
// Explicit strides (from storage_align) are kept as they are: they still hold every element of
// the smaller extents, and the alignment they encode stays.
std::unique_ptr<Compaction> compact(const Ref<Buffer>& buffer,
                                    const std::vector<std::vector<IntSet>>& access_sets,
                                    const std::unordered_set<const Var*>& inner_vars,
                                    Analyzer* analyzer) {
  if (buffer->elem_offset.defined() && !is_const_int(buffer->elem_offset, 0)) return nullptr;
  if (access_sets.size() != buffer->shape.size()) return nullptr;
  auto result = std::make_unique<Compaction>();
  std::vector<Expr> shape = buffer->shape;
  result->offsets.resize(shape.size());
  bool shrinks = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    IntSet set = arith::union_sets(access_sets[d], analyzer);
    if (!set.has_lower_bound() || !set.has_upper_bound()) continue;
    Expr lo = analyzer->simplify(set.min());
    if (uses_any(lo, inner_vars) || uses_any(set.max(), inner_vars)) continue;
    // The length of the interval: a constant, or (for a constant old extent) the constant upper
    // bound of a symbolic length. A symbolic old extent is only replaced by an exact constant:
    // a bound of a symbolic length may be no better than the range of its dtype.
    Expr length = analyzer->simplify(set.max() - lo);
    const int64_t* old_extent = as_const_int(shape[d]);
    const int64_t* exact = as_const_int(length);
    if (old_extent == nullptr && exact == nullptr) continue;
    int64_t last = exact != nullptr ? *exact : analyzer->const_int_bound(length).max_value;
    if (last == arith::ConstIntBound::kPosInf || last < 0) continue;
    int64_t extent = last + 1;
    if (old_extent != nullptr && extent >= *old_extent) continue;
    shape[d] = make_const(shape[d]->dtype, extent);
    result->offsets[d] = lo;
    shrinks = true;
  }
  if (!shrinks) return nullptr;
  auto compacted = copy(buffer.get());
  compacted->shape = std::move(shape);
  compacted->data = make_var(buffer->data->name, buffer->data->dtype);
  result->buffer = compacted;
  return result;
}

// The strides of a buffer of `shape` whose dimensions are padded as `aligns` say, from the
// innermost out (the last alignment of an axis wins).
std::vector<Expr> aligned_strides(const std::vector<Expr>& shape,
                                  const std::vector<StorageAlign>& aligns, Analyzer* analyzer) {
  size_t n = shape.size();
  std::vector<Expr> strides(n);
  for (size_t d = n; d-- > 0;) {
    DataType t = shape[d]->dtype;
    Expr stride = d + 1 == n ? make_one(t) : strides[d + 1] * cast(t, shape[d + 1]);
    for (const StorageAlign& e : aligns) {
      if (e.axis != static_cast<int64_t>(d)) continue;
      Expr factor = make_const(t, e.factor);
      stride = stride + floormod(make_const(t, e.offset) - floormod(stride, factor), factor);
    }
    strides[d] = analyzer->simplify(stride);
  }
  return strides;
}

// Finds every allocating block, with the ranges of the loops and iterators around it known to
// the analyzer, and decides the compaction of its buffers.
class CompactionPlanner : public IRVisitor {
 public:
  std::unordered_map<const Buffer*, std::unique_ptr<Compaction>> plans;

  void run(const Stmt& body) { visit_stmt(body); }

 protected:
  using IRVisitor::visit;

  void visit(const For* op) override {
    analyzer_.bind(op->loop_var, Range{op->min, op->extent}, true);
    bool thread = is_thread_loop(*op) || is_vthread_loop(*op);
    if (thread) thread_loops_.push_back(op);
    IRVisitor::visit(op);
    if (thread) thread_loops_.pop_back();
  }

  void visit(const Block* op) override {
    for (const IterVar& iv : op->iter_vars) analyzer_.bind(iv.var, iv.dom, true);
    if (!op->alloc_buffers.empty()) {
      RegionCollector collector(op, &analyzer_);
      collector.run(op);
      // A "shared" buffer inside threadIdx loops serves every thread of the block.
      std::unique_ptr<RegionCollector> shared;
      if (!thread_loops_.empty()) {
        shared = std::make_unique<RegionCollector>(op, &analyzer_, true, thread_loops_);
        shared->run(op);
      }
      for (const Ref<Buffer>& b : op->alloc_buffers) {
        const RegionCollector& c =
            shared != nullptr && is_shared_scope(b->scope) ? *shared : collector;
        if (c.opaque.count(b.get()) != 0) continue;
        const auto& access_sets = c.sets.at(b.get());
        if (access_sets.empty()) continue;
        auto plan = compact(b, access_sets, c.inner_vars, &analyzer_);
        auto aligns = c.aligns.find(b.get());
        if (aligns != c.aligns.end() && b->strides.empty() &&
            (!b->elem_offset.defined() || is_const_int(b->elem_offset, 0))) {
          // The alignment applies to the final shape, compacted or not.
          if (plan == nullptr) {
            plan = std::make_unique<Compaction>();
            auto aligned = copy(b.get());
            aligned->data = make_var(b->data->name, b->data->dtype);
            plan->buffer = aligned;
            plan->offsets.resize(b->shape.size());
          }
          plan->buffer->strides = aligned_strides(plan->buffer->shape, aligns->second, &analyzer_);
        }
        if (plan != nullptr) plans[b.get()] = std::move(plan);
      }
    }
    IRVisitor::visit(op);
  }

 private:
  Analyzer analyzer_;
  std::vector<const For*> thread_loops_;  // the threadIdx and vthread loops around the node
};

// Replaces the compacted buffers and shifts their indices.
class CompactionRewriter : public IRMutator {
 public:
  explicit CompactionRewriter(
      const std::unordered_map<const Buffer*, std::unique_ptr<Compaction>>& plans)
      : plans_(plans) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr visit(const BufferLoad* op) override {
    Expr visited = IRMutator::visit(op);
    const Compaction* plan = find(op->buffer.get());
    if (plan == nullptr) return visited;
    const auto* load = visited.as<BufferLoad>();
    return make<BufferLoad>(load->dtype, plan->buffer, shift(*plan, load->indices));
  }

  Stmt visit(const BufferStore* op) override {
    Stmt visited = IRMutator::visit(op);
    const Compaction* plan = find(op->buffer.get());
    if (plan == nullptr) return visited;
    const auto* store = visited.as<BufferStore>();
    return make<BufferStore>(plan->buffer, store->value, shift(*plan, store->indices));
  }

  Stmt visit(const Block* op) override {
    Stmt visited = IRMutator::visit(op);
    auto block = copy(visited.as<Block>());
    bool changed = !visited.same_as(op);
    for (Ref<Buffer>& b : block->alloc_buffers) {
      if (const Compaction* plan = find(b.get())) {
        b = plan->buffer;
        changed = true;
      }
    }
    for (auto* regions : {&block->reads, &block->writes}) {
      for (BufferRegion& r : *regions) {
        const Compaction* plan = find(r.buffer.get());
        if (plan == nullptr) continue;
        r.buffer = plan->buffer;
        for (size_t d = 0; d < r.region.size() && d < plan->offsets.size(); ++d) {
          if (!plan->offsets[d].defined()) continue;
          r.region[d].min = analyzer_.simplify(r.region[d].min - plan->offsets[d]);
        }
        changed = true;
      }
    }
    if (!changed) return op;
    return block;
  }

 private:
  const Compaction* find(const Buffer* buffer) const {
    auto it = plans_.find(buffer);
    return it == plans_.end() ? nullptr : it->second.get();
  }

  // index - offset; a ramp stays a ramp with a shifted base.
  std::vector<Expr> shift(const Compaction& plan, std::vector<Expr> indices) {
    for (size_t d = 0; d < indices.size(); ++d) {
      const Expr& offset = plan.offsets[d];
      if (!offset.defined()) continue;
      if (const auto* r = indices[d].as<Ramp>()) {
        indices[d] = ramp(analyzer_.simplify(r->base - offset), r->stride, r->lanes);
      } else {
        indices[d] = analyzer_.simplify(indices[d] - offset);
      }
    }
    return indices;
  }

  const std::unordered_map<const Buffer*, std::unique_ptr<Compaction>>& plans_;
  Analyzer analyzer_;
};

}  // namespace

Ref<PrimFunc> compact_buffer_allocation(const Ref<PrimFunc>& func) {
  CompactionPlanner planner;
  planner.run(func->body);
  if (planner.plans.empty()) return func;
  return with_body(func, CompactionRewriter(planner.plans).mutate(func->body));
}

}  // namespace kiln::tir
