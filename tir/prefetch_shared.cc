// prefetch_shared: the next step's copies into shared memory go through registers, loaded while
// the threads compute on the current step, or copied asynchronously into further stages of the
// shared tiles (see the header for the forms it takes).
#include "kiln/tir/prefetch_shared.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "tir/pass_util.h"
#include "tir/renew_definitions.h"

namespace kiln::tir {

using namespace ir;

namespace {

// A copy into shared memory: its nest from the top statement to its one store, and the
// position of that store's element in the thread's registers.
struct Copy {
  Stmt nest;
  const BufferStore* store = nullptr;
  Expr register_index;                    // over the nest's loops that are not bound to threads
  int64_t registers = 1;                  // the elements of one step a thread keeps
  Ref<Buffer> prefetched;                 // "local", `registers` elements
  std::unordered_set<const Var*> loaded;  // the data variables it reads
};

// The data variables `s` stores to and loads from.
struct Accesses {
  std::unordered_set<const Var*> stored, loaded;
  std::unordered_set<const Var*> shared_loaded;
  int stores = 0;
  bool shared_stores_only = true;
  bool calls = false;  // a barrier or any other call with effects
};

Accesses accesses_of(const Stmt& s) {
  Accesses out;
  post_order_visit(s, [&out](const Node* node) {
    if (node->kind() == NodeKind::BufferStore) {
      const Buffer& b = *static_cast<const BufferStore*>(node)->buffer;
      out.stored.insert(b.data.get());
      ++out.stores;
      out.shared_stores_only = out.shared_stores_only && is_shared_scope(b.scope);
    } else if (node->kind() == NodeKind::BufferLoad) {
      const Buffer& b = *static_cast<const BufferLoad*>(node)->buffer;
      out.loaded.insert(b.data.get());
      if (is_shared_scope(b.scope)) out.shared_loaded.insert(b.data.get());
    } else if (node->kind() == NodeKind::Evaluate) {
      out.calls = true;
    }
  });
  return out;
}

// The copy `s` is, or nothing: loops (constant extents; threadIdx loops are the threads'),
// conditions without else, one store into a shared buffer; no virtual threads.
std::optional<Copy> as_copy(const Stmt& s) {
  Accesses a = accesses_of(s);
  if (a.stores != 1 || !a.shared_stores_only || !a.shared_loaded.empty() || a.calls) {
    return std::nullopt;
  }
  Copy copy;
  copy.nest = s;
  copy.loaded = std::move(a.loaded);
  std::vector<const For*> own;  // the loops whose iterations a thread runs, outermost first
  Stmt at = s;
  while (copy.store == nullptr) {
    if (const auto* loop = at.as<For>()) {
      if (is_vthread_loop(*loop) || loop->kind == ForKind::kParallel) return std::nullopt;
      if (loop->kind != ForKind::kThreadBinding) {
        const int64_t* extent = as_const_int(loop->extent);
        if (extent == nullptr || *extent < 1) return std::nullopt;
        own.push_back(loop);
      } else if (!is_thread_loop(*loop)) {
        return std::nullopt;  // a block index inside a kernel
      }
      at = loop->body;
    } else if (const auto* branch = at.as<IfThenElse>()) {
      if (branch->else_case.defined()) return std::nullopt;
      at = branch->then_case;
    } else if (const auto* store = at.as<BufferStore>()) {
      if (store->indices.size() != 1 || store->value->dtype.lanes() != 1) return std::nullopt;
      copy.store = store;
    } else {
      return std::nullopt;
    }
  }
  // Row-major over the thread's loops: the innermost (a vectorized one) is contiguous.
  Expr index = make_const(DataType::int32(), 0);
  for (const For* loop : own) {
    int64_t extent = *as_const_int(loop->extent);
    index = index * make_const(DataType::int32(), extent) + (Expr(loop->loop_var) - loop->min);
    copy.registers *= extent;
  }
  copy.register_index = index;
  copy.prefetched =
      decl_buffer({make_const(DataType::int32(), copy.registers)}, copy.store->buffer->dtype,
                  copy.store->buffer->name + "_prefetch", "local");
  return copy;
}

// `nest` with its store replaced by `replacement`.
class ReplaceStore : public IRMutator {
 public:
  ReplaceStore(const BufferStore* store, Stmt replacement)
      : store_(store), replacement_(std::move(replacement)) {}

 protected:
  using IRMutator::visit;
  Stmt visit(const BufferStore* op) override {
    return op == store_ ? replacement_ : IRMutator::visit(op);
  }

 private:
  const BufferStore* store_;
  Stmt replacement_;
};

// The copy loading the step into the thread's registers, and storing them into shared memory.
Stmt load_into_registers(const Copy& c) {
  Stmt store = buffer_store(c.prefetched, c.store->value, {c.register_index});
  return renew_definitions(ReplaceStore(c.store, store).mutate(c.nest));
}

Stmt store_from_registers(const Copy& c) {
  Stmt store = buffer_store(c.store->buffer, buffer_load(c.prefetched, {c.register_index}),
                            c.store->indices);
  return ReplaceStore(c.store, store).mutate(c.nest);
}

// A loop of the form the pass takes: its allocations, the copies that begin its body and the
// statements after them.
struct LoopParts {
  std::vector<const Allocate*> allocations;
  std::vector<Copy> copies;
  std::vector<Stmt> rest;
};

std::optional<LoopParts> match_loop(const For& loop) {
  const int64_t* extent = as_const_int(loop.extent);
  if (loop.kind != ForKind::kSerial || extent == nullptr || *extent < 2) return std::nullopt;
  // Step 1. The body inside its allocations: copies, then what reads them.
  LoopParts m;
  Stmt body = loop.body;
  while (const auto* allocate = body.as<Allocate>()) {
    for (const Expr& extent : allocate->buffer->shape) {
      if (uses_var(extent, [&loop](const Var* v) { return v == loop.loop_var.get(); })) {
        return std::nullopt;
      }
    }
    m.allocations.push_back(allocate);
    body = allocate->body;
  }
  const auto* sequence = body.as<SeqStmt>();
  if (sequence == nullptr) return std::nullopt;
  size_t first_other = 0;
  while (first_other < sequence->seq.size()) {
    std::optional<Copy> copy = as_copy(sequence->seq[first_other]);
    if (!copy) break;
    m.copies.push_back(*copy);
    ++first_other;
  }
  if (m.copies.empty() || first_other == sequence->seq.size()) return std::nullopt;
  m.rest.assign(sequence->seq.begin() + static_cast<std::ptrdiff_t>(first_other),
                sequence->seq.end());
  // Step 2. Loaded a step early, a copy must read what it read then: nothing the loop writes.
  Accesses whole = accesses_of(loop.body);
  for (const Copy& c : m.copies) {
    for (const Var* data : c.loaded) {
      if (whole.stored.count(data) != 0) return std::nullopt;
    }
  }
  return m;
}

// The loop and what goes before it, inside `allocations` (outermost first), the loop's own
// allocations hoisted around them, so that a later pass that splits the loop (loop_partition:
// the last step has no next one) does not allocate the shared tiles twice.
Stmt around(const For& loop, std::vector<Stmt> before, std::vector<Stmt> steps,
            const std::vector<Ref<Buffer>>& allocations) {
  auto new_loop = copy(&loop);
  new_loop->body = seq(std::move(steps));
  new_loop->annotations.erase(kPrefetchSharedAnnotation);
  before.push_back(Stmt(new_loop));
  Stmt result = seq(std::move(before));
  for (size_t i = allocations.size(); i-- > 0;) result = make<Allocate>(allocations[i], result);
  return result;
}

// Mode 1: the next step's copies through registers.
Stmt through_registers(const For& loop, const LoopParts& m) {
  // The loop: stores of this step from the registers, loads of the next step into them, then
  // the rest of the body; before it, the loads of the first step.
  const Var* k = loop.loop_var.get();
  std::vector<Stmt> prologue, stores, loads;
  for (const Copy& c : m.copies) {
    Stmt load = load_into_registers(c);
    prologue.push_back(substitute(load, VarMap{{k, loop.min}}));
    stores.push_back(store_from_registers(c));
    loads.push_back(substitute(renew_definitions(load),
                               VarMap{{k, Expr(loop.loop_var) + make_const(k->dtype, 1)}}));
  }
  std::vector<Stmt> steps = stores;
  Expr next = Expr(loop.loop_var) + make_const(k->dtype, 1);
  steps.push_back(make<IfThenElse>(lt(next, loop.min + loop.extent), seq(std::move(loads))));
  steps.insert(steps.end(), m.rest.begin(), m.rest.end());
  std::vector<Ref<Buffer>> allocations;
  for (const Copy& c : m.copies) allocations.push_back(c.prefetched);
  for (const Allocate* a : m.allocations) allocations.push_back(a->buffer);
  return around(loop, {seq(std::move(prologue))}, std::move(steps), allocations);
}

// Accesses to the shared tiles moved to one of their stages: each tile (by its data variable)
// becomes its `to` buffer, a multiple of its size, at element offset `stage` times its size;
// with `async`, a store into a tile copies its value asynchronously (ptx_cp_async).
class ToStage : public IRMutator {
 public:
  struct Tile {
    Ref<Buffer> to;
    int64_t elements = 0;
  };
  ToStage(const std::unordered_map<const Var*, Tile>& tiles, Expr stage, bool async)
      : tiles_(tiles), stage_(std::move(stage)), async_(async) {}

 protected:
  using IRMutator::visit;
  Expr visit(const BufferLoad* op) override {
    Expr visited = IRMutator::visit(op);
    const auto* load = visited.as<BufferLoad>();
    auto it = tiles_.find(load->buffer->data.get());
    if (it == tiles_.end()) return visited;
    return make<BufferLoad>(load->dtype, it->second.to, moved(load->indices, it->second));
  }
  Stmt visit(const BufferStore* op) override {
    Stmt visited = IRMutator::visit(op);
    const auto* store = visited.as<BufferStore>();
    auto it = tiles_.find(store->buffer->data.get());
    if (it == tiles_.end()) return visited;
    Expr value =
        async_ ? call(store->value->dtype, Builtin::PtxCpAsync, {store->value}) : store->value;
    return buffer_store(it->second.to, value, moved(store->indices, it->second));
  }

 private:
  std::vector<Expr> moved(std::vector<Expr> indices, const Tile& tile) const {
    Expr offset = stage_ * make_const(stage_->dtype, tile.elements);
    Expr& index = indices.back();
    if (const auto* ramp = index.as<Ramp>()) {
      index = make<Ramp>(index->dtype, ramp->base + cast(ramp->base->dtype, offset), ramp->stride,
                         ramp->lanes);
    } else {
      index = index + cast(index->dtype, offset);
    }
    return indices;
  }

  const std::unordered_map<const Var*, ToStage::Tile>& tiles_;
  Expr stage_;
  bool async_;
};

// Mode n >= 2: the shared tiles n times over (n stages), the copies of step k + n - 1
// (asynchronous) into one while the threads compute on step k's; nothing when a copy's tile is
// not the loop's own or the rest of the body writes one.
std::optional<Stmt> staged(const For& loop, const LoopParts& m, int64_t stages) {
  int64_t extent = *as_const_int(loop.extent);
  stages = std::min(stages, extent);  // more would hold no step
  std::unordered_map<const Var*, ToStage::Tile> tiles;
  std::vector<Ref<Buffer>> allocations;
  for (const Allocate* a : m.allocations) {
    const Buffer& b = *a->buffer;
    bool copied = std::any_of(m.copies.begin(), m.copies.end(), [&b](const Copy& c) {
      return c.store->buffer->data.get() == b.data.get();
    });
    const int64_t* elements = b.shape.size() == 1 ? as_const_int(b.shape[0]) : nullptr;
    if (!copied || elements == nullptr) {
      allocations.push_back(a->buffer);
      continue;
    }
    auto all = copy(&b);
    all->data = make_var(b.data->name, b.data->dtype);
    all->shape = {make_const(b.shape[0]->dtype, stages * *elements)};
    tiles[b.data.get()] = ToStage::Tile{all, *elements};
    allocations.push_back(all);
  }
  for (const Copy& c : m.copies) {
    if (tiles.count(c.store->buffer->data.get()) == 0) return std::nullopt;
  }
  for (const Stmt& s : m.rest) {
    for (const Var* data : accesses_of(s).stored) {
      if (tiles.count(data) != 0) return std::nullopt;
    }
  }
  const Var* k = loop.loop_var.get();
  DataType t = k->dtype;
  Expr step = Expr(loop.loop_var) - loop.min;  // of this iteration, from 0
  auto fence = [](Builtin op, std::vector<Expr> args) {
    return make<Evaluate>(call(DataType::int32(), op, std::move(args)));
  };
  // Before the loop: the copies of steps 0 .. n - 2 into stages 0 .. n - 2, a group each. In
  // step s: the copies of step s + n - 1 into stage (s + n - 1) % n, a group of their own (empty
  // in the last n - 1 steps); then, when at most the n - 1 latest groups are in flight (step s's
  // is done) and every thread got there, the rest of the body on stage s % n.
  std::vector<Stmt> prologue, ahead, steps;
  for (int64_t first = 0; first + 1 < stages; ++first) {
    ToStage into(tiles, make_const(t, first), true);
    for (const Copy& c : m.copies) {
      prologue.push_back(substitute(renew_definitions(into.mutate(c.nest)),
                                    VarMap{{k, loop.min + make_const(t, first)}}));
    }
    prologue.push_back(fence(Builtin::PtxCpAsyncCommitGroup, {}));
  }
  // (The copies of step s + n - 1 are those of step s with k + n - 1 for k, stage included.)
  ToStage later(tiles, floormod(step, make_const(t, stages)), true);
  ToStage current(tiles, floormod(step, make_const(t, stages)), false);
  Expr distance = make_const(t, stages - 1);
  for (const Copy& c : m.copies) {
    ahead.push_back(substitute(renew_definitions(later.mutate(c.nest)),
                               VarMap{{k, Expr(loop.loop_var) + distance}}));
  }
  Expr has_ahead = lt(Expr(loop.loop_var) + distance, loop.min + loop.extent);
  steps.push_back(make<IfThenElse>(has_ahead, seq(std::move(ahead))));
  steps.push_back(fence(Builtin::PtxCpAsyncCommitGroup, {}));
  steps.push_back(fence(Builtin::PtxCpAsyncWaitGroup, {make_const(DataType::int32(), stages - 1)}));
  // Each thread's wait covers its own copies: the barrier after it, the others'. (insert_barriers
  // cannot place it: it takes a store as done where it stands, and after a split of the loop the
  // last step's copies may be behind another barrier already.)
  steps.push_back(fence(Builtin::StorageSync, {make<StringImm>("shared")}));
  for (const Stmt& s : m.rest) steps.push_back(current.mutate(s));
  return around(loop, std::move(prologue), std::move(steps), allocations);
}

class PrefetchShared : public IRMutator {
 public:
  explicit PrefetchShared(bool async_copy) : async_copy_(async_copy) {}

 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    Stmt visited = IRMutator::visit(op);
    const auto* loop = visited.as<For>();
    auto it = loop->annotations.find(kPrefetchSharedAnnotation);
    if (it == loop->annotations.end()) return visited;
    const int64_t* value = as_const_int(it->second);
    std::optional<LoopParts> parts;
    if (value != nullptr && *value != 0) parts = match_loop(*loop);
    if (parts && *value >= kMinAsyncStages && async_copy_) {
      if (std::optional<Stmt> result = staged(*loop, *parts, *value)) return *result;
    }
    if (parts) return through_registers(*loop, *parts);
    auto unchanged = copy(loop);
    unchanged->annotations.erase(kPrefetchSharedAnnotation);
    return unchanged;
  }

 private:
  bool async_copy_;
};

}  // namespace

Ref<PrimFunc> prefetch_shared(const Ref<PrimFunc>& func, bool async_copy) {
  return with_body(func, PrefetchShared(async_copy).mutate(func->body));
}

}  // namespace kiln::tir
