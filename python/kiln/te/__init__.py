"""Tensor expressions: placeholder, compute, extern, reduce_axis and reducers, lowered to
TensorIR by create_prim_func. The names and argument orders are TVM's (tvm.te)."""
from .._kiln import te as _te
from . import _iter_var
from .operation import compute, extern, var, size_var
from .reduction import sum, prod, max, min, comm_reducer  # noqa: A004 (TVM's names)

_iter_var.install()

Tensor = _te.Tensor
Operation = _te.Operation
PlaceholderOp = _te.PlaceholderOp
ComputeOp = _te.ComputeOp
ExternOp = _te.ExternOp

placeholder = _te.placeholder
reduce_axis = _te.reduce_axis
create_prim_func = _te.create_prim_func

if_then_else = _te.if_then_else
const = _te.const
floordiv, floormod = _te.floordiv, _te.floormod
truncdiv, truncmod = _te.truncdiv, _te.truncmod
all = _te.all  # noqa: A001 (TVM's name)
any = _te.any  # noqa: A001 (TVM's name)
max_value, min_value = _te.max_value, _te.min_value

exp, exp2, log, log2, log1p = _te.exp, _te.exp2, _te.log, _te.log2, _te.log1p
sqrt, rsqrt, sin, cos, tan, tanh = _te.sqrt, _te.rsqrt, _te.sin, _te.cos, _te.tan, _te.tanh
sigmoid, erf, abs, isnan = _te.sigmoid, _te.erf, _te.abs, _te.isnan  # noqa: A001
floor, ceil, round, trunc = _te.floor, _te.ceil, _te.round, _te.trunc  # noqa: A001
power = _te.power
pow = _te.pow  # noqa: A001

__all__ = [
    "Tensor", "Operation", "PlaceholderOp", "ComputeOp", "ExternOp",
    "placeholder", "compute", "extern", "var", "size_var", "reduce_axis", "create_prim_func",
    "sum", "prod", "max", "min", "comm_reducer",
    "if_then_else", "const", "floordiv", "floormod", "truncdiv", "truncmod", "all", "any",
    "max_value", "min_value",
    "exp", "exp2", "log", "log2", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
    "sigmoid", "erf", "abs", "isnan", "floor", "ceil", "round", "trunc", "power", "pow",
]
