// How the reference interpreter holds values and applies kiln's numeric rules: one 64-bit Lane
// per vector lane, the wrap of integers to their width, the rounding of float results to
// float32/float16/bfloat16, conversions between dtypes, and the memory encoding of elements.
#pragma once

#include <cstdint>
#include <cstring>

#include "kiln/ir/dtype.h"

namespace kiln::interpreter {

// One lane of a value. Integers and bools are held in `i`, canonical for their dtype: signed
// types sign-extended, unsigned types zero-extended (uint64 as its bit pattern), bools 0 or 1.
// Floats are held in `f` as the exact double of a value of their dtype.
union Lane {
  int64_t i;
  double f;
};

// The arithmetic family of a scalar dtype; picks the rule a node computes with.
enum class NumKind : uint8_t { kInt, kUInt, kBool, kFloat64, kFloat32, kFloat16, kBFloat16 };

// The family of `dtype` (its lanes are ignored); an internal error for handles and void.
NumKind num_kind(ir::DataType dtype);

inline bool is_float_kind(NumKind kind) {
  return kind == NumKind::kFloat64 || kind == NumKind::kFloat32 || kind == NumKind::kFloat16 ||
         kind == NumKind::kBFloat16;
}

// `value` wrapped to a signed integer of `bits` bits (two's complement).
inline int64_t wrap_signed(int64_t value, int bits) {
  if (bits >= 64) return value;
  int shift = 64 - bits;
  return static_cast<int64_t>(static_cast<uint64_t>(value) << shift) >> shift;
}

// `value` wrapped to an unsigned integer of `bits` bits, zero-extended.
inline int64_t wrap_unsigned(int64_t value, int bits) {
  if (bits >= 64) return value;
  return static_cast<int64_t>(static_cast<uint64_t>(value) & ((uint64_t{1} << bits) - 1));
}

// float16 and bfloat16 bit patterns to and from float32, rounding to nearest even.
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);

// The result of an arithmetic operation, computed exactly or in double, rounded to a float kind.
// float16 and bfloat16 results are first rounded to float32, because kiln computes on them in
// float32 and rounds back after each operation (kiln/ir/expr.h).
double round_half_result(double value);
double round_bfloat16_result(double value);
template <NumKind kKind>
inline double round_result(double value) {
  if constexpr (kKind == NumKind::kFloat32) {
    return static_cast<float>(value);
  } else if constexpr (kKind == NumKind::kFloat16) {
    return round_half_result(value);
  } else if constexpr (kKind == NumKind::kBFloat16) {
    return round_bfloat16_result(value);
  } else {
    return value;
  }
}
double round_result(NumKind kind, double value);

// A scalar dtype as the conversions see it.
struct ScalarType {
  NumKind kind;
  int bits;  // 1 for bool
};
ScalarType scalar_type(ir::DataType dtype);

// `value` of type `from` converted to type `to` (a Cast), with one correct rounding:
//  * float to integer truncates toward zero; NaN gives 0 and values outside the target's range
//    saturate to its least or greatest value;
//  * integer to narrower integer wraps; anything to bool is `!= 0` (NaN is true);
//  * to float16 / bfloat16 / float32 rounds to nearest even, directly from the exact value.
Lane convert(Lane value, ScalarType from, ScalarType to);

// The encoding of one element in memory.
enum class ElemKind : uint8_t {
  kBool,
  kI8,
  kI16,
  kI32,
  kI64,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64,
};
// The encoding of the scalar dtype `dtype` (lanes are ignored).
ElemKind elem_kind(ir::DataType dtype);

template <class T>
inline T read_raw(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
inline void write_raw(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// The element at `p` as a Lane. A bool byte other than 0 reads as true.
inline Lane read_element(ElemKind kind, const uint8_t* p) {
  Lane v{0};
  switch (kind) {
    case ElemKind::kBool:
      v.i = p[0] != 0;
      break;
    case ElemKind::kI8:
      v.i = read_raw<int8_t>(p);
      break;
    case ElemKind::kI16:
      v.i = read_raw<int16_t>(p);
      break;
    case ElemKind::kI32:
      v.i = read_raw<int32_t>(p);
      break;
    case ElemKind::kI64:
      v.i = read_raw<int64_t>(p);
      break;
    case ElemKind::kU8:
      v.i = read_raw<uint8_t>(p);
      break;
    case ElemKind::kU16:
      v.i = read_raw<uint16_t>(p);
      break;
    case ElemKind::kU32:
      v.i = read_raw<uint32_t>(p);
      break;
    case ElemKind::kU64:
      v.i = read_raw<int64_t>(p);
      break;
    case ElemKind::kF16:
      v.f = half_to_float(read_raw<uint16_t>(p));
      break;
    case ElemKind::kBF16:
      v.f = bfloat16_to_float(read_raw<uint16_t>(p));
      break;
    case ElemKind::kF32:
      v.f = read_raw<float>(p);
      break;
    case ElemKind::kF64:
      v.f = read_raw<double>(p);
      break;
  }
  return v;
}

// Writes the Lane `v` (already a value of the element's dtype) to `p`.
inline void write_element(ElemKind kind, Lane v, uint8_t* p) {
  switch (kind) {
    case ElemKind::kBool:
      p[0] = v.i != 0;
      break;
    case ElemKind::kI8:
    case ElemKind::kU8:
      write_raw(p, static_cast<uint8_t>(v.i));
      break;
    case ElemKind::kI16:
    case ElemKind::kU16:
      write_raw(p, static_cast<uint16_t>(v.i));
      break;
    case ElemKind::kI32:
    case ElemKind::kU32:
      write_raw(p, static_cast<uint32_t>(v.i));
      break;
    case ElemKind::kI64:
    case ElemKind::kU64:
      write_raw(p, v.i);
      break;
    case ElemKind::kF16:
      write_raw(p, float_to_half(static_cast<float>(v.f)));
      break;
    case ElemKind::kBF16:
      write_raw(p, float_to_bfloat16(static_cast<float>(v.f)));
      break;
    case ElemKind::kF32:
      write_raw(p, static_cast<float>(v.f));
      break;
    case ElemKind::kF64:
      write_raw(p, v.f);
      break;
  }
}

// Fills `bytes` bytes at `p`, holding elements of `dtype`, with the pattern of uninitialized
// memory: quiet NaN for floats, 0xCD bytes for integers and bools.
void fill_garbage(ir::DataType dtype, uint8_t* p, int64_t bytes);

}  // namespace kiln::interpreter
