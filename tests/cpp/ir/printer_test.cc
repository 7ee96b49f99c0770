// Golden tests of the IR printer: IR built by hand and the exact text it must print (loops and
// T.grid, blocks with init and remap, control flow, vectors, allocation, thread binding,
// annotations, duplicate names, precedence, constants and marks).
#include <gtest/gtest.h>

#include <limits>
#include <sstream>

#include "kiln/ir/printer.h"
#include "tests/cpp/ir/sample_funcs.h"

namespace kiln::ir {
namespace {

using samples::point;
using samples::range;

const DataType f32 = DataType::float32();

TEST(Printer, Matmul) {
  EXPECT_EQ(to_script(samples::matmul()),
            R"(# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    # with T.block("root"):
    for i, j, k in T.grid(128, 128, 128):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj])");
}

TEST(Printer, SymbolicShapeDeclaresItsSizeVariable) {
  EXPECT_EQ(to_script(samples::scale_symbolic(), "scale"),
            R"(# from kiln.script import tir as T
@T.prim_func
def scale(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32")):
    n = T.int32()
    # with T.block("root"):
    for i in range(n):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            T.reads(A[vi])
            T.writes(B[vi])
            B[vi] = A[vi] * T.float32(2))");
}

TEST(Printer, VectorsAllocationAndParallelLoop) {
  EXPECT_EQ(to_script(samples::vector_add_loop()),
            R"(for io in T.parallel(16):
    with T.allocate((4,), "float32", scope="local") as tmp:
        tmp[T.Ramp(0, 1, 4)] = A[T.Ramp(io * 4, 1, 4)] + T.Broadcast(T.float32(1.5), 4)
        A[T.Ramp(io * 4, 1, 4)] = tmp[T.Ramp(0, 1, 4)])");
}

// A split loop bound to GPU threads, a predicate, a block annotation and a local buffer.
TEST(Printer, ThreadBindingWhereAndAllocBuffer) {
  Ref<Buffer> a = decl_buffer({int32_const(100)}, f32, "A");
  Ref<Buffer> b = decl_buffer({int32_const(100)}, f32, "B");
  Ref<Buffer> local = decl_buffer({int32_const(1)}, f32, "A_local", "local");
  Ref<Var> i0 = make_var("i_0"), i1 = make_var("i_1"), vi = make_var("vi");
  auto block = make<Block>();
  block->name = "B";
  block->iter_vars = {IterVar{vi, range(0, 100), IterType::kDataPar}};
  block->reads = {BufferRegion{a, {point(vi)}}};
  block->writes = {BufferRegion{b, {point(vi)}}};
  block->alloc_buffers = {local};
  block->annotations["meta_schedule.unroll"] = int32_const(16);
  block->body = seq({buffer_store(local, buffer_load(a, {vi}), {int32_const(0)}),
                     buffer_store(b, buffer_load(local, {int32_const(0)}) + make_one(f32), {vi})});
  Expr fused = i0 * 32 + i1;
  Stmt realize = make<BlockRealize>(std::vector<Expr>{fused}, lt(fused, int32_const(100)), block);
  auto inner = make<For>(i1, int32_const(0), int32_const(32), ForKind::kThreadBinding, realize);
  inner->thread_tag = "threadIdx.x";
  auto outer = make<For>(i0, int32_const(0), int32_const(4), ForKind::kThreadBinding, inner);
  outer->thread_tag = "blockIdx.x";
  auto f = make<PrimFunc>();
  samples::add_buffer_param(f.get(), a);
  samples::add_buffer_param(f.get(), b);
  f->attrs["global_symbol"] = make<StringImm>("main");
  f->body = samples::root_block(outer);
  EXPECT_EQ(to_script(f), R"(# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32")):
    T.func_attr({"global_symbol": "main"})
    # with T.block("root"):
    for i_0 in T.thread_binding(4, thread="blockIdx.x"):
        for i_1 in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("B"):
                vi = T.axis.spatial(100, i_0 * 32 + i_1)
                T.where(i_0 * 32 + i_1 < 100)
                T.reads(A[vi])
                T.writes(B[vi])
                T.block_attr({"meta_schedule.unroll": 16})
                A_local = T.alloc_buffer((1,), "float32", scope="local")
                A_local[0] = A[vi]
                B[vi] = A_local[0] + T.float32(1))");
}

TEST(Printer, LoopKindsRangesAndAnnotations) {
  Ref<Buffer> a = decl_buffer({int32_const(64)}, f32, "A");
  Ref<Var> i = make_var("i"), j = make_var("j"), k = make_var("k"), l = make_var("l");
  Stmt store = buffer_store(a, make_zero(f32), {i * 16 + j * 4 + k + l});
  auto annotated = make<For>(l, int32_const(2), int32_const(8), ForKind::kSerial, store);
  annotated->annotations["pragma_auto_unroll_max_step"] = int32_const(16);
  annotated->annotations["pragma_unroll_explicit"] = int32_const(0);
  Stmt s = make<For>(
      i, int32_const(0), int32_const(2), ForKind::kUnrolled,
      make<For>(j, int32_const(0), int32_const(4), ForKind::kVectorized,
                make<For>(k, int32_const(1), int32_const(3), ForKind::kSerial, annotated)));
  EXPECT_EQ(to_script(s), R"(for i in T.unroll(2):
    for j in T.vectorized(4):
        for k in range(1, 4):
            for l in T.serial(2, 10, annotations={"pragma_auto_unroll_max_step": 16, "pragma_unroll_explicit": 0}):
                A[i * 16 + j * 4 + k + l] = T.float32(0))");
}

TEST(Printer, GridStopsAtALoopWhoseExtentDependsOnAnOuterLoop) {
  Ref<Buffer> a = decl_buffer({int32_const(64)}, f32, "A");
  Ref<Var> i = make_var("i"), j = make_var("j"), k = make_var("k");
  Stmt store = buffer_store(a, make_zero(f32), {i + j + k});
  Stmt s = samples::serial(i, int32_const(4),
                           samples::serial(j, int32_const(4), samples::serial(k, i + 1, store)));
  EXPECT_EQ(to_script(s), R"(for i, j in T.grid(4, 4):
    for k in range(i + 1):
        A[i + j + k] = T.float32(0))");
}

TEST(Printer, ControlFlowLetAssertAndEvaluate) {
  Ref<Var> n = make_var("n");
  Ref<Var> x = make_var("x");
  Ref<Buffer> a = decl_buffer({int32_const(8)}, f32, "A");
  Stmt then_case = buffer_store(a, make_one(f32), {x});
  Stmt else_case =
      make<Evaluate>(call(DataType::int32(), Builtin::CallExtern, {make<StringImm>("report"), x}));
  Stmt body =
      make<LetStmt>(x, n * 2, make<IfThenElse>(gt(x, int32_const(4)), then_case, else_case));
  Stmt s = make<AssertStmt>(gt(n, int32_const(0)), "n must be \"positive\"", body);
  EXPECT_EQ(to_script(s), R"(with T.Assert(n > 0, "n must be \"positive\""):
    with T.LetStmt(n * 2) as x:
        if x > 4:
            A[x] = T.float32(1)
        else:
            T.evaluate(T.call_extern("int32", "report", x)))");
}

TEST(Printer, DuplicateNamesAreMadeUniqueInTheTextOnly) {
  Ref<Buffer> a1 = decl_buffer({int32_const(4)}, f32, "A");
  Ref<Buffer> a2 = decl_buffer({int32_const(4)}, f32, "A");
  Ref<Var> i1 = make_var("i"), i2 = make_var("i");
  Ref<Var> keyword = make_var("lambda");
  Stmt s = seq({samples::serial(i1, int32_const(4), buffer_store(a1, make_zero(f32), {i1})),
                samples::serial(i2, int32_const(4), buffer_store(a2, make_one(f32), {i2})),
                make<Evaluate>(keyword + 1)});
  EXPECT_EQ(to_script(s), R"(for i in range(4):
    A[i] = T.float32(0)
for i_1 in range(4):
    A_1[i_1] = T.float32(1)
T.evaluate(lambda_1 + 1))");
  EXPECT_EQ(i2->name, "i");
  EXPECT_EQ(a2->name, "A");
}

TEST(Printer, ParenthesizesOnlyWherePrecedenceNeedsIt) {
  Ref<Var> x = make_var("x"), y = make_var("y");
  Ref<Var> f = make_var("f", f32);
  EXPECT_EQ(to_script((x + y) * 2), "(x + y) * 2");
  EXPECT_EQ(to_script(x - (y - 1)), "x - (y - 1)");
  EXPECT_EQ(to_script(x - y - 1), "x - y - 1");
  EXPECT_EQ(to_script(x + y * 3), "x + y * 3");
  EXPECT_EQ(to_script(floordiv(x, int32_const(4)) + floormod(y, int32_const(4))), "x // 4 + y % 4");
  EXPECT_EQ(to_script(floordiv(x * 4, y + 1)), "x * 4 // (y + 1)");
  EXPECT_EQ(to_script(x * floordiv(y, int32_const(2))), "x * (y // 2)");
  EXPECT_EQ(to_script(x * -3), "x * -3");
  EXPECT_EQ(to_script(-x), "0 - x");
  EXPECT_EQ(to_script(logical_and(lt(x, y), logical_not(eq(x, int32_const(0))))),
            "x < y and not x == 0");
  Expr p = lt(x, y), q = gt(y, int32_const(1)), r = eq(x, y);
  EXPECT_EQ(to_script(logical_or(logical_and(p, q), r)), "x < y and y > 1 or x == y");
  EXPECT_EQ(to_script(logical_and(logical_or(p, q), r)), "(x < y or y > 1) and x == y");
  EXPECT_EQ(to_script(eq(p, q)), "(x < y) == (y > 1)");
  EXPECT_EQ(to_script(div(f, make_const(f32, 2.0))), "f / T.float32(2)");
}

TEST(Printer, CallsCastsAndOtherExpressions) {
  Ref<Var> x = make_var("x"), y = make_var("y"), v = make_var("v");
  Ref<Var> f = make_var("f", f32);
  EXPECT_EQ(to_script(truncdiv(x, y) + truncmod(x, y)), "T.truncdiv(x, y) + T.truncmod(x, y)");
  EXPECT_EQ(to_script(min(x, y) * max(x, int32_const(1))), "T.min(x, y) * T.max(x, 1)");
  EXPECT_EQ(to_script(cast(f32, x)), "T.Cast(\"float32\", x)");
  EXPECT_EQ(to_script(call(Builtin::Exp, {f})), "T.exp(f)");
  EXPECT_EQ(to_script(select(gt(x, int32_const(0)), f, f * make_const(f32, 2.0))),
            "T.Select(x > 0, f, f * T.float32(2))");
  EXPECT_EQ(to_script(if_then_else(lt(x, int32_const(10)), x, int32_const(0))),
            "T.if_then_else(x < 10, x, 0)");
  EXPECT_EQ(to_script(let(v, x + 1, v * v)), "T.let(v, x + 1, v * v)");
  EXPECT_EQ(to_script(call(f32, Builtin::CallPureExtern, {make<StringImm>("fabsf"), f})),
            "T.call_pure_extern(\"float32\", \"fabsf\", f)");
  EXPECT_EQ(to_script(make<StringImm>("say \"hi\"\n")), "\"say \\\"hi\\\"\\n\"");
}

TEST(Printer, TypedConstants) {
  EXPECT_EQ(to_script(int32_const(-5)), "-5");
  EXPECT_EQ(to_script(make_const(DataType::int64(), int64_t{5})), "T.int64(5)");
  EXPECT_EQ(to_script(make_const(DataType::uint(8), int64_t{200})), "T.uint8(200)");
  EXPECT_EQ(to_script(bool_const(true)), "T.bool(True)");
  EXPECT_EQ(to_script(make_const(f32, 0.1)), "T.float32(0.1)");
  EXPECT_EQ(to_script(make_const(DataType::float64(), 0.1)), "T.float64(0.1)");
  EXPECT_EQ(to_script(make_const(DataType::float64(), 1.0 / 3.0)), "T.float64(0.3333333333333333)");
  EXPECT_EQ(to_script(make_const(DataType::float64(), 1e30)), "T.float64(1e+30)");
  EXPECT_EQ(to_script(make_const(f32, -0.0)), "T.float32(-0.0)");
  EXPECT_EQ(to_script(make_const(f32, std::numeric_limits<double>::infinity())),
            "T.float32(\"inf\")");
  EXPECT_EQ(to_script(make_const(f32, std::numeric_limits<double>::quiet_NaN())),
            "T.float32(\"nan\")");
}

TEST(Printer, ReduceAndCommReducer) {
  Ref<Buffer> a = decl_buffer({int32_const(16), int32_const(128)}, f32, "A");
  auto reducer = make<CommReducer>();
  Ref<Var> x = make_var("x", f32), y = make_var("y", f32);
  reducer->lhs = {x};
  reducer->rhs = {y};
  reducer->result = {x + y};
  reducer->identity = {make_zero(f32)};
  Ref<Var> i = make_var("i"), k = make_var("k");
  auto reduce = make<Reduce>(f32);
  reduce->combiner = reducer;
  reduce->source = {buffer_load(a, {i, k})};
  reduce->axis = {IterVar{k, range(0, 128), IterType::kCommReduce}};
  reduce->condition = bool_const(true);
  EXPECT_EQ(to_script(reduce),
            "T.reduce(lambda x, y: x + y, [T.float32(0)], [A[i, k]], axis={k: range(128)})");
  EXPECT_EQ(to_script_node(reducer), "T.comm_reducer(lambda x, y: x + y, [T.float32(0)])");
  EXPECT_EQ(to_script_node(a), "A: T.Buffer((16, 128), \"float32\")");
}

TEST(Printer, MarksAnExpressionWithCaretsAndANote) {
  Ref<Buffer> a = decl_buffer({int32_const(8)}, f32, "A");
  Ref<Buffer> b = decl_buffer({int32_const(8)}, f32, "B");
  Ref<Var> i = make_var("i");
  Expr load = buffer_load(a, {i});
  Stmt s = samples::serial(i, int32_const(8), buffer_store(b, load + make_one(f32), {i}));
  PrintOptions options;
  options.mark = load.get();
  options.mark_note = "out of bounds";
  EXPECT_EQ(to_script(s, options), R"(for i in range(8):
    B[i] = A[i] + T.float32(1)
           ^^^^ out of bounds)");
}

TEST(Printer, MarksTheHeaderLineOfAStatement) {
  Ref<PrimFunc> f = samples::matmul(16);
  const auto* root = f->body.as<BlockRealize>();
  PrintOptions options;
  options.mark = root->block->body.get();
  EXPECT_EQ(to_script(f, "main", options), R"(# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    # with T.block("root"):
    for i, j, k in T.grid(16, 16, 16):
    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj])");
}

TEST(Printer, ModuleWithTwoFunctions) {
  auto m = make<IRModule>();
  m->functions["scale"] = samples::scale_symbolic();
  m->functions["add"] = samples::matmul(4);
  EXPECT_EQ(to_script(m), R"(# from kiln.script import ir as I
# from kiln.script import tir as T
@I.ir_module
class Module:
    @T.prim_func
    def add(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32"), C: T.Buffer((4, 4), "float32")):
        # with T.block("root"):
        for i, j, k in T.grid(4, 4, 4):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def scale(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32")):
        n = T.int32()
        # with T.block("root"):
        for i in range(n):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                T.reads(A[vi])
                T.writes(B[vi])
                B[vi] = A[vi] * T.float32(2))");
}

TEST(Printer, StreamsExpressionsAndStatements) {
  Ref<Var> x = make_var("x");
  std::ostringstream os;
  os << (x + 1) << " | " << Stmt(make<Evaluate>(x));
  EXPECT_EQ(os.str(), "x + 1 | T.evaluate(x)");
}

}  // namespace
}  // namespace kiln::ir
