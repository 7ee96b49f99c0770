"""Matrix products with TVM's signatures: dense (data @ weight.T), matmul (with transposes) and
batch_matmul (batched, with a batch of 1 broadcast). out_dtype sets the accumulation and result
dtype, e.g. "float32" for float16 inputs or "int32" for int8."""
from ... import te
from ...error import KilnValueError
from .._util import (check_ndim, check_same_dtype, check_tensor, const_int, dim_str, dims_equal,
                     shape_of, shape_str)
from ..broadcast import broadcast_shape


def _check_reduction_extent(a, ka, b, kb, api):
    if not dims_equal(ka, kb):
        raise KilnValueError(f"{api}: the reduction extents of {a.name} (shape "
                             f"{shape_str(shape_of(a))}) and {b.name} (shape "
                             f"{shape_str(shape_of(b))}) differ: {dim_str(ka)} against "
                             f"{dim_str(kb)}")


def _add_bias(out, bias, api, name):
    """out + bias along out's last axis."""
    check_tensor(bias, api, "bias")
    check_ndim(bias, 1, api, "bias")
    units = shape_of(out)[-1]
    if not dims_equal(shape_of(bias)[0], units):
        raise KilnValueError(f"{api}: bias {bias.name} must have {dim_str(units)} elements (the "
                             f"output's last dimension), found {dim_str(shape_of(bias)[0])}")
    return te.compute(shape_of(out), lambda *i: out[i] + bias[i[-1]].astype(out.dtype),
                      name=name)


def matmul(tensor_a, tensor_b, bias=None, out_dtype=None, transpose_a=False, transpose_b=False):
    """op(tensor_a) @ op(tensor_b) (+ bias), where op transposes when asked.

    Args:
        tensor_a (te.Tensor): 2-D, (M, K), or (K, M) with transpose_a.
        tensor_b (te.Tensor): 2-D, (K, N), or (N, K) with transpose_b.
        bias (te.Tensor, optional): 1-D, (N,), added to each row.
        out_dtype (str, optional): the accumulation and result dtype; default tensor_a's.
        transpose_a, transpose_b (bool): whether the operand is stored transposed.

    Returns:
        te.Tensor: (M, N) of out_dtype.

    Raises:
        KilnTypeError: an operand is not a tensor or the dtypes differ.
        KilnValueError: an operand is not 2-D, or the reduction extents or the bias length
            differ.
    """
    api = "topi.nn.matmul"
    return _matmul(tensor_a, tensor_b, bias, out_dtype, transpose_a, transpose_b, api,
                   "T_matmul")


def _matmul(a, b, bias, out_dtype, transpose_a, transpose_b, api, name):
    check_tensor(a, api, "tensor_a")
    check_tensor(b, api, "tensor_b")
    check_ndim(a, 2, api, "tensor_a")
    check_ndim(b, 2, api, "tensor_b")
    check_same_dtype(a, b, api)
    out_dtype = out_dtype or a.dtype
    (ra, ca), (rb, cb) = shape_of(a), shape_of(b)
    m, ka = (ca, ra) if transpose_a else (ra, ca)
    kb, n = (cb, rb) if transpose_b else (rb, cb)
    _check_reduction_extent(a, ka, b, kb, api)
    k = te.reduce_axis((0, ka), name="k")

    def fcompute(i, j):
        x = a[k, i] if transpose_a else a[i, k]
        y = b[j, k] if transpose_b else b[k, j]
        return te.sum(x.astype(out_dtype) * y.astype(out_dtype), axis=k)

    out = te.compute((m, n), fcompute, name=name)
    return out if bias is None else _add_bias(out, bias, api, name + "_bias")


def dense(data, weight, bias=None, out_dtype=None):
    """data @ weight.T (+ bias): a fully connected layer.

    Args:
        data (te.Tensor): (batch, in_dim).
        weight (te.Tensor): (out_dim, in_dim).
        bias (te.Tensor, optional): (out_dim,).
        out_dtype (str, optional): the accumulation and result dtype; default data's.

    Returns:
        te.Tensor: (batch, out_dim) of out_dtype.

    Raises:
        KilnTypeError: an operand is not a tensor or the dtypes differ.
        KilnValueError: an operand is not 2-D, or in_dim or the bias length differ.
    """
    return _matmul(data, weight, bias, out_dtype, False, True, "topi.nn.dense", "T_dense")


def batch_matmul(x, y, out_shape=None, out_dtype=None, transpose_a=False, transpose_b=True):
    """The batched product op(x[b]) @ op(y[b]); a batch of 1 is broadcast against the other.
    Note TVM's default transpose_b=True: y is (batch, N, K).

    Args:
        x (te.Tensor): (batch, M, K), or (batch, K, M) with transpose_a.
        y (te.Tensor): (batch, N, K) with transpose_b, else (batch, K, N).
        out_shape (tuple, optional): the expected output shape, checked.
        out_dtype (str, optional): the accumulation and result dtype; default x's.
        transpose_a, transpose_b (bool): whether the matrices are stored transposed.

    Returns:
        te.Tensor: (batch, M, N) of out_dtype.

    Raises:
        KilnTypeError: an operand is not a tensor or the dtypes differ.
        KilnValueError: an operand is not 3-D, the batches do not broadcast, the reduction
            extents differ, or out_shape is not the output's shape.
    """
    api = "topi.nn.batch_matmul"
    check_tensor(x, api, "x")
    check_tensor(y, api, "y")
    check_ndim(x, 3, api, "x")
    check_ndim(y, 3, api, "y")
    check_same_dtype(x, y, api)
    out_dtype = out_dtype or x.dtype
    (bx, rx, cx), (by, ry, cy) = shape_of(x), shape_of(y)
    m, kx = (cx, rx) if transpose_a else (rx, cx)
    ky, n = (cy, ry) if transpose_b else (ry, cy)
    _check_reduction_extent(x, kx, y, ky, api)
    names = (f"the batch of {x.name}", f"the batch of {y.name}")
    [batch] = broadcast_shape([bx], [by], api, names)
    shape = [batch, m, n]
    if out_shape is not None and (len(out_shape) != 3 or not all(
            dims_equal(e, f) for e, f in zip(out_shape, shape))):
        raise KilnValueError(f"{api}: out_shape {shape_str(list(out_shape))} is not the output's "
                             f"shape {shape_str(shape)}")
    k = te.reduce_axis((0, kx), name="k")

    def fcompute(b, i, j):
        b_x = 0 if const_int(bx) == 1 else b
        b_y = 0 if const_int(by) == 1 else b
        u = x[b_x, k, i] if transpose_a else x[b_x, i, k]
        v = y[b_y, j, k] if transpose_b else y[b_y, k, j]
        return te.sum(u.astype(out_dtype) * v.astype(out_dtype), axis=k)

    return te.compute(shape, fcompute, name="T_batch_matmul")
