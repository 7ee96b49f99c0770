// Tests of vectorize_loops: golden vector IR, the numeric check on the interpreter, vectorizing
// through inner loops and allocations, and each reason for falling back to a serial loop.
#include "kiln/tir/vectorize_loops.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "flat_program.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "kiln/tir/verify_ir.h"

namespace kiln::tir {
namespace {

using namespace flat_testing;

Expr f32(double v) {
  return make_const(DataType::float32(), v);
}

Stmt vectorized(const Ref<Var>& var, int64_t extent, Stmt body) {
  return loop(var, extent, std::move(body), ForKind::kVectorized);
}

// The reason recorded on the (single) loop that fell back, or "" when there is none.
std::string fallback_reason(const Ref<PrimFunc>& func) {
  for (const For* f : loops_of(func->body)) {
    auto it = f->annotations.find("kiln.vectorize_fallback");
    if (it != f->annotations.end()) {
      EXPECT_EQ(f->kind, ForKind::kSerial);
      return it->second.as<StringImm>()->value;
    }
  }
  return "";
}

// Vector if_then_else calls in `s` whose condition varies across lanes and whose then-arm is a
// vector load (the masked loads).
int count_masked_loads(const Stmt& s) {
  return count_nodes(s, [](const Node* node) {
    const auto* call = node->kind() == NodeKind::Call ? static_cast<const Call*>(node) : nullptr;
    return call != nullptr && call->op == Builtin::IfThenElse && call->args[0]->dtype.lanes() > 1 &&
           call->args[1].is<BufferLoad>() && call->args[1]->dtype.lanes() > 1;
  });
}

// The function vectorized, checked to have no fallback and `masked` masked loads, and to compute
// what `func` computes on the interpreter (whose bounds checks would catch a lane loaded out of
// bounds). A has 8 elements, B 8.
void expect_masked(const Ref<PrimFunc>& func, int masked) {
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(fallback_reason(result), "");
  EXPECT_EQ(count_masked_loads(result->body), masked) << to_script(result->body);
  verify_ir(result, "vectorize_loops");
  std::vector<float> in = random_floats(8);
  EXPECT_EQ(run(result, {in, std::vector<float>(8)})[1], run(func, {in, std::vector<float>(8)})[1]);
}

// `result` and `func` (over A and B of 8 elements and a scalar n) leave the same B for each n.
void expect_same_for_bounds(const Ref<PrimFunc>& result, const Ref<PrimFunc>& func,
                            std::initializer_list<int64_t> bounds) {
  std::vector<float> in = random_floats(8);
  for (int64_t bound : bounds) {
    EXPECT_EQ(run(result, {in, std::vector<float>(8)}, {bound})[1],
              run(func, {in, std::vector<float>(8)}, {bound})[1])
        << "n = " << bound;
  }
}

TEST(VectorizeLoops, ElementwiseBodyBecomesRampsAndBroadcasts) {
  Ref<Var> i = make_var("i");
  Ref<Var> c = make_var("c", DataType::float32());
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Stmt body = vectorized(i, 8, buffer_store(b, add(buffer_load(a, {i}), c), {i}));
  Ref<PrimFunc> func = make_func({a, b, c}, body);
  Ref<PrimFunc> result = vectorize_loops(func);

  Expr lanes = make<Ramp>(DataType::int32().with_lanes(8), i32(0), i32(1), 8);
  Expr load = make<BufferLoad>(DataType::float32().with_lanes(8), a, std::vector<Expr>{lanes});
  Expr sum = make<Add>(DataType::float32().with_lanes(8), load,
                       make<Broadcast>(DataType::float32().with_lanes(8), c, 8));
  Stmt expected = make<BufferStore>(b, sum, std::vector<Expr>{lanes});
  EXPECT_TRUE(structural_equal(result->body, expected)) << structural_diff(result->body, expected);
  EXPECT_EQ(to_script(result->body), "B[T.Ramp(0, 1, 8)] = A[T.Ramp(0, 1, 8)] + T.Broadcast(c, 8)");
}

TEST(VectorizeLoops, InnerVectorLoopOfASplitKeepsRampIndices) {
  // for io in range(4): for ii in vectorized(8): B[io * 8 + ii] = A[io * 8 + ii] * 2
  Ref<Var> io = make_var("io"), ii = make_var("ii");
  Ref<Buffer> a = buffer_1d("A", i32(32)), b = buffer_1d("B", i32(32));
  Expr index = io * 8 + ii;
  Stmt body = loop(
      io, 4, vectorized(ii, 8, buffer_store(b, mul(buffer_load(a, {index}), f32(2)), {index})));
  Ref<PrimFunc> func = make_func({a, b}, body);
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(to_script(result->body),
            "for io in range(4):\n"
            "    B[T.Ramp(io * 8, 1, 8)] = A[T.Ramp(io * 8, 1, 8)] * T.Broadcast(T.float32(2), 8)");
  verify_ir(result, "vectorize_loops");
  std::vector<float> in = random_floats(32);
  EXPECT_EQ(run(result, {in, std::vector<float>(32)})[1],
            run(func, {in, std::vector<float>(32)})[1]);
}

TEST(VectorizeLoops, InnerSerialLoopWithInvariantExtentIsVectorizedThrough) {
  // for i in vectorized(4): for k in range(8): C[i] = C[i] + A[i * 8 + k]
  Ref<Var> i = make_var("i"), k = make_var("k");
  Ref<Buffer> a = buffer_1d("A", i32(32)), out = buffer_1d("C", i32(4));
  Stmt update = buffer_store(out, add(buffer_load(out, {i}), buffer_load(a, {i * 8 + k})), {i});
  Ref<PrimFunc> func = make_func({a, out}, vectorized(i, 4, loop(k, 8, update)));
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(to_script(result->body),
            "for k in range(8):\n"
            "    C[T.Ramp(0, 1, 4)] = C[T.Ramp(0, 1, 4)] + A[T.Ramp(k, 8, 4)]");
  std::vector<float> in = random_floats(32);
  EXPECT_EQ(run(result, {in, std::vector<float>(4, 1.0f)})[1],
            run(func, {in, std::vector<float>(4, 1.0f)})[1]);
}

TEST(VectorizeLoops, SafeIfThenElseBecomesSelect) {
  // B[i] = if_then_else(A[i] > 0, A[i], 0): the load is in bounds on every lane.
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Expr value = if_then_else(gt(buffer_load(a, {i}), f32(0)), buffer_load(a, {i}), f32(0));
  Ref<PrimFunc> func = make_func({a, b}, vectorized(i, 8, buffer_store(b, value, {i})));
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(count_calls(result->body, Builtin::IfThenElse), 0);
  EXPECT_EQ(count_kind(result->body, NodeKind::Select), 1);
  EXPECT_EQ(fallback_reason(result), "");
  std::vector<float> in = random_floats(8);
  EXPECT_EQ(run(result, {in, std::vector<float>(8)})[1], run(func, {in, std::vector<float>(8)})[1]);
}

TEST(VectorizeLoops, AllocationInsideGetsOneCopyPerLane) {
  // for i in vectorized(4): t = allocate(2); t[0] = A[i]; t[1] = A[i] * 2; B[i] = t[0] + t[1]
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(4)), b = buffer_1d("B", i32(4));
  Ref<Buffer> t = decl_buffer({i32(2)}, DataType::float32(), "t", "local");
  Stmt body = seq({buffer_store(t, buffer_load(a, {i}), {i32(0)}),
                   buffer_store(t, mul(buffer_load(a, {i}), f32(2)), {i32(1)}),
                   buffer_store(b, add(buffer_load(t, {i32(0)}), buffer_load(t, {i32(1)})), {i})});
  Ref<PrimFunc> func = make_func({a, b}, vectorized(i, 4, make<Allocate>(t, body)));
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(fallback_reason(result), "");
  const auto* alloc = result->body.as<Allocate>();
  ASSERT_NE(alloc, nullptr) << to_script(result->body);
  EXPECT_EQ(to_script(alloc->buffer->shape[0]), "8");
  EXPECT_EQ(to_script(alloc->body),
            "t[T.Ramp(0, 1, 4)] = A[T.Ramp(0, 1, 4)]\n"
            "t[T.Ramp(4, 1, 4)] = A[T.Ramp(0, 1, 4)] * T.Broadcast(T.float32(2), 4)\n"
            "B[T.Ramp(0, 1, 4)] = t[T.Ramp(0, 1, 4)] + t[T.Ramp(4, 1, 4)]");
  verify_ir(result, "vectorize_loops");
  std::vector<float> in = random_floats(4);
  EXPECT_EQ(run(result, {in, std::vector<float>(4)})[1], run(func, {in, std::vector<float>(4)})[1]);
}

// allocate t(8): t[i] = A[i]; if i <= 2: t[i] = t[i] + 1; B[i] = t[i], each over a vector loop
// of 8 lanes; `outer` wraps the three loops (a parallel loop of threads, say) and `inside` says
// whether t is allocated within it.
Ref<PrimFunc> guarded_update(const std::string& scope, ForKind outer, bool inside) {
  Ref<Var> i = make_var("i"), j = make_var("j"), k = make_var("k"), r = make_var("r");
  Ref<Buffer> a = buffer_1d("A", i32(16)), b = buffer_1d("B", i32(16));
  Ref<Buffer> t = decl_buffer({i32(8)}, DataType::float32(), "t", scope);
  Expr row = r * 8;
  Stmt update =
      make<IfThenElse>(le(Expr(j), i32(2)), buffer_store(t, add(buffer_load(t, {j}), f32(1)), {j}));
  Stmt body = seq({vectorized(i, 8, buffer_store(t, buffer_load(a, {row + i}), {i})),
                   vectorized(j, 8, update),
                   vectorized(k, 8, buffer_store(b, buffer_load(t, {k}), {row + k}))});
  if (inside) return make_func({a, b}, loop(r, 2, make<Allocate>(t, body), outer));
  return make_func({a, b}, make<Allocate>(t, loop(r, 2, body, outer)));
}

TEST(VectorizeLoops, GuardedStoreToAPrivateBufferBlendsTheOldValue) {
  // t is allocated inside the parallel loop: each thread has its own, so every lane may store
  // (the old value where the condition fails).
  Ref<PrimFunc> func = guarded_update("global", ForKind::kParallel, true);
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(fallback_reason(result), "");
  EXPECT_NE(to_script(result->body)
                .find("t[T.Ramp(0, 1, 8)] = T.Select(T.Ramp(0, 1, 8) <= T.Broadcast(2, 8), "
                      "t[T.Ramp(0, 1, 8)] + T.Broadcast(T.float32(1), 8), t[T.Ramp(0, 1, 8)])"),
            std::string::npos)
      << to_script(result->body);
  verify_ir(result, "vectorize_loops");
  std::vector<float> in = random_floats(16);
  EXPECT_EQ(run(result, {in, std::vector<float>(16)})[1],
            run(func, {in, std::vector<float>(16)})[1]);
  // Without a parallel loop the function's own allocation is private too; GPU "local" memory
  // under a thread loop as well.
  EXPECT_EQ(fallback_reason(vectorize_loops(guarded_update("global", ForKind::kSerial, false))),
            "");
  EXPECT_EQ(
      fallback_reason(vectorize_loops(guarded_update("local", ForKind::kThreadBinding, true))), "");
}

TEST(VectorizeLoops, PartialTileOfARegisterTileTestsItsRowOnceAndMasksItsColumns) {
  // The last tile of a register tile partial in both dimensions (row n of at most 8 rows, m of
  // 8 columns), accumulating into t of the thread:
  //   for j in vectorized(8): if 0 <= n and n < 8 and j < m: t[j] = t[j] + A[n] * A[j + 8 - m]
  // A[n] is the same on every lane and in bounds where 0 <= n < 8 holds; A[j + 8 - m] loads
  // past the end on the lanes j >= m. The row's test becomes a scalar if around the vector, the
  // column's a blend whose load is masked: vectorized, and the same as the loop everywhere.
  Ref<Var> i = make_var("i"), j = make_var("j"), k = make_var("k"), r = make_var("r");
  Ref<Var> n = make_var("n"), m = make_var("m");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Ref<Buffer> t = decl_buffer({i32(8)}, DataType::float32(), "t", "global");
  Expr product = mul(buffer_load(a, {n}), buffer_load(a, {j + i32(8) - m}));
  Expr row_in_bounds = logical_and(le(i32(0), Expr(n)), lt(Expr(n), i32(8)));
  Stmt update = make<IfThenElse>(logical_and(row_in_bounds, lt(Expr(j), Expr(m))),
                                 buffer_store(t, add(buffer_load(t, {j}), product), {j}));
  Stmt body = seq({vectorized(i, 8, buffer_store(t, f32(1), {i})), vectorized(j, 8, update),
                   vectorized(k, 8, buffer_store(b, buffer_load(t, {k}), {k}))});
  Ref<PrimFunc> func =
      make_func({a, b, n, m}, loop(r, 1, make<Allocate>(t, body), ForKind::kParallel));
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(fallback_reason(result), "");
  EXPECT_EQ(count_masked_loads(result->body), 1) << to_script(result->body);
  EXPECT_NE(to_script(result->body).find("if 0 <= n and n < 8:"), std::string::npos)
      << to_script(result->body);
  verify_ir(result, "vectorize_loops");
  std::vector<float> in = random_floats(8);
  for (int64_t row : {-1, 0, 7, 8}) {
    for (int64_t columns : {0, 3, 8}) {
      EXPECT_EQ(run(result, {in, std::vector<float>(8)}, {row, columns})[1],
                run(func, {in, std::vector<float>(8)}, {row, columns})[1])
          << "n = " << row << ", m = " << columns;
    }
  }
}

// for r in parallel(1): t = allocate(8) of ones; for j in vectorized(8): if `guard`:
// t[j] = t[j] + A[`row`] * A[`column`]; then B = t. A[row] is the same on every lane and, as
// far as the analyzer knows, may be out of bounds (a scalar n).
Ref<PrimFunc> guarded_broadcast_update(const Ref<Var>& j, const Ref<Var>& n, const Ref<Var>& m,
                                       const Expr& guard, const Expr& row, const Expr& column) {
  Ref<Var> i = make_var("i"), k = make_var("k"), r = make_var("r");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Ref<Buffer> t = decl_buffer({i32(8)}, DataType::float32(), "t", "global");
  Expr product = mul(buffer_load(a, {row}), buffer_load(a, {column}));
  Stmt update = make<IfThenElse>(guard, buffer_store(t, add(buffer_load(t, {j}), product), {j}));
  Stmt body = seq({vectorized(i, 8, buffer_store(t, f32(1), {i})), vectorized(j, 8, update),
                   vectorized(k, 8, buffer_store(b, buffer_load(t, {k}), {k}))});
  return make_func({a, b, n, m}, loop(r, 1, make<Allocate>(t, body), ForKind::kParallel));
}

// Scalar if statements in `s` (the tests of a lane).
int count_scalar_ifs(const Stmt& s) {
  return count_nodes(s, [](const Node* node) {
    return node->kind() == NodeKind::IfThenElse &&
           static_cast<const IfThenElse*>(node)->condition->dtype.lanes() == 1;
  });
}

TEST(VectorizeLoops, GuardWithoutAScalarTermIsTestedAtTheLaneThatHoldsItFirst) {
  // A partial tile whose row test a fused loop keeps inside the vector loop, reduced to
  //   if j + n < 8: t[j] = t[j] + A[n] * A[j + n]
  // The guard holds on a first part of the lanes, so wherever any lane holds it lane 0 does,
  // and lane 0 loads A[n] in the loop: `if 0 + n < 8` around the vector if makes that load safe
  // on every lane, A[j + n] is masked. Likewise `if j >= n: ... A[n - 1] * A[j]` holds on a last
  // part of the lanes, tested at lane 7 (A[j] needs no mask).
  Ref<Var> j = make_var("j"), n = make_var("n"), m = make_var("m");
  std::vector<float> in = random_floats(8);
  auto expect_same = [&](const Ref<PrimFunc>& func, int masked,
                         std::initializer_list<int64_t> bounds) {
    Ref<PrimFunc> result = vectorize_loops(func);
    EXPECT_EQ(fallback_reason(result), "") << to_script(result->body);
    EXPECT_EQ(count_scalar_ifs(result->body), 1) << to_script(result->body);
    EXPECT_EQ(count_masked_loads(result->body), masked) << to_script(result->body);
    verify_ir(result, "vectorize_loops");
    for (int64_t bound : bounds) {  // the interpreter checks every load's bounds
      EXPECT_EQ(run(result, {in, std::vector<float>(8)}, {bound, 0})[1],
                run(func, {in, std::vector<float>(8)}, {bound, 0})[1])
          << "n = " << bound;
    }
  };
  expect_same(guarded_broadcast_update(j, n, m, lt(j + n, i32(8)), n, j + n), 1, {0, 3, 7, 8, 9});
  expect_same(guarded_broadcast_update(j, n, m, ge(Expr(j), Expr(n)), n - 1, j), 0,
              {1, 4, 7, 8, 9});
}

TEST(VectorizeLoopsFallback, GuardHeldByNoLaneWheneverAnyLaneHoldsIt) {
  // if n <= j and j < m: the lanes that hold it are in the middle; no one lane tests them all,
  // so A[n] stays a load that may be out of bounds.
  Ref<Var> j = make_var("j"), n = make_var("n"), m = make_var("m");
  Expr guard = logical_and(le(Expr(n), Expr(j)), lt(Expr(j), Expr(m)));
  Ref<PrimFunc> result = vectorize_loops(guarded_broadcast_update(j, n, m, guard, n, j));
  EXPECT_EQ(fallback_reason(result),
            "an if statement's condition n <= j and j < m varies across lanes and guards a load "
            "that may be out of bounds inside an arm, the same on every lane");
}

// If statements in `s` whose condition varies across lanes (the masked stores).
int count_masked_stores(const Stmt& s) {
  return count_nodes(s, [](const Node* node) {
    return node->kind() == NodeKind::IfThenElse &&
           static_cast<const IfThenElse*>(node)->condition->dtype.lanes() > 1;
  });
}

TEST(VectorizeLoops, GuardedStoreToABufferThatOtherThreadsShareIsMasked) {
  // t allocated outside the parallel loop: a lane whose condition fails must not store, and
  // does not: the store is masked.
  Ref<PrimFunc> func = guarded_update("global", ForKind::kParallel, false);
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(fallback_reason(result), "");
  EXPECT_EQ(count_masked_stores(result->body), 1);
  verify_ir(result, "vectorize_loops");
  std::vector<float> in = random_floats(16);
  EXPECT_EQ(run(result, {in, std::vector<float>(16)})[1],
            run(func, {in, std::vector<float>(16)})[1]);
}

TEST(VectorizeLoopsFallback, GuardedStoreToABufferThatOtherThreadsShareWithoutMaskedMemory) {
  // A GPU language (no masked stores): the loop stays serial.
  std::string reason =
      "an if statement's condition j <= 2 varies across lanes and its branches "
      "have side effects";
  auto gpu = [](const Ref<PrimFunc>& func) { return vectorize_loops(func, {2, 4, 8}); };
  EXPECT_EQ(fallback_reason(gpu(guarded_update("global", ForKind::kParallel, false))), reason);
  // GPU shared memory belongs to the whole thread block, and so may memory other than "local"
  // allocated under a GPU thread loop.
  EXPECT_EQ(fallback_reason(gpu(guarded_update("shared", ForKind::kSerial, false))), reason);
  EXPECT_EQ(fallback_reason(gpu(guarded_update("global", ForKind::kThreadBinding, true))), reason);
}

TEST(VectorizeLoops, LoopOfExtentOneBecomesItsBody) {
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(4)), b = buffer_1d("B", i32(4));
  Stmt body = loop(i, int32_const(3), int32_const(1), buffer_store(b, buffer_load(a, {i}), {i}),
                   ForKind::kVectorized);
  Ref<PrimFunc> result = vectorize_loops(make_func({a, b}, body));
  EXPECT_EQ(to_script(result->body), "B[3] = A[3]");
}

TEST(VectorizeLoops, UnchangedWithoutVectorizedLoops) {
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Ref<PrimFunc> func = make_func({a, b}, loop(i, 8, buffer_store(b, buffer_load(a, {i}), {i})));
  EXPECT_TRUE(vectorize_loops(func).same_as(func));
}

// --- Fallbacks: the loop stays serial and says why -----------------------------------------

TEST(VectorizeLoopsFallback, SymbolicExtent) {
  Ref<Var> i = make_var("i"), n = make_size_var("n");
  Ref<Buffer> a = buffer_1d("A", n), b = buffer_1d("B", n);
  Stmt body = loop(i, i32(0), n, buffer_store(b, buffer_load(a, {i}), {i}), ForKind::kVectorized);
  Ref<PrimFunc> func = make_func({a, b}, body);
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(fallback_reason(result), "its extent n is not a constant");
  std::vector<float> in = random_floats(5);
  EXPECT_EQ(run(result, {in, std::vector<float>(5)})[1], in);
}

TEST(VectorizeLoopsFallback, ExtentThatIsNoLaneCountOfTheTarget) {
  // A GPU language's vectors have 2 or 4 lanes (CUDA): a loop of 3 stays serial, one of 4 not.
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(4)), b = buffer_1d("B", i32(4));
  for (int64_t extent : {3, 4}) {
    Stmt body = vectorized(i, extent, buffer_store(b, buffer_load(a, {i}), {i}));
    Ref<PrimFunc> result = vectorize_loops(make_func({a, b}, body), {2, 4});
    if (extent == 3) {
      EXPECT_EQ(fallback_reason(result),
                "its extent 3 is not a lane count of the target's vector types (2, 4); split the "
                "loop so that the vectorized part has one of them");
    } else {
      EXPECT_EQ(fallback_reason(result), "");
      EXPECT_EQ(to_script(result->body), "B[T.Ramp(0, 1, 4)] = A[T.Ramp(0, 1, 4)]");
    }
  }
}

TEST(VectorizeLoopsFallback, ReductionIntoOneLocation) {
  // C[0] = C[0] + A[i]
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(8)), out = buffer_1d("C", i32(1));
  Stmt update = buffer_store(out, add(buffer_load(out, {i32(0)}), buffer_load(a, {i})), {i32(0)});
  Ref<PrimFunc> func = make_func({a, out}, vectorized(i, 8, update));
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(fallback_reason(result),
            "it stores a vector value into the single location C[0] (a reduction across lanes)");
  std::vector<float> in = random_floats(8);
  EXPECT_EQ(run(result, {in, {0.0f}})[1], run(func, {in, {0.0f}})[1]);
}

TEST(VectorizeLoopsFallback, StoreIndexWithoutDistinctAddresses) {
  // B[i // 2] = A[i]: two lanes write one element.
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(4));
  Stmt store = buffer_store(b, buffer_load(a, {i}), {floordiv(i, i32(2))});
  Ref<PrimFunc> result = vectorize_loops(make_func({a, b}, vectorized(i, 8, store)));
  EXPECT_EQ(fallback_reason(result),
            "the store to B has the index T.Ramp(0, 1, 8) // T.Broadcast(2, 8), which is not a "
            "ramp with a nonzero stride (distinct addresses)");
}

TEST(VectorizeLoopsFallback, StoreThatDoesNotVary) {
  Ref<Var> i = make_var("i");
  Ref<Buffer> b = buffer_1d("B", i32(4));
  Ref<PrimFunc> result =
      vectorize_loops(make_func({b}, vectorized(i, 4, buffer_store(b, f32(1), {i32(2)}))));
  EXPECT_EQ(fallback_reason(result), "the store to B[2] does not vary across lanes");
}

TEST(VectorizeLoopsFallback, LanesThatDependOnEachOther) {
  // A[i + 1] = A[i] * 2: serially each iteration reads what the previous one wrote.
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(9));
  Stmt store = buffer_store(a, mul(buffer_load(a, {i}), f32(2)), {i + 1});
  Ref<PrimFunc> func = make_func({a}, vectorized(i, 8, store));
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(fallback_reason(result),
            "A is stored at T.Ramp(1, 1, 8) and loaded at T.Ramp(0, 1, 8) in the same loop (lanes "
            "could depend on each other)");
  std::vector<float> in(9, 1.0f);
  EXPECT_EQ(run(result, {in})[0], run(func, {in})[0]);
}

TEST(VectorizeLoops, IfWithAVectorConditionStoresTheLanesWhereItHolds) {
  // if A[i] > 0: B[i] = A[i]
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Stmt body =
      make<IfThenElse>(gt(buffer_load(a, {i}), f32(0)), buffer_store(b, buffer_load(a, {i}), {i}));
  Ref<PrimFunc> func = make_func({a, b}, vectorized(i, 8, body));
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(to_script(result->body),
            "if A[T.Ramp(0, 1, 8)] > T.Broadcast(T.float32(0), 8):\n"
            "    B[T.Ramp(0, 1, 8)] = A[T.Ramp(0, 1, 8)]");
  std::vector<float> in = random_floats(8);
  EXPECT_EQ(run(result, {in, std::vector<float>(8, 3.0f)})[1],
            run(func, {in, std::vector<float>(8, 3.0f)})[1]);
}

TEST(VectorizeLoops, MaskedStoreMasksTheLoadsOfItsValue) {
  // for i in vectorized(8): if i < n: B[i] = A[i + 1]   (n <= 7: A[8] is never loaded)
  Ref<Var> i = make_var("i"), n = make_var("n");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Stmt body = make<IfThenElse>(lt(Expr(i), Expr(n)), buffer_store(b, buffer_load(a, {i + 1}), {i}));
  Ref<PrimFunc> func = make_func({a, b, n}, vectorized(i, 8, body));
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(fallback_reason(result), "");
  EXPECT_EQ(count_masked_stores(result->body), 1);
  EXPECT_EQ(count_masked_loads(result->body), 1);
  expect_same_for_bounds(result, func, {0, 3, 7});
}

TEST(VectorizeLoops, GuardAroundAReductionsInitAndUpdateGuardsEachStore) {
  // for k in range(3): for i in vectorized(8):
  //   if i < n: (if k == 0: B[i] = 0); B[i] = B[i] + A[i] * (i < m ? 1 : 2)
  // (the tail of a loop split by a factor that does not divide it, around a reduction block
  // that keeps its init): the guard goes inside the scalar test of k and onto each store, joined
  // to the condition of the varying if inside it.
  Ref<Var> k = make_var("k"), i = make_var("i"), n = make_var("n"), m = make_var("m");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Stmt init = make<IfThenElse>(eq(Expr(k), i32(0)), buffer_store(b, f32(0), {i}));
  Stmt update = buffer_store(b, buffer_load(b, {i}) + buffer_load(a, {i}), {i});
  Stmt doubled =
      make<IfThenElse>(gt(Expr(i), Expr(m)), buffer_store(b, buffer_load(b, {i}) * f32(2), {i}));
  Stmt body = make<IfThenElse>(lt(Expr(i), Expr(n)), seq({init, update, doubled}));
  Ref<PrimFunc> func = make_func({a, b, n, m}, loop(k, 3, vectorized(i, 8, body)));
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(fallback_reason(result), "");
  EXPECT_EQ(count_masked_stores(result->body), 3) << to_script(result->body);
  verify_ir(result, "vectorize_loops");
  std::vector<float> in = random_floats(8);
  for (int64_t bound : {0, 3, 7, 8}) {
    EXPECT_EQ(run(result, {in, std::vector<float>(8, 5.0f)}, {bound, 2})[1],
              run(func, {in, std::vector<float>(8, 5.0f)}, {bound, 2})[1])
        << "n = " << bound;
  }
}

TEST(VectorizeLoops, GuardAroundLetsGoesInsideThemAndMasksTheirLoads) {
  // for i in vectorized(8):
  //   if i < n: (let v = A[i + 1]: let w = B[i] + v: B[i] = w; B[i] = B[i] * v)
  // (n <= 7: A[8] is never loaded; an argmax's guarded rfactor tail binds its new index and
  // value before it stores them): the lets go out, evaluated on every lane with the load the
  // guard keeps in bounds masked, and each store is guarded.
  Ref<Var> i = make_var("i"), n = make_var("n");
  Ref<Var> v = make<Var>("v", DataType::float32()), w = make<Var>("w", DataType::float32());
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Stmt stores = seq({buffer_store(b, Expr(w), {i}), buffer_store(b, buffer_load(b, {i}) * v, {i})});
  Stmt lets =
      make<LetStmt>(v, buffer_load(a, {i + 1}), make<LetStmt>(w, buffer_load(b, {i}) + v, stores));
  Ref<PrimFunc> func =
      make_func({a, b, n}, vectorized(i, 8, make<IfThenElse>(lt(Expr(i), Expr(n)), lets)));
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(fallback_reason(result), "");
  EXPECT_EQ(count_masked_loads(result->body), 1) << to_script(result->body);
  EXPECT_EQ(count_masked_stores(result->body), 2) << to_script(result->body);
  verify_ir(result, "vectorize_loops");
  expect_same_for_bounds(result, func, {0, 3, 7});
}

TEST(VectorizeLoopsFallback, IfWithAVectorConditionWithoutMaskedMemory) {
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Stmt body =
      make<IfThenElse>(gt(buffer_load(a, {i}), f32(0)), buffer_store(b, buffer_load(a, {i}), {i}));
  Ref<PrimFunc> result = vectorize_loops(make_func({a, b}, vectorized(i, 8, body)), {8});
  EXPECT_EQ(fallback_reason(result),
            "an if statement's condition A[i] > T.float32(0) varies across lanes and its branches "
            "have side effects");
}

TEST(VectorizeLoops, GuardedLoadThatMayBeOutOfBoundsBecomesAMaskedLoad) {
  // B[i] = if_then_else(i >= 1, A[i - 1], 0): lane 0 would load A[-1], so only the lanes where
  // the condition holds load.
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Expr value = if_then_else(ge(i, i32(1)), buffer_load(a, {i - 1}), f32(0));
  Ref<PrimFunc> func = make_func({a, b}, vectorized(i, 8, buffer_store(b, value, {i})));
  EXPECT_EQ(to_script(vectorize_loops(func)->body),
            "B[T.Ramp(0, 1, 8)] = T.if_then_else(T.Ramp(0, 1, 8) >= T.Broadcast(1, 8), "
            "A[T.Ramp(-1, 1, 8)], T.Broadcast(T.float32(0), 8))");
  expect_masked(func, 1);
}

TEST(VectorizeLoops, GuardedLoadInTheElseArmIsMaskedByTheNegatedCondition) {
  // B[i] = if_then_else(i < 1, 0, A[i - 1]).
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Expr value = if_then_else(lt(i, i32(1)), f32(0), buffer_load(a, {i - 1}));
  expect_masked(make_func({a, b}, vectorized(i, 8, buffer_store(b, value, {i}))), 1);
}

TEST(VectorizeLoops, LoadsInsideAnArmAreMaskedOneByOne) {
  // B[i] = if_then_else(i >= 1, A[i - 1] * 2 + A[i], A[i] - A[i + 1] * 3)... the else-arm's
  // A[i + 1] is out of bounds on lane 7, where the condition holds.
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Expr then_arm = add(mul(buffer_load(a, {i - 1}), f32(2)), buffer_load(a, {i}));
  Expr else_arm = sub(buffer_load(a, {i}), mul(buffer_load(a, {i + 1}), f32(3)));
  Expr value = if_then_else(ge(i, i32(1)), then_arm, else_arm);
  expect_masked(make_func({a, b}, vectorized(i, 8, buffer_store(b, value, {i}))), 2);
}

TEST(VectorizeLoops, NestedGuardsMaskALoadWithBothConditions) {
  // B[i] = if_then_else(i >= 1, A[i - 1] + if_then_else(i < 7, A[i + 1], 0), 0): A[i + 1] loads
  // where both hold (lane 7 is out of bounds; lane 0 is kept out by the outer guard only when
  // the inner load's own mask is narrowed: A[i + 1] is in bounds there, the test of the
  // narrowing is A[i - 2] below).
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Expr inner = if_then_else(lt(i, i32(7)), buffer_load(a, {i + 1}), f32(0));
  Expr value = if_then_else(ge(i, i32(1)), add(buffer_load(a, {i - 1}), inner), f32(0));
  expect_masked(make_func({a, b}, vectorized(i, 8, buffer_store(b, value, {i}))), 2);
  // B[i] = if_then_else(i >= 2, if_then_else(i < 7, A[i - 2], 0), 0): the inner guard alone
  // would let lanes 0 and 1 load A[-2] and A[-1].
  Expr narrowed = if_then_else(
      ge(i, i32(2)), if_then_else(lt(i, i32(7)), buffer_load(a, {i - 2}), f32(0)), f32(0));
  expect_masked(make_func({a, b}, vectorized(i, 8, buffer_store(b, narrowed, {i}))), 1);
}

TEST(VectorizeLoops, GuardedLoadThatDoesNotVaryLoadsOnTheLanesThatPickIt) {
  // B[i] = if_then_else(i >= n, A[n], 0) with n in [0, 8]: A[8] is out of bounds, and no lane
  // picks it then.
  Ref<Var> i = make_var("i"), n = make_var("n");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Expr value = if_then_else(ge(i, n), buffer_load(a, {n}), f32(0));
  Ref<PrimFunc> func = make_func({a, b, n}, vectorized(i, 8, buffer_store(b, value, {i})));
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(fallback_reason(result), "");
  EXPECT_EQ(count_masked_loads(result->body), 1);
  expect_same_for_bounds(result, func, {0, 3, 8});
}

TEST(VectorizeLoopsFallback, IfThenElseGuardingAnOutOfBoundsLoadWithoutMaskedLoads) {
  // A C vector language (OpenCL, CUDA) evaluates both arms of ?: on every lane.
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Expr value = if_then_else(ge(i, i32(1)), buffer_load(a, {i - 1}), f32(0));
  Ref<PrimFunc> func = make_func({a, b}, vectorized(i, 8, buffer_store(b, value, {i})));
  Ref<PrimFunc> result = vectorize_loops(func, {2, 4, 8});
  EXPECT_EQ(fallback_reason(result),
            "if_then_else(i >= 1, ...) varies across lanes and guards a load that may be out of "
            "bounds (the target has no masked loads)");
  std::vector<float> in = random_floats(8);
  EXPECT_EQ(run(result, {in, std::vector<float>(8)})[1], run(func, {in, std::vector<float>(8)})[1]);
}

TEST(VectorizeLoopsFallback, GuardedLoadWhoseIndicesLoadOutOfBounds) {
  // B[i] = if_then_else(i >= 1, A[int(A[i - 1])], 0): the index's own load is out of bounds on
  // lane 0, and a masked load evaluates its indices on every lane.
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Expr index = cast(DataType::int32(), buffer_load(a, {i - 1}));
  Expr value = if_then_else(ge(i, i32(1)), buffer_load(a, {index}), f32(0));
  Ref<PrimFunc> result =
      vectorize_loops(make_func({a, b}, vectorized(i, 8, buffer_store(b, value, {i}))));
  EXPECT_EQ(fallback_reason(result),
            "if_then_else(i >= 1, ...) varies across lanes and guards a load that may be out of "
            "bounds with indices that load out of bounds too");
}

TEST(VectorizeLoopsFallback, GuardedLoadInsideAnArmThatDoesNotVary) {
  // B[i] = if_then_else(i >= n, A[i] * A[n], 0): A[n] is the same on every lane, inside an arm.
  Ref<Var> i = make_var("i"), n = make_var("n");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Expr value = if_then_else(ge(i, n), mul(buffer_load(a, {i}), buffer_load(a, {n})), f32(0));
  Ref<PrimFunc> result =
      vectorize_loops(make_func({a, b, n}, vectorized(i, 8, buffer_store(b, value, {i}))));
  EXPECT_EQ(fallback_reason(result),
            "if_then_else(i >= n, ...) varies across lanes and guards a load that may be out of "
            "bounds inside an arm, the same on every lane");
}

TEST(VectorizeLoopsFallback, InnerLoopWithAVaryingExtent) {
  // for i in vectorized(4): for k in range(i): B[i] = B[i] + 1
  Ref<Var> i = make_var("i"), k = make_var("k");
  Ref<Buffer> b = buffer_1d("B", i32(4));
  Stmt inner = loop(k, i32(0), i, buffer_store(b, add(buffer_load(b, {i}), f32(1)), {i}));
  Ref<PrimFunc> result = vectorize_loops(make_func({b}, vectorized(i, 4, inner)));
  EXPECT_EQ(fallback_reason(result), "the range of the inner loop k varies across lanes");
}

TEST(VectorizeLoopsFallback, CallWithSideEffects) {
  Ref<Var> i = make_var("i");
  Ref<Buffer> b = buffer_1d("B", i32(4));
  Expr effect = call(DataType::int32(), Builtin::CallExtern, {make<StringImm>("log_value"), i});
  Ref<PrimFunc> result = vectorize_loops(make_func({b}, vectorized(i, 4, make<Evaluate>(effect))));
  EXPECT_EQ(fallback_reason(result), "it calls call_extern, which has side effects");
}

TEST(VectorizeLoopsFallback, FunctionListsEveryFallbackAndNothingIsPrinted) {
  // Two loops fall back: their names and reasons, in order, in the function's attribute.
  Ref<Var> i = make_var("i"), j = make_var("j"), n = make_size_var("n");
  Ref<Buffer> b = buffer_1d("B", n);
  Stmt first = loop(i, i32(0), n, buffer_store(b, f32(0), {i}), ForKind::kVectorized);
  Stmt second = loop(j, 4, buffer_store(b, f32(1), {i32(0)}), ForKind::kVectorized);
  Ref<PrimFunc> func = make_func({b}, make<SeqStmt>(std::vector<Stmt>{first, second}));
  ::testing::internal::CaptureStderr();
  Ref<PrimFunc> result = vectorize_loops(func);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  auto it = result->attrs.find("kiln.vectorize_fallbacks");
  ASSERT_NE(it, result->attrs.end());
  EXPECT_EQ(it->second.as<StringImm>()->value,
            "[{\"loop\":\"i\",\"reason\":\"its extent n is not a constant\"},"
            "{\"loop\":\"j\",\"reason\":\"the store to B[0] does not vary across lanes\"}]");
  // A function whose loops all vectorize has no such attribute.
  Ref<Buffer> c = buffer_1d("C", i32(8));
  Ref<PrimFunc> clean = vectorize_loops(
      make_func({c}, loop(i, 8, buffer_store(c, f32(0), {i}), ForKind::kVectorized)));
  EXPECT_EQ(clean->attrs.count("kiln.vectorize_fallbacks"), 0u);
}

}  // namespace
}  // namespace kiln::tir
