// Integer helpers of the arithmetic analysis: floor and truncating division that never trap,
// overflow-checked arithmetic, and arithmetic on bounds where the int64 limits stand for
// infinity (see ConstIntBound).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include "kiln/arith/const_int_bound.h"

namespace kiln::arith {

constexpr int64_t kPosInf = ConstIntBound::kPosInf;
constexpr int64_t kNegInf = ConstIntBound::kNegInf;

// Division rounding toward negative infinity; b != 0. INT64_MIN / -1 wraps to INT64_MIN.
inline int64_t floordiv_int(int64_t a, int64_t b) {
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}
// a - b * floordiv(a, b): has the sign of b; b != 0.
inline int64_t floormod_int(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
// Division rounding toward zero; b != 0. INT64_MIN / -1 wraps to INT64_MIN.
inline int64_t truncdiv_int(int64_t a, int64_t b) {
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  return a / b;
}
// a - b * truncdiv(a, b): has the sign of a; b != 0.
inline int64_t truncmod_int(int64_t a, int64_t b) {
  if (b == -1) return 0;
  return a % b;
}

// Two's complement arithmetic on 64 bits (no undefined behaviour on overflow).
inline int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrapping_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrapping_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// Exact arithmetic, or nothing when the result does not fit in int64.
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_neg(int64_t a) {
  if (a == std::numeric_limits<int64_t>::min()) return std::nullopt;
  return -a;
}

// Greatest common divisor of |a| and |b| (gcd(0, b) = |b|); nothing when |INT64_MIN| is needed.
std::optional<int64_t> gcd_int(int64_t a, int64_t b);
// Least common multiple of positive a and b, or nothing on overflow.
std::optional<int64_t> lcm_int(int64_t a, int64_t b);

// Arithmetic on bound ends, where kNegInf and kPosInf are infinite: results saturate to the
// infinities, inf + -inf does not occur in the analysis (callers add like-sided ends), and
// 0 * inf is 0.
int64_t bound_add(int64_t a, int64_t b);
int64_t bound_neg(int64_t a);
int64_t bound_mul(int64_t a, int64_t b);
// Floor / truncating division of bound ends with b != 0; x / inf is 0 (or -1 for floor of a
// negative x), inf / x is a signed infinity.
int64_t bound_floordiv(int64_t a, int64_t b);
int64_t bound_truncdiv(int64_t a, int64_t b);

}  // namespace kiln::arith
