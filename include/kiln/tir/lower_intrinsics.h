// Lowering pass lower_intrinsics: replaces float32 math calls by arithmetic that vectorizes
// (polynomials, rounding, integer shifts and bit reinterpretation) instead of scalar libm calls.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// Replaces every call of exp, exp2, log, log2, tanh, sigmoid, erf, sin and cos on float32 (any
// number of lanes) by an expression of Let-bound steps built from + - * /, min, max, select,
// round, abs, isnan, casts between float32 and int32, shift_left / shift_right / bitwise_and /
// bitwise_or and reinterpret, with no fused multiply-add. float16 and bfloat16 calls are computed
// in float32 and cast back; float64 calls are left for libm.
//
// Methods (polynomial coefficients fitted as minimax approximations for this library):
//  * exp: x = n*ln2 + r with a two-part (Cody-Waite) ln2, a degree-6 polynomial for exp(r) on
//    [-ln2/2, ln2/2], and 2^n built as two exponent fields (shift_left + reinterpret) so that
//    results down to the subnormals are rounded once. Inputs are clamped to [-104, 88.8]:
//    overflow gives +inf, underflow 0. exp2: n = round(x), exp of (x - n)*ln2.
//  * log, log2: exponent and mantissa from the bits (subnormal inputs scaled by 2^23 first),
//    mantissa in [sqrt(1/2), sqrt(2)), log1p(f) = f - f^2/2 + f^3 P(f) with P of degree 7.
//  * tanh: x + x^3 P(x^2) for |x| < 0.625, else sign(x) * (1 - 2 / (exp(2|x|) + 1)).
//  * sigmoid: with e = exp(-|x|): 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0.
//  * erf: x P(x^2) for |x| < 0.9; else sign(x) * (1 - exp(-t^2 + Q(t - 2.45))) with
//    t = min(|x|, 4) and Q a polynomial fitted to log(erfc(t)) + t^2.
//  * sin, cos: k = round(x * 2/pi), r = x - k*pi/2 with pi/2 split in five parts (the first four
//    with 8 bits, so their products with k are exact while |k| < 2^16), and the sin or cos
//    polynomial of r chosen and negated by k mod 4.
// Special values: NaN gives NaN; exp(inf) = inf and exp(-inf) = 0 (also exp2); log(+-0) = -inf,
// log(x < 0) = NaN, log(inf) = inf (also log2); tanh(+-inf) = +-1, sigmoid(inf) = 1,
// sigmoid(-inf) = 0, erf(+-inf) = +-1; sin and cos of +-inf are NaN; -0 keeps its sign where
// the function is odd (tanh, erf, sin). Subnormal inputs and results are computed as IEEE
// numbers, nothing is flushed to zero: log of a subnormal is accurate, exp rounds gradually
// into the subnormals.
//
// Accuracy against libm in double precision rounded to float32, as measured by
// tests/cpp/tir/lower_intrinsics_accuracy_test.cc over 10^6 inputs each (it prints the maxima and
// asserts at most 4 ULP): exp 1 ULP, exp2 1, log 1, log2 2, tanh 1, sigmoid 2, erf 2, sin and
// cos 3 for |x| < 1e5. sin and cos are not accurate beyond |x| ~ 1e5 (the reduction is exact only
// while |k| < 2^16); their results stay in [-1, 1] there.
//
//   B[i] = T.exp(A[i])     =>    B[i] = (let x = A[i] in let xc = ... in p * s1 * s2)
//
// Returns `func` itself when it has no such call. Tested by tests/cpp/tir/lower_intrinsics_test.cc
// and tests/cpp/tir/lower_intrinsics_accuracy_test.cc.
ir::Ref<ir::PrimFunc> lower_intrinsics(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
