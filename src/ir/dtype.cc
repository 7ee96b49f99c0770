// Parsing and printing of DataType.
#include "kiln/ir/dtype.h"

#include <ostream>

#include "kiln/support/error.h"

namespace kiln::ir {

namespace {

bool parse_int(const std::string& text, size_t begin, size_t end, int* out) {
  if (begin >= end || end - begin > 5) return false;
  int value = 0;
  for (size_t i = begin; i < end; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    value = value * 10 + (text[i] - '0');
  }
  *out = value;
  return true;
}

}  // namespace

DataType DataType::parse(const std::string& text, const char* context) {
  auto fail =
      [&]() {
        user_error(ErrorKind::kType)
            << context << ": '" << text
            << "' is not a dtype; expected one of int8/16/32/64, uint8/16/32/64, "
               "float16/32/64, bfloat16, bool or handle, optionally with lanes "
               "as in 'float32x8'";
      };
  std::string base = text;
  int lanes = 1;
  size_t x = text.rfind('x');
  if (x != std::string::npos && x + 1 < text.size() && text[x + 1] >= '0' && text[x + 1] <= '9') {
    if (!parse_int(text, x + 1, text.size(), &lanes) || lanes < 1 || lanes > 65535) fail();
    base = text.substr(0, x);
  }
  if (base == "bool") return bool_(lanes);
  if (base == "handle") {
    if (lanes != 1) fail();
    return handle();
  }
  if (base == "bfloat16") return bfloat16(lanes);
  Code code;
  size_t digits;
  if (base.rfind("uint", 0) == 0) {
    code = kUInt;
    digits = 4;
  } else if (base.rfind("int", 0) == 0) {
    code = kInt;
    digits = 3;
  } else if (base.rfind("float", 0) == 0) {
    code = kFloat;
    digits = 5;
  } else {
    fail();
  }
  int bits = 0;
  if (!parse_int(base, digits, base.size(), &bits)) fail();
  bool ok = code == kFloat ? (bits == 16 || bits == 32 || bits == 64)
                           : (bits == 8 || bits == 16 || bits == 32 || bits == 64);
  if (!ok) fail();
  return DataType(code, bits, lanes);
}

std::string DataType::str() const {
  if (is_void()) return "void";
  std::string base;
  switch (code()) {
    case kInt:
      base = "int" + std::to_string(bits());
      break;
    case kUInt:
      base = "uint" + std::to_string(bits());
      break;
    case kFloat:
      base = "float" + std::to_string(bits());
      break;
    case kBFloat:
      base = "bfloat16";
      break;
    case kBool:
      base = "bool";
      break;
    case kHandle:
      return "handle";
  }
  if (lanes() != 1) base += "x" + std::to_string(lanes());
  return base;
}

std::ostream& operator<<(std::ostream& os, const DataType& dtype) {
  return os << dtype.str();
}

}  // namespace kiln::ir
