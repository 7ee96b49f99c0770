// vectorize_loops: widens the body of each vectorized loop to vector lanes, or makes the loop
// serial with the reason recorded when the body does not allow it.
#include "kiln/tir/vectorize_loops.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

// Why a loop's body could not be vectorized; caught at the loop, which then stays serial.
struct VectorizeFailure {
  std::string reason;
};

template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw VectorizeFailure{os.str()};
}

int lanes_of(const Expr& e) {
  return e->dtype.lanes();
}

// base and stride of e seen as a ramp: a Ramp, or a scalar / Broadcast with stride 0.
bool ramp_parts(const Expr& e, Expr* base, Expr* stride) {
  if (const auto* r = e.as<Ramp>()) {
    *base = r->base;
    *stride = r->stride;
    return true;
  }
  if (const auto* b = e.as<Broadcast>()) {
    *base = b->value;
  } else if (lanes_of(e) == 1) {
    *base = e;
  } else {
    return false;
  }
  *stride = make_zero((*base)->dtype);
  return true;
}

// a + b, a - b and a * b of ramp parts, without the + 0 and * 1 a ramp of the loop would add.
Expr plus(const Expr& a, const Expr& b) {
  if (is_const_int(a, 0)) return b;
  if (is_const_int(b, 0)) return a;
  return add(a, b);
}
Expr minus(const Expr& a, const Expr& b) {
  return is_const_int(b, 0) ? a : sub(a, b);
}
Expr times(const Expr& a, const Expr& b) {
  if (is_const_int(a, 1)) return b;
  if (is_const_int(b, 1)) return a;
  return mul(a, b);
}

// Builtins computed lane by lane, which a vector argument simply widens.
bool is_elementwise(Builtin op) {
  switch (op) {
    case Builtin::AddressOf:
    case Builtin::CallPureExtern:
    case Builtin::CallExtern:
    case Builtin::CallLLVMPureIntrin:
    case Builtin::StorageSync:
    case Builtin::DeviceLaunch:
    case Builtin::DeviceAlloc:
    case Builtin::DeviceFree:
    case Builtin::WarpShuffleDown:
    case Builtin::PtxMma:
    case Builtin::PtxLdmatrix:
    case Builtin::PtxCpAsyncCommitGroup:
    case Builtin::PtxCpAsyncWaitGroup:
    case Builtin::PackedArgDeviceId:
    case Builtin::PackedArgData:
    case Builtin::PackedArgShape:
    case Builtin::PackedArgInt:
    case Builtin::PackedArgFloat:
      return false;
    default:
      return true;
  }
}

// Rewrites the body of one vectorized loop on `lanes` lanes; throws VectorizeFailure.
class Vectorizer : public IRMutator {
 public:
  Vectorizer(const For* loop, int lanes, arith::Analyzer* ana,
             const std::unordered_set<const Var*>& private_buffers, bool masked_memory)
      : loop_(loop),
        lanes_(lanes),
        ana_(ana),
        private_(private_buffers),
        masked_memory_(masked_memory) {
    DataType t = loop->loop_var->dtype;
    ramp_ = make<Ramp>(t.with_lanes(lanes), cast(t, loop->min), make_const(t, 1), lanes);
  }

  Stmt run(const Stmt& body) {
    Stmt result = mutate(body);
    check_accesses();
    return result;
  }

  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr widen(const Expr& e) const {
    if (lanes_of(e) == lanes_) return e;
    return make<Broadcast>(e->dtype.with_lanes(lanes_), e, lanes_);
  }

  Expr visit(const Var* op) override {
    if (op == loop_->loop_var.get()) return ramp_;
    auto it = let_vars_.find(op);
    return it == let_vars_.end() ? Expr(op) : Expr(it->second);
  }

  template <class T>
  Expr binary(const T* op) {
    Expr a = mutate(op->a);
    Expr b = mutate(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return op;
    if (lanes_of(a) == 1 && lanes_of(b) == 1) return make<T>(op->dtype, a, b);
    return make<T>(op->dtype.with_lanes(lanes_), widen(a), widen(b));
  }

  // `a op b` as a ramp when both are ramps or invariant (op is + or -).
  template <class T>
  Expr ramp_sum(const T* op, Expr (*combine)(const Expr&, const Expr&)) {
    Expr a = mutate(op->a);
    Expr b = mutate(op->b);
    Expr base_a, stride_a, base_b, stride_b;
    if ((a.is<Ramp>() || b.is<Ramp>()) && ramp_parts(a, &base_a, &stride_a) &&
        ramp_parts(b, &base_b, &stride_b)) {
      return make<Ramp>(op->dtype.with_lanes(lanes_), combine(base_a, base_b),
                        combine(stride_a, stride_b), lanes_);
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return op;
    if (lanes_of(a) == 1 && lanes_of(b) == 1) return make<T>(op->dtype, a, b);
    return make<T>(op->dtype.with_lanes(lanes_), widen(a), widen(b));
  }

  Expr visit(const Add* op) override { return ramp_sum(op, &plus); }
  Expr visit(const Sub* op) override { return ramp_sum(op, &minus); }

  Expr visit(const Mul* op) override {
    Expr a = mutate(op->a);
    Expr b = mutate(op->b);
    if (a.is<Ramp>() && lanes_of(b) == 1) std::swap(a, b);
    if (const auto* r = b.as<Ramp>(); r != nullptr && lanes_of(a) == 1) {
      return make<Ramp>(op->dtype.with_lanes(lanes_), times(r->base, a), times(r->stride, a),
                        lanes_);
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return op;
    if (lanes_of(a) == 1 && lanes_of(b) == 1) return make<Mul>(op->dtype, a, b);
    return make<Mul>(op->dtype.with_lanes(lanes_), widen(a), widen(b));
  }

  Expr visit(const Div* op) override { return binary(op); }
  Expr visit(const Mod* op) override { return binary(op); }
  Expr visit(const FloorDiv* op) override { return binary(op); }
  Expr visit(const FloorMod* op) override { return binary(op); }
  Expr visit(const Min* op) override { return binary(op); }
  Expr visit(const Max* op) override { return binary(op); }
  Expr visit(const EQ* op) override { return binary(op); }
  Expr visit(const NE* op) override { return binary(op); }
  Expr visit(const LT* op) override { return binary(op); }
  Expr visit(const LE* op) override { return binary(op); }
  Expr visit(const GT* op) override { return binary(op); }
  Expr visit(const GE* op) override { return binary(op); }
  Expr visit(const And* op) override { return binary(op); }
  Expr visit(const Or* op) override { return binary(op); }

  Expr visit(const Not* op) override {
    Expr a = mutate(op->a);
    if (a.same_as(op->a)) return op;
    return make<Not>(op->dtype.with_lanes(lanes_of(a)), a);
  }

  Expr visit(const Select* op) override {
    Expr c = mutate(op->condition);
    Expr t = mutate(op->true_value);
    Expr f = mutate(op->false_value);
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) {
      return op;
    }
    if (lanes_of(c) == 1 && lanes_of(t) == 1 && lanes_of(f) == 1) {
      return make<Select>(op->dtype, c, t, f);
    }
    return make<Select>(op->dtype.with_lanes(lanes_), widen(c), widen(t), widen(f));
  }

  Expr visit(const Cast* op) override {
    Expr value = mutate(op->value);
    if (value.same_as(op->value)) return op;
    if (lanes_of(value) == 1) return make<Cast>(op->dtype, value);
    if (const auto* r = value.as<Ramp>(); r != nullptr && op->dtype.is_integer()) {
      return make<Ramp>(op->dtype.with_lanes(lanes_), cast(op->dtype, r->base),
                        cast(op->dtype, r->stride), lanes_);
    }
    return make<Cast>(op->dtype.with_lanes(lanes_), value);
  }

  Expr visit(const Ramp* op) override {
    fail("the body already has vector expressions (", to_script(Expr(op)), ")");
  }
  Expr visit(const Broadcast* op) override {
    fail("the body already has vector expressions (", to_script(Expr(op)), ")");
  }
  Expr visit(const Reduce* op) override { fail("the body has a reduction (Reduce)"); }

  Expr visit(const Let* op) override {
    Expr value = mutate(op->value);
    if (lanes_of(value) == 1) {
      Expr body = mutate(op->body);
      if (value.same_as(op->value) && body.same_as(op->body)) return op;
      return make<Let>(body->dtype, op->var, value, body);
    }
    auto var = make<Var>(op->var->name, op->var->dtype.with_lanes(lanes_));
    let_vars_[op->var.get()] = var;
    Expr body = mutate(op->body);
    return make<Let>(body->dtype, var, value, body);
  }

  Expr visit(const Call* op) override {
    const char* name = builtin_name(op->op);
    if (!builtin_is_pure(op->op)) fail("it calls ", name, ", which has side effects");
    if (op->op == Builtin::IfThenElse) return vectorize_if_then_else(op);
    std::vector<Expr> args = op->args;
    bool changed = mutate_all(&args);
    if (!changed) return op;
    bool vector = false;
    for (const Expr& a : args) vector |= lanes_of(a) > 1;
    if (!vector) return make<Call>(op->dtype, op->op, std::move(args));
    if (!is_elementwise(op->op)) {
      fail("it calls ", name, " with arguments that vary across lanes");
    }
    for (Expr& a : args) a = widen(a);
    return make<Call>(op->dtype.with_lanes(lanes_), op->op, std::move(args));
  }

  Expr visit(const BufferLoad* op) override {
    if (op->dtype.lanes() > 1) {
      fail("the body already has vector expressions (", to_script(Expr(op)), ")");
    }
    std::vector<Expr> indices = op->indices;
    bool changed = mutate_all(&indices);
    Ref<Buffer> buffer = op->buffer;
    changed |= remap_per_lane(&buffer, &indices);
    check_vector_index(*buffer, indices);
    accesses_[buffer->data.get()].push_back({false, indices.back(), buffer->name});
    if (!changed) return op;
    return make<BufferLoad>(op->dtype.with_lanes(lanes_of(indices.back())), buffer,
                            std::move(indices));
  }

  Stmt visit(const BufferStore* op) override {
    Expr value = mutate(op->value);
    std::vector<Expr> indices = op->indices;
    mutate_all(&indices);
    Ref<Buffer> buffer = op->buffer;
    remap_per_lane(&buffer, &indices);
    check_vector_index(*buffer, indices);
    const Expr& index = indices.back();
    if (lanes_of(index) == 1) {
      if (lanes_of(value) > 1) {
        fail("it stores a vector value into the single location ", buffer->name, "[",
             to_script(index), "] (a reduction across lanes)");
      }
      fail("the store to ", buffer->name, "[", to_script(index), "] does not vary across lanes");
    }
    const auto* r = index.as<Ramp>();
    if (r == nullptr || !ana_->can_prove(ne(r->stride, make_zero(r->stride->dtype)))) {
      fail("the store to ", buffer->name, " has the index ", to_script(index),
           ", which is not a ramp with a nonzero stride (distinct addresses)");
    }
    accesses_[buffer->data.get()].push_back({true, index, buffer->name});
    return make<BufferStore>(buffer, widen(value), std::move(indices));
  }

  Stmt visit(const For* op) override {
    Expr min = mutate(op->min);
    Expr extent = mutate(op->extent);
    if (lanes_of(min) > 1 || lanes_of(extent) > 1) {
      fail("the range of the inner loop ", op->loop_var->name, " varies across lanes");
    }
    if (op->kind != ForKind::kSerial && op->kind != ForKind::kUnrolled) {
      fail("it contains the ", for_kind_name(op->kind), " loop ", op->loop_var->name);
    }
    arith::ConstraintScope scope(ana_, op->loop_var, Range{min, extent});
    Stmt body = mutate(op->body);
    if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return op;
    auto loop = copy(op);
    loop->min = min;
    loop->extent = extent;
    loop->body = body;
    return loop;
  }

  Stmt visit(const IfThenElse* op) override {
    Expr c = mutate(op->condition);
    if (lanes_of(c) > 1) {
      if (Stmt nested = nest_invariant_conjuncts(op); nested.defined()) return nested;
      if (Stmt tested = test_extreme_lane(op, c); tested.defined()) return tested;
      if (Stmt blended = blend_guarded_store(op, c, false); blended.defined()) return blended;
      if (Stmt masked = masked_store(op, c, false); masked.defined()) return masked;
      if (Stmt moved = move_into_body(op, c); moved.defined()) return moved;
      fail("an if statement's condition ", to_script(op->condition),
           " varies across lanes and its branches have side effects");
    }
    // The branches know the condition: a load it keeps in bounds needs no mask there.
    Stmt then_case, else_case;
    {
      arith::ConstraintScope holds(ana_, op->condition);
      then_case = mutate(op->then_case);
    }
    if (op->else_case.defined()) {
      arith::ConstraintScope fails(ana_, make<Not>(op->condition->dtype, op->condition));
      else_case = mutate(op->else_case);
    }
    if (c.same_as(op->condition) && then_case.same_as(op->then_case) &&
        else_case.same_as(op->else_case)) {
      return op;
    }
    return make<IfThenElse>(c, then_case, else_case);
  }

  Stmt visit(const AssertStmt* op) override {
    Expr c = mutate(op->condition);
    if (lanes_of(c) > 1) fail("an assert's condition varies across lanes");
    Stmt body = mutate(op->body);
    if (c.same_as(op->condition) && body.same_as(op->body)) return op;
    return make<AssertStmt>(c, op->message, body);
  }

  Stmt visit(const LetStmt* op) override {
    Expr value = mutate(op->value);
    if (lanes_of(value) == 1) {
      Stmt body = mutate(op->body);
      if (value.same_as(op->value) && body.same_as(op->body)) return op;
      return make<LetStmt>(op->var, value, body);
    }
    auto var = make<Var>(op->var->name, op->var->dtype.with_lanes(lanes_));
    let_vars_[op->var.get()] = var;
    return make<LetStmt>(var, value, mutate(op->body));
  }

  // A buffer allocated inside the loop gets one copy per lane: element j of lane l is at
  // j * lanes + l, so that each lane's accesses are one contiguous vector access.
  Stmt visit(const Allocate* op) override {
    const Buffer& b = *op->buffer;
    if (b.ndim() != 1 || !b.strides.empty()) {
      fail("it allocates ", b.name, ", which is not flattened to one dimension");
    }
    auto widened = copy(op->buffer.get());
    widened->data = make<Var>(b.data->name, b.data->dtype);
    widened->shape = {mul(b.shape[0], make_const(b.shape[0]->dtype, lanes_))};
    per_lane_[b.data.get()] = widened;
    widened_.insert(widened->data.get());
    return make<Allocate>(widened, mutate(op->body));
  }

  Stmt visit(const Block* op) override { fail("it contains the block ", op->name); }
  Stmt visit(const BlockRealize* op) override { fail("it contains the block ", op->block->name); }

 private:
  struct Access {
    bool is_store;
    Expr index;
    std::string buffer_name;
  };

  // Accesses of a per-lane buffer move to the lane's copy; returns whether it is one.
  bool remap_per_lane(Ref<Buffer>* buffer, std::vector<Expr>* indices) {
    auto it = per_lane_.find((*buffer)->data.get());
    if (it == per_lane_.end()) return false;
    Expr& index = indices->back();
    if (indices->size() != 1 || lanes_of(index) > 1) {
      fail("the accesses of ", (*buffer)->name, ", allocated inside the loop, vary across lanes");
    }
    DataType t = index->dtype;
    index = make<Ramp>(t.with_lanes(lanes_), mul(index, make_const(t, lanes_)), make_const(t, 1),
                       lanes_);
    *buffer = it->second;
    return true;
  }

  void check_vector_index(const Buffer& buffer, const std::vector<Expr>& indices) {
    for (size_t i = 0; i + 1 < indices.size(); ++i) {
      if (lanes_of(indices[i]) > 1) {
        fail("the access of ", buffer.name, " varies across lanes in a dimension other than ",
             "the last (the buffer is not flattened)");
      }
    }
  }

  // Whether every load in `e` is in bounds for every lane (the loop variable over its range).
  bool loads_in_bounds(const Expr& e) {
    bool safe = true;
    post_order_visit(e, [&](const Node* node) {
      if (!safe || node->kind() != NodeKind::BufferLoad) return;
      const auto* load = static_cast<const BufferLoad*>(node);
      safe = load->indices.size() == load->buffer->shape.size();
      for (size_t i = 0; i < load->indices.size() && safe; ++i) {
        const Expr& index = load->indices[i];
        safe = ana_->can_prove(ge(index, make_zero(index->dtype))) &&
               ana_->can_prove(lt(index, cast(index->dtype, load->buffer->shape[i])));
      }
    });
    return safe;
  }

  // `if c: B[i] = v` with c varying across lanes, kept as an if statement whose vector condition
  // the code generator turns into a store of only the lanes where it holds (a masked store or
  // scatter), with the loads of v that may be out of bounds masked by c too; null without
  // masked memory access, when the branch is not one store or when the store's indices load
  // out of bounds (they are evaluated on every lane). `lane_runs`: see test_extreme_lane.
  Stmt masked_store(const IfThenElse* op, const Expr& c, bool lane_runs) {
    if (!masked_memory_ || op->else_case.defined() || !op->then_case.is<BufferStore>()) {
      return Stmt();
    }
    Stmt vector = mutate(op->then_case);
    const auto* store = vector.as<BufferStore>();
    for (const Expr& index : store->indices) {
      if (!loads_in_bounds(index)) return Stmt();
    }
    Expr value = store->value;
    if (!loads_in_bounds(value)) {
      value = mask_loads(value, c, "an if statement's condition " + to_script(op->condition),
                         lane_runs);
    }
    return make<IfThenElse>(c, make<BufferStore>(store->buffer, value, store->indices));
  }

  // `if c: S` without else, c varying across lanes and reading no memory, S no single store:
  // the if moved into S, so that each store is guarded (masked) on its own. Over a sequence, each
  // statement gets a copy of it; around an if without else that does not vary, it goes inside
  // that if; around one that varies, the two conditions are joined. The tail of a loop split by
  // a factor that does not divide it, around a reduction's init and update:
  //   if j < 5: (if k == 0: C[j] = 0); C[j] = C[j] + A[k] * B[k, j]
  // becomes `if k == 0: (if j < 5: C[j] = 0); if j < 5: C[j] = ...`. Around a let, the let
  // goes out: `if c: (let v = e: S)` becomes `let v = e: (if c: S)`, e evaluated on every lane
  // with its loads that may be out of bounds masked by c (the guarded tail of an argmax's
  // rfactor, whose update binds the new index and value before storing them). Null where S is
  // none of these. `c` is the vector condition.
  Stmt move_into_body(const IfThenElse* op, const Expr& c) {
    auto reads_memory = [](const Expr& e) {
      bool reads = false;
      post_order_visit(
          e, [&reads](const Node* node) { reads = reads || node->kind() == NodeKind::BufferLoad; });
      return reads;
    };
    if (op->else_case.defined() || reads_memory(op->condition)) return Stmt();
    if (const auto* let = op->then_case.as<LetStmt>()) {
      Expr value = mutate(let->value);
      if (!loads_in_bounds(let->value)) {
        if (!masked_memory_ || !invariant_loads_in_bounds(let->value, false)) return Stmt();
        value = mask_loads(value, c, "an if statement's condition " + to_script(op->condition));
      }
      Ref<Var> var = let->var;
      if (lanes_of(value) > 1) {
        var = make<Var>(let->var->name, let->var->dtype.with_lanes(lanes_));
        let_vars_[let->var.get()] = var;
      }
      return make<LetStmt>(var, value, mutate(make<IfThenElse>(op->condition, let->body)));
    }
    if (const auto* body = op->then_case.as<SeqStmt>()) {
      std::vector<Stmt> guarded;
      for (const Stmt& stmt : body->seq) guarded.push_back(make<IfThenElse>(op->condition, stmt));
      return mutate(seq(std::move(guarded)));
    }
    const auto* inner = op->then_case.as<IfThenElse>();
    if (inner == nullptr || inner->else_case.defined() || reads_memory(inner->condition)) {
      return Stmt();
    }
    if (lanes_of(mutate(inner->condition)) == 1) {
      return mutate(
          make<IfThenElse>(inner->condition, make<IfThenElse>(op->condition, inner->then_case)));
    }
    return mutate(make<IfThenElse>(logical_and(op->condition, inner->condition), inner->then_case));
  }

  // `if a and c: S` without else, where a does not vary across lanes and c does, as
  // `if a: (if c: S)`: the scalar test skips the whole vector where it fails, and S is
  // vectorized knowing a (the last partial tile of a register tile in both dimensions: the
  // broadcast A[i, k] of a row under `i < m` loads in bounds there, B[k, j] under `j < n` is
  // masked). Null where the condition has no conjunct of each kind.
  Stmt nest_invariant_conjuncts(const IfThenElse* op) {
    if (op->else_case.defined()) return Stmt();
    Expr invariant, varying;
    for (const Expr& e : conjuncts(op->condition)) {
      Expr& side = lanes_of(mutate(e)) == 1 ? invariant : varying;
      side = side.defined() ? logical_and(side, e) : e;
    }
    if (!invariant.defined() || !varying.defined()) return Stmt();
    return mutate(make<IfThenElse>(invariant, make<IfThenElse>(varying, op->then_case)));
  }

  // `if c: B[i] = v` with c varying across lanes whose v loads, the same on every lane, what may
  // be out of bounds (the row of a partial register tile that a fused loop keeps from being
  // peeled: A[(f // 3 * 2 + i) * 39 + k] under `(f // 3 * 2 + i) * 2 < 7`, which the analyzer
  // cannot relate to A's 273 elements), as `if c(l): (if c: B[i] = v)` where l is the lane
  // that holds c whenever any lane does: every term of c a bound affine in the loop variable
  // with a constant step, all satisfied by a first part of the lanes (l the first lane) or all
  // by a last part (l the last). Where c(l) holds, lane l runs the store in the loop, loads
  // included, so they are in bounds. Null where v has no such load, there is no such lane or
  // the store cannot be vectorized even so; `c` is the vector condition.
  Stmt test_extreme_lane(const IfThenElse* op, const Expr& c) {
    const auto* store = op->then_case.as<BufferStore>();
    if (op->else_case.defined() || store == nullptr ||
        invariant_loads_in_bounds(store->value, false)) {
      return Stmt();
    }
    int first = 0, last = 0;  // terms held by a first, a last part of the lanes
    for (const Expr& term : conjuncts(op->condition)) {
      Expr g = as_nonnegative(term), step;
      const int64_t* k = g.defined() ? constant_step(ana_, g, loop_->loop_var, &step) : nullptr;
      if (k == nullptr || *k == 0) return Stmt();
      (*k < 0 ? first : last) += 1;  // g decreasing: it stays >= 0 up to a lane, then fails
    }
    if (first > 0 && last > 0) return Stmt();
    DataType t = loop_->loop_var->dtype;
    Expr lane = cast(t, loop_->min);
    if (last > 0) lane = lane + make_const(t, lanes_ - 1);
    Expr lane_holds = mutate(substitute(op->condition, {{loop_->loop_var.get(), lane}}));
    if (lanes_of(lane_holds) > 1) return Stmt();  // a let of the loop variable in it
    arith::ConstraintScope holds(ana_, lane_holds);
    Stmt vector = blend_guarded_store(op, c, true);
    if (!vector.defined()) vector = masked_store(op, c, true);
    return vector.defined() ? make<IfThenElse>(lane_holds, vector) : Stmt();
  }

  // `if c: B[i] = v` with c varying across lanes, as `B[i] = select(c, v, B[i])`: every lane
  // stores, the old value where c fails. Only for a buffer that no other thread can access
  // meanwhile (private_), with every lane's index in bounds, and v safe to evaluate on every
  // lane or, with masked memory access, its loads that may be out of bounds masked by c (each
  // varies across lanes, or `lane_runs`: see test_extreme_lane); null otherwise. `c` is the
  // vector condition.
  Stmt blend_guarded_store(const IfThenElse* op, const Expr& c, bool lane_runs) {
    const auto* store = op->then_case.as<BufferStore>();
    if (op->else_case.defined() || store == nullptr) return Stmt();
    bool local = per_lane_.count(store->buffer->data.get()) > 0;
    if (!local && private_.count(store->buffer->data.get()) == 0) return Stmt();
    Expr old = make<BufferLoad>(store->buffer->dtype, store->buffer, store->indices);
    if (!loads_in_bounds(old)) return Stmt();
    if (loads_in_bounds(store->value)) {
      return mutate(make<BufferStore>(store->buffer, select(op->condition, store->value, old),
                                      store->indices));
    }
    if (!masked_memory_ || !invariant_loads_in_bounds(store->value, lane_runs)) return Stmt();
    Stmt vector = mutate(make<BufferStore>(store->buffer, store->value, store->indices));
    const auto* widened = vector.as<BufferStore>();
    Expr value = mask_loads(widened->value, c,
                            "an if statement's condition " + to_script(op->condition), lane_runs);
    return make<BufferStore>(widened->buffer,
                             make<Select>(value->dtype, c, value, widen(mutate(old))),
                             widened->indices);
  }

  // Whether each load in `e` that does not vary across lanes is in bounds (a mask can only
  // keep the lanes that vary from loading out of bounds), or, with `lane_runs`, one that `e`
  // evaluates wherever it is evaluated (not in an arm of an if_then_else).
  bool invariant_loads_in_bounds(const Expr& e, bool lane_runs) {
    std::unordered_set<const Node*> in_arms;
    if (lane_runs) {
      post_order_visit(e, [&](const Node* node) {
        const auto* call =
            node->kind() == NodeKind::Call ? static_cast<const Call*>(node) : nullptr;
        if (call == nullptr || call->op != Builtin::IfThenElse) return;
        for (size_t arm = 1; arm < call->args.size(); ++arm) {
          post_order_visit(call->args[arm], [&](const Node* n) { in_arms.insert(n); });
        }
      });
    }
    bool safe = true;
    post_order_visit(e, [&](const Node* node) {
      if (!safe || node->kind() != NodeKind::BufferLoad) return;
      Expr load(static_cast<const BufferLoad*>(node));
      safe = lanes_of(mutate(load)) > 1 || (lane_runs && in_arms.count(node) == 0) ||
             loads_in_bounds(load);
    });
    return safe;
  }

  Expr vectorize_if_then_else(const Call* op) {
    Expr c = mutate(op->args[0]);
    Expr t = mutate(op->args[1]);
    Expr f = mutate(op->args[2]);
    if (lanes_of(c) == 1) {
      if (c.same_as(op->args[0]) && t.same_as(op->args[1]) && f.same_as(op->args[2])) return op;
      int lanes = std::max(lanes_of(t), lanes_of(f));
      if (lanes > 1) {
        t = widen(t);
        f = widen(f);
      }
      return make<Call>(op->dtype.with_lanes(lanes), Builtin::IfThenElse,
                        std::vector<Expr>{c, t, f});
    }
    // Select evaluates both arms on every lane: only when that cannot fault.
    bool t_safe = loads_in_bounds(t), f_safe = loads_in_bounds(f);
    if (t_safe && f_safe) return make<Select>(op->dtype.with_lanes(lanes_), c, widen(t), widen(f));
    std::string guard = "if_then_else(" + to_script(op->args[0]) + ", ...)";
    if (!masked_memory_) fail_guard(guard, "(the target has no masked loads)");
    // Otherwise the loads that may fault load only on the lanes whose arm they are in: an arm
    // that is such a load becomes the then-arm of a vector if_then_else (which loads it only
    // where the condition holds), and the loads inside other arms are masked one by one.
    Expr not_c = make<Not>(c->dtype, c);
    Expr t_lanes = t_safe ? widen(t) : Expr(), f_lanes = f_safe ? widen(f) : Expr();
    if (!t_safe && t.is<BufferLoad>()) {
      if (!f_safe) f_lanes = mask_loads(f, not_c, guard);
      return make<Call>(op->dtype.with_lanes(lanes_), Builtin::IfThenElse,
                        std::vector<Expr>{c, vector_load(t, guard), f_lanes});
    }
    if (!f_safe && f.is<BufferLoad>()) {
      if (!t_safe) t_lanes = mask_loads(t, c, guard);
      return make<Call>(op->dtype.with_lanes(lanes_), Builtin::IfThenElse,
                        std::vector<Expr>{not_c, vector_load(f, guard), t_lanes});
    }
    if (!t_safe) t_lanes = mask_loads(t, c, guard);
    if (!f_safe) f_lanes = mask_loads(f, not_c, guard);
    return make<Select>(op->dtype.with_lanes(lanes_), c, t_lanes, f_lanes);
  }

  // `guard` names the condition: "if_then_else(c, ...)" or "an if statement's condition c".
  [[noreturn]] static void fail_guard(const std::string& guard, const char* why) {
    fail(guard, " varies across lanes and guards a load that may be out of bounds ", why);
  }

  // A load that may be out of bounds as a load on every lane (one that does not vary across
  // lanes reads its element on each), for a vector if_then_else to mask; its indices are
  // evaluated on every lane.
  Expr vector_load(const Expr& e, const std::string& guard) {
    const auto* load = e.as<BufferLoad>();
    for (const Expr& index : load->indices) {
      if (!loads_in_bounds(index)) fail_guard(guard, "with indices that load out of bounds too");
    }
    if (lanes_of(e) == lanes_) return e;
    std::vector<Expr> indices = load->indices;
    Expr& last = indices.back();
    last = make<Broadcast>(last->dtype.with_lanes(lanes_), last, lanes_);
    return make<BufferLoad>(e->dtype.with_lanes(lanes_), load->buffer, std::move(indices));
  }

  // e (whose loads are not all in bounds) on every lane, with each load in it that may be out
  // of bounds loaded only on the lanes where `mask` holds (`if_then_else(mask, load, 0)`); a
  // load masked this way already is loaded only where both masks hold. A load that may be out of
  // bounds and does not vary across lanes fails, unless `invariant_run` (it is in bounds where
  // `e` is evaluated: see test_extreme_lane).
  Expr mask_loads(const Expr& e, const Expr& mask, const std::string& guard,
                  bool invariant_run = false) {
    if (e.is<BufferLoad>()) {
      Expr load = vector_load(e, guard);
      return make<Call>(load->dtype, Builtin::IfThenElse,
                        std::vector<Expr>{mask, load, make_zero(load->dtype)});
    }
    class Masker : public IRMutator {
     public:
      Masker(Vectorizer* v, Expr mask, const std::string& guard, bool invariant_run)
          : v_(v), mask_(std::move(mask)), guard_(guard), invariant_run_(invariant_run) {}
      using IRMutator::mutate;

     protected:
      using IRMutator::visit;
      Expr visit(const BufferLoad* op) override {
        if (v_->loads_in_bounds(op)) return op;
        if (lanes_of(op) == 1) {
          if (invariant_run_) return op;
          fail_guard(guard_, "inside an arm, the same on every lane");
        }
        Expr load = v_->vector_load(op, guard_);
        return make<Call>(load->dtype, Builtin::IfThenElse,
                          std::vector<Expr>{mask_, load, make_zero(load->dtype)});
      }
      // A masked load (the then-arm of a vector if_then_else) is loaded where both masks hold.
      Expr visit(const Call* op) override {
        if (op->op != Builtin::IfThenElse || lanes_of(op->args[0]) == 1 ||
            !op->args[1].is<BufferLoad>()) {
          return IRMutator::visit(op);
        }
        Expr narrowed = make<And>(op->args[0]->dtype, mask_, mutate(op->args[0]));
        return make<Call>(op->dtype, Builtin::IfThenElse,
                          std::vector<Expr>{narrowed, op->args[1], mutate(op->args[2])});
      }

     private:
      Vectorizer* v_;
      Expr mask_;
      const std::string& guard_;
      bool invariant_run_;
    };
    return Masker(this, mask, guard, invariant_run).mutate(widen(e));
  }

  // Lanes run each statement together, so a buffer that is stored must be accessed at one
  // index only, or one lane could read what another writes.
  void check_accesses() const {
    for (const auto& entry : accesses_) {
      // Each lane has its own copy of a buffer allocated inside the loop.
      if (widened_.count(entry.first) > 0) continue;
      const std::vector<Access>& list = entry.second;
      const Access* store = nullptr;
      for (const Access& a : list) {
        if (a.is_store) store = &a;
      }
      if (store == nullptr) continue;
      for (const Access& a : list) {
        if (!structural_equal(a.index, store->index)) {
          fail(a.buffer_name, " is stored at ", to_script(store->index), " and ",
               a.is_store ? "stored" : "loaded", " at ", to_script(a.index),
               " in the same loop (lanes could depend on each other)");
        }
      }
    }
  }

  const For* loop_;
  int lanes_;
  arith::Analyzer* ana_;
  const std::unordered_set<const Var*>& private_;  // data variables of thread-private buffers
  bool masked_memory_;                             // the code generator has masked loads and stores
  Expr ramp_;
  std::unordered_map<const Var*, Ref<Var>> let_vars_;
  std::unordered_map<const Var*, Ref<Buffer>> per_lane_;
  std::unordered_set<const Var*> widened_;
  std::map<const Var*, std::vector<Access>> accesses_;
};

class LoopVectorizer : public IRMutator {
 public:
  LoopVectorizer(const std::vector<int>& lanes, bool masked_memory)
      : lanes_(lanes), masked_memory_(masked_memory) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    arith::ConstraintScope scope(&ana_, op->loop_var, Range{op->min, op->extent});
    bool threads = op->kind == ForKind::kParallel || op->kind == ForKind::kThreadBinding;
    if (threads) frames_.push_back({{}, op->kind == ForKind::kParallel});
    Stmt result = IRMutator::visit(op);
    if (threads) frames_.pop_back();
    const auto* loop = result.as<For>();
    if (loop == nullptr || loop->kind != ForKind::kVectorized) return result;
    try {
      return vectorize(loop);
    } catch (const VectorizeFailure& failure) {
      return fall_back(loop, failure.reason);
    }
  }

 public:
  // The loops that stayed serial, in the order they were met: [{"loop": name, "reason": why}].
  const nlohmann::ordered_json& fallbacks() const { return fallbacks_; }

 private:
  Stmt vectorize(const For* loop) {
    const int64_t* extent = as_const_int(loop->extent);
    if (extent == nullptr) fail("its extent ", to_script(loop->extent), " is not a constant");
    if (*extent < 1 || *extent > 65535) fail("its extent ", *extent, " is not in [1, 65535]");
    if (*extent == 1) {
      return substitute(loop->body,
                        {{loop->loop_var.get(), cast(loop->loop_var->dtype, loop->min)}});
    }
    if (!lanes_.empty() && std::find(lanes_.begin(), lanes_.end(), *extent) == lanes_.end()) {
      std::string counts;
      for (int n : lanes_) counts += (counts.empty() ? "" : ", ") + std::to_string(n);
      fail("its extent ", *extent, " is not a lane count of the target's vector types (", counts,
           "); split the loop so that the vectorized part has one of them");
    }
    return Vectorizer(loop, static_cast<int>(*extent), &ana_, frames_.back().buffers,
                      masked_memory_)
        .run(loop->body);
  }

  // A buffer allocated here is private to the innermost loop of threads around it (to the
  // function's one thread outside them): GPU "local" memory under a thread loop, any memory but
  // GPU shared memory under a parallel loop of the CPU.
  Stmt visit(const Allocate* op) override {
    const std::string& scope = op->buffer->scope;
    bool is_private = scope == "local" || (!is_shared_scope(scope) && frames_.back().cpu);
    const Var* data = op->buffer->data.get();
    if (is_private) frames_.back().buffers.insert(data);
    Stmt result = IRMutator::visit(op);
    frames_.back().buffers.erase(data);
    return result;
  }

  Stmt fall_back(const For* loop, const std::string& reason) {
    fallbacks_.push_back({{"loop", loop->loop_var->name}, {"reason", reason}});
    auto serial = copy(loop);
    serial->kind = ForKind::kSerial;
    serial->annotations["kiln.vectorize_fallback"] = make<StringImm>(reason);
    return serial;
  }

  // The buffers private to the threads of a parallel or GPU thread loop (the function's body
  // first), innermost last.
  struct Frame {
    std::unordered_set<const Var*> buffers;
    bool cpu;  // the function's body or a parallel loop, not a GPU thread loop
  };

  std::vector<int> lanes_;  // the lane counts allowed; empty for any
  bool masked_memory_;
  arith::Analyzer ana_;
  std::vector<Frame> frames_{Frame{{}, true}};
  nlohmann::ordered_json fallbacks_ = nlohmann::ordered_json::array();
};

}  // namespace

Ref<PrimFunc> vectorize_loops(const Ref<PrimFunc>& func) {
  return vectorize_loops(func, {}, /*masked_memory=*/true);
}

Ref<PrimFunc> vectorize_loops(const Ref<PrimFunc>& func, const std::vector<int>& lanes,
                              bool masked_memory) {
  LoopVectorizer vectorizer(lanes, masked_memory);
  Ref<PrimFunc> result = with_body(func, vectorizer.mutate(func->body));
  if (vectorizer.fallbacks().empty()) return result;
  // The function keeps the list, since later passes may unroll or drop the serial loops that
  // carry the annotation, and the build driver reports it (BuiltModule::warnings).
  nlohmann::ordered_json all = vectorizer.fallbacks();
  auto previous = result->attrs.find("kiln.vectorize_fallbacks");
  if (previous != result->attrs.end()) {
    if (const auto* text = previous->second.as<StringImm>()) {
      nlohmann::ordered_json earlier = nlohmann::ordered_json::parse(text->value, nullptr, false);
      if (earlier.is_array()) all.insert(all.begin(), earlier.begin(), earlier.end());
    }
  }
  if (result.same_as(func)) result = copy(func.get());
  result->attrs["kiln.vectorize_fallbacks"] = make<StringImm>(all.dump());
  return result;
}

}  // namespace kiln::tir
