// Helpers of the codegen tests: lowered PrimFuncs with a packed entry built by hand, 1-D CPU
// DLTensors over aligned memory, and calls through the packed signature.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/codegen/jit.h"
#include "kiln/ir/op.h"
#include "kiln/runtime/c_runtime_api.h"
#include "kiln/support/error.h"

namespace kiln::codegen::testing {

using namespace ir;

// The message of the kiln::Error `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline Expr i64(int64_t v) {
  return make_const(DataType::int64(), v);
}

inline Expr packed_data(int index) {
  return call(DataType::handle(), Builtin::PackedArgData, {int32_const(index)});
}

// A 1-D buffer of `n` elements (n may be a variable).
inline Ref<Buffer> buffer_1d(const std::string& name, DataType dtype, Expr n) {
  return decl_buffer({std::move(n)}, dtype, name);
}

// `body` with `var` bound to extent `dim` of tensor argument `arg` (as an int32).
inline Stmt bind_shape(const Ref<Var>& var, int arg, int dim, Stmt body) {
  Expr extent =
      call(DataType::int64(), Builtin::PackedArgShape, {int32_const(arg), int32_const(dim)});
  return make<LetStmt>(var, cast(var->dtype, extent), std::move(body));
}

// The function `symbol` whose argument i is the tensor of buffers[i]: the body binds each data
// pointer with packed_arg_data and then runs `body`.
inline Ref<PrimFunc> packed_func(const std::string& symbol, const std::vector<Ref<Buffer>>& buffers,
                                 Stmt body, Attrs attrs = {}) {
  for (int i = static_cast<int>(buffers.size()) - 1; i >= 0; --i) {
    body = make<LetStmt>(buffers[i]->data, packed_data(i), body);
  }
  auto func = make<PrimFunc>();
  for (const Ref<Buffer>& b : buffers) {
    func->params.push_back(b->data);
    func->buffer_map.emplace_back(b->data, b);
  }
  func->body = body;
  func->attrs = std::move(attrs);
  func->attrs["global_symbol"] = make<StringImm>(symbol);
  return func;
}

inline Stmt serial(const Ref<Var>& i, Expr extent, Stmt body, ForKind kind = ForKind::kSerial) {
  return make<For>(i, int32_const(0), std::move(extent), kind, std::move(body));
}

// A 1-D CPU tensor of `n` elements of T over 64-byte aligned memory it owns.
template <class T>
class Tensor {
 public:
  Tensor(size_t n, DataType dtype) : n_(n), shape_(static_cast<int64_t>(n)) {
    size_t bytes = (n * sizeof(T) + 63) / 64 * 64 + 64;
    memory_.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
    std::memset(memory_.get(), 0, bytes);
    tensor_.data = memory_.get();
    tensor_.device = {kDLCPU, 0};
    tensor_.ndim = 1;
    tensor_.dtype = {static_cast<uint8_t>(dtype.code()), static_cast<uint8_t>(dtype.bits()),
                     static_cast<uint16_t>(dtype.lanes())};
    tensor_.shape = &shape_;
    tensor_.strides = nullptr;
    tensor_.byte_offset = 0;
  }
  T& operator[](size_t i) { return memory_.get()[i]; }
  const T& operator[](size_t i) const { return memory_.get()[i]; }
  size_t size() const { return n_; }
  DLTensor* dl() { return &tensor_; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  size_t n_;
  int64_t shape_;
  std::unique_ptr<T, Free> memory_;
  DLTensor tensor_{};
};

// One packed argument.
struct Arg {
  KilnValue value;
  int32_t code;
};

inline Arg tensor_arg(DLTensor* t) {
  Arg a;
  a.value.v_handle = t;
  a.code = kKilnDLTensorHandle;
  return a;
}
inline Arg int_arg(int64_t v) {
  Arg a;
  a.value.v_int64 = v;
  a.code = kKilnInt;
  return a;
}
inline Arg float_arg(double v) {
  Arg a;
  a.value.v_float64 = v;
  a.code = kKilnFloat;
  return a;
}

// Calls the packed function `symbol` of `module`; returns its status.
inline int32_t call_packed(const JitModule& module, const std::string& symbol,
                           const std::vector<Arg>& args) {
  auto fn = reinterpret_cast<KilnPackedCFunc>(module.get_function(symbol));
  if (fn == nullptr) return -100;
  std::vector<KilnValue> values;
  std::vector<int32_t> codes;
  for (const Arg& a : args) {
    values.push_back(a.value);
    codes.push_back(a.code);
  }
  return fn(values.data(), codes.data(), static_cast<int32_t>(args.size()));
}

// JIT-compiles one function for the host CPU.
inline std::unique_ptr<JitModule> jit(const Ref<PrimFunc>& func) {
  return compile_jit({func}, host_target(), "");
}

}  // namespace kiln::codegen::testing
