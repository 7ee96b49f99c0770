// promote_to_registers: the loops that reach a "local" buffer only at constant offsets work on
// a copy of it (see the header).
#include "kiln/tir/promote_to_registers.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

// The elements [offset, offset + lanes) that a constant index addresses, or nothing.
struct Slot {
  int64_t offset;
  int lanes;
};

std::optional<Slot> constant_slot(const std::vector<Expr>& indices) {
  if (indices.size() != 1) return std::nullopt;
  const Expr& index = indices[0];
  if (const int64_t* c = as_const_int(index)) return Slot{*c, 1};
  if (const auto* r = index.as<Ramp>()) {
    const int64_t* base = as_const_int(r->base);
    if (base != nullptr && is_const_int(r->stride, 1)) return Slot{*base, r->lanes};
  }
  return std::nullopt;
}

// The number of elements of a tile (a one-dimensional buffer of constant size).
int64_t extent_of(const Buffer& tile) {
  return *as_const_int(tile.shape[0]);
}

// What a loop does with one buffer: the slots (offset -> lanes) it accesses and those it
// stores. Every slot is copied in (a store under a condition may not run, and the copy out
// must then write back the old value).
struct Uses {
  std::map<int64_t, int> accessed, stored;
  bool promotable = true;
};

Uses uses_in(const For& loop, const Var* data) {
  Uses uses;
  auto add = [&](const std::vector<Expr>& indices, bool is_store) {
    std::optional<Slot> slot = constant_slot(indices);
    if (!slot || slot->offset < 0) {
      uses.promotable = false;
      return;
    }
    auto [it, inserted] = uses.accessed.emplace(slot->offset, slot->lanes);
    if (!inserted && it->second != slot->lanes) uses.promotable = false;
    if (is_store) uses.stored[slot->offset] = slot->lanes;
  };
  post_order_visit(loop.body, [&](const Node* node) {
    switch (node->kind()) {
      case NodeKind::BufferLoad: {
        const auto* load = static_cast<const BufferLoad*>(node);
        if (load->buffer->data.get() == data) add(load->indices, false);
        break;
      }
      case NodeKind::BufferStore: {
        const auto* store = static_cast<const BufferStore*>(node);
        if (store->buffer->data.get() == data) add(store->indices, true);
        break;
      }
      case NodeKind::Var:  // the buffer's address, used as a value
        if (node == data) uses.promotable = false;
        break;
      case NodeKind::Call: {  // address_of(B[i]): the address escapes
        const auto* call = static_cast<const Call*>(node);
        if (call->op != Builtin::AddressOf) break;
        for (const Expr& arg : call->args) {
          const auto* load = arg.as<BufferLoad>();
          if (load != nullptr && load->buffer->data.get() == data) uses.promotable = false;
        }
        break;
      }
      case NodeKind::For: {
        ForKind kind = static_cast<const For*>(node)->kind;
        if (kind != ForKind::kSerial && kind != ForKind::kUnrolled) uses.promotable = false;
        break;
      }
      default:
        break;
    }
  });
  if (uses.stored.empty()) uses.promotable = false;
  // Two different slots must not overlap (the copy would be split differently than the uses).
  int64_t end = std::numeric_limits<int64_t>::min();
  for (const auto& [offset, lanes] : uses.accessed) {
    if (offset < end) uses.promotable = false;
    end = offset + lanes;
  }
  return uses;
}

// The accesses of buffers, by data variable, moved to other buffers.
class BufferSwap : public IRMutator {
 public:
  explicit BufferSwap(std::unordered_map<const Var*, Ref<Buffer>> to) : to_(std::move(to)) {}
  using IRMutator::mutate;

 protected:
  Ref<Buffer> mutate_buffer(const Ref<Buffer>& buffer) override {
    auto it = to_.find(buffer->data.get());
    return it == to_.end() ? buffer : it->second;
  }

 private:
  std::unordered_map<const Var*, Ref<Buffer>> to_;
};

// `to[slot] = from[slot]` for the elements of each slot below `extent`, the tile's size: the
// lanes past its end of a vector access under a mask (the partial last vector of a row that no
// vector divides) are no elements of the tile, and copying them would read and write past it.
std::vector<Stmt> copies(const Ref<Buffer>& from, const Ref<Buffer>& to,
                         const std::map<int64_t, int>& slots, int64_t extent) {
  std::vector<Stmt> result;
  for (const auto& [offset, slot_lanes] : slots) {
    int lanes = static_cast<int>(std::min<int64_t>(slot_lanes, extent - offset));
    if (lanes <= 0) continue;
    DataType index_type = from->shape[0]->dtype;
    Expr index = make_const(index_type, offset);
    if (lanes > 1) {
      index = make<Ramp>(index_type.with_lanes(lanes), index, make_const(index_type, 1), lanes);
    }
    Expr value = make<BufferLoad>(from->dtype.with_lanes(lanes), from, std::vector<Expr>{index});
    result.push_back(make<BufferStore>(to, value, std::vector<Expr>{index}));
  }
  return result;
}

class Promoter : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const Allocate* op) override {
    const Buffer& b = *op->buffer;
    bool tile = b.scope == "local" && b.shape.size() == 1 && b.strides.empty() &&
                as_const_int(b.shape[0]) != nullptr;
    if (tile) tiles_.push_back(op->buffer);
    Stmt result = IRMutator::visit(op);
    if (tile) tiles_.pop_back();
    return result;
  }

  Stmt visit(const For* op) override {
    if (op->kind != ForKind::kSerial && op->kind != ForKind::kUnrolled) {
      return IRMutator::visit(op);
    }
    struct Promotion {
      Ref<Buffer> tile, copy;
      Uses uses;
    };
    std::vector<Promotion> here;
    for (const Ref<Buffer>& tile : tiles_) {
      if (promoted_.count(tile->data.get()) != 0) continue;
      Uses uses = uses_in(*op, tile->data.get());
      if (!uses.promotable) continue;
      auto copy = ir::copy(tile.get());
      copy->name = tile->name + "_reg";
      copy->data = make<Var>(copy->name, tile->data->dtype);
      // The copy holds every lane the loop reaches, those past the tile's end included.
      const auto& [last_offset, last_lanes] = *uses.accessed.rbegin();
      if (last_offset + last_lanes > extent_of(*tile)) {
        copy->shape = {make_const(tile->shape[0]->dtype, last_offset + last_lanes)};
      }
      here.push_back({tile, copy, std::move(uses)});
    }
    for (const Promotion& p : here) promoted_.insert(p.tile->data.get());
    Stmt loop = IRMutator::visit(op);
    for (const Promotion& p : here) promoted_.erase(p.tile->data.get());
    if (here.empty()) return loop;
    std::unordered_map<const Var*, Ref<Buffer>> to;
    for (const Promotion& p : here) to[p.tile->data.get()] = p.copy;
    Stmt result = BufferSwap(std::move(to)).mutate(loop);
    for (auto it = here.rbegin(); it != here.rend(); ++it) {
      int64_t extent = extent_of(*it->tile);
      std::vector<Stmt> body = copies(it->tile, it->copy, it->uses.accessed, extent);
      body.push_back(result);
      for (Stmt& s : copies(it->copy, it->tile, it->uses.stored, extent)) {
        body.push_back(std::move(s));
      }
      result = make<Allocate>(it->copy, seq(std::move(body)));
    }
    return result;
  }

 private:
  std::vector<Ref<Buffer>> tiles_;           // the "local" allocations around
  std::unordered_set<const Var*> promoted_;  // those a loop around promotes already
};

}  // namespace

Ref<PrimFunc> promote_to_registers(const Ref<PrimFunc>& func) {
  return with_body(func, Promoter().mutate(func->body));
}

}  // namespace kiln::tir
