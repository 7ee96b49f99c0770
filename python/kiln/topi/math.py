"""Element-wise unary operators: the math functions (exp, log, tanh, erf, ...), negative, abs,
clip and cast. The transcendental functions take float tensors; a float16 or bfloat16 input is
computed in float32 and rounded back to its dtype."""
from .. import te
from ..error import KilnTypeError
from ._util import FLOAT16_TYPES, check_float, check_tensor, shape_of


def _unary(data, api, name, fcompute):
    return te.compute(shape_of(data), lambda *i: fcompute(data[i]), name=name)


def _float_function(api, te_function, name):
    """A topi function applying te_function to a float tensor (in float32 for 16-bit floats)."""
    def apply(x):
        data = check_tensor(x, api, "x")
        check_float(data, api, "x")
        dtype = data.dtype
        if dtype in FLOAT16_TYPES:
            return _unary(data, api, name,
                          lambda v: te_function(v.astype("float32")).astype(dtype))
        return _unary(data, api, name, te_function)
    return apply


_FUNCTIONS = [
    ("exp", te.exp, "e to the power x"),
    ("exp2", te.exp2, "2 to the power x"),
    ("log", te.log, "the natural logarithm of x"),
    ("log2", te.log2, "the base-2 logarithm of x"),
    ("log1p", te.log1p, "log(1 + x), accurate for x near 0"),
    ("sqrt", te.sqrt, "the square root of x"),
    ("rsqrt", te.rsqrt, "1 / sqrt(x)"),
    ("sin", te.sin, "the sine of x (radians)"),
    ("cos", te.cos, "the cosine of x (radians)"),
    ("tan", te.tan, "the tangent of x (radians)"),
    ("tanh", te.tanh, "the hyperbolic tangent of x"),
    ("sigmoid", te.sigmoid, "1 / (1 + exp(-x))"),
    ("erf", te.erf, "the error function of x"),
    ("floor", te.floor, "the largest integer value not above x"),
    ("ceil", te.ceil, "the smallest integer value not below x"),
    ("round", te.round, "x rounded to the nearest integer value, ties to even (NumPy's round)"),
    ("trunc", te.trunc, "x rounded toward zero"),
]

_DOC = """{what}, element-wise.

    Args:
        x (te.Tensor): a float tensor (float16 and bfloat16 are computed in float32).

    Returns:
        te.Tensor: of x's shape and dtype.

    Raises:
        KilnTypeError: x is not a tensor or not a float tensor.
    """

for _name, _function, _what in _FUNCTIONS:
    _op = _float_function(f"topi.{_name}", _function, f"T_{_name}")
    _op.__name__ = _op.__qualname__ = _name
    _op.__doc__ = _DOC.format(what=_what[0].upper() + _what[1:])
    globals()[_name] = _op


def isnan(x):
    """Whether each element of a float tensor is NaN.

    Args:
        x (te.Tensor): the input.

    Returns:
        te.Tensor: of dtype bool.

    Raises:
        KilnTypeError: x is not a float tensor.
    """
    data = check_tensor(x, "topi.isnan", "x")
    check_float(data, "topi.isnan", "x")
    return _unary(data, "topi.isnan", "T_isnan", te.isnan)


def negative(x):
    """-x, element-wise (ints and floats).

    Args:
        x (te.Tensor): the input.

    Returns:
        te.Tensor: of x's shape and dtype.

    Raises:
        KilnTypeError: x is not a tensor.
    """
    data = check_tensor(x, "topi.negative", "x")
    return _unary(data, "topi.negative", "T_negative", lambda v: -v)


def abs(x):  # noqa: A001 (TVM's name)
    """The absolute value of x, element-wise (ints and floats).

    Args:
        x (te.Tensor): the input.

    Returns:
        te.Tensor: of x's shape and dtype.

    Raises:
        KilnTypeError: x is not a tensor.
    """
    data = check_tensor(x, "topi.abs", "x")
    return _unary(data, "topi.abs", "T_abs", te.abs)


def clip(x, a_min, a_max):
    """x limited to [a_min, a_max], element-wise.

    Args:
        x (te.Tensor): the input.
        a_min, a_max (number or PrimExpr): the bounds; a number takes x's dtype.

    Returns:
        te.Tensor: of x's shape and dtype.

    Raises:
        KilnTypeError: x is not a tensor.
    """
    data = check_tensor(x, "topi.clip", "x")
    return _unary(data, "topi.clip", "T_clip", lambda v: te.min(te.max(v, a_min), a_max))


def cast(x, dtype):
    """x converted to dtype, element-wise. Float to integer rounds toward zero; a value out of
    the integer type's range is undefined (clamp it first, as topi.nn.quantize does).

    Args:
        x (te.Tensor): the input.
        dtype (str): the result's dtype, e.g. "float16", "int32".

    Returns:
        te.Tensor: of x's shape.

    Raises:
        KilnTypeError: x is not a tensor or dtype is not a dtype.
    """
    data = check_tensor(x, "topi.cast", "x")
    if not isinstance(dtype, str):
        raise KilnTypeError(f"topi.cast: dtype must be a dtype string such as \"float32\", found "
                            f"an object of type {type(dtype).__name__}")
    try:
        te.const(0, dtype)
    except KilnTypeError:
        raise KilnTypeError(f"topi.cast: {dtype!r} is not a dtype; expected e.g. \"float32\", "
                            f"\"float16\", \"bfloat16\", \"int8\" or \"bool\"") from None
    return _unary(data, "topi.cast", "T_cast", lambda v: v.astype(dtype))
