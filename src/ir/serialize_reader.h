// The reading half of IR serialization (kiln/ir/serialize.h), private to src/ir: a Reader walks
// a parsed JSON document and builds the tree, checking every value it takes. Split in two files:
// serialize_read.cc holds the document, its tables, the values and the error paths;
// serialize_read_nodes.cc holds the nodes, one function per kind.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/ir/function.h"

namespace kiln::ir::serialize {

using Json = nlohmann::json;

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
    const auto& s = j.get_ref<const std::string&>();
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
