// DataType: the scalar or vector type of an expression or a buffer element. The type codes are
// DLPack's, so a DataType converts to and from a DLDataType without a table.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::ir {

class DataType {
 public:
  // Same numbers as DLPack's DLDataTypeCode.
  enum Code : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kHandle = 3, kBFloat = 4, kBool = 6 };

  constexpr DataType() : code_(kHandle), bits_(0), lanes_(0) {}
  constexpr DataType(Code code, int bits, int lanes = 1)
      : code_(code), bits_(static_cast<uint8_t>(bits)), lanes_(static_cast<uint16_t>(lanes)) {}

  static constexpr DataType int_(int bits, int lanes = 1) { return {kInt, bits, lanes}; }
  static constexpr DataType uint(int bits, int lanes = 1) { return {kUInt, bits, lanes}; }
  static constexpr DataType float_(int bits, int lanes = 1) { return {kFloat, bits, lanes}; }
  static constexpr DataType bfloat16(int lanes = 1) { return {kBFloat, 16, lanes}; }
  static constexpr DataType bool_(int lanes = 1) { return {kBool, 8, lanes}; }
  static constexpr DataType handle() { return {kHandle, 64, 1}; }
  static constexpr DataType int32() { return int_(32); }
  static constexpr DataType int64() { return int_(64); }
  static constexpr DataType float32() { return float_(32); }
  static constexpr DataType float64() { return float_(64); }
  // The void type of a statement-like expression (e.g. a call made for its effect).
  static constexpr DataType void_() { return {kHandle, 0, 0}; }

  // Parses "float32", "int8x4", "bfloat16", "bool", "handle". Throws a kValue error naming
  // `context` (e.g. "te.placeholder") when the string is not a dtype.
  static DataType parse(const std::string& text, const char* context = "dtype");

  Code code() const { return static_cast<Code>(code_); }
  int bits() const { return bits_; }
  int lanes() const { return lanes_; }
  // Storage size of one element in bytes (bool is stored in one byte).
  int bytes() const { return (bits_ + 7) / 8 * lanes_; }

  bool is_int() const { return code_ == kInt; }
  bool is_uint() const { return code_ == kUInt; }
  // Signed or unsigned integer (not bool).
  bool is_integer() const { return code_ == kInt || code_ == kUInt; }
  bool is_float() const { return code_ == kFloat || code_ == kBFloat; }
  bool is_bfloat16() const { return code_ == kBFloat; }
  bool is_float16() const { return code_ == kFloat && bits_ == 16; }
  bool is_bool() const { return code_ == kBool; }
  bool is_handle() const { return code_ == kHandle && lanes_ != 0; }
  bool is_void() const { return code_ == kHandle && lanes_ == 0; }
  bool is_scalar() const { return lanes_ == 1; }
  bool is_vector() const { return lanes_ > 1; }

  DataType with_lanes(int lanes) const { return {code(), bits_, lanes}; }
  DataType with_bits(int bits) const { return {code(), bits, lanes_}; }
  DataType element_of() const { return with_lanes(1); }

  bool operator==(const DataType& other) const {
    return code_ == other.code_ && bits_ == other.bits_ && lanes_ == other.lanes_;
  }
  bool operator!=(const DataType& other) const { return !(*this == other); }

  // "float32", "int32x8", "bool", "handle", "void".
  std::string str() const;

 private:
  uint8_t code_;
  uint8_t bits_;
  uint16_t lanes_;
};

std::ostream& operator<<(std::ostream& os, const DataType& dtype);

}  // namespace kiln::ir
