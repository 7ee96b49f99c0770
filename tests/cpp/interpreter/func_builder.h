// Helpers for the interpreter tests: PrimFuncs assembled by hand from buffers, scalars and a
// body, serial loops, reduction blocks, and the message of a kiln error.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/interpreter/interpreter.h"
#include "kiln/ir/buffer.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::interpreter::testing {

using namespace kiln::ir;

// A parameter of a test function: a buffer (passed as an array) or a scalar variable.
struct Param {
  Param(Ref<Buffer> b) : buffer(std::move(b)) {}  // NOLINT(google-explicit-constructor)
  Param(Ref<Var> v) : scalar(std::move(v)) {}     // NOLINT(google-explicit-constructor)
  Ref<Buffer> buffer;
  Ref<Var> scalar;
};

inline Ref<PrimFunc> make_func(const std::vector<Param>& params, Stmt body) {
  auto func = make<PrimFunc>();
  for (const Param& p : params) {
    if (p.buffer) {
      Ref<Var> handle = make_var(p.buffer->name + "_handle", DataType::handle());
      func->params.push_back(handle);
      func->buffer_map.emplace_back(handle, p.buffer);
    } else {
      func->params.push_back(p.scalar);
    }
  }
  func->body = std::move(body);
  func->attrs["global_symbol"] = make<StringImm>("main");
  return func;
}

inline Stmt loop(const Ref<Var>& var, int64_t extent, Stmt body) {
  return make<For>(var, int32_const(0), int32_const(extent), ForKind::kSerial, std::move(body));
}

inline Stmt loop(const Ref<Var>& var, Expr extent, Stmt body) {
  return make<For>(var, int32_const(0), std::move(extent), ForKind::kSerial, std::move(body));
}

inline Ref<Buffer> buffer(std::vector<int64_t> shape, DataType dtype, const std::string& name) {
  std::vector<Expr> dims;
  for (int64_t d : shape) dims.push_back(int32_const(d));
  return decl_buffer(std::move(dims), dtype, name);
}

// A tensor argument over a std::vector.
template <class T>
Argument array(std::vector<T>& data, DataType dtype, std::vector<int64_t> shape) {
  return Argument::tensor(data.data(), dtype, std::move(shape));
}
template <class T>
Argument array(std::vector<T>& data, DataType dtype) {
  return Argument::tensor(data.data(), dtype, {static_cast<int64_t>(data.size())});
}

// The message of the kiln error `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace kiln::interpreter::testing
