// Python bindings of tensor expressions (module kiln._kiln.te): Tensor and its operations,
// placeholder, reduce axes and reducers, the math and arithmetic helpers of te, and
// create_prim_func. The kiln.te package adds the parts that need Python itself (te.compute's
// reading of fcompute's parameter names, te.comm_reducer) on top of these.
#include <pybind11/stl.h>

#include "bindings.h"
#include "convert.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"
#include "kiln/te/create_prim_func.h"
#include "kiln/te/reduction.h"
#include "kiln/te/tensor.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::ir;
using te::Operation;
using te::Tensor;

namespace {

// One index of Tensor.__getitem__, with the errors a TE user most often needs.
Expr to_index(py::handle obj, const Tensor& tensor, size_t position) {
  const char* api = "Tensor.__getitem__";
  if (py::isinstance<py::float_>(obj)) {
    user_error(ErrorKind::kType) << api << ": index " << position << " of tensor " << tensor.name()
                                 << " must be an integer, found the Python float "
                                 << py::str(obj).cast<std::string>();
  }
  type_check(!py::isinstance<py::slice>(obj))
      << api << ": index " << position << " of tensor " << tensor.name()
      << " is a slice; tensor expressions index one element, e.g. A[i, j]";
  type_check(!py::isinstance<Tensor>(obj))
      << api << ": index " << position << " of tensor " << tensor.name()
      << " is a tensor; index it first, e.g. A[B[i]]";
  return to_expr(obj, api, "an index");
}

Expr index_tensor(const Tensor& self, py::handle index) {
  std::vector<Expr> indices;
  if (py::isinstance<py::tuple>(index)) {
    size_t position = 0;
    for (py::handle i : index) indices.push_back(to_index(i, self, position++));
  } else {
    indices.push_back(to_index(index, self, 0));
  }
  return self(std::move(indices), "Tensor.__getitem__");
}

// A math argument: a Python number becomes a float32 constant.
Expr math_arg(py::handle obj, const char* api) {
  if (!py::isinstance<ExprNode>(obj) && !py::hasattr(obj, "_as_expr") &&
      (py::isinstance<py::int_>(obj) || py::isinstance<py::float_>(obj))) {
    return make_const(DataType::float32(), obj.cast<double>());
  }
  return to_expr(obj, api, "the argument");
}

bool is_expr_like(py::handle obj) {
  return py::isinstance<ExprNode>(obj) || py::hasattr(obj, "_as_expr");
}

// Two operands where a Python number takes the other operand's type (kiln/ir/op.h literals).
std::pair<Expr, Expr> two_operands(py::handle a, py::handle b, const char* api) {
  if (is_expr_like(a)) {
    Expr ea = to_expr(a, api, "the first operand");
    return {ea, to_expr_like(b, ea, api)};
  }
  if (is_expr_like(b)) {
    Expr eb = to_expr(b, api, "the second operand");
    return {to_expr_like(a, eb, api), eb};
  }
  return {to_expr(a, api, "the first operand"), to_expr(b, api, "the second operand")};
}

// The reduce axes of a reducer call: one IterVar or a list of them.
std::vector<IterVar> to_axis_list(py::handle obj, const char* api) {
  std::vector<IterVar> axis;
  auto fail =
      [&](py::handle item) {
        user_error(ErrorKind::kType)
            << api << ": axis must be a reduce axis (te.reduce_axis) or a list of them, found an "
            << "object of type " << python_type_name(item);
      };
  if (py::isinstance<IterVar>(obj)) return {obj.cast<IterVar>()};
  if (!(py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj))) fail(obj);
  for (py::handle item : obj) {
    if (!py::isinstance<IterVar>(item)) fail(item);
    axis.push_back(item.cast<IterVar>());
  }
  return axis;
}

Expr optional_expr(py::handle obj, const char* api, const char* what) {
  if (obj.is_none()) return nullptr;
  return to_expr(obj, api, what);
}

Range to_range(py::handle dom, const char* api) {
  if (py::isinstance<Range>(dom)) return dom.cast<Range>();
  if ((py::isinstance<py::tuple>(dom) || py::isinstance<py::list>(dom)) && py::len(dom) == 2) {
    py::sequence s = py::reinterpret_borrow<py::sequence>(dom);
    auto [lo, hi] = two_operands(s[0], s[1], api);
    return Range{lo, sub(hi, lo)};
  }
  user_error(ErrorKind::kType) << api
                               << ": dom must be a (begin, end) tuple or a tir.Range, found an "
                                  "object of type "
                               << python_type_name(dom);
}

Attrs to_attrs(py::handle obj, const char* api) {
  Attrs attrs;
  if (obj.is_none()) return attrs;
  type_check(py::isinstance<py::dict>(obj))
      << api << ": attrs must be a dict, found an object of type " << python_type_name(obj);
  for (auto [key, value] : py::reinterpret_borrow<py::dict>(obj)) {
    attrs[py::str(key).cast<std::string>()] = to_attr_value(value, api);
  }
  return attrs;
}

py::object attrs_to_dict(const Attrs& attrs) {
  py::dict d;
  for (const auto& [k, v] : attrs) d[py::str(k)] = from_attr_value(v);
  return d;
}

std::shared_ptr<Operation> op_of(const Tensor& t) {
  return std::const_pointer_cast<Operation>(t.op);
}

std::string tensor_repr(const Tensor& t) {
  std::string shape;
  for (const Expr& e : t.shape()) {
    if (!shape.empty()) shape += ", ";
    if (const int64_t* c = as_const_int(e)) {
      shape += std::to_string(*c);
    } else if (const auto* v = e.as<Var>()) {
      shape += v->name;
    } else {
      shape += "?";
    }
  }
  if (t.ndim() == 1) shape += ",";
  return "Tensor(name=" + t.name() + ", shape=(" + shape + "), dtype=" + t.dtype().str() + ")";
}

void bind_math(py::module_& m) {
  struct Unary {
    const char* name;
    Builtin op;
    const char* what;  // the first line of the docstring
  };
  static const Unary kUnary[] = {
      {"exp", Builtin::Exp, "e to the power x"},
      {"exp2", Builtin::Exp2, "2 to the power x"},
      {"log", Builtin::Log, "The natural logarithm of x"},
      {"log2", Builtin::Log2, "The base-2 logarithm of x"},
      {"log1p", Builtin::Log1p, "log(1 + x), accurate for x near 0"},
      {"sqrt", Builtin::Sqrt, "The square root of x"},
      {"rsqrt", Builtin::Rsqrt, "1 / sqrt(x)"},
      {"sin", Builtin::Sin, "The sine of x (radians)"},
      {"cos", Builtin::Cos, "The cosine of x (radians)"},
      {"tan", Builtin::Tan, "The tangent of x (radians)"},
      {"tanh", Builtin::Tanh, "The hyperbolic tangent of x"},
      {"sigmoid", Builtin::Sigmoid, "1 / (1 + exp(-x))"},
      {"erf", Builtin::Erf, "The error function of x"},
      {"abs", Builtin::Abs, "The absolute value of x (ints too)"},
      {"floor", Builtin::Floor, "The largest integer value not above x"},
      {"ceil", Builtin::Ceil, "The smallest integer value not below x"},
      {"round", Builtin::Round, "x rounded to the nearest integer value, ties to even"},
      {"trunc", Builtin::Trunc, "x rounded toward zero"},
      {"isnan", Builtin::IsNan, "Whether x is NaN (a bool expression)"},
  };
  for (const Unary& u : kUnary) {
    std::string api = std::string("te.") + u.name;
    Builtin op = u.op;
    std::string result = op == Builtin::IsNan ? "is a bool" : "has x's dtype";
    std::string doc = std::string(u.what) + ", element-wise; the result " + result +
                      ".\n\n"
                      "Args:\n"
                      "    x (PrimExpr or number): the operand; a Python number is float32.\n\n"
                      "Raises:\n"
                      "    KilnTypeError: x is not an expression or a number, or its dtype is "
                      "not one the function takes.\n\n"
                      "Example:\n"
                      "    B = te.compute(A.shape, lambda i: te." +
                      u.name + "(A[i]), name=\"B\")";
    m.def(
        u.name, [op, api](py::handle x) { return call(op, {math_arg(x, api.c_str())}); },
        py::arg("x"), doc.c_str());
  }
  auto power = [](py::handle x, py::handle y) {
    Expr base = math_arg(x, "te.power");
    Expr exponent = is_expr_like(y) ? to_expr(y, "te.power", "the exponent")
                                    : to_expr_like(y, base, "te.power");
    if (!exponent->dtype.is_float()) exponent = cast(base->dtype, exponent);
    return call(Builtin::Pow, {base, exponent});
  };
  const char* power_doc = R"doc(x to the power y, element-wise, on floats.

Args:
    x (PrimExpr or number): the base; a Python number is float32.
    y (PrimExpr or number): the exponent; a number or an integer expression takes x's dtype.

Raises:
    KilnTypeError: an operand is not an expression or a number.

Example:
    B = te.compute((n,), lambda i: te.power(A[i], 2.0), name="B"))doc";
  m.def("power", power, py::arg("x"), py::arg("y"), power_doc);
  m.def("pow", power, py::arg("x"), py::arg("y"), power_doc);
}

void bind_arith(py::module_& m) {
  using Builder = Expr (*)(Expr, Expr);
  struct Binary {
    const char* name;
    Builder f;
    const char* what;  // the first line of the docstring
  };
  static const Binary kBinary[] = {
      {"floordiv", &floordiv, "a / b rounded toward negative infinity (Python's //)"},
      {"floormod", &floormod, "The remainder of floordiv, with the sign of b (Python's %)"},
      {"truncdiv", &truncdiv, "a / b rounded toward zero (C's integer /)"},
      {"truncmod", &truncmod, "The remainder of truncdiv, with the sign of a (C's %)"},
  };
  for (const Binary& b : kBinary) {
    std::string api = std::string("te.") + b.name;
    Builder f = b.f;
    std::string doc = std::string(b.what) +
                      ".\n\n"
                      "Args:\n"
                      "    a, b (PrimExpr or int): the operands; a Python int takes the other "
                      "operand's dtype.\n\n"
                      "Raises:\n"
                      "    KilnTypeError: an operand is not an expression or a number.\n\n"
                      "Example:\n"
                      "    B = te.compute((n,), lambda i: A[te." +
                      b.name + "(i, 4)], name=\"B\")";
    m.def(
        b.name,
        [f, api](py::handle a, py::handle c) {
          auto [x, y] = two_operands(a, c, api.c_str());
          return f(x, y);
        },
        py::arg("a"), py::arg("b"), doc.c_str());
  }
  m.def(
      "_elementwise_max",
      [](py::handle a, py::handle b) {
        auto [x, y] = two_operands(a, b, "te.max");
        return ir::max(x, y);
      },
      py::arg("a"), py::arg("b"));
  m.def(
      "_elementwise_min",
      [](py::handle a, py::handle b) {
        auto [x, y] = two_operands(a, b, "te.min");
        return ir::min(x, y);
      },
      py::arg("a"), py::arg("b"));
  m.def(
      "if_then_else",
      [](py::handle cond, py::handle t, py::handle f) {
        Expr c = to_expr(cond, "te.if_then_else", "the condition");
        auto [x, y] = two_operands(t, f, "te.if_then_else");
        return if_then_else(c, x, y);
      },
      py::arg("cond"), py::arg("t"), py::arg("f"),
      R"doc(cond ? t : f, evaluating only the chosen arm (so it guards loads that would be out
of bounds, e.g. in padding).

Args:
    cond (PrimExpr): a bool condition.
    t, f (PrimExpr or number): the two values; a Python number takes the other arm's dtype.

Raises:
    KilnTypeError: an argument is not an expression or a number, or cond is not a bool.

Example:
    P = te.compute((n + 2,), lambda i: te.if_then_else(
        te.all(i >= 1, i <= n), A[i - 1], 0.0), name="P"))doc");
  // Folds the conditions with f, starting from f's neutral element (which f folds away).
  auto fold = [](const char* api, Expr (*f)(Expr, Expr), bool neutral) {
    return [api, f, neutral](py::args conds) {
      user_check(py::len(conds) > 0) << api << ": expected at least one condition";
      Expr result = bool_const(neutral);
      for (py::handle c : conds) result = f(result, to_expr(c, api, "a condition"));
      return result;
    };
  };
  m.def("all", fold("te.all", &logical_and, true),
        R"doc(The logical and of every condition: ``te.all(i >= 1, i < n)``.

Raises:
    KilnValueError: no condition is given.
    KilnTypeError: a condition is not a bool expression.)doc");
  m.def("any", fold("te.any", &logical_or, false),
        R"doc(The logical or of every condition: ``te.any(i < 1, i >= n)``.

Raises:
    KilnValueError: no condition is given.
    KilnTypeError: a condition is not a bool expression.)doc");
  m.def(
      "const",
      [](py::handle value, py::handle dtype) -> Expr {
        bool is_float = py::isinstance<py::float_>(value);
        type_check(py::isinstance<py::int_>(value) || is_float)
            << "te.const: value must be a Python number, found an object of type "
            << python_type_name(value);
        DataType t;
        if (!dtype.is_none()) {
          t = to_dtype(dtype, "te.const");
        } else if (py::isinstance<py::bool_>(value)) {
          t = DataType::bool_();
        } else {
          t = is_float ? DataType::float32() : to_expr(value, "te.const", "value")->dtype;
        }
        if (is_float) return make_const(t, value.cast<double>());
        if (py::isinstance<py::bool_>(value)) return make_const(t, int64_t{value.cast<bool>()});
        int64_t v = to_int(value, "te.const", "value");
        user_check(!t.is_integer() ||
                   (fits_dtype(v, t) && !(t.is_uint() && t.bits() == 64 && v < 0)))
            << "te.const: the value " << v << " does not fit " << t << " (its range is "
            << dtype_range(t) << ")";
        return make_const(t, v);
      },
      py::arg("value"), py::arg("dtype") = py::none(),
      R"doc(A constant of the given dtype.

Args:
    value (int, float or bool): the value.
    dtype (str, optional): its dtype; default: int32 for ints (int64 when too large), float32
        for floats, bool for bools.

Raises:
    KilnTypeError: value is not a number, or dtype is not a dtype.
    KilnValueError: an integer value does not fit dtype (te.const(300, "int8")).

Example:
    half = te.const(0.5, "float16"))doc");
  m.def(
      "max_value", [](py::handle dtype) { return max_value(to_dtype(dtype, "te.max_value")); },
      py::arg("dtype"),
      R"doc(The largest value of a dtype, as a constant (the identity of te.min); for floats the
largest finite value, as in TVM.

Raises:
    KilnTypeError: dtype is not a dtype string such as "float32".)doc");
  m.def(
      "min_value", [](py::handle dtype) { return min_value(to_dtype(dtype, "te.min_value")); },
      py::arg("dtype"),
      R"doc(The smallest value of a dtype, as a constant (the identity of te.max); for floats
the lowest finite value, as in TVM, so that a fully masked row of a softmax stays finite.

Raises:
    KilnTypeError: dtype is not a dtype string such as "float32".)doc");
  m.def(
      "_to_expr",
      [](py::handle obj, const std::string& api) { return to_expr(obj, api.c_str(), "value"); },
      py::arg("obj"), py::arg("api"));
}

void bind_reductions(py::module_& m) {
  m.def(
      "reduce_axis",
      [](py::handle dom, py::handle name) {
        return te::reduce_axis(to_range(dom, "te.reduce_axis"),
                               to_str(name, "te.reduce_axis", "name"));
      },
      py::arg("dom"), py::arg("name") = "rv",
      R"doc(A reduce axis: an iteration variable that te.sum, te.max … reduce over.

Args:
    dom (tuple or tir.Range): its range, (begin, end) with end excluded.
    name (str): its name in the printed IR.

Returns:
    tir.IterVar: use it as an index (A[i, k]) and as the axis of a reducer.

Raises:
    KilnTypeError: dom is not a (begin, end) pair or a Range, or name is not a str.

Example:
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C"))doc");
  using Reducer = Expr (*)(Expr, const std::vector<IterVar>&, Expr, Expr);
  struct ReducerEntry {
    const char* name;
    const char* api;
    Reducer f;
  };
  static const ReducerEntry kReducers[] = {
      {"_sum", "te.sum", &te::sum},
      {"_max", "te.max", &te::max},
      {"_min", "te.min", &te::min},
      {"_prod", "te.prod", &te::prod},
  };
  for (const ReducerEntry& r : kReducers) {
    Reducer f = r.f;
    const char* api = r.api;
    m.def(
        r.name,
        [f, api](py::handle expr, py::handle axis, py::handle where, py::handle init) {
          Expr source = to_expr(expr, api, "the value to reduce");
          Expr start = init.is_none() ? Expr() : to_expr_like(init, source, api);
          return f(source, to_axis_list(axis, api), optional_expr(where, api, "where"), start);
        },
        py::arg("expr"), py::arg("axis"), py::arg("where") = py::none(),
        py::arg("init") = py::none());
  }
  m.def(
      "_make_comm_reducer",
      [](std::vector<Ref<Var>> lhs, std::vector<Ref<Var>> rhs, py::list result, py::list identity,
         const std::string& api) {
        std::vector<Expr> results, identities;
        for (py::handle r : result) results.push_back(to_expr(r, api.c_str(), "fcombine's result"));
        for (size_t i = 0; i < py::len(identity); ++i) {
          py::handle v = identity[i];
          identities.push_back(i < lhs.size() ? to_expr_like(v, lhs[i], api.c_str())
                                              : to_expr(v, api.c_str(), "fidentity's result"));
        }
        return te::make_comm_reducer(std::move(lhs), std::move(rhs), std::move(results),
                                     std::move(identities), api);
      },
      py::arg("lhs"), py::arg("rhs"), py::arg("result"), py::arg("identity"), py::arg("api"));
  m.def(
      "_comm_reduce",
      [](const Ref<CommReducer>& combiner, py::list source, py::handle axis, py::handle where,
         py::handle init, const std::string& api) {
        const char* name = api.c_str();
        std::vector<Expr> sources, inits;
        for (py::handle s : source) sources.push_back(to_expr(s, name, "the value to reduce"));
        if (!init.is_none()) {
          py::list values = (py::isinstance<py::list>(init) || py::isinstance<py::tuple>(init))
                                ? py::list(py::reinterpret_borrow<py::object>(init))
                                : py::list(py::make_tuple(init));
          for (size_t i = 0; i < py::len(values); ++i) {
            inits.push_back(i < sources.size() ? to_expr_like(values[i], sources[i], name)
                                               : to_expr(values[i], name, "init"));
          }
        }
        return te::comm_reduce(combiner, std::move(sources), to_axis_list(axis, name),
                               optional_expr(where, name, "where"), std::move(inits), api);
      },
      py::arg("combiner"), py::arg("source"), py::arg("axis"), py::arg("where"), py::arg("init"),
      py::arg("api"));
}

void bind_tensors(py::module_& m) {
  py::class_<Operation, std::shared_ptr<Operation>>(
      m, "Operation",
      "What computes a tensor: a PlaceholderOp (an input) or a ComputeOp (te.compute). "
      "Tensor.op gives it.")
      .def_readonly("name", &Operation::name, "The name given to te.placeholder or te.compute.")
      .def_readonly("tag", &Operation::tag, "The tag given to te.compute (\"\" by default).")
      .def_property_readonly(
          "attrs", [](const Operation& op) { return attrs_to_dict(op.attrs); },
          "The attributes given to te.compute, as a dict.")
      .def_property_readonly("num_outputs", &Operation::num_outputs,
                             "How many tensors the operation computes (several for a tuple "
                             "reduction).")
      .def(
          "output",
          [](const Operation& op, py::handle index) {
            return op.output(static_cast<size_t>(to_int(index, "Operation.output", "index", 0)));
          },
          py::arg("index"),
          R"doc(The tensor of output ``index``.

Raises:
    KilnIndexError: index is not below num_outputs.
    KilnTypeError: index is not an int.)doc")
      .def_property_readonly("input_tensors", &Operation::input_tensors,
                             "The tensors the operation reads, in order of first use.")
      .def("__eq__",
           [](const Operation& a, py::handle b) {
             return py::isinstance<Operation>(b) && &a == b.cast<const Operation*>();
           })
      .def("__hash__", [](const Operation& op) { return std::hash<const void*>()(&op); });
  py::class_<te::PlaceholderOp, Operation, std::shared_ptr<te::PlaceholderOp>>(
      m, "PlaceholderOp", "The operation of an input tensor (te.placeholder).")
      .def_property_readonly(
          "shape", [](const te::PlaceholderOp& op) { return op.outputs[0]->shape; },
          "The input's shape, a list of expressions.")
      .def_property_readonly(
          "dtype", [](const te::PlaceholderOp& op) { return op.outputs[0]->dtype.str(); },
          "The input's dtype, e.g. \"float32\".");
  py::class_<te::ComputeOp, Operation, std::shared_ptr<te::ComputeOp>>(
      m, "ComputeOp", "The operation of a tensor defined element-wise by te.compute.")
      .def_readonly("axis", &te::ComputeOp::axis,
                    "The spatial axes, one tir.IterVar per dimension, named after fcompute's "
                    "parameters.")
      .def_readonly("reduce_axis", &te::ComputeOp::reduce_axis,
                    "The reduce axes of a reduction (empty otherwise).")
      .def_readonly("body", &te::ComputeOp::body,
                    "The expressions of the outputs, one per output (a Reduce for a reduction).");
  py::class_<te::ExternOp, Operation, std::shared_ptr<te::ExternOp>>(
      m, "ExternOp",
      "The operation of tensors computed by a statement, typically an extern call (te.extern).")
      .def_readonly("inputs", &te::ExternOp::inputs, "The input tensors, in the order given.")
      .def_readonly("body", &te::ExternOp::body,
                    "The statement that fcompute returned (a tir.Stmt).");

  py::class_<Tensor>(m, "Tensor", R"doc(A tensor of a tensor expression: an input
(te.placeholder) or the output of te.compute.

Index it with one expression per dimension to read an element in another te.compute:
``A[i, j]`` (or ``A(i, j)``). te.create_prim_func turns tensors into a PrimFunc.)doc")
      .def_property_readonly("shape", &Tensor::shape,
                             "The shape, a list of expressions (IntImm for constant dimensions, "
                             "Var for symbolic ones).")
      .def_property_readonly(
          "dtype", [](const Tensor& t) { return t.dtype().str(); },
          "The element dtype, e.g. \"float32\".")
      .def_property_readonly("name", &Tensor::name, "The tensor's name (its operation's name).")
      .def_property_readonly("ndim", &Tensor::ndim, "The number of dimensions.")
      .def_property_readonly("op", &op_of, "The Operation that computes the tensor.")
      .def_readonly("value_index", &Tensor::value_index,
                    "Which output of its operation the tensor is (0 unless it has several).")
      .def_property_readonly("buffer", &Tensor::buffer,
                             "The tir.Buffer the tensor becomes in create_prim_func.")
      .def("__getitem__", &index_tensor, py::arg("indices"),
           R"doc(The element at ``indices`` (one integer expression per dimension), as an
expression: ``A[i, j]``.

Raises:
    KilnIndexError: the number of indices differs from ndim.
    KilnTypeError: an index is a float, a slice, a tensor or not an integer expression.)doc")
      .def(
          "__call__",
          [](const Tensor& self, py::args indices) {
            return index_tensor(self, py::tuple(indices));
          },
          "The element at the given indices, like A[i, j]: ``A(i, j)``.")
      .def("__iter__",
           [](const Tensor& self) -> py::object {
             user_error(ErrorKind::kType)
                 << "te.Tensor: tensor " << self.name()
                 << " is not iterable; index it with one index per dimension, e.g. A[i, j]";
           })
      .def("__eq__",
           [](const Tensor& a, py::handle b) {
             return py::isinstance<Tensor>(b) && a == b.cast<Tensor>();
           })
      .def("__ne__",
           [](const Tensor& a, py::handle b) {
             return !(py::isinstance<Tensor>(b) && a == b.cast<Tensor>());
           })
      .def("__hash__",
           [](const Tensor& t) {
             return std::hash<const void*>()(t.op.get()) ^ static_cast<size_t>(t.value_index);
           })
      .def("__repr__", &tensor_repr);

  m.def(
      "placeholder",
      [](py::handle shape, py::handle dtype, py::handle name) {
        const char* api = "te.placeholder";
        return te::placeholder(to_shape(shape, api), to_dtype(dtype, api),
                               to_str(name, api, "name"));
      },
      py::arg("shape"), py::arg("dtype") = "float32", py::arg("name") = "placeholder",
      R"doc(An input tensor of the given shape and dtype.

Args:
    shape (tuple of int or PrimExpr): the dimensions; a te.var makes a symbolic one.
    dtype (str): the element dtype, e.g. "float32", "int8", "bfloat16".
    name (str): the name of the buffer in the PrimFunc.

Returns:
    Tensor

Raises:
    KilnTypeError: a dimension is not an integer, dtype is not a dtype, or name is not a str.
    KilnValueError: a constant dimension is not positive.

Example:
    n = te.var("n")
    A = te.placeholder((n, 64), "float32", name="A"))doc");
  m.def(
      "_compute_axes",
      [](py::handle shape, std::vector<std::string> names, py::handle name) {
        return te::compute_axes(to_shape(shape, "te.compute"), names, "te.compute",
                                to_str(name, "te.compute", "name"));
      },
      py::arg("shape"), py::arg("names"), py::arg("name"));
  m.def(
      "_compute_from_body",
      [](std::vector<IterVar> axis, py::list body, py::handle name, py::handle tag,
         py::handle attrs) {
        std::vector<Expr> values;
        for (py::handle v : body) {
          values.push_back(to_expr(v, "te.compute", "the value returned by fcompute"));
        }
        return te::compute_from_body(
            std::move(axis), std::move(values), to_str(name, "te.compute", "name"),
            to_str(tag, "te.compute", "tag"), to_attrs(attrs, "te.compute"));
      },
      py::arg("axis"), py::arg("body"), py::arg("name"), py::arg("tag"), py::arg("attrs"));
  m.def(
      "_extern",
      [](py::list shapes, py::list dtypes, std::vector<Tensor> inputs, py::function fcompute,
         py::handle name, py::handle tag, py::handle attrs, py::handle out_buffers) {
        const char* api = "te.extern";
        std::vector<std::vector<Expr>> shape_list;
        for (py::handle shape : shapes) shape_list.push_back(to_shape(shape, api));
        std::vector<DataType> dtype_list;
        for (py::handle dtype : dtypes) dtype_list.push_back(to_dtype(dtype, api));
        std::vector<Ref<Buffer>> buffers;
        if (!out_buffers.is_none()) {
          buffers = to_node_list<Buffer>(out_buffers, api, "out_buffers", "a list of tir.Buffer");
        }
        te::ExternFunction body = [&](const std::vector<Ref<Buffer>>& ins,
                                      const std::vector<Ref<Buffer>>& outs) {
          py::object result = fcompute(py::cast(ins), py::cast(outs));
          type_check(py::isinstance<StmtNode>(result))
              << api << ": fcompute must return a statement (or an expression, evaluated for "
              << "its effect), found an object of type " << python_type_name(result);
          return result.cast<Stmt>();
        };
        return te::extern_op(shape_list, dtype_list, std::move(inputs), body,
                             to_str(name, api, "name"), to_str(tag, api, "tag"),
                             to_attrs(attrs, api), std::move(buffers));
      },
      py::arg("shapes"), py::arg("dtypes"), py::arg("inputs"), py::arg("fcompute"), py::arg("name"),
      py::arg("tag"), py::arg("attrs"), py::arg("out_buffers"));
  m.def(
      "create_prim_func",
      [](py::handle args) {
        const char* api = "te.create_prim_func";
        type_check(py::isinstance<py::list>(args) || py::isinstance<py::tuple>(args))
            << api << ": expected a list of tensors, found an object of type "
            << python_type_name(args);
        std::vector<te::PrimFuncArg> converted;
        size_t index = 0;
        for (py::handle a : args) {
          if (py::isinstance<Tensor>(a)) {
            converted.emplace_back(a.cast<Tensor>());
          } else if (py::isinstance<Var>(a)) {
            converted.emplace_back(a.cast<Ref<Var>>());
          } else {
            user_error(ErrorKind::kType)
                << api << ": argument " << index
                << " must be a te.Tensor (or a tir.Var for a scalar parameter), found an object "
                   "of type "
                << python_type_name(a);
          }
          ++index;
        }
        return te::create_prim_func(converted);
      },
      py::arg("args"),
      R"doc(The PrimFunc (TensorIR) that computes the given tensors.

Each te.compute becomes a block named after it, under one loop per axis; the tensors in
``args`` become the parameters in that order, and the other computed tensors become buffers
the function allocates. The function's attribute "global_symbol" is "main".

Args:
    args (list of Tensor or tir.Var): the inputs and outputs, plus any scalar parameter (a
        te.var used in expressions and not in a shape).

Returns:
    PrimFunc

Raises:
    KilnTypeError: args is not a list, or an entry is neither a Tensor nor a tir.Var.
    KilnValueError: an input tensor that the outputs read is not in args, or a variable is
        neither in args nor a dimension of an argument tensor's shape.

Example:
    func = te.create_prim_func([A, B, C])
    print(func))doc");
}

}  // namespace

void bind_te(py::module_& m) {
  bind_tensors(m);
  bind_reductions(m);
  bind_arith(m);
  bind_math(m);
}

}  // namespace kiln::python
