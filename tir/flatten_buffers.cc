// flatten_buffers: gives every buffer a one-dimensional twin on the same storage and rewrites
// each access to the twin at the element offset of its indices.
#include "kiln/tir/flatten_buffers.h"

#include <cstdint>
#include <limits>
#include <unordered_map>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

bool has_offset(const Buffer& buffer) {
  return buffer.elem_offset.defined() && !is_const_int(buffer.elem_offset, 0);
}

bool is_flat(const Buffer& buffer) {
  if (buffer.ndim() != 1 || has_offset(buffer)) return false;
  return buffer.strides.empty() || is_const_int(buffer.strides[0], 1);
}

// The number of elements of a constant shape, or -1 when a dimension is symbolic (saturates at
// int64's maximum).
int64_t constant_size(const Buffer& buffer) {
  int64_t size = 1;
  for (const Expr& extent : buffer.shape) {
    const int64_t* c = as_const_int(extent);
    if (c == nullptr) return -1;
    if (*c != 0 && size > std::numeric_limits<int64_t>::max() / *c) {
      return std::numeric_limits<int64_t>::max();
    }
    size *= *c;
  }
  return size;
}

// `index` computed in `dtype` (an integer type at least as wide): integer arithmetic of a
// narrower type is redone in `dtype` rather than cast afterwards, so that i * 100000 + j on int32
// variables does not wrap before it becomes an int64 offset. Index arithmetic never overflows
// (kiln/ir/expr.h), so the value is the same wherever the narrow one did not wrap.
Expr widen_index(const Expr& index, DataType dtype) {
  DataType t = index->dtype;
  DataType target = dtype.with_lanes(t.lanes());
  if (t == target) return index;
  if (!t.is_integer() || t.bits() >= dtype.bits()) return cast(target, index);
  auto binary = [&](const BinaryNode* op, Expr (*build)(Expr, Expr)) {
    return build(widen_index(op->a, dtype), widen_index(op->b, dtype));
  };
  switch (index->kind()) {
    case NodeKind::IntImm:
      return make_const(target, *as_const_int(index));
    case NodeKind::Add:
      return binary(index.as<Add>(), &add);
    case NodeKind::Sub:
      return binary(index.as<Sub>(), &sub);
    case NodeKind::Mul:
      return binary(index.as<Mul>(), &mul);
    case NodeKind::FloorDiv:
      return binary(index.as<FloorDiv>(), &floordiv);
    case NodeKind::FloorMod:
      return binary(index.as<FloorMod>(), &floormod);
    case NodeKind::Min:
      return binary(index.as<Min>(), &min);
    case NodeKind::Max:
      return binary(index.as<Max>(), &max);
    case NodeKind::Ramp: {
      const auto* r = index.as<Ramp>();
      return ramp(widen_index(r->base, dtype), widen_index(r->stride, dtype), r->lanes);
    }
    case NodeKind::Broadcast: {
      const auto* b = index.as<Broadcast>();
      return broadcast(widen_index(b->value, dtype), b->lanes);
    }
    case NodeKind::Select: {
      const auto* s = index.as<Select>();
      return select(s->condition, widen_index(s->true_value, dtype),
                    widen_index(s->false_value, dtype));
    }
    default:
      return cast(target, index);
  }
}

class Flattener : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Ref<Buffer> mutate_buffer(const Ref<Buffer>& buffer) override { return flat(buffer).buffer; }

  Expr visit(const BufferLoad* op) override {
    std::vector<Expr> indices = op->indices;
    mutate_all(&indices);
    const Flat& f = flat(op->buffer);
    indices = {offset(*op->buffer, f, indices)};
    if (f.buffer.same_as(op->buffer) && indices == op->indices) return op;
    return make<BufferLoad>(op->dtype, f.buffer, std::move(indices));
  }

  Stmt visit(const BufferStore* op) override {
    Expr value = mutate(op->value);
    std::vector<Expr> indices = op->indices;
    mutate_all(&indices);
    const Flat& f = flat(op->buffer);
    indices = {offset(*op->buffer, f, indices)};
    if (f.buffer.same_as(op->buffer) && indices == op->indices && value.same_as(op->value)) {
      return op;
    }
    return make<BufferStore>(f.buffer, value, std::move(indices));
  }

  Stmt visit(const BlockRealize* op) override {
    user_error(ErrorKind::kValue) << "flatten_buffers: block \"" << op->block->name
                                  << "\" is still present; run lower_opaque_block first";
  }

 private:
  // The flat twin of a buffer and the type of its offsets.
  struct Flat {
    Ref<Buffer> buffer;
    DataType index_dtype;
  };

  const Flat& flat(const Ref<Buffer>& buffer) {
    auto it = flats_.find(buffer.get());
    if (it != flats_.end()) return it->second;
    Flat f;
    f.index_dtype = index_dtype(*buffer);
    if (is_flat(*buffer)) {
      f.buffer = buffer;
    } else {
      auto twin = copy(buffer.get());
      twin->shape = {extent(*buffer, f.index_dtype)};
      twin->strides = {};
      twin->elem_offset = make_zero(f.index_dtype);
      f.buffer = twin;
    }
    return flats_.emplace(buffer.get(), f).first->second;
  }

  // The type of a buffer's flat offsets: int32 when every offset provably fits it (the
  // buffer spans at most INT32_MAX elements), else int64. A symbolic dimension of an int32
  // variable may be up to INT32_MAX by itself, so a buffer of two symbolic dimensions, or of
  // one and a constant > 1, is indexed in int64: (n, 4096) with n = 600000 spans 2.46e9
  // elements.
  DataType index_dtype(const Buffer& buffer) {
    DataType wide = DataType::int64();
    for (const Expr& extent : buffer.shape) {
      if (extent->dtype.bits() > 32) return wide;
    }
    for (const Expr& stride : buffer.strides) {
      if (stride->dtype.bits() > 32) return wide;
    }
    int64_t size = constant_size(buffer);
    if (buffer.strides.empty() && size >= 0) {
      return size > std::numeric_limits<int32_t>::max() ? wide : DataType::int32();
    }
    arith::ConstIntBound bound = analyzer_.const_int_bound(extent(buffer, wide));
    return bound.max_value > std::numeric_limits<int32_t>::max() ? wide : DataType::int32();
  }

  // Elements spanned by a buffer: the product of its shape, or the last element reached
  // through its strides plus one.
  Expr extent(const Buffer& buffer, DataType dtype) {
    Expr result = make_one(dtype);
    for (size_t d = 0; d < buffer.shape.size(); ++d) {
      Expr n = cast(dtype, buffer.shape[d]);
      if (buffer.strides.empty()) {
        result = result * n;
      } else {
        result = result + (n - 1) * cast(dtype, buffer.strides[d]);
      }
    }
    return analyzer_.simplify(result);
  }

  // The flat offset of `indices` in `buffer`. A Ramp in the last dimension (with scalar
  // indices elsewhere) gives a Ramp; other vector indices give vector arithmetic.
  Expr offset(const Buffer& buffer, const Flat& f, std::vector<Expr> indices) {
    DataType dtype = f.index_dtype;
    if (is_flat(buffer)) return widen_index(indices[0], dtype);
    for (Expr& e : indices) e = widen_index(e, dtype);
    if (indices.empty()) return make_zero(dtype);
    size_t last = indices.size() - 1;
    const auto* ramp_index = indices[last].as<Ramp>();
    bool scalar_prefix = true;
    for (size_t d = 0; d < last; ++d) scalar_prefix &= indices[d]->dtype.is_scalar();
    Expr base;
    for (size_t d = 0; d < last; ++d) base = accumulate(buffer, base, indices[d], d);
    Expr elem_offset = has_offset(buffer) ? cast(dtype, buffer.elem_offset) : Expr();
    if (ramp_index != nullptr && scalar_prefix) {
      base = accumulate(buffer, base, ramp_index->base, last);
      if (elem_offset.defined()) base = base + elem_offset;
      Expr stride = ramp_index->stride;
      if (!buffer.strides.empty()) stride = stride * cast(dtype, buffer.strides[last]);
      return ramp(base, stride, ramp_index->lanes);
    }
    Expr result = accumulate(buffer, base, indices[last], last);
    if (elem_offset.defined()) result = result + elem_offset;
    return result->dtype.is_vector() ? as_ramp(result) : result;
  }

  // A vector offset that is affine in the lane, e.g. (b + ramp(0, 1, 64) // 4) * 4 +
  // ramp(0, 1, 64) % 4 (a tile read per dimension by a tensor intrinsic), as one Ramp, so that
  // it stays one contiguous vector access; anything else is returned as it is.
  Expr as_ramp(const Expr& index) {
    int lanes = index->dtype.lanes();
    Ref<Var> lane = make_var("lane", index->dtype.element_of());
    Expr scalar = lane_form(index, lane);
    if (!scalar.defined()) return index;
    arith::Analyzer analyzer;
    analyzer.bind(lane, Range{make_zero(lane->dtype), make_const(lane->dtype, lanes)});
    Expr first =
        analyzer.simplify(substitute(scalar, VarMap{{lane.get(), make_zero(lane->dtype)}}));
    Expr stride =
        analyzer.simplify(substitute(scalar, VarMap{{lane.get(), make_one(lane->dtype)}}) - first);
    if (uses_var(first, [&](const Var* v) { return v == lane.get(); }) ||
        uses_var(stride, [&](const Var* v) { return v == lane.get(); }) ||
        !analyzer.can_prove_equal(scalar, first + stride * Expr(lane))) {
      return index;
    }
    return ramp(first, stride, lanes);
  }

  // The value of lane `lane` of a vector integer expression as a scalar expression, or null
  // for a form this does not follow.
  static Expr lane_form(const Expr& e, const Ref<Var>& lane) {
    if (e->dtype.is_scalar()) return e;
    if (const auto* r = e.as<Ramp>()) return r->base + r->stride * cast(r->base->dtype, lane);
    if (const auto* b = e.as<Broadcast>()) return b->value;
    auto binary = [&](const BinaryNode* op, Expr (*build)(Expr, Expr)) -> Expr {
      Expr a = lane_form(op->a, lane), b = lane_form(op->b, lane);
      return a.defined() && b.defined() ? build(a, b) : Expr();
    };
    switch (e->kind()) {
      case NodeKind::Add:
        return binary(e.as<Add>(), &add);
      case NodeKind::Sub:
        return binary(e.as<Sub>(), &sub);
      case NodeKind::Mul:
        return binary(e.as<Mul>(), &mul);
      case NodeKind::FloorDiv:
        return binary(e.as<FloorDiv>(), &floordiv);
      case NodeKind::FloorMod:
        return binary(e.as<FloorMod>(), &floormod);
      default:
        return Expr();
    }
  }

  // Adds dimension d's index to the offset of the dimensions before it.
  Expr accumulate(const Buffer& buffer, const Expr& prefix, const Expr& index, size_t d) {
    DataType dtype = index->dtype.element_of();
    if (buffer.strides.empty()) {
      if (!prefix.defined()) return index;
      return prefix * cast(dtype, buffer.shape[d]) + index;
    }
    Expr term = index * cast(dtype, buffer.strides[d]);
    return prefix.defined() ? prefix + term : term;
  }

  std::unordered_map<const Buffer*, Flat> flats_;
  arith::Analyzer analyzer_;
};

}  // namespace

Ref<PrimFunc> flatten_buffers(const Ref<PrimFunc>& func) {
  return with_body(func, Flattener().mutate(func->body));
}

}  // namespace kiln::tir
