"""Helpers shared by the lowering tests: operators built with kiln.te together with arguments
for them, the numeric check that two functions compute the same results on the reference
interpreter, and a walk over every node of a function body."""
import numpy as np

from kiln import te, tir


def matmul(m=6, n=5, k=4):
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    rk = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, rk] * B[rk, j], axis=rk), name="C")
    return te.create_prim_func([A, B, C]), [(m, k), (k, n), (m, n)]


def conv2d_padded(n=1, ci=2, h=5, w=5, co=3, r=3):
    """NCHW convolution with stride 1 and padding 1, through a padding stage."""
    X = te.placeholder((n, ci, h, w), "float32", name="X")
    W = te.placeholder((co, ci, r, r), "float32", name="W")
    pad = te.compute(
        (n, ci, h + 2, w + 2),
        lambda b, c, y, x: te.if_then_else(te.all(y >= 1, y < h + 1, x >= 1, x < w + 1),
                                           X[b, c, y - 1, x - 1], 0.0),
        name="pad")
    rc = te.reduce_axis((0, ci), name="rc")
    ry = te.reduce_axis((0, r), name="ry")
    rx = te.reduce_axis((0, r), name="rx")
    out = te.compute(
        (n, co, h, w),
        lambda b, f, y, x: te.sum(pad[b, rc, y + ry, x + rx] * W[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv")
    return te.create_prim_func([X, W, out]), [(n, ci, h, w), (co, ci, r, r), (n, co, h, w)]


def softmax(rows=4, cols=7):
    X = te.placeholder((rows, cols), "float32", name="X")
    k1 = te.reduce_axis((0, cols), name="k")
    mx = te.compute((rows,), lambda i: te.max(X[i, k1], axis=k1), name="row_max")
    e = te.compute((rows, cols), lambda i, j: te.exp(X[i, j] - mx[i]), name="exp")
    k2 = te.reduce_axis((0, cols), name="k")
    s = te.compute((rows,), lambda i: te.sum(e[i, k2], axis=k2), name="row_sum")
    out = te.compute((rows, cols), lambda i, j: e[i, j] / s[i], name="softmax")
    return te.create_prim_func([X, out]), [(rows, cols), (rows, cols)]


def layer_norm(rows=4, cols=6):
    X = te.placeholder((rows, cols), "float32", name="X")
    gamma = te.placeholder((cols,), "float32", name="gamma")
    k1 = te.reduce_axis((0, cols), name="k")
    mean = te.compute((rows,), lambda i: te.sum(X[i, k1] * (1.0 / cols), axis=k1), name="mean")
    k2 = te.reduce_axis((0, cols), name="k")
    var = te.compute(
        (rows,),
        lambda i: te.sum((X[i, k2] - mean[i]) * (X[i, k2] - mean[i]) * (1.0 / cols), axis=k2),
        name="var")
    out = te.compute(
        (rows, cols),
        lambda i, j: (X[i, j] - mean[i]) * te.rsqrt(var[i] + 1e-5) * gamma[j],
        name="norm")
    return te.create_prim_func([X, gamma, out]), [(rows, cols), (cols,), (rows, cols)]


def symbolic_elementwise(size=9):
    """B[i] = A[i] * 2 + 1 over a symbolic length n, through an intermediate tensor."""
    n = te.var("n")
    A = te.placeholder((n,), "float32", name="A")
    T = te.compute((n,), lambda i: A[i] * 2.0, name="T")
    B = te.compute((n,), lambda i: T[i] + 1.0, name="B")
    return te.create_prim_func([A, B]), [(size,), (size,)]


OPERATORS = {
    "matmul": matmul,
    "conv2d_padded": conv2d_padded,
    "softmax": softmax,
    "layer_norm": layer_norm,
    "symbolic_elementwise": symbolic_elementwise,
}


def random_arguments(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape, dtype=np.float32) for shape in shapes]


def assert_same_results(before, after, shapes):
    """Runs both functions on the same random arguments; every array must end bit for bit equal
    (lowering passes do not reorder floating-point operations)."""
    expected = random_arguments(shapes)
    actual = [a.copy() for a in expected]
    tir.interpret(before, *expected)
    tir.interpret(after, *actual)
    for k, (e, a) in enumerate(zip(expected, actual)):
        np.testing.assert_array_equal(a, e, err_msg=f"argument {k} differs:\n{after}")


_CHILDREN = ("body", "seq", "then_case", "else_case", "block", "init", "value", "indices",
             "iter_values", "predicate", "a", "b", "condition", "true_value", "false_value",
             "args", "base", "stride", "min", "extent")


def walk(node):
    """Every statement and expression under `node`, parents first."""
    if node is None:
        return
    yield node
    for name in _CHILDREN:
        child = getattr(node, name, None)
        if child is None or isinstance(child, (int, float, str)):
            continue
        if isinstance(child, (list, tuple)) or isinstance(node, tir.SeqStmt) and name == "seq":
            for c in child:
                yield from walk(c)
        elif isinstance(child, (tir.Stmt, tir.PrimExpr)):
            yield from walk(child)
