// Correctness tests of the reference interpreter on hand-built PrimFuncs: loops, blocks with
// reduction init, vectors, integer and float rules, allocation, shared storage and symbolic
// shapes, each checked against values computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "func_builder.h"

namespace kiln::interpreter::testing {
namespace {

const DataType f32 = DataType::float32();
const DataType i32 = DataType::int32();

TEST(Interpret, LoopAddsVectors) {
  auto A = buffer({16}, f32, "A");
  auto B = buffer({16}, f32, "B");
  auto C = buffer({16}, f32, "C");
  Ref<Var> i = make_var("i");
  auto func = make_func(
      {A, B, C}, loop(i, 16, buffer_store(C, buffer_load(A, {i}) + buffer_load(B, {i}), {i})));
  std::vector<float> a(16), b(16), c(16, -1.0f);
  for (int k = 0; k < 16; ++k) {
    a[k] = 0.5f * k;
    b[k] = 100.0f - k;
  }
  interpret(*func, {array(a, f32), array(b, f32), array(c, f32)});
  for (int k = 0; k < 16; ++k) EXPECT_EQ(c[k], 100.0f - 0.5f * k) << k;
}

// B[i] = sum over k of A[i, k], as a block whose init zeroes B[i] at the first k.
Ref<PrimFunc> row_sum(const Ref<Buffer>& A, const Ref<Buffer>& B, int rows, int cols) {
  Ref<Var> i = make_var("i"), k = make_var("k");
  Ref<Var> vi = make_var("vi"), vk = make_var("vk");
  auto block = make<Block>();
  block->name = "B";
  block->iter_vars = {IterVar{vi, Range{int32_const(0), int32_const(rows)}, IterType::kDataPar},
                      IterVar{vk, Range{int32_const(0), int32_const(cols)}, IterType::kCommReduce}};
  block->init = buffer_store(B, make_zero(f32), {vi});
  block->body = buffer_store(B, buffer_load(B, {vi}) + buffer_load(A, {vi, vk}), {vi});
  Stmt realize = make<BlockRealize>(std::vector<Expr>{i, k}, bool_const(true), block);
  auto root = make<Block>();
  root->name = "root";
  root->body = loop(i, rows, loop(k, cols, realize));
  return make_func({A, B}, make<BlockRealize>(std::vector<Expr>{}, bool_const(true), root));
}

TEST(Interpret, BlockInitRunsAtTheFirstReductionStep) {
  auto A = buffer({4, 8}, f32, "A");
  auto B = buffer({4}, f32, "B");
  std::vector<float> a(32), b(4, 100.0f);
  for (int k = 0; k < 32; ++k) a[k] = static_cast<float>(k);
  interpret(*row_sum(A, B, 4, 8), {array(a, f32, {4, 8}), array(b, f32)});
  for (int r = 0; r < 4; ++r) EXPECT_EQ(b[r], 64.0f * r + 28.0f) << r;
}

TEST(Interpret, BlockPredicateSkipsTheBlock) {
  auto A = buffer({10}, f32, "A");
  Ref<Var> i = make_var("i"), vi = make_var("vi");
  auto block = make<Block>();
  block->name = "A";
  block->iter_vars = {IterVar{vi, Range{int32_const(0), int32_const(10)}, IterType::kDataPar}};
  block->body = buffer_store(A, make_const(f32, 1.0), {vi});
  // The loop runs 12 times; the predicate keeps the block (and its domain) to i < 10.
  Stmt realize = make<BlockRealize>(std::vector<Expr>{i}, lt(i, int32_const(10)), block);
  auto func = make_func({A}, loop(i, 12, realize));
  std::vector<float> a(10, 0.0f);
  interpret(*func, {array(a, f32)});
  for (float v : a) EXPECT_EQ(v, 1.0f);
}

TEST(Interpret, RampLoadsAndStoresVectors) {
  auto A = buffer({16}, i32, "A");
  auto C = buffer({16}, i32, "C");
  Ref<Var> i = make_var("i");
  Expr index = ramp(i * 4, int32_const(1), 4);
  Expr reversed = ramp(i * 4 + 3, int32_const(-1), 4);
  Stmt body = buffer_store(C, buffer_load(A, {reversed}) * broadcast(int32_const(10), 4), {index});
  auto func = make_func({A, C}, loop(i, 4, body));
  std::vector<int32_t> a(16), c(16, 0);
  for (int k = 0; k < 16; ++k) a[k] = k;
  interpret(*func, {array(a, i32), array(c, i32)});
  for (int k = 0; k < 16; ++k) EXPECT_EQ(c[k], 10 * ((k / 4) * 4 + 3 - k % 4)) << k;
}

TEST(Interpret, VectorSelectAndCastWorkPerLane) {
  auto A = buffer({4}, f32, "A");
  auto C = buffer({4}, i32, "C");
  Expr lanes = ramp(int32_const(0), int32_const(1), 4);
  Expr v = buffer_load(A, {lanes});
  Expr picked = select(gt(v, broadcast(make_zero(f32), 4)), v, -v);
  auto func = make_func({A, C}, buffer_store(C, cast(DataType::int_(32, 4), picked), {lanes}));
  std::vector<float> a = {1.5f, -2.5f, 3.9f, -0.5f};
  std::vector<int32_t> c(4, 0);
  interpret(*func, {array(a, f32), array(c, i32)});
  EXPECT_EQ(c, (std::vector<int32_t>{1, 2, 3, 0}));
}

// C[k] = op(A[k], B[k]) for one element, on int arrays of `dtype`.
template <class T>
std::vector<T> apply_binary(Expr (*op)(Expr, Expr), DataType dtype, std::vector<T> a,
                            std::vector<T> b) {
  auto A = buffer({static_cast<int64_t>(a.size())}, dtype, "A");
  auto B = buffer({static_cast<int64_t>(a.size())}, dtype, "B");
  auto C = buffer({static_cast<int64_t>(a.size())}, dtype, "C");
  Ref<Var> i = make_var("i");
  auto func = make_func({A, B, C},
                        loop(i, static_cast<int64_t>(a.size()),
                             buffer_store(C, op(buffer_load(A, {i}), buffer_load(B, {i})), {i})));
  std::vector<T> c(a.size());
  interpret(*func, {array(a, dtype), array(b, dtype), array(c, dtype)});
  return c;
}

TEST(Interpret, IntegersWrapToTheirWidth) {
  const int32_t max32 = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(apply_binary<int32_t>(&add, i32, {max32, -max32}, {1, -2}),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), max32}));
  EXPECT_EQ(apply_binary<int8_t>(&mul, DataType::int_(8), {100, -128}, {3, -1}),
            (std::vector<int8_t>{44, -128}));
  EXPECT_EQ(apply_binary<uint8_t>(&sub, DataType::uint(8), {1, 200}, {2, 100}),
            (std::vector<uint8_t>{255, 100}));
  EXPECT_EQ(apply_binary<uint64_t>(&add, DataType::uint(64), {~uint64_t{0}}, {2}),
            (std::vector<uint64_t>{1}));
  // INT32_MIN / -1 overflows: it wraps, as the multiplication would.
  EXPECT_EQ(apply_binary<int32_t>(&truncdiv, i32, {std::numeric_limits<int32_t>::min()}, {-1}),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::min()}));
}

TEST(Interpret, FloorDivisionOfNegativesRoundsDown) {
  std::vector<int32_t> a = {-7, 7, -7, 7, -8};
  std::vector<int32_t> b = {2, -2, -2, 2, 4};
  EXPECT_EQ(apply_binary<int32_t>(&floordiv, i32, a, b), (std::vector<int32_t>{-4, -4, 3, 3, -2}));
  EXPECT_EQ(apply_binary<int32_t>(&floormod, i32, a, b), (std::vector<int32_t>{1, -1, -1, 1, 0}));
  EXPECT_EQ(apply_binary<int32_t>(&truncdiv, i32, a, b), (std::vector<int32_t>{-3, -3, 3, 3, -2}));
  EXPECT_EQ(apply_binary<int32_t>(&truncmod, i32, a, b), (std::vector<int32_t>{-1, 1, -1, 1, 0}));
}

TEST(Interpret, Float32RoundsAfterEveryOperation) {
  // 2^24 + 1 is not a float32: (2^24 + 1) - 2^24 is 0 in float32, 1 in exact arithmetic.
  auto A = buffer({2}, f32, "A");
  auto C = buffer({1}, f32, "C");
  Expr big = buffer_load(A, {int32_const(0)});
  Expr one = buffer_load(A, {int32_const(1)});
  auto func = make_func({A, C}, buffer_store(C, (big + one) - big, {int32_const(0)}));
  std::vector<float> a = {16777216.0f, 1.0f}, c = {-1.0f};
  interpret(*func, {array(a, f32), array(c, f32)});
  EXPECT_EQ(c[0], 0.0f);
}

TEST(Interpret, Float16ArithmeticRoundsToNearestEven) {
  const DataType f16 = DataType::float_(16);
  // Bit patterns: 0x3C00 = 1, 0x3C01 = 1 + 2^-10, 0x1000 = 2^-11, 0x2E66 = 0.0999755859375.
  // 1 + 2^-11 ties to the even 1; (1 + 2^-10) + 2^-11 ties to the even 1 + 2^-9 (0x3C02);
  // 0.0999755859375 * 3 = 0.2999267578125 ties between 0x34CC and 0x34CD, to the even 0x34CC.
  std::vector<uint16_t> a = {0x3C00, 0x3C01, 0x2E66}, b = {0x1000, 0x1000, 0x4200};
  std::vector<uint16_t> sum(3), product(3);
  auto A = buffer({3}, f16, "A");
  auto B = buffer({3}, f16, "B");
  auto S = buffer({3}, f16, "S");
  auto P = buffer({3}, f16, "P");
  Ref<Var> i = make_var("i");
  Expr x = buffer_load(A, {i}), y = buffer_load(B, {i});
  auto func = make_func(
      {A, B, S, P}, loop(i, 3, seq({buffer_store(S, x + y, {i}), buffer_store(P, x * y, {i})})));
  interpret(*func, {array(a, f16), array(b, f16), array(sum, f16), array(product, f16)});
  EXPECT_EQ(sum[0], 0x3C00);
  EXPECT_EQ(sum[1], 0x3C02);
  EXPECT_EQ(product[2], 0x34CC);
}

TEST(Interpret, BFloat16ArithmeticRoundsToNearestEven) {
  const DataType bf16 = DataType::bfloat16();
  // 0x3F80 = 1, 0x3F81 = 1 + 2^-7, 0x3B80 = 2^-8: 1 + 2^-8 ties to 1; (1 + 2^-7) + 2^-8 ties
  // to the even 1 + 2^-6 (0x3F82). 0x4040 = 3: 3 * 3 = 9 = 0x4110 exactly.
  std::vector<uint16_t> a = {0x3F80, 0x3F81, 0x4040}, b = {0x3B80, 0x3B80, 0x4040};
  std::vector<uint16_t> sum(3), product(3);
  auto A = buffer({3}, bf16, "A");
  auto B = buffer({3}, bf16, "B");
  auto S = buffer({3}, bf16, "S");
  auto P = buffer({3}, bf16, "P");
  Ref<Var> i = make_var("i");
  Expr x = buffer_load(A, {i}), y = buffer_load(B, {i});
  auto func = make_func(
      {A, B, S, P}, loop(i, 3, seq({buffer_store(S, x + y, {i}), buffer_store(P, x * y, {i})})));
  interpret(*func, {array(a, bf16), array(b, bf16), array(sum, bf16), array(product, bf16)});
  EXPECT_EQ(sum[0], 0x3F80);
  EXPECT_EQ(sum[1], 0x3F82);
  EXPECT_EQ(product[2], 0x4110);
}

TEST(Interpret, CastsFromFloatTruncateAndSaturate) {
  auto A = buffer({5}, f32, "A");
  auto C = buffer({5}, DataType::int_(8), "C");
  Ref<Var> i = make_var("i");
  auto func = make_func(
      {A, C}, loop(i, 5, buffer_store(C, cast(DataType::int_(8), buffer_load(A, {i})), {i})));
  std::vector<float> a = {-2.7f, 2.7f, 1000.0f, -1000.0f, std::nanf("")};
  std::vector<int8_t> c(5, 99);
  interpret(*func, {array(a, f32), array(c, DataType::int_(8))});
  EXPECT_EQ(c, (std::vector<int8_t>{-2, 2, 127, -128, 0}));
}

TEST(Interpret, IntegerCastToNarrowerWraps) {
  auto A = buffer({2}, i32, "A");
  auto C = buffer({2}, DataType::int_(8), "C");
  Ref<Var> i = make_var("i");
  auto func = make_func(
      {A, C}, loop(i, 2, buffer_store(C, cast(DataType::int_(8), buffer_load(A, {i})), {i})));
  std::vector<int32_t> a = {300, -129};
  std::vector<int8_t> c(2);
  interpret(*func, {array(a, i32), array(c, DataType::int_(8))});
  EXPECT_EQ(c, (std::vector<int8_t>{44, 127}));
}

TEST(Interpret, AllocateGivesScratchFilledWithGarbage) {
  auto A = buffer({4}, f32, "A");
  auto C = buffer({4}, f32, "C");
  auto G = buffer({1}, f32, "G");
  auto T = buffer({4}, f32, "T");
  Ref<Var> i = make_var("i");
  Stmt body = seq({loop(i, 4, buffer_store(T, buffer_load(A, {i}) * make_const(f32, 2.0), {i})),
                   loop(i, 4, buffer_store(C, buffer_load(T, {i}) + make_const(f32, 1.0), {i}))});
  auto func = make_func({A, C}, make<Allocate>(T, body));
  std::vector<float> a = {1, 2, 3, 4}, c(4);
  interpret(*func, {array(a, f32), array(c, f32)});
  EXPECT_EQ(c, (std::vector<float>{3, 5, 7, 9}));

  // Memory that was never written reads as NaN (floats) or 0xCD bytes (integers).
  auto TI = buffer({1}, i32, "TI");
  auto CI = buffer({1}, i32, "CI");
  auto read_garbage = make_func(
      {G, CI},
      make<Allocate>(
          T,
          make<Allocate>(
              TI, seq({buffer_store(G, buffer_load(T, {int32_const(2)}), {int32_const(0)}),
                       buffer_store(CI, buffer_load(TI, {int32_const(0)}), {int32_const(0)})}))));
  std::vector<float> g = {0.0f};
  std::vector<int32_t> ci = {0};
  interpret(*read_garbage, {array(g, f32), array(ci, i32)});
  EXPECT_TRUE(std::isnan(g[0]));
  EXPECT_EQ(static_cast<uint32_t>(ci[0]), 0xCDCDCDCDu);
}

TEST(Interpret, BlockAllocBuffersLiveInsideTheBlock) {
  auto A = buffer({4}, f32, "A");
  auto B = buffer({4}, f32, "B");
  auto T = buffer({4}, f32, "T");
  Ref<Var> i = make_var("i");
  auto root = make<Block>();
  root->name = "root";
  root->alloc_buffers = {T};
  root->body = seq({loop(i, 4, buffer_store(T, buffer_load(A, {i}) + make_const(f32, 1.0), {i})),
                    loop(i, 4, buffer_store(B, buffer_load(T, {3 - Expr(i)}), {i}))});
  auto func = make_func({A, B}, make<BlockRealize>(std::vector<Expr>{}, bool_const(true), root));
  std::vector<float> a = {1, 2, 3, 4}, b(4);
  interpret(*func, {array(a, f32), array(b, f32)});
  EXPECT_EQ(b, (std::vector<float>{5, 4, 3, 2}));
}

TEST(Interpret, BuffersWithOneDataVariableShareStorage) {
  // A 2x3 view and a flat view of one array: the flat store is seen by the 2-D load.
  auto A = buffer({2, 3}, f32, "A");
  auto flat = make<Buffer>(*A);
  flat->shape = {int32_const(6)};
  flat->name = "A_flat";
  auto C = buffer({1}, f32, "C");
  Stmt body =
      seq({buffer_store(flat, make_const(f32, 42.0), {int32_const(4)}),
           buffer_store(C, buffer_load(A, {int32_const(1), int32_const(1)}), {int32_const(0)})});
  auto func = make_func({A, C}, body);
  std::vector<float> a(6, 0.0f), c = {0.0f};
  interpret(*func, {array(a, f32, {2, 3}), array(c, f32)});
  EXPECT_EQ(c[0], 42.0f);
  EXPECT_EQ(a[4], 42.0f);
}

TEST(Interpret, StridesAndElemOffsetAreRespected) {
  // B views every other element of A's storage, starting at element 1.
  auto A = buffer({8}, f32, "A");
  auto B = make<Buffer>(*A);
  B->shape = {int32_const(4)};
  B->strides = {int32_const(2)};
  B->elem_offset = int32_const(1);
  B->name = "B";
  Ref<Var> i = make_var("i");
  auto func = make_func({A}, loop(i, 4, buffer_store(B, cast(f32, i * 10), {i})));
  std::vector<float> a(8, -1.0f);
  interpret(*func, {array(a, f32)});
  EXPECT_EQ(a, (std::vector<float>{-1, 0, -1, 10, -1, 20, -1, 30}));
}

TEST(Interpret, SymbolicStridesBindFromTheArgument) {
  // A buffer with a variable stride views a strided array in place.
  Ref<Var> s = make_size_var("s");
  auto A = buffer({4}, f32, "A");
  A->strides = {s};
  Ref<Var> i = make_var("i");
  auto func = make_func({A}, loop(i, 4, buffer_store(A, cast(f32, i + 1), {i})));
  std::vector<float> a(8, 0.0f);
  interpret(*func, {Argument::tensor(a.data(), f32, {4}, {2})});
  EXPECT_EQ(a, (std::vector<float>{1, 0, 2, 0, 3, 0, 4, 0}));
}

TEST(Interpret, SymbolicShapesBindFromTheFirstBuffer) {
  Ref<Var> n = make_size_var("n");
  auto A = decl_buffer({n}, f32, "A");
  auto B = decl_buffer({n}, f32, "B");
  Ref<Var> i = make_var("i");
  auto func = make_func(
      {A, B}, loop(i, Expr(n), buffer_store(B, buffer_load(A, {i}) * make_const(f32, 3.0), {i})));
  std::vector<float> a = {1, 2, 3, 4, 5}, b(5);
  interpret(*func, {array(a, f32), array(b, f32)});
  EXPECT_EQ(b, (std::vector<float>{3, 6, 9, 12, 15}));
}

TEST(Interpret, ScalarParametersTakeNumbers) {
  Ref<Var> scale = make_var("scale", f32);
  Ref<Var> count = make_var("count", i32);
  auto A = buffer({4}, f32, "A");
  Ref<Var> i = make_var("i");
  auto func = make_func({A, scale, count},
                        loop(i, Expr(count), buffer_store(A, buffer_load(A, {i}) * scale, {i})));
  std::vector<float> a = {1, 2, 3, 4};
  interpret(*func, {array(a, f32), Argument::floating(0.5), Argument::integer(3)});
  EXPECT_EQ(a, (std::vector<float>{0.5f, 1.0f, 1.5f, 4.0f}));
}

TEST(Interpret, IfThenElseEvaluatesOnlyThePickedArm) {
  // A padded copy: B has 6 elements, A only 4; the guarded load never touches A[4] or A[5].
  auto A = buffer({4}, f32, "A");
  auto B = buffer({6}, f32, "B");
  Ref<Var> i = make_var("i");
  Expr padded = if_then_else(lt(i, int32_const(4)), buffer_load(A, {i}), make_zero(f32));
  auto func = make_func({A, B}, loop(i, 6, buffer_store(B, padded, {i})));
  std::vector<float> a = {1, 2, 3, 4}, b(6, -1.0f);
  interpret(*func, {array(a, f32), array(b, f32)});
  EXPECT_EQ(b, (std::vector<float>{1, 2, 3, 4, 0, 0}));
}

TEST(Interpret, LetStmtAndLetBindValues) {
  auto A = buffer({1}, i32, "A");
  Ref<Var> x = make_var("x"), y = make_var("y");
  Stmt body =
      make<LetStmt>(x, int32_const(6), buffer_store(A, let(y, x * 7, y + x), {int32_const(0)}));
  auto func = make_func({A}, body);
  std::vector<int32_t> a = {0};
  interpret(*func, {array(a, i32)});
  EXPECT_EQ(a[0], 48);
}

TEST(Interpret, BitOperationsAndReinterpret) {
  auto A = buffer({1}, i32, "A");
  auto C = buffer({5}, i32, "C");
  auto F = buffer({1}, f32, "F");
  Expr a = buffer_load(A, {int32_const(0)});
  Stmt body = seq({
      buffer_store(C, call(Builtin::ShiftLeft, {a, int32_const(4)}), {int32_const(0)}),
      buffer_store(C, call(Builtin::ShiftRight, {-a, int32_const(1)}), {int32_const(1)}),
      buffer_store(C, call(Builtin::BitwiseXor, {a, int32_const(0xFF)}), {int32_const(2)}),
      buffer_store(C, call(Builtin::Popcount, {-a}), {int32_const(3)}),
      buffer_store(C, call(Builtin::Abs, {-a}), {int32_const(4)}),
      buffer_store(F, call(f32, Builtin::Reinterpret, {a * 0 + 0x3F800000}), {int32_const(0)}),
  });
  auto func = make_func({A, C, F}, body);
  std::vector<int32_t> av = {5}, c(5);
  std::vector<float> f = {0.0f};
  interpret(*func, {array(av, i32), array(c, i32), array(f, f32)});
  EXPECT_EQ(c, (std::vector<int32_t>{80, -3, 0xFA, 31, 5}));
  EXPECT_EQ(f[0], 1.0f);
}

TEST(Interpret, MathBuiltinsRoundToTheDtype) {
  auto A = buffer({4}, f32, "A");
  auto E = buffer({4}, f32, "E");
  auto R = buffer({4}, f32, "R");
  Ref<Var> i = make_var("i");
  Expr x = buffer_load(A, {i});
  auto func = make_func({A, E, R}, loop(i, 4,
                                        seq({buffer_store(E, call(Builtin::Exp, {x}), {i}),
                                             buffer_store(R, call(Builtin::Round, {x}), {i})})));
  std::vector<float> a = {0.5f, 1.5f, 2.5f, -0.5f}, e(4), r(4);
  interpret(*func, {array(a, f32), array(e, f32), array(r, f32)});
  for (int k = 0; k < 4; ++k) EXPECT_EQ(e[k], static_cast<float>(std::exp(double{a[k]}))) << k;
  EXPECT_EQ(r, (std::vector<float>{0.0f, 2.0f, 2.0f, -0.0f}));
}

TEST(Interpret, ThreadBoundLoopsRunSequentially) {
  auto A = buffer({8}, i32, "A");
  Ref<Var> tx = make_var("tx");
  auto loop_node = make<For>(tx, int32_const(0), int32_const(8), ForKind::kThreadBinding,
                             buffer_store(A, tx * tx, {tx}));
  loop_node->thread_tag = "threadIdx.x";
  auto func = make_func({A}, loop_node);
  std::vector<int32_t> a(8);
  interpret(*func, {array(a, i32)});
  for (int k = 0; k < 8; ++k) EXPECT_EQ(a[k], k * k);
}

TEST(Interpret, MatmulMatchesANaiveLoop) {
  const int n = 16;
  auto A = buffer({n, n}, f32, "A");
  auto B = buffer({n, n}, f32, "B");
  auto C = buffer({n, n}, f32, "C");
  Ref<Var> i = make_var("i"), j = make_var("j"), k = make_var("k");
  Ref<Var> vi = make_var("vi"), vj = make_var("vj"), vk = make_var("vk");
  auto block = make<Block>();
  block->name = "C";
  block->iter_vars = {IterVar{vi, Range{int32_const(0), int32_const(n)}, IterType::kDataPar},
                      IterVar{vj, Range{int32_const(0), int32_const(n)}, IterType::kDataPar},
                      IterVar{vk, Range{int32_const(0), int32_const(n)}, IterType::kCommReduce}};
  block->init = buffer_store(C, make_zero(f32), {vi, vj});
  block->body = buffer_store(
      C, buffer_load(C, {vi, vj}) + buffer_load(A, {vi, vk}) * buffer_load(B, {vk, vj}), {vi, vj});
  Stmt realize = make<BlockRealize>(std::vector<Expr>{i, j, k}, bool_const(true), block);
  auto func = make_func({A, B, C}, loop(i, n, loop(j, n, loop(k, n, realize))));
  std::vector<float> a(n * n), b(n * n), c(n * n, 7.0f);
  for (int x = 0; x < n * n; ++x) {
    a[x] = static_cast<float>(x % 7) - 3.0f;
    b[x] = static_cast<float>(x % 5) * 0.25f;
  }
  interpret(*func, {array(a, f32, {n, n}), array(b, f32, {n, n}), array(c, f32, {n, n})});
  for (int r = 0; r < n; ++r) {
    for (int s = 0; s < n; ++s) {
      float expected = 0.0f;
      for (int t = 0; t < n; ++t) expected = expected + a[r * n + t] * b[t * n + s];
      EXPECT_EQ(c[r * n + s], expected) << r << "," << s;
    }
  }
}

}  // namespace
}  // namespace kiln::interpreter::testing
