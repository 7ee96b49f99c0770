// The reading half of IR serialization (kiln/ir/serialize.h), private to src/ir: a JSON parser
// (serialize_json.cc) and a Reader that walks the parsed document and builds the tree, checking
// every value it takes. The Reader is split in two files: serialize_read.cc holds the document,
// its tables, the values and the error paths; serialize_read_nodes.cc holds the nodes, one
// function per kind.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kiln/ir/function.h"

namespace kiln::ir::serialize {

// A value of a parsed JSON document. Containers hold their values in the document's pool, and
// strings and numbers are views of the text, so a value lives no longer than its document.
class JsonValue {
 public:
  enum class Type : uint8_t { kNull, kBool, kInt, kUint, kFloat, kString, kArray, kObject };

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_boolean() const { return type_ == Type::kBool; }
  // An integer written without fraction or exponent that fits 64 bits (signed or not).
  bool is_number_integer() const { return type_ == Type::kInt || type_ == Type::kUint; }
  // A non-negative one of those.
  bool is_number_unsigned() const { return type_ == Type::kUint; }
  bool is_number_float() const { return type_ == Type::kFloat; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  bool as_bool() const { return number_.b; }
  int64_t as_int() const { return number_.i; }
  uint64_t as_uint() const { return number_.u; }
  double as_double() const { return number_.d; }
  // A string's value, or a number's text as written.
  std::string_view text() const { return text_; }

  // The values of an array or object (0 for anything else), in order.
  size_t size() const { return count_; }
  const JsonValue& operator[](size_t i) const { return (*pool_)[first_ + i]; }
  // The name of this value in its object.
  std::string_view key() const { return key_; }
  // The first member of an object called `key`, or null.
  const JsonValue* find(std::string_view key) const;

 private:
  friend class JsonDocument;
  friend class JsonParser;
  const std::vector<JsonValue>* pool_ = nullptr;
  Type type_ = Type::kNull;
  union {
    bool b;
    int64_t i;
    uint64_t u;
    double d;
  } number_{};
  std::string_view text_;
  std::string_view key_;
  uint32_t first_ = 0;
  uint32_t count_ = 0;
};

// Parses `text`, which must outlive the document, as JSON (RFC 8259, strictly: UTF-8 strings,
// no trailing commas or text). Throws the kValue error "<api>: the text is not valid JSON: …"
// with the line and column of the problem.
class JsonDocument {
 public:
  JsonDocument(const std::string& text, const char* api);
  JsonDocument(const JsonDocument&) = delete;
  JsonDocument& operator=(const JsonDocument&) = delete;
  const JsonValue& root() const { return root_; }

 private:
  std::vector<JsonValue> pool_;
  std::deque<std::string> strings_;  // strings that had escapes, decoded
  JsonValue root_;
};

using Json = JsonValue;

// What a node field may hold.
enum class Expect { kAny, kExpr, kStmt, kBlock, kCommReducer, kPrimFunc };

class Reader {
 public:
  // `api` names the entry point in errors ("load_json", "load_prim_func" …).
  explicit Reader(const char* api) : api_(api) {}

  // The root of the document `text`.
  Ref<Node> document(const std::string& text);

  // --- Errors and paths ------------------------------------------------------------------------

  // Throws the kValue error "<api>: at <path>: <what>".
  [[noreturn, gnu::noinline]] void fail(const std::string& what) const;
  // "expected <expected>, found <a description of j>".
  [[noreturn, gnu::noinline]] void mismatch(const Json& j, const char* expected) const;

  // Appends one step to the path while in scope: a field name or an array index.
  class At {
   public:
    At(Reader* reader, const char* field) : reader_(reader) {
      reader_->path_.push_back(Step{field, -1});
    }
    At(Reader* reader, size_t index) : reader_(reader) {
      reader_->path_.push_back(Step{nullptr, static_cast<int64_t>(index)});
    }
    At(const At&) = delete;
    At& operator=(const At&) = delete;
    ~At() { reader_->path_.pop_back(); }

   private:
    Reader* reader_;
  };

  // A JSON object whose fields are taken one by one; finish() then refuses any other field.
  class Object {
   public:
    Object(Reader* reader, const Json& j, const char* expected);
    // The field `name`; an error when it is missing.
    const Json& get(const char* name);
    void finish() const;

   private:
    Reader* reader_;
    const Json& j_;
    const char* taken_[12];
    size_t count_ = 0;
  };

  // --- Values ----------------------------------------------------------------------------------

  int64_t integer(const Json& j, int64_t min, int64_t max);
  bool boolean(const Json& j);
  double real(const Json& j);
  std::string text(const Json& j);
  DataType dtype(const Json& j);
  // A name of an enumeration written with `name_of` (for_kind_name …), `count` values from 0.
  template <class E>
  E enumeration(const Json& j, const char* (*name_of)(E), int count, const char* what);
  const Json& array(const Json& j, const char* expected);

  // --- References to the tables ----------------------------------------------------------------

  // The position `j` gives in a table of `size` entries called `table`.
  size_t index(const Json& j, size_t size, const char* table);
  Ref<Var> var_ref(const Json& j);
  Ref<Buffer> buffer_ref(const Json& j);

  // --- Nodes (serialize_read_nodes.cc) ---------------------------------------------------------

  // A node of the expected family; null only when `nullable`.
  Ref<Node> node(const Json& j, Expect expect, bool nullable = false);
  Expr expr(const Json& j, bool nullable = false);
  Stmt stmt(const Json& j, bool nullable = false);
  std::vector<Expr> exprs(const Json& j);
  Range range(const Json& j);
  std::vector<IterVar> iter_vars(const Json& j);
  std::vector<BufferRegion> regions(const Json& j);
  Attrs attrs(const Json& j);
  std::vector<Ref<Var>> var_list(const Json& j);

  // The field `name` of `object`, read by `read` with the field on the path.
  template <class F>
  auto field(Object& object, const char* name, F read) {
    const Json& value = object.get(name);
    At at(this, name);
    return read(value);
  }

  // Checks that an access names as many indices (or ranges) as its buffer has dimensions.
  void check_rank(const Buffer& buffer, size_t count, const char* what);

 private:
  struct Step {
    const char* field;  // null for an array index
    int64_t index;
  };

  std::string path() const;
  void read_vars(const Json& j);
  void read_buffers(const Json& j);
  Ref<Buffer> buffer_entry(const Json& j);
  Ref<Node> node_fields(Object& o, NodeKind kind);
  // The kind named by `j`, checked to be one that `expect` allows.
  [[gnu::noinline]] NodeKind node_kind(const Json& j, Expect expect);
  [[noreturn, gnu::noinline]] void fail_not_node(const Json& j, Expect expect) const;
  [[noreturn, gnu::noinline]] void fail_too_deep() const;

  const char* api_;
  std::vector<Step> path_;
  std::vector<Ref<Var>> vars_;
  std::vector<Ref<Buffer>> buffers_;
  // Entries of the buffer table may refer only to earlier entries: while entry i is read, this
  // is i; while the root is read, the table's size.
  size_t buffer_limit_ = 0;
  std::unordered_map<std::string, DataType> dtypes_;
  int depth_ = 0;
};

template <class E>
E Reader::enumeration(const Json& j, const char* (*name_of)(E), int count, const char* what) {
  if (j.is_string()) {
    std::string_view s = j.text();
    for (int i = 0; i < count; ++i) {
      if (s == name_of(static_cast<E>(i))) return static_cast<E>(i);
    }
  }
  std::string expected = std::string(what) + " (";
  for (int i = 0; i < count; ++i) {
    expected += (i > 0 ? ", \"" : "\"") + std::string(name_of(static_cast<E>(i))) + "\"";
  }
  mismatch(j, (expected + ")").c_str());
}

}  // namespace kiln::ir::serialize
