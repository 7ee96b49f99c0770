"""layer_norm and rms_norm over a set of axes, with statistics in float32 for 16-bit floats."""
from ... import te
from ...error import KilnValueError
from .._util import (accumulation_dtype, check_float, check_tensor, dims_equal, normalize_axes,
                     shape_of, shape_str)


def _check_affine(param, data, axes, api, what):
    """Checks that param (gamma, beta or weight) has the shape of data's normalized axes."""
    check_tensor(param, api, what)
    expected = [shape_of(data)[a] for a in axes]
    found = shape_of(param)
    if len(found) != len(expected) or not all(dims_equal(x, y) for x, y in zip(found, expected)):
        raise KilnValueError(f"{api}: {what} {param.name} must have the shape of the normalized "
                             f"axes {tuple(axes)} of {data.name}, {shape_str(expected)}, found "
                             f"{shape_str(found)}")


def _mean_over(data, axes, value, name, acc):
    """A tensor of data's shape with the axes reduced to 1: the mean of value(indices)."""
    shape = shape_of(data)
    rvars = [te.reduce_axis((0, shape[a]), name=f"k{a}") for a in axes]
    count = 1
    for a in axes:
        count = count * shape[a]
    count = te.const(float(count), acc) if isinstance(count, int) else count.astype(acc)
    kept_shape = [1 if i in axes else d for i, d in enumerate(shape)]

    def fcompute(*indices):
        source = list(indices)
        for a, rv in zip(axes, rvars):
            source[a] = rv
        return te.sum(value(tuple(source)), axis=rvars)

    total = te.compute(kept_shape, fcompute, name=name + "_sum")
    return te.compute(kept_shape, lambda *i: total[i] / count, name=name)


def _reduced_index(indices, axes):
    return tuple(0 if i in axes else index for i, index in enumerate(indices))


def layer_norm(data, gamma, beta, axis, epsilon=1e-5):
    """(data - mean) / sqrt(var + epsilon) * gamma + beta, with the mean and the (biased)
    variance taken over axis (PyTorch's LayerNorm with axis the last dimensions).

    Args:
        data (te.Tensor): a float tensor; 16-bit floats are normalized in float32.
        gamma (te.Tensor): the scale, of the shape of data's axes in axis.
        beta (te.Tensor or None): the shift, shaped as gamma; None adds nothing.
        axis (int or list of int): the normalized axes.
        epsilon (float): added to the variance.

    Returns:
        te.Tensor: of data's shape and dtype.

    Raises:
        KilnTypeError: data is not a float tensor, gamma or beta is not a tensor, or an axis
            is not an int.
        KilnIndexError: an axis is out of range.
        KilnValueError: gamma or beta does not have the shape of the normalized axes.
    """
    api = "topi.nn.layer_norm"
    check_tensor(data, api, "data")
    check_float(data, api, "data")
    axes = normalize_axes(axis, data.ndim, api)
    _check_affine(gamma, data, axes, api, "gamma")
    if beta is not None:
        _check_affine(beta, data, axes, api, "beta")
    acc = accumulation_dtype(data.dtype)
    mean = _mean_over(data, axes, lambda i: data[i].astype(acc), "T_layer_norm_mean", acc)

    def centered_square(i):
        centered = data[i].astype(acc) - mean[_reduced_index(i, axes)]
        return centered * centered

    var = _mean_over(data, axes, centered_square, "T_layer_norm_var", acc)

    def fcompute(*i):
        row = _reduced_index(i, axes)
        param = tuple(i[a] for a in axes)
        value = (data[i].astype(acc) - mean[row]) * te.rsqrt(var[row] + epsilon)
        value = value * gamma[param].astype(acc)
        if beta is not None:
            value = value + beta[param].astype(acc)
        return value.astype(data.dtype)

    return te.compute(shape_of(data), fcompute, name="T_layer_norm")


def rms_norm(data, weight, axis, epsilon=1e-5):
    """data / sqrt(mean(data ** 2) + epsilon) * weight, with the mean taken over axis.

    Args:
        data (te.Tensor): a float tensor; 16-bit floats are normalized in float32.
        weight (te.Tensor): the scale, of the shape of data's axes in axis.
        axis (int or list of int): the normalized axes.
        epsilon (float): added to the mean square.

    Returns:
        te.Tensor: of data's shape and dtype.

    Raises:
        KilnTypeError: data is not a float tensor, weight is not a tensor, or an axis is not
            an int.
        KilnIndexError: an axis is out of range.
        KilnValueError: weight does not have the shape of the normalized axes.
    """
    api = "topi.nn.rms_norm"
    check_tensor(data, api, "data")
    check_float(data, api, "data")
    axes = normalize_axes(axis, data.ndim, api)
    _check_affine(weight, data, axes, api, "weight")
    acc = accumulation_dtype(data.dtype)

    def square(i):
        value = data[i].astype(acc)
        return value * value

    mean_square = _mean_over(data, axes, square, "T_rms_norm_mean_square", acc)

    def fcompute(*i):
        scale = te.rsqrt(mean_square[_reduced_index(i, axes)] + epsilon)
        value = data[i].astype(acc) * scale * weight[tuple(i[a] for a in axes)].astype(acc)
        return value.astype(data.dtype)

    return te.compute(shape_of(data), fcompute, name="T_rms_norm")
