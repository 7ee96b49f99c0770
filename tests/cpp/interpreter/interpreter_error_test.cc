// Error tests of the reference interpreter: every failure is a kiln error whose message names
// tir.interpret, the object involved, what was expected and what was found.
#include <gtest/gtest.h>

#include "func_builder.h"

namespace kiln::interpreter::testing {
namespace {

const DataType f32 = DataType::float32();
const DataType i32 = DataType::int32();

#define EXPECT_MESSAGE(msg, text) EXPECT_NE((msg).find(text), std::string::npos) << (msg)

// C[i] = A[i] for i < n: the simplest function with two buffers.
Ref<PrimFunc> copy_func(int64_t n) {
  auto A = buffer({n}, f32, "A");
  auto C = buffer({n}, f32, "C");
  Ref<Var> i = make_var("i");
  return make_func({A, C}, loop(i, n, buffer_store(C, buffer_load(A, {i}), {i})));
}

TEST(InterpretError, OutOfBoundsLoadNamesBufferIndexAndExtent) {
  auto A = buffer({4}, f32, "A");
  auto C = buffer({6}, f32, "C");
  Ref<Var> i = make_var("i");
  auto func = make_func({A, C}, loop(i, 6, buffer_store(C, buffer_load(A, {i}), {i})));
  std::vector<float> a(4), c(6);
  std::string msg = error_of([&] { interpret(*func, {array(a, f32), array(c, f32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: out-of-bounds load from buffer A: index [4] is element 4 of "
                 "its storage, which has 4 elements");
}

TEST(InterpretError, OutOfBoundsVectorStoreNamesTheLane) {
  auto C = buffer({6}, i32, "C");
  auto func = make_func({C}, buffer_store(C, broadcast(int32_const(1), 4),
                                          {ramp(int32_const(3), int32_const(1), 4)}));
  std::vector<int32_t> c(6);
  std::string msg = error_of([&] { interpret(*func, {array(c, i32)}); });
  EXPECT_MESSAGE(msg, "out-of-bounds store to buffer C: index [6] (lane 3) is element 6");
}

TEST(InterpretError, SelectEvaluatesBothArms) {
  // Unlike if_then_else, Select loads from A[4] even where the condition is false.
  auto A = buffer({4}, f32, "A");
  auto B = buffer({6}, f32, "B");
  Ref<Var> i = make_var("i");
  Expr padded = select(lt(i, int32_const(4)), buffer_load(A, {i}), make_zero(f32));
  auto func = make_func({A, B}, loop(i, 6, buffer_store(B, padded, {i})));
  std::vector<float> a(4), b(6);
  std::string msg = error_of([&] { interpret(*func, {array(a, f32), array(b, f32)}); });
  EXPECT_MESSAGE(msg, "out-of-bounds load from buffer A: index [4]");
}

TEST(InterpretError, AssertFailureRaisesItsMessage) {
  Ref<Var> n = make_var("n");
  auto A = buffer({1}, i32, "A");
  auto func = make_func({A, n}, make<AssertStmt>(gt(n, int32_const(0)), "n must be positive",
                                                 buffer_store(A, n, {int32_const(0)})));
  std::vector<int32_t> a(1);
  interpret(*func, {array(a, i32), Argument::integer(3)});
  EXPECT_EQ(a[0], 3);
  std::string msg = error_of([&] { interpret(*func, {array(a, i32), Argument::integer(-1)}); });
  EXPECT_MESSAGE(msg, "tir.interpret: assertion failed: n must be positive");
}

TEST(InterpretError, IntegerDivisionByZeroNamesTheExpression) {
  auto A = buffer({2}, i32, "A");
  Expr x = buffer_load(A, {int32_const(0)});
  Expr y = buffer_load(A, {int32_const(1)});
  auto func = make_func({A}, buffer_store(A, floordiv(x + 1, y), {int32_const(0)}));
  std::vector<int32_t> a = {7, 0};
  std::string msg = error_of([&] { interpret(*func, {array(a, i32)}); });
  EXPECT_MESSAGE(msg, "tir.interpret: integer division by zero in (A[0] + 1) // A[1]");
}

TEST(InterpretError, ShiftByTheWidthIsAnError) {
  auto A = buffer({2}, i32, "A");
  Expr x = buffer_load(A, {int32_const(0)});
  Expr y = buffer_load(A, {int32_const(1)});
  auto func = make_func({A}, buffer_store(A, call(Builtin::ShiftLeft, {x, y}), {int32_const(0)}));
  std::vector<int32_t> a = {1, 32};
  std::string msg = error_of([&] { interpret(*func, {array(a, i32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: shift amount 32 is outside [0, 32) in T.shift_left(A[0], A[1])");
}

TEST(InterpretError, WrongArgumentCount) {
  std::vector<float> a(4);
  std::string msg = error_of([&] { interpret(*copy_func(4), {array(a, f32)}); });
  EXPECT_MESSAGE(msg, "tir.interpret: function main takes 2 arguments (A, C), found 1");
}

TEST(InterpretError, WrongDtype) {
  std::vector<float> a(4);
  std::vector<double> c(4);
  std::string msg = error_of([&] {
    interpret(*copy_func(4), {array(a, f32), array(c, DataType::float64())});
  });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: argument 1 (buffer C): expected an array of dtype float32, "
                 "found dtype float64");
}

TEST(InterpretError, WrongNdim) {
  std::vector<float> a(4), c(4);
  std::string msg = error_of([&] {
    interpret(*copy_func(4), {array(a, f32, {2, 2}), array(c, f32)});
  });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: argument 0 (buffer A): expected 1 dimension, found 2 "
                 "(shape (2, 2))");
}

TEST(InterpretError, WrongConstantShape) {
  std::vector<float> a(5), c(4);
  std::string msg = error_of([&] { interpret(*copy_func(4), {array(a, f32), array(c, f32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: argument 0 (buffer A): expected shape (4), so dimension 0 "
                 "= 4, found shape (5,)");
}

TEST(InterpretError, InconsistentSymbolicDimension) {
  Ref<Var> n = make_size_var("n");
  auto A = decl_buffer({n}, f32, "A");
  auto B = decl_buffer({n}, f32, "B");
  Ref<Var> i = make_var("i");
  auto func = make_func({A, B}, loop(i, Expr(n), buffer_store(B, buffer_load(A, {i}), {i})));
  std::vector<float> a(4), b(5);
  std::string msg = error_of([&] { interpret(*func, {array(a, f32), array(b, f32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: argument 1 (buffer B): dimension 0 of buffer B is n = 4 "
                 "(bound by dimension 0 of buffer A), found 5");
}

TEST(InterpretError, DimensionExpressionChecked) {
  Ref<Var> n = make_size_var("n");
  auto A = decl_buffer({n}, f32, "A");
  auto B = decl_buffer({n * 2}, f32, "B");
  auto func = make_func({A, B}, make<Evaluate>(int32_const(0)));
  std::vector<float> a(3), b(5);
  std::string msg = error_of([&] { interpret(*func, {array(a, f32), array(b, f32)}); });
  EXPECT_MESSAGE(msg,
                 "argument 1 (buffer B): expected shape (n * 2 = 6), so dimension 0 = 6, "
                 "found shape (5,)");
}

TEST(InterpretError, NonContiguousArray) {
  std::vector<float> a(8), c(4);
  std::string msg = error_of([&] {
    interpret(*copy_func(4), {Argument::tensor(a.data(), f32, {4}, {2}), array(c, f32)});
  });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: argument 0 (buffer A): expected a C-contiguous array (the "
                 "buffer has no strides), found strides (2,) (in elements) for shape (4,)");
}

TEST(InterpretError, ReadOnlyOutput) {
  std::vector<float> a(4), c(4);
  std::string msg = error_of([&] {
    interpret(*copy_func(4), {array(a, f32), Argument::tensor(c.data(), f32, {4}, {}, false)});
  });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: argument 1 (buffer C): the function stores into this buffer "
                 "but the array is read-only");
  // A read-only input is fine.
  EXPECT_EQ(
      error_of([&] {
        interpret(*copy_func(4), {Argument::tensor(a.data(), f32, {4}, {}, false), array(c, f32)});
      }),
      "");
}

TEST(InterpretError, ScalarArgumentChecks) {
  Ref<Var> n = make_var("n", DataType::int_(8));
  auto A = buffer({1}, DataType::int_(8), "A");
  auto func = make_func({A, n}, buffer_store(A, n, {int32_const(0)}));
  std::vector<int8_t> a(1);
  EXPECT_MESSAGE(error_of([&] {
                   interpret(*func, {array(a, DataType::int_(8)), Argument::integer(300)});
                 }),
                 "tir.interpret: argument 1 (scalar n): the value 300 does not fit in dtype int8");
  EXPECT_MESSAGE(error_of([&] {
                   interpret(*func, {array(a, DataType::int_(8)), Argument::floating(1.5)});
                 }),
                 "tir.interpret: argument 1 (scalar n): expected an integer of dtype int8, found "
                 "the float 1.5");
  EXPECT_MESSAGE(error_of([&] {
                   interpret(*func, {array(a, DataType::int_(8)), array(a, DataType::int_(8))});
                 }),
                 "tir.interpret: argument 1 (scalar n): expected a scalar of dtype int8, found an "
                 "array");
  EXPECT_MESSAGE(
      error_of([&] {
        interpret(*func, {Argument::integer(1), Argument::integer(1)});
      }),
      "tir.interpret: argument 0 (buffer A): expected an array of dtype int8, found a scalar");
}

TEST(InterpretError, UnsupportedBuiltinIsRefused) {
  auto A = buffer({1}, i32, "A");
  auto func = make_func({A}, make<Evaluate>(call(i32, Builtin::CallLLVMPureIntrin,
                                                 {make<StringImm>("llvm.ctpop"), int32_const(0)})));
  std::vector<int32_t> a(1);
  std::string msg = error_of([&] { interpret(*func, {array(a, i32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: the builtin call_llvm_pure_intrin is not supported by the "
                 "interpreter: the interpreter has no LLVM");
}

TEST(InterpretError, MissingExternSymbolIsRefused) {
  auto A = buffer({1}, i32, "A");
  auto func = make_func(
      {A}, make<Evaluate>(call(i32, Builtin::CallExtern,
                               {make<StringImm>("kiln_no_such_symbol_xyz"), int32_const(0)})));
  std::vector<int32_t> a(1);
  std::string msg = error_of([&] { interpret(*func, {array(a, i32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: call_extern: the C function 'kiln_no_such_symbol_xyz' is not "
                 "defined in this process nor in a library opened with "
                 "kiln.runtime.load_library");
}

TEST(InterpretError, StorageSyncIsRefusedWithoutGpuSemantics) {
  auto A = buffer({1}, i32, "A");
  auto func =
      make_func({A}, make<Evaluate>(call(Builtin::StorageSync, {make<StringImm>("shared")})));
  std::vector<int32_t> a(1);
  std::string msg = error_of([&] {
    interpret(*func, {array(a, i32)}, Options{GpuSemantics::kOff, {}});
  });
  EXPECT_MESSAGE(msg,
                 "the builtin storage_sync is not supported by the interpreter: a barrier "
                 "between GPU threads has a meaning only with GPU semantics");
}

TEST(InterpretError, BlockIteratorOutsideItsDomain) {
  auto A = buffer({8}, f32, "A");
  Ref<Var> i = make_var("i"), vi = make_var("vi");
  auto block = make<Block>();
  block->name = "A";
  block->iter_vars = {IterVar{vi, Range{int32_const(0), int32_const(4)}, IterType::kDataPar}};
  block->body = buffer_store(A, make_zero(f32), {vi});
  auto func =
      make_func({A}, loop(i, 8, make<BlockRealize>(std::vector<Expr>{i}, bool_const(true), block)));
  std::vector<float> a(8);
  std::string msg = error_of([&] { interpret(*func, {array(a, f32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: block A: iterator vi is bound to 4, outside its domain [0, 4)");
}

TEST(InterpretError, VariableOutsideItsScope) {
  auto A = buffer({4}, i32, "A");
  Ref<Var> i = make_var("i");
  auto func = make_func(
      {A}, seq({loop(i, 4, buffer_store(A, i, {i})), buffer_store(A, i, {int32_const(0)})}));
  std::vector<int32_t> a(4);
  std::string msg = error_of([&] { interpret(*func, {array(a, i32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: variable i is used in an expression outside the scope that "
                 "defines it");
}

TEST(InterpretError, BufferWithoutStorage) {
  auto A = buffer({4}, i32, "A");
  auto T = buffer({4}, i32, "T");
  auto func = make_func({A}, buffer_store(A, buffer_load(T, {int32_const(0)}), {int32_const(0)}));
  std::vector<int32_t> a(4);
  std::string msg = error_of([&] { interpret(*func, {array(a, i32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: buffer T is accessed where its storage (data T) is neither a "
                 "parameter nor allocated");
}

TEST(InterpretError, ReduceNodeIsRefused) {
  auto A = buffer({1}, f32, "A");
  auto reduce = make<Reduce>(f32);
  auto func = make_func({A}, buffer_store(A, Expr(reduce), {int32_const(0)}));
  std::vector<float> a(1);
  std::string msg = error_of([&] { interpret(*func, {array(a, f32)}); });
  EXPECT_MESSAGE(msg, "tir.interpret: a Reduce expression is found in the function body");
}

// Argument layouts.

TEST(InterpretError, ExplicitStrideMismatch) {
  auto A = buffer({4}, f32, "A");
  A->strides = {int32_const(2)};
  auto func = make_func({A}, make<Evaluate>(int32_const(0)));
  std::vector<float> a(8);
  std::string msg = error_of([&] { interpret(*func, {array(a, f32, {4})}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: argument 0 (buffer A): expected stride 2 in dimension 0, "
                 "found strides (1,) (in elements)");
}

TEST(InterpretError, ArgumentStridesDoNotMatchItsShape) {
  std::vector<float> a(4), c(4);
  std::string msg = error_of([&] {
    interpret(*copy_func(4), {Argument::tensor(a.data(), f32, {4}, {1, 1}), array(c, f32)});
  });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: argument 0 (buffer A): the array has 2 strides for 1 "
                 "dimensions");
}

TEST(InterpretError, NonZeroElemOffsetOfAnArgument) {
  auto A = buffer({4}, f32, "A");
  A->elem_offset = int32_const(3);
  auto func = make_func({A}, make<Evaluate>(int32_const(0)));
  std::vector<float> a(4);
  std::string msg = error_of([&] { interpret(*func, {array(a, f32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: argument 0 (buffer A): the buffer's elem_offset is 3; an "
                 "argument must start at element 0");
}

TEST(InterpretError, DimensionVariableBoundByNoParameter) {
  Ref<Var> n = make_size_var("n");
  auto A = decl_buffer({n * 2}, f32, "A");
  auto func = make_func({A}, make<Evaluate>(int32_const(0)));
  std::vector<float> a(4);
  std::string msg = error_of([&] { interpret(*func, {array(a, f32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: argument 0 (buffer A): dimension 0 is n * 2, whose variable "
                 "n is bound by no parameter");
}

TEST(InterpretError, HandleParameterWithoutBuffer) {
  Ref<Var> p = make_var("p", DataType::handle());
  auto func = make_func({p}, make<Evaluate>(int32_const(0)));
  std::string msg = error_of([&] { interpret(*func, {Argument::integer(0)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: argument 0 (scalar p) has dtype handle and no buffer, which "
                 "the interpreter does not support");
}

// Functions the interpreter refuses before running them.

TEST(InterpretRefuses, StringConstantAsAValue) {
  auto func = make_func({}, make<Evaluate>(make<StringImm>("hello")));
  std::string msg = error_of([&] { interpret(*func, {}); });
  EXPECT_MESSAGE(msg, "tir.interpret: the string constant \"hello\" cannot be evaluated");
}

TEST(InterpretRefuses, HandleVariableAsAValue) {
  auto A = buffer({1}, f32, "A");
  auto func = make_func({A}, make<Evaluate>(A->data));
  std::vector<float> a(1);
  std::string msg = error_of([&] { interpret(*func, {array(a, f32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: the variable A of dtype handle is not supported by the "
                 "interpreter");
}

TEST(InterpretRefuses, LetOfAHandle) {
  auto A = buffer({1}, f32, "A");
  Ref<Var> p = make_var("p", DataType::handle());
  auto func = make_func({A}, make<LetStmt>(p, A->data, make<Evaluate>(int32_const(0))));
  std::vector<float> a(1);
  std::string msg = error_of([&] { interpret(*func, {array(a, f32)}); });
  EXPECT_MESSAGE(msg, "tir.interpret: let p binds a handle, which the interpreter does not model");
}

TEST(InterpretRefuses, BlockIteratorsWithoutBindings) {
  auto block = make<Block>();
  block->name = "B";
  block->iter_vars = {IterVar{make_var("v"), Range{int32_const(0), int32_const(4)}}};
  block->body = make<Evaluate>(int32_const(0));
  std::string alone = error_of([&] { interpret(*make_func({}, block), {}); });
  EXPECT_MESSAGE(alone, "tir.interpret: block B has 1 iterators but no BlockRealize binds them");
  auto realize = make<BlockRealize>(std::vector<Expr>{}, bool_const(true), block);
  std::string short_realize = error_of([&] { interpret(*make_func({}, realize), {}); });
  EXPECT_MESSAGE(short_realize,
                 "tir.interpret: block B has 1 iterators but its BlockRealize "
                 "binds 0");
}

TEST(InterpretRefuses, VectorCondition) {
  Stmt nop = make<Evaluate>(int32_const(0));
  auto func = make_func({}, make<IfThenElse>(broadcast(bool_const(true), 4), nop));
  std::string msg = error_of([&] { interpret(*func, {}); });
  EXPECT_MESSAGE(
      msg,
      "tir.interpret: an if statement with the vector condition T.Broadcast(T.bool(True), "
      "4) must hold one store and no else, found ");
}

TEST(InterpretRefuses, FloatLoopVariable) {
  Ref<Var> x = make_var("x", f32);
  auto func = make_func({}, make<For>(x, make_zero(f32), make_const(f32, 4.0), ForKind::kSerial,
                                      make<Evaluate>(int32_const(0))));
  std::string msg = error_of([&] { interpret(*func, {}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: loop variable x has dtype float32; expected a scalar "
                 "integer");
}

TEST(InterpretRefuses, BuiltinOnTheWrongKindOfNumber) {
  auto A = buffer({1}, i32, "A");
  Expr x = buffer_load(A, {int32_const(0)});
  std::vector<int32_t> a(1);
  auto exp_of_int = make_func(
      {A}, buffer_store(A, make<Call>(i32, Builtin::Exp, std::vector<Expr>{x}), {int32_const(0)}));
  EXPECT_MESSAGE(error_of([&] { interpret(*exp_of_int, {array(a, i32)}); }),
                 "tir.interpret: exp expects float arguments, found dtype int32 in T.exp(A[0])");
  Expr f = cast(f32, x);
  auto and_of_float =
      make_func({A}, make<Evaluate>(make<Call>(f32, Builtin::BitwiseAnd, std::vector<Expr>{f, f})));
  EXPECT_MESSAGE(error_of([&] { interpret(*and_of_float, {array(a, i32)}); }),
                 "tir.interpret: bitwise_and expects integer arguments, found dtype float32");
  auto reinterpret_bool =
      make_func({A}, make<Evaluate>(make<Call>(DataType::bool_(), Builtin::Reinterpret,
                                               std::vector<Expr>{cast(DataType::int_(8), x)})));
  EXPECT_MESSAGE(error_of([&] { interpret(*reinterpret_bool, {array(a, i32)}); }),
                 "tir.interpret: reinterpret of int8 as bool is not supported");
}

TEST(InterpretRefuses, LoadAndStoreOfTheWrongDtype) {
  auto A = buffer({1}, i32, "A");
  std::vector<int32_t> a(1);
  auto bad_load =
      make_func({A}, make<Evaluate>(make<BufferLoad>(f32, A, std::vector<Expr>{int32_const(0)})));
  EXPECT_MESSAGE(error_of([&] { interpret(*bad_load, {array(a, i32)}); }),
                 "tir.interpret: the load A[0] has dtype float32, but buffer A holds int32");
  auto bad_store =
      make_func({A}, make<BufferStore>(A, make_const(f32, 1.0), std::vector<Expr>{int32_const(0)}));
  EXPECT_MESSAGE(error_of([&] { interpret(*bad_store, {array(a, i32)}); }),
                 "tir.interpret: a store to buffer A expects a value of dtype int32 (the buffer's "
                 "dtype with the lanes of the index), found T.float32(1) of dtype float32");
  auto float_index = make_func(
      {A}, make<Evaluate>(make<BufferLoad>(i32, A, std::vector<Expr>{make_const(f32, 0.0)})));
  EXPECT_MESSAGE(error_of([&] { interpret(*float_index, {array(a, i32)}); }),
                 "tir.interpret: buffer A is indexed by T.float32(0) of dtype float32; expected an "
                 "integer index");
}

TEST(InterpretRefuses, AllocationOfHandlesOrTooManyBytes) {
  auto H = decl_buffer({int32_const(4)}, DataType::handle(), "H");
  auto handles = make_func({}, make<Allocate>(H, make<Evaluate>(int32_const(0))));
  EXPECT_MESSAGE(error_of([&] { interpret(*handles, {}); }),
                 "tir.interpret: cannot allocate buffer H of dtype handle; expected a scalar "
                 "number or bool dtype");
  Ref<Var> n = make_var("n", DataType::int64());
  auto T = decl_buffer({n}, f32, "T");
  auto huge = make_func({n}, make<Allocate>(T, make<Evaluate>(int32_const(0))));
  EXPECT_MESSAGE(error_of([&] { interpret(*huge, {Argument::integer(int64_t{1} << 40)}); }),
                 "tir.interpret: buffer T needs 1099511627776 elements of 4 bytes; the "
                 "interpreter allocates at most 2^40 bytes");
}

}  // namespace
}  // namespace kiln::interpreter::testing
