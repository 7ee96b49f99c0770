// Accuracy of lower_intrinsics: each lowered float32 function is run on the reference
// interpreter over 10^6 inputs (half uniform over the interesting range, half log-uniform in
// magnitude with random signs) and compared with libm in double precision rounded to float32.
// The maximum error in ULP is printed per function and asserted.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <limits>
#include <random>
#include <vector>

#include "flat_program.h"
#include "kiln/tir/lower_intrinsics.h"

namespace kiln::tir {
namespace {

using namespace flat_testing;

constexpr size_t kPoints = 1000000;

// The float32 numbers in order as integers, so that a difference counts the floats between.
int64_t ordered(float x) {
  int32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits < 0 ? -static_cast<int64_t>(bits & 0x7fffffff) : static_cast<int64_t>(bits);
}

// The error of `y` in ULP against the exact value `exact`, rounded to float32 first. A NaN
// where a number is due (or the other way round) counts as a huge error.
int64_t ulp_error(float y, double exact) {
  if (std::isnan(exact) || std::isnan(y)) {
    return std::isnan(exact) == std::isnan(y) ? 0 : std::numeric_limits<int32_t>::max();
  }
  return std::llabs(ordered(y) - ordered(static_cast<float>(exact)));
}

struct InputRange {
  double uniform_lo, uniform_hi;  // half of the points
  double log_lo, log_hi;          // the other half: magnitudes log-uniform in [log_lo, log_hi]
  bool positive;                  // only positive inputs in the log-uniform half
};

std::vector<float> inputs(const InputRange& r, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> uniform(r.uniform_lo, r.uniform_hi);
  std::uniform_real_distribution<double> exponent(std::log(r.log_lo), std::log(r.log_hi));
  std::bernoulli_distribution sign(0.5);
  std::vector<float> v(kPoints);
  for (size_t i = 0; i < kPoints; ++i) {
    if (i % 2 == 0) {
      v[i] = static_cast<float>(uniform(gen));
    } else {
      double m = std::exp(exponent(gen));
      v[i] = static_cast<float>(r.positive || !sign(gen) ? m : -m);
    }
  }
  return v;
}

// The lowered function evaluated on `x` by the interpreter.
std::vector<float> evaluate(Builtin op, const std::vector<float>& x) {
  Ref<Buffer> a = buffer_1d("A", i32(static_cast<int64_t>(x.size())));
  Ref<Buffer> b = buffer_1d("B", i32(static_cast<int64_t>(x.size())));
  Ref<Var> i = make_var("i");
  Stmt body = loop(i, static_cast<int64_t>(x.size()),
                   buffer_store(b, call(op, {buffer_load(a, {i})}), {i}));
  Ref<PrimFunc> lowered = lower_intrinsics(make_func({a, b}, body));
  EXPECT_EQ(count_calls(lowered->body, op), 0);
  return run(lowered, {x, std::vector<float>(x.size(), 0.0f)})[1];
}

struct Case {
  Builtin op;
  double (*exact)(double);
  InputRange range;
  int64_t bound;  // the most ULP allowed
};

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

void check(const char* name, const Case& c, unsigned seed) {
  std::vector<float> x = inputs(c.range, seed);
  std::vector<float> y = evaluate(c.op, x);
  int64_t worst = 0;
  float worst_x = 0.0f;
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t e = ulp_error(y[i], c.exact(static_cast<double>(x[i])));
    if (e > worst) {
      worst = e;
      worst_x = x[i];
    }
  }
  std::cout << std::left << std::setw(8) << name << " max error " << worst
            << " ULP (at x = " << std::setprecision(9) << worst_x << ", " << kPoints << " points)"
            << std::endl;
  ::testing::Test::RecordProperty(std::string(name) + "_max_ulp", static_cast<int>(worst));
  EXPECT_LE(worst, c.bound) << name << " at x = " << worst_x;
}

TEST(LowerIntrinsicsAccuracy, Exp) {
  check("exp",
        {Builtin::Exp, [](double x) { return std::exp(x); }, {-104, 89, 1e-30, 100, false}, 4}, 1);
}

TEST(LowerIntrinsicsAccuracy, Exp2) {
  check("exp2",
        {Builtin::Exp2, [](double x) { return std::exp2(x); }, {-151, 129, 1e-30, 150, false}, 4},
        2);
}

TEST(LowerIntrinsicsAccuracy, Log) {
  check("log", {Builtin::Log, [](double x) { return std::log(x); }, {0, 4, 1e-45, 3.4e38, true}, 4},
        3);
}

TEST(LowerIntrinsicsAccuracy, Log2) {
  check("log2",
        {Builtin::Log2, [](double x) { return std::log2(x); }, {0, 4, 1e-45, 3.4e38, true}, 4}, 4);
}

TEST(LowerIntrinsicsAccuracy, Tanh) {
  check("tanh",
        {Builtin::Tanh, [](double x) { return std::tanh(x); }, {-10, 10, 1e-30, 100, false}, 4}, 5);
}

TEST(LowerIntrinsicsAccuracy, Sigmoid) {
  check("sigmoid", {Builtin::Sigmoid, &sigmoid, {-110, 110, 1e-30, 110, false}, 4}, 6);
}

TEST(LowerIntrinsicsAccuracy, Erf) {
  check("erf", {Builtin::Erf, [](double x) { return std::erf(x); }, {-5, 5, 1e-30, 10, false}, 4},
        7);
}

// sin and cos are accurate while |x| < 1e5 (see lower_intrinsics.h).
TEST(LowerIntrinsicsAccuracy, Sin) {
  check("sin",
        {Builtin::Sin, [](double x) { return std::sin(x); }, {-1e4, 1e4, 1e-30, 1e5, false}, 4}, 8);
}

TEST(LowerIntrinsicsAccuracy, Cos) {
  check("cos",
        {Builtin::Cos, [](double x) { return std::cos(x); }, {-1e4, 1e4, 1e-30, 1e5, false}, 4}, 9);
}

}  // namespace
}  // namespace kiln::tir
