"""Affine int8/uint8 quantization (ONNX QuantizeLinear / DequantizeLinear): per-tensor or
per-channel scale and zero point, rounding half to even and saturating."""
from ... import te
from ...error import KilnTypeError, KilnValueError
from ...ir import PrimExpr
from .._util import check_choice, check_tensor, dim_str, dims_equal, normalize_axis, shape_of

_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-2**31, 2**31 - 1)}


def _parameter(value, data, axis, api, what, dtype):
    """A function of data's indices giving the scale or zero point (per tensor or per channel)."""
    if isinstance(value, te.Tensor):
        shape = shape_of(value)
        if len(shape) == 0 or (len(shape) == 1 and shape[0] == 1):
            return lambda i: value[(0,) * len(shape)].astype(dtype)
        channels = shape_of(data)[axis]
        if len(shape) != 1 or not dims_equal(shape[0], channels):
            raise KilnValueError(f"{api}: {what} {value.name} must be a scalar, a (1,) tensor or "
                                 f"have one entry per channel of axis {axis} "
                                 f"({dim_str(channels)}), found shape {shape}")
        return lambda i: value[i[axis]].astype(dtype)
    if isinstance(value, PrimExpr):
        return lambda i: value.astype(dtype)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return lambda i: te.const(value, dtype)
    raise KilnTypeError(f"{api}: {what} must be a number, a PrimExpr or a tensor, found an object "
                        f"of type {type(value).__name__}")


def quantize(data, scale, zero_point, axis=-1, out_dtype="int8"):
    """clamp(round(data / scale) + zero_point) to out_dtype's range, rounding half to even.

    Args:
        data (te.Tensor): a float tensor.
        scale (number, PrimExpr or te.Tensor): per tensor (a number, a scalar or a (1,)
            tensor) or per channel (a tensor with one entry per index of axis).
        zero_point (number, PrimExpr or te.Tensor): as scale, integers.
        axis (int): the channel axis of per-channel parameters.
        out_dtype (str): "int8", "uint8" or "int32".

    Returns:
        te.Tensor: of data's shape and out_dtype.

    Raises:
        KilnTypeError: data is not a tensor, or a parameter is of the wrong kind.
        KilnIndexError: axis is out of range.
        KilnValueError: out_dtype is not supported, or a parameter tensor's shape does not fit.
    """
    api = "topi.nn.quantize"
    check_tensor(data, api, "data")
    check_choice(out_dtype, tuple(_RANGES), api, "out_dtype")
    axis = normalize_axis(axis, data.ndim, api)
    get_scale = _parameter(scale, data, axis, api, "scale", "float32")
    get_zero = _parameter(zero_point, data, axis, api, "zero_point", "float32")
    low, high = _RANGES[out_dtype]

    def fcompute(*i):
        q = te.round(data[i].astype("float32") / get_scale(i)) + get_zero(i)
        return te.min(te.max(q, float(low)), float(high)).astype(out_dtype)

    return te.compute(shape_of(data), fcompute, name="T_quantize")


def dequantize(data, scale, zero_point, axis=-1, out_dtype="float32"):
    """(data - zero_point) * scale, computed in float32.

    Args:
        data (te.Tensor): an integer tensor.
        scale, zero_point, axis: as topi.nn.quantize.
        out_dtype (str): a float dtype.

    Returns:
        te.Tensor: of data's shape and out_dtype.

    Raises:
        KilnTypeError: data is not a tensor, or a parameter is of the wrong kind.
        KilnIndexError: axis is out of range.
        KilnValueError: a parameter tensor's shape does not fit.
    """
    api = "topi.nn.dequantize"
    check_tensor(data, api, "data")
    axis = normalize_axis(axis, data.ndim, api)
    get_scale = _parameter(scale, data, axis, api, "scale", "float32")
    get_zero = _parameter(zero_point, data, axis, api, "zero_point", "int32")

    def fcompute(*i):
        shifted = (data[i].astype("int32") - get_zero(i)).astype("float32")
        return (shifted * get_scale(i)).astype(out_dtype)

    return te.compute(shape_of(data), fcompute, name="T_dequantize")
