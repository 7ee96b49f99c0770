"""softmax and log_softmax along one axis, max-subtracted so that large magnitudes do not
overflow; 16-bit float inputs are reduced in float32."""
from ... import te
from .._util import accumulation_dtype, check_float, check_tensor, normalize_axis, shape_of


def _row_statistics(x, axis, api):
    """(axis, shape, acc dtype, max over axis, sum of exp(x - max) over axis)."""
    check_tensor(x, api, "x")
    check_float(x, api, "x")
    axis = normalize_axis(axis, x.ndim, api)
    shape = shape_of(x)
    acc = accumulation_dtype(x.dtype)
    reduced_shape = shape[:axis] + shape[axis + 1:]

    def element(indices, k):
        return x[tuple(indices[:axis]) + (k,) + tuple(indices[axis:])].astype(acc)

    k1 = te.reduce_axis((0, shape[axis]), name="k")
    row_max = te.compute(reduced_shape, lambda *i: te.max(element(i, k1), axis=k1),
                         name="T_softmax_maxelem")
    k2 = te.reduce_axis((0, shape[axis]), name="k")
    row_sum = te.compute(reduced_shape,
                         lambda *i: te.sum(te.exp(element(i, k2) - row_max[i]), axis=k2),
                         name="T_softmax_expsum")
    return axis, shape, acc, row_max, row_sum


def softmax(x, axis=-1):
    """exp(x - max) / sum(exp(x - max)) along axis.

    Args:
        x (te.Tensor): a float tensor (float16 and bfloat16 are reduced in float32).
        axis (int): the axis normalized.

    Returns:
        te.Tensor: of x's shape and dtype.

    Raises:
        KilnTypeError: x is not a float tensor or axis is not an int.
        KilnIndexError: axis is out of range.
    """
    axis, shape, acc, row_max, row_sum = _row_statistics(x, axis, "topi.nn.softmax")

    def fcompute(*i):
        row = i[:axis] + i[axis + 1:]
        return (te.exp(x[i].astype(acc) - row_max[row]) / row_sum[row]).astype(x.dtype)

    return te.compute(shape, fcompute, name="T_softmax_norm")


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
