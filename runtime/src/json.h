// A small JSON reader for module manifests: parses a complete JSON text into a tree of values.
// Malformed input gives an error message with the byte offset, never a crash; nesting is bounded.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace runtime {

// One JSON value. Numbers keep an exact int64 when the literal is an integer in range; other
// numbers are recorded as non-integers (manifests need integers only).
struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  bool is_integer = false;
  int64_t integer = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;

  // The member named `key` of an object, or nullptr when absent (or when this is no object).
  const JsonValue* find(const std::string& key) const;
};

// Parses `text` into `out`. Returns false and sets `error` ("offset 17: expected ':'") when the
// text is not exactly one well-formed JSON value (surrounding whitespace allowed).
bool parse_json(const char* text, JsonValue* out, std::string* error);

// The name of a value kind for messages ("an array", "a string" ...).
const char* json_kind_name(JsonValue::Kind kind);

}  // namespace runtime
}  // namespace kiln
