// Argument checking for interpret(): each argument is matched to its parameter in two passes.
// Pass 1 binds every variable that appears alone as a dimension, stride or elem_offset (and
// scalar parameters), in parameter order, and checks later uses against the first binding.
// Pass 2 evaluates the remaining shape, stride and offset expressions and compares them.
#include "arguments.h"

#include <sstream>
#include <unordered_map>

#include "compiler.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::interpreter {

using namespace kiln::ir;

namespace {

std::string format_list(const std::vector<int64_t>& values) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < values.size(); ++i) os << (i > 0 ? ", " : "") << values[i];
  if (values.size() == 1) os << ",";
  os << ")";
  return os.str();
}

// The strides of an argument in elements: its own, or compact row-major ones.
std::vector<int64_t> argument_strides(const Argument& arg) {
  if (!arg.strides.empty()) return arg.strides;
  std::vector<int64_t> strides(arg.shape.size());
  int64_t stride = 1;
  for (size_t k = arg.shape.size(); k-- > 0;) {
    strides[k] = stride;
    stride *= arg.shape[k];
  }
  return strides;
}

class ArgumentBinder {
 public:
  ArgumentBinder(const PrimFunc& func, const std::vector<Argument>& args)
      : func_(func), args_(args) {}

  Bindings run() {
    check_count();
    for (size_t i = 0; i < args_.size(); ++i) {
      const Ref<Var>& param = func_.params[i];
      if (Ref<Buffer> buffer = func_.buffer_of(param)) {
        bind_tensor(i, param, *buffer);
      } else {
        bind_scalar(i, *param);
      }
    }
    for (size_t i = 0; i < args_.size(); ++i) {
      if (Ref<Buffer> buffer = func_.buffer_of(func_.params[i])) check_tensor(i, *buffer);
    }
    return std::move(bindings_);
  }

 private:
  struct Known {
    Lane value;
    std::string origin;  // "dimension 0 of buffer A"
  };

  std::string function_name() const {
    auto it = func_.attrs.find("global_symbol");
    if (it != func_.attrs.end()) {
      if (const auto* s = it->second.as<StringImm>()) return " " + s->value;
    }
    return "";
  }

  std::string what(size_t i) const {
    const Ref<Var>& param = func_.params[i];
    if (Ref<Buffer> buffer = func_.buffer_of(param)) {
      return "argument " + std::to_string(i) + " (buffer " + buffer->name + ")";
    }
    return "argument " + std::to_string(i) + " (scalar " + param->name + ")";
  }

  void check_count() const {
    if (args_.size() == func_.params.size()) return;
    std::ostringstream names;
    for (size_t i = 0; i < func_.params.size(); ++i) {
      Ref<Buffer> buffer = func_.buffer_of(func_.params[i]);
      names << (i > 0 ? ", " : "") << (buffer ? buffer->name : func_.params[i]->name);
    }
    user_error(ErrorKind::kIndex) << "tir.interpret: function" << function_name() << " takes "
                                  << func_.params.size() << " argument"
                                  << (func_.params.size() == 1 ? "" : "s") << " (" << names.str()
                                  << "), found " << args_.size();
  }

  // Binds `var` to `value`, or checks `value` against its first binding.
  void bind_int(const Var* var, int64_t value, size_t i, const std::string& origin) {
    auto it = known_.find(var);
    if (it == known_.end()) {
      Lane lane;
      lane.i = value;
      known_.emplace(var, Known{lane, origin});
      bindings_.values.push_back({var, lane});
      return;
    }
    user_check(it->second.value.i == value)
        << "tir.interpret: " << what(i) << ": " << origin << " is " << var->name << " = "
        << it->second.value.i << " (bound by " << it->second.origin << "), found " << value;
  }

  void bind_tensor(size_t i, const Ref<Var>& param, const Buffer& buffer) {
    const Argument& arg = args_[i];
    type_check(arg.kind == Argument::Kind::kTensor)
        << "tir.interpret: " << what(i) << ": expected an array of dtype " << buffer.dtype
        << ", found a scalar";
    type_check(arg.dtype == buffer.dtype)
        << "tir.interpret: " << what(i) << ": expected an array of dtype " << buffer.dtype
        << ", found dtype " << arg.dtype;
    user_check(static_cast<int>(arg.shape.size()) == buffer.ndim())
        << "tir.interpret: " << what(i) << ": expected " << buffer.ndim() << " dimension"
        << (buffer.ndim() == 1 ? "" : "s") << ", found " << arg.shape.size() << " (shape "
        << format_list(arg.shape) << ")";
    user_check(arg.strides.empty() || arg.strides.size() == arg.shape.size())
        << "tir.interpret: " << what(i) << ": the array has " << arg.strides.size()
        << " strides for " << arg.shape.size() << " dimensions";
    std::vector<int64_t> strides = argument_strides(arg);
    for (int64_t s : strides) {
      user_check(s >= 0) << "tir.interpret: " << what(i)
                         << ": arrays with negative strides are not supported, found strides "
                         << format_list(strides) << " (in elements)";
    }
    for (size_t k = 0; k < arg.shape.size(); ++k) {
      if (const auto* var = buffer.shape[k].as<Var>()) {
        bind_int(var, arg.shape[k], i,
                 "dimension " + std::to_string(k) + " of buffer " + buffer.name);
      }
    }
    if (buffer.strides.empty()) {
      // Compact row-major; the stride of a dimension of extent 1 does not matter.
      int64_t expected = 1;
      for (size_t k = arg.shape.size(); k-- > 0;) {
        user_check(arg.shape[k] <= 1 || strides[k] == expected)
            << "tir.interpret: " << what(i)
            << ": expected a C-contiguous array (the buffer has no strides), found strides "
            << format_list(strides) << " (in elements) for shape " << format_list(arg.shape);
        expected *= arg.shape[k];
      }
    } else {
      for (size_t k = 0; k < strides.size(); ++k) {
        if (const auto* var = buffer.strides[k].as<Var>()) {
          bind_int(var, strides[k], i, "stride " + std::to_string(k) + " of buffer " + buffer.name);
        }
      }
    }
    if (buffer.elem_offset.defined()) {
      if (const auto* var = buffer.elem_offset.as<Var>()) {
        bind_int(var, 0, i, "the elem_offset of buffer " + buffer.name);
      }
    }
    // The storage: the span of elements that the strides reach from element 0.
    int64_t span = 1;
    for (size_t k = 0; k < arg.shape.size(); ++k) {
      span = arg.shape[k] == 0 ? 0 : span + (arg.shape[k] - 1) * strides[k];
      if (span == 0) break;
    }
    Storage storage{static_cast<uint8_t*>(arg.data), span * buffer.dtype.bytes()};
    bindings_.storages.push_back({buffer.data.get(), storage, arg.writable, what(i)});
    if (param.get() != buffer.data.get()) {
      bindings_.storages.push_back({param.get(), storage, arg.writable, what(i)});
    }
  }

  void bind_scalar(size_t i, const Var& param) {
    const Argument& arg = args_[i];
    DataType t = param.dtype;
    user_check(!t.is_handle() && t.is_scalar())
        << "tir.interpret: " << what(i) << " has dtype " << t
        << " and no buffer, which the interpreter does not support";
    type_check(arg.kind != Argument::Kind::kTensor)
        << "tir.interpret: " << what(i) << ": expected a scalar of dtype " << t
        << ", found an array";
    if (t.is_float()) {
      Lane v;
      if (arg.kind == Argument::Kind::kFloat) {
        v.f = arg.float_value;
      } else {
        v.f = static_cast<double>(arg.int_value);
      }
      v = convert(v, ScalarType{NumKind::kFloat64, 64}, scalar_type(t));
      bindings_.values.push_back({&param, v});
      known_.emplace(&param, Known{v, "scalar " + param.name});
      return;
    }
    type_check(arg.kind == Argument::Kind::kInt)
        << "tir.interpret: " << what(i) << ": expected an integer of dtype " << t
        << ", found the float " << arg.float_value;
    int64_t value = arg.int_value;
    bool fits = t.is_bool()   ? (value == 0 || value == 1)
                : t.is_uint() ? (value >= 0 && (t.bits() == 64 || value == wrap_to_dtype(value, t)))
                              : value == wrap_to_dtype(value, t);
    user_check(fits) << "tir.interpret: " << what(i) << ": the value " << value
                     << " does not fit in dtype " << t;
    bind_int(&param, value, i, "scalar " + param.name);
  }

  // Pass 2: dimensions, strides and offsets that are expressions, now that variables are bound.
  void check_tensor(size_t i, const Buffer& buffer) {
    const Argument& arg = args_[i];
    std::vector<int64_t> strides = argument_strides(arg);
    for (size_t k = 0; k < arg.shape.size(); ++k) {
      if (buffer.shape[k].is<Var>()) continue;
      int64_t expected = evaluate(buffer.shape[k], i, "dimension " + std::to_string(k));
      user_check(expected == arg.shape[k])
          << "tir.interpret: " << what(i) << ": expected shape " << shape_text(buffer)
          << ", so dimension " << k << " = " << expected << ", found shape "
          << format_list(arg.shape);
    }
    for (size_t k = 0; k < buffer.strides.size(); ++k) {
      if (buffer.strides[k].is<Var>() || arg.shape[k] <= 1) continue;
      int64_t expected = evaluate(buffer.strides[k], i, "stride " + std::to_string(k));
      user_check(expected == strides[k])
          << "tir.interpret: " << what(i) << ": expected stride "
          << (buffer.strides[k].is<IntImm>() ? "" : to_script(buffer.strides[k]) + " = ")
          << expected << " in dimension " << k << ", found strides " << format_list(strides)
          << " (in elements)";
    }
    if (buffer.elem_offset.defined() && !buffer.elem_offset.is<Var>()) {
      int64_t offset = evaluate(buffer.elem_offset, i, "elem_offset");
      user_check(offset == 0) << "tir.interpret: " << what(i) << ": the buffer's elem_offset is "
                              << offset << "; an argument must start at element 0";
    }
  }

  std::string shape_text(const Buffer& buffer) const {
    std::ostringstream os;
    os << "(";
    for (size_t k = 0; k < buffer.shape.size(); ++k) {
      os << (k > 0 ? ", " : "") << to_script(buffer.shape[k]);
      if (!buffer.shape[k].is<IntImm>()) {
        os << " = " << evaluate_quietly(buffer.shape[k]);
      }
    }
    os << ")";
    return os.str();
  }

  int64_t evaluate(const Expr& e, size_t i, const std::string& part) const {
    const Var* unbound = nullptr;
    uses_var(e, [&](const Var* v) {
      if (known_.count(v) == 0 && unbound == nullptr) unbound = v;
      return false;
    });
    user_check(unbound == nullptr)
        << "tir.interpret: " << what(i) << ": " << part << " is " << to_script(e)
        << ", whose variable " << unbound->name
        << " is bound by no parameter (a symbolic dimension must appear alone as a dimension, "
           "stride or elem_offset of some buffer, or be a scalar parameter)";
    return evaluate_quietly(e);
  }

  // Evaluates an expression of bound variables with the interpreter itself.
  int64_t evaluate_quietly(const Expr& e) const {
    Compiler compiler;
    Frame frame;
    std::vector<std::pair<int, Lane>> slots;
    for (const auto& [var, known] : known_) slots.emplace_back(compiler.bind(var), known.value);
    ExprCodePtr code = compiler.expr(e);
    frame.slots.resize(compiler.num_slots());
    for (const auto& [slot, value] : slots) frame.slots[slot] = value;
    return code->eval(frame)[0].i;
  }

  const PrimFunc& func_;
  const std::vector<Argument>& args_;
  std::unordered_map<const Var*, Known> known_;
  Bindings bindings_;
};

}  // namespace

Bindings bind_arguments(const PrimFunc& func, const std::vector<Argument>& args) {
  return ArgumentBinder(func, args).run();
}

}  // namespace kiln::interpreter
