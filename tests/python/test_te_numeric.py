"""Numeric checks of te operators: each PrimFunc made by te.create_prim_func runs on the reference
interpreter (kiln.tir.interpret) and is compared with NumPy."""
import numpy as np
import pytest

from kiln import te, tir

RTOL = 1e-5
ATOL = 1e-6


def run(tensors, *arrays):
    """Runs create_prim_func(tensors) on arrays (the outputs are written in place)."""
    tir.interpret(te.create_prim_func(tensors), *arrays)


def rand(rng, *shape, dtype="float32"):
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_matmul(rng):
    M, N, K = 16, 8, 32
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    a, b, c = rand(rng, M, K), rand(rng, K, N), np.zeros((M, N), "float32")
    run([A, B, C], a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=RTOL, atol=ATOL)


def test_batched_matmul(rng):
    Bn, M, N, K = 3, 4, 5, 6
    X = te.placeholder((Bn, M, K), name="X")
    Y = te.placeholder((Bn, K, N), name="Y")
    k = te.reduce_axis((0, K), name="k")
    Z = te.compute((Bn, M, N), lambda b, i, j: te.sum(X[b, i, k] * Y[b, k, j], axis=k), name="Z")
    x, y, z = rand(rng, Bn, M, K), rand(rng, Bn, K, N), np.zeros((Bn, M, N), "float32")
    run([X, Y, Z], x, y, z)
    np.testing.assert_allclose(z, np.matmul(x.astype("float64"), y), rtol=RTOL, atol=ATOL)


def test_conv2d_nchw_with_padding(rng):
    N, C, H, W, F, R, pad = 2, 3, 6, 5, 4, 3, 1
    A = te.placeholder((N, C, H, W), name="A")
    Wt = te.placeholder((F, C, R, R), name="W")
    Hp, Wp = H + 2 * pad, W + 2 * pad
    Apad = te.compute(
        (N, C, Hp, Wp),
        lambda n, c, h, w: te.if_then_else(
            te.all(h >= pad, h < H + pad, w >= pad, w < W + pad), A[n, c, h - pad, w - pad], 0.0),
        name="pad")
    rc = te.reduce_axis((0, C), name="rc")
    ry = te.reduce_axis((0, R), name="ry")
    rx = te.reduce_axis((0, R), name="rx")
    Ho, Wo = Hp - R + 1, Wp - R + 1
    Out = te.compute(
        (N, F, Ho, Wo),
        lambda n, f, y, x: te.sum(Apad[n, rc, y + ry, x + rx] * Wt[f, rc, ry, rx],
                                  axis=[rc, ry, rx]),
        name="conv")
    a, w = rand(rng, N, C, H, W), rand(rng, F, C, R, R)
    out = np.zeros((N, F, Ho, Wo), "float32")
    run([A, Wt, Out], a, w, out)
    ap = np.pad(a.astype("float64"), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ref = np.zeros((N, F, Ho, Wo))
    for dy in range(R):
        for dx in range(R):
            ref += np.einsum("nchw,fc->nfhw", ap[:, :, dy:dy + Ho, dx:dx + Wo], w[:, :, dy, dx])
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)


def test_depthwise_conv2d(rng):
    N, C, H, W, R = 1, 4, 6, 7, 3
    A = te.placeholder((N, C, H, W), name="A")
    K = te.placeholder((C, R, R), name="K")
    ry = te.reduce_axis((0, R), name="ry")
    rx = te.reduce_axis((0, R), name="rx")
    Ho, Wo = H - R + 1, W - R + 1
    Out = te.compute(
        (N, C, Ho, Wo),
        lambda n, c, y, x: te.sum(A[n, c, y + ry, x + rx] * K[c, ry, rx], axis=[ry, rx]),
        name="depthwise")
    a, kk = rand(rng, N, C, H, W), rand(rng, C, R, R)
    out = np.zeros((N, C, Ho, Wo), "float32")
    run([A, K, Out], a, kk, out)
    ref = np.zeros((N, C, Ho, Wo))
    for dy in range(R):
        for dx in range(R):
            ref += a[:, :, dy:dy + Ho, dx:dx + Wo].astype("float64") * kk[None, :, dy, dx, None, None]
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)


def test_softmax(rng):
    M, N = 4, 10
    A = te.placeholder((M, N), name="A")
    k1 = te.reduce_axis((0, N), name="k1")
    mx = te.compute((M,), lambda i: te.max(A[i, k1], axis=k1), name="max")
    k2 = te.reduce_axis((0, N), name="k2")
    es = te.compute((M,), lambda i: te.sum(te.exp(A[i, k2] - mx[i]), axis=k2), name="expsum")
    out = te.compute((M, N), lambda i, j: te.exp(A[i, j] - mx[i]) / es[i], name="softmax")
    a = rand(rng, M, N) * 4
    o = np.zeros((M, N), "float32")
    run([A, out], a, o)
    e = np.exp(a.astype("float64") - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(o, e / e.sum(axis=1, keepdims=True), rtol=RTOL, atol=ATOL)


def test_layer_norm(rng):
    M, N, eps = 4, 16, 1e-5
    X = te.placeholder((M, N), name="X")
    gamma = te.placeholder((N,), name="gamma")
    beta = te.placeholder((N,), name="beta")
    k = te.reduce_axis((0, N), name="k")
    mean = te.compute((M,), lambda i: te.sum(X[i, k] / N, axis=k), name="mean")
    k2 = te.reduce_axis((0, N), name="k2")
    var = te.compute((M,), lambda i: te.sum((X[i, k2] - mean[i]) * (X[i, k2] - mean[i]) / N,
                                            axis=k2), name="var")
    Y = te.compute(
        (M, N),
        lambda i, j: (X[i, j] - mean[i]) * te.rsqrt(var[i] + eps) * gamma[j] + beta[j],
        name="layer_norm")
    x, g, b = rand(rng, M, N), rand(rng, N), rand(rng, N)
    y = np.zeros((M, N), "float32")
    run([X, gamma, beta, Y], x, g, b, y)
    x64 = x.astype("float64")
    mu = x64.mean(axis=1, keepdims=True)
    sigma2 = ((x64 - mu) ** 2).mean(axis=1, keepdims=True)
    np.testing.assert_allclose(y, (x64 - mu) / np.sqrt(sigma2 + eps) * g + b, rtol=RTOL,
                               atol=1e-5)


def test_rms_norm(rng):
    M, N, eps = 3, 16, 1e-6
    X = te.placeholder((M, N), name="X")
    Wt = te.placeholder((N,), name="W")
    k = te.reduce_axis((0, N), name="k")
    ss = te.compute((M,), lambda i: te.sum(X[i, k] * X[i, k], axis=k), name="sumsq")
    Y = te.compute((M, N), lambda i, j: X[i, j] * te.rsqrt(ss[i] / N + eps) * Wt[j], name="rms")
    x, w = rand(rng, M, N), rand(rng, N)
    y = np.zeros((M, N), "float32")
    run([X, Wt, Y], x, w, y)
    x64 = x.astype("float64")
    ref = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + eps) * w
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=ATOL)


def test_int8_dot_product_accumulates_in_int32(rng):
    N = 256
    A = te.placeholder((N,), "int8", name="A")
    B = te.placeholder((N,), "int8", name="B")
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((1,), lambda i: te.sum(A[k].astype("int32") * B[k].astype("int32"), axis=k),
                   name="dot")
    a = rng.integers(-128, 128, size=N, dtype="int8")
    b = rng.integers(-128, 128, size=N, dtype="int8")
    a[:4] = -128
    b[:4] = -128
    c = np.zeros((1,), "int32")
    run([A, B, C], a, b, c)
    assert c[0] == int(np.dot(a.astype("int64"), b.astype("int64")))


def test_fused_elementwise_chain(rng):
    A = te.placeholder((16, 4), name="A")
    B = te.compute((16, 4), lambda i, j: te.sin(A[i, j]) + te.cos(A[i, j]), name="B")
    a = rand(rng, 16, 4)
    b = np.zeros_like(a)
    run([A, B], a, b)
    np.testing.assert_allclose(b, np.sin(a) + np.cos(a), rtol=RTOL, atol=ATOL)


def test_argmax_with_a_tuple_reducer(rng):
    M, N = 5, 9

    def fcombine(x, y):
        keep = x[1] >= y[1]
        return tir.Select(keep, x[0], y[0]), tir.Select(keep, x[1], y[1])

    def fidentity(t0, t1):
        return te.const(-1, t0), te.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    A = te.placeholder((M, N), name="A")
    k = te.reduce_axis((0, N), name="k")
    idx, val = te.compute((M,), lambda i: argmax((k.var, A[i, k]), axis=k), name="argmax")
    a = rand(rng, M, N)
    a[2, 3] = a[2, 6] = 5.0  # a tie keeps the first index, as numpy.argmax
    out_idx, out_val = np.zeros((M,), "int32"), np.zeros((M,), "float32")
    run([A, idx, val], a, out_idx, out_val)
    np.testing.assert_array_equal(out_idx, np.argmax(a, axis=1))
    np.testing.assert_array_equal(out_val, a.max(axis=1))


def test_symbolic_shapes(rng):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.placeholder((m,), name="B")
    C = te.compute((n, m), lambda i, j: A[i, j] * 2.0 + B[j], name="C")
    func = te.create_prim_func([A, B, C])
    for rows, cols in [(3, 5), (7, 2)]:
        a, b = rand(rng, rows, cols), rand(rng, cols)
        c = np.zeros((rows, cols), "float32")
        tir.interpret(func, a, b, c)
        np.testing.assert_allclose(c, a * 2.0 + b, rtol=RTOL, atol=ATOL)


def test_where_init_prod_and_min(rng):
    N = 6
    A = te.placeholder((N, N), name="A")
    Bias = te.placeholder((N,), name="bias")
    k1, k2, k3 = (te.reduce_axis((0, N), name=n) for n in ("k1", "k2", "k3"))
    tri = te.compute((N,), lambda i: te.sum(A[i, k1], axis=k1, where=k1 <= i, init=Bias[i]),
                     name="tri")
    prod = te.compute((N,), lambda i: te.prod(A[i, k2], axis=k2), name="prod")
    mn = te.compute((N,), lambda i: te.min(A[i, k3], axis=k3), name="min")
    a, bias = rand(rng, N, N), rand(rng, N)
    outs = [np.zeros((N,), "float32") for _ in range(3)]
    run([A, Bias, tri, prod, mn], a, bias, *outs)
    a64 = a.astype("float64")
    np.testing.assert_allclose(outs[0], bias + np.tril(a64).sum(axis=1), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(outs[1], a64.prod(axis=1), rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(outs[2], a.min(axis=1))


def test_intermediates_and_offset_reads(rng):
    A = te.placeholder((10,), name="A")
    T = te.compute((10,), lambda i: A[i] * 3.0, name="T")
    B = te.compute((8,), lambda i: T[i] + T[i + 1] - T[i + 2], name="B")
    a = rand(rng, 10)
    b = np.zeros((8,), "float32")
    run([A, B], a, b)
    t = a.astype("float64") * 3.0
    np.testing.assert_allclose(b, t[:8] + t[1:9] - t[2:], rtol=RTOL, atol=ATOL)


def test_reductions_over_an_axis_the_values_do_not_use(rng):
    # As in TVM: the sum is extent * x, the max is x. Interpreted and compiled.
    import kiln
    A = te.placeholder((4, 3), name="A")
    k = te.reduce_axis((0, 5), name="k")
    r = te.reduce_axis((0, 7), name="r")
    S = te.compute((4,), lambda i: te.sum(A[i, 0] * 2.0, axis=k), name="S")
    M = te.compute((4,), lambda i: te.max(A[i, 1], axis=r), name="M")
    func = te.create_prim_func([A, S, M])
    a = rand(rng, 4, 3)
    for runner in (lambda *x: tir.interpret(func, *x), kiln.build(func)):
        s, m = np.zeros(4, "float32"), np.zeros(4, "float32")
        runner(a, s, m)
        np.testing.assert_allclose(s, 5 * (a[:, 0] * 2.0), rtol=RTOL, atol=ATOL)
        np.testing.assert_array_equal(m, a[:, 1])


def test_fully_masked_softmax_row_stays_finite(rng):
    # Masked scores take te.min_value, which is finite: a row masked everywhere becomes a uniform
    # distribution, as in TVM, instead of NaN (-inf - -inf).
    n = 6
    X = te.placeholder((3, n), name="X")
    L = te.placeholder((3,), "int32", name="L")  # valid length of each row
    S = te.compute((3, n), lambda i, j: te.if_then_else(j < L[i], X[i, j],
                                                         te.min_value("float32")), name="S")
    k = te.reduce_axis((0, n), name="k")
    Mx = te.compute((3,), lambda i: te.max(S[i, k], axis=k), name="Mx")
    E = te.compute((3, n), lambda i, j: te.exp(S[i, j] - Mx[i]), name="E")
    k2 = te.reduce_axis((0, n), name="k2")
    Z = te.compute((3,), lambda i: te.sum(E[i, k2], axis=k2), name="Z")
    P = te.compute((3, n), lambda i, j: E[i, j] / Z[i], name="P")
    x = rand(rng, 3, n)
    lengths = np.array([0, 2, n], "int32")
    p = np.zeros((3, n), "float32")
    run([X, L, P], x, lengths, p)
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p[0], np.full(n, 1.0 / n), rtol=RTOL)
    e = np.exp(x[1, :2] - x[1, :2].max())
    np.testing.assert_allclose(p[1, :2], e / e.sum(), rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(p[1, 2:], 0.0)
