// lower_intrinsics: float32 math calls become polynomial and bit-manipulation IR that the code
// generator vectorizes like any other arithmetic.
#include "kiln/tir/lower_intrinsics.h"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

// Polynomial coefficients, lowest degree first: minimax fits (weighted by the relative error of
// the final result) computed for kiln and rounded to float32 one coefficient at a time.
// exp(r) = 1 + r + r^2 * kExp(r) on [-ln2/2, ln2/2].
constexpr double kExp[] = {4.999999404e-01, 1.666651666e-01, 4.166828468e-02, 8.369250223e-03,
                           1.382046845e-03};
// log1p(f) = f - f^2/2 + f^3 * kLog1p(f) on [sqrt(1/2) - 1, sqrt(2) - 1].
constexpr double kLog1p[] = {3.333333135e-01, -2.500081956e-01, 2.000124305e-01, -1.662341207e-01,
                             1.420154423e-01, -1.315953732e-01, 1.276242733e-01, -7.636890560e-02};
// tanh(x) = x + x^3 * kTanh(x^2) on [0, 0.625].
constexpr double kTanh[] = {-3.333328068e-01, 1.333141476e-01, -5.373776704e-02, 2.063349821e-02,
                            -5.699374713e-03};
// erf(x) = x * kErfSmall(x^2) on [0, 0.9].
constexpr double kErfSmall[] = {1.128379226e+00,  -3.761312664e-01, 1.129056290e-01,
                                -2.721289545e-02, 6.028280593e-03,  -1.709909760e-03,
                                4.482904333e-04};
// log(erfc(t)) + t^2 = kErfcLog(t - kErfcCenter) on [0.9, 4].
constexpr double kErfcCenter = 2.45;
constexpr double kErfcLog[] = {
    -1.539039612e+00, -3.583739102e-01, 5.776822194e-02,  -1.130190585e-02, 2.273008227e-03,
    -4.445959057e-04, 8.225888450e-05,  -1.366703873e-05, 1.595933668e-06,  -5.226261379e-08};
// sin(r) = r + r^3 * kSin(r^2) and cos(r) = 1 + r^2 * (r^2 * kCos(r^2) - 1/2) on
// [-pi/4 - 0.0105, pi/4 + 0.0105] (k = round(x * 2/pi) in float32 can be off by that much).
constexpr double kSin[] = {-1.666666716e-01, 8.333378471e-03, -1.985252748e-04, 2.825646789e-06};
constexpr double kCos[] = {4.166666791e-02, -1.388897654e-03, 2.482048149e-05, -2.871748563e-07};

// ln2 = kLn2Hi + kLn2Lo, kLn2Hi with 9 significant bits so that n * kLn2Hi is exact.
constexpr double kLn2Hi = 0.693359375;
constexpr double kLn2Lo = -2.12194440e-4;
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;
constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kTwoOverPi = 0.6366197723675814;
// pi/2 in five parts; the first four have 8 significant bits, so k * part is exact for
// |k| < 2^16.
constexpr double kPiHalf[] = {1.5703125, 4.825592041015625e-04, 1.2665987014770508e-06,
                              9.89530235528946e-10, 2.5633440682570896e-12};

constexpr double kFloatMin = 1.17549435082228750797e-38;  // least normal float32

// Builds one lowered call: each step is bound to a variable by a Let around the result, so
// that a value used several times is computed once.
class MathBuilder {
 public:
  explicit MathBuilder(int lanes)
      : f_(DataType::float32().with_lanes(lanes)), i_(DataType::int32().with_lanes(lanes)) {}

  Expr f(double v) const { return make_const(f_, v); }
  Expr i(int64_t v) const { return make_const(i_, v); }

  Expr bind(const char* name, Expr value) {
    auto var = make_var(name, value->dtype);
    lets_.emplace_back(var, std::move(value));
    return var;
  }

  Expr finish(Expr result) const {
    for (auto it = lets_.rbegin(); it != lets_.rend(); ++it)
      result = let(it->first, it->second, result);
    return result;
  }

  template <size_t N>
  Expr polynomial(const Expr& x, const double (&c)[N]) const {
    Expr acc = f(c[N - 1]);
    for (size_t k = N - 1; k-- > 0;) acc = add(mul(acc, x), f(c[k]));
    return acc;
  }

  Expr negate(const Expr& x) const { return mul(x, f(-1.0)); }
  Expr round(const Expr& x) const { return call(Builtin::Round, {x}); }
  Expr abs(const Expr& x) const { return call(Builtin::Abs, {x}); }
  Expr is_nan(const Expr& x) const { return call(Builtin::IsNan, {x}); }
  Expr to_bits(const Expr& x) const { return call(i_, Builtin::Reinterpret, {x}); }
  Expr from_bits(const Expr& x) const { return call(f_, Builtin::Reinterpret, {x}); }
  Expr shift_left(const Expr& x, int n) const { return call(Builtin::ShiftLeft, {x, i(n)}); }
  Expr shift_right(const Expr& x, int n) const { return call(Builtin::ShiftRight, {x, i(n)}); }
  Expr bit_and(const Expr& x, int64_t m) const { return call(Builtin::BitwiseAnd, {x, i(m)}); }
  Expr bit_or(const Expr& x, int64_t m) const { return call(Builtin::BitwiseOr, {x, i(m)}); }
  Expr to_int(const Expr& x) const { return cast(i_, x); }
  Expr to_float(const Expr& x) const { return cast(f_, x); }
  Expr infinity() const { return f(std::numeric_limits<double>::infinity()); }
  Expr nan() const { return f(std::numeric_limits<double>::quiet_NaN()); }

  // p * 2^n for an integral float n in [-151, 128]: two exponent fields, each a normal number,
  // so that only the last product rounds (also into the subnormals).
  Expr scale(const Expr& p, const Expr& n) {
    Expr ni = bind("n_int", to_int(n));
    Expr n1 = bind("n1", shift_right(ni, 1));
    Expr s1 = from_bits(shift_left(add(n1, i(127)), 23));
    Expr s2 = from_bits(shift_left(add(sub(ni, n1), i(127)), 23));
    return mul(mul(p, s1), s2);
  }

  // exp(r) for |r| <= ln2/2 (slightly more is fine).
  Expr exp_reduced(const Expr& r) {
    return add(f(1.0), add(r, mul(mul(r, r), polynomial(r, kExp))));
  }

  // exp(x) without the NaN rule (a NaN input gives a number).
  Expr exp_finite(const Expr& x) {
    Expr xc = bind("xc", min(max(x, f(-104.0)), f(88.8)));
    Expr n = bind("n", round(mul(xc, f(kLog2e))));
    Expr r = bind("r", sub(sub(xc, mul(n, f(kLn2Hi))), mul(n, f(kLn2Lo))));
    return scale(exp_reduced(r), n);
  }

 private:
  DataType f_, i_;
  std::vector<std::pair<Ref<Var>, Expr>> lets_;
};

Expr lower_exp(MathBuilder& b, const Expr& x) {
  return select(b.is_nan(x), x, b.exp_finite(x));
}

Expr lower_exp2(MathBuilder& b, const Expr& x) {
  Expr xc = b.bind("xc", min(max(x, b.f(-151.0)), b.f(128.5)));
  Expr n = b.bind("n", b.round(xc));
  Expr r = b.bind("r", mul(sub(xc, n), b.f(kLn2)));
  return select(b.is_nan(x), x, b.scale(b.exp_reduced(r), n));
}

// log(x) = e * ln2 + lp, or log2(x) = e + lp * log2(e), with lp = log1p(f).
Expr lower_log(MathBuilder& b, const Expr& x, bool base2) {
  Expr small = b.bind("small", lt(x, b.f(kFloatMin)));
  Expr bits = b.bind("bits", b.to_bits(select(small, mul(x, b.f(8388608.0)), x)));
  Expr e = sub(sub(b.shift_right(bits, 23), b.i(127)), select(small, b.i(23), b.i(0)));
  Expr m = b.bind("m", b.from_bits(b.bit_or(b.bit_and(bits, 0x7fffff), 0x3f800000)));
  Expr big = b.bind("big", gt(m, b.f(kSqrt2)));
  Expr ef = b.bind("e", b.to_float(add(e, select(big, b.i(1), b.i(0)))));
  Expr fr = b.bind("f", sub(select(big, mul(m, b.f(0.5)), m), b.f(1.0)));
  Expr correction = mul(mul(fr, fr), sub(mul(fr, b.polynomial(fr, kLog1p)), b.f(0.5)));
  Expr lp = b.bind("lp", add(fr, correction));
  Expr result = base2 ? add(ef, mul(lp, b.f(kLog2e)))
                      : add(add(lp, mul(ef, b.f(kLn2Lo))), mul(ef, b.f(kLn2Hi)));
  result = select(eq(x, b.infinity()), x, result);
  result = select(eq(x, b.f(0.0)), b.f(-std::numeric_limits<double>::infinity()), result);
  return select(logical_or(lt(x, b.f(0.0)), b.is_nan(x)), b.nan(), result);
}

Expr lower_tanh(MathBuilder& b, const Expr& x) {
  Expr a = b.bind("a", b.abs(x));
  Expr x2 = b.bind("x2", mul(x, x));
  Expr small = add(x, mul(x, mul(x2, b.polynomial(x2, kTanh))));
  Expr e = b.bind("e", b.exp_finite(add(a, a)));
  Expr t = b.bind("t", sub(b.f(1.0), div(b.f(2.0), add(e, b.f(1.0)))));
  Expr large = select(lt(x, b.f(0.0)), b.negate(t), t);
  Expr value = select(lt(a, b.f(0.625)), small, large);
  // NaN stays NaN and -0 stays -0 (the polynomial gives +0 for it).
  return select(logical_or(b.is_nan(x), eq(x, b.f(0.0))), x, value);
}

Expr lower_sigmoid(MathBuilder& b, const Expr& x) {
  Expr e = b.bind("e", b.exp_finite(b.negate(b.abs(x))));
  Expr d = b.bind("d", add(b.f(1.0), e));
  return select(b.is_nan(x), x, select(ge(x, b.f(0.0)), div(b.f(1.0), d), div(e, d)));
}

Expr lower_erf(MathBuilder& b, const Expr& x) {
  Expr a = b.bind("a", b.abs(x));
  Expr small = mul(x, b.polynomial(mul(x, x), kErfSmall));
  Expr t = b.bind("t", min(a, b.f(4.0)));
  Expr exponent = add(b.negate(mul(t, t)), b.polynomial(sub(t, b.f(kErfcCenter)), kErfcLog));
  Expr r = b.bind("r", sub(b.f(1.0), b.exp_finite(exponent)));
  Expr large = select(lt(x, b.f(0.0)), b.negate(r), r);
  return select(b.is_nan(x), x, select(lt(a, b.f(0.9)), small, large));
}

// sin(x), or cos(x) = sin(x + pi/2) (one more quadrant).
Expr lower_sin_cos(MathBuilder& b, const Expr& x, bool cosine) {
  Expr k = b.bind("k", b.round(mul(x, b.f(kTwoOverPi))));
  Expr r = x;
  for (double part : kPiHalf) r = sub(r, mul(k, b.f(part)));
  // Only inputs beyond the accurate range reach the clamp; it keeps their results in [-1, 1].
  r = b.bind("r", min(max(r, b.f(-0.7954)), b.f(0.7954)));
  Expr r2 = b.bind("r2", mul(r, r));
  Expr s = add(r, mul(r, mul(r2, b.polynomial(r2, kSin))));
  Expr c = add(b.f(1.0), mul(r2, sub(mul(r2, b.polynomial(r2, kCos)), b.f(0.5))));
  // The quadrant from k; clamped first so that the conversion is defined for huge |x|.
  Expr q = b.to_int(min(max(k, b.f(-1073741824.0)), b.f(1073741824.0)));
  if (cosine) q = add(q, b.i(1));
  q = b.bind("q", q);
  Expr value = select(eq(b.bit_and(q, 1), b.i(0)), s, c);
  value = select(eq(b.bit_and(q, 2), b.i(0)), value, b.negate(value));
  // inf and NaN give NaN (x - x); sin(-0) is -0 (the reduction gives +0 for it).
  value = select(lt(b.abs(x), b.infinity()), value, sub(x, x));
  return cosine ? value : select(eq(x, b.f(0.0)), x, value);
}

bool is_lowered(Builtin op) {
  switch (op) {
    case Builtin::Exp:
    case Builtin::Exp2:
    case Builtin::Log:
    case Builtin::Log2:
    case Builtin::Tanh:
    case Builtin::Sigmoid:
    case Builtin::Erf:
    case Builtin::Sin:
    case Builtin::Cos:
      return true;
    default:
      return false;
  }
}

class IntrinsicLowerer : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr visit(const Call* op) override {
    Expr result = IRMutator::visit(op);
    const auto* call = result.as<Call>();
    DataType t = result->dtype;
    bool lowered_type = (t.is_float() && t.bits() <= 32);
    if (call == nullptr || !is_lowered(call->op) || !lowered_type) return result;
    MathBuilder b(t.lanes());
    Expr x = b.bind("x", cast(DataType::float32().with_lanes(t.lanes()), call->args[0]));
    Expr value;
    switch (call->op) {
      case Builtin::Exp:
        value = lower_exp(b, x);
        break;
      case Builtin::Exp2:
        value = lower_exp2(b, x);
        break;
      case Builtin::Log:
        value = lower_log(b, x, false);
        break;
      case Builtin::Log2:
        value = lower_log(b, x, true);
        break;
      case Builtin::Tanh:
        value = lower_tanh(b, x);
        break;
      case Builtin::Sigmoid:
        value = lower_sigmoid(b, x);
        break;
      case Builtin::Erf:
        value = lower_erf(b, x);
        break;
      case Builtin::Sin:
        value = lower_sin_cos(b, x, false);
        break;
      default:
        value = lower_sin_cos(b, x, true);
        break;
    }
    return cast(t, b.finish(value));
  }
};

}  // namespace

Ref<PrimFunc> lower_intrinsics(const Ref<PrimFunc>& func) {
  return with_body(func, IntrinsicLowerer().mutate(func->body));
}

}  // namespace kiln::tir
