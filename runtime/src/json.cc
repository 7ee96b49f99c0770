// A recursive-descent JSON parser (RFC 8259) for manifests. Strings decode escapes to UTF-8,
// integers are read exactly with overflow detection, and depth is capped so that hostile input
// cannot exhaust the stack.
#include "json.h"

#include <cstring>

namespace kiln {
namespace runtime {
namespace {

constexpr int kMaxDepth = 64;
constexpr const char* kEndOfText = "unexpected end of text";

class Parser {
 public:
  explicit Parser(const char* text) : text_(text) {}

  bool parse_document(JsonValue* out) {
    skip_whitespace();
    if (!parse_value(out, 0)) return false;
    skip_whitespace();
    if (peek() != '\0') return error("unexpected text after the JSON value");
    return true;
  }

  const std::string& message() const { return message_; }

 private:
  char peek() const { return text_[pos_]; }

  bool error(const std::string& what) {
    message_ = "offset " + std::to_string(pos_) + ": ";
    // A truncated manifest is the common case: say so before what was expected.
    if (peek() == '\0' && what != kEndOfText) message_ += std::string(kEndOfText) + ", ";
    message_ += what;
    return false;
  }

  void skip_whitespace() {
    while (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r') ++pos_;
  }

  bool expect(char c) {
    if (peek() != c) return error(std::string("expected '") + c + "'");
    ++pos_;
    return true;
  }

  bool parse_literal(const char* word) {
    size_t length = std::strlen(word);
    if (std::strncmp(text_ + pos_, word, length) != 0) return error("invalid literal");
    pos_ += length;
    return true;
  }

  bool parse_value(JsonValue* out, int depth) {
    if (depth > kMaxDepth) return error("nesting deeper than " + std::to_string(kMaxDepth));
    switch (peek()) {
      case '{':
        return parse_object(out, depth);
      case '[':
        return parse_array(out, depth);
      case '"':
        out->kind = JsonValue::Kind::kString;
        return parse_string(&out->string);
      case 't':
        out->kind = JsonValue::Kind::kBool;
        out->boolean = true;
        return parse_literal("true");
      case 'f':
        out->kind = JsonValue::Kind::kBool;
        out->boolean = false;
        return parse_literal("false");
      case 'n':
        out->kind = JsonValue::Kind::kNull;
        return parse_literal("null");
      case '\0':
        return error(kEndOfText);
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return parse_number(out);
        return error(std::string("unexpected character '") + peek() + "'");
    }
  }

  bool parse_object(JsonValue* out, int depth) {
    out->kind = JsonValue::Kind::kObject;
    ++pos_;
    skip_whitespace();
    if (peek() == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_whitespace();
      if (peek() != '"') return error("expected a string key");
      std::string key;
      if (!parse_string(&key)) return false;
      skip_whitespace();
      if (!expect(':')) return false;
      skip_whitespace();
      out->object.emplace_back(std::move(key), JsonValue());
      if (!parse_value(&out->object.back().second, depth + 1)) return false;
      skip_whitespace();
      if (peek() == '}') {
        ++pos_;
        return true;
      }
      if (!expect(',')) return false;
    }
  }

  bool parse_array(JsonValue* out, int depth) {
    out->kind = JsonValue::Kind::kArray;
    ++pos_;
    skip_whitespace();
    if (peek() == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_whitespace();
      out->array.emplace_back();
      if (!parse_value(&out->array.back(), depth + 1)) return false;
      skip_whitespace();
      if (peek() == ']') {
        ++pos_;
        return true;
      }
      if (!expect(',')) return false;
    }
  }

  bool parse_hex4(uint32_t* code) {
    *code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = peek();
      uint32_t digit;
      if (c >= '0' && c <= '9') {
        digit = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        digit = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        digit = c - 'A' + 10;
      } else {
        return error("invalid \\u escape");
      }
      *code = *code * 16 + digit;
      ++pos_;
    }
    return true;
  }

  static void append_utf8(uint32_t code, std::string* out) {
    if (code < 0x80) {
      out->push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (code >> 6)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (code >> 12)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (code >> 18)));
      out->push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  bool parse_escape(std::string* out) {
    char c = peek();
    ++pos_;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        out->push_back(c);
        return true;
      case 'b':
        out->push_back('\b');
        return true;
      case 'f':
        out->push_back('\f');
        return true;
      case 'n':
        out->push_back('\n');
        return true;
      case 'r':
        out->push_back('\r');
        return true;
      case 't':
        out->push_back('\t');
        return true;
      case 'u': {
        uint32_t code;
        if (!parse_hex4(&code)) return false;
        // A high surrogate followed by a low one encodes a code point above U+FFFF.
        if (code >= 0xD800 && code < 0xDC00 && text_[pos_] == '\\' && text_[pos_ + 1] == 'u') {
          pos_ += 2;
          uint32_t low;
          if (!parse_hex4(&low)) return false;
          if (low < 0xDC00 || low >= 0xE000) return error("invalid surrogate pair");
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(code, out);
        return true;
      }
      default:
        --pos_;
        return error("invalid escape in string");
    }
  }

  bool parse_string(std::string* out) {
    ++pos_;
    while (true) {
      char c = peek();
      if (c == '\0') return error("unterminated string");
      if (static_cast<unsigned char>(c) < 0x20) return error("control character in string");
      ++pos_;
      if (c == '"') return true;
      if (c == '\\') {
        if (!parse_escape(out)) return false;
      } else {
        out->push_back(c);
      }
    }
  }

  bool parse_number(JsonValue* out) {
    out->kind = JsonValue::Kind::kNumber;
    size_t start = pos_;
    bool negative = peek() == '-';
    if (negative) ++pos_;
    if (peek() < '0' || peek() > '9') return error("invalid number");
    // Accumulate the magnitude as a negative number so that INT64_MIN is representable.
    int64_t value = 0;
    bool overflow = false;
    bool leading_zero = peek() == '0';
    while (peek() >= '0' && peek() <= '9') {
      int digit = peek() - '0';
      if (value < (INT64_MIN + digit) / 10) overflow = true;
      if (!overflow) value = value * 10 - digit;
      ++pos_;
    }
    if (leading_zero && pos_ - start > (negative ? 2u : 1u)) {
      pos_ = start;
      return error("invalid number (leading zero)");
    }
    bool is_integer = true;
    if (peek() == '.') {
      is_integer = false;
      ++pos_;
      if (peek() < '0' || peek() > '9') return error("invalid number");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      is_integer = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (peek() < '0' || peek() > '9') return error("invalid number");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (!negative && value == INT64_MIN) overflow = true;
    out->is_integer = is_integer && !overflow;
    out->integer = out->is_integer ? (negative ? value : -value) : 0;
    return true;
  }

  const char* text_;
  size_t pos_ = 0;
  std::string message_;
};

}  // namespace

const JsonValue* JsonValue::find(const std::string& key) const {
  if (kind != Kind::kObject) return nullptr;
  for (const auto& member : object) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

bool parse_json(const char* text, JsonValue* out, std::string* error) {
  Parser parser(text);
  *out = JsonValue();
  if (parser.parse_document(out)) return true;
  *error = parser.message();
  return false;
}

const char* json_kind_name(JsonValue::Kind kind) {
  switch (kind) {
    case JsonValue::Kind::kNull:
      return "null";
    case JsonValue::Kind::kBool:
      return "a boolean";
    case JsonValue::Kind::kNumber:
      return "a number";
    case JsonValue::Kind::kString:
      return "a string";
    case JsonValue::Kind::kArray:
      return "an array";
    case JsonValue::Kind::kObject:
      return "an object";
  }
  return "a value";
}

}  // namespace runtime
}  // namespace kiln
