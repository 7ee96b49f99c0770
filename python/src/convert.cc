// Python-to-C++ conversions for the bindings (see convert.h).
#include "convert.h"

#include "kiln/schedule/schedule.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::ir;

std::string python_type_name(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
}

void raise_type_error(const char* api, const char* param, const char* expected, py::handle obj) {
  user_error(ErrorKind::kType) << api << ": " << param << " must be " << expected << ", found "
                               << (obj.is_none() ? std::string("None")
                                                 : "an object of type " + python_type_name(obj));
}

namespace {

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

// --- Typed arguments -------------------------------------------------------------------------

std::string entry_name(const char* param, size_t index) {
  return std::string(param) + "[" + std::to_string(index) + "]";
}

namespace {

bool is_list_or_tuple(py::handle obj) {
  return py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj);
}

}  // namespace

int64_t to_int(py::handle obj, const char* api, const char* param, int64_t min, int64_t max) {
  int64_t value = 0;
  if (py::isinstance<IntImm>(obj) && !obj.cast<Ref<IntImm>>()->dtype.is_bool()) {
    value = obj.cast<Ref<IntImm>>()->value;
  } else {
    if (!is_python_int(obj)) raise_type_error(api, param, "an int", obj);
    py::int_ index = py::reinterpret_steal<py::int_>(PyNumber_Index(obj.ptr()));
    if (!index) throw py::error_already_set();
    int overflow = 0;
    value = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    user_check(overflow == 0) << api << ": " << param << " = " << py::str(obj).cast<std::string>()
                              << " does not fit in 64 bits";
  }
  user_check(value >= min && value <= max)
      << api << ": " << param << " must be in [" << min << ", " << max << "], found " << value;
  return value;
}

std::optional<int64_t> to_optional_int(py::handle obj, const char* api, const char* param) {
  if (obj.is_none()) return std::nullopt;
  return to_int(obj, api, param);
}

double to_float(py::handle obj, const char* api, const char* param) {
  if (!is_python_int(obj) && !is_python_float(obj)) {
    raise_type_error(api, param, "a number (int or float)", obj);
  }
  double value = PyFloat_AsDouble(obj.ptr());
  if (value == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  return value;
}

bool to_bool(py::handle obj, const char* api, const char* param) {
  if (py::isinstance<py::bool_>(obj)) return obj.cast<bool>();
  if (is_python_int(obj)) return to_int(obj, api, param) != 0;
  py::object np_bool = py::module_::import("numpy").attr("bool_");
  if (py::isinstance(obj, np_bool)) return obj.attr("__bool__")().cast<bool>();
  raise_type_error(api, param, "a bool", obj);
}

std::optional<bool> to_optional_bool(py::handle obj, const char* api, const char* param) {
  if (obj.is_none()) return std::nullopt;
  return to_bool(obj, api, param);
}

std::string to_str(py::handle obj, const char* api, const char* param) {
  if (!py::isinstance<py::str>(obj)) raise_type_error(api, param, "a str", obj);
  return obj.cast<std::string>();
}

std::optional<std::string> to_optional_str(py::handle obj, const char* api, const char* param) {
  if (obj.is_none()) return std::nullopt;
  return to_str(obj, api, param);
}

std::optional<std::string> to_optional_path(py::handle obj, const char* api, const char* param) {
  if (obj.is_none()) return std::nullopt;
  py::object path_like = py::module_::import("os").attr("PathLike");
  if (py::isinstance<py::str>(obj)) return obj.cast<std::string>();
  if (py::isinstance(obj, path_like)) {
    py::object path = py::module_::import("os").attr("fspath")(obj);
    if (py::isinstance<py::str>(path)) return path.cast<std::string>();
  }
  raise_type_error(api, param, "a path (str or os.PathLike)", obj);
}

std::vector<int64_t> to_int_list(py::handle obj, const char* api, const char* param) {
  if (!is_list_or_tuple(obj)) raise_type_error(api, param, "a list of ints", obj);
  std::vector<int64_t> values;
  for (py::handle item : obj) {
    values.push_back(to_int(item, api, entry_name(param, values.size()).c_str()));
  }
  return values;
}

std::optional<std::vector<int64_t>> to_optional_int_list(py::handle obj, const char* api,
                                                         const char* param) {
  if (obj.is_none()) return std::nullopt;
  return to_int_list(obj, api, param);
}

std::vector<double> to_float_list(py::handle obj, const char* api, const char* param) {
  if (!is_list_or_tuple(obj)) raise_type_error(api, param, "a list of numbers", obj);
  std::vector<double> values;
  for (py::handle item : obj) {
    values.push_back(to_float(item, api, entry_name(param, values.size()).c_str()));
  }
  return values;
}

FuncOrModule to_func_or_module(py::handle obj, const char* api, const char* param) {
  if (py::isinstance<PrimFunc>(obj)) return {obj.cast<Ref<PrimFunc>>(), nullptr};
  if (py::isinstance<IRModule>(obj)) return {nullptr, obj.cast<Ref<IRModule>>()};
  if (py::isinstance<schedule::Schedule>(obj)) {
    return {nullptr, obj.cast<const schedule::Schedule&>().mod()};
  }
  raise_type_error(api, param, "a PrimFunc, an IRModule or a tir.Schedule", obj);
}

}  // namespace kiln::python
