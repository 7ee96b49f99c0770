// Tensors, placeholders and computes: creation, the checks of shapes and compute bodies, and the
// table that finds the tensor behind a buffer a compute body loads.
#include "kiln/te/tensor.h"

#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"
#include "kiln/te/reduction.h"

namespace kiln::te {

using namespace kiln::ir;

namespace {

// Buffers of live operations to their producer. An operation removes its entries when it dies,
// and it holds its buffers until then, so a key is never a reused address.
struct ProducerTable {
  std::mutex mutex;
  std::unordered_map<const Buffer*, std::pair<std::weak_ptr<const Operation>, int>> entries;
};

ProducerTable& producer_table() {
  // Never destroyed: operations may die during static destruction at exit.
  static ProducerTable* table = new ProducerTable();
  return *table;
}

void register_outputs(const std::shared_ptr<Operation>& op) {
  ProducerTable& table = producer_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  for (int i = 0; i < op->num_outputs(); ++i) {
    table.entries[op->outputs[i].get()] = {std::weak_ptr<const Operation>(op), i};
  }
}

const char* plural(size_t n, const char* one, const char* many) {
  return n == 1 ? one : many;
}

// Checks a shape: scalar integer extents, positive when constant.
void check_shape(const std::vector<Expr>& shape, const char* api, const std::string& name) {
  for (size_t d = 0; d < shape.size(); ++d) {
    internal_check(shape[d].defined()) << api << ": null extent in the shape of " << name;
    type_check(shape[d]->dtype.is_integer() && shape[d]->dtype.is_scalar())
        << api << ": dimension " << d << " of " << name
        << " must have an integer extent, found dtype " << shape[d]->dtype;
    if (const int64_t* c = as_const_int(shape[d])) {
      user_check(*c > 0) << api << ": dimension " << d << " of " << name << " has extent " << *c
                         << "; extents must be positive";
    }
  }
}

std::string default_axis_name(size_t d) {
  static const char* const kNames[] = {"i", "j", "k", "l", "m", "n"};
  if (d < 6) return kNames[d];
  return "i" + std::to_string(d);
}

bool contains_reduce(const Expr& e) {
  bool found = false;
  post_order_visit(e, [&](const Node* n) { found = found || n->kind() == NodeKind::Reduce; });
  return found;
}

// The first reduce-axis variable in `e` for which `allowed` is false, or null.
const Var* stray_reduce_var(const Expr& e, const std::function<bool(const Var*)>& allowed) {
  const Var* stray = nullptr;
  post_order_visit(e, [&](const Node* n) {
    if (stray != nullptr || n->kind() != NodeKind::Var) return;
    const auto* v = static_cast<const Var*>(n);
    if (is_reduce_axis_var(v) && !allowed(v)) stray = v;
  });
  return stray;
}

// Step 2 of compute_from_body for a body of reductions: every entry is one output of the same
// tuple reduction.
void check_reduction_body(const std::vector<Expr>& body, const std::string& name) {
  const auto* first = body[0].as<Reduce>();
  size_t components = first->combiner->result.size();
  user_check(body.size() == components)
      << "te.compute: compute " << name << " returns " << body.size() << " "
      << plural(body.size(), "reduction", "reductions") << " of a reducer with " << components
      << " components; return all " << components
      << " outputs of the reducer call (as a tuple) so that every component is stored";
  for (size_t i = 0; i < body.size(); ++i) {
    const auto* r = body[i].as<Reduce>();
    user_check(r != nullptr) << "te.compute: output " << i << " of compute " << name
                             << " is not a reduction while output 0 is; a reduction must be the "
                                "whole body of a compute (compute it in its own te.compute)";
    bool same = r->combiner.same_as(first->combiner) && r->condition.same_as(first->condition) &&
                r->source.size() == first->source.size() && r->init.size() == first->init.size() &&
                r->axis.size() == first->axis.size() && r->value_index == static_cast<int>(i);
    for (size_t k = 0; same && k < r->source.size(); ++k) same = r->source[k] == first->source[k];
    for (size_t k = 0; same && k < r->init.size(); ++k) same = r->init[k] == first->init[k];
    for (size_t k = 0; same && k < r->axis.size(); ++k) same = r->axis[k].var == first->axis[k].var;
    user_check(same) << "te.compute: outputs 0 and " << i << " of compute " << name
                     << " are different reductions; the outputs of a multi-output reduction must "
                        "be the components of one tuple reducer call, in order";
  }
  std::unordered_set<const Var*> axis_vars;
  for (const IterVar& iv : first->axis) axis_vars.insert(iv.var.get());
  std::vector<Expr> parts = first->source;
  parts.insert(parts.end(), first->init.begin(), first->init.end());
  parts.push_back(first->condition);
  for (const Expr& part : parts) {
    user_check(!contains_reduce(part))
        << "te.compute: compute " << name
        << " nests a reduction inside another reduction; compute the inner reduction in its own "
           "te.compute and use that tensor";
    const Var* stray = stray_reduce_var(part, [&](const Var* v) { return axis_vars.count(v) > 0; });
    user_check(stray == nullptr)
        << "te.compute: compute " << name << " uses reduce axis " << stray->name
        << " in a reduction that is not over it; add it to the reduction's axis list";
  }
}

// Step 2 of compute_from_body for a body without reductions at the top.
void check_plain_body(const std::vector<Expr>& body, const std::string& name) {
  for (size_t i = 0; i < body.size(); ++i) {
    user_check(!body[i].is<Reduce>())
        << "te.compute: output " << i << " of compute " << name
        << " is a reduction while output 0 is not; a multi-output compute returns either "
           "all the components of one tuple reducer call or no reduction";
    user_check(!contains_reduce(body[i]))
        << "te.compute: compute " << name
        << " has a reduction inside an expression (the body's top node is "
        << kind_name(body[i]->kind())
        << "); a reduction must be the whole body of a compute: compute it in its own "
           "te.compute and use that tensor";
    const Var* stray = stray_reduce_var(body[i], [](const Var*) { return false; });
    user_check(stray == nullptr)
        << "te.compute: compute " << name << " uses reduce axis " << stray->name
        << " outside a reduction; use it inside te.sum / te.max / te.min / te.prod (axis="
        << stray->name << ") or a te.comm_reducer";
  }
}

// Step 3 of compute_from_body: the tensors behind the buffers the body loads.
std::vector<Tensor> find_inputs(const std::vector<Expr>& body, const std::string& name) {
  std::vector<Tensor> inputs;
  std::unordered_set<const Buffer*> seen;
  for (const Expr& e : body) {
    post_order_visit(e, [&](const Node* n) {
      if (n->kind() != NodeKind::BufferLoad) return;
      const Buffer* buffer = static_cast<const BufferLoad*>(n)->buffer.get();
      if (!seen.insert(buffer).second) return;
      Tensor t = tensor_of_buffer(buffer);
      user_check(t.defined()) << "te.compute: compute " << name << " loads buffer " << buffer->name
                              << ", which is not the buffer of a te tensor; index a tensor made "
                                 "by te.placeholder or te.compute";
      inputs.push_back(t);
    });
  }
  return inputs;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Tensor and Operation

const Ref<Buffer>& Tensor::buffer() const {
  internal_check(defined()) << "te.Tensor: undefined tensor";
  return op->outputs[value_index];
}

const std::vector<Expr>& Tensor::shape() const {
  return buffer()->shape;
}

DataType Tensor::dtype() const {
  return buffer()->dtype;
}

const std::string& Tensor::name() const {
  return buffer()->name;
}

int Tensor::ndim() const {
  return buffer()->ndim();
}

Expr Tensor::operator()(std::vector<Expr> indices, const char* api) const {
  const Buffer& b = *buffer();
  index_check(static_cast<int>(indices.size()) == b.ndim())
      << api << ": tensor " << b.name << " has " << b.ndim() << " "
      << plural(b.ndim(), "dimension", "dimensions") << " but " << indices.size() << " "
      << plural(indices.size(), "index was", "indices were") << " given"
      << (indices.size() < static_cast<size_t>(b.ndim())
              ? "; index every dimension at once, as in A[i, j] (not A[i][j])"
              : "");
  for (size_t i = 0; i < indices.size(); ++i) {
    internal_check(indices[i].defined()) << api << ": null index";
    type_check(indices[i]->dtype.is_integer())
        << api << ": index " << i << " of tensor " << b.name
        << " must be an integer expression, found dtype " << indices[i]->dtype;
  }
  return buffer_load(buffer(), std::move(indices));
}

Operation::~Operation() {
  ProducerTable& table = producer_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  for (const Ref<Buffer>& b : outputs) table.entries.erase(b.get());
}

Tensor Operation::output(int index) const {
  index_check(index >= 0 && index < num_outputs())
      << "te.Operation.output: operation " << name << " has " << num_outputs() << " "
      << plural(num_outputs(), "output", "outputs") << ", index " << index << " is out of range";
  return Tensor{shared_from_this(), index};
}

Tensor tensor_of_buffer(const Buffer* buffer) {
  ProducerTable& table = producer_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto it = table.entries.find(buffer);
  if (it == table.entries.end()) return Tensor{};
  return Tensor{it->second.first.lock(), it->second.second};
}

// ---------------------------------------------------------------------------------------------
// Creation

Tensor placeholder(std::vector<Expr> shape, DataType dtype, std::string name) {
  check_shape(shape, "te.placeholder", name);
  type_check(!dtype.is_handle() && !dtype.is_void() && dtype.is_scalar())
      << "te.placeholder: tensor " << name << " must have a scalar numeric dtype, found " << dtype;
  auto op = std::make_shared<PlaceholderOp>();
  op->name = name;
  op->outputs.push_back(decl_buffer(std::move(shape), dtype, std::move(name)));
  register_outputs(op);
  return Tensor{op, 0};
}

std::vector<IterVar> compute_axes(const std::vector<Expr>& shape,
                                  const std::vector<std::string>& names, const char* api,
                                  const std::string& op_name) {
  check_shape(shape, api, op_name);
  internal_check(names.empty() || names.size() == shape.size())
      << api << ": " << names.size() << " axis names for " << shape.size() << " dimensions";
  std::vector<IterVar> axis;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string var_name = names.empty() ? default_axis_name(d) : names[d];
    Ref<Var> v = make_var(var_name, shape[d]->dtype);
    axis.push_back(IterVar{v, Range{make_zero(shape[d]->dtype), shape[d]}, IterType::kDataPar});
  }
  return axis;
}

std::vector<Tensor> compute_from_body(std::vector<IterVar> axis, std::vector<Expr> body,
                                      std::string name, std::string tag, Attrs attrs) {
  // Step 1. Every output has a value of a storable type.
  user_check(!body.empty()) << "te.compute: fcompute of compute " << name
                            << " returned no value; return an expression or a tuple of them";
  for (size_t i = 0; i < body.size(); ++i) {
    internal_check(body[i].defined()) << "te.compute: null body entry " << i;
    type_check(!body[i]->dtype.is_handle() && !body[i]->dtype.is_void() &&
               body[i]->dtype.is_scalar())
        << "te.compute: output " << i << " of compute " << name
        << " must be a scalar number, found an expression of dtype " << body[i]->dtype;
  }
  // Step 2. A reduction is the whole body or absent; reduce axes stay inside their reduction.
  auto op = std::make_shared<ComputeOp>();
  if (body[0].is<Reduce>()) {
    check_reduction_body(body, name);
    op->reduce_axis = body[0].as<Reduce>()->axis;
    std::unordered_set<const Var*> spatial;
    for (const IterVar& iv : axis) spatial.insert(iv.var.get());
    for (const IterVar& rv : op->reduce_axis) {
      bool uses_spatial = uses_var(rv.dom.min, [&](const Var* v) { return spatial.count(v); }) ||
                          uses_var(rv.dom.extent, [&](const Var* v) { return spatial.count(v); });
      user_check(!uses_spatial)
          << "te.compute: the range of reduce axis " << rv.var->name << " in compute " << name
          << " depends on an axis of the compute; reduce-axis ranges must not depend on the "
             "output index (guard the reduction with where= instead)";
    }
  } else {
    check_plain_body(body, name);
  }
  // Step 3. The tensors read and the output buffers.
  op->inputs = find_inputs(body, name);
  std::vector<Expr> shape;
  for (const IterVar& iv : axis) shape.push_back(iv.dom.extent);
  for (size_t i = 0; i < body.size(); ++i) {
    std::string buffer_name = body.size() == 1 ? name : name + "_v" + std::to_string(i);
    op->outputs.push_back(decl_buffer(shape, body[i]->dtype, buffer_name));
  }
  op->name = std::move(name);
  op->tag = std::move(tag);
  op->attrs = std::move(attrs);
  op->axis = std::move(axis);
  op->body = std::move(body);
  register_outputs(op);
  std::vector<Tensor> tensors;
  for (int i = 0; i < op->num_outputs(); ++i) tensors.push_back(Tensor{op, i});
  return tensors;
}

Tensor compute(std::vector<Expr> shape, const ComputeFunction& fcompute, std::string name,
               std::string tag, Attrs attrs) {
  std::vector<IterVar> axis = compute_axes(shape, {}, "te.compute", name);
  std::vector<Ref<Var>> vars;
  for (const IterVar& iv : axis) vars.push_back(iv.var);
  Expr value = fcompute(vars);
  std::vector<Tensor> outputs = compute_from_body(std::move(axis), {value}, std::move(name),
                                                  std::move(tag), std::move(attrs));
  return outputs[0];
}

std::vector<Tensor> extern_op(const std::vector<std::vector<Expr>>& shapes,
                              const std::vector<DataType>& dtypes, std::vector<Tensor> inputs,
                              const ExternFunction& fcompute, std::string name, std::string tag,
                              Attrs attrs, std::vector<Ref<Buffer>> out_buffers) {
  // Step 1. The output buffers: given, or declared from the shapes and dtypes.
  user_check(!shapes.empty() || !out_buffers.empty())
      << "te.extern: extern " << name << " has no output; give at least one shape";
  user_check(out_buffers.empty() || shapes.empty() || out_buffers.size() == shapes.size())
      << "te.extern: extern " << name << " has " << shapes.size() << " output "
      << plural(shapes.size(), "shape", "shapes") << " but " << out_buffers.size()
      << " out_buffers";
  size_t num_outputs = out_buffers.empty() ? shapes.size() : out_buffers.size();
  user_check(out_buffers.size() == num_outputs || dtypes.size() == num_outputs)
      << "te.extern: extern " << name << " has " << num_outputs << " "
      << plural(num_outputs, "output", "outputs") << " but " << dtypes.size() << " "
      << plural(dtypes.size(), "dtype", "dtypes");
  auto op = std::make_shared<ExternOp>();
  for (size_t i = 0; i < num_outputs; ++i) {
    if (!out_buffers.empty()) {
      const Ref<Buffer>& b = out_buffers[i];
      user_check(b.defined()) << "te.extern: out_buffers[" << i << "] of extern " << name
                              << " is None";
      op->outputs.push_back(b);
      continue;
    }
    check_shape(shapes[i], "te.extern", name);
    type_check(!dtypes[i].is_handle() && !dtypes[i].is_void() && dtypes[i].is_scalar())
        << "te.extern: output " << i << " of extern " << name
        << " must have a scalar numeric dtype, found " << dtypes[i];
    std::string buffer_name = num_outputs == 1 ? name : name + "_v" + std::to_string(i);
    op->outputs.push_back(decl_buffer(shapes[i], dtypes[i], buffer_name));
  }
  std::vector<Ref<Buffer>> input_buffers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    user_check(inputs[i].defined())
        << "te.extern: input " << i << " of extern " << name << " is an undefined tensor";
    input_buffers.push_back(inputs[i].buffer());
  }
  // Step 2. The statement, and the buffers it may touch: its inputs' and outputs'.
  Stmt body = fcompute(input_buffers, op->outputs);
  user_check(body.defined()) << "te.extern: fcompute of extern " << name
                             << " returned no statement";
  std::unordered_set<const Var*> data_vars;
  std::unordered_set<const Buffer*> buffers;
  for (const auto* list : {&input_buffers, &op->outputs}) {
    for (const Ref<Buffer>& b : *list) {
      data_vars.insert(b->data.get());
      buffers.insert(b.get());
    }
  }
  post_order_visit(body, [&](const Node* n) {
    if (n->kind() == NodeKind::Var) {
      const auto* v = static_cast<const Var*>(n);
      user_check(!v->dtype.is_handle() || data_vars.count(v))
          << "te.extern: the statement of extern " << name << " uses the pointer " << v->name
          << ", which is the data of neither an input nor an output buffer";
    }
    const Buffer* touched = nullptr;
    if (n->kind() == NodeKind::BufferLoad)
      touched = static_cast<const BufferLoad*>(n)->buffer.get();
    if (n->kind() == NodeKind::BufferStore) {
      touched = static_cast<const BufferStore*>(n)->buffer.get();
    }
    user_check(touched == nullptr || buffers.count(touched))
        << "te.extern: the statement of extern " << name << " accesses buffer " << touched->name
        << ", which is neither an input nor an output";
  });
  // Step 3. The op.
  op->inputs = std::move(inputs);
  op->body = std::move(body);
  op->name = std::move(name);
  op->tag = std::move(tag);
  op->attrs = std::move(attrs);
  register_outputs(op);
  std::vector<Tensor> tensors;
  for (int i = 0; i < op->num_outputs(); ++i) tensors.push_back(Tensor{op, i});
  return tensors;
}

}  // namespace kiln::te
