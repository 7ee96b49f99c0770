// Tests of unroll_loops: golden copies of unrolled loops, the limits that keep a loop, the
// automatic unrolling annotations, fresh definitions in the copies and the numeric check.
#include "kiln/tir/unroll_loops.h"

#include <gtest/gtest.h>

#include "flat_program.h"
#include "kiln/ir/printer.h"
#include "kiln/tir/verify_ir.h"

namespace kiln::tir {
namespace {

using namespace flat_testing;

Stmt with_annotation(Stmt s, const std::string& key, int64_t value) {
  auto f = copy(s.as<For>());
  f->annotations[key] = int32_const(value);
  return f;
}

TEST(UnrollLoops, UnrolledLoopBecomesCopies) {
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(3)), b = buffer_1d("B", i32(3));
  Stmt body = loop(i, 3, buffer_store(b, buffer_load(a, {i}), {i}), ForKind::kUnrolled);
  Ref<PrimFunc> func = make_func({a, b}, body);
  Ref<PrimFunc> result = unroll_loops(func);
  EXPECT_EQ(to_script(result->body),
            "B[0] = A[0]\n"
            "B[1] = A[1]\n"
            "B[2] = A[2]");
  std::vector<float> in = random_floats(3);
  EXPECT_EQ(run(result, {in, std::vector<float>(3)})[1], in);
}

TEST(UnrollLoops, CopiesOfInnerLoopsGetFreshVariables) {
  // for i in unroll(2): for j in range(4): B[i * 4 + j] = A[i * 4 + j] + 1
  Ref<Var> i = make_var("i"), j = make_var("j");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Expr index = i * 4 + j;
  Stmt store =
      buffer_store(b, add(buffer_load(a, {index}), make_const(DataType::float32(), 1.0)), {index});
  Ref<PrimFunc> func = make_func({a, b}, loop(i, 2, loop(j, 4, store), ForKind::kUnrolled));
  Ref<PrimFunc> result = unroll_loops(func);
  EXPECT_EQ(to_script(result->body),
            "for j in range(4):\n"
            "    B[0 * 4 + j] = A[0 * 4 + j] + T.float32(1)\n"
            "for j_1 in range(4):\n"
            "    B[1 * 4 + j_1] = A[1 * 4 + j_1] + T.float32(1)");
  verify_ir(result, "unroll_loops");
  std::vector<float> in = random_floats(8);
  EXPECT_EQ(run(result, {in, std::vector<float>(8)})[1], run(func, {in, std::vector<float>(8)})[1]);
}

TEST(UnrollLoops, LoopsAboveTheLimitsStayUnrolledLoops) {
  Ref<Var> i = make_var("i"), n = make_size_var("n");
  Ref<Buffer> a = buffer_1d("A", i32(100)), b = buffer_1d("B", i32(100));
  // Above the default step limit of 64.
  Ref<PrimFunc> many = make_func(
      {a, b}, loop(i, 100, buffer_store(b, buffer_load(a, {i}), {i}), ForKind::kUnrolled));
  EXPECT_TRUE(unroll_loops(many).same_as(many));
  // A symbolic extent.
  Ref<Buffer> c = buffer_1d("C", n);
  Ref<PrimFunc> symbolic =
      make_func({c}, loop(i, i32(0), n, buffer_store(c, make_const(DataType::float32(), 0.0), {i}),
                          ForKind::kUnrolled));
  EXPECT_TRUE(unroll_loops(symbolic).same_as(symbolic));
}

TEST(UnrollLoops, MaxStepAnnotationRaisesTheLimit) {
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(100)), b = buffer_1d("B", i32(100));
  Stmt body = loop(i, 100, buffer_store(b, buffer_load(a, {i}), {i}), ForKind::kUnrolled);
  Ref<PrimFunc> result =
      unroll_loops(make_func({a, b}, with_annotation(body, "pragma_auto_unroll_max_step", 128)));
  EXPECT_EQ(count_kind(result->body, NodeKind::For), 0);
  EXPECT_EQ(count_kind(result->body, NodeKind::BufferStore), 100);
}

TEST(UnrollLoops, AutomaticUnrollingOfSerialLoopsUnderAnAnnotation) {
  // for i in range(4) [max_step 16]: for j in range(2): for k in range(2): B[...] = A[...]
  Ref<Var> i = make_var("i"), j = make_var("j"), k = make_var("k");
  Ref<Buffer> a = buffer_1d("A", i32(16)), b = buffer_1d("B", i32(16));
  Expr index = i * 4 + j * 2 + k;
  Stmt inner = loop(j, 2, loop(k, 2, buffer_store(b, buffer_load(a, {index}), {index})));
  Ref<PrimFunc> func =
      make_func({a, b}, with_annotation(loop(i, 4, inner), "pragma_auto_unroll_max_step", 16));
  Ref<PrimFunc> result = unroll_loops(func);
  // 4 * 2 * 2 = 16 steps: everything is unrolled, and the annotation is gone.
  EXPECT_EQ(count_kind(result->body, NodeKind::For), 0);
  EXPECT_EQ(count_kind(result->body, NodeKind::BufferStore), 16);
  std::vector<float> in = random_floats(16);
  EXPECT_EQ(run(result, {in, std::vector<float>(16)})[1], in);

  // With a limit of 8 only the two inner loops (4 steps) are unrolled; the outer stays.
  Ref<PrimFunc> limited =
      make_func({a, b}, with_annotation(loop(i, 4, inner), "pragma_auto_unroll_max_step", 8));
  Ref<PrimFunc> partly = unroll_loops(limited);
  std::vector<const For*> loops = loops_of(partly->body);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0]->kind, ForKind::kSerial);
  EXPECT_TRUE(loops[0]->annotations.empty());
  EXPECT_EQ(count_kind(partly->body, NodeKind::BufferStore), 4);
}

// for i in range(extent) [max_step]: B[i * lanes : (i + 1) * lanes] = A[...], unrolled or not:
// whether a loop is left, and whether the result copies A.
void expect_vector_copy_unrolled(int lanes, int extent, int64_t max_step, bool unrolled) {
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(extent * lanes)), b = buffer_1d("B", i32(extent * lanes));
  Expr index = ramp(i * lanes, i32(1), lanes);
  Stmt body = buffer_store(b, buffer_load(a, {index}), {index});
  Ref<PrimFunc> result = unroll_loops(make_func(
      {a, b}, with_annotation(loop(i, extent, body), "pragma_auto_unroll_max_step", max_step)));
  EXPECT_EQ(count_kind(result->body, NodeKind::For), unrolled ? 0 : 1) << lanes;
  std::vector<float> in = random_floats(extent * lanes);
  EXPECT_EQ(run(result, {in, std::vector<float>(extent * lanes)})[1], in) << lanes;
}

TEST(UnrollLoops, AVectorStoreCountsAStepPerEightLanes) {
  // for i in range(8) [max_step 16]: 8 stores of 16 lanes are 16 steps, unrolled; of 32 lanes
  // (two per iteration's worth) 32 steps, kept a loop.
  expect_vector_copy_unrolled(16, 8, 16, true);
  expect_vector_copy_unrolled(32, 8, 16, false);
}

TEST(UnrollLoops, ATranscendentalCallCountsEightStepsMorePerRegister) {
  // for i in range(8) [max_step 64]: B[i * 8 : i * 8 + 8] = exp(A[...]): each store of one
  // register is 1 step and its exp 8 more, 72 in all: kept a loop; with max_step 72, unrolled.
  // The same copy without exp is 8 steps, unrolled under 64.
  for (int max_step : {64, 72}) {
    for (bool with_exp : {true, false}) {
      Ref<Var> i = make_var("i");
      Ref<Buffer> a = buffer_1d("A", i32(64)), b = buffer_1d("B", i32(64));
      Expr index = ramp(i * 8, i32(1), 8);
      Expr value = buffer_load(a, {index});
      if (with_exp) value = call(Builtin::Exp, {value});
      Ref<PrimFunc> func =
          make_func({a, b}, with_annotation(loop(i, 8, buffer_store(b, value, {index})),
                                            "pragma_auto_unroll_max_step", max_step));
      Ref<PrimFunc> result = unroll_loops(func);
      bool unrolled = !with_exp || max_step == 72;
      EXPECT_EQ(count_kind(result->body, NodeKind::For), unrolled ? 0 : 1)
          << max_step << " " << with_exp;
    }
  }
}

TEST(UnrollLoops, AutomaticUnrollingLeavesAtMost64StoresToMemoryInABody) {
  // for i in range(32) [max_step 512]: for j in range(4): B[i * 4 + j] = A[i * 4 + j]: 128
  // stores to memory unrolled would be 128 steps, within the limit, but more than 64 stores;
  // the same into a "local" buffer (registers) is unrolled.
  for (const char* scope : {"global", "local"}) {
    Ref<Var> i = make_var("i"), j = make_var("j");
    Ref<Buffer> a = buffer_1d("A", i32(128));
    Ref<Buffer> b = decl_buffer({i32(128)}, DataType::float32(), "B", scope);
    Expr index = i * 4 + j;
    Stmt inner = loop(j, 4, buffer_store(b, buffer_load(a, {index}), {index}));
    Ref<PrimFunc> result = unroll_loops(
        make_func({a, b}, with_annotation(loop(i, 32, inner), "pragma_auto_unroll_max_step", 512)));
    bool local = std::string(scope) == "local";
    EXPECT_EQ(count_kind(result->body, NodeKind::For), local ? 0 : 1) << scope;
    EXPECT_EQ(count_kind(result->body, NodeKind::BufferStore), local ? 128 : 4) << scope;
    if (!local) {
      std::vector<float> in = random_floats(128);
      EXPECT_EQ(run(result, {in, std::vector<float>(128)})[1], in);
    }
  }
}

TEST(UnrollLoops, AGatherCountsAStepPerLane) {
  // for i in range(8) [max_step 64]: B[i * 8 : i * 8 + 8] = A[i + 8 * lane] (a column of
  // A read as a vector, stride 8): each store is 1 step and its gather 8 more, 72 in all: kept
  // a loop. Read at stride 1 it is 8 steps, unrolled.
  for (int stride : {8, 1}) {
    Ref<Var> i = make_var("i");
    Ref<Buffer> a = buffer_1d("A", i32(64)), b = buffer_1d("B", i32(64));
    Expr read = stride == 1 ? ramp(i * 8, i32(1), 8) : ramp(i, i32(stride), 8);
    Stmt body = buffer_store(b, buffer_load(a, {read}), {ramp(i * 8, i32(1), 8)});
    Ref<PrimFunc> func =
        make_func({a, b}, with_annotation(loop(i, 8, body), "pragma_auto_unroll_max_step", 64));
    Ref<PrimFunc> result = unroll_loops(func);
    EXPECT_EQ(count_kind(result->body, NodeKind::For), stride == 1 ? 0 : 1) << stride;
    std::vector<float> in = random_floats(64);
    EXPECT_EQ(run(result, {in, std::vector<float>(64)})[1],
              run(func, {in, std::vector<float>(64)})[1])
        << stride;
  }
}

TEST(UnrollLoops, AVectorStoreToMemoryCountsAStorePerRegister) {
  // for i in range(16) [max_step 512]: 16 stores of 32 lanes (four registers each) are 64
  // stores to memory, unrolled; of 64 lanes 128, kept a loop.
  expect_vector_copy_unrolled(32, 16, 512, true);
  expect_vector_copy_unrolled(64, 16, 512, false);
}

TEST(UnrollLoops, ExplicitZeroMarksLoopsForTheBackend) {
  Ref<Var> i = make_var("i"), j = make_var("j");
  Ref<Buffer> a = buffer_1d("A", i32(8)), b = buffer_1d("B", i32(8));
  Expr index = i * 4 + j;
  Stmt outer = loop(i, 2, loop(j, 4, buffer_store(b, buffer_load(a, {index}), {index})));
  outer = with_annotation(outer, "pragma_auto_unroll_max_step", 64);
  outer = with_annotation(outer, "pragma_unroll_explicit", 0);
  Ref<PrimFunc> result = unroll_loops(make_func({a, b}, outer));
  EXPECT_EQ(to_script(result->body),
            "for i in T.unroll(2):\n"
            "    for j in T.unroll(4):\n"
            "        B[i * 4 + j] = A[i * 4 + j]");
}

TEST(UnrollLoops, LlvmUnrollZeroMarksTheLoopsThatStayLoops) {
  // Under pragma_llvm_unroll = 0: the loop copied (j, 4 steps) is gone, the serial loops that
  // stay (i, too long) carry the mark for the code generator, a kUnrolled one above the limits
  // (k) stays kUnrolled without it; the annotations themselves are consumed.
  Ref<Var> i = make_var("i"), j = make_var("j"), k = make_var("k");
  Ref<Buffer> a = buffer_1d("A", i32(1024)), b = buffer_1d("B", i32(1024));
  Expr index = i * 4 + j;
  Stmt inner = loop(j, 4, buffer_store(b, buffer_load(a, {index}), {index}), ForKind::kUnrolled);
  Stmt outer = with_annotation(loop(i, 200, inner), "pragma_llvm_unroll", 0);
  Stmt big = loop(k, 100, buffer_store(b, buffer_load(a, {k}), {k}), ForKind::kUnrolled);
  big = with_annotation(big, "pragma_llvm_unroll", 0);
  Ref<PrimFunc> result = unroll_loops(make_func({a, b}, seq({outer, big})));
  std::vector<const For*> loops = loops_of(result->body);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(loops[0]->loop_var.get(), i.get());
  EXPECT_EQ(loops[0]->kind, ForKind::kSerial);
  ASSERT_EQ(loops[0]->annotations.size(), 1u);
  EXPECT_EQ(loops[0]->annotations.count(kLlvmLoopFixedAnnotation), 1u);
  EXPECT_EQ(loops[1]->kind, ForKind::kUnrolled);
  EXPECT_TRUE(loops[1]->annotations.empty());
  EXPECT_EQ(count_kind(loops[0]->body, NodeKind::BufferStore), 4);
}

TEST(UnrollLoops, LlvmUnrollZeroMarksAParallelLoop) {
  // The mark on a parallel loop reaches the loop over each thread's chunk of it.
  Ref<Var> i = make_var("i"), j = make_var("j");
  Ref<Buffer> a = buffer_1d("A", i32(4096)), b = buffer_1d("B", i32(4096));
  Expr index = i * 64 + j;
  Stmt inner = loop(j, 64, buffer_store(b, buffer_load(a, {index}), {index}));
  Stmt outer = with_annotation(loop(i, 64, inner, ForKind::kParallel), "pragma_llvm_unroll", 0);
  Ref<PrimFunc> result = unroll_loops(make_func({a, b}, outer));
  std::vector<const For*> loops = loops_of(result->body);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(loops[0]->kind, ForKind::kParallel);
  EXPECT_EQ(loops[0]->annotations.count(kLlvmLoopFixedAnnotation), 1u);
  EXPECT_EQ(loops[1]->annotations.count(kLlvmLoopFixedAnnotation), 1u);
}

TEST(UnrollLoops, ExtentZeroBecomesANoOp) {
  Ref<Var> i = make_var("i");
  Ref<Buffer> b = buffer_1d("B", i32(1));
  Ref<PrimFunc> result = unroll_loops(make_func(
      {b},
      loop(i, 0, buffer_store(b, make_const(DataType::float32(), 1.0), {i}), ForKind::kUnrolled)));
  EXPECT_EQ(to_script(result->body), "T.evaluate(0)");
}

TEST(UnrollLoops, UnchangedWithoutUnrolledLoops) {
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(4)), b = buffer_1d("B", i32(4));
  Ref<PrimFunc> func = make_func({a, b}, loop(i, 4, buffer_store(b, buffer_load(a, {i}), {i})));
  EXPECT_TRUE(unroll_loops(func).same_as(func));
}

TEST(UnrollLoops, AnnotationMustBeAConstant) {
  Ref<Var> i = make_var("i"), n = make_var("n");
  Ref<Buffer> b = buffer_1d("B", i32(4));
  auto f = copy(loop(i, 4, buffer_store(b, make_const(DataType::float32(), 1.0), {i})).as<For>());
  f->annotations["pragma_auto_unroll_max_step"] = n;
  EXPECT_EQ(error_of([&] { unroll_loops(make_func({b}, Stmt(f))); }),
            "unroll_loops: annotation pragma_auto_unroll_max_step of loop i must be an integer "
            "constant");
}

}  // namespace
}  // namespace kiln::tir
