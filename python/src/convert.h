// Conversions between Python objects and C++ values shared by the binding files: Python numbers
// and expressions to Expr, dtype strings to DataType, and the typed arguments of every binding.
//
// Bindings take user arguments as py::handle and convert them here rather than declaring C++
// parameter types: pybind11 answers a mismatch with a generic "incompatible function
// arguments" TypeError that names neither the parameter nor what it accepts, while these
// helpers raise a kType error (KilnTypeError in Python) of the form
//   "<api>: <param> must be <expected>, found <Python type>".
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "kiln/ir/function.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

PYBIND11_DECLARE_HOLDER_TYPE(T, kiln::ir::Ref<T>, true)

namespace kiln::python {

// The name of an object's Python type, for messages: "int", "BlockRV", "PrimFunc".
std::string python_type_name(pybind11::handle obj);

// Raises the kType error "<api>: <param> must be <expected>, found <type of obj>".
[[noreturn]] void raise_type_error(const char* api, const char* param, const char* expected,
                                   pybind11::handle obj);

// A Python int, float, bool or Expr as an Expr. Ints become int32 when they fit, else int64.
// `api` and `what` name the call and the argument in the error for anything else.
ir::Expr to_expr(pybind11::handle obj, const char* api, const char* what);

// A Python number converted to the type of `like` (the literal rule of kiln/ir/op.h); an Expr is
// returned as it is.
ir::Expr to_expr_like(pybind11::handle obj, const ir::Expr& like, const char* api);

// A shape: a sequence of ints / integer expressions (or a single one).
std::vector<ir::Expr> to_shape(pybind11::handle obj, const char* api);

// "float32" (or a numpy dtype) to a DataType; `api` names the call in errors.
ir::DataType to_dtype(pybind11::handle obj, const char* api);

// An annotation value (int, float, str, bool or Expr) as an Expr.
ir::Expr to_attr_value(pybind11::handle obj, const char* api);
// An Expr annotation value back to a Python int, float, str or the Expr itself.
pybind11::object from_attr_value(const ir::Expr& value);

// "param[index]", naming one entry of a list argument in messages.
std::string entry_name(const char* param, size_t index);

// --- Typed arguments -------------------------------------------------------------------------
// Each takes the argument `param` of `api` and raises the kType error above for an object of
// another kind. None is refused unless the name says optional.

// An int (a Python int, a NumPy integer or an IntImm; not a bool or a float). A value outside
// [min, max] is a kValue error.
int64_t to_int(pybind11::handle obj, const char* api, const char* param, int64_t min = INT64_MIN,
               int64_t max = INT64_MAX);
std::optional<int64_t> to_optional_int(pybind11::handle obj, const char* api, const char* param);
// A real number (a Python int or float, or a NumPy number; not a bool).
double to_float(pybind11::handle obj, const char* api, const char* param);
// A bool (or a NumPy bool, or an int as its truth value).
bool to_bool(pybind11::handle obj, const char* api, const char* param);
std::optional<bool> to_optional_bool(pybind11::handle obj, const char* api, const char* param);
// A str.
std::string to_str(pybind11::handle obj, const char* api, const char* param);
std::optional<std::string> to_optional_str(pybind11::handle obj, const char* api,
                                           const char* param);
// A path: a str or an os.PathLike, as a string.
std::optional<std::string> to_optional_path(pybind11::handle obj, const char* api,
                                            const char* param);
// A list or tuple of ints / of real numbers.
std::vector<int64_t> to_int_list(pybind11::handle obj, const char* api, const char* param);
std::optional<std::vector<int64_t>> to_optional_int_list(pybind11::handle obj, const char* api,
                                                         const char* param);
std::vector<double> to_float_list(pybind11::handle obj, const char* api, const char* param);

// An instance of the bound C++ class T (`expected` names its Python class in the error),
// returned by reference to the object Python holds.
template <class T>
T& to_object(pybind11::handle obj, const char* api, const char* param, const char* expected) {
  if (!pybind11::isinstance<T>(obj)) raise_type_error(api, param, expected, obj);
  return obj.cast<T&>();
}

// An IR node of class T (a PrimFunc, a Var, a Buffer …).
template <class T>
ir::Ref<T> to_node(pybind11::handle obj, const char* api, const char* param, const char* expected) {
  if (!pybind11::isinstance<T>(obj)) raise_type_error(api, param, expected, obj);
  return obj.cast<ir::Ref<T>>();
}

// A list or tuple of IR nodes of class T.
template <class T>
std::vector<ir::Ref<T>> to_node_list(pybind11::handle obj, const char* api, const char* param,
                                     const char* expected) {
  if (!pybind11::isinstance<pybind11::list>(obj) && !pybind11::isinstance<pybind11::tuple>(obj)) {
    raise_type_error(api, param, expected, obj);
  }
  std::vector<ir::Ref<T>> nodes;
  for (pybind11::handle item : obj) nodes.push_back(to_node<T>(item, api, param, expected));
  return nodes;
}

// What a function-taking API runs on: a PrimFunc, an IRModule, or a tir.Schedule (its module).
// A PrimFunc is returned in `func`, a module or a schedule's module in `mod`.
struct FuncOrModule {
  ir::Ref<ir::PrimFunc> func;
  ir::Ref<ir::IRModule> mod;
};
FuncOrModule to_func_or_module(pybind11::handle obj, const char* api, const char* param);

}  // namespace kiln::python
