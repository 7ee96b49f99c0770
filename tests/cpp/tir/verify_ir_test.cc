// Tests of verify_ir: well-formed functions pass (before and after lowering), and each check
// fails on IR broken on purpose with a message naming the pass, the problem and the place.
#include "kiln/tir/verify_ir.h"

#include <gtest/gtest.h>

#include "kiln/tir/pipeline.h"
#include "tir_test_util.h"

namespace kiln::tir::testing {
namespace {

std::string verify_error(const Ref<PrimFunc>& f) {
  return error_of([&] { verify_ir(f, "pass broken_pass"); });
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "expected\n" << part << "\nin\n" << text;
}

TEST(VerifyIR, WellFormedFunctionsPass) {
  for (const Ref<PrimFunc>& f :
       {matmul_func(2, 3, 4), conv2d_func(), softmax_func(2, 3), layer_norm_func(2, 3),
        symbolic_elementwise_func(), tiled_producer_consumer(8, 4)}) {
    EXPECT_EQ(verify_error(f), "");
    EXPECT_EQ(verify_error(lower(f)), "");
  }
}

TEST(VerifyIR, UndefinedVariable) {
  Ref<Buffer> a = buffer({4}, "A");
  Ref<Var> i = make_var("i"), stray = make_var("stray");
  Ref<PrimFunc> f = make_func({a}, loop(i, 4, buffer_store(a, f32(1), {i + stray})));
  std::string message = verify_error(f);
  expect_contains(message, "internal error in kiln");
  expect_contains(message,
                  "verify_ir: the IR of main is malformed after pass broken_pass: "
                  "variable stray is used before or without a definition");
  expect_contains(message, R"(
        A[i + stray] = T.float32(1)
        ^^^^^^^^^^^^^^^^^^^^^^^^^^^ variable stray is used before or without a definition)");
}

TEST(VerifyIR, VariableOutsideItsScope) {
  Ref<Buffer> a = buffer({4}, "A");
  Ref<Var> i = make_var("i");
  Ref<PrimFunc> f =
      make_func({a}, seq({loop(i, 4, buffer_store(a, f32(1), {i})), buffer_store(a, f32(2), {i})}));
  expect_contains(verify_error(f), "variable i is used outside the scope of its definition");
}

TEST(VerifyIR, VariableDefinedTwice) {
  Ref<Buffer> a = buffer({4}, "A");
  Ref<Var> i = make_var("i");
  Stmt store = buffer_store(a, f32(1), {i});
  Ref<PrimFunc> f = make_func({a}, seq({loop(i, 4, store), loop(i, 4, store)}));
  expect_contains(verify_error(f), "variable i is defined twice");
}

TEST(VerifyIR, BlockIteratorOutsideItsBlock) {
  Ref<Buffer> a = buffer({4}, "A");
  Ref<Var> i = make_var("i"), vi = make_var("vi");
  Ref<PrimFunc> f = make_func(
      {a}, root(loop(i, 4, block("A", {iter(vi, 4)}, {vi}, buffer_store(a, f32(1), {vi})))));
  expect_contains(verify_error(f), "variable vi is used before or without a definition");
}

TEST(VerifyIR, AccessOutsideTheAllocation) {
  Ref<Buffer> a = buffer({4}, "A");
  Ref<Buffer> t = buffer({4}, "tmp");
  Ref<PrimFunc> f = make_func({a}, seq({make<Allocate>(t, buffer_store(t, f32(1), {c(0)})),
                                        buffer_store(a, buffer_load(t, {c(0)}), {c(0)})}));
  expect_contains(verify_error(f),
                  "buffer tmp is accessed but its data variable tmp is not defined here");
}

TEST(VerifyIR, IndexCountDiffersFromTheBuffer) {
  Ref<Buffer> a = buffer({4, 4}, "A");
  Ref<Buffer> b = buffer({16}, "B");
  Ref<Var> i = make_var("i");
  Expr flat_load = make<BufferLoad>(DataType::float32(), a, std::vector<Expr>{i});
  Ref<PrimFunc> f = make_func({a, b}, loop(i, 16, buffer_store(b, flat_load, {i})));
  std::string message = verify_error(f);
  expect_contains(message, "buffer A has 2 dimensions but is accessed with 1 indices");
  expect_contains(message, R"(
        B[i] = A[i]
               ^^^^ buffer A has 2 dimensions)");
}

TEST(VerifyIR, BinaryOperandsOfDifferentDtypes) {
  Ref<Buffer> a = buffer({4}, "A");
  Ref<Var> i = make_var("i");
  Expr mixed = make<Add>(DataType::int32(), i, make_const(DataType::int64(), 1));
  Ref<PrimFunc> f = make_func({a}, loop(i, 3, buffer_store(a, f32(1), {mixed})));
  expect_contains(verify_error(f), "the operands of Add have different dtypes: int32 and int64");
}

TEST(VerifyIR, SelectArmsOfDifferentDtypes) {
  Ref<Buffer> a = buffer({4}, "A");
  Ref<Var> i = make_var("i");
  Expr mixed =
      make<Select>(DataType::float32(), lt(i, c(2)), f32(1), make_const(DataType::float64(), 2.0));
  Ref<PrimFunc> f = make_func({a}, loop(i, 4, buffer_store(a, mixed, {i})));
  expect_contains(verify_error(f), "the arms of Select have different dtypes: float32 and float64");
}

TEST(VerifyIR, BlockBindingCount) {
  Ref<Buffer> a = buffer({4}, "A");
  Ref<Var> i = make_var("i"), vi = make_var("vi");
  Ref<PrimFunc> f = make_func(
      {a}, root(loop(i, 4, block("A", {iter(vi, 4)}, {i, i}, buffer_store(a, f32(1), {vi})))));
  expect_contains(verify_error(f), "block \"A\" has 1 iterators but is bound to 2 values");
}

TEST(VerifyIR, LoopBoundsAreIntegers) {
  Ref<Buffer> a = buffer({4}, "A");
  Ref<Var> i = make_var("i");
  Ref<PrimFunc> f =
      make_func({a}, make<For>(i, c(0), f32(4), ForKind::kSerial, buffer_store(a, f32(1), {c(0)})));
  expect_contains(verify_error(f),
                  "the loop over i has a bound of dtype float32; loop bounds are scalar integers");
}

}  // namespace
}  // namespace kiln::tir::testing
