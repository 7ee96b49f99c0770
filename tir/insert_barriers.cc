// insert_barriers: storage_sync("shared") between the statements of a GPU kernel that pass
// values through shared memory (see the header for the rules).
#include "kiln/tir/insert_barriers.h"

#include <unordered_set>
#include <vector>

#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

using VarSet = std::unordered_set<const Var*>;

// The "shared" buffers (data variables) a statement reads and writes.
struct SharedAccess {
  VarSet reads, writes;
};

SharedAccess shared_access(const Stmt& s) {
  SharedAccess out;
  post_order_visit(s, [&](const Node* node) {
    if (node->kind() == NodeKind::BufferLoad) {
      const Buffer& b = *static_cast<const BufferLoad*>(node)->buffer;
      if (is_shared_scope(b.scope)) out.reads.insert(b.data.get());
    } else if (node->kind() == NodeKind::BufferStore) {
      const Buffer& b = *static_cast<const BufferStore*>(node)->buffer;
      if (is_shared_scope(b.scope)) out.writes.insert(b.data.get());
    }
  });
  return out;
}

bool intersects(const VarSet& a, const VarSet& b) {
  for (const Var* v : a) {
    if (b.count(v) != 0) return true;
  }
  return false;
}

Stmt barrier() {
  return make<Evaluate>(make<Call>(DataType::int32(), Builtin::StorageSync,
                                   std::vector<Expr>{make<StringImm>("shared")}));
}

// Inserts the barriers inside one kernel.
class KernelBarriers : public IRMutator {
 protected:
  using IRMutator::visit;

  Stmt visit(const SeqStmt* op) override {
    std::vector<Stmt> seq;
    bool changed = false;
    VarSet pending_reads, pending_writes;
    for (const Stmt& child : op->seq) {
      Stmt mutated = mutate(child);
      changed |= !mutated.same_as(child);
      SharedAccess access = shared_access(mutated);
      if (intersects(access.reads, pending_writes) || intersects(access.writes, pending_reads)) {
        seq.push_back(barrier());
        changed = true;
        pending_reads.clear();
        pending_writes.clear();
      }
      pending_reads.insert(access.reads.begin(), access.reads.end());
      pending_writes.insert(access.writes.begin(), access.writes.end());
      seq.push_back(mutated);
    }
    if (!changed) return op;
    return make<SeqStmt>(std::move(seq));
  }

  Stmt visit(const For* op) override {
    // A statement that guard_redundant_stores gave to one thread needs no barrier inside.
    if (op->annotations.count("kiln.single_thread") != 0) return op;
    Stmt visited = IRMutator::visit(op);
    if (op->kind != ForKind::kSerial && op->kind != ForKind::kUnrolled) return visited;
    SharedAccess access = shared_access(op->body);
    if (!intersects(access.reads, access.writes)) return visited;
    auto loop = copy(visited.as<For>());
    loop->body = make<SeqStmt>(std::vector<Stmt>{loop->body, barrier()});
    return loop;
  }
};

// Finds the kernels: the outermost thread-bound loops.
class KernelFinder : public IRMutator {
 protected:
  using IRMutator::visit;
  Stmt visit(const For* op) override {
    if (op->kind != ForKind::kThreadBinding) return IRMutator::visit(op);
    return KernelBarriers().mutate(Stmt(op));
  }
};

}  // namespace

Ref<PrimFunc> insert_barriers(const Ref<PrimFunc>& func) {
  return with_body(func, KernelFinder().mutate(func->body));
}

}  // namespace kiln::tir
