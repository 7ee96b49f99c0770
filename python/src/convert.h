// Conversions between Python objects and IR values shared by the binding files: Python numbers
// and expressions to Expr, dtype strings to DataType, and the Ref holder declaration.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "kiln/ir/function.h"
#include "kiln/ir/op.h"

PYBIND11_DECLARE_HOLDER_TYPE(T, kiln::ir::Ref<T>, true)

namespace kiln::python {

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

}  // namespace kiln::python
