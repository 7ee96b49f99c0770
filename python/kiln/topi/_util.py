"""Helpers shared by the operators of kiln.topi: argument checks that raise kiln's errors with the
operator's name, shape and axis normalization, and integer arithmetic on dimensions that may be
symbolic (a Python int when every operand is constant, an expression otherwise)."""
import re

from .. import te, tir
from ..arith import Analyzer
from ..error import KilnIndexError, KilnTypeError, KilnValueError

FLOAT16_TYPES = ("float16", "bfloat16")


def check_tensor(obj, api, what):
    """obj itself, after checking that it is a te.Tensor."""
    if not isinstance(obj, te.Tensor):
        raise KilnTypeError(f"{api}: {what} must be a te.Tensor, found an object of type "
                            f"{type(obj).__name__}")
    return obj


def check_float(tensor, api, what):
    if not tensor.dtype.startswith(("float", "bfloat")):
        raise KilnTypeError(f"{api}: {what} {tensor.name} must have a float dtype, found "
                            f"{tensor.dtype}")


def check_ndim(tensor, ndims, api, what):
    """Checks that tensor.ndim is one of ndims (an int or a tuple of ints)."""
    ndims = (ndims,) if isinstance(ndims, int) else tuple(ndims)
    if tensor.ndim not in ndims:
        expected = " or ".join(str(n) for n in ndims)
        raise KilnValueError(f"{api}: {what} {tensor.name} must have {expected} dimensions, found "
                             f"{tensor.ndim} (shape {shape_str(tensor.shape)})")


def check_same_dtype(a, b, api):
    if a.dtype != b.dtype:
        raise KilnTypeError(f"{api}: the tensors {a.name} and {b.name} must have the same dtype, "
                            f"found {a.dtype} and {b.dtype}; convert one with topi.cast")


def check_int(value, api, what, minimum=None):
    """value as a Python int, after checking its type and lower bound."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise KilnTypeError(f"{api}: {what} must be an int, found an object of type "
                            f"{type(value).__name__}")
    if minimum is not None and value < minimum:
        raise KilnValueError(f"{api}: {what} must be at least {minimum}, found {value}")
    return value


def check_choice(value, choices, api, what):
    if value not in choices:
        expected = ", ".join(repr(c) for c in choices)
        raise KilnValueError(f"{api}: {what} must be one of {expected}, found {value!r}")
    return value


def const_int(expr):
    """The value of a constant integer dimension (a Python int or an IntImm), else None."""
    if isinstance(expr, bool):
        return None
    if isinstance(expr, int):
        return expr
    if isinstance(expr, tir.IntImm):
        return expr.value
    return None


def simplify(expr):
    """A dimension as a Python int when it is constant, else the simplified expression."""
    if isinstance(expr, int):
        return expr
    value = const_int(expr)
    if value is not None:
        return value
    simplified = Analyzer().simplify(expr)
    value = const_int(simplified)
    return simplified if value is None else value


def dims_equal(a, b):
    """Whether two dimensions are provably equal."""
    ca, cb = const_int(a), const_int(b)
    if ca is not None and cb is not None:
        return ca == cb
    if ca is not None or cb is not None:
        return False
    return a.same_as(b) or Analyzer().can_prove_equal(a, b)


def dim_str(dim):
    value = const_int(dim)
    return str(value) if value is not None else str(dim)


def shape_str(shape):
    dims = [dim_str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def shape_of(tensor):
    """The tensor's shape as a list: ints for constant dimensions, expressions otherwise."""
    return [simplify(d) for d in tensor.shape]


def normalize_axis(axis, ndim, api, what="axis"):
    """axis in [0, ndim), accepting -ndim <= axis < 0 as NumPy does."""
    check_int(axis, api, what)
    if not -ndim <= axis < ndim:
        raise KilnIndexError(f"{api}: {what} {axis} is out of range for a tensor of {ndim} "
                             f"dimensions (expected {-ndim} <= {what} < {ndim})")
    return axis + ndim if axis < 0 else axis


def normalize_axes(axis, ndim, api, what="axis"):
    """A sorted list of distinct axes from None (all), an int, or a tuple or list of ints."""
    if axis is None:
        return list(range(ndim))
    items = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    axes = [normalize_axis(a, ndim, api, what) for a in items]
    if len(set(axes)) != len(axes):
        raise KilnValueError(f"{api}: {what} {tuple(items)} names an axis twice")
    return sorted(axes)


def floor_div(a, b):
    """a // b for dimensions (ints or expressions)."""
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    return simplify(te.floordiv(a, b))


def accumulation_dtype(dtype):
    """float32 for 16-bit floats (whose sums lose precision), the dtype itself otherwise."""
    return "float32" if dtype in FLOAT16_TYPES else dtype


def dtype_bytes(dtype):
    """The bytes of one element of dtype ("float32": 4; a bool or an unknown type: 1)."""
    bits = re.search(r"\d+", str(dtype))
    return max(1, int(bits.group()) // 8) if bits else 1
