"""kiln.topi: an operator library of tensor expressions, with the names and signatures of
TVM's topi. Every function returns te tensors, so its results compose with te.compute and with
each other; te.create_prim_func turns them into a PrimFunc.

Families: element-wise and broadcasting arithmetic and comparisons (broadcast.py), unary math
and casts (math.py), reductions (reduction.py), shape and index transforms (transform.py), and
the neural-network operators of kiln.topi.nn. default_schedule (schedule.py) gives any
function of them a schedule that needs no tuning, for a CPU ("llvm", cpu_schedule.py) or a GPU
("cuda", "opencl", gpu_schedule.py).

Example:
    x = te.placeholder((n, 64), "float32", name="x")
    y = topi.nn.softmax(topi.add(x, 1.0), axis=-1)
    func = te.create_prim_func([x, y])
    rt = kiln.build(topi.default_schedule(func, target="cuda").mod, target="cuda")
"""
from .broadcast import (add, subtract, multiply, divide, floor_divide, floor_mod, power,
                        maximum, minimum, equal, not_equal, less, less_equal, greater,
                        greater_equal, logical_and, logical_or, logical_not, where)
from .math import (exp, exp2, log, log2, log1p, sqrt, rsqrt, sin, cos, tan, tanh, sigmoid, erf,
                   floor, ceil, round, trunc, isnan, negative, abs, clip, cast)  # noqa: A004
from .reduction import sum, prod, max, min, all, any, mean, argmax, argmin  # noqa: A004
from .transform import (reshape, transpose, concatenate, split, take, pad, expand_dims,
                        squeeze, broadcast_to, strided_slice)
from . import nn
from .schedule import default_schedule

__all__ = [
    "add", "subtract", "multiply", "divide", "floor_divide", "floor_mod", "power", "maximum",
    "minimum", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_not", "where",
    "exp", "exp2", "log", "log2", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
    "sigmoid", "erf", "floor", "ceil", "round", "trunc", "isnan", "negative", "abs", "clip",
    "cast",
    "sum", "prod", "max", "min", "all", "any", "mean", "argmax", "argmin",
    "reshape", "transpose", "concatenate", "split", "take", "pad", "expand_dims", "squeeze",
    "broadcast_to", "strided_slice",
    "nn", "default_schedule",
]
