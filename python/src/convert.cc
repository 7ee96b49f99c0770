// Python-to-IR conversions for the bindings (see convert.h).
#include "convert.h"

#include "kiln/support/error.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::ir;

namespace {

std::string python_type_name(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
}

bool is_python_int(py::handle obj) {
  if (py::isinstance<py::bool_>(obj)) return false;
  if (py::isinstance<py::int_>(obj)) return true;
  // numpy integers
  return py::hasattr(obj, "__index__") && !py::isinstance<py::float_>(obj) &&
         !py::isinstance<ExprNode>(obj);
}

bool is_python_float(py::handle obj) {
  if (py::isinstance<py::float_>(obj)) return true;
  py::object np_floating;
  try {
    np_floating = py::module_::import("numpy").attr("floating");
  } catch (const py::error_already_set&) {
    return false;
  }
  return py::isinstance(obj, np_floating);
}

Expr int_literal(py::handle obj) {
  py::int_ value = py::reinterpret_steal<py::int_>(PyNumber_Index(obj.ptr()));
  if (!value) throw py::error_already_set();
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  user_check(overflow == 0) << "integer constant " << py::str(obj).cast<std::string>()
                            << " does not fit in 64 bits";
  if (v >= INT32_MIN && v <= INT32_MAX) return make_const(DataType::int32(), int64_t{v});
  return make_const(DataType::int64(), int64_t{v});
}

}  // namespace

Expr to_expr(py::handle obj, const char* api, const char* what) {
  if (py::isinstance<ExprNode>(obj)) return obj.cast<Expr>();
  if (py::isinstance<py::bool_>(obj)) return bool_const(obj.cast<bool>());
  if (is_python_int(obj)) return int_literal(obj);
  if (is_python_float(obj)) return make_const(DataType::float32(), obj.cast<double>());
  if (py::hasattr(obj, "_as_expr")) return obj.attr("_as_expr")().cast<Expr>();
  user_error(ErrorKind::kType) << api << ": " << what
                               << " must be an expression or a number, found an object of type "
                               << python_type_name(obj);
}

Expr to_expr_like(py::handle obj, const Expr& like, const char* api) {
  if (py::isinstance<ExprNode>(obj)) return obj.cast<Expr>();
  if (py::isinstance<py::bool_>(obj)) return bool_const(obj.cast<bool>());
  if (is_python_int(obj)) {
    Expr lit = int_literal(obj);
    return literal_like(*as_const_int(lit), like);
  }
  if (is_python_float(obj)) return literal_like(obj.cast<double>(), like);
  return to_expr(obj, api, "operand");
}

std::vector<Expr> to_shape(py::handle obj, const char* api) {
  std::vector<Expr> shape;
  if (py::isinstance<py::sequence>(obj) && !py::isinstance<py::str>(obj)) {
    for (py::handle item : obj) shape.push_back(to_expr(item, api, "a shape entry"));
  } else {
    shape.push_back(to_expr(obj, api, "the shape"));
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    type_check(shape[i]->dtype.is_integer() && shape[i]->dtype.is_scalar())
        << api << ": dimension " << i << " of the shape must be an integer, found dtype "
        << shape[i]->dtype;
  }
  return shape;
}

DataType to_dtype(py::handle obj, const char* api) {
  if (py::isinstance<py::str>(obj)) return DataType::parse(obj.cast<std::string>(), api);
  // numpy dtypes and scalar types print their name with str(numpy.dtype(x)).
  try {
    py::object np_dtype = py::module_::import("numpy").attr("dtype")(obj);
    return DataType::parse(py::str(np_dtype).cast<std::string>(), api);
  } catch (const py::error_already_set&) {
  }
  user_error(ErrorKind::kType) << api << ": dtype must be a string such as \"float32\", found "
                               << python_type_name(obj);
}

Expr to_attr_value(py::handle obj, const char* api) {
  if (py::isinstance<py::str>(obj)) return make<StringImm>(obj.cast<std::string>());
  return to_expr(obj, api, "an annotation value");
}

py::object from_attr_value(const Expr& value) {
  if (const auto* s = value.as<StringImm>()) return py::str(s->value);
  if (const auto* i = value.as<IntImm>()) {
    if (value->dtype.is_bool()) return py::bool_(i->value != 0);
    return py::int_(i->value);
  }
  if (const auto* f = value.as<FloatImm>()) return py::float_(f->value);
  return py::cast(value);
}

}  // namespace kiln::python
