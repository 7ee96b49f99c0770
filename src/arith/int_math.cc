// Integer helpers of the arithmetic analysis (see int_math.h).
#include "src/arith/int_math.h"

namespace kiln::arith {

std::optional<int64_t> gcd_int(int64_t a, int64_t b) {
  // |INT64_MIN| fits in uint64; the gcd does not fit in int64 only when it is 2^63.
  uint64_t x = a < 0 ? 0 - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
  uint64_t y = b < 0 ? 0 - static_cast<uint64_t>(b) : static_cast<uint64_t>(b);
  while (y != 0) {
    uint64_t t = x % y;
    x = y;
    y = t;
  }
  if (x > static_cast<uint64_t>(kPosInf)) return std::nullopt;
  return static_cast<int64_t>(x);
}

std::optional<int64_t> lcm_int(int64_t a, int64_t b) {
  std::optional<int64_t> g = gcd_int(a, b);
  if (!g || *g == 0) return std::nullopt;
  return checked_mul(a / *g, b);
}

namespace {
int64_t saturate(__int128 v) {
  if (v >= static_cast<__int128>(kPosInf)) return kPosInf;
  if (v <= static_cast<__int128>(kNegInf)) return kNegInf;
  return static_cast<int64_t>(v);
}
}  // namespace

int64_t bound_add(int64_t a, int64_t b) {
  if (a == kNegInf || b == kNegInf) return kNegInf;
  if (a == kPosInf || b == kPosInf) return kPosInf;
  return saturate(static_cast<__int128>(a) + b);
}

int64_t bound_neg(int64_t a) {
  if (a == kNegInf) return kPosInf;
  if (a == kPosInf) return kNegInf;
  return -a;
}

int64_t bound_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  bool a_inf = a == kNegInf || a == kPosInf;
  bool b_inf = b == kNegInf || b == kPosInf;
  if (a_inf || b_inf) return (a < 0) != (b < 0) ? kNegInf : kPosInf;
  return saturate(static_cast<__int128>(a) * b);
}

int64_t bound_floordiv(int64_t a, int64_t b) {
  bool a_inf = a == kNegInf || a == kPosInf;
  bool b_inf = b == kNegInf || b == kPosInf;
  if (a_inf) return (a < 0) != (b < 0) ? kNegInf : kPosInf;
  if (b_inf) return (a == 0 || (a < 0) == (b < 0)) ? 0 : -1;
  if (b == -1) return bound_neg(a);
  return floordiv_int(a, b);
}

int64_t bound_truncdiv(int64_t a, int64_t b) {
  bool a_inf = a == kNegInf || a == kPosInf;
  bool b_inf = b == kNegInf || b == kPosInf;
  if (a_inf) return (a < 0) != (b < 0) ? kNegInf : kPosInf;
  if (b_inf) return 0;
  if (b == -1) return bound_neg(a);
  return truncdiv_int(a, b);
}

}  // namespace kiln::arith
