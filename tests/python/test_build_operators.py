"""End-to-end operators: each te operator is built with kiln.build for "llvm", run through the
runtime on NumPy arrays (outputs written in place) and compared with NumPy."""
import numpy as np
import pytest

import kiln
from kiln import te

RTOL = 1e-5
ATOL = 1e-5


def build(tensors, target="llvm"):
    return kiln.build(te.create_prim_func(tensors), target=target)


def rand(rng, *shape, dtype="float32"):
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_matmul(rng):
    M, N, K = 64, 48, 32
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    rt = build([A, B, C])
    a, b, c = rand(rng, M, K), rand(rng, K, N), np.zeros((M, N), "float32")
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=RTOL, atol=ATOL)


def test_batched_matmul(rng):
    Bn, M, N, K = 3, 8, 5, 6
    X = te.placeholder((Bn, M, K), name="X")
    Y = te.placeholder((Bn, K, N), name="Y")
    k = te.reduce_axis((0, K), name="k")
    Z = te.compute((Bn, M, N), lambda b, i, j: te.sum(X[b, i, k] * Y[b, k, j], axis=k), name="Z")
    rt = build([X, Y, Z])
    x, y, z = rand(rng, Bn, M, K), rand(rng, Bn, K, N), np.zeros((Bn, M, N), "float32")
    rt(x, y, z)
    np.testing.assert_allclose(z, np.matmul(x.astype("float64"), y), rtol=RTOL, atol=ATOL)


def test_conv2d_nchw_with_padding(rng):
    N, C, H, W, F, R, pad = 2, 3, 7, 6, 4, 3, 1
    A = te.placeholder((N, C, H, W), name="A")
    Wt = te.placeholder((F, C, R, R), name="W")
    Apad = te.compute(
        (N, C, H + 2 * pad, W + 2 * pad),
        lambda n, c, h, w: te.if_then_else(
            te.all(h >= pad, h < H + pad, w >= pad, w < W + pad), A[n, c, h - pad, w - pad], 0.0),
        name="pad")
    rc = te.reduce_axis((0, C), name="rc")
    ry = te.reduce_axis((0, R), name="ry")
    rx = te.reduce_axis((0, R), name="rx")
    Out = te.compute(
        (N, F, H, W),
        lambda n, f, y, x: te.sum(Apad[n, rc, y + ry, x + rx] * Wt[f, rc, ry, rx],
                                  axis=[rc, ry, rx]),
        name="conv")
    rt = build([A, Wt, Out])
    a, w = rand(rng, N, C, H, W), rand(rng, F, C, R, R)
    out = np.zeros((N, F, H, W), "float32")
    rt(a, w, out)
    padded = np.pad(a.astype("float64"), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ref = np.zeros((N, F, H, W))
    for y in range(H):
        for x in range(W):
            window = padded[:, :, y:y + R, x:x + R]
            ref[:, :, y, x] = np.einsum("ncij,fcij->nf", window, w)
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)


def test_depthwise_conv2d(rng):
    C, H, W, R = 4, 9, 7, 3
    X = te.placeholder((C, H + R - 1, W + R - 1), name="X")
    Wt = te.placeholder((C, R, R), name="W")
    ry = te.reduce_axis((0, R), name="ry")
    rx = te.reduce_axis((0, R), name="rx")
    Y = te.compute((C, H, W), lambda c, y, x: te.sum(X[c, y + ry, x + rx] * Wt[c, ry, rx],
                                                     axis=[ry, rx]), name="dwconv")
    rt = build([X, Wt, Y])
    x, w = rand(rng, C, H + R - 1, W + R - 1), rand(rng, C, R, R)
    y = np.zeros((C, H, W), "float32")
    rt(x, w, y)
    ref = np.zeros((C, H, W))
    for i in range(R):
        for j in range(R):
            ref += x[:, i:i + H, j:j + W].astype("float64") * w[:, i, j][:, None, None]
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=ATOL)


def test_softmax(rng):
    M, N = 6, 37
    A = te.placeholder((M, N), name="A")
    k1 = te.reduce_axis((0, N), name="k1")
    mx = te.compute((M,), lambda i: te.max(A[i, k1], axis=k1), name="max")
    k2 = te.reduce_axis((0, N), name="k2")
    es = te.compute((M,), lambda i: te.sum(te.exp(A[i, k2] - mx[i]), axis=k2), name="expsum")
    out = te.compute((M, N), lambda i, j: te.exp(A[i, j] - mx[i]) / es[i], name="softmax")
    rt = build([A, out])
    a = rand(rng, M, N) * 4
    y = np.zeros((M, N), "float32")
    rt(a, y)
    e = np.exp(a.astype("float64") - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=RTOL, atol=ATOL)


def test_layer_norm(rng):
    M, N, eps = 5, 24, 1e-5
    X = te.placeholder((M, N), name="X")
    gamma = te.placeholder((N,), name="gamma")
    beta = te.placeholder((N,), name="beta")
    k1 = te.reduce_axis((0, N), name="k1")
    mean = te.compute((M,), lambda i: te.sum(X[i, k1] / N, axis=k1), name="mean")
    k2 = te.reduce_axis((0, N), name="k2")
    var = te.compute((M,), lambda i: te.sum((X[i, k2] - mean[i]) * (X[i, k2] - mean[i]) / N,
                                            axis=k2), name="var")
    Y = te.compute(
        (M, N), lambda i, j: (X[i, j] - mean[i]) * te.rsqrt(var[i] + eps) * gamma[j] + beta[j],
        name="Y")
    rt = build([X, gamma, beta, Y])
    x, g, b = rand(rng, M, N), rand(rng, N), rand(rng, N)
    y = np.zeros((M, N), "float32")
    rt(x, g, b, y)
    x64 = x.astype("float64")
    mu = x64.mean(axis=1, keepdims=True)
    ref = (x64 - mu) / np.sqrt(x64.var(axis=1, keepdims=True) + eps) * g + b
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_rms_norm(rng):
    M, N, eps = 3, 32, 1e-6
    X = te.placeholder((M, N), name="X")
    Wt = te.placeholder((N,), name="W")
    k = te.reduce_axis((0, N), name="k")
    ss = te.compute((M,), lambda i: te.sum(X[i, k] * X[i, k], axis=k), name="sumsq")
    Y = te.compute((M, N), lambda i, j: X[i, j] * te.rsqrt(ss[i] / N + eps) * Wt[j], name="rms")
    rt = build([X, Wt, Y])
    x, w = rand(rng, M, N), rand(rng, N)
    y = np.zeros((M, N), "float32")
    rt(x, w, y)
    x64 = x.astype("float64")
    ref = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + eps) * w
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


def test_int8_dot_product_accumulates_in_int32(rng):
    N = 1024
    A = te.placeholder((N,), "int8", name="A")
    B = te.placeholder((N,), "int8", name="B")
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((1,), lambda i: te.sum(A[k].astype("int32") * B[k].astype("int32"), axis=k),
                   name="dot")
    rt = build([A, B, C])
    a = rng.integers(-128, 128, size=N, dtype="int8")
    b = rng.integers(-128, 128, size=N, dtype="int8")
    a[:8] = -128
    b[:8] = -128
    c = np.zeros((1,), "int32")
    rt(a, b, c)
    assert c[0] == int(np.dot(a.astype("int64"), b.astype("int64")))


def test_fused_sin_plus_cos(rng):
    A = te.placeholder((64, 33), name="A")
    B = te.compute((64, 33), lambda i, j: te.sin(A[i, j]) + te.cos(A[i, j]), name="B")
    rt = build([A, B])
    a = rand(rng, 64, 33) * 10
    b = np.zeros_like(a)
    rt(a, b)
    np.testing.assert_allclose(b, np.sin(a) + np.cos(a), rtol=RTOL, atol=ATOL)


def test_symbolic_shapes_two_sizes(rng):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.placeholder((m,), name="B")
    C = te.compute((n, m), lambda i, j: A[i, j] * 2.0 + B[j], name="C")
    rt = build([A, B, C])
    for rows, cols in [(3, 5), (17, 64)]:
        a, b = rand(rng, rows, cols), rand(rng, cols)
        c = np.zeros((rows, cols), "float32")
        rt(a, b, c)
        np.testing.assert_allclose(c, a * 2.0 + b, rtol=RTOL, atol=ATOL)


def test_symbolic_reduction_two_sizes(rng):
    n = te.var("n")
    A = te.placeholder((n, 16), name="A")
    k = te.reduce_axis((0, 16), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    rt = build([A, B])
    for rows in (1, 40):
        a = rand(rng, rows, 16)
        b = np.zeros((rows,), "float32")
        rt(a, b)
        np.testing.assert_allclose(b, a.astype("float64").sum(axis=1), rtol=RTOL, atol=ATOL)


def test_symbolic_matmul_two_sizes(rng):
    n = te.var("n")
    K, N = 16, 8
    A = te.placeholder((n, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((n, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    rt = build([A, B, C])
    for rows in (7, 33):
        a, b = rand(rng, rows, K), rand(rng, K, N)
        c = np.zeros((rows, N), "float32")
        rt(a, b, c)
        np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=RTOL, atol=ATOL)


def test_scalar_parameters(rng):
    alpha = te.var("alpha", "float32")
    shift = te.var("shift", "int32")
    A = te.placeholder((10,), "float32", name="A")
    B = te.compute((10,), lambda i: A[i] * alpha + shift.astype("float32"), name="B")
    rt = kiln.build(te.create_prim_func([A, alpha, shift, B]))
    a = rand(rng, 10)
    b = np.zeros_like(a)
    rt(a, 1.5, 3, b)
    np.testing.assert_allclose(b, a * 1.5 + 3, rtol=RTOL, atol=ATOL)
    # An int for a float parameter is converted; NumPy scalars are numbers too.
    rt(a, 2, np.int64(-1), b)
    np.testing.assert_allclose(b, a * 2 - 1, rtol=RTOL, atol=ATOL)


def test_float64_and_uint8(rng):
    A = te.placeholder((20,), "float64", name="A")
    B = te.compute((20,), lambda i: A[i] * A[i], name="B")
    rt = build([A, B])
    a = rng.uniform(-3, 3, size=20)
    b = np.zeros_like(a)
    rt(a, b)
    np.testing.assert_allclose(b, a * a, rtol=1e-12)

    U = te.placeholder((20,), "uint8", name="U")
    V = te.compute((20,), lambda i: U[i] + te.const(7, "uint8"), name="V")
    rt = build([U, V])
    u = rng.integers(0, 256, size=20, dtype="uint8")
    v = np.zeros_like(u)
    rt(u, v)
    np.testing.assert_array_equal(v, u + np.uint8(7))  # wraps modulo 256, as NumPy


def test_bool_arrays(rng):
    A = te.placeholder((16,), "float32", name="A")
    M = te.compute((16,), lambda i: A[i] > 0.0, name="M")
    rt = build([A, M])
    a = rand(rng, 16)
    m = np.zeros((16,), dtype=bool)
    rt(a, m)
    np.testing.assert_array_equal(m, a > 0)


def test_bfloat16_arrays(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    A = te.placeholder((32,), "bfloat16", name="A")
    B = te.compute((32,), lambda i: (A[i].astype("float32") * 2.0).astype("bfloat16"), name="B")
    rt = build([A, B])
    a = rand(rng, 32).astype(ml_dtypes.bfloat16)
    b = np.zeros((32,), dtype=ml_dtypes.bfloat16)
    rt(a, b)
    np.testing.assert_array_equal(b.astype("float32"), a.astype("float32") * 2)
