// Small helpers on statements, buffers and functions.
#include "kiln/ir/stmt.h"

#include "kiln/ir/buffer.h"
#include "kiln/ir/function.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::ir {

namespace {
void append_flat(const Stmt& s, std::vector<Stmt>* out) {
  if (!s.defined()) return;
  if (const auto* nested = s.as<SeqStmt>()) {
    for (const Stmt& inner : nested->seq) append_flat(inner, out);
  } else {
    out->push_back(s);
  }
}
}  // namespace

Stmt seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (const Stmt& s : stmts) append_flat(s, &flat);
  if (flat.empty()) return make<Evaluate>(int32_const(0));
  if (flat.size() == 1) return flat[0];
  return make<SeqStmt>(std::move(flat));
}

Ref<Buffer> decl_buffer(std::vector<Expr> shape, DataType dtype, std::string name,
                        std::string scope) {
  auto buffer = make<Buffer>();
  buffer->data = make_var(name, DataType::handle());
  buffer->dtype = dtype;
  buffer->shape = std::move(shape);
  buffer->elem_offset = int32_const(0);
  buffer->name = std::move(name);
  buffer->scope = std::move(scope);
  return buffer;
}

Expr buffer_offset(const Buffer& buffer, const std::vector<Expr>& indices) {
  internal_check(indices.size() == buffer.shape.size())
      << "buffer_offset: " << indices.size() << " indices for the " << buffer.shape.size()
      << "-d buffer " << buffer.name;
  Expr offset;
  if (buffer.strides.empty()) {
    for (size_t i = 0; i < indices.size(); ++i) {
      offset = offset.defined() ? offset * buffer.shape[i] + indices[i] : indices[i];
    }
  } else {
    for (size_t i = 0; i < indices.size(); ++i) {
      Expr term = indices[i] * buffer.strides[i];
      offset = offset.defined() ? offset + term : term;
    }
  }
  if (!offset.defined()) offset = int32_const(0);
  if (buffer.elem_offset.defined() && !is_const_int(buffer.elem_offset, 0)) {
    offset = offset + buffer.elem_offset;
  }
  return offset;
}

Ref<Buffer> PrimFunc::buffer_of(const Ref<Var>& param) const {
  for (const auto& [var, buffer] : buffer_map) {
    if (var == param) return buffer;
  }
  return nullptr;
}

Ref<PrimFunc> IRModule::lookup(const std::string& name) const {
  auto it = functions.find(name);
  if (it != functions.end()) return it->second;
  std::string names;
  for (const auto& [key, func] : functions) names += (names.empty() ? "" : ", ") + key;
  user_error(ErrorKind::kIndex) << "IRModule: no function named '" << name
                                << "'; the module has: " << (names.empty() ? "(none)" : names);
}

}  // namespace kiln::ir
