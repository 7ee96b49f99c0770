"""Reducers of tensor expressions: te.sum, te.max, te.min, te.prod and te.comm_reducer.

te.max and te.min also take two expressions and no axis, then they are element-wise, as in TVM.
"""
from .._kiln import ir as _ir
from .._kiln import te as _te
from ..error import KilnIndexError, KilnTypeError


def _is_axis(obj):
    if isinstance(obj, _ir.IterVar):
        return True
    return isinstance(obj, (list, tuple)) and all(isinstance(a, _ir.IterVar) for a in obj)


def sum(expr, axis, where=None, init=None):  # noqa: A001 (TVM's name)
    """The sum of ``expr`` over the reduce axes ``axis``, for the body of a te.compute.

    Args:
        expr (PrimExpr): the value at each point of the axes.
        axis (IterVar or list of IterVar): reduce axes from te.reduce_axis.
        where (PrimExpr, optional): count only the points where this bool holds.
        init (PrimExpr or number, optional): the starting value; default 0.

    Returns:
        Reduce: the reduction, to return from fcompute.

    Raises:
        KilnTypeError: expr is not an expression or axis is not reduce axes.
        KilnValueError: the reduction is not valid (see te.compute).

    Example:
        k = te.reduce_axis((0, K), name="k")
        B = te.compute((M,), lambda i: te.sum(A[i, k], axis=k), name="B")
    """
    return _te._sum(expr, axis, where, init)


def prod(expr, axis, where=None, init=None):
    """The product of ``expr`` over the reduce axes ``axis``; starts from ``init`` when given,
    else 1. Arguments and errors as te.sum.

    Example:
        B = te.compute((M,), lambda i: te.prod(A[i, k], axis=k), name="B")
    """
    return _te._prod(expr, axis, where, init)


def max(expr, axis=None, where=None, init=None):  # noqa: A001 (TVM's name)
    """The maximum of ``expr`` over the reduce axes ``axis`` (starting from the dtype's lowest
    value, or ``init``); or, called with two expressions and no axis, the element-wise maximum
    ``te.max(a, b)``. Arguments and errors as te.sum.

    Raises:
        KilnTypeError: neither reduce axes nor a second expression is given.

    Example:
        B = te.compute((M,), lambda i: te.max(A[i, k], axis=k), name="B")
        R = te.compute((M,), lambda i: te.max(A[i, 0], 0.0), name="R")   # ReLU
    """
    if axis is not None and not _is_axis(axis) and where is None and init is None:
        return _te._elementwise_max(expr, axis)
    if axis is None:
        raise KilnTypeError("te.max: expected reduce axes (axis=...) or a second expression")
    return _te._max(expr, axis, where, init)


def min(expr, axis=None, where=None, init=None):  # noqa: A001 (TVM's name)
    """The minimum of ``expr`` over the reduce axes ``axis`` (starting from the dtype's highest
    value, or ``init``); or, called with two expressions and no axis, the element-wise minimum
    ``te.min(a, b)``. Arguments and errors as te.sum.

    Raises:
        KilnTypeError: neither reduce axes nor a second expression is given.

    Example:
        B = te.compute((M,), lambda i: te.min(A[i, k], axis=k), name="B")
    """
    if axis is not None and not _is_axis(axis) and where is None and init is None:
        return _te._elementwise_min(expr, axis)
    if axis is None:
        raise KilnTypeError("te.min: expected reduce axes (axis=...) or a second expression")
    return _te._min(expr, axis, where, init)


def _as_list(value, count, what, name):
    """fcombine's or fidentity's result as a list of `count` components."""
    if count == 1 and not isinstance(value, (list, tuple)):
        return [value]
    if not isinstance(value, (list, tuple)) or len(value) != count:
        found = len(value) if isinstance(value, (list, tuple)) else 1
        raise KilnIndexError(
            f"te.comm_reducer {name}: {what} must return {count} value"
            f"{'s' if count != 1 else ''} (one per reduced component), found {found}")
    return list(value)


def comm_reducer(fcombine, fidentity, name="reduce"):
    """A commutative reducer: ``fcombine(x, y)`` combines two partial values and
    ``fidentity(dtype)`` gives the neutral element. For a tuple reduction (e.g. argmax) x and y are
    tuples and fidentity receives one dtype per component.

    The result is called as ``reducer(expr, axis, where=None, init=None)``, with expr a tuple of
    expressions for a tuple reducer; it returns a Reduce, or a tuple of them.

    Args:
        fcombine (callable): (x, y) -> the combined value (or tuple of values).
        fidentity (callable): (dtype, ...) -> the neutral element (or tuple of them).
        name (str): the reducer's name in messages.

    Raises:
        KilnTypeError: fcombine or fidentity is not callable.
        KilnIndexError: (when the reducer is called) fcombine or fidentity returns a different
            number of values than expr has components.

    Example:
        mysum = te.comm_reducer(lambda x, y: x + y, lambda t: te.const(0, t), name="mysum")
        B = te.compute((M,), lambda i: mysum(A[i, k], axis=k), name="B")
    """
    for what, func in (("fcombine", fcombine), ("fidentity", fidentity)):
        if not callable(func):
            raise KilnTypeError(f"te.comm_reducer: {what} must be callable, found an object of "
                                f"type {type(func).__name__}")
    api = f"te.comm_reducer {name}"

    def reducer(expr, axis, where=None, init=None):
        is_tuple = isinstance(expr, (list, tuple))
        exprs = [_te._to_expr(e, api) for e in (expr if is_tuple else [expr])]
        dtypes = [e.dtype for e in exprs]
        if is_tuple:
            lhs = tuple(_ir.Var(f"x{i}", t) for i, t in enumerate(dtypes))
            rhs = tuple(_ir.Var(f"y{i}", t) for i, t in enumerate(dtypes))
            combined = fcombine(lhs, rhs)
        else:
            lhs, rhs = (_ir.Var("x", dtypes[0]),), (_ir.Var("y", dtypes[0]),)
            combined = fcombine(lhs[0], rhs[0])
        result = _as_list(combined, len(exprs), "fcombine", name)
        identity = _as_list(fidentity(*dtypes), len(exprs), "fidentity", name)
        combiner = _te._make_comm_reducer(list(lhs), list(rhs), result, identity, api)
        outputs = _te._comm_reduce(combiner, exprs, axis, where, init, api)
        return tuple(outputs) if is_tuple else outputs[0]

    reducer.__name__ = name
    reducer.__doc__ = f"The {name} reduction of expr over axis (made by te.comm_reducer)."
    return reducer
