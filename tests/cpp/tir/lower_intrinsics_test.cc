// Tests of lower_intrinsics: the golden lowering of exp, what is left alone, special values
// (zeros, infinities, NaN, subnormals), float16/bfloat16 through float32, and vector lanes.
// The accuracy over many inputs is in lower_intrinsics_accuracy_test.cc.
#include "kiln/tir/lower_intrinsics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "flat_program.h"
#include "kiln/ir/printer.h"
#include "kiln/tir/vectorize_loops.h"

namespace kiln::tir {
namespace {

using namespace flat_testing;

// for i in range(n): B[i] = op(A[i]) over float32 arrays of `n` elements.
Ref<PrimFunc> unary_func(Builtin op, int64_t n, ForKind kind = ForKind::kSerial) {
  Ref<Buffer> a = buffer_1d("A", i32(n)), b = buffer_1d("B", i32(n));
  Ref<Var> i = make_var("i");
  return make_func({a, b}, loop(i, n, buffer_store(b, call(op, {buffer_load(a, {i})}), {i}), kind));
}

std::vector<float> lowered_values(Builtin op, const std::vector<float>& x) {
  Ref<PrimFunc> lowered = lower_intrinsics(unary_func(op, static_cast<int64_t>(x.size())));
  return run(lowered, {x, std::vector<float>(x.size())})[1];
}

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

TEST(LowerIntrinsics, ExpBecomesArithmeticOnBits) {
  Ref<Var> x = make_var("x", DataType::float32());
  Ref<Buffer> b = buffer_1d("B", i32(1));
  Ref<PrimFunc> func = make_func({b, x}, buffer_store(b, call(Builtin::Exp, {x}), {i32(0)}));
  Ref<PrimFunc> result = lower_intrinsics(func);
  EXPECT_EQ(
      to_script(result->body),
      "B[0] = T.let(x_1, x, T.let(xc, T.min(T.max(x_1, T.float32(-104)), T.float32(88.8)), "
      "T.let(n, T.round(xc * T.float32(1.442695)), T.let(r, xc - n * T.float32(0.6933594) - n "
      "* T.float32(-0.00021219444), T.let(n_int, T.Cast(\"int32\", n), T.let(n1, "
      "T.shift_right(n_int, 1), T.Select(T.isnan(x_1), x_1, (T.float32(1) + (r + r * r * "
      "((((T.float32(0.0013820468) * r + T.float32(0.00836925)) * r + T.float32(0.041668285)) "
      "* r + T.float32(0.16666517)) * r + T.float32(0.49999994)))) * "
      "T.reinterpret(\"float32\", T.shift_left(n1 + 127, 23)) * T.reinterpret(\"float32\", "
      "T.shift_left(n_int - n1 + 127, 23)))))))))");
  EXPECT_EQ(count_calls(result->body, Builtin::Exp), 0);
}

TEST(LowerIntrinsics, UnchangedForFloat64AndOtherCalls) {
  Ref<Var> x = make_var("x", DataType::float64());
  Ref<Buffer> b = buffer_1d("B", i32(1), DataType::float64());
  Ref<PrimFunc> f64 = make_func({b, x}, buffer_store(b, call(Builtin::Exp, {x}), {i32(0)}));
  EXPECT_TRUE(lower_intrinsics(f64).same_as(f64));
  Ref<PrimFunc> sqrt = unary_func(Builtin::Sqrt, 4);
  EXPECT_TRUE(lower_intrinsics(sqrt).same_as(sqrt));
}

TEST(LowerIntrinsics, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float max = std::numeric_limits<float>::max();
  const float sub = 1e-40f;  // subnormal
  struct Expect {
    Builtin op;
    float x, y;
  };
  const Expect cases[] = {
      {Builtin::Exp, 0.0f, 1.0f},
      {Builtin::Exp, -0.0f, 1.0f},
      {Builtin::Exp, inf, inf},
      {Builtin::Exp, -inf, 0.0f},
      {Builtin::Exp, max, inf},
      {Builtin::Exp, -max, 0.0f},
      {Builtin::Exp, sub, 1.0f},
      {Builtin::Exp, -103.5f, std::exp(-103.5f)},
      {Builtin::Exp2, -149.0f, 1.4e-45f},
      {Builtin::Exp2, 128.0f, inf},
      {Builtin::Exp2, -inf, 0.0f},
      {Builtin::Log, 0.0f, -inf},
      {Builtin::Log, -0.0f, -inf},
      {Builtin::Log, inf, inf},
      {Builtin::Log, 1.0f, 0.0f},
      {Builtin::Log, sub, std::log(sub)},
      {Builtin::Log, 1.4e-45f, std::log(1.4e-45f)},
      {Builtin::Log2, 1024.0f, 10.0f},
      {Builtin::Log2, 1.4e-45f, -149.0f},
      {Builtin::Log2, 0.0f, -inf},
      {Builtin::Tanh, 0.0f, 0.0f},
      {Builtin::Tanh, -0.0f, -0.0f},
      {Builtin::Tanh, inf, 1.0f},
      {Builtin::Tanh, -inf, -1.0f},
      {Builtin::Tanh, sub, sub},
      {Builtin::Sigmoid, 0.0f, 0.5f},
      {Builtin::Sigmoid, -0.0f, 0.5f},
      {Builtin::Sigmoid, inf, 1.0f},
      {Builtin::Sigmoid, -inf, 0.0f},
      {Builtin::Erf, 0.0f, 0.0f},
      {Builtin::Erf, -0.0f, -0.0f},
      {Builtin::Erf, inf, 1.0f},
      {Builtin::Erf, -inf, -1.0f},
      {Builtin::Sin, 0.0f, 0.0f},
      {Builtin::Sin, -0.0f, -0.0f},
      {Builtin::Sin, sub, sub},
      {Builtin::Cos, 0.0f, 1.0f},
      {Builtin::Cos, -0.0f, 1.0f},
  };
  for (const Expect& c : cases) {
    float y = lowered_values(c.op, {c.x})[0];
    EXPECT_EQ(bits_of(y), bits_of(c.y))
        << builtin_name(c.op) << "(" << c.x << ") = " << y << ", expected " << c.y;
  }
  // NaN in, NaN out; and the NaN results of log and of sin/cos at infinity.
  for (Builtin op : {Builtin::Exp, Builtin::Exp2, Builtin::Log, Builtin::Log2, Builtin::Tanh,
                     Builtin::Sigmoid, Builtin::Erf, Builtin::Sin, Builtin::Cos}) {
    EXPECT_TRUE(std::isnan(lowered_values(op, {nan})[0])) << builtin_name(op);
  }
  EXPECT_TRUE(std::isnan(lowered_values(Builtin::Log, {-1.0f})[0]));
  EXPECT_TRUE(std::isnan(lowered_values(Builtin::Log, {-inf})[0]));
  EXPECT_TRUE(std::isnan(lowered_values(Builtin::Sin, {inf})[0]));
  EXPECT_TRUE(std::isnan(lowered_values(Builtin::Cos, {-inf})[0]));
  // Beyond the accurate range sin stays in [-1, 1].
  float far = lowered_values(Builtin::Sin, {max})[0];
  EXPECT_LE(std::fabs(far), 1.0f);
}

TEST(LowerIntrinsics, HalfPrecisionIsComputedInFloat32) {
  for (DataType t : {DataType::float_(16), DataType::bfloat16()}) {
    // B[i] = float32(exp(t(A[i]))): the lowered call keeps the dtype of the original one.
    Ref<Buffer> a = buffer_1d("A", i32(64)), b = buffer_1d("B", i32(64));
    Ref<Var> i = make_var("i");
    Expr value = cast(DataType::float32(), call(Builtin::Tanh, {cast(t, buffer_load(a, {i}))}));
    Ref<PrimFunc> func = make_func({a, b}, loop(i, 64, buffer_store(b, value, {i})));
    Ref<PrimFunc> lowered = lower_intrinsics(func);
    EXPECT_EQ(count_calls(lowered->body, Builtin::Tanh), 0);
    std::vector<float> in = random_floats(64);
    for (float& v : in) v *= 3.0f;
    std::vector<float> expected = run(func, {in, std::vector<float>(64)})[1];
    std::vector<float> got = run(lowered, {in, std::vector<float>(64)})[1];
    double tolerance = t.is_bfloat16() ? 1.0 / 128 : 1.0 / 1024;  // one ULP of the type
    for (size_t k = 0; k < in.size(); ++k) {
      EXPECT_LE(std::fabs(got[k] - expected[k]), tolerance * std::fabs(expected[k]))
          << t << " tanh(" << in[k] << ")";
    }
  }
}

TEST(LowerIntrinsics, VectorLanesGiveTheScalarResults) {
  const Builtin ops[] = {Builtin::Exp,  Builtin::Exp2, Builtin::Log,
                         Builtin::Log2, Builtin::Tanh, Builtin::Sigmoid,
                         Builtin::Erf,  Builtin::Sin,  Builtin::Cos};
  std::vector<float> in = random_floats(8, 3);
  for (float& v : in) v = 4.0f * v + 4.5f;  // positive, for log
  for (Builtin op : ops) {
    Ref<PrimFunc> vector_func =
        lower_intrinsics(vectorize_loops(unary_func(op, 8, ForKind::kVectorized)));
    EXPECT_EQ(count_kind(vector_func->body, NodeKind::For), 0) << builtin_name(op);
    EXPECT_EQ(count_calls(vector_func->body, op), 0);
    std::vector<float> vector_result = run(vector_func, {in, std::vector<float>(8)})[1];
    EXPECT_EQ(vector_result, lowered_values(op, in)) << builtin_name(op);
  }
}

}  // namespace
}  // namespace kiln::tir
