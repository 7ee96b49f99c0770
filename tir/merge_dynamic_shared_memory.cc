// merge_dynamic_shared_memory: one block of dynamic shared memory per GPU kernel, the
// "shared.dyn" buffers views into it (see the header for the contract).
#include "kiln/tir/merge_dynamic_shared_memory.h"

#include <unordered_map>
#include <vector>

#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/support/error.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

// `index` moved by `offset` elements (a ramp keeps its stride).
Expr shifted(const Expr& index, int64_t offset) {
  if (offset == 0) return index;
  DataType t = index->dtype.with_lanes(1);
  Expr delta = make_const(t, offset);
  if (const auto* ramp = index.as<Ramp>()) {
    return make<Ramp>(index->dtype, add(ramp->base, delta), ramp->stride, ramp->lanes);
  }
  if (index->dtype.lanes() > 1) {
    return make<Add>(index->dtype, index,
                     make<Broadcast>(index->dtype, delta, index->dtype.lanes()));
  }
  return add(index, delta);
}

// Rewrites one kernel's loop nest: its "shared.dyn" allocations go, their accesses move into
// the merged block.
class KernelMerger : public IRMutator {
 public:
  explicit KernelMerger(const std::string& function) : function_(function) {}

  // The nest with the merged allocation at the top of its outermost loop's body, or the nest
  // itself when it allocates no dynamic shared memory.
  Stmt run(const For* nest) {
    Stmt body = mutate(nest->body);
    if (!merged_.defined()) return Ref<For>(nest);
    Ref<Buffer> block = decl_buffer({make_const(DataType::int32(), bytes_)}, DataType::uint(8),
                                    "dyn_shared", "shared.dyn");
    block->data = merged_;
    auto loop = copy(nest);
    loop->body = make<Allocate>(block, body);
    return loop;
  }

  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const Allocate* op) override {
    const Buffer& buffer = *op->buffer;
    if (buffer.scope != "shared.dyn") return IRMutator::visit(op);
    // Step 1. The buffer's place in the block.
    int64_t elements = 1;
    for (const Expr& extent : buffer.shape) {
      const int64_t* c = as_const_int(extent);
      user_check(c != nullptr) << "merge_dynamic_shared_memory: function " << function_
                               << ": buffer " << buffer.name
                               << " (scope \"shared.dyn\") has the non-constant size "
                               << to_script(extent)
                               << "; dynamic shared memory is laid out when the kernel is compiled";
      elements *= *c;
    }
    int64_t offset =
        (bytes_ + kDynamicSharedAlignment - 1) / kDynamicSharedAlignment * kDynamicSharedAlignment;
    bytes_ = offset + elements * buffer.dtype.bytes();
    if (!merged_.defined()) merged_ = make<Var>("dyn_shared", DataType::handle());
    offsets_[buffer.data.get()] = offset / buffer.dtype.bytes();
    // Step 2. Its accesses, in the body without the allocation.
    return mutate(op->body);
  }

  Expr visit(const BufferLoad* op) override {
    Expr e = IRMutator::visit(op);
    const auto* load = e.as<BufferLoad>();
    auto it = offsets_.find(load->buffer->data.get());
    if (it == offsets_.end()) return e;
    std::vector<Expr> indices = load->indices;
    indices.back() = shifted(indices.back(), it->second);
    return make<BufferLoad>(load->dtype, view(load->buffer), std::move(indices));
  }

  Stmt visit(const BufferStore* op) override {
    Stmt s = IRMutator::visit(op);
    const auto* store = s.as<BufferStore>();
    auto it = offsets_.find(store->buffer->data.get());
    if (it == offsets_.end()) return s;
    std::vector<Expr> indices = store->indices;
    indices.back() = shifted(indices.back(), it->second);
    return make<BufferStore>(view(store->buffer), store->value, std::move(indices));
  }

 private:
  // The buffer with the merged block as its data.
  Ref<Buffer> view(const Ref<Buffer>& buffer) {
    auto it = views_.find(buffer.get());
    if (it != views_.end()) return it->second;
    internal_check(buffer->ndim() == 1)
        << "merge_dynamic_shared_memory: buffer " << buffer->name << " is not flattened";
    auto moved = copy(buffer.get());
    moved->data = merged_;
    views_.emplace(buffer.get(), moved);
    return moved;
  }

  std::string function_;
  Ref<Var> merged_;
  int64_t bytes_ = 0;
  std::unordered_map<const Var*, int64_t> offsets_;  // element offset per original data
  std::unordered_map<const Buffer*, Ref<Buffer>> views_;
};

// Finds the kernels: the outermost loops bound to a GPU axis.
class KernelFinder : public IRMutator {
 public:
  explicit KernelFinder(const std::string& function) : function_(function) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const For* op) override {
    if (op->kind != ForKind::kThreadBinding) return IRMutator::visit(op);
    return KernelMerger(function_).run(op);
  }

 private:
  std::string function_;
};

}  // namespace

Ref<PrimFunc> merge_dynamic_shared_memory(const Ref<PrimFunc>& func) {
  std::string name = "?";
  auto it = func->attrs.find("global_symbol");
  if (it != func->attrs.end() && it->second.as<StringImm>() != nullptr) {
    name = it->second.as<StringImm>()->value;
  }
  return with_body(func, KernelFinder(name).mutate(func->body));
}

}  // namespace kiln::tir
