// Loading IR from JSON (kiln/ir/serialize.h): the document and its version, the tables of
// variables and buffers, the checked reading of values, and errors that name the path of the
// offending value. The nodes themselves are read in serialize_read_nodes.cc.
#include <cmath>
#include <cstring>

#include "kiln/ir/serialize.h"
#include "kiln/support/error.h"
#include "src/ir/serialize_reader.h"
#include "src/ir/serialize_text.h"

namespace kiln::ir {

namespace serialize {

namespace {

// A short description of a JSON value for "found …".
std::string describe(const Json& j) {
  switch (j.type()) {
    case Json::Type::kNull:
      return "null";
    case Json::Type::kBool:
      return j.as_bool() ? "true" : "false";
    case Json::Type::kInt:
    case Json::Type::kUint:
    case Json::Type::kFloat:
      return "the number " + std::string(j.text().substr(0, 40));
    case Json::Type::kString:
      return "the string " + quoted(j.text(), 40);
    case Json::Type::kObject:
      return "an object";
    case Json::Type::kArray:
      return "an array of " + std::to_string(j.size()) + (j.size() == 1 ? " item" : " items");
  }
  return "a value";
}

double from_bits(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

// --- Errors and paths --------------------------------------------------------------------------

std::string Reader::path() const {
  std::string text = "$";
  for (const Step& step : path_) {
    if (step.field != nullptr) {
      text += '.';
      text += step.field;
    } else {
      text += '[' + std::to_string(step.index) + ']';
    }
  }
  return text;
}

void Reader::fail(const std::string& what) const {
  user_error(ErrorKind::kValue) << api_ << ": at " << path() << ": " << what;
}

void Reader::mismatch(const Json& j, const char* expected) const {
  fail(std::string("expected ") + expected + ", found " + describe(j));
}

Reader::Object::Object(Reader* reader, const Json& j, const char* expected)
    : reader_(reader), j_(j) {
  if (!j.is_object()) reader->mismatch(j, expected);
}

const Json& Reader::Object::get(const char* name) {
  const Json* value = j_.find(name);
  if (value == nullptr) reader_->fail(std::string("missing field \"") + name + "\"");
  internal_check(count_ < sizeof(taken_) / sizeof(taken_[0]))
      << "load_json: a node with more fields than Reader::Object can track";
  taken_[count_++] = name;
  return *value;
}

void Reader::Object::finish() const {
  if (j_.size() == count_) return;
  // Every field was taken once; the others are unknown names or repeated ones.
  size_t seen[sizeof(taken_) / sizeof(taken_[0])] = {};
  for (size_t k = 0; k < j_.size(); ++k) {
    std::string_view key = j_[k].key();
    size_t i = 0;
    while (i < count_ && key != taken_[i]) ++i;
    if (i == count_) reader_->fail("unexpected field " + quoted(key));
    if (++seen[i] > 1) reader_->fail("the field " + quoted(key) + " appears twice");
  }
}

// --- Values ------------------------------------------------------------------------------------

int64_t Reader::integer(const Json& j, int64_t min, int64_t max) {
  bool ok = false;
  int64_t value = 0;
  if (j.is_number_unsigned()) {
    ok = j.as_uint() <= static_cast<uint64_t>(max);
    value = static_cast<int64_t>(j.as_uint());
  } else if (j.is_number_integer()) {
    value = j.as_int();
    ok = true;
  }
  if (!ok || value < min || value > max) {
    mismatch(j,
             ("an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]").c_str());
  }
  return value;
}

bool Reader::boolean(const Json& j) {
  if (!j.is_boolean()) mismatch(j, "true or false");
  return j.as_bool();
}

double Reader::real(const Json& j) {
  if (j.is_number_float()) return j.as_double();
  if (j.is_number_unsigned()) return static_cast<double>(j.as_uint());
  if (j.is_number_integer()) return static_cast<double>(j.as_int());
  if (j.is_string()) {
    std::string_view s = j.text();
    if (s == "inf") return HUGE_VAL;
    if (s == "-inf") return -HUGE_VAL;
    if (s == "nan") return from_bits(0x7ff8000000000000ULL);
    // "nan(0x" + 16 hex digits + ")": a NaN with its exact bits.
    if (s.size() == 23 && s.compare(0, 6, "nan(0x") == 0 && s.back() == ')') {
      uint64_t bits = 0;
      bool ok = true;
      for (size_t i = 6; i < 22 && ok; ++i) {
        int digit = hex_value(s[i]);
        ok = digit >= 0;
        bits = bits << 4 | static_cast<uint64_t>(digit);
      }
      double value = from_bits(bits);
      if (ok && std::isnan(value)) return value;
    }
  }
  mismatch(j, "a number, \"inf\", \"-inf\", \"nan\" or \"nan(0x<16 hex digits>)\"");
}

std::string Reader::text(const Json& j) {
  if (j.is_string()) return std::string(j.text());
  if (j.is_object() && j.size() == 1) {
    const Json* hex_value_json = j.find("hex");
    if (hex_value_json != nullptr && hex_value_json->is_string()) {
      std::string_view hex = hex_value_json->text();
      std::string bytes;
      bool ok = hex.size() % 2 == 0;
      for (size_t i = 0; ok && i < hex.size(); i += 2) {
        int hi = hex_value(hex[i]), lo = hex_value(hex[i + 1]);
        ok = hi >= 0 && lo >= 0;
        bytes += static_cast<char>(hi << 4 | lo);
      }
      if (ok) return bytes;
    }
  }
  mismatch(j, "a string or {\"hex\": \"<pairs of hex digits>\"}");
}

DataType Reader::dtype(const Json& j) {
  if (!j.is_string()) mismatch(j, "a dtype string such as \"float32\"");
  std::string s(j.text());
  auto it = dtypes_.find(s);
  if (it != dtypes_.end()) return it->second;
  DataType t;
  if (s == "void") {
    t = DataType::void_();
  } else {
    try {
      t = DataType::parse(s);
    } catch (const Error&) {
      mismatch(j, "a dtype such as \"float32\", \"int8x4\", \"bool\", \"handle\" or \"void\"");
    }
  }
  dtypes_.emplace(s, t);
  return t;
}

const Json& Reader::array(const Json& j, const char* expected) {
  if (!j.is_array()) mismatch(j, expected);
  return j;
}

// --- The tables --------------------------------------------------------------------------------

size_t Reader::index(const Json& j, size_t size, const char* table) {
  if (j.is_number_unsigned() && j.as_uint() < size) return j.as_uint();
  if (size == 0) {
    mismatch(j, (std::string("an index into \"") + table + "\", which is empty").c_str());
  }
  mismatch(j,
           (std::string("an index into \"") + table + "\" (0 to " + std::to_string(size - 1) + ")")
               .c_str());
}

Ref<Var> Reader::var_ref(const Json& j) {
  return vars_[index(j, vars_.size(), "vars")];
}

Ref<Buffer> Reader::buffer_ref(const Json& j) {
  if (j.is_number_unsigned()) {
    uint64_t i = j.as_uint();
    if (i < buffer_limit_) return buffers_[i];
    if (i < buffers_.size()) {
      fail("refers to buffer " + std::to_string(i) + " from entry " +
           std::to_string(buffer_limit_) +
           " of \"buffers\"; an entry may refer only to entries before it");
    }
  }
  return buffers_[index(j, buffers_.size(), "buffers")];  // throws: past the table
}

void Reader::read_vars(const Json& j) {
  array(j, "an array of variables");
  vars_.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    At at(this, i);
    Object o(this, j[i], "a variable {\"name\", \"dtype\", \"size_var\"}");
    std::string name = field(o, "name", [&](const Json& v) { return text(v); });
    DataType t = field(o, "dtype", [&](const Json& v) { return dtype(v); });
    bool size_var = field(o, "size_var", [&](const Json& v) { return boolean(v); });
    o.finish();
    vars_.push_back(make<Var>(std::move(name), t, size_var));
  }
}

void Reader::read_buffers(const Json& j) {
  array(j, "an array of buffers");
  // Every entry is made first so that a reference past the current entry can be told apart
  // from one past the table.
  buffers_.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) buffers_.push_back(make<Buffer>());
  for (size_t i = 0; i < j.size(); ++i) {
    At at(this, i);
    buffer_limit_ = i;
    Buffer* b = buffers_[i].get();
    Object o(this, j[i], "a buffer object");
    b->name = field(o, "name", [&](const Json& v) { return text(v); });
    b->data = field(o, "data", [&](const Json& v) { return var_ref(v); });
    b->dtype = field(o, "dtype", [&](const Json& v) { return dtype(v); });
    b->shape = field(o, "shape", [&](const Json& v) { return exprs(v); });
    b->strides = field(o, "strides", [&](const Json& v) { return exprs(v); });
    if (!b->strides.empty() && b->strides.size() != b->shape.size()) {
      fail("the buffer has " + std::to_string(b->shape.size()) + " dimensions but " +
           std::to_string(b->strides.size()) + " strides");
    }
    b->elem_offset = field(o, "elem_offset", [&](const Json& v) { return expr(v, true); });
    b->scope = field(o, "scope", [&](const Json& v) { return text(v); });
    b->data_alignment = static_cast<int>(
        field(o, "data_alignment", [&](const Json& v) { return integer(v, 0, INT32_MAX); }));
    b->offset_factor = static_cast<int>(
        field(o, "offset_factor", [&](const Json& v) { return integer(v, 0, INT32_MAX); }));
    o.finish();
  }
  buffer_limit_ = buffers_.size();
}

void Reader::check_rank(const Buffer& buffer, size_t count, const char* what) {
  if (count == buffer.shape.size()) return;
  fail(std::to_string(count) + " " + what + " for the " + std::to_string(buffer.shape.size()) +
       "-dimensional buffer " + quoted(buffer.name));
}

// --- The document ------------------------------------------------------------------------------

Ref<Node> Reader::document(const std::string& text) {
  path_.reserve(64);
  // Step 1. The text as JSON, and the version before anything else is read.
  JsonDocument parsed(text, api_);
  const Json& doc = parsed.root();
  Object o(this, doc, "a kiln IR document (a JSON object with \"kiln_ir_format\")");
  if (doc.find("kiln_ir_format") == nullptr) {
    fail(
        "missing field \"kiln_ir_format\"; this JSON is not a kiln IR document (save_json "
        "writes one)");
  }
  field(o, "kiln_ir_format", [&](const Json& v) {
    int64_t found = integer(v, 0, INT64_MAX);
    if (found != kSerializedFormatVersion) {
      fail("the document is in kiln IR format version " + std::to_string(found) +
           ", but this kiln reads version " + std::to_string(kSerializedFormatVersion) +
           (found > kSerializedFormatVersion ? " (the document was written by a newer kiln)" : ""));
    }
    return found;
  });
  // Step 2. The tables: variables, then buffers (whose fields may name variables).
  {
    const Json& vars = o.get("vars");
    At at(this, "vars");
    read_vars(vars);
  }
  {
    const Json& buffers = o.get("buffers");
    At at(this, "buffers");
    read_buffers(buffers);
  }
  // Step 3. The tree, which refers to both tables.
  Ref<Node> root = field(o, "root", [&](const Json& v) { return node(v, Expect::kAny, true); });
  o.finish();
  return root;
}

}  // namespace serialize

Ref<Node> load_json(const std::string& text) {
  return serialize::Reader("load_json").document(text);
}

Ref<PrimFunc> load_prim_func(const std::string& text) {
  Ref<Node> root = serialize::Reader("load_prim_func").document(text);
  type_check(root.defined() && root->kind() == NodeKind::PrimFunc)
      << "load_prim_func: the document holds "
      << (root.defined() ? std::string("a ") + kind_name(root->kind()) : std::string("null"))
      << ", not a PrimFunc";
  return cast<PrimFunc>(root);
}

Ref<IRModule> load_module(const std::string& text) {
  Ref<Node> root = serialize::Reader("load_module").document(text);
  type_check(root.defined() && root->kind() == NodeKind::IRModule)
      << "load_module: the document holds "
      << (root.defined() ? std::string("a ") + kind_name(root->kind()) : std::string("null"))
      << ", not an IRModule";
  return cast<IRModule>(root);
}

}  // namespace kiln::ir
