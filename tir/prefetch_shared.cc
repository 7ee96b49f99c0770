// prefetch_shared: the next step's copies into shared memory go through registers, loaded while
// the threads compute on the current step (see the header for the form it takes).
#include "kiln/tir/prefetch_shared.h"

#include <optional>
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

std::optional<Stmt> pipeline(const For& loop) {
  const int64_t* extent = as_const_int(loop.extent);
  if (loop.kind != ForKind::kSerial || extent == nullptr || *extent < 2) return std::nullopt;
  // Step 1. The body inside its allocations: copies, then what reads them.
  std::vector<const Allocate*> allocations;
  Stmt body = loop.body;
  while (const auto* allocate = body.as<Allocate>()) {
    for (const Expr& extent : allocate->buffer->shape) {
      if (uses_var(extent, [&loop](const Var* v) { return v == loop.loop_var.get(); })) {
        return std::nullopt;
      }
    }
    allocations.push_back(allocate);
    body = allocate->body;
  }
  const auto* sequence = body.as<SeqStmt>();
  if (sequence == nullptr) return std::nullopt;
  std::vector<Copy> copies;
  size_t first_other = 0;
  while (first_other < sequence->seq.size()) {
    std::optional<Copy> copy = as_copy(sequence->seq[first_other]);
    if (!copy) break;
    copies.push_back(*copy);
    ++first_other;
  }
  if (copies.empty() || first_other == sequence->seq.size()) return std::nullopt;
  // Step 2. Loaded a step early, a copy must read what it read then: nothing the loop writes.
  Accesses whole = accesses_of(loop.body);
  for (const Copy& c : copies) {
    for (const Var* data : c.loaded) {
      if (whole.stored.count(data) != 0) return std::nullopt;
    }
  }
  // Step 3. The loop: stores of this step from the registers, loads of the next step into
  // them, then the rest of the body; before it, the loads of the first step.
  const Var* k = loop.loop_var.get();
  std::vector<Stmt> prologue, stores, loads;
  for (const Copy& c : copies) {
    Stmt load = load_into_registers(c);
    prologue.push_back(substitute(load, VarMap{{k, loop.min}}));
    stores.push_back(store_from_registers(c));
    loads.push_back(substitute(renew_definitions(load),
                               VarMap{{k, Expr(loop.loop_var) + make_const(k->dtype, 1)}}));
  }
  std::vector<Stmt> steps = stores;
  Expr next = Expr(loop.loop_var) + make_const(k->dtype, 1);
  steps.push_back(make<IfThenElse>(lt(next, loop.min + loop.extent), seq(std::move(loads))));
  steps.insert(steps.end(), sequence->seq.begin() + static_cast<std::ptrdiff_t>(first_other),
               sequence->seq.end());
  // The loop's allocations move out of it, around the loop and its prologue, so that a later
  // pass that splits the loop (loop_partition: the last step has no next one) does not
  // allocate the shared tiles twice.
  auto new_loop = copy(&loop);
  new_loop->body = seq(std::move(steps));
  new_loop->annotations.erase(kPrefetchSharedAnnotation);
  Stmt result = seq({seq(std::move(prologue)), Stmt(new_loop)});
  for (size_t i = allocations.size(); i-- > 0;) {
    result = make<Allocate>(allocations[i]->buffer, result);
  }
  for (size_t i = copies.size(); i-- > 0;) {
    result = make<Allocate>(copies[i].prefetched, result);
  }
  return result;
}

class PrefetchShared : public IRMutator {
 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    Stmt visited = IRMutator::visit(op);
    const auto* loop = visited.as<For>();
    auto it = loop->annotations.find(kPrefetchSharedAnnotation);
    if (it == loop->annotations.end()) return visited;
    const int64_t* value = as_const_int(it->second);
    std::optional<Stmt> result;
    if (value != nullptr && *value != 0) result = pipeline(*loop);
    if (result) return *result;
    auto unchanged = copy(loop);
    unchanged->annotations.erase(kPrefetchSharedAnnotation);
    return unchanged;
  }
};

}  // namespace

Ref<PrimFunc> prefetch_shared(const Ref<PrimFunc>& func) {
  return with_body(func, PrefetchShared().mutate(func->body));
}

}  // namespace kiln::tir
