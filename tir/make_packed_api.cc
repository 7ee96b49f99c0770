// make_packed_api: binds a PrimFunc's parameters to the packed arguments of the runtime's
// calling convention and records the function's argument spec for the module manifest.
#include "kiln/tir/make_packed_api.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/tir/index_limits.h"
#include "kiln/tir/nontemporal.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

using Json = nlohmann::ordered_json;

Expr packed_call(DataType dtype, Builtin op, std::vector<Expr> args) {
  return call(dtype, op, std::move(args));
}

// The data variables of the buffers `body` may store into: the buffer of every BufferStore, and,
// to be safe, every buffer whose address or handle reaches a call with side effects (an extern
// function may write through a pointer). A handle variable bound by a Let or LetStmt to an
// expression of other handles stands for those: a store through it writes them.
std::unordered_set<const Var*> written_data_vars(const Stmt& body) {
  std::unordered_map<const Var*, std::vector<const Var*>> derived_from;
  std::vector<const Var*> written;
  auto handles_in = [](const Expr& e, std::vector<const Var*>* out) {
    post_order_visit(e, [&](const Node* node) {
      if (node->kind() == NodeKind::Var && static_cast<const Var*>(node)->dtype.is_handle()) {
        out->push_back(static_cast<const Var*>(node));
      }
      if (node->kind() == NodeKind::Call &&
          static_cast<const Call*>(node)->op == Builtin::AddressOf) {
        const Call* call = static_cast<const Call*>(node);
        if (const auto* load = call->args[0].as<BufferLoad>())
          out->push_back(load->buffer->data.get());
      }
    });
  };
  post_order_visit(body, [&](const Node* node) {
    switch (node->kind()) {
      case NodeKind::BufferStore:
        written.push_back(static_cast<const BufferStore*>(node)->buffer->data.get());
        break;
      case NodeKind::LetStmt: {
        const auto* let = static_cast<const LetStmt*>(node);
        if (let->var->dtype.is_handle()) handles_in(let->value, &derived_from[let->var.get()]);
        break;
      }
      case NodeKind::Let: {
        const auto* let = static_cast<const Let*>(node);
        if (let->var->dtype.is_handle()) handles_in(let->value, &derived_from[let->var.get()]);
        break;
      }
      case NodeKind::Call: {
        const auto* call = static_cast<const Call*>(node);
        if (builtin_is_pure(call->op)) break;
        for (const Expr& arg : call->args) handles_in(arg, &written);
        break;
      }
      default:
        break;
    }
  });
  // Every variable a written handle derives from is written too.
  std::unordered_set<const Var*> result;
  while (!written.empty()) {
    const Var* var = written.back();
    written.pop_back();
    if (!result.insert(var).second) continue;
    auto it = derived_from.find(var);
    if (it != derived_from.end())
      written.insert(written.end(), it->second.begin(), it->second.end());
  }
  return result;
}

// The data variables of the parameters whose stores stream under a loop annotated
// kNontemporalAnnotation (streamed_buffers: buffers the function allocates never stream).
std::unordered_set<const Var*> streamed_params(const PrimFunc& func) {
  std::unordered_set<const Var*> params;
  for (const auto& entry : func.buffer_map) params.insert(entry.second->data.get());
  auto is_allocated = [&](const Var* data) { return params.count(data) == 0; };
  std::unordered_set<const Var*> streamed;
  post_order_visit(func.body, [&](const Node* node) {
    if (node->kind() != NodeKind::For) return;
    for (const Var* data : streamed_buffers(*static_cast<const For*>(node), is_allocated)) {
      streamed.insert(data);
    }
  });
  return streamed;
}

class PackedApiBuilder {
 public:
  PackedApiBuilder(const PrimFunc& func, std::string name, std::string symbol)
      : func_(func),
        name_(std::move(name)),
        symbol_(std::move(symbol)),
        written_(written_data_vars(func.body)),
        streamed_(streamed_params(func)) {}

  // Step 1. Bind every parameter and build its spec entry.
  void set_device(const std::string& device) { device_ = device; }

  void bind_params() {
    // Dimensions bind first, so that a scalar parameter that is also a dimension takes the
    // value of the (runtime-checked) dimension.
    for (size_t i = 0; i < func_.params.size(); ++i) {
      if (Ref<Buffer> buffer = func_.buffer_of(func_.params[i])) bind_tensor(i, *buffer);
    }
    for (size_t i = 0; i < func_.params.size(); ++i) {
      if (!func_.buffer_of(func_.params[i])) bind_scalar(i, func_.params[i]);
    }
  }

  // Step 2. Every variable the body needs must now be bound.
  void check_free_vars(const Stmt& body) const {
    for (const Var* v : free_vars(body)) {
      user_check(bound_.count(v) > 0)
          << "make_packed_api: function " << name_ << " uses the variable " << v->name
          << ", which is neither a parameter nor a dimension of a tensor parameter";
    }
  }

  // Step 3. The body under the bindings, in parameter order.
  Stmt wrap(Stmt body) const {
    for (auto it = lets_.rbegin(); it != lets_.rend(); ++it) {
      body = make<LetStmt>(it->var, it->value, body);
    }
    return body;
  }

  std::string spec() const {
    Json j;
    j["name"] = name_;
    j["symbol"] = symbol_;
    j["sym_vars"] = sym_var_names_;
    j["sym_var_dtypes"] = sym_var_dtypes_;
    if (limit_ < std::numeric_limits<int32_t>::max()) {
      Json max = Json::array();
      for (const Ref<Var>& v : sym_vars_) {
        max.push_back(v->dtype.bits() <= 32 ? Json(limit_) : Json(nullptr));
      }
      j["sym_var_max"] = max;
    }
    j["args"] = Json(args_);
    return j.dump();
  }

  // Step 4. The largest value the int32 symbolic dimensions may take (index_limits.h).
  void limit_symbolic(const Stmt& body) { limit_ = int32_symbolic_limit(body, sym_vars_); }

 private:
  struct Binding {
    size_t param;  // bindings are emitted in parameter order
    Ref<Var> var;
    Expr value;
  };

  void add_binding(size_t param, const Ref<Var>& var, Expr value) {
    bound_.insert(var.get());
    Binding b{param, var, std::move(value)};
    auto pos = lets_.end();
    while (pos != lets_.begin() && (pos - 1)->param > param) --pos;
    lets_.insert(pos, std::move(b));
  }

  std::string describe(size_t i, const std::string& what) const {
    return "make_packed_api: function " + name_ + ", parameter " + std::to_string(i) + " (" + what +
           ")";
  }

  // A spec entry of a dimension or stride: its constant value or its variable's name.
  Json dimension(const Expr& e, size_t i, const Buffer& buffer, const char* what, size_t k,
                 bool binds) {
    if (const int64_t* c = as_const_int(e)) return *c;
    const auto* v = e.as<Var>();
    user_check(v != nullptr) << describe(i, buffer.name) << ": " << what << " " << k << " is "
                             << to_script(e)
                             << "; argument specs allow only constants and variables";
    auto it = sym_var_index_.find(v);
    if (it != sym_var_index_.end()) return sym_var_names_[it->second];
    user_check(binds) << describe(i, buffer.name) << ": stride " << k << " is the variable "
                      << v->name << ", which is not a dimension of a tensor parameter";
    std::string unique = v->name;
    for (int n = 1; used_names_.count(unique) > 0; ++n) unique = v->name + "_" + std::to_string(n);
    used_names_.insert(unique);
    sym_var_index_[v] = sym_var_names_.size();
    sym_var_names_.push_back(unique);
    sym_var_dtypes_.push_back(v->dtype.str());
    sym_vars_.push_back(Ref<Var>(v));
    Expr value = packed_call(DataType::int64(), Builtin::PackedArgShape,
                             {int32_const(static_cast<int64_t>(i)), int32_const(k)});
    add_binding(i, Ref<Var>(v), cast(v->dtype, value));
    return unique;
  }

  void bind_tensor(size_t i, const Buffer& buffer) {
    user_check(!buffer.elem_offset.defined() || is_const_int(buffer.elem_offset, 0))
        << describe(i, buffer.name) << ": the element offset " << to_script(buffer.elem_offset)
        << " is not zero; pass a view of the tensor instead";
    add_binding(i, buffer.data,
                packed_call(DataType::handle(), Builtin::PackedArgData,
                            {int32_const(static_cast<int64_t>(i))}));
    Json shape = Json::array();
    for (size_t k = 0; k < buffer.shape.size(); ++k) {
      shape.push_back(dimension(buffer.shape[k], i, buffer, "dimension", k, true));
    }
    Json strides = nullptr;
    if (!buffer.strides.empty()) {
      strides = Json::array();
      for (size_t k = 0; k < buffer.strides.size(); ++k) {
        strides.push_back(dimension(buffer.strides[k], i, buffer, "stride", k, false));
      }
    }
    Json arg;
    arg["name"] = buffer.name;
    arg["kind"] = "tensor";
    arg["dtype"] = buffer.dtype.str();
    arg["ndim"] = buffer.ndim();
    arg["shape"] = shape;
    arg["strides"] = strides;
    arg["device"] = device_;
    // A CUDA tensor's data is a device address, aligned as kiln's CUDA kernels assume; an
    // OpenCL tensor's is a cl_mem handle, no address at all (OpenCL kernels assume only the
    // element's alignment of a buffer's data).
    int alignment = 1;
    if (device_ == "cpu") alignment = buffer.alignment();
    if (device_ == "cuda") alignment = std::max(buffer.alignment(), kCudaTensorAlignment);
    arg["alignment"] = alignment;
    arg["written"] = written_.count(buffer.data.get()) > 0;
    // The LLVM code generator streams these stores only when the data is this aligned.
    if (device_ == "cpu" && streamed_.count(buffer.data.get()) > 0) {
      arg["streaming_alignment"] = kStreamingAlignment;
    }
    args_[i] = arg;
  }

  void bind_scalar(size_t i, const Ref<Var>& var) {
    DataType t = var->dtype;
    user_check(t.is_scalar() && (t.is_integer() || t.is_bool() || t.is_float()))
        << describe(i, var->name) << ": a scalar parameter must be an integer, bool or float, "
        << "found dtype " << t;
    if (bound_.count(var.get()) == 0) {
      Expr index = int32_const(static_cast<int64_t>(i));
      Expr value = t.is_float() ? packed_call(DataType::float64(), Builtin::PackedArgFloat, {index})
                                : packed_call(DataType::int64(), Builtin::PackedArgInt, {index});
      add_binding(i, var, cast(t, value));
    }
    Json arg;
    arg["name"] = var->name;
    arg["kind"] = "scalar";
    arg["dtype"] = t.str();
    args_[i] = arg;
  }

  const PrimFunc& func_;
  std::string name_, symbol_;
  std::string device_ = "cpu";
  std::vector<Binding> lets_;
  std::unordered_set<const Var*> bound_;
  std::unordered_map<const Var*, size_t> sym_var_index_;
  std::vector<std::string> sym_var_names_;
  std::vector<std::string> sym_var_dtypes_;
  std::vector<Ref<Var>> sym_vars_;
  int64_t limit_ = std::numeric_limits<int32_t>::max();
  std::unordered_set<std::string> used_names_;
  std::unordered_set<const Var*> written_;
  std::unordered_set<const Var*> streamed_;
  std::vector<Json> args_ = std::vector<Json>(func_.params.size());
};

}  // namespace

Ref<PrimFunc> make_packed_api(const Ref<PrimFunc>& func, const std::string& name,
                              const std::string& device) {
  if (func->attrs.count("kiln.packed") > 0) return func;
  std::string symbol = "kiln_unchecked_" + name;
  if (auto it = func->attrs.find("global_symbol"); it != func->attrs.end()) {
    const auto* s = it->second.as<StringImm>();
    user_check(s != nullptr) << "make_packed_api: function " << name
                             << ": the attribute global_symbol must be a string, found "
                             << to_script(it->second);
    symbol = s->value;
  }
  PackedApiBuilder builder(*func, name, symbol);
  builder.set_device(device);
  builder.bind_params();
  builder.check_free_vars(func->body);
  builder.limit_symbolic(func->body);
  auto result = copy(func.get());
  result->body = builder.wrap(func->body);
  result->attrs["global_symbol"] = make<StringImm>(symbol);
  result->attrs["kiln.packed"] = bool_const(true);
  result->attrs["kiln.noalias"] = bool_const(true);
  result->attrs["kiln.arg_spec"] = make<StringImm>(builder.spec());
  return result;
}

}  // namespace kiln::tir
