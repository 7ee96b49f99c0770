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

std::string type_name(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
}

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
            << "object of type " << type_name(item);
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
                               << type_name(dom);
}

Attrs to_attrs(py::handle obj, const char* api) {
  Attrs attrs;
  if (obj.is_none()) return attrs;
  type_check(py::isinstance<py::dict>(obj))
      << api << ": attrs must be a dict, found an object of type " << type_name(obj);
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
  };
  static const Unary kUnary[] = {
      {"exp", Builtin::Exp},     {"exp2", Builtin::Exp2},   {"log", Builtin::Log},
      {"log2", Builtin::Log2},   {"log1p", Builtin::Log1p}, {"sqrt", Builtin::Sqrt},
      {"rsqrt", Builtin::Rsqrt}, {"sin", Builtin::Sin},     {"cos", Builtin::Cos},
      {"tan", Builtin::Tan},     {"tanh", Builtin::Tanh},   {"sigmoid", Builtin::Sigmoid},
      {"erf", Builtin::Erf},     {"abs", Builtin::Abs},     {"floor", Builtin::Floor},
      {"ceil", Builtin::Ceil},   {"round", Builtin::Round}, {"trunc", Builtin::Trunc},
      {"isnan", Builtin::IsNan},
  };
  for (const Unary& u : kUnary) {
    std::string api = std::string("te.") + u.name;
    Builtin op = u.op;
    m.def(
        u.name, [op, api](py::handle x) { return call(op, {math_arg(x, api.c_str())}); },
        py::arg("x"),
        ("Element-wise " + std::string(u.name) + "; a Python number is float32.").c_str());
  }
  auto power = [](py::handle x, py::handle y) {
    Expr base = math_arg(x, "te.power");
    Expr exponent = is_expr_like(y) ? to_expr(y, "te.power", "the exponent")
                                    : to_expr_like(y, base, "te.power");
    if (!exponent->dtype.is_float()) exponent = cast(base->dtype, exponent);
    return call(Builtin::Pow, {base, exponent});
  };
  m.def("power", power, py::arg("x"), py::arg("y"), "x ** y on floats.");
  m.def("pow", power, py::arg("x"), py::arg("y"), "x ** y on floats (same as te.power).");
}

void bind_arith(py::module_& m) {
  using Builder = Expr (*)(Expr, Expr);
  struct Binary {
    const char* name;
    Builder f;
  };
  static const Binary kBinary[] = {
      {"floordiv", &floordiv},
      {"floormod", &floormod},
      {"truncdiv", &truncdiv},
      {"truncmod", &truncmod},
  };
  for (const Binary& b : kBinary) {
    std::string api = std::string("te.") + b.name;
    Builder f = b.f;
    m.def(
        b.name,
        [f, api](py::handle a, py::handle c) {
          auto [x, y] = two_operands(a, c, api.c_str());
          return f(x, y);
        },
        py::arg("a"), py::arg("b"));
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
      "cond ? t : f, evaluating only the chosen arm (guards out-of-bounds loads in padding).");
  // Folds the conditions with f, starting from f's neutral element (which f folds away).
  auto fold = [](const char* api, Expr (*f)(Expr, Expr), bool neutral) {
    return [api, f, neutral](py::args conds) {
      user_check(py::len(conds) > 0) << api << ": expected at least one condition";
      Expr result = bool_const(neutral);
      for (py::handle c : conds) result = f(result, to_expr(c, api, "a condition"));
      return result;
    };
  };
  m.def("all", fold("te.all", &logical_and, true), "The logical and of every condition.");
  m.def("any", fold("te.any", &logical_or, false), "The logical or of every condition.");
  m.def(
      "const",
      [](py::handle value, py::handle dtype) -> Expr {
        bool is_float = py::isinstance<py::float_>(value);
        type_check(py::isinstance<py::int_>(value) || is_float)
            << "te.const: value must be a Python number, found an object of type "
            << type_name(value);
        DataType t;
        if (!dtype.is_none()) {
          t = to_dtype(dtype, "te.const");
        } else if (py::isinstance<py::bool_>(value)) {
          t = DataType::bool_();
        } else {
          t = is_float ? DataType::float32() : to_expr(value, "te.const", "value")->dtype;
        }
        if (is_float) return make_const(t, value.cast<double>());
        int64_t v = *as_const_int(to_expr(value, "te.const", "value"));
        user_check(!t.is_integer() ||
                   (fits_dtype(v, t) && !(t.is_uint() && t.bits() == 64 && v < 0)))
            << "te.const: the value " << v << " does not fit " << t << " (its range is "
            << dtype_range(t) << ")";
        return make_const(t, v);
      },
      py::arg("value"), py::arg("dtype") = py::none(),
      "A constant; the dtype defaults to int32 for ints (int64 when too large), float32 for "
      "floats, bool for bools.");
  m.def(
      "max_value", [](py::handle dtype) { return max_value(to_dtype(dtype, "te.max_value")); },
      py::arg("dtype"));
  m.def(
      "min_value", [](py::handle dtype) { return min_value(to_dtype(dtype, "te.min_value")); },
      py::arg("dtype"));
  m.def(
      "_to_expr",
      [](py::handle obj, const std::string& api) { return to_expr(obj, api.c_str(), "value"); },
      py::arg("obj"), py::arg("api"));
}

void bind_reductions(py::module_& m) {
  m.def(
      "reduce_axis",
      [](py::handle dom, const std::string& name) {
        return te::reduce_axis(to_range(dom, "te.reduce_axis"), name);
      },
      py::arg("dom"), py::arg("name") = "rv",
      "A reduce axis over dom, a (begin, end) tuple or a tir.Range.");
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
  py::class_<Operation, std::shared_ptr<Operation>>(m, "Operation")
      .def_readonly("name", &Operation::name)
      .def_readonly("tag", &Operation::tag)
      .def_property_readonly("attrs", [](const Operation& op) { return attrs_to_dict(op.attrs); })
      .def_property_readonly("num_outputs", &Operation::num_outputs)
      .def("output", &Operation::output, py::arg("index"))
      .def_property_readonly("input_tensors", &Operation::input_tensors)
      .def("__eq__",
           [](const Operation& a, py::handle b) {
             return py::isinstance<Operation>(b) && &a == b.cast<const Operation*>();
           })
      .def("__hash__", [](const Operation& op) { return std::hash<const void*>()(&op); });
  py::class_<te::PlaceholderOp, Operation, std::shared_ptr<te::PlaceholderOp>>(m, "PlaceholderOp")
      .def_property_readonly("shape",
                             [](const te::PlaceholderOp& op) { return op.outputs[0]->shape; })
      .def_property_readonly(
          "dtype", [](const te::PlaceholderOp& op) { return op.outputs[0]->dtype.str(); });
  py::class_<te::ComputeOp, Operation, std::shared_ptr<te::ComputeOp>>(m, "ComputeOp")
      .def_readonly("axis", &te::ComputeOp::axis)
      .def_readonly("reduce_axis", &te::ComputeOp::reduce_axis)
      .def_readonly("body", &te::ComputeOp::body);

  py::class_<Tensor>(m, "Tensor")
      .def_property_readonly("shape", &Tensor::shape)
      .def_property_readonly("dtype", [](const Tensor& t) { return t.dtype().str(); })
      .def_property_readonly("name", &Tensor::name)
      .def_property_readonly("ndim", &Tensor::ndim)
      .def_property_readonly("op", &op_of)
      .def_readonly("value_index", &Tensor::value_index)
      .def_property_readonly("buffer", &Tensor::buffer)
      .def("__getitem__", &index_tensor)
      .def("__call__", [](const Tensor& self,
                          py::args indices) { return index_tensor(self, py::tuple(indices)); })
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
      [](py::handle shape, py::handle dtype, std::string name) {
        return te::placeholder(to_shape(shape, "te.placeholder"), to_dtype(dtype, "te.placeholder"),
                               std::move(name));
      },
      py::arg("shape"), py::arg("dtype") = "float32", py::arg("name") = "placeholder",
      "An input tensor of the given shape and dtype.");
  m.def(
      "_compute_axes",
      [](py::handle shape, std::vector<std::string> names, const std::string& name) {
        return te::compute_axes(to_shape(shape, "te.compute"), names, "te.compute", name);
      },
      py::arg("shape"), py::arg("names"), py::arg("name"));
  m.def(
      "_compute_from_body",
      [](std::vector<IterVar> axis, py::list body, const std::string& name, const std::string& tag,
         py::handle attrs) {
        std::vector<Expr> values;
        for (py::handle v : body) {
          values.push_back(to_expr(v, "te.compute", "the value returned by fcompute"));
        }
        return te::compute_from_body(std::move(axis), std::move(values), name, tag,
                                     to_attrs(attrs, "te.compute"));
      },
      py::arg("axis"), py::arg("body"), py::arg("name"), py::arg("tag"), py::arg("attrs"));
  m.def(
      "create_prim_func",
      [](py::handle args) {
        const char* api = "te.create_prim_func";
        type_check(py::isinstance<py::list>(args) || py::isinstance<py::tuple>(args))
            << api << ": expected a list of tensors, found an object of type " << type_name(args);
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
                << type_name(a);
          }
          ++index;
        }
        return te::create_prim_func(converted);
      },
      py::arg("args"),
      "The PrimFunc computing the given tensors; its parameters follow the list order.");
}

}  // namespace

void bind_te(py::module_& m) {
  bind_tensors(m);
  bind_reductions(m);
  bind_arith(m);
  bind_math(m);
}

}  // namespace kiln::python
