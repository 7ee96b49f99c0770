// The JSON parser behind load_json (kiln/ir/serialize.h): strict RFC 8259, without recursion
// (a crafted document nested a million levels deep costs memory, never the stack), and with all
// values in one pool, so that a document of a few hundred nodes parses in tens of microseconds.
// A general JSON library spends most of load_json's time building maps and strings. Also the
// text helpers of serialize_text.h.
#include <charconv>
#include <cstring>

#include "kiln/support/error.h"
#include "src/ir/serialize_reader.h"
#include "src/ir/serialize_text.h"

namespace kiln::ir::serialize {

size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
  unsigned char c = byte(0);
  if (i < s.size() && c < 0x80) return 1;
  size_t extra;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    extra = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    extra = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    extra = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (size_t k = 2; k <= extra; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
  }
  return extra + 1;
}

std::string quoted(std::string_view s, size_t limit) {
  std::string out = "\"";
  size_t i = 0;
  while (i < s.size() && i < limit) {
    size_t length = utf8_sequence_length(s, i);
    auto c = static_cast<unsigned char>(s[i]);
    if (length == 0 || c < 0x20 || c == 0x7F) {
      out += "\\x";
      out += "0123456789abcdef"[c >> 4];
      out += "0123456789abcdef"[c & 0xF];
      ++i;
    } else {
      out.append(s, i, length);
      i += length;
    }
  }
  out += i < s.size() ? "...\"" : "\"";
  return out;
}

const JsonValue* JsonValue::find(std::string_view key) const {
  for (uint32_t i = 0; i < count_; ++i) {
    const JsonValue& member = (*pool_)[first_ + i];
    if (member.key_ == key) return &member;
  }
  return nullptr;
}

class JsonParser {
 public:
  JsonParser(const std::string& text, const char* api, std::vector<JsonValue>* pool,
             std::deque<std::string>* strings)
      : text_(text), api_(api), pool_(pool), strings_(strings) {}

  JsonValue parse() {
    stack_.reserve(64);
    frames_.reserve(32);
    skip_space();
    for (;;) {
      // Step 1. A value is expected: the member's name first inside an object.
      std::string_view key;
      if (!frames_.empty() && frames_.back().type == JsonValue::Type::kObject) {
        if (peek() != '"') fail("expected '\"' to begin a member name");
        key = parse_string();
        skip_space();
        if (peek() != ':') fail("expected ':' after a member name");
        ++pos_;
        skip_space();
      }
      // Step 2. A container opens a frame; anything else is a complete value.
      char c = peek();
      if (c == '{' || c == '[') {
        ++pos_;
        auto type = c == '{' ? JsonValue::Type::kObject : JsonValue::Type::kArray;
        frames_.push_back(Frame{stack_.size(), type, key});
        skip_space();
        if (peek() != (c == '{' ? '}' : ']')) continue;
        ++pos_;
        close_frame();
      } else {
        JsonValue value = parse_scalar();
        value.key_ = key;
        stack_.push_back(value);
      }
      // Step 3. After a value: the end of the text, a comma, or the end of containers.
      for (;;) {
        skip_space();
        if (frames_.empty()) {
          if (pos_ != text_.size()) fail("unexpected text after the document");
          return stack_.back();
        }
        bool object = frames_.back().type == JsonValue::Type::kObject;
        c = peek();
        if (c == ',') {
          ++pos_;
          skip_space();
          break;
        }
        if (c != (object ? '}' : ']')) {
          fail(object ? "expected ',' or '}' in an object" : "expected ',' or ']' in an array");
        }
        ++pos_;
        close_frame();
      }
    }
  }

 private:
  struct Frame {
    size_t start;  // the first of this container's values on stack_
    JsonValue::Type type;
    std::string_view key;  // the container's own name in its parent object
  };

  // --- Errors --------------------------------------------------------------------------------

  [[noreturn]] void fail(const char* what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string where = pos_ >= text_.size() ? "at the end of the text"
                                             : "at line " + std::to_string(line) + ", column " +
                                                   std::to_string(column);
    user_error(ErrorKind::kValue) << api_ << ": the text is not valid JSON: " << what << " "
                                  << where;
  }

  // --- Characters ----------------------------------------------------------------------------

  // The next character, or '\0' at the end (a NUL inside the text is never valid there either).
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skip_space() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
      ++pos_;
    }
  }

  // --- Containers ----------------------------------------------------------------------------

  // Moves the finished container's values to the pool, where they stay together.
  void close_frame() {
    Frame frame = frames_.back();
    frames_.pop_back();
    JsonValue container;
    container.pool_ = pool_;
    container.type_ = frame.type;
    container.key_ = frame.key;
    container.first_ = static_cast<uint32_t>(pool_->size());
    container.count_ = static_cast<uint32_t>(stack_.size() - frame.start);
    if (pool_->size() + container.count_ > UINT32_MAX) fail("too many values");
    pool_->insert(pool_->end(), stack_.begin() + static_cast<std::ptrdiff_t>(frame.start),
                  stack_.end());
    stack_.resize(frame.start);
    stack_.push_back(container);
  }

  // --- Scalars -------------------------------------------------------------------------------

  JsonValue parse_scalar() {
    JsonValue value;
    value.pool_ = pool_;
    char c = peek();
    if (c == '"') {
      value.type_ = JsonValue::Type::kString;
      value.text_ = parse_string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      parse_number(&value);
    } else if (literal("true")) {
      value.type_ = JsonValue::Type::kBool;
      value.number_.b = true;
    } else if (literal("false")) {
      value.type_ = JsonValue::Type::kBool;
      value.number_.b = false;
    } else if (literal("null")) {
      value.type_ = JsonValue::Type::kNull;
    } else {
      fail(pos_ >= text_.size() ? "expected a value" : "expected a value, found an invalid token");
    }
    return value;
  }

  bool literal(const char* word) {
    size_t n = std::strlen(word);
    if (text_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?: an integer without fraction or exponent is
  // kept exactly (int64 when negative, uint64 otherwise); anything else is a double.
  void parse_number(JsonValue* value) {
    size_t begin = pos_;
    auto digits = [&] {
      size_t start = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - start;
    };
    bool negative = peek() == '-';
    if (negative) ++pos_;
    size_t int_begin = pos_;
    size_t int_digits = digits();
    if (int_digits == 0) fail("expected a digit");
    if (int_digits > 1 && text_[int_begin] == '0') fail("a number may not start with 0");
    bool integral = true;
    if (peek() == '.') {
      ++pos_;
      if (digits() == 0) fail("expected a digit after '.'");
      integral = false;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (digits() == 0) fail("expected a digit in the exponent");
      integral = false;
    }
    const char* first = text_.data() + begin;
    const char* last = text_.data() + pos_;
    value->text_ = std::string_view(first, pos_ - begin);
    if (integral) {
      uint64_t magnitude = 0;
      auto result = std::from_chars(text_.data() + int_begin, last, magnitude);
      if (result.ec == std::errc()) {
        if (!negative) {
          value->type_ = JsonValue::Type::kUint;
          value->number_.u = magnitude;
          return;
        }
        if (magnitude <= uint64_t{1} << 63) {
          value->type_ = JsonValue::Type::kInt;
          value->number_.i = static_cast<int64_t>(0 - magnitude);
          return;
        }
      }
      // Beyond 64 bits: a double, as other JSON readers do.
    }
    double d = 0;
    auto result = std::from_chars(first, last, d);
    if (result.ec == std::errc::result_out_of_range) {
      // Too small for a double rounds to zero; too large has no value (JSON has no inf).
      std::string_view token = value->text_;
      size_t e = token.find_first_of("eE");
      if (e == std::string_view::npos || e + 1 >= token.size() || token[e + 1] != '-') {
        pos_ = begin;
        fail("the number is too large for a double");
      }
      d = negative ? -0.0 : 0.0;
    } else if (result.ec != std::errc() || result.ptr != last) {
      pos_ = begin;
      fail("the number cannot be read as a double");
    }
    value->type_ = JsonValue::Type::kFloat;
    value->number_.d = d;
  }

  // A string's value: a view of the text when it has no escapes, else the decoded copy kept in
  // strings_. The bytes must be UTF-8 and control characters must be escaped.
  std::string_view parse_string() {
    ++pos_;  // the opening quote
    size_t begin = pos_;
    std::string* decoded = nullptr;
    for (;;) {
      if (pos_ >= text_.size()) fail("unterminated string");
      auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') break;
      if (c < 0x20) fail("a control character must be escaped in a string");
      if (c == '\\') {
        if (decoded == nullptr) {
          decoded = &strings_->emplace_back(text_, begin, pos_ - begin);
        }
        parse_escape(decoded);
        continue;
      }
      size_t length = c < 0x80 ? 1 : utf8_length();
      if (decoded != nullptr) decoded->append(text_, pos_, length);
      pos_ += length;
    }
    std::string_view result = decoded != nullptr
                                  ? std::string_view(*decoded)
                                  : std::string_view(text_.data() + begin, pos_ - begin);
    ++pos_;  // the closing quote
    return result;
  }

  // The length of the UTF-8 sequence at pos_, which must be well formed.
  size_t utf8_length() {
    size_t length = utf8_sequence_length(text_, pos_);
    if (length == 0) fail("a string holds a byte that is not UTF-8");
    return length;
  }

  void parse_escape(std::string* out) {
    ++pos_;  // the backslash
    char c = peek();
    ++pos_;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        *out += c;
        return;
      case 'b':
        *out += '\b';
        return;
      case 'f':
        *out += '\f';
        return;
      case 'n':
        *out += '\n';
        return;
      case 'r':
        *out += '\r';
        return;
      case 't':
        *out += '\t';
        return;
      case 'u':
        break;
      default:
        --pos_;
        fail("invalid escape in a string");
    }
    uint32_t code = hex4();
    if (code >= 0xDC00 && code <= 0xDFFF) fail("a \\u escape holds a lone low surrogate");
    if (code >= 0xD800 && code <= 0xDBFF) {
      if (!literal("\\u")) fail("a high surrogate must be followed by a \\u low surrogate");
      uint32_t low = hex4();
      if (low < 0xDC00 || low > 0xDFFF) fail("a high surrogate must be followed by a low one");
      code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(out, code);
  }

  uint32_t hex4() {
    uint32_t code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = peek();
      int digit = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
      if (digit < 0) fail("expected 4 hex digits after \\u");
      code = code << 4 | static_cast<uint32_t>(digit);
      ++pos_;
    }
    return code;
  }

  static void append_utf8(std::string* out, uint32_t code) {
    if (code < 0x80) {
      *out += static_cast<char>(code);
    } else if (code < 0x800) {
      *out += static_cast<char>(0xC0 | code >> 6);
      *out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      *out += static_cast<char>(0xE0 | code >> 12);
      *out += static_cast<char>(0x80 | (code >> 6 & 0x3F));
      *out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | code >> 18);
      *out += static_cast<char>(0x80 | (code >> 12 & 0x3F));
      *out += static_cast<char>(0x80 | (code >> 6 & 0x3F));
      *out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  const std::string& text_;
  const char* api_;
  std::vector<JsonValue>* pool_;
  std::deque<std::string>* strings_;
  size_t pos_ = 0;
  std::vector<JsonValue> stack_;  // finished values whose container is still open
  std::vector<Frame> frames_;     // the open containers, outermost first
};

JsonDocument::JsonDocument(const std::string& text, const char* api) {
  pool_.reserve(text.size() / 8 + 16);  // about one value per 11 bytes in save_json's documents
  root_ = JsonParser(text, api, &pool_, &strings_).parse();
}

}  // namespace kiln::ir::serialize
