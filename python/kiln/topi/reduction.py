"""Reductions over axes (sum, prod, max, min, mean, argmax, argmin, all, any), with NumPy's
``axis`` (an int, a tuple of ints or None for every axis) and ``keepdims``."""
from .. import te, tir
from ..error import KilnTypeError, KilnValueError
from ._util import check_tensor, const_int, normalize_axes, shape_of


def _reduce_layout(data, axis, keepdims, api):
    """(output shape, reduced axes, a function (out indices, reduce vars) -> input indices)."""
    check_tensor(data, api, "data")
    shape = shape_of(data)
    axes = normalize_axes(axis, len(shape), api)
    for a in axes:
        if const_int(shape[a]) == 0:
            raise KilnValueError(f"{api}: axis {a} of {data.name} is empty")
    out_shape = []
    for i, dim in enumerate(shape):
        if i not in axes:
            out_shape.append(dim)
        elif keepdims:
            out_shape.append(1)

    def input_indices(out_indices, reduce_vars):
        indices, out_pos, red_pos = [], 0, 0
        for i in range(len(shape)):
            if i in axes:
                indices.append(reduce_vars[red_pos])
                red_pos += 1
                out_pos += 1 if keepdims else 0
            else:
                indices.append(out_indices[out_pos])
                out_pos += 1
        return tuple(indices)

    return out_shape, axes, input_indices


def _reduce(data, axis, keepdims, api, name, reducer, value=None, dtype=None):
    out_shape, axes, input_indices = _reduce_layout(data, axis, keepdims, api)
    shape = shape_of(data)
    rvars = [te.reduce_axis((0, shape[a]), name=f"k{a}") for a in axes]

    def fcompute(*indices):
        element = data[input_indices(indices, rvars)]
        if dtype is not None:
            element = element.astype(dtype)
        if value is not None:
            element = value(element)
        return reducer(element, axis=rvars)

    return te.compute(out_shape, fcompute, name=name)


_DOC = """The {what} of data's elements over axis.

    Args:
        data (te.Tensor): the input.
        axis (int, tuple of int or None): the axes to reduce (negative counts from the end);
            None reduces every axis.
        keepdims (bool): keep each reduced axis as a dimension of 1.

    Returns:
        te.Tensor: {result}

    Raises:
        KilnTypeError: data is not a tensor or an axis is not an int.
        KilnIndexError: an axis is out of range.
        KilnValueError: an axis is named twice or is empty.
    """


def sum(data, axis=None, keepdims=False):  # noqa: A001 (TVM's name)
    return _reduce(data, axis, keepdims, "topi.sum", "T_sum", te.sum)


def prod(data, axis=None, keepdims=False):
    return _reduce(data, axis, keepdims, "topi.prod", "T_prod", te.prod)


def max(data, axis=None, keepdims=False):  # noqa: A001 (TVM's name)
    return _reduce(data, axis, keepdims, "topi.max", "T_max", te.max)


def min(data, axis=None, keepdims=False):  # noqa: A001 (TVM's name)
    return _reduce(data, axis, keepdims, "topi.min", "T_min", te.min)


def all(data, axis=None, keepdims=False):  # noqa: A001 (TVM's name)
    if check_tensor(data, "topi.all", "data").dtype != "bool":
        raise KilnTypeError(f"topi.all: data {data.name} must be a bool tensor, found "
                            f"{data.dtype}")
    return _logical_reduce(data, axis, keepdims, "topi.all", te.min)


def any(data, axis=None, keepdims=False):  # noqa: A001 (TVM's name)
    if check_tensor(data, "topi.any", "data").dtype != "bool":
        raise KilnTypeError(f"topi.any: data {data.name} must be a bool tensor, found "
                            f"{data.dtype}")
    return _logical_reduce(data, axis, keepdims, "topi.any", te.max)


def _logical_reduce(data, axis, keepdims, api, reducer):
    name = api.replace("topi.", "T_")
    as_int = _reduce(data, axis, keepdims, api, name + "_int", reducer, dtype="int8")
    return te.compute(shape_of(as_int), lambda *i: as_int[i] != 0, name=name)


for _func, _what, _result in (
        (sum, "sum", "of data's dtype."), (prod, "product", "of data's dtype."),
        (max, "maximum", "of data's dtype."), (min, "minimum", "of data's dtype."),
        (all, "logical and", "bool (data must be bool)."),
        (any, "logical or", "bool (data must be bool).")):
    _func.__doc__ = _DOC.format(what=_what, result=_result)


def mean(data, axis=None, keepdims=False):
    """The mean of data's elements over axis, accumulated in float32 for 16-bit floats and
    integers (the result of an integer tensor is float32).

    Args:
        data (te.Tensor): the input.
        axis (int, tuple of int or None): the axes to reduce; None reduces every axis.
        keepdims (bool): keep each reduced axis as a dimension of 1.

    Returns:
        te.Tensor: of data's dtype for a float tensor, float32 for an integer one.

    Raises:
        KilnTypeError: data is not a tensor or an axis is not an int.
        KilnIndexError: an axis is out of range.
        KilnValueError: an axis is named twice or is empty.
    """
    api = "topi.mean"
    check_tensor(data, api, "data")
    dtype = data.dtype if data.dtype in ("float32", "float64") else "float32"
    out_dtype = data.dtype if data.dtype.startswith(("float", "bfloat")) else "float32"
    total = _reduce(data, axis, keepdims, api, "T_mean_sum", te.sum, dtype=dtype)
    shape = shape_of(data)
    count = 1
    for a in normalize_axes(axis, len(shape), api):
        count = count * shape[a]
    if isinstance(count, int):
        scale = te.const(1.0 / count, dtype)
    else:
        scale = te.const(1.0, dtype) / count.astype(dtype)
    return te.compute(shape_of(total), lambda *i: (total[i] * scale).astype(out_dtype),
                      name="T_mean")


def _arg_reducer(is_max, name):
    """A tuple reducer of (index, value) that keeps the first index of the extreme value, and
    the first NaN (NumPy's argmax and argmin). Its identity, (the largest index, -inf for a
    float argmax), loses to every element, ties included: an input of -inf or of the lowest
    value still gets index 0, and partial results of empty slices (rfactor, GPU threads
    without elements) combine away."""
    def fcombine(x, y):
        xi, xv = x
        yi, yv = y
        if xv.dtype.startswith(("float", "bfloat")):
            x_nan, y_nan = te.isnan(xv), te.isnan(yv)
        else:
            x_nan = y_nan = None
        better = yv > xv if is_max else yv < xv
        tie = (yv == xv) & (yi < xi)
        take_y = better | tie
        if x_nan is not None:
            take_y = (~x_nan & (take_y | y_nan)) | (x_nan & y_nan & (yi < xi))
        return tir.Select(take_y, yi, xi), tir.Select(take_y, yv, xv)

    def fidentity(index_dtype, value_dtype):
        if value_dtype.startswith(("float", "bfloat")):
            start = te.const(float("-inf") if is_max else float("inf"), value_dtype)
        else:
            start = te.min_value(value_dtype) if is_max else te.max_value(value_dtype)
        return te.max_value(index_dtype), start

    return te.comm_reducer(fcombine, fidentity, name=name)


def _arg_reduce(data, axis, keepdims, is_max, api, name):
    check_tensor(data, api, "data")
    shape = shape_of(data)
    if axis is not None and not isinstance(axis, int):
        raise KilnTypeError(f"{api}: axis must be an int or None, found an object of type "
                            f"{type(axis).__name__}")
    out_shape, axes, input_indices = _reduce_layout(data, axis, keepdims, api)
    rvars = [te.reduce_axis((0, shape[a]), name=f"k{a}") for a in axes]
    # The flat index over the reduced axes (a single axis: its own index).
    flat = None
    for a, rv in zip(axes, rvars):
        flat = rv.var if flat is None else flat * shape[a] + rv.var
    reducer = _arg_reducer(is_max, name)

    def fcompute(*indices):
        return reducer((flat.astype("int32"), data[input_indices(indices, rvars)]), axis=rvars)

    index, _ = te.compute(out_shape, fcompute, name=name)
    return index


def argmax(data, axis=None, keepdims=False):
    """The index of the largest element over axis: the first one when several are equal, and
    the first NaN when there is one (NumPy's rules).

    Args:
        data (te.Tensor): the input.
        axis (int or None): the axis to reduce; None: the flat index over every axis.
        keepdims (bool): keep the reduced axis as a dimension of 1.

    Returns:
        te.Tensor: int32 indices.

    Raises:
        KilnTypeError: data is not a tensor or axis is not an int or None.
        KilnIndexError: axis is out of range.
        KilnValueError: the axis is empty.
    """
    return _arg_reduce(data, axis, keepdims, True, "topi.argmax", "T_argmax")


def argmin(data, axis=None, keepdims=False):
    """The index of the smallest element over axis: the first one when several are equal, and
    the first NaN when there is one (NumPy's rules).

    Args:
        data (te.Tensor): the input.
        axis (int or None): the axis to reduce; None: the flat index over every axis.
        keepdims (bool): keep the reduced axis as a dimension of 1.

    Returns:
        te.Tensor: int32 indices.

    Raises:
        KilnTypeError: data is not a tensor or axis is not an int or None.
        KilnIndexError: axis is out of range.
        KilnValueError: the axis is empty.
    """
    return _arg_reduce(data, axis, keepdims, False, "topi.argmin", "T_argmin")
