// The writing half of IR serialization (kiln/ir/serialize.h): one walk of the tree that appends
// JSON text directly to strings, without an intermediate JSON object, because the tuner saves
// every candidate function and a document tree would cost more than the walk itself.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>

#include "kiln/ir/serialize.h"
#include "kiln/support/error.h"
#include "src/ir/serialize_text.h"

namespace kiln::ir {

namespace {

// Whether `s` is well-formed UTF-8, the rule JSON parsers apply to the strings they read.
bool is_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    size_t length = serialize::utf8_sequence_length(s, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

void append_hex_digit(std::string& out, unsigned value) {
  out += "0123456789abcdef"[value & 0xF];
}

// A string field: a JSON string when it is UTF-8, else {"hex": "..."} so that any bytes survive.
void write_text(std::string& out, const std::string& s) {
  if (!is_utf8(s)) {
    out += "{\"hex\":\"";
    for (unsigned char c : s) {
      append_hex_digit(out, c >> 4);
      append_hex_digit(out, c);
    }
    out += "\"}";
    return;
  }
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          append_hex_digit(out, c >> 4);
          append_hex_digit(out, c);
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

template <class T>
void write_integer(std::string& out, T value) {
  char buffer[24];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, result.ptr);
}

// The shortest text that reads back to the same double, with a '.' or an exponent so that a
// reader never takes it for an integer (which would lose -0.0); non-finite values as strings.
void write_real(std::string& out, double value) {
  if (std::isfinite(value)) {
    char buffer[32];
    auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
    std::string_view text(buffer, static_cast<size_t>(result.ptr - buffer));
    out += text;
    if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "\"inf\"" : "\"-inf\"";
    return;
  }
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if (bits == 0x7ff8000000000000ULL) {
    out += "\"nan\"";
    return;
  }
  out += "\"nan(0x";
  for (int shift = 60; shift >= 0; shift -= 4)
    append_hex_digit(out, static_cast<unsigned>(bits >> shift));
  out += ")\"";
}

class Writer {
 public:
  std::string document(const Node* root) {
    std::string body;
    body.reserve(4096);
    node(root, body);
    std::string out;
    out.reserve(body.size() + vars_.size() + buffers_.size() + 64);
    out += "{\"kiln_ir_format\":";
    write_integer(out, kSerializedFormatVersion);
    out += ",\"vars\":[";
    out += vars_;
    out += "],\"buffers\":[";
    out += buffers_;
    out += "],\"root\":";
    out += body;
    out += '}';
    return out;
  }

 private:
  // --- Values ----------------------------------------------------------------------------------

  static void key(std::string& out, const char* name) {
    out += ",\"";
    out += name;
    out += "\":";
  }

  void dtype(std::string& out, DataType t) {
    uint32_t packed = (static_cast<uint32_t>(t.code()) << 24) |
                      (static_cast<uint32_t>(t.bits()) << 16) | static_cast<uint32_t>(t.lanes());
    auto it = dtypes_.find(packed);
    if (it == dtypes_.end()) it = dtypes_.emplace(packed, dtype_text(t)).first;
    out += it->second;
  }

  // The quoted text of a dtype, checked to read back as the same dtype.
  static std::string dtype_text(DataType t) {
    std::string text = t.str();
    bool exact = t.is_void();
    if (!exact) {
      try {
        exact = DataType::parse(text) == t;
      } catch (const Error&) {
        exact = false;
      }
    }
    user_check(exact) << "save_json: the dtype with code " << static_cast<int>(t.code()) << ", "
                      << t.bits() << " bits and " << t.lanes()
                      << " lanes has no text form that reads back as the same dtype";
    return "\"" + text + "\"";
  }

  // --- Variables and buffers: written once in their tables, referred to by index --------------

  void var_ref(std::string& out, const Ref<Var>& v, const Node* parent, const char* field) {
    required(v.get(), parent, field);
    auto [it, inserted] = var_ids_.emplace(v.get(), static_cast<int>(var_ids_.size()));
    if (inserted) {
      if (!vars_.empty()) vars_ += ',';
      vars_ += "{\"name\":";
      write_text(vars_, v->name);
      key(vars_, "dtype");
      dtype(vars_, v->dtype);
      key(vars_, "size_var");
      vars_ += v->is_size_var ? "true" : "false";
      vars_ += '}';
    }
    write_integer(out, it->second);
  }

  void buffer_ref(std::string& out, const Ref<Buffer>& b, const Node* parent, const char* field) {
    required(b.get(), parent, field);
    auto it = buffer_ids_.find(b.get());
    if (it == buffer_ids_.end()) {
      write_integer(out, define_buffer(b.get()));
      return;
    }
    user_check(it->second >= 0) << "save_json: buffer " << serialize::quoted(b->name)
                                << " refers to itself (its shape, strides or offset load from "
                                   "it), which no function can allocate";
    write_integer(out, it->second);
  }

  // Writes the buffer's entry after the entries of any buffers its fields name, so that every
  // buffer refers only to earlier ones.
  int define_buffer(const Buffer* b) {
    buffer_ids_[b] = -1;  // in progress
    std::string entry = "{\"name\":";
    write_text(entry, b->name);
    key(entry, "data");
    var_ref(entry, b->data, b, "data");
    key(entry, "dtype");
    dtype(entry, b->dtype);
    key(entry, "shape");
    node_list(entry, b->shape, b, "shape");
    key(entry, "strides");
    node_list(entry, b->strides, b, "strides");
    key(entry, "elem_offset");
    optional(entry, b->elem_offset.get());
    key(entry, "scope");
    write_text(entry, b->scope);
    key(entry, "data_alignment");
    write_integer(entry, b->data_alignment);
    key(entry, "offset_factor");
    write_integer(entry, b->offset_factor);
    entry += '}';
    int id = buffer_count_++;
    buffer_ids_[b] = id;
    if (!buffers_.empty()) buffers_ += ',';
    buffers_ += entry;
    return id;
  }

  // --- Nodes -----------------------------------------------------------------------------------

  static void required(const Node* child, const Node* parent, const char* field) {
    user_check(child != nullptr)
        << "save_json: " << kind_name(parent->kind()) << "." << field
        << " is null; the IR allows null only in IfThenElse.else_case, Block.init, "
           "Buffer.elem_offset and Reduce.condition";
  }

  void child(std::string& out, const Node* c, const Node* parent, const char* field) {
    required(c, parent, field);
    node(c, out);
  }

  void optional(std::string& out, const Node* c) {
    if (c == nullptr) {
      out += "null";
    } else {
      node(c, out);
    }
  }

  template <class T>
  void node_list(std::string& out, const std::vector<Ref<T>>& items, const Node* parent,
                 const char* field) {
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += ',';
      child(out, items[i].get(), parent, field);
    }
    out += ']';
  }

  void range(std::string& out, const Range& r, const Node* parent, const char* field) {
    out += '[';
    child(out, r.min.get(), parent, field);
    out += ',';
    child(out, r.extent.get(), parent, field);
    out += ']';
  }

  void iter_vars(std::string& out, const std::vector<IterVar>& items, const Node* parent,
                 const char* field) {
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += ',';
      out += "{\"var\":";
      var_ref(out, items[i].var, parent, field);
      key(out, "dom");
      range(out, items[i].dom, parent, field);
      key(out, "type");
      out += '"';
      out += iter_type_name(items[i].type);
      out += "\"}";
    }
    out += ']';
  }

  void regions(std::string& out, const std::vector<BufferRegion>& items, const Node* parent,
               const char* field) {
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += ',';
      out += "{\"buffer\":";
      buffer_ref(out, items[i].buffer, parent, field);
      key(out, "region");
      out += '[';
      for (size_t d = 0; d < items[i].region.size(); ++d) {
        if (d > 0) out += ',';
        range(out, items[i].region[d], parent, field);
      }
      out += "]}";
    }
    out += ']';
  }

  void attrs(std::string& out, const Attrs& map, const Node* parent, const char* field) {
    out += '[';
    bool first = true;
    for (const auto& [name, value] : map) {
      if (!first) out += ',';
      first = false;
      out += '[';
      write_text(out, name);
      out += ',';
      child(out, value.get(), parent, field);
      out += ']';
    }
    out += ']';
  }

  void open(std::string& out, const Node* n) {
    out += "{\"kind\":\"";
    out += kind_name(n->kind());
    out += '"';
    if (is_expr_kind(n->kind()) && n->kind() != NodeKind::Var) {
      key(out, "dtype");
      dtype(out, static_cast<const ExprNode*>(n)->dtype);
    }
  }

  void node(const Node* n, std::string& out) {
    if (n == nullptr) {
      out += "null";
      return;
    }
    user_check(depth_ < kMaxSerializedDepth)
        << "save_json: the tree is nested deeper than " << kMaxSerializedDepth
        << " nodes, more than load_json accepts";
    ++depth_;
    open(out, n);
    switch (n->kind()) {
#define KILN_WRITE_DISPATCH(Name)             \
  case NodeKind::Name:                        \
    fields(out, static_cast<const Name*>(n)); \
    break;
      KILN_EXPR_NODE_LIST(KILN_WRITE_DISPATCH)
      KILN_STMT_NODE_LIST(KILN_WRITE_DISPATCH)
      KILN_OTHER_NODE_LIST(KILN_WRITE_DISPATCH)
#undef KILN_WRITE_DISPATCH
    }
    out += '}';
    --depth_;
  }

  // --- Expressions -----------------------------------------------------------------------------

  void fields(std::string& out, const IntImm* n) {
    key(out, "value");
    // A uint64 constant is stored as the int64 with the same bits; write the number it means.
    if (n->dtype.is_uint() && n->dtype.bits() == 64) {
      write_integer(out, static_cast<uint64_t>(n->value));
    } else {
      write_integer(out, n->value);
    }
  }
  void fields(std::string& out, const FloatImm* n) {
    key(out, "value");
    write_real(out, n->value);
  }
  void fields(std::string& out, const StringImm* n) {
    key(out, "value");
    write_text(out, n->value);
  }
  void fields(std::string& out, const Var* n) {
    key(out, "var");
    var_ref(out, Ref<Var>(n), n, "var");
  }
  void binary(std::string& out, const BinaryNode* n) {
    key(out, "a");
    child(out, n->a.get(), n, "a");
    key(out, "b");
    child(out, n->b.get(), n, "b");
  }
#define KILN_WRITE_BINARY(Name)                  \
  void fields(std::string& out, const Name* n) { \
    binary(out, n);                              \
  }
  KILN_WRITE_BINARY(Add)
  KILN_WRITE_BINARY(Sub)
  KILN_WRITE_BINARY(Mul)
  KILN_WRITE_BINARY(Div)
  KILN_WRITE_BINARY(Mod)
  KILN_WRITE_BINARY(FloorDiv)
  KILN_WRITE_BINARY(FloorMod)
  KILN_WRITE_BINARY(Min)
  KILN_WRITE_BINARY(Max)
  KILN_WRITE_BINARY(EQ)
  KILN_WRITE_BINARY(NE)
  KILN_WRITE_BINARY(LT)
  KILN_WRITE_BINARY(LE)
  KILN_WRITE_BINARY(GT)
  KILN_WRITE_BINARY(GE)
  KILN_WRITE_BINARY(And)
  KILN_WRITE_BINARY(Or)
#undef KILN_WRITE_BINARY
  void fields(std::string& out, const Not* n) {
    key(out, "a");
    child(out, n->a.get(), n, "a");
  }
  void fields(std::string& out, const Select* n) {
    key(out, "condition");
    child(out, n->condition.get(), n, "condition");
    key(out, "true_value");
    child(out, n->true_value.get(), n, "true_value");
    key(out, "false_value");
    child(out, n->false_value.get(), n, "false_value");
  }
  void fields(std::string& out, const Cast* n) {
    key(out, "value");
    child(out, n->value.get(), n, "value");
  }
  void fields(std::string& out, const Call* n) {
    key(out, "op");
    out += '"';
    out += builtin_name(n->op);
    out += '"';
    key(out, "args");
    node_list(out, n->args, n, "args");
  }
  void fields(std::string& out, const Ramp* n) {
    key(out, "base");
    child(out, n->base.get(), n, "base");
    key(out, "stride");
    child(out, n->stride.get(), n, "stride");
    key(out, "lanes");
    write_integer(out, n->lanes);
  }
  void fields(std::string& out, const Broadcast* n) {
    key(out, "value");
    child(out, n->value.get(), n, "value");
    key(out, "lanes");
    write_integer(out, n->lanes);
  }
  void fields(std::string& out, const Let* n) {
    key(out, "var");
    var_ref(out, n->var, n, "var");
    key(out, "value");
    child(out, n->value.get(), n, "value");
    key(out, "body");
    child(out, n->body.get(), n, "body");
  }
  void fields(std::string& out, const BufferLoad* n) {
    key(out, "buffer");
    buffer_ref(out, n->buffer, n, "buffer");
    key(out, "indices");
    node_list(out, n->indices, n, "indices");
  }
  void fields(std::string& out, const Reduce* n) {
    key(out, "combiner");
    child(out, n->combiner.get(), n, "combiner");
    key(out, "source");
    node_list(out, n->source, n, "source");
    key(out, "axis");
    iter_vars(out, n->axis, n, "axis");
    key(out, "condition");
    optional(out, n->condition.get());
    key(out, "value_index");
    write_integer(out, n->value_index);
    key(out, "init");
    node_list(out, n->init, n, "init");
  }

  // --- Statements ------------------------------------------------------------------------------

  void fields(std::string& out, const LetStmt* n) {
    key(out, "var");
    var_ref(out, n->var, n, "var");
    key(out, "value");
    child(out, n->value.get(), n, "value");
    key(out, "body");
    child(out, n->body.get(), n, "body");
  }
  void fields(std::string& out, const AssertStmt* n) {
    key(out, "condition");
    child(out, n->condition.get(), n, "condition");
    key(out, "message");
    write_text(out, n->message);
    key(out, "body");
    child(out, n->body.get(), n, "body");
  }
  void fields(std::string& out, const BufferStore* n) {
    key(out, "buffer");
    buffer_ref(out, n->buffer, n, "buffer");
    key(out, "value");
    child(out, n->value.get(), n, "value");
    key(out, "indices");
    node_list(out, n->indices, n, "indices");
  }
  void fields(std::string& out, const Allocate* n) {
    key(out, "buffer");
    buffer_ref(out, n->buffer, n, "buffer");
    key(out, "body");
    child(out, n->body.get(), n, "body");
  }
  void fields(std::string& out, const For* n) {
    key(out, "loop_var");
    var_ref(out, n->loop_var, n, "loop_var");
    key(out, "min");
    child(out, n->min.get(), n, "min");
    key(out, "extent");
    child(out, n->extent.get(), n, "extent");
    key(out, "for_kind");  // "kind" names the node's own kind
    out += '"';
    out += for_kind_name(n->kind);
    out += '"';
    key(out, "thread_tag");
    write_text(out, n->thread_tag);
    key(out, "annotations");
    attrs(out, n->annotations, n, "annotations");
    key(out, "body");
    child(out, n->body.get(), n, "body");
  }
  void fields(std::string& out, const SeqStmt* n) {
    key(out, "seq");
    node_list(out, n->seq, n, "seq");
  }
  void fields(std::string& out, const IfThenElse* n) {
    key(out, "condition");
    child(out, n->condition.get(), n, "condition");
    key(out, "then_case");
    child(out, n->then_case.get(), n, "then_case");
    key(out, "else_case");
    optional(out, n->else_case.get());
  }
  void fields(std::string& out, const Evaluate* n) {
    key(out, "value");
    child(out, n->value.get(), n, "value");
  }
  void fields(std::string& out, const Block* n) {
    key(out, "name");
    write_text(out, n->name);
    key(out, "iter_vars");
    iter_vars(out, n->iter_vars, n, "iter_vars");
    key(out, "reads");
    regions(out, n->reads, n, "reads");
    key(out, "writes");
    regions(out, n->writes, n, "writes");
    key(out, "alloc_buffers");
    out += '[';
    for (size_t i = 0; i < n->alloc_buffers.size(); ++i) {
      if (i > 0) out += ',';
      buffer_ref(out, n->alloc_buffers[i], n, "alloc_buffers");
    }
    out += ']';
    key(out, "init");
    optional(out, n->init.get());
    key(out, "body");
    child(out, n->body.get(), n, "body");
    key(out, "annotations");
    attrs(out, n->annotations, n, "annotations");
  }
  void fields(std::string& out, const BlockRealize* n) {
    key(out, "iter_values");
    node_list(out, n->iter_values, n, "iter_values");
    key(out, "predicate");
    child(out, n->predicate.get(), n, "predicate");
    key(out, "block");
    child(out, n->block.get(), n, "block");
  }

  // --- Other nodes -----------------------------------------------------------------------------

  void fields(std::string& out, const Buffer* n) {
    key(out, "buffer");
    buffer_ref(out, Ref<Buffer>(n), n, "buffer");
  }
  void fields(std::string& out, const CommReducer* n) {
    key(out, "lhs");
    var_list(out, n->lhs, n, "lhs");
    key(out, "rhs");
    var_list(out, n->rhs, n, "rhs");
    key(out, "result");
    node_list(out, n->result, n, "result");
    key(out, "identity");
    node_list(out, n->identity, n, "identity");
  }
  void fields(std::string& out, const PrimFunc* n) {
    key(out, "params");
    var_list(out, n->params, n, "params");
    key(out, "buffer_map");
    out += '[';
    for (size_t i = 0; i < n->buffer_map.size(); ++i) {
      if (i > 0) out += ',';
      out += '[';
      var_ref(out, n->buffer_map[i].first, n, "buffer_map");
      out += ',';
      buffer_ref(out, n->buffer_map[i].second, n, "buffer_map");
      out += ']';
    }
    out += ']';
    key(out, "attrs");
    attrs(out, n->attrs, n, "attrs");
    key(out, "body");
    child(out, n->body.get(), n, "body");
  }
  void fields(std::string& out, const IRModule* n) {
    key(out, "functions");
    out += '[';
    bool first = true;
    for (const auto& [name, func] : n->functions) {
      if (!first) out += ',';
      first = false;
      out += '[';
      write_text(out, name);
      out += ',';
      child(out, func.get(), n, "functions");
      out += ']';
    }
    out += ']';
  }

  void var_list(std::string& out, const std::vector<Ref<Var>>& vars, const Node* parent,
                const char* field) {
    out += '[';
    for (size_t i = 0; i < vars.size(); ++i) {
      if (i > 0) out += ',';
      var_ref(out, vars[i], parent, field);
    }
    out += ']';
  }

  std::string vars_, buffers_;
  std::unordered_map<const Var*, int> var_ids_;
  std::unordered_map<const Buffer*, int> buffer_ids_;  // -1 while its entry is being written
  int buffer_count_ = 0;
  std::unordered_map<uint32_t, std::string> dtypes_;
  int depth_ = 0;
};

}  // namespace

std::string save_json(const Ref<Node>& node) {
  return Writer().document(node.get());
}

}  // namespace kiln::ir
