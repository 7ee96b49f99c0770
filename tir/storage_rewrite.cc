// storage_rewrite: lets buffers with disjoint live ranges in one sequence share storage, then
// hoists allocations whose size does not depend on a serial loop out of it.
#include "kiln/tir/storage_rewrite.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

// The element count of a buffer of constant shape, or -1.
int64_t constant_elements(const Buffer& buffer) {
  int64_t n = 1;
  for (const Expr& extent : buffer.shape) {
    const int64_t* c = as_const_int(extent);
    if (c == nullptr || *c < 0) return -1;
    n *= *c;
  }
  return n;
}

// One storage that buffers of a chain share: the buffer that owns it (its Allocate stays) and
// the last sequence position at which a buffer living in it is used.
struct Storage {
  Ref<Buffer> owner;
  int64_t elements;
  size_t last_use;
};

// Step 1. At each chain of Allocates around a SeqStmt, assigns buffers with disjoint live ranges
// to one storage and rewrites the accesses of the buffers that moved in.
class StorageSharer : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const Allocate* op) override {
    std::vector<Ref<Buffer>> chain;
    Stmt body = op;
    while (const auto* alloc = body.as<Allocate>()) {
      chain.push_back(alloc->buffer);
      body = alloc->body;
    }
    Stmt inner = mutate(body);
    std::unordered_map<const Var*, Ref<Var>> moved = plan(chain, inner);
    if (!moved.empty()) inner = ReuseRewriter(moved).mutate(inner);
    if (inner.same_as(body)) return op;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      if (moved.count((*it)->data.get()) == 0) inner = make<Allocate>(*it, inner);
    }
    return inner;
  }

 private:
  // Data variables of buffers that move to the storage of another buffer, to that buffer's.
  std::unordered_map<const Var*, Ref<Var>> plan(const std::vector<Ref<Buffer>>& chain,
                                                const Stmt& inner) {
    std::unordered_map<const Var*, Ref<Var>> moved;
    const auto* sequence = inner.as<SeqStmt>();
    if (sequence == nullptr || chain.size() < 2) return moved;
    struct LiveRange {
      Ref<Buffer> buffer;
      size_t first, last;
    };
    std::vector<LiveRange> ranges;
    for (const Ref<Buffer>& b : chain) {
      if (constant_elements(*b) < 0) continue;
      const Var* data = b->data.get();
      LiveRange range{b, sequence->seq.size(), 0};
      for (size_t t = 0; t < sequence->seq.size(); ++t) {
        if (!uses_var(sequence->seq[t], [data](const Var* v) { return v == data; })) continue;
        range.first = std::min(range.first, t);
        range.last = t;
      }
      if (range.first < sequence->seq.size()) ranges.push_back(range);
    }
    std::stable_sort(ranges.begin(), ranges.end(),
                     [](const LiveRange& a, const LiveRange& b) { return a.first < b.first; });
    std::vector<Storage> storages;
    for (const LiveRange& range : ranges) {
      const Buffer& b = *range.buffer;
      int64_t elements = constant_elements(b);
      Storage* best = nullptr;
      for (Storage& s : storages) {
        const Buffer& o = *s.owner;
        if (s.last_use >= range.first || o.dtype != b.dtype || o.scope != b.scope) continue;
        if (s.elements < elements) continue;
        if (best == nullptr || s.elements < best->elements) best = &s;
      }
      if (best == nullptr) {
        storages.push_back(Storage{range.buffer, elements, range.last});
      } else {
        moved[b.data.get()] = best->owner->data;
        best->last_use = range.last;
      }
    }
    return moved;
  }

  // Points the accesses of moved buffers at their new storage.
  class ReuseRewriter : public IRMutator {
   public:
    explicit ReuseRewriter(const std::unordered_map<const Var*, Ref<Var>>& moved) : moved_(moved) {}
    using IRMutator::mutate;

   protected:
    using IRMutator::visit;

    Ref<Buffer> mutate_buffer(const Ref<Buffer>& buffer) override {
      auto it = moved_.find(buffer->data.get());
      if (it == moved_.end()) return buffer;
      auto done = rebound_.find(buffer.get());
      if (done != rebound_.end()) return done->second;
      auto rebound = copy(buffer.get());
      rebound->data = it->second;
      rebound_[buffer.get()] = rebound;
      return rebound;
    }

    Expr visit(const Var* op) override {
      auto it = moved_.find(op);
      return it == moved_.end() ? Expr(op) : Expr(it->second);
    }

   private:
    const std::unordered_map<const Var*, Ref<Var>>& moved_;
    std::unordered_map<const Buffer*, Ref<Buffer>> rebound_;
  };
};

// Step 2. Moves the Allocates at the top of a serial or unrolled loop's body in front of the
// loop when their size does not depend on the loop variable. Inner loops go first, so an
// allocation climbs through a whole nest.
class AllocationHoister : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    Stmt visited = IRMutator::visit(op);
    if (op->kind != ForKind::kSerial && op->kind != ForKind::kUnrolled) return visited;
    const auto* loop = visited.as<For>();
    const Var* loop_var = loop->loop_var.get();
    std::vector<Ref<Buffer>> hoisted;
    std::vector<Ref<Buffer>> kept;
    Stmt body = loop->body;
    while (const auto* alloc = body.as<Allocate>()) {
      bool depends = false;
      for (const Expr& extent : alloc->buffer->shape) {
        depends |= uses_var(extent, [loop_var](const Var* v) { return v == loop_var; });
      }
      (depends ? kept : hoisted).push_back(alloc->buffer);
      body = alloc->body;
    }
    if (hoisted.empty()) return visited;
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) body = make<Allocate>(*it, body);
    auto new_loop = copy(loop);
    new_loop->body = body;
    Stmt result = new_loop;
    for (auto it = hoisted.rbegin(); it != hoisted.rend(); ++it) {
      result = make<Allocate>(*it, result);
    }
    return result;
  }
};

}  // namespace

Ref<PrimFunc> storage_rewrite(const Ref<PrimFunc>& func) {
  Stmt body = StorageSharer().mutate(func->body);
  body = AllocationHoister().mutate(body);
  return with_body(func, body);
}

}  // namespace kiln::tir
