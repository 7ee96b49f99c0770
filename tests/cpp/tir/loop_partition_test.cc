// Tests of loop_partition: golden IR for constant and symbolic split points, lower and two-sided
// bounds, the numeric check on the interpreter, and the cases that are left alone (a loop where
// a GPU block's threads synchronize, at a split point that depends on the thread, among them).
#include "kiln/tir/loop_partition.h"

#include <gtest/gtest.h>

#include "flat_program.h"
#include "kiln/ir/printer.h"
#include "kiln/tir/verify_ir.h"

namespace kiln::tir {
namespace {

using namespace flat_testing;

// for io in range(outer): for ii in range(8): if likely(io * 8 + ii < n): B[..] = A[..] * 2
struct SplitLoop {
  Ref<Var> io = make_var("io"), ii = make_var("ii");
  Ref<Buffer> a, b;
  Ref<PrimFunc> func;

  SplitLoop(Expr n, Expr outer, bool mark_likely = true, std::vector<Param> extra = {}) {
    a = buffer_1d("A", n);
    b = buffer_1d("B", n);
    Expr index = io * 8 + ii;
    Expr condition = lt(index, n);
    if (mark_likely) condition = likely(condition);
    Stmt store = buffer_store(b, mul(buffer_load(a, {index}), make_const(DataType::float32(), 2.0)),
                              {index});
    Stmt body = loop(io, int32_const(0), outer, loop(ii, 8, make<IfThenElse>(condition, store)));
    std::vector<Param> params{a, b};
    for (const Param& p : extra) params.push_back(p);
    func = make_func(params, body);
  }
};

std::vector<float> doubled(const std::vector<float>& a) {
  std::vector<float> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] * 2.0f;
  return out;
}

TEST(LoopPartition, ConstantExtentPeelsTheLastIteration) {
  SplitLoop s(i32(100), i32(13));
  Ref<PrimFunc> result = loop_partition(s.func);
  EXPECT_EQ(to_script(result->body),
            "for io, ii in T.grid(12, 8):\n"
            "    B[io * 8 + ii] = A[io * 8 + ii] * T.float32(2)\n"
            "for ii_1 in range(8):\n"
            "    if T.likely(12 * 8 + ii_1 < 100):\n"
            "        B[12 * 8 + ii_1] = A[12 * 8 + ii_1] * T.float32(2)");
  verify_ir(result, "loop_partition");
  std::vector<float> a = random_floats(100);
  std::vector<std::vector<float>> out = run(result, {a, std::vector<float>(100, 0.0f)});
  EXPECT_EQ(out[1], doubled(a));
}

TEST(LoopPartition, SymbolicExtentSplitsAtAnExpression) {
  Ref<Var> n = make_size_var("n");
  SplitLoop s(n, floordiv(n + 7, i32(8)));
  Ref<PrimFunc> result = loop_partition(s.func);
  std::vector<const For*> loops = loops_of(result->body);
  ASSERT_EQ(loops.size(), 4u);
  // The steady loop has no check; the tail keeps it.
  EXPECT_EQ(to_script(loops[0]->extent), "n // 8");
  EXPECT_EQ(count_kind(Stmt(loops[0]), NodeKind::IfThenElse), 0);
  // The tail is searched again: its inner loop stops at the bound instead of checking it.
  EXPECT_EQ(to_script(loops[3]->extent), "T.max(T.min(n - io * 8, 8), 0)");
  EXPECT_EQ(count_kind(result->body, NodeKind::IfThenElse), 0);
  verify_ir(result, "loop_partition");
  for (int64_t size : {0, 1, 7, 8, 9, 64, 100}) {
    std::vector<float> a = random_floats(static_cast<size_t>(size), static_cast<unsigned>(size));
    std::vector<std::vector<float>> out =
        run(result, {a, std::vector<float>(static_cast<size_t>(size), 0.0f)});
    EXPECT_EQ(out[1], doubled(a)) << "n = " << size;
  }
}

TEST(LoopPartition, PlainConditionFromABlockPredicate) {
  SplitLoop s(i32(30), i32(4), /*mark_likely=*/false);
  Ref<PrimFunc> result = loop_partition(s.func);
  std::vector<const For*> loops = loops_of(result->body);
  ASSERT_EQ(loops.size(), 3u);
  EXPECT_EQ(to_script(loops[0]->extent), "3");
  EXPECT_EQ(count_kind(result->body, NodeKind::IfThenElse), 1);
  std::vector<float> a = random_floats(30);
  EXPECT_EQ(run(result, {a, std::vector<float>(30, 0.0f)})[1], doubled(a));
}

TEST(LoopPartition, LowerBoundDropsTheFalseHeadAndPeelsTheCheckedIteration) {
  // for i in range(10): for j in range(4): if likely(i * 4 + j >= 6): B[i * 4 + j] = A[...]
  // i = 0 fails the check everywhere (nothing is left of it), i = 1 is checked.
  Ref<Var> i = make_var("i"), j = make_var("j");
  Ref<Buffer> a = buffer_1d("A", i32(40)), b = buffer_1d("B", i32(40));
  Expr index = i * 4 + j;
  Stmt store = buffer_store(b, buffer_load(a, {index}), {index});
  Stmt body = loop(i, 10, loop(j, 4, make<IfThenElse>(likely(ge(index, i32(6))), store)));
  Ref<PrimFunc> result = loop_partition(make_func({a, b}, body));
  EXPECT_EQ(to_script(result->body),
            "for j in range(4):\n"
            "    if T.likely(1 * 4 + j >= 6):\n"
            "        B[1 * 4 + j] = A[1 * 4 + j]\n"
            "for i in range(2, 10):\n"
            "    for j_1 in range(4):\n"
            "        B[i * 4 + j_1] = A[i * 4 + j_1]");
  verify_ir(result, "loop_partition");
  std::vector<float> in = random_floats(40);
  std::vector<float> expected(40, 0.0f);
  for (int k = 6; k < 40; ++k) expected[k] = in[k];
  EXPECT_EQ(run(result, {in, std::vector<float>(40, 0.0f)})[1], expected);
}

TEST(LoopPartition, TwoSidedBoundGivesThreeParts) {
  // A padded copy: if likely(i * 4 + j >= 3 && i * 4 + j < 29).
  Ref<Var> i = make_var("i"), j = make_var("j");
  Ref<Buffer> a = buffer_1d("A", i32(32)), b = buffer_1d("B", i32(32));
  Expr index = i * 4 + j;
  Stmt store = buffer_store(b, buffer_load(a, {index}), {index});
  Expr inside = logical_and(ge(index, i32(3)), lt(index, i32(29)));
  Stmt body = loop(i, 8, loop(j, 4, make<IfThenElse>(likely(inside), store)));
  Ref<PrimFunc> result = loop_partition(make_func({a, b}, body));
  // Head i = 0 (peeled), steady i in [1, 7), tail i = 7 (peeled).
  const auto* parts = result->body.as<SeqStmt>();
  ASSERT_NE(parts, nullptr) << to_script(result->body);
  ASSERT_EQ(parts->seq.size(), 3u) << to_script(result->body);
  EXPECT_EQ(to_script(result->body),
            "for j in range(4):\n"
            "    if T.likely(0 * 4 + j >= 3):\n"
            "        B[0 * 4 + j] = A[0 * 4 + j]\n"
            "for i in range(1, 7):\n"
            "    for j_1 in range(4):\n"
            "        B[i * 4 + j_1] = A[i * 4 + j_1]\n"
            "for j_2 in range(4):\n"
            "    if T.likely(7 * 4 + j_2 < 29):\n"
            "        B[7 * 4 + j_2] = A[7 * 4 + j_2]");
  const auto* steady = parts->seq[1].as<For>();
  ASSERT_NE(steady, nullptr);
  EXPECT_EQ(to_script(steady->min), "1");
  EXPECT_EQ(to_script(steady->extent), "6");
  EXPECT_EQ(count_kind(parts->seq[1], NodeKind::IfThenElse), 0);
  verify_ir(result, "loop_partition");
  std::vector<float> in = random_floats(32);
  std::vector<float> expected(32, 0.0f);
  for (int k = 3; k < 29; ++k) expected[k] = in[k];
  EXPECT_EQ(run(result, {in, std::vector<float>(32, 0.0f)})[1], expected);
}

TEST(LoopPartition, LikelyIfThenElseCallIsPartitioned) {
  // B[i*4 + j] = if_then_else(likely(i * 4 + j < 30), A[i * 4 + j], 0) over 32 elements.
  Ref<Var> i = make_var("i"), j = make_var("j");
  Ref<Buffer> a = buffer_1d("A", i32(32)), b = buffer_1d("B", i32(32));
  Expr index = i * 4 + j;
  Expr value = if_then_else(likely(lt(index, i32(30))), buffer_load(a, {index}),
                            make_const(DataType::float32(), 0.0));
  Stmt body = loop(i, 8, loop(j, 4, buffer_store(b, value, {index})));
  Ref<PrimFunc> result = loop_partition(make_func({a, b}, body));
  const auto* parts = result->body.as<SeqStmt>();
  ASSERT_NE(parts, nullptr);
  EXPECT_EQ(count_calls(parts->seq[0], Builtin::IfThenElse), 0);
  EXPECT_EQ(count_calls(parts->seq[1], Builtin::IfThenElse), 1);
  std::vector<float> in = random_floats(32);
  std::vector<float> expected(in.begin(), in.end());
  expected[30] = expected[31] = 0.0f;
  EXPECT_EQ(run(result, {in, std::vector<float>(32, 1.0f)})[1], expected);
}

TEST(LoopPartition, DivisibleExtentRemovesTheCheck) {
  SplitLoop s(i32(96), i32(12));
  Ref<PrimFunc> result = loop_partition(s.func);
  EXPECT_EQ(count_kind(result->body, NodeKind::IfThenElse), 0);
  EXPECT_EQ(loops_of(result->body).size(), 2u);
}

TEST(LoopPartition, UnchangedWithoutAffineChecks) {
  // No condition at all.
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(16)), b = buffer_1d("B", i32(16));
  Ref<PrimFunc> plain = make_func({a, b}, loop(i, 16, buffer_store(b, buffer_load(a, {i}), {i})));
  EXPECT_TRUE(loop_partition(plain).same_as(plain));
  // A condition that is not affine in the loop variable.
  Stmt store = buffer_store(b, buffer_load(a, {i}), {i});
  Ref<PrimFunc> square =
      make_func({a, b}, loop(i, 16, make<IfThenElse>(likely(lt(i * i, i32(50))), store)));
  EXPECT_TRUE(loop_partition(square).same_as(square));
  Ref<PrimFunc> modular =
      make_func({a, b}, loop(i, 16, make<IfThenElse>(eq(floormod(i, i32(2)), i32(0)), store)));
  EXPECT_TRUE(loop_partition(modular).same_as(modular));
}

TEST(LoopPartition, OuterLoopWithEmptySteadyPartSplitsTheInnerLoop) {
  // 5 elements in one outer iteration of 8: the outer loop cannot be split, the inner one is,
  // and its iterations past the bound, where the check fails, are gone.
  SplitLoop s(i32(5), i32(1));
  Ref<PrimFunc> result = loop_partition(s.func);
  std::vector<const For*> loops = loops_of(result->body);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(to_script(Stmt(loops[0])),
            "for io, ii in T.grid(1, 5):\n"
            "    B[io * 8 + ii] = A[io * 8 + ii] * T.float32(2)");
  std::vector<float> a = random_floats(5);
  EXPECT_EQ(run(result, {a, std::vector<float>(5, 0.0f)})[1], doubled(a));
}

TEST(LoopPartition, VectorizedLoopsAreNotSplitButSearched) {
  // The inner loop is vectorized: the outer one is split, never the vector loop.
  Ref<Var> io = make_var("io"), ii = make_var("ii");
  Ref<Buffer> a = buffer_1d("A", i32(20)), b = buffer_1d("B", i32(20));
  Expr index = io * 8 + ii;
  Stmt store = buffer_store(b, buffer_load(a, {index}), {index});
  Stmt body = loop(io, 3,
                   loop(ii, int32_const(0), int32_const(8),
                        make<IfThenElse>(likely(lt(index, i32(20))), store), ForKind::kVectorized));
  Ref<PrimFunc> result = loop_partition(make_func({a, b}, body));
  std::vector<const For*> loops = loops_of(result->body);
  ASSERT_EQ(loops.size(), 3u);
  EXPECT_EQ(to_script(loops[0]->extent), "2");
  EXPECT_EQ(loops[1]->kind, ForKind::kVectorized);
  EXPECT_EQ(count_kind(Stmt(loops[1]), NodeKind::IfThenElse), 0);
  EXPECT_EQ(loops[2]->kind, ForKind::kVectorized);
  EXPECT_EQ(count_kind(Stmt(loops[2]), NodeKind::IfThenElse), 1);
}

// for i in range(8): for j in range(8): if j <= i: B[i * 8 + j] = A[i * 8 + j] (a lower
// triangle, as a causal mask hides the keys after each query).
struct Triangle {
  Ref<Var> i = make_var("i"), j = make_var("j");
  Ref<Buffer> a = buffer_1d("A", i32(64)), b = buffer_1d("B", i32(64));

  Ref<PrimFunc> func(Stmt else_case = Stmt(), ForKind inner = ForKind::kSerial) {
    Expr index = i * 8 + j;
    Stmt store = buffer_store(b, buffer_load(a, {index}), {index});
    Stmt check = make<IfThenElse>(le(Expr(j), Expr(i)), store, else_case);
    return make_func({a, b}, loop(i, 8, loop(j, int32_const(0), int32_const(8), check, inner)));
  }

  // A's lower triangle, `other` elsewhere.
  static std::vector<float> expected(const std::vector<float>& in, float other) {
    std::vector<float> out(64, other);
    for (int r = 0; r < 8; ++r) {
      for (int c = 0; c <= r; ++c) out[r * 8 + c] = in[r * 8 + c];
    }
    return out;
  }
};

TEST(LoopPartition, CheckedPartSplitsItsInnerLoopAndDropsWhatFails) {
  // Rows 0-6 are checked (row 7 sees every column): there the column loop stops at the
  // diagonal, and the columns past it, where the check fails, are not emitted at all.
  Triangle t;
  Ref<PrimFunc> result = loop_partition(t.func());
  EXPECT_EQ(to_script(result->body),
            "for i in range(7):\n"
            "    for j in range(i + 1):\n"
            "        B[i * 8 + j] = A[i * 8 + j]\n"
            "for i_1 in range(7, 8):\n"
            "    for j_1 in range(8):\n"
            "        B[i_1 * 8 + j_1] = A[i_1 * 8 + j_1]");
  verify_ir(result, "loop_partition");
  std::vector<float> in = random_floats(64);
  EXPECT_EQ(run(result, {in, std::vector<float>(64, -5.0f)})[1], Triangle::expected(in, -5.0f));
}

TEST(LoopPartition, ACheckLeftOverNothingGoesWithWhatItChecked) {
  // for i, j: for d in vectorized(4): if d < 3: if j <= i: B[...] = A[...]
  // Past the diagonal the inner check fails: the lanes' check is left over nothing and goes
  // too (kept, a vector loop would run serially on a condition that varies across its lanes),
  // and with it the loop of columns past the diagonal.
  Ref<Var> i = make_var("i"), j = make_var("j"), d = make_var("d");
  Ref<Buffer> a = buffer_1d("A", i32(256)), b = buffer_1d("B", i32(256));
  Expr index = (i * 8 + j) * 4 + d;
  Stmt store = buffer_store(b, buffer_load(a, {index}), {index});
  Stmt lanes = make<IfThenElse>(lt(Expr(d), i32(3)), make<IfThenElse>(le(Expr(j), Expr(i)), store));
  Ref<PrimFunc> func =
      make_func({a, b}, loop(i, 8, loop(j, 8, loop(d, 4, lanes, ForKind::kVectorized))));
  Ref<PrimFunc> result = loop_partition(func);
  std::string text = to_script(result->body);
  EXPECT_EQ(text.find("T.evaluate"), std::string::npos) << text;
  EXPECT_EQ(count_kind(result->body, NodeKind::IfThenElse), 2) << text;
  verify_ir(result, "loop_partition");
  std::vector<float> in = random_floats(256);
  std::vector<float> expected(256, -5.0f);
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c <= r; ++c) {
      for (int lane = 0; lane < 3; ++lane)
        expected[(r * 8 + c) * 4 + lane] = in[(r * 8 + c) * 4 + lane];
    }
  }
  EXPECT_EQ(run(result, {in, std::vector<float>(256, -5.0f)})[1], expected);
}

TEST(LoopPartition, PartThatFailsTheCheckKeepsTheElseBranch) {
  Triangle t;
  Ref<PrimFunc> func =
      t.func(buffer_store(t.b, make_const(DataType::float32(), 0.0), {t.i * 8 + t.j}));
  Ref<PrimFunc> result = loop_partition(func);
  EXPECT_EQ(count_kind(result->body, NodeKind::IfThenElse), 0) << to_script(result->body);
  verify_ir(result, "loop_partition");
  std::vector<float> in = random_floats(64);
  EXPECT_EQ(run(result, {in, std::vector<float>(64, -5.0f)})[1], Triangle::expected(in, 0.0f));
}

TEST(LoopPartition, LikelyIfThenElseCallTakesItsElseValueWhereTheCheckFails) {
  // B[i * 8 + j] = if_then_else(likely(j <= i), A[i * 8 + j], 0).
  Triangle t;
  Expr index = t.i * 8 + t.j;
  Expr value = if_then_else(likely(le(Expr(t.j), Expr(t.i))), buffer_load(t.a, {index}),
                            make_const(DataType::float32(), 0.0));
  Ref<PrimFunc> func =
      make_func({t.a, t.b}, loop(t.i, 8, loop(t.j, 8, buffer_store(t.b, value, {index}))));
  Ref<PrimFunc> result = loop_partition(func);
  EXPECT_EQ(count_calls(result->body, Builtin::IfThenElse), 0) << to_script(result->body);
  EXPECT_EQ(to_script(result->body),
            "for i in range(7):\n"
            "    for j in range(i + 1):\n"
            "        B[i * 8 + j] = A[i * 8 + j]\n"
            "    for j_1 in range(i + 1, i + 1 + (7 - i)):\n"
            "        B[i * 8 + j_1] = T.float32(0)\n"
            "for i_1 in range(7, 8):\n"
            "    for j_2 in range(8):\n"
            "        B[i_1 * 8 + j_2] = A[i_1 * 8 + j_2]");
  std::vector<float> in = random_floats(64);
  EXPECT_EQ(run(result, {in, std::vector<float>(64, -5.0f)})[1], Triangle::expected(in, 0.0f));
}

TEST(LoopPartition, UnrolledLoopsAreNotSplitButSearched) {
  // An unrolled loop keeps its constant extent (a register tile's rows): it keeps the check.
  Triangle t;
  Ref<PrimFunc> result = loop_partition(t.func(Stmt(), ForKind::kUnrolled));
  std::vector<const For*> loops = loops_of(result->body);
  EXPECT_EQ(to_script(result->body),
            "for i in range(7):\n"
            "    for j in T.unroll(8):\n"
            "        if j <= i:\n"
            "            B[i * 8 + j] = A[i * 8 + j]\n"
            "for i_1 in range(7, 8):\n"
            "    for j_1 in T.unroll(8):\n"
            "        B[i_1 * 8 + j_1] = A[i_1 * 8 + j_1]");
  std::vector<float> in = random_floats(64);
  EXPECT_EQ(run(result, {in, std::vector<float>(64, -5.0f)})[1], Triangle::expected(in, -5.0f));
}

TEST(LoopPartition, BoundsOfABlockOfRowsDependOnAnOuterVariable) {
  // A block of 4 rows starting at row r (a scalar here, the row block of a parallel loop in a
  // schedule) over 8 column tiles of 4 vector lanes, columns c <= row visible:
  //   for jo in range(8): for ir in range(4): for jn in T.vectorized(4):
  //     if jo * 4 + jn <= r + ir: B[ir * 32 + jo * 4 + jn] = A[...]
  // The tiles past the block's last row are not emitted; those before its first row have no
  // check; the ones in between are checked row by row.
  Ref<Var> r = make_var("r"), jo = make_var("jo"), ir = make_var("ir"), jn = make_var("jn");
  Ref<Buffer> a = buffer_1d("A", i32(128)), b = buffer_1d("B", i32(128));
  Expr column = jo * 4 + jn;
  Expr index = ir * 32 + column;
  Stmt store = buffer_store(b, buffer_load(a, {index}), {index});
  Stmt check = make<IfThenElse>(le(column, r + ir), store);
  Stmt body = loop(
      jo, 8, loop(ir, 4, loop(jn, int32_const(0), int32_const(4), check, ForKind::kVectorized)));
  Ref<PrimFunc> result = loop_partition(make_func({a, b, r}, body));
  // Steady tiles: jo * 4 + 3 <= r; tiles from jo * 4 > r + 3 on fail the check in every row.
  // The checked tiles split their rows the same way (the vector loop keeps its check).
  std::vector<const For*> loops = loops_of(result->body);
  ASSERT_EQ(loops.size(), 8u) << to_script(result->body);
  EXPECT_EQ(to_script(loops[0]->extent), "T.max(T.min((r + 1) // 4, 8), 0)");
  EXPECT_EQ(count_kind(Stmt(loops[0]), NodeKind::IfThenElse), 0);
  EXPECT_EQ(to_script(loops[3]->min), "T.max(T.min((r + 1) // 4, 8), 0)");
  EXPECT_EQ(count_kind(Stmt(loops[4]), NodeKind::IfThenElse), 1);
  EXPECT_EQ(count_kind(Stmt(loops[6]), NodeKind::IfThenElse), 0);
  verify_ir(result, "loop_partition");
  for (int64_t row : {-5, 0, 1, 3, 4, 13, 28, 40}) {
    std::vector<float> in = random_floats(128);
    std::vector<float> expected(128, -5.0f);
    for (int k = 0; k < 4; ++k) {
      for (int c = 0; c < 32; ++c) {
        if (c <= row + k) expected[k * 32 + c] = in[k * 32 + c];
      }
    }
    EXPECT_EQ(run(result, {in, std::vector<float>(128, -5.0f)}, {row})[1], expected)
        << "r = " << row;
  }
}

// for io in range(3): for ii in range(8): if r * 24 + io * 8 + ii < n: B[..] = A[..] * 2, and,
// when `twice`, the same again over a loop jj of its own (a tile's init, update and write-back
// check the same bound over inner loops of other names), r and n scalars.
Ref<PrimFunc> checked_rows(bool twice) {
  Ref<Var> r = make_var("r"), n = make_var("n"), io = make_var("io");
  Ref<Buffer> a = buffer_1d("A", i32(96)), b = buffer_1d("B", i32(96));
  auto tile = [&](const char* name) {
    Ref<Var> ii = make_var(name);
    Expr index = r * 24 + io * 8 + ii;
    Stmt store = buffer_store(b, mul(buffer_load(a, {index}), make_const(DataType::float32(), 2.0)),
                              {index});
    return loop(ii, 8, make<IfThenElse>(lt(index, Expr(n)), store));
  };
  Stmt body = twice ? seq({tile("ii"), tile("jj")}) : tile("ii");
  return make_func({a, b, r, n}, loop(io, 3, body));
}

TEST(LoopPartition, ChecksWithTheSameSplitPointsSplitTheLoopOnce) {
  // The two checks split io at the same points: io is split as often as for one of them, each
  // part deciding both, not once more for the second inside each part of the first.
  auto io_parts = [](const Ref<PrimFunc>& func) {
    int parts = 0;
    for (const For* f : loops_of(func->body)) parts += f->loop_var->name.rfind("io", 0) == 0;
    return parts;
  };
  Ref<PrimFunc> once = loop_partition(checked_rows(false));
  Ref<PrimFunc> twice = loop_partition(checked_rows(true));
  EXPECT_EQ(io_parts(twice), io_parts(once)) << to_script(twice->body);
  verify_ir(twice, "loop_partition");
  std::vector<float> in = random_floats(96);
  for (int64_t row : {0, 1, 3}) {
    for (int64_t bound : {0, 5, 24, 30, 52, 96}) {
      std::vector<float> expected(96, -1.0f);
      for (int64_t x = row * 24; x < std::min<int64_t>(row * 24 + 24, bound); ++x) {
        if (x >= 0 && x < 96) expected[x] = in[x] * 2.0f;
      }
      EXPECT_EQ(run(twice, {in, std::vector<float>(96, -1.0f)}, {row, bound})[1], expected)
          << "r = " << row << ", n = " << bound;
    }
  }
}

// for tx in threadIdx.x(4): for v in range(3): if likely(tx * 3 + v < 10): body(v), where the
// body stores into a "shared" buffer when `shared` (the threads then synchronize in the loop).
Ref<PrimFunc> guarded_under_a_thread(bool shared) {
  Ref<Var> tx = make_var("tx"), v = make_var("v");
  Ref<Buffer> a = buffer_1d("A", i32(12)), b = buffer_1d("B", i32(12));
  Ref<Buffer> s = decl_buffer({i32(4)}, DataType::float32(), "S", shared ? "shared" : "local");
  Expr index = tx * 3 + v;
  Stmt body = seq({buffer_store(s, buffer_load(a, {index}), {tx}),
                   buffer_store(b, buffer_load(s, {i32(3) - tx}), {index})});
  auto thread =
      make<For>(tx, i32(0), i32(4), ForKind::kThreadBinding,
                make<Allocate>(s, loop(v, 3, make<IfThenElse>(likely(lt(index, i32(10))), body))));
  thread->thread_tag = "threadIdx.x";
  return make_func({a, b}, thread);
}

TEST(LoopPartition, ALoopWhereThreadsSynchronizeIsNotSplitAtAThreadDependentPoint) {
  // Split at v = (10 - tx) / 3, threads 0 to 3 would run the loop 3, 3, 2 and 2 times, and so
  // reach the barriers that insert_barriers puts into it a different number of times.
  Ref<PrimFunc> shared = guarded_under_a_thread(true);
  EXPECT_TRUE(loop_partition(shared).same_as(shared));
  // Each thread's own memory: nothing to wait for, the loop is split (the iterations that
  // fail the check are left out, so the check is gone).
  Ref<PrimFunc> local = guarded_under_a_thread(false);
  Ref<PrimFunc> result = loop_partition(local);
  EXPECT_FALSE(result.same_as(local));
  EXPECT_EQ(count_kind(result->body, NodeKind::IfThenElse), 0) << to_script(result->body);
}

}  // namespace
}  // namespace kiln::tir
