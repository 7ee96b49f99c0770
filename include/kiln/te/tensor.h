// Tensor expressions: tensors, the operations that produce them (placeholder and compute), and
// the functions that create them. te::create_prim_func (create_prim_func.h) turns a graph of
// these operations into a TensorIR PrimFunc.
//
// Every tensor owns an ir::Buffer from the moment it is created, and indexing a tensor builds an
// ir::BufferLoad of that buffer. A compute body is therefore already TensorIR expressions over the
// compute's axis variables, and lowering needs no renaming of tensors to buffers.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/function.h"

namespace kiln::te {

using ir::Attrs;
using ir::DataType;
using ir::Expr;
using ir::IterVar;
using ir::Ref;
using ir::Var;

struct Operation;

// One output of an operation. A value type: two Tensors are equal when they name the same output
// of the same operation. The operation is shared and immutable.
struct Tensor {
  std::shared_ptr<const Operation> op;
  int value_index = 0;

  bool defined() const { return op != nullptr; }
  // The buffer that holds this tensor's values.
  const Ref<ir::Buffer>& buffer() const;
  const std::vector<Expr>& shape() const;
  DataType dtype() const;
  const std::string& name() const;
  int ndim() const;

  // this[indices...]: checks the arity and that every index is an integer. `api` names the
  // caller in errors (e.g. "Tensor.__getitem__").
  Expr operator()(std::vector<Expr> indices, const char* api = "Tensor") const;

  bool operator==(const Tensor& other) const {
    return op == other.op && value_index == other.value_index;
  }
  bool operator!=(const Tensor& other) const { return !(*this == other); }
};

// Base of the operations of a tensor-expression graph. Create them with te::placeholder and
// te::compute, which register the output buffers so that a later compute can find the tensor
// behind a buffer it loads.
struct Operation : std::enable_shared_from_this<Operation> {
  virtual ~Operation();
  std::string name;
  std::string tag;
  Attrs attrs;
  // One buffer per output, in value_index order.
  std::vector<Ref<ir::Buffer>> outputs;

  int num_outputs() const { return static_cast<int>(outputs.size()); }
  Tensor output(int index) const;
  // The tensors this operation reads, in order of first use.
  virtual std::vector<Tensor> input_tensors() const = 0;
};

// An input of the computation: a tensor whose values are given by the caller.
struct PlaceholderOp : Operation {
  std::vector<Tensor> input_tensors() const override { return {}; }
};

// A tensor defined element-wise: output[axis...] = body (one body entry per output). A body entry
// is either an expression without reductions or, for every entry alike, an ir::Reduce at the top.
struct ComputeOp : Operation {
  std::vector<IterVar> axis;         // one spatial iterator per dimension, domain [0, extent)
  std::vector<IterVar> reduce_axis;  // the axes of the top-level Reduce, if any
  std::vector<Expr> body;
  std::vector<Tensor> inputs;  // found from the body's loads when the op is created

  std::vector<Tensor> input_tensors() const override { return inputs; }
};

// Tensors computed by a statement, typically a call of an external C function (call_extern),
// that reads its inputs and writes its outputs in full through their buffers. It lowers to one
// opaque block (no iterators) whose regions are the whole input and output buffers.
struct ExternOp : Operation {
  std::vector<Tensor> inputs;
  ir::Stmt body;

  std::vector<Tensor> input_tensors() const override { return inputs; }
};

// Builds the statement of an extern op from the buffers of its inputs and of its outputs.
using ExternFunction = std::function<ir::Stmt(const std::vector<Ref<ir::Buffer>>& inputs,
                                              const std::vector<Ref<ir::Buffer>>& outputs)>;

// te.extern: one output per entry of `shapes` (of dtype `dtypes[i]`, or the buffer
// `out_buffers[i]` when given: then its shape and dtype are the output's). `fcompute` receives the
// inputs' own buffers and the output buffers; the statement it returns may use the data
// variables of those buffers (the pointers passed to C), their shapes and variables bound by the
// function's arguments, and no other buffer. A kValue error names what it found otherwise.
std::vector<Tensor> extern_op(const std::vector<std::vector<Expr>>& shapes,
                              const std::vector<DataType>& dtypes, std::vector<Tensor> inputs,
                              const ExternFunction& fcompute, std::string name = "extern",
                              std::string tag = "", Attrs attrs = {},
                              std::vector<Ref<ir::Buffer>> out_buffers = {});

// A new input tensor. Constant extents must be positive; symbolic ones (te.var) are allowed.
Tensor placeholder(std::vector<Expr> shape, DataType dtype = DataType::float32(),
                   std::string name = "placeholder");

// The spatial iterators of a compute of `shape`: one Var per dimension named from `names`
// (defaults i, j, k, l, m, n, then i6, i7, …) with domain [0, extent). Checks the shape: integer
// extents, positive when constant. `api` and `op_name` are named in errors.
std::vector<IterVar> compute_axes(const std::vector<Expr>& shape,
                                  const std::vector<std::string>& names, const char* api,
                                  const std::string& op_name);

// The compute op over `axis` whose outputs are `body` (several entries only for a tuple
// reduction). Checks the body: a reduction only at the top, reduce axes only inside their
// reduction, loads only of te tensors. Returns one tensor per output.
std::vector<Tensor> compute_from_body(std::vector<IterVar> axis, std::vector<Expr> body,
                                      std::string name = "compute", std::string tag = "",
                                      Attrs attrs = {});

// Builds a body from the axis variables of `shape`.
using ComputeFunction = std::function<Expr(const std::vector<Ref<Var>>&)>;

// A single-output compute: out[i, j, …] = fcompute({i, j, …}).
Tensor compute(std::vector<Expr> shape, const ComputeFunction& fcompute,
               std::string name = "compute", std::string tag = "", Attrs attrs = {});

// The tensor whose buffer is `buffer`, or an undefined Tensor when no live te operation owns it.
Tensor tensor_of_buffer(const ir::Buffer* buffer);

}  // namespace kiln::te
