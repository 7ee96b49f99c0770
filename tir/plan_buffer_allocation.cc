// plan_buffer_allocation: finds the lowest common ancestor of every access to each allocated
// buffer (the loops and blocks on the way to it) and moves the allocation there.
#include "kiln/tir/plan_buffer_allocation.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

// A For or a Block between the function's root and an access, outermost first.
using Path = std::vector<const StmtNode*>;

// What is known about one allocated buffer after the walk.
struct BufferUses {
  const Block* owner = nullptr;  // the block whose alloc_buffers holds it
  bool accessed = false;
  Path common;  // the longest common prefix of the paths of every access
  std::unordered_set<const For*> unsafe_loops;  // loops the allocation must stay outside of
};

// The node as a T, or null when it is of another kind.
template <class T>
const T* node_as(const StmtNode* node) {
  return T::matches(node->kind()) ? static_cast<const T*>(node) : nullptr;
}

bool uses(const Expr& e, const Var* var) {
  return uses_var(e, [var](const Var* v) { return v == var; });
}

// Whether a loop of kind thread binding may hold an allocation of `scope`: thread-local buffers
// may; a "shared" buffer may too, because it is one buffer per thread block wherever it is
// allocated (the code generators declare it at kernel scope, and compact_buffer_allocation
// sizes it for every thread of the block); global memory is outside every thread loop.
bool thread_loop_may_hold(const For* loop, const std::string& scope) {
  if (loop->kind != ForKind::kThreadBinding) return true;
  return scope == "local" || is_shared_scope(scope);
}

// Step 1. Walk the function, recording for each allocated buffer its owner, the common prefix
// of the paths to its accesses and the loops it must not be moved into.
class AccessCollector : public IRVisitor {
 public:
  std::vector<Ref<Buffer>> order;  // allocated buffers in the order they were found
  std::unordered_map<const Buffer*, BufferUses> buffers;

  void run(const Stmt& body) { visit_stmt(body); }

 protected:
  using IRVisitor::visit;

  void visit(const For* op) override {
    path_.push_back(op);
    IRVisitor::visit(op);
    path_.pop_back();
  }

  void visit(const BlockRealize* op) override {
    realizes_[op->block.get()] = op;
    IRVisitor::visit(op);
  }

  void visit(const Block* op) override {
    path_.push_back(op);
    for (const Ref<Buffer>& b : op->alloc_buffers) {
      order.push_back(b);
      buffers[b.get()].owner = op;
      data_vars_[b->data.get()] = b.get();
    }
    for (const BufferRegion& r : op->reads) access(r.buffer.get(), false);
    for (const BufferRegion& r : op->writes) access(r.buffer.get(), true);
    IRVisitor::visit(op);
    path_.pop_back();
  }

  void visit(const BufferLoad* op) override {
    access(op->buffer.get(), false);
    IRVisitor::visit(op);
  }

  void visit(const BufferStore* op) override {
    access(op->buffer.get(), true);
    IRVisitor::visit(op);
  }

  // A data variable used directly (a call argument) is an access, maybe a store, where it
  // appears.
  void visit(const Var* op) override {
    auto it = data_vars_.find(op);
    if (it != data_vars_.end()) access(it->second, true);
  }

 private:
  void access(const Buffer* buffer, bool is_store) {
    auto it = buffers.find(buffer);
    if (it == buffers.end()) return;
    BufferUses& uses_of = it->second;
    if (!uses_of.accessed) {
      uses_of.accessed = true;
      uses_of.common = path_;
    } else {
      size_t n = 0;
      while (n < uses_of.common.size() && n < path_.size() && uses_of.common[n] == path_[n]) ++n;
      uses_of.common.resize(n);
    }
    for (size_t p = 0; p < path_.size(); ++p) {
      const auto* loop = node_as<For>(path_[p]);
      if (loop == nullptr) continue;
      if (!loop_is_safe(loop, p, buffer->scope, is_store)) uses_of.unsafe_loops.insert(loop);
    }
  }

  // Whether the allocation may move into the loop at path_[p] as far as this access is
  // concerned. Blocks promise that their spatial instances are independent and that a block
  // reading a buffer comes after the blocks producing what it reads (the schedule primitives
  // keep both), so values cross the iterations of a loop only through a block that accumulates
  // into the buffer over the loop: a store under a block that binds the loop to a reduce
  // (or ordered, opaque) iterator. Without any block between the loop and the access there is
  // no promise at all.
  bool loop_is_safe(const For* loop, size_t p, const std::string& scope, bool is_store) const {
    if (!thread_loop_may_hold(loop, scope)) return false;
    // Each thread block has its own shared and local memory: no value crosses the iterations
    // of a blockIdx loop through them (a cross-thread reduction to one value, under a unit loop
    // bound to blockIdx.x and no block with iterators, keeps its buffer in the kernel so).
    // (A thread loop that may hold the buffer at all holds only local and shared ones.)
    if (loop->kind == ForKind::kThreadBinding && loop->thread_tag.rfind("blockIdx.", 0) == 0) {
      return true;
    }
    bool under_block = false;
    for (size_t q = p + 1; q < path_.size(); ++q) {
      const auto* block = node_as<Block>(path_[q]);
      if (block == nullptr || block->iter_vars.empty()) continue;
      under_block = true;
      if (!is_store) continue;
      auto realize = realizes_.find(block);
      if (realize == realizes_.end()) return false;
      const std::vector<Expr>& values = realize->second->iter_values;
      for (size_t k = 0; k < values.size() && k < block->iter_vars.size(); ++k) {
        if (block->iter_vars[k].type != IterType::kDataPar &&
            uses(values[k], loop->loop_var.get())) {
          return false;
        }
      }
    }
    return under_block;
  }

  Path path_;
  std::unordered_map<const Block*, const BlockRealize*> realizes_;
  std::unordered_map<const Var*, const Buffer*> data_vars_;
};

// Step 2. The new home of a buffer: walking the common prefix down from the owner, the last
// block or safe loop before the first unsafe loop.
const StmtNode* new_home(const BufferUses& uses_of) {
  const Path& common = uses_of.common;
  auto owner = std::find(common.begin(), common.end(), uses_of.owner);
  if (owner == common.end()) return uses_of.owner;
  const StmtNode* home = uses_of.owner;
  for (auto it = owner + 1; it != common.end(); ++it) {
    if (const auto* loop = node_as<For>(*it)) {
      if (uses_of.unsafe_loops.count(loop) != 0) break;
    }
    home = *it;
  }
  return home;
}

// Step 3. Remove each moved buffer from its owner and allocate it at its new home: in the
// alloc_buffers of a block, or in a new iterator-free block wrapping a loop's body.
class AllocationMover : public IRMutator {
 public:
  std::unordered_map<const Block*, std::unordered_set<const Buffer*>> removed;
  std::unordered_map<const StmtNode*, std::vector<Ref<Buffer>>> added;
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const Block* op) override {
    Stmt visited = IRMutator::visit(op);
    auto gone = removed.find(op);
    auto extra = added.find(op);
    if (gone == removed.end() && extra == added.end()) return visited;
    auto block = copy(visited.as<Block>());
    if (gone != removed.end()) {
      std::vector<Ref<Buffer>> kept;
      for (const Ref<Buffer>& b : block->alloc_buffers) {
        if (gone->second.count(b.get()) == 0) kept.push_back(b);
      }
      block->alloc_buffers = std::move(kept);
    }
    if (extra != added.end()) {
      for (const Ref<Buffer>& b : extra->second) block->alloc_buffers.push_back(b);
    }
    return block;
  }

  Stmt visit(const For* op) override {
    Stmt visited = IRMutator::visit(op);
    auto extra = added.find(op);
    if (extra == added.end()) return visited;
    auto wrapper = make<Block>();
    wrapper->alloc_buffers = extra->second;
    auto loop = copy(visited.as<For>());
    wrapper->body = loop->body;
    loop->body = make<BlockRealize>(std::vector<Expr>{}, bool_const(true), wrapper);
    return loop;
  }
};

}  // namespace

Ref<PrimFunc> plan_buffer_allocation(const Ref<PrimFunc>& func) {
  AccessCollector collector;
  collector.run(func->body);
  AllocationMover mover;
  for (const Ref<Buffer>& buffer : collector.order) {
    const BufferUses& uses_of = collector.buffers.at(buffer.get());
    if (!uses_of.accessed) continue;
    const StmtNode* home = new_home(uses_of);
    if (home == uses_of.owner) continue;
    mover.removed[uses_of.owner].insert(buffer.get());
    mover.added[home].push_back(buffer);
  }
  if (mover.added.empty()) return func;
  return with_body(func, mover.mutate(func->body));
}

}  // namespace kiln::tir
