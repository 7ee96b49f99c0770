"""te.compute and the variables of tensor expressions (te.var, te.size_var).

te.compute reads the parameter names of fcompute to name the axes, as TVM does, calls it with one
index variable per dimension, and hands the body to the C++ core, which checks it.
"""
import inspect

from ..error import KilnIndexError, KilnTypeError
from .._kiln import ir as _ir
from .._kiln import te as _te


def var(name="tindex", dtype="int32"):
    """A scalar variable, e.g. a symbolic dimension: ``n = te.var("n")``."""
    return _ir.Var(name, dtype)


def size_var(name="size", dtype="int32"):
    """A variable known to be non-negative, for symbolic dimensions."""
    return _ir.SizeVar(name, dtype)


def _axis_names(fcompute, ndim, name):
    """The names of fcompute's index parameters (empty: the default names i, j, k, ...)."""
    if not callable(fcompute):
        raise KilnTypeError(
            f"te.compute: fcompute of compute {name} must be callable, found an object of type "
            f"{type(fcompute).__name__}")
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        return []
    positional = [p for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    has_varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    if has_varargs:
        if len(positional) > ndim:
            raise KilnIndexError(
                f"te.compute: fcompute of compute {name} takes at least {len(positional)} "
                f"arguments but the shape has {ndim} dimension{'s' if ndim != 1 else ''}")
        return []
    if len(positional) != ndim:
        found = ", ".join(p.name for p in positional)
        raise KilnIndexError(
            f"te.compute: fcompute of compute {name} takes {len(positional)} "
            f"argument{'s' if len(positional) != 1 else ''} ({found}) but the shape has {ndim} "
            f"dimension{'s' if ndim != 1 else ''}; it must take one index per dimension")
    return [p.name for p in positional]


def compute(shape, fcompute, name="compute", tag="", attrs=None):
    """A tensor defined element-wise: ``out[i, j, ...] = fcompute(i, j, ...)``.

    fcompute returns an expression (or a number), a reduction (te.sum, ...), or a tuple of the
    components of one tuple reducer call for a multi-output reduction. The axes are named after
    fcompute's parameters. Returns a Tensor, or a list of tensors when there are several outputs.
    """
    if isinstance(shape, (list, tuple)):
        shape = list(shape)
    else:
        shape = [shape]
    names = _axis_names(fcompute, len(shape), name)
    axes = _te._compute_axes(shape, names, name)
    body = fcompute(*[axis.var for axis in axes])
    values = list(body) if isinstance(body, (list, tuple)) else [body]
    outputs = _te._compute_from_body(axes, values, name, tag, attrs)
    return outputs[0] if len(outputs) == 1 else outputs
