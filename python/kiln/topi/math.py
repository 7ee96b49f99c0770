"""Element-wise unary operators: the math functions (exp, log, tanh, erf, ...), negative, abs,
clip and cast. The transcendental functions take float tensors; a float16 or bfloat16 input is
computed in float32 and rounded back to its dtype."""
from .. import te
from ..error import KilnTypeError
from ._util import FLOAT16_TYPES, check_float, check_tensor, shape_of


def _unary(data, name, fcompute):
    return te.compute(shape_of(data), lambda *i: fcompute(data[i]), name=name)


_DOC = """{what}, element-wise.

    Args:
        x (te.Tensor): a float tensor (float16 and bfloat16 are computed in float32).

    Returns:
        te.Tensor: of x's shape and dtype.

    Raises:
        KilnTypeError: x is not a tensor or not a float tensor.
    """


def _float_function(name, te_function, what):
    """The topi function ``name``: te_function applied to each element of a float tensor (in
    float32 for 16-bit floats)."""
    api = f"topi.{name}"

    def apply(x):
        data = check_tensor(x, api, "x")
        check_float(data, api, "x")
        dtype = data.dtype
        if dtype in FLOAT16_TYPES:
            return _unary(data, f"T_{name}",
                          lambda v: te_function(v.astype("float32")).astype(dtype))
        return _unary(data, f"T_{name}", te_function)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = _DOC.format(what=what)
    return apply


exp = _float_function("exp", te.exp, "e to the power x")
exp2 = _float_function("exp2", te.exp2, "2 to the power x")
log = _float_function("log", te.log, "The natural logarithm of x")
log2 = _float_function("log2", te.log2, "The base-2 logarithm of x")
log1p = _float_function("log1p", te.log1p, "log(1 + x), accurate for x near 0")
sqrt = _float_function("sqrt", te.sqrt, "The square root of x")
rsqrt = _float_function("rsqrt", te.rsqrt, "1 / sqrt(x)")
sin = _float_function("sin", te.sin, "The sine of x (radians)")
cos = _float_function("cos", te.cos, "The cosine of x (radians)")
tan = _float_function("tan", te.tan, "The tangent of x (radians)")
tanh = _float_function("tanh", te.tanh, "The hyperbolic tangent of x")
sigmoid = _float_function("sigmoid", te.sigmoid, "1 / (1 + exp(-x))")
erf = _float_function("erf", te.erf, "The error function of x")
floor = _float_function("floor", te.floor, "The largest integer value not above x")
ceil = _float_function("ceil", te.ceil, "The smallest integer value not below x")
round = _float_function(  # noqa: A001 (TVM's name)
    "round", te.round, "x rounded to the nearest integer value, ties to even (NumPy's round)")
trunc = _float_function("trunc", te.trunc, "x rounded toward zero")


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
    return _unary(data, "T_isnan", te.isnan)


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
    return _unary(data, "T_negative", lambda v: -v)


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
    return _unary(data, "T_abs", te.abs)


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
    return _unary(data, "T_clip", lambda v: te.min(te.max(v, a_min), a_max))


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
    return _unary(data, "T_cast", lambda v: v.astype(dtype))
