"""Activation functions: relu, leaky_relu, gelu (PyTorch's exact and tanh forms), silu and
swiglu. 16-bit float inputs are computed in float32 and rounded back."""
import math

from ... import te
from .._util import (FLOAT16_TYPES, check_choice, check_float, check_tensor, const_int, dim_str,
                     normalize_axis, shape_of)
from ...error import KilnValueError


def _activation(x, api, name, function):
    check_tensor(x, api, "x")
    check_float(x, api, "x")
    acc = "float32" if x.dtype in FLOAT16_TYPES else x.dtype
    return te.compute(shape_of(x), lambda *i: function(x[i].astype(acc)).astype(x.dtype),
                      name=name)


def relu(x):
    """max(x, 0), element-wise.

    Args:
        x (te.Tensor): the input.

    Returns:
        te.Tensor: of x's shape and dtype.

    Raises:
        KilnTypeError: x is not a tensor.
    """
    check_tensor(x, "topi.nn.relu", "x")
    return te.compute(shape_of(x), lambda *i: te.max(x[i], 0), name="T_relu")


def leaky_relu(x, alpha):
    """x where x > 0, else alpha * x.

    Args:
        x (te.Tensor): a float tensor.
        alpha (float): the slope below 0.

    Returns:
        te.Tensor: of x's shape and dtype.

    Raises:
        KilnTypeError: x is not a float tensor.
    """
    return _activation(x, "topi.nn.leaky_relu", "T_leaky_relu",
                       lambda v: te.if_then_else(v > 0, v, v * alpha))


def gelu(x, approximate="none"):
    """The Gaussian error linear unit, PyTorch's GELU: x * Phi(x) =
    0.5 * x * (1 + erf(x / sqrt(2))) for approximate="none", and
    0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3))) for approximate="tanh".

    Args:
        x (te.Tensor): a float tensor.
        approximate (str): "none" or "tanh".

    Returns:
        te.Tensor: of x's shape and dtype.

    Raises:
        KilnTypeError: x is not a float tensor.
        KilnValueError: approximate is neither "none" nor "tanh".
    """
    check_choice(approximate, ("none", "tanh"), "topi.nn.gelu", "approximate")
    if approximate == "none":
        def function(v):
            return 0.5 * v * (1.0 + te.erf(v * (1.0 / math.sqrt(2.0))))
    else:
        def function(v):
            inner = math.sqrt(2.0 / math.pi) * (v + 0.044715 * v * v * v)
            return 0.5 * v * (1.0 + te.tanh(inner))
    return _activation(x, "topi.nn.gelu", "T_gelu", function)


def silu(x):
    """x * sigmoid(x) (the swish function), element-wise.

    Args:
        x (te.Tensor): the input (a float tensor).

    Returns:
        te.Tensor: of x's shape and dtype.

    Raises:
        KilnTypeError: x is not a float tensor.
    """
    return _activation(x, "topi.nn.silu", "T_silu", lambda v: v * te.sigmoid(v))


def swiglu(x, axis=-1):
    """silu(gate) * up, where gate and up are the first and the second half of x along axis
    (the gated unit of LLaMA-style feed-forward layers, with the two projections stacked).

    Args:
        x (te.Tensor): a float tensor whose extent along axis is even.
        axis (int): the axis that holds [gate, up].

    Returns:
        te.Tensor: of x's shape with axis halved, and x's dtype.

    Raises:
        KilnTypeError: x is not a float tensor or axis is not an int.
        KilnIndexError: axis is out of range.
        KilnValueError: the extent along axis is odd or symbolic.
    """
    api = "topi.nn.swiglu"
    check_tensor(x, api, "x")
    check_float(x, api, "x")
    axis = normalize_axis(axis, x.ndim, api)
    shape = shape_of(x)
    extent = const_int(shape[axis])
    if extent is None or extent % 2:
        raise KilnValueError(f"{api}: axis {axis} of {x.name} must have an even constant extent "
                             f"(gate and up halves), found {dim_str(shape[axis])}")
    half = extent // 2
    out_shape = list(shape)
    out_shape[axis] = half
    acc = "float32" if x.dtype in FLOAT16_TYPES else x.dtype

    def fcompute(*i):
        up_index = list(i)
        up_index[axis] = i[axis] + half
        gate = x[i].astype(acc)
        return (gate * te.sigmoid(gate) * x[tuple(up_index)].astype(acc)).astype(x.dtype)

    return te.compute(out_shape, fcompute, name="T_swiglu")
