"""softmax and log_softmax along one axis, max-subtracted so that large magnitudes do not
overflow; 16-bit float inputs are reduced in float32."""
from ... import te
from .._util import accumulation_dtype, check_float, check_tensor, normalize_axis, shape_of


def _along(t, row, axis, k):
    """t at the index of a row (the indices but `axis`) and k along axis."""
    return t[tuple(row[:axis]) + (k,) + tuple(row[axis:])]


def _checked_row_max(x, axis, api):
    """(axis, shape, acc dtype, max of x over axis in acc), x and axis checked for `api`."""
    check_tensor(x, api, "x")
    check_float(x, api, "x")
    axis = normalize_axis(axis, x.ndim, api)
    shape = shape_of(x)
    acc = accumulation_dtype(x.dtype)
    k = te.reduce_axis((0, shape[axis]), name="k")
    row_max = te.compute(shape[:axis] + shape[axis + 1:],
                         lambda *i: te.max(_along(x, i, axis, k).astype(acc), axis=k),
                         name="T_softmax_maxelem")
    return axis, shape, acc, row_max


def _row_statistics(x, axis, api):
    """(axis, shape, acc dtype, max over axis, sum of exp(x - max) over axis)."""
    axis, shape, acc, row_max = _checked_row_max(x, axis, api)
    k = te.reduce_axis((0, shape[axis]), name="k")

    row_sum = te.compute(
        shape[:axis] + shape[axis + 1:],
        lambda *i: te.sum(te.exp(_along(x, i, axis, k).astype(acc) - row_max[i]), axis=k),
        name="T_softmax_expsum")
    return axis, shape, acc, row_max, row_sum


def softmax(x, axis=-1):
    """exp(x - max) / sum(exp(x - max)) along axis. The exponentials are a stage of their own
    (T_softmax_exp, read by the sum and by the division), so that a schedule computes each once.

    Args:
        x (te.Tensor): a float tensor (float16 and bfloat16 are reduced in float32).
        axis (int): the axis normalized.

    Returns:
        te.Tensor: of x's shape and dtype.

    Raises:
        KilnTypeError: x is not a float tensor or axis is not an int.
        KilnIndexError: axis is out of range.
    """
    axis, shape, acc, row_max = _checked_row_max(x, axis, "topi.nn.softmax")

    def row(i):
        return i[:axis] + i[axis + 1:]

    exp = te.compute(shape, lambda *i: te.exp(x[i].astype(acc) - row_max[row(i)]),
                     name="T_softmax_exp")
    k = te.reduce_axis((0, shape[axis]), name="k")
    row_sum = te.compute(shape[:axis] + shape[axis + 1:],
                         lambda *r: te.sum(_along(exp, r, axis, k), axis=k),
                         name="T_softmax_expsum")
    return te.compute(shape, lambda *i: (exp[i] / row_sum[row(i)]).astype(x.dtype),
                      name="T_softmax_norm")


def log_softmax(x, axis=-1):
    """x - max - log(sum(exp(x - max))) along axis: the logarithm of softmax, without its
    rounding to 0 for very negative inputs.

    Args:
        x (te.Tensor): a float tensor (float16 and bfloat16 are reduced in float32).
        axis (int): the axis normalized.

    Returns:
        te.Tensor: of x's shape and dtype.

    Raises:
        KilnTypeError: x is not a float tensor or axis is not an int.
        KilnIndexError: axis is out of range.
    """
    axis, shape, acc, row_max, row_sum = _row_statistics(x, axis, "topi.nn.log_softmax")

    def fcompute(*i):
        row = i[:axis] + i[axis + 1:]
        return (x[i].astype(acc) - row_max[row] - te.log(row_sum[row])).astype(x.dtype)

    return te.compute(shape, fcompute, name="T_log_softmax")
