// The numeric rules of the reference interpreter: float16/bfloat16 encodings with
// round-to-nearest-even, correctly rounded conversions between dtypes, and garbage fill.
#include "value.h"

#include <cmath>
#include <limits>

#include "kiln/support/error.h"

namespace kiln::interpreter {

using ir::DataType;

NumKind num_kind(DataType dtype) {
  switch (dtype.code()) {
    case DataType::kInt:
      return NumKind::kInt;
    case DataType::kUInt:
      return NumKind::kUInt;
    case DataType::kBool:
      return NumKind::kBool;
    case DataType::kBFloat:
      return NumKind::kBFloat16;
    case DataType::kFloat:
      if (dtype.bits() == 64) return NumKind::kFloat64;
      if (dtype.bits() == 32) return NumKind::kFloat32;
      if (dtype.bits() == 16) return NumKind::kFloat16;
      break;
    case DataType::kHandle:
      break;
  }
  internal_error << "tir.interpret: dtype " << dtype << " has no arithmetic";
}

ScalarType scalar_type(DataType dtype) {
  return {num_kind(dtype), dtype.is_bool() ? 1 : dtype.bits()};
}

// ---------------------------------------------------------------------------------------------
// float16 and bfloat16

namespace {

uint32_t float_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

float bits_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// `value` rounded to float32 with round-to-odd: an inexact result gets an odd last mantissa bit.
// Rounding that to float16 or bfloat16 (far fewer bits) to nearest even then gives the same
// result as rounding `value` directly, which a plain double -> float -> half chain does not.
float round_to_odd_float(double value) {
  float f = static_cast<float>(value);
  if (std::isnan(value) || static_cast<double>(f) == value) return f;
  if ((float_bits(f) & 1) == 0) {
    f = std::nextafter(f, value > static_cast<double>(f) ? std::numeric_limits<float>::infinity()
                                                         : -std::numeric_limits<float>::infinity());
  }
  return f;
}

// The integer `value` (signed or unsigned 64-bit) as a double with round-to-odd.
double integer_to_odd_double(int64_t value, bool is_unsigned) {
  bool negative = !is_unsigned && value < 0;
  uint64_t magnitude =
      negative ? uint64_t{0} - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  int length = 0;
  for (uint64_t m = magnitude; m != 0; m >>= 1) ++length;
  double d;
  if (length <= 53) {
    d = static_cast<double>(magnitude);
  } else {
    int shift = length - 53;
    uint64_t kept = magnitude >> shift;
    if ((magnitude & ((uint64_t{1} << shift) - 1)) != 0) kept |= 1;
    d = std::ldexp(static_cast<double>(kept), shift);
  }
  return negative ? -d : d;
}

}  // namespace

float half_to_float(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1F;
  uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0) {
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return bits_float(sign | 0x7F800000 | (mantissa << 13));
  return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t float_to_half(float value) {
  uint32_t x = float_bits(value);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t magnitude = x & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) {  // NaN: keep it quiet and keep the top payload bits
    return static_cast<uint16_t>(sign | 0x7E00 | ((magnitude >> 13) & 0x3FF));
  }
  if (magnitude >= 0x47800000) return static_cast<uint16_t>(sign | 0x7C00);  // >= 65536 or inf
  if (magnitude < 0x38800000) {
    // Below the least normal float16 (2^-14): a subnormal m * 2^-24, or zero.
    int exponent = static_cast<int>(magnitude >> 23);
    if (exponent < 102) return static_cast<uint16_t>(sign);  // below 2^-25: rounds to zero
    uint32_t significand = (magnitude & 0x7FFFFF) | 0x800000;
    int shift = 126 - exponent;
    uint32_t q = significand >> shift;
    uint32_t rest = significand & ((uint32_t{1} << shift) - 1);
    uint32_t half = uint32_t{1} << (shift - 1);
    if (rest > half || (rest == half && (q & 1) != 0)) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: rebias the exponent by 127 - 15 and round away 13 mantissa bits. A carry out of the
  // mantissa correctly bumps the exponent, up to infinity.
  uint32_t h = (magnitude - (uint32_t{112} << 23)) >> 13;
  uint32_t rest = magnitude & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1) != 0)) ++h;
  return static_cast<uint16_t>(sign | h);
}

float bfloat16_to_float(uint16_t bits) {
  return bits_float(static_cast<uint32_t>(bits) << 16);
}

uint16_t float_to_bfloat16(float value) {
  uint32_t x = float_bits(value);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((x >> 16) | 0x0040);
  return static_cast<uint16_t>((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

double round_half_result(double value) {
  return half_to_float(float_to_half(static_cast<float>(value)));
}

double round_bfloat16_result(double value) {
  return bfloat16_to_float(float_to_bfloat16(static_cast<float>(value)));
}

double round_result(NumKind kind, double value) {
  switch (kind) {
    case NumKind::kFloat32:
      return round_result<NumKind::kFloat32>(value);
    case NumKind::kFloat16:
      return round_result<NumKind::kFloat16>(value);
    case NumKind::kBFloat16:
      return round_result<NumKind::kBFloat16>(value);
    default:
      return value;
  }
}

// ---------------------------------------------------------------------------------------------
// Conversions

namespace {

int64_t float_to_signed(double value, int bits) {
  if (std::isnan(value)) return 0;
  double t = std::trunc(value);
  if (bits >= 64) {
    if (t >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
    if (t < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(t);
  }
  double hi = std::ldexp(1.0, bits - 1) - 1;
  double lo = -std::ldexp(1.0, bits - 1);
  if (t > hi) t = hi;
  if (t < lo) t = lo;
  return static_cast<int64_t>(t);
}

int64_t float_to_unsigned(double value, int bits) {
  if (std::isnan(value)) return 0;
  double t = std::trunc(value);
  if (t <= 0) return 0;
  if (bits >= 64) {
    if (t >= 18446744073709551616.0) return -1;  // all ones: the greatest uint64
    return static_cast<int64_t>(static_cast<uint64_t>(t));
  }
  double hi = std::ldexp(1.0, bits) - 1;
  if (t > hi) t = hi;
  return static_cast<int64_t>(t);
}

double float_to_float(double value, NumKind to) {
  switch (to) {
    case NumKind::kFloat32:
      return static_cast<float>(value);
    case NumKind::kFloat16:
      return half_to_float(float_to_half(round_to_odd_float(value)));
    case NumKind::kBFloat16:
      return bfloat16_to_float(float_to_bfloat16(round_to_odd_float(value)));
    default:
      return value;
  }
}

double integer_to_float(int64_t value, bool is_unsigned, NumKind to) {
  switch (to) {
    case NumKind::kFloat64:
      return is_unsigned ? static_cast<double>(static_cast<uint64_t>(value))
                         : static_cast<double>(value);
    case NumKind::kFloat32:
      return is_unsigned ? static_cast<float>(static_cast<uint64_t>(value))
                         : static_cast<float>(value);
    default:
      return float_to_float(integer_to_odd_double(value, is_unsigned), to);
  }
}

}  // namespace

Lane convert(Lane value, ScalarType from, ScalarType to) {
  Lane r;
  if (is_float_kind(from.kind)) {
    double d = value.f;
    switch (to.kind) {
      case NumKind::kBool:
        r.i = d != 0.0;
        break;
      case NumKind::kInt:
        r.i = float_to_signed(d, to.bits);
        break;
      case NumKind::kUInt:
        r.i = float_to_unsigned(d, to.bits);
        break;
      default:
        r.f = float_to_float(d, to.kind);
        break;
    }
    return r;
  }
  switch (to.kind) {
    case NumKind::kBool:
      r.i = value.i != 0;
      break;
    case NumKind::kInt:
      r.i = wrap_signed(value.i, to.bits);
      break;
    case NumKind::kUInt:
      r.i = wrap_unsigned(value.i, to.bits);
      break;
    default:
      r.f = integer_to_float(value.i, from.kind == NumKind::kUInt && from.bits == 64, to.kind);
      break;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Memory

ElemKind elem_kind(DataType dtype) {
  switch (dtype.code()) {
    case DataType::kBool:
      return ElemKind::kBool;
    case DataType::kInt:
      return dtype.bits() == 8    ? ElemKind::kI8
             : dtype.bits() == 16 ? ElemKind::kI16
             : dtype.bits() == 32 ? ElemKind::kI32
                                  : ElemKind::kI64;
    case DataType::kUInt:
      return dtype.bits() == 8    ? ElemKind::kU8
             : dtype.bits() == 16 ? ElemKind::kU16
             : dtype.bits() == 32 ? ElemKind::kU32
                                  : ElemKind::kU64;
    case DataType::kBFloat:
      return ElemKind::kBF16;
    case DataType::kFloat:
      return dtype.bits() == 16   ? ElemKind::kF16
             : dtype.bits() == 32 ? ElemKind::kF32
                                  : ElemKind::kF64;
    case DataType::kHandle:
      break;
  }
  internal_error << "tir.interpret: no memory encoding for dtype " << dtype;
}

void fill_garbage(DataType dtype, uint8_t* p, int64_t bytes) {
  std::memset(p, 0xCD, static_cast<size_t>(bytes));
  if (!dtype.is_float()) return;
  Lane nan;
  nan.f = std::numeric_limits<double>::quiet_NaN();
  ElemKind kind = elem_kind(dtype);
  int64_t size = dtype.element_of().bytes();
  for (int64_t at = 0; at + size <= bytes; at += size) write_element(kind, nan, p + at);
}

}  // namespace kiln::interpreter
