"""te.compute and the variables of tensor expressions (te.var, te.size_var).

te.compute reads the parameter names of fcompute to name the axes, as TVM does, calls it with one
index variable per dimension, and hands the body to the C++ core, which checks it.
"""
import inspect

from ..error import KilnIndexError, KilnTypeError
from .._kiln import ir as _ir
from .._kiln import te as _te


def var(name="tindex", dtype="int32"):
    """A scalar variable: a symbolic dimension or a scalar parameter.

    Args:
        name (str): its name in the printed IR and in argument errors.
        dtype (str): its dtype; "int64" for a dimension that may exceed 2**31 - 1.

    Returns:
        tir.Var

    Raises:
        KilnTypeError: name is not a str or dtype is not a dtype.

    Example:
        n = te.var("n")
        A = te.placeholder((n,), "float32", name="A")
    """
    return _ir.Var(name, dtype)


def size_var(name="size", dtype="int32"):
    """A variable known to be non-negative, for symbolic dimensions (the arithmetic analysis
    uses the fact); otherwise as te.var.

    Raises:
        KilnTypeError: name is not a str or dtype is not a dtype.

    Example:
        n = te.size_var("n")
    """
    return _ir.SizeVar(name, dtype)


def _axis_names(fcompute, ndim, name):
    """The names of fcompute's index parameters (empty: the default names i, j, k, ...)."""
    if not callable(fcompute):
        raise KilnTypeError(
            f"te.compute: fcompute of compute {name} must be callable, found an object of type "
            f"{type(fcompute).__name__}")
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        return []
    positional = [p for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    has_varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    if has_varargs:
        if len(positional) > ndim:
            raise KilnIndexError(
                f"te.compute: fcompute of compute {name} takes at least {len(positional)} "
                f"arguments but the shape has {ndim} dimension{'s' if ndim != 1 else ''}")
        return []
    if len(positional) != ndim:
        found = ", ".join(p.name for p in positional)
        raise KilnIndexError(
            f"te.compute: fcompute of compute {name} takes {len(positional)} "
            f"argument{'s' if len(positional) != 1 else ''} ({found}) but the shape has {ndim} "
            f"dimension{'s' if ndim != 1 else ''}; it must take one index per dimension")
    return [p.name for p in positional]


def compute(shape, fcompute, name="compute", tag="", attrs=None):
    """A tensor defined element-wise: ``out[i, j, ...] = fcompute(i, j, ...)``.

    Args:
        shape (tuple of int or PrimExpr): the output's dimensions.
        fcompute (callable): takes one index variable per dimension (its parameters name the
            axes) and returns an expression (or a number), a reduction (te.sum, ...), or a
            tuple of the components of one tuple-reducer call for a multi-output reduction.
        name (str): the tensor's name, which is also its block's name in the PrimFunc.
        tag (str): a free-form tag kept on the operation.
        attrs (dict, optional): attributes kept on the operation.

    Returns:
        Tensor, or a list of tensors when fcompute returns several outputs.

    Raises:
        KilnTypeError: fcompute is not callable, a dimension is not an integer, fcompute
            returns something that is not an expression, or name, tag or attrs has the wrong
            type.
        KilnIndexError: fcompute takes a different number of indices than the shape has
            dimensions, or indexes a tensor with the wrong number of indices.
        KilnValueError: the body is not a valid computation (e.g. a reduction nested in an
            expression, or a reduce axis the body does not use).

    Example:
        k = te.reduce_axis((0, K), name="k")
        C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    """
    if isinstance(shape, (list, tuple)):
        shape = list(shape)
    else:
        shape = [shape]
    names = _axis_names(fcompute, len(shape), name)
    axes = _te._compute_axes(shape, names, name)
    body = fcompute(*[axis.var for axis in axes])
    values = list(body) if isinstance(body, (list, tuple)) else [body]
    outputs = _te._compute_from_body(axes, values, name, tag, attrs)
    return outputs[0] if len(outputs) == 1 else outputs


def _is_shape(obj):
    """Whether obj is one shape (a sequence of dimensions) rather than a list of shapes."""
    return not (isinstance(obj, (list, tuple)) and len(obj) > 0
                and all(isinstance(s, (list, tuple)) for s in obj))


def extern(shape, inputs, fcompute, name="extern", dtype=None, out_buffers=None, tag="",
           attrs=None):
    """Tensors computed by a statement, typically a call of an external C function.

    fcompute receives the buffers of the inputs and of the outputs and returns the statement
    that reads the ones and writes the others in full, e.g. a tir.call_extern of a BLAS routine
    with the buffers' pointers (``buf.data`` or ``buf.access_ptr("r")``) and extents. An
    expression is evaluated for its effect. te.create_prim_func makes it one opaque block (no
    iterators) that reads every input and writes every output, between the te.compute stages
    around it; schedules and the tuner leave it as it is.

    Args:
        shape (tuple, or list of tuples): the shape of the output, or one shape per output.
        inputs (list of Tensor): the tensors the statement reads.
        fcompute (callable): ``fcompute(ins, outs)`` with lists of tir.Buffer; returns a
            tir.Stmt or a PrimExpr (e.g. tir.call_extern(...)).
        name (str): the operation's name and its block's name.
        dtype (str or list of str, optional): the outputs' dtype(s); by default that of
            inputs[0] (float32 without inputs).
        out_buffers (list of tir.Buffer, optional): buffers to use as the outputs (their
            shapes and dtypes are the outputs').
        tag (str): a free-form tag kept on the operation.
        attrs (dict, optional): attributes kept on the operation (and its block).

    Returns:
        Tensor, or a list of tensors when there are several outputs.

    Raises:
        KilnTypeError: fcompute is not callable or returns neither a statement nor an
            expression; a shape or dtype is malformed.
        KilnValueError: the statement uses a buffer or pointer that is neither an input nor an
            output, or the numbers of shapes, dtypes and out_buffers disagree.

    Example:
        C = te.extern((M, N), [A, B], lambda ins, outs: tir.call_extern(
            "void", "cblas_sgemm", 101, 111, 111, M, N, K, 1.0, ins[0].data, K,
            ins[1].data, N, 0.0, outs[0].data, N), name="C")
    """
    if not callable(fcompute):
        raise KilnTypeError(
            f"te.extern: fcompute of extern {name} must be callable, found an object of type "
            f"{type(fcompute).__name__}")
    if out_buffers is not None and not isinstance(out_buffers, (list, tuple)):
        out_buffers = [out_buffers]
    if out_buffers is not None and shape is None:
        shapes = []
    elif _is_shape(shape):
        shapes = [list(shape) if isinstance(shape, (list, tuple)) else [shape]]
    else:
        shapes = [list(s) for s in shape]
    inputs = list(inputs)
    count = len(out_buffers) if out_buffers is not None else len(shapes)
    if dtype is None:
        dtypes = [inputs[0].dtype if inputs else "float32"] * count
    elif isinstance(dtype, (list, tuple)):
        dtypes = list(dtype)
    else:
        dtypes = [dtype] * count

    def body(ins, outs):
        stmt = fcompute(ins, outs)
        if isinstance(stmt, _ir.PrimExpr):
            stmt = _ir.Evaluate(stmt)
        return stmt

    outputs = _te._extern(shapes, dtypes, inputs, body, name, tag, attrs, out_buffers)
    return outputs[0] if len(outputs) == 1 else outputs
