"""Element-wise binary operators with NumPy's broadcasting rules (add, subtract, ..., comparisons,
logical operators) and ``where``. An operand is a te.Tensor, a PrimExpr or a Python number; a
number takes the dtype of the tensor it meets, as in TVM's topi."""
from .. import te
from ..error import KilnTypeError, KilnValueError
from ..ir import PrimExpr
from ._util import const_int, dim_str, dims_equal, shape_of, shape_str


def broadcast_shape(shape_a, shape_b, api, names=("a", "b")):
    """The shape that NumPy's broadcasting gives two shapes (lists of ints or expressions).

    Dimensions are matched from the right; a dimension of 1 stretches to the other. Two
    symbolic dimensions must be provably equal, a symbolic one against a constant other than 1
    is taken to equal the constant (checked when the function is called).

    Raises:
        KilnValueError: the shapes do not broadcast.
    """
    ndim = max(len(shape_a), len(shape_b))
    a = [1] * (ndim - len(shape_a)) + list(shape_a)
    b = [1] * (ndim - len(shape_b)) + list(shape_b)
    result = []
    for i, (da, db) in enumerate(zip(a, b)):
        ca, cb = const_int(da), const_int(db)
        if ca == 1:
            result.append(db)
        elif cb == 1 or dims_equal(da, db):
            result.append(da)
        elif ca is None and cb is not None:
            result.append(db)
        elif cb is None and ca is not None:
            result.append(da)
        else:
            raise KilnValueError(
                f"{api}: the shapes of {names[0]} {shape_str(shape_a)} and {names[1]} "
                f"{shape_str(shape_b)} do not broadcast: dimension {i - ndim} is {dim_str(da)} "
                f"against {dim_str(db)} (expected equal dimensions or a 1)")
    return result


def broadcast_index(tensor, out_indices):
    """The indices of tensor that an element of a broadcast output at out_indices reads."""
    offset = len(out_indices) - tensor.ndim
    indices = []
    for dim, index in zip(tensor.shape, out_indices[offset:]):
        indices.append(0 if const_int(dim) == 1 else index)
    return indices


def _operand(value, api, what):
    """(a function of the output indices, shape, dtype or None) of one operand."""
    if isinstance(value, te.Tensor):
        return (lambda idx: value[tuple(broadcast_index(value, idx))]), shape_of(value), \
            value.dtype
    if isinstance(value, PrimExpr):
        return (lambda idx: value), [], value.dtype
    if isinstance(value, (int, float)):
        return (lambda idx: value), [], None
    raise KilnTypeError(f"{api}: {what} must be a te.Tensor, a PrimExpr or a number, found an "
                        f"object of type {type(value).__name__}")


def _name(value):
    return value.name if isinstance(value, te.Tensor) else repr(value)


def _same_dtypes(api, operands, parts):
    _same_tensor_dtypes(api, operands)


def _elementwise(api, name, combine, operands, check=_same_dtypes):
    """A tensor combining broadcast operands element-wise with ``combine(*scalars)``; check(api,
    operands, parts) vets the operands' dtypes."""
    whats = ["the first operand", "the second operand", "the third operand"]
    parts = [_operand(v, api, w) for v, w in zip(operands, whats)]
    if not any(isinstance(v, te.Tensor) for v in operands):
        raise KilnTypeError(f"{api}: at least one operand must be a te.Tensor, found "
                            f"{', '.join(type(v).__name__ for v in operands)}")
    check(api, operands, parts)
    shape, shape_name = [], None
    for value, (_, part_shape, _) in zip(operands, parts):
        if isinstance(value, te.Tensor):
            if shape_name is None:
                shape, shape_name = part_shape, value.name
            else:
                shape = broadcast_shape(shape, part_shape, api, (shape_name, value.name))
                shape_name = f"{shape_name} and {value.name}"

    def fcompute(*indices):
        return combine(*[get(indices) for get, _, _ in parts])

    return te.compute(shape, fcompute, name=name)


def add(lhs, rhs):
    """lhs + rhs, element-wise with broadcasting.

    Args:
        lhs, rhs (te.Tensor, PrimExpr or number): the operands; at least one is a tensor, and
            two tensors have the same dtype.

    Returns:
        te.Tensor: of the broadcast shape.

    Raises:
        KilnTypeError: an operand is of another kind, no operand is a tensor, or the dtypes of
            two tensors differ.
        KilnValueError: the shapes do not broadcast.
    """
    return _elementwise("topi.add", "T_add", lambda a, b: a + b, [lhs, rhs])


def subtract(lhs, rhs):
    """lhs - rhs, element-wise with broadcasting.

    Args:
        lhs, rhs (te.Tensor, PrimExpr or number): the operands; at least one is a tensor, and
            two tensors have the same dtype.

    Returns:
        te.Tensor: of the broadcast shape.

    Raises:
        KilnTypeError: an operand is of another kind, no operand is a tensor, or the dtypes of
            two tensors differ.
        KilnValueError: the shapes do not broadcast.
    """
    return _elementwise("topi.subtract", "T_subtract", lambda a, b: a - b, [lhs, rhs])


def multiply(lhs, rhs):
    """lhs * rhs, element-wise with broadcasting.

    Args:
        lhs, rhs (te.Tensor, PrimExpr or number): the operands; at least one is a tensor, and
            two tensors have the same dtype.

    Returns:
        te.Tensor: of the broadcast shape.

    Raises:
        KilnTypeError: an operand is of another kind, no operand is a tensor, or the dtypes of
            two tensors differ.
        KilnValueError: the shapes do not broadcast.
    """
    return _elementwise("topi.multiply", "T_multiply", lambda a, b: a * b, [lhs, rhs])


def _require_float(api, operands, parts):
    for value, (_, _, dtype) in zip(operands, parts):
        if dtype is not None and not dtype.startswith(("float", "bfloat")):
            raise KilnTypeError(
                f"{api}: operand {_name(value)} must have a float dtype, found {dtype}; use "
                f"topi.floor_divide for integers, or convert with topi.cast")
    _same_tensor_dtypes(api, operands)


def _same_tensor_dtypes(api, operands):
    tensors = [v for v in operands if isinstance(v, te.Tensor)]
    for other in tensors[1:]:
        if other.dtype != tensors[0].dtype:
            raise KilnTypeError(
                f"{api}: the tensors {tensors[0].name} and {other.name} must have the same "
                f"dtype, found {tensors[0].dtype} and {other.dtype}; convert one with topi.cast")


def divide(lhs, rhs):
    """lhs / rhs, element-wise with broadcasting, on floats (IEEE division: x / 0 is inf or
    NaN).

    Args:
        lhs, rhs (te.Tensor, PrimExpr or number): the operands, of one float dtype.

    Returns:
        te.Tensor

    Raises:
        KilnTypeError: an integer operand (use floor_divide), or as topi.add.
        KilnValueError: the shapes do not broadcast.
    """
    return _elementwise("topi.divide", "T_divide", lambda a, b: a / b, [lhs, rhs],
                        _require_float)


def floor_divide(lhs, rhs):
    """lhs // rhs rounded toward negative infinity (NumPy's //), element-wise with broadcasting;
    on integers (a divisor of 0 is undefined behaviour, as in C) and floats.

    Args:
        lhs, rhs (te.Tensor, PrimExpr or number): the operands, as topi.add.

    Returns:
        te.Tensor

    Raises:
        KilnTypeError, KilnValueError: as topi.add.
    """
    def combine(a, b):
        if isinstance(a, PrimExpr) and a.dtype.startswith(("float", "bfloat")):
            return te.floor(a / b)
        return te.floordiv(a, b)
    return _elementwise("topi.floor_divide", "T_floor_divide", combine, [lhs, rhs])


def floor_mod(lhs, rhs):
    """The remainder of floor_divide, with the sign of rhs (NumPy's %), element-wise with
    broadcasting.

    Args:
        lhs, rhs (te.Tensor, PrimExpr or number): the operands, as topi.add.

    Returns:
        te.Tensor

    Raises:
        KilnTypeError, KilnValueError: as topi.add.
    """
    def combine(a, b):
        if isinstance(a, PrimExpr) and a.dtype.startswith(("float", "bfloat")):
            return a - te.floor(a / b) * b
        return te.floormod(a, b)
    return _elementwise("topi.floor_mod", "T_floor_mod", combine, [lhs, rhs])


def power(lhs, rhs):
    """lhs to the power rhs, element-wise with broadcasting, on floats.

    Args:
        lhs, rhs (te.Tensor, PrimExpr or number): the base and the exponent, of one float
            dtype.

    Returns:
        te.Tensor

    Raises:
        KilnTypeError: an integer operand, or as topi.add.
        KilnValueError: the shapes do not broadcast.
    """
    return _elementwise("topi.power", "T_power", te.power, [lhs, rhs], _require_float)


def maximum(lhs, rhs):
    """The larger of lhs and rhs, element-wise with broadcasting.

    Args:
        lhs, rhs (te.Tensor, PrimExpr or number): the operands; at least one is a tensor, and
            two tensors have the same dtype.

    Returns:
        te.Tensor: of the broadcast shape.

    Raises:
        KilnTypeError: an operand is of another kind, no operand is a tensor, or the dtypes of
            two tensors differ.
        KilnValueError: the shapes do not broadcast.
    """
    return _elementwise("topi.maximum", "T_maximum", te.max, [lhs, rhs])


def minimum(lhs, rhs):
    """The smaller of lhs and rhs, element-wise with broadcasting.

    Args:
        lhs, rhs (te.Tensor, PrimExpr or number): the operands; at least one is a tensor, and
            two tensors have the same dtype.

    Returns:
        te.Tensor: of the broadcast shape.

    Raises:
        KilnTypeError: an operand is of another kind, no operand is a tensor, or the dtypes of
            two tensors differ.
        KilnValueError: the shapes do not broadcast.
    """
    return _elementwise("topi.minimum", "T_minimum", te.min, [lhs, rhs])


def _comparison(api, name, compare):
    def op(lhs, rhs):
        return _elementwise(api, name, compare, [lhs, rhs])
    return op


equal = _comparison("topi.equal", "T_equal", lambda a, b: a == b)
not_equal = _comparison("topi.not_equal", "T_not_equal", lambda a, b: a != b)
less = _comparison("topi.less", "T_less", lambda a, b: a < b)
less_equal = _comparison("topi.less_equal", "T_less_equal", lambda a, b: a <= b)
greater = _comparison("topi.greater", "T_greater", lambda a, b: a > b)
greater_equal = _comparison("topi.greater_equal", "T_greater_equal", lambda a, b: a >= b)

_COMPARISON_DOC = """lhs {op} rhs, element-wise with broadcasting: a bool tensor.

    Args:
        lhs, rhs (te.Tensor, PrimExpr or number): the operands; at least one is a tensor.

    Returns:
        te.Tensor: of dtype bool.

    Raises:
        KilnTypeError, KilnValueError: as topi.add.
    """
for _func, _op, _name_ in ((equal, "==", "equal"), (not_equal, "!=", "not_equal"),
                           (less, "<", "less"), (less_equal, "<=", "less_equal"),
                           (greater, ">", "greater"), (greater_equal, ">=", "greater_equal")):
    _func.__name__ = _func.__qualname__ = _name_
    _func.__doc__ = _COMPARISON_DOC.format(op=_op)


def _check_bool(api, operands, parts):
    for value, (_, _, dtype) in zip(operands, parts):
        if dtype is not None and dtype != "bool":
            raise KilnTypeError(f"{api}: operand {_name(value)} must be a bool tensor, found "
                                f"dtype {dtype}; compare it first, e.g. topi.not_equal(x, 0)")


def logical_and(lhs, rhs):
    """lhs and rhs, element-wise with broadcasting, on bool tensors.

    Args:
        lhs, rhs (te.Tensor or PrimExpr): bool operands; at least one is a tensor.

    Returns:
        te.Tensor: of dtype bool.

    Raises:
        KilnTypeError: an operand is not bool.
        KilnValueError: the shapes do not broadcast.
    """
    return _elementwise("topi.logical_and", "T_logical_and", lambda a, b: a & b, [lhs, rhs],
                        _check_bool)


def logical_or(lhs, rhs):
    """lhs or rhs, element-wise with broadcasting, on bool tensors.

    Args:
        lhs, rhs (te.Tensor or PrimExpr): bool operands; at least one is a tensor.

    Returns:
        te.Tensor: of dtype bool.

    Raises:
        KilnTypeError: an operand is not bool.
        KilnValueError: the shapes do not broadcast.
    """
    return _elementwise("topi.logical_or", "T_logical_or", lambda a, b: a | b, [lhs, rhs],
                        _check_bool)


def logical_not(data):
    """not data, element-wise, on a bool tensor.

    Args:
        data (te.Tensor): a bool tensor.

    Returns:
        te.Tensor: of dtype bool.

    Raises:
        KilnTypeError: data is not a bool tensor.
    """
    return _elementwise("topi.logical_not", "T_logical_not", lambda a: ~a, [data], _check_bool)


def where(condition, x, y):
    """x where condition holds, else y, element-wise with broadcasting of all three (NumPy's
    where).

    Args:
        condition (te.Tensor or PrimExpr): a bool tensor; a tensor of another dtype counts as
            true where it is not zero.
        x, y (te.Tensor, PrimExpr or number): the values; two tensors have the same dtype.

    Returns:
        te.Tensor: the dtype of x and y.

    Raises:
        KilnTypeError: an operand is of another kind, or x and y are tensors of different
            dtypes.
        KilnValueError: the shapes do not broadcast.
    """
    api = "topi.where"

    def check(api, operands, parts):
        _same_tensor_dtypes(api, operands[1:])
        if not any(isinstance(v, (te.Tensor, PrimExpr)) for v in operands[1:]):
            raise KilnTypeError(f"{api}: x or y must be a te.Tensor or a PrimExpr (to give the "
                                f"result's dtype), found two Python numbers")

    def combine(c, a, b):
        if c.dtype != "bool":
            c = c != 0
        return te.if_then_else(c, a, b)

    return _elementwise(api, "T_where", combine, [condition, x, y], check)
