// Producer-consumer relations, block properties and relaxed regions (see block_dependence.h).
#include "block_dependence.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "kiln/arith/int_set.h"
#include "kiln/arith/iter_map.h"
#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "schedule_util.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

bool touches(const std::vector<BufferRegion>& regions, const Buffer* buffer) {
  for (const BufferRegion& r : regions) {
    if (r.buffer.get() == buffer) return true;
  }
  return false;
}

bool shares_buffer(const std::vector<BufferRegion>& a, const std::vector<BufferRegion>& b) {
  for (const BufferRegion& r : a) {
    if (touches(b, r.buffer.get())) return true;
  }
  return false;
}

// The other blocks of the scope that write one of the buffers `block` writes.
std::vector<const BlockLocation*> other_writers(const FunctionIndex& index,
                                                const BlockLocation& block) {
  std::vector<const BlockLocation*> out;
  for (const BlockLocation* other : scope_blocks(index, block.scope)) {
    if (other->block != block.block && shares_buffer(other->block->writes, block.block->writes)) {
      out.push_back(other);
    }
  }
  return out;
}

std::string name_of(const BlockLocation& block) {
  return "'" + block.block->name + "'";
}

// The first statement of the scope's body (outside blocks) that is not a loop, a sequence or a
// block, or null.
class OpaqueStmtFinder : public IRVisitor {
 public:
  const StmtNode* found = nullptr;

 protected:
  using IRVisitor::visit;
  void visit(const For* op) override { visit_stmt(op->body); }
  void visit(const SeqStmt* op) override { IRVisitor::visit(op); }
  void visit(const BlockRealize*) override {}
  void visit(const LetStmt* op) override { flag(op); }
  void visit(const AssertStmt* op) override { flag(op); }
  void visit(const BufferStore* op) override { flag(op); }
  void visit(const Allocate* op) override { flag(op); }
  void visit(const IfThenElse* op) override { flag(op); }
  void visit(const Evaluate* op) override { flag(op); }

 private:
  void flag(const StmtNode* op) {
    if (found == nullptr) found = op;
  }
};

Violation check_region_cover(const FunctionIndex& index, const BlockLocation& producer,
                             const BlockLocation& consumer) {
  size_t shared = 0;
  while (shared < producer.loops.size() && shared < consumer.loops.size() &&
         producer.loops[shared] == consumer.loops[shared]) {
    ++shared;
  }
  if (shared == 0) return {};
  arith::Analyzer analyzer;
  std::unordered_map<const Var*, bool> bound;
  bind_loops(producer.loops, &analyzer, &bound);
  bind_loops(consumer.loops, &analyzer, &bound);
  const For* lca = producer.loops[shared - 1];
  for (const BufferRegion& read : consumer.block->reads) {
    std::vector<arith::IntSet> written;
    for (const BufferRegion& write : producer.block->writes) {
      if (write.buffer.get() != read.buffer.get()) continue;
      std::vector<Range> w = relaxed_region(producer, write, shared, &analyzer);
      if (written.empty()) written.resize(w.size(), arith::IntSet::nothing());
      for (size_t d = 0; d < w.size(); ++d) {
        written[d] = arith::union_sets({written[d], arith::IntSet::from_range(w[d])}, &analyzer);
      }
    }
    if (written.empty()) continue;
    std::vector<Range> r = relaxed_region(consumer, read, shared, &analyzer);
    const std::vector<Expr>& shape = read.buffer->shape;
    for (size_t d = 0; d < r.size(); ++d) {
      arith::IntSet needed = arith::IntSet::from_range(r[d]);
      if (arith::can_prove_subset(needed, written[d], &analyzer)) continue;
      // Reads outside the buffer are guarded ones (padding) and need no producer.
      arith::IntSet in_bounds = arith::IntSet::interval(make_zero(shape[d]->dtype), shape[d] - 1);
      needed = arith::intersect_sets({needed, in_bounds}, &analyzer);
      if (!arith::can_prove_subset(needed, written[d], &analyzer)) {
        std::ostringstream why;
        why << "in one iteration of loop '" << lca->loop_var->name << "', block "
            << name_of(consumer) << " reads " << needed << " of dimension " << d << " of buffer '"
            << read.buffer->name << "', but block " << name_of(producer) << " writes only "
            << written[d] << " of it (the region cover property fails)";
        return {why.str(), consumer.realize};
      }
    }
  }
  return {};
}

}  // namespace

std::vector<const BlockLocation*> scope_blocks(const FunctionIndex& index, const Block* scope) {
  std::vector<const BlockLocation*> out;
  for (const std::string& name : index.block_names()) {
    const BlockLocation* loc = index.find_block(name);
    if (loc->scope == scope && scope != nullptr) out.push_back(loc);
  }
  return out;
}

std::vector<const BlockLocation*> producers_of(const FunctionIndex& index,
                                               const BlockLocation& block) {
  std::vector<const BlockLocation*> out;
  for (const BlockLocation* other : scope_blocks(index, block.scope)) {
    if (other->block != block.block && shares_buffer(other->block->writes, block.block->reads)) {
      out.push_back(other);
    }
  }
  return out;
}

std::vector<const BlockLocation*> consumers_of(const FunctionIndex& index,
                                               const BlockLocation& block) {
  std::vector<const BlockLocation*> out;
  for (const BlockLocation* other : scope_blocks(index, block.scope)) {
    if (other->block != block.block && shares_buffer(block.block->writes, other->block->reads)) {
      out.push_back(other);
    }
  }
  return out;
}

std::string why_not_complete(const FunctionIndex& index, const BlockLocation& block) {
  for (const IterVar& iv : block.block->iter_vars) {
    if (iv.type != IterType::kDataPar) {
      return "its iterator '" + iv.var->name + "' is a " + iter_type_name(iv.type) +
             " iterator, not a spatial one";
    }
  }
  std::vector<const BlockLocation*> writers = other_writers(index, block);
  if (!writers.empty()) {
    return "block " + name_of(*writers[0]) + " also writes a buffer that it writes";
  }
  for (const BufferRegion& w : block.block->writes) {
    if (touches(block.block->reads, w.buffer.get())) {
      return "it reads buffer '" + w.buffer->name + "', which it writes";
    }
  }
  return "";
}

std::string why_not_reduction(const FunctionIndex& index, const BlockLocation& block) {
  if (!block.block->init.defined()) return "it has no init statement";
  std::unordered_set<const Var*> reduce_vars;
  for (const IterVar& iv : block.block->iter_vars) {
    if (iv.type == IterType::kCommReduce) {
      reduce_vars.insert(iv.var.get());
    } else if (iv.type != IterType::kDataPar) {
      return "its iterator '" + iv.var->name + "' is a " + iter_type_name(iv.type) +
             " iterator, neither spatial nor a reduction";
    }
  }
  std::vector<const BlockLocation*> writers = other_writers(index, block);
  if (!writers.empty()) {
    return "block " + name_of(*writers[0]) + " also writes a buffer that it writes";
  }
  auto is_reduce = [&](const Var* v) { return reduce_vars.count(v) != 0; };
  for (const BufferRegion& w : block.block->writes) {
    for (const Range& r : w.region) {
      if (uses_var(r.min, is_reduce) || uses_var(r.extent, is_reduce)) {
        return "it indexes its output '" + w.buffer->name + "' with a reduction iterator";
      }
    }
  }
  arith::Analyzer analyzer;
  arith::IterRanges ranges;
  for (const For* loop : block.loops) ranges[loop->loop_var.get()] = Range{loop->min, loop->extent};
  if (!arith::is_affine_binding(*block.realize, ranges, &analyzer,
                                arith::IterMapLevel::kSurjective)) {
    return "its iterator bindings are not an affine map of its loops";
  }
  return "";
}

const Buffer* output_buffer(const BlockLocation& block) {
  for (const BufferRegion& w : block.block->writes) {
    bool allocated = false;
    if (block.scope != nullptr) {
      for (const Ref<Buffer>& b : block.scope->alloc_buffers) allocated |= b.same_as(w.buffer);
    }
    if (!allocated) return w.buffer.get();
  }
  return nullptr;
}

Violation check_stage_pipeline(const FunctionIndex& index, const Block* scope) {
  // Step 1. Only loops, sequences and blocks between the scope and its blocks.
  OpaqueStmtFinder finder;
  finder.visit_stmt(scope->body);
  if (finder.found != nullptr) {
    return {std::string("the scope of block '") + scope->name + "' holds a " +
                kind_name(finder.found->kind()) + " outside of any block",
            finder.found};
  }
  // Step 2. No block writes what an earlier block reads.
  std::vector<const BlockLocation*> blocks = scope_blocks(index, scope);
  for (size_t i = 0; i < blocks.size(); ++i) {
    for (size_t j = i + 1; j < blocks.size(); ++j) {
      for (const BufferRegion& r : blocks[i]->block->reads) {
        if (touches(blocks[j]->block->writes, r.buffer.get())) {
          return {"block " + name_of(*blocks[j]) + " writes buffer '" + r.buffer->name +
                      "', which the earlier block " + name_of(*blocks[i]) +
                      " reads (a write after read)",
                  blocks[j]->realize};
        }
      }
    }
  }
  // Step 3. Region cover between producers and consumers that share loops.
  for (size_t i = 0; i < blocks.size(); ++i) {
    for (size_t j = i + 1; j < blocks.size(); ++j) {
      if (!shares_buffer(blocks[i]->block->writes, blocks[j]->block->reads)) continue;
      Violation v = check_region_cover(index, *blocks[i], *blocks[j]);
      if (!v.ok()) return v;
    }
  }
  return {};
}

void bind_loops(const std::vector<const For*>& loops, arith::Analyzer* analyzer,
                std::unordered_map<const Var*, bool>* bound) {
  for (const For* loop : loops) {
    if ((*bound)[loop->loop_var.get()]) continue;
    analyzer->bind(loop->loop_var, Range{loop->min, loop->extent});
    (*bound)[loop->loop_var.get()] = true;
  }
}

std::vector<Range> relaxed_region(const BlockLocation& block, const BufferRegion& region,
                                  size_t depth, arith::Analyzer* analyzer,
                                  const std::string& gpu_scope) {
  VarMap bindings = block_bindings(block);
  std::vector<Range> substituted;
  for (const Range& r : region.region) {
    substituted.push_back(Range{substitute(r.min, bindings), substitute(r.extent, bindings)});
  }
  std::unordered_map<const Var*, Range> relaxed;
  for (size_t k = 0; k < block.loops.size(); ++k) {
    const For* loop = block.loops[k];
    bool thread_bound = loop->kind == ForKind::kThreadBinding;
    bool shared_by_threads =
        thread_bound && is_shared_scope(gpu_scope) &&
        (loop->thread_tag.rfind("threadIdx", 0) == 0 || loop->thread_tag.rfind("vthread", 0) == 0);
    if (k >= depth || shared_by_threads) {
      relaxed[loop->loop_var.get()] = Range{loop->min, loop->extent};
    }
  }
  return arith::eval_region(substituted, arith::int_set_map(relaxed), analyzer,
                            region.buffer->shape);
}

namespace {

// The loops and block realizes of a scope in pre-order, not entering nested blocks.
class ProgramOrder : public IRVisitor {
 public:
  std::unordered_map<const StmtNode*, size_t> position;

 protected:
  using IRVisitor::visit;
  void visit(const For* op) override {
    position.emplace(op, position.size());
    visit_stmt(op->body);
  }
  void visit(const BlockRealize* op) override { position.emplace(op, position.size()); }
};

}  // namespace

bool comes_before(const Block* scope, const StmtNode* a, const StmtNode* b) {
  ProgramOrder order;
  order.visit_stmt(scope->body);
  auto pa = order.position.find(a);
  auto pb = order.position.find(b);
  internal_check(pa != order.position.end() && pb != order.position.end())
      << "schedule: comes_before: a statement is not in the scope of block '" << scope->name << "'";
  return pa->second < pb->second;
}

void apply_rewrite(Schedule& sch, const std::string& func_name, const BlockRewrite& rewrite,
                   const char* primitive) {
  sch.replace(func_name, rewrite.func, primitive, rewrite.removed_loops, rewrite.removed_blocks);
}

BlockRemoval plan_block_removal(const BlockLocation& block) {
  BlockRemoval removal;
  const StmtNode* current = block.realize;
  for (size_t k = block.loops.size(); k-- > 0;) {
    if (block.loops[k]->body.get() != current) break;
    current = block.loops[k];
    removal.loops.push_back(block.loops[k]->loop_var.get());
  }
  internal_check(block.scope != nullptr && block.scope->body.get() != current)
      << "schedule: block '" << block.block->name << "' is all of its scope and cannot be removed";
  removal.target = current;
  return removal;
}

size_t loop_depth(const BlockLocation& block, const For* loop) {
  auto it = std::find(block.loops.begin(), block.loops.end(), loop);
  return static_cast<size_t>(it - block.loops.begin());
}

}  // namespace kiln::schedule
