// Tests of promote_to_registers: the golden copy-in / loop / copy-out of a register tile, the
// numeric check on the interpreter, and each case that keeps a loop on the buffer itself.
#include "kiln/tir/promote_to_registers.h"

#include <gtest/gtest.h>

#include <string>

#include "flat_program.h"
#include "kiln/ir/printer.h"
#include "kiln/tir/verify_ir.h"

namespace kiln::tir {
namespace {

using namespace flat_testing;

Expr f32(double v) {
  return make_const(DataType::float32(), v);
}

Expr ramp(int64_t base, int lanes) {
  return make<Ramp>(DataType::int32().with_lanes(lanes), i32(base), i32(1), lanes);
}

Expr vload(const Ref<Buffer>& b, int64_t base, int lanes) {
  return make<BufferLoad>(b->dtype.with_lanes(lanes), b, std::vector<Expr>{ramp(base, lanes)});
}

Stmt vstore(const Ref<Buffer>& b, Expr value, int64_t base, int lanes) {
  return make<BufferStore>(b, std::move(value), std::vector<Expr>{ramp(base, lanes)});
}

Expr splat(Expr e, int lanes) {
  return make<Broadcast>(e->dtype.with_lanes(lanes), std::move(e), lanes);
}

// allocate C(8) "local": C[0:4] = 0; C[4:8] = 0;
// for k in range(4): C[0:4] += A[k] * B[k, 0:4]; C[4:8] += A[k] * B[k, 4:8]   (`update`)
// for j in range(8): D[j] = C[j]   (the write-back, by a loop variable)
Ref<PrimFunc> tile_program(const Stmt& update_of_k, const Ref<Var>& k, const Ref<Buffer>& c,
                           const std::vector<Param>& params, const Ref<Buffer>& d,
                           ForKind kind = ForKind::kSerial) {
  Ref<Var> j = make_var("j");
  Stmt body =
      seq({vstore(c, splat(f32(0), 4), 0, 4), vstore(c, splat(f32(0), 4), 4, 4),
           loop(k, 4, update_of_k, kind), loop(j, 8, buffer_store(d, buffer_load(c, {j}), {j}))});
  return make_func(params, make<Allocate>(c, body));
}

struct Tile {
  Ref<Var> k = make_var("k");
  Ref<Buffer> a = buffer_1d("A", i32(4)), b = buffer_1d("B", i32(32)), d = buffer_1d("D", i32(8));
  Ref<Buffer> c = decl_buffer({i32(8)}, DataType::float32(), "C", "local");

  Stmt update(int64_t half) const {
    Expr row = half == 0 ? k * 8 : k * 8 + i32(half);
    Expr product =
        mul(splat(buffer_load(a, {k}), 4),
            make<BufferLoad>(
                DataType::float32().with_lanes(4), b,
                std::vector<Expr>{make<Ramp>(DataType::int32().with_lanes(4), row, i32(1), 4)}));
    return vstore(c, add(vload(c, half, 4), product), half, 4);
  }
  Ref<PrimFunc> func(Stmt update_of_k, ForKind kind = ForKind::kSerial) const {
    return tile_program(update_of_k, k, c, {a, b, d}, d, kind);
  }
};

// D after running `func` on fixed A and B.
std::vector<float> run_tile(const Ref<PrimFunc>& func) {
  return run(func, {random_floats(4, 1), random_floats(32, 2), std::vector<float>(8)})[2];
}

// The names of the buffers allocated in `func`, inner ones first.
std::vector<std::string> allocations(const Ref<PrimFunc>& func) {
  std::vector<std::string> names;
  post_order_visit(func->body, [&names](const Node* node) {
    if (node->kind() == NodeKind::Allocate) {
      names.push_back(static_cast<const Allocate*>(node)->buffer->name);
    }
  });
  return names;
}

TEST(PromoteToRegisters, LoopOnConstantSlotsWorksOnACopy) {
  Tile t;
  Ref<PrimFunc> func = t.func(seq({t.update(0), t.update(4)}));
  Ref<PrimFunc> result = promote_to_registers(func);
  EXPECT_EQ(to_script(result->body.as<Allocate>()->body),
            "C[T.Ramp(0, 1, 4)] = T.Broadcast(T.float32(0), 4)\n"
            "C[T.Ramp(4, 1, 4)] = T.Broadcast(T.float32(0), 4)\n"
            "with T.allocate((8,), \"float32\", scope=\"local\") as C_reg:\n"
            "    C_reg[T.Ramp(0, 1, 4)] = C[T.Ramp(0, 1, 4)]\n"
            "    C_reg[T.Ramp(4, 1, 4)] = C[T.Ramp(4, 1, 4)]\n"
            "    for k in range(4):\n"
            "        C_reg[T.Ramp(0, 1, 4)] = C_reg[T.Ramp(0, 1, 4)] + T.Broadcast(A[k], 4) * "
            "B[T.Ramp(k * 8, 1, 4)]\n"
            "        C_reg[T.Ramp(4, 1, 4)] = C_reg[T.Ramp(4, 1, 4)] + T.Broadcast(A[k], 4) * "
            "B[T.Ramp(k * 8 + 4, 1, 4)]\n"
            "    C[T.Ramp(0, 1, 4)] = C_reg[T.Ramp(0, 1, 4)]\n"
            "    C[T.Ramp(4, 1, 4)] = C_reg[T.Ramp(4, 1, 4)]\n"
            "for j in range(8):\n"
            "    D[j] = C[j]");
  verify_ir(result, "promote_to_registers");
  EXPECT_EQ(run_tile(result), run_tile(func));
}

TEST(PromoteToRegisters, OutermostLoopIsPromotedOnce) {
  // for k: for r in range(2): the update of half r * 4 would index by r; unrolled by hand here
  // into both halves under an inner loop of one step: the outer loop is promoted, not the inner.
  Tile t;
  Ref<Var> r = make_var("r");
  Ref<PrimFunc> func = t.func(loop(r, 1, seq({t.update(0), t.update(4)})));
  Ref<PrimFunc> result = promote_to_registers(func);
  EXPECT_EQ(allocations(result), (std::vector<std::string>{"C_reg", "C"}));
  EXPECT_EQ(run_tile(result), run_tile(func));
}

TEST(PromoteToRegisters, StoreUnderAConditionKeepsTheOldValueWhereItDoesNotRun) {
  // for k: if k < n: C[0:4] += ...   with n = 0 the copy out writes back the zeros.
  Tile t;
  Ref<Var> n = make_var("n");
  Ref<PrimFunc> func = tile_program(make<IfThenElse>(lt(Expr(t.k), Expr(n)), t.update(0)), t.k, t.c,
                                    {t.a, t.b, t.d, n}, t.d);
  Ref<PrimFunc> result = promote_to_registers(func);
  EXPECT_EQ(allocations(result), (std::vector<std::string>{"C_reg", "C"}));
  for (int64_t bound : {0, 2, 4}) {
    std::vector<std::vector<float>> in = {random_floats(4, 1), random_floats(32, 2),
                                          std::vector<float>(8, 5.0f)};
    EXPECT_EQ(run(result, in, {bound})[2], run(func, in, {bound})[2]) << "n = " << bound;
  }
}

TEST(PromoteToRegisters, APartialLastVectorIsCopiedOnlyWithinTheTile) {
  // A row of 6 that no vector of 4 divides: C(6) "local"; its last vector C[4:8] is masked to
  // lanes 4 and 5. The copy holds all 8 lanes the loop reaches; the copies in and out move the
  // tile's 6 elements only (copying C[4:8] whole read and wrote two elements past C's end).
  Ref<Var> k = make_var("k");
  Ref<Buffer> a = buffer_1d("A", i32(4)), b = buffer_1d("B", i32(32)), d = buffer_1d("D", i32(6));
  Ref<Buffer> c = decl_buffer({i32(6)}, DataType::float32(), "C", "local");
  auto product = [&](int64_t column) {
    return mul(splat(buffer_load(a, {k}), 4),
               make<BufferLoad>(DataType::float32().with_lanes(4), b,
                                std::vector<Expr>{make<Ramp>(DataType::int32().with_lanes(4),
                                                             k * 8 + i32(column), i32(1), 4)}));
  };
  Expr mask = lt(ramp(4, 4), splat(i32(6), 4));
  Stmt masked_update = make<IfThenElse>(
      mask, vstore(c,
                   add(make<Call>(DataType::float32().with_lanes(4), Builtin::IfThenElse,
                                  std::vector<Expr>{mask, vload(c, 4, 4), splat(f32(0), 4)}),
                       product(4)),
                   4, 4));
  Ref<Var> j = make_var("j");
  Stmt body =
      seq({vstore(c, splat(f32(0), 4), 0, 4), vstore(c, splat(f32(0), 2), 4, 2),
           loop(k, 4, seq({vstore(c, add(vload(c, 0, 4), product(0)), 0, 4), masked_update})),
           loop(j, 6, buffer_store(d, buffer_load(c, {j}), {j}))});
  Ref<PrimFunc> func = make_func({a, b, d}, make<Allocate>(c, body));
  Ref<PrimFunc> result = promote_to_registers(func);
  std::string text = to_script(result->body);
  EXPECT_NE(text.find("with T.allocate((8,), \"float32\", scope=\"local\") as C_reg:"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("C_reg[T.Ramp(4, 1, 2)] = C[T.Ramp(4, 1, 2)]"), std::string::npos) << text;
  EXPECT_NE(text.find("C[T.Ramp(4, 1, 2)] = C_reg[T.Ramp(4, 1, 2)]"), std::string::npos) << text;
  EXPECT_EQ(text.find("C[T.Ramp(4, 1, 4)]"), std::string::npos) << text;
  verify_ir(result, "promote_to_registers");
  std::vector<std::vector<float>> in = {random_floats(4, 1), random_floats(32, 2),
                                        std::vector<float>(6)};
  EXPECT_EQ(run(result, in)[2], run(func, in)[2]);
}

TEST(PromoteToRegisters, LoopsThatKeepTheBuffer) {
  Tile t;
  // An index that varies in the loop.
  Stmt by_k = buffer_store(t.c, add(buffer_load(t.c, {t.k}), f32(1)), {t.k});
  // Two slots that overlap: C[0:4] and C[2].
  Stmt overlap = seq({t.update(0), buffer_store(t.c, f32(1), {i32(2)})});
  // The buffer's address taken.
  Stmt address = seq({t.update(0), make<Evaluate>(call(DataType::handle(), Builtin::AddressOf,
                                                       {buffer_load(t.c, {i32(0)})}))});
  // Loads only (nothing to keep in registers across steps).
  Stmt loads = buffer_store(t.d, buffer_load(t.c, {i32(1)}), {t.k});
  for (const Stmt& update : {by_k, overlap, address, loads}) {
    Ref<PrimFunc> func = t.func(update);
    EXPECT_TRUE(promote_to_registers(func).same_as(func)) << to_script(update);
  }
  // A parallel loop: each thread would work on a copy of its own.
  Ref<PrimFunc> parallel = t.func(seq({t.update(0), t.update(4)}), ForKind::kParallel);
  EXPECT_TRUE(promote_to_registers(parallel).same_as(parallel));
  // A buffer that is not "local".
  Ref<Buffer> global = decl_buffer({i32(8)}, DataType::float32(), "C", "global");
  Tile g;
  g.c = global;
  Ref<PrimFunc> other_scope = g.func(seq({g.update(0), g.update(4)}));
  EXPECT_TRUE(promote_to_registers(other_scope).same_as(other_scope));
}

}  // namespace
}  // namespace kiln::tir
