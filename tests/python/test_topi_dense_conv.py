"""kiln.topi.nn's matrix products, convolutions and pooling against NumPy: transposes, bias,
out_dtype accumulation (float16 -> float32, int8 -> int32), symbolic batch; conv2d in NCHW and
NHWC with stride, padding, dilation, groups and depthwise; pool2d max/avg with padding,
count_include_pad and ceil_mode (PyTorch's rules); adaptive and global pooling."""
import numpy as np
import pytest

from kiln import te, topi
from topi_helpers import check, rand


@pytest.fixture
def rng():
    return np.random.default_rng(4)


def test_dense_with_bias_and_symbolic_batch(rng):
    n = te.var("n")
    X = te.placeholder((n, 8), name="X")
    W = te.placeholder((5, 8), name="W")
    B = te.placeholder((5,), name="B")
    x, w, b = rand(rng, 3, 8), rand(rng, 5, 8), rand(rng, 5)
    check([X, W, B], topi.nn.dense(X, W, B), [x, w, b], x.astype("float64") @ w.T + b,
          atol=1e-5)


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transposes(rng, ta, tb):
    a, b = rand(rng, 4, 6), rand(rng, 6, 3)
    a_stored, b_stored = (a.T.copy() if ta else a), (b.T.copy() if tb else b)
    A = te.placeholder(a_stored.shape, name="A")
    B = te.placeholder(b_stored.shape, name="B")
    check([A, B], topi.nn.matmul(A, B, transpose_a=ta, transpose_b=tb), [a_stored, b_stored],
          a.astype("float64") @ b, atol=1e-5)


def test_matmul_out_dtype_accumulates(rng):
    A = te.placeholder((2, 64), "int8", name="A")
    B = te.placeholder((64, 3), "int8", name="B")
    a = rng.integers(-128, 128, size=(2, 64)).astype("int8")
    b = rng.integers(-128, 128, size=(64, 3)).astype("int8")
    check([A, B], topi.nn.matmul(A, B, out_dtype="int32"), [a, b],
          a.astype("int32") @ b.astype("int32"))
    H = te.placeholder((2, 256), "float16", name="H")
    G = te.placeholder((3, 256), "float16", name="G")
    h, g = rand(rng, 2, 256, dtype="float16"), rand(rng, 3, 256, dtype="float16")
    out = topi.nn.dense(H, G, out_dtype="float32")
    assert out.dtype == "float32"
    check([H, G], out, [h, g], h.astype("float64") @ g.T.astype("float64"), atol=1e-4)


@pytest.mark.parametrize("ta, tb", [(False, True), (True, False)])
def test_batch_matmul_broadcasts_a_batch_of_one(rng, ta, tb):
    n = te.var("n")
    x, y = rand(rng, 3, 4, 5), rand(rng, 1, 5, 2)
    x_stored = x.transpose(0, 2, 1).copy() if ta else x
    y_stored = y.transpose(0, 2, 1).copy() if tb else y
    X = te.placeholder((n,) + x_stored.shape[1:], name="X")
    Y = te.placeholder(y_stored.shape, name="Y")
    check([X, Y], topi.nn.batch_matmul(X, Y, transpose_a=ta, transpose_b=tb),
          [x_stored, y_stored], np.matmul(x.astype("float64"), y), atol=1e-5)


def conv2d_ref(x, w, stride, pad, dilation, groups=1):
    """NCHW / OIHW cross-correlation; pad = (top, left, bottom, right)."""
    x = np.pad(x.astype("float64"), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    n, c, h, width = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dilation * (kh - 1) - 1) // stride + 1
    ow = (width - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow))
    per_group = o // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * per_group:(g + 1) * per_group]
        for dy in range(kh):
            for dx in range(kw):
                patch = xs[:, :, dy * dilation:dy * dilation + stride * (oh - 1) + 1:stride,
                           dx * dilation:dx * dilation + stride * (ow - 1) + 1:stride]
                out[:, g * per_group:(g + 1) * per_group] += np.einsum(
                    "nchw,oc->nohw", patch, ws[:, :, dy, dx])
    return out


@pytest.mark.parametrize("stride, padding, dilation, pad4", [
    (1, 0, 1, (0, 0, 0, 0)), (2, 1, 1, (1, 1, 1, 1)), (1, (1, 2, 0, 1), 2, (1, 2, 0, 1)),
    (1, "SAME", 1, (1, 1, 1, 1))])
def test_conv2d_nchw_and_nhwc(rng, stride, padding, dilation, pad4):
    x, w = rand(rng, 2, 3, 7, 6), rand(rng, 4, 3, 3, 3)
    ref = conv2d_ref(x, w, stride, pad4, dilation)
    X = te.placeholder(x.shape, name="X")
    W = te.placeholder(w.shape, name="W")
    check([X, W], topi.nn.conv2d(X, W, stride, padding, dilation), [x, w], ref, atol=1e-5)
    Xh = te.placeholder((2, 7, 6, 3), name="Xh")
    Wh = te.placeholder((3, 3, 3, 4), name="Wh")
    check([Xh, Wh], topi.nn.conv2d(Xh, Wh, stride, padding, dilation, data_layout="NHWC"),
          [x.transpose(0, 2, 3, 1).copy(), w.transpose(2, 3, 1, 0).copy()],
          ref.transpose(0, 2, 3, 1), atol=1e-5)


def test_conv2d_symbolic_batch_and_out_dtype(rng):
    n = te.var("n")
    X = te.placeholder((n, 2, 5, 5), "int8", name="X")
    W = te.placeholder((3, 2, 3, 3), "int8", name="W")
    x = rng.integers(-128, 128, size=(2, 2, 5, 5)).astype("int8")
    w = rng.integers(-128, 128, size=(3, 2, 3, 3)).astype("int8")
    check([X, W], topi.nn.conv2d_nchw(X, W, 1, 1, 1, out_dtype="int32"), [x, w],
          conv2d_ref(x, w, 1, (1, 1, 1, 1), 1).astype("int32"))


def test_group_and_depthwise_conv2d(rng):
    x = rand(rng, 1, 4, 6, 6)
    X = te.placeholder(x.shape, name="X")
    w = rand(rng, 6, 2, 3, 3)
    W = te.placeholder(w.shape, name="W")
    check([X, W], topi.nn.group_conv2d_nchw(X, W, 1, 1, 1, groups=2), [x, w],
          conv2d_ref(x, w, 1, (1, 1, 1, 1), 1, groups=2), atol=1e-5)
    d = rand(rng, 4, 2, 3, 3)  # (channels, multiplier, kh, kw)
    D = te.placeholder(d.shape, name="D")
    check([X, D], topi.nn.depthwise_conv2d_nchw(X, D, 2, 1, 1), [x, d],
          conv2d_ref(x, d.reshape(8, 1, 3, 3), 2, (1, 1, 1, 1), 1, groups=4), atol=1e-5)


def pool_ref(x, k, s, pad, pool_type, count_include_pad=True, ceil_mode=False):
    """PyTorch's MaxPool2d / AvgPool2d on NCHW, symmetric padding, written in NumPy."""
    n, c, h, w = x.shape

    def extent(size):
        span = size + 2 * pad - k
        out = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (out - 1) * s >= size + pad:
            out -= 1
        return out

    oh, ow = extent(h), extent(w)
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s - pad, j * s - pad
            h1, w1 = min(h0 + k, h + pad), min(w0 + k, w + pad)
            size = (h1 - h0) * (w1 - w0)
            h0c, w0c, h1c, w1c = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            window = x[:, :, h0c:h1c, w0c:w1c].astype("float64")
            if pool_type == "max":
                out[:, :, i, j] = window.max(axis=(2, 3))
            else:
                divisor = size if count_include_pad else (h1c - h0c) * (w1c - w0c)
                out[:, :, i, j] = window.sum(axis=(2, 3)) / divisor
    return out


@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize("k, s, pad, count_include_pad, ceil_mode", [
    (2, 2, 0, True, False), (3, 2, 1, True, False), (3, 2, 1, False, False),
    (3, 2, 1, True, True), (2, 2, 1, False, True)])
def test_pool2d_follows_pytorch(rng, pool_type, k, s, pad, count_include_pad, ceil_mode):
    x = rand(rng, 1, 2, 7, 6)
    X = te.placeholder(x.shape, name="X")
    out = topi.nn.pool2d(X, k, s, 1, pad, pool_type, ceil_mode=ceil_mode,
                         count_include_pad=count_include_pad)
    check([X], out, [x], pool_ref(x, k, s, pad, pool_type, count_include_pad, ceil_mode),
          atol=1e-6)


def test_pool2d_nhwc_symbolic(rng):
    n = te.var("n")
    x = rand(rng, 2, 6, 6, 3)
    X = te.placeholder((n, 6, 6, 3), name="X")
    ref = pool_ref(x.transpose(0, 3, 1, 2), 2, 2, 0, "max").transpose(0, 2, 3, 1)
    check([X], topi.nn.pool2d(X, 2, 2, 1, 0, "max", layout="NHWC"), [x], ref)


def test_adaptive_and_global_pool(rng):
    x = rand(rng, 1, 2, 7, 5)
    X = te.placeholder(x.shape, name="X")
    oh, ow = 3, 2
    ref_max, ref_avg = np.zeros((1, 2, oh, ow)), np.zeros((1, 2, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, h1 = i * 7 // oh, -(-(i + 1) * 7 // oh)
            w0, w1 = j * 5 // ow, -(-(j + 1) * 5 // ow)
            ref_max[..., i, j] = x[..., h0:h1, w0:w1].max(axis=(2, 3))
            ref_avg[..., i, j] = x[..., h0:h1, w0:w1].astype("float64").mean(axis=(2, 3))
    check([X], topi.nn.adaptive_pool(X, (oh, ow), "max"), [x], ref_max)
    check([X], topi.nn.adaptive_pool(X, (oh, ow), "avg"), [x], ref_avg, atol=1e-6)
    h, w = te.var("h"), te.var("w")
    S = te.placeholder((1, h, w, 2), name="S")
    xs = x.transpose(0, 2, 3, 1).copy()
    check([S], topi.nn.global_pool(S, "avg", layout="NHWC"), [xs],
          xs.astype("float64").mean(axis=(1, 2), keepdims=True), atol=1e-6)
    check([S], topi.nn.global_pool(S, "max", layout="NHWC"), [xs],
          xs.max(axis=(1, 2), keepdims=True))


def test_conv2d_and_pool2d_with_symbolic_spatial_dimensions(rng):
    # The output height and width are expressions of h and w, so the results are read by
    # global_pool, whose (1, 1) spatial shape is a valid argument shape.
    h, w = te.var("h"), te.var("w")
    X = te.placeholder((1, 2, h, w), name="X")
    K = te.placeholder((3, 2, 3, 3), name="K")
    x, k = rand(rng, 1, 2, 6, 7), rand(rng, 3, 2, 3, 3)
    conv = topi.nn.conv2d(X, K, 1, 1, 1)
    check([X, K], topi.nn.global_pool(conv, "avg"), [x, k],
          conv2d_ref(x, k, 1, (1, 1, 1, 1), 1).mean(axis=(2, 3), keepdims=True), atol=1e-6)
    pooled = topi.nn.pool2d(X, 3, 2, 1, 1, "avg", count_include_pad=False)
    check([X], topi.nn.global_pool(pooled, "max"), [x],
          pool_ref(x, 3, 2, 1, "avg", False).max(axis=(2, 3), keepdims=True), atol=1e-6)
