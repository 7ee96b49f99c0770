"""Helpers shared by the schedule tests and the random-schedule fuzzer: a corpus of workloads,
a numeric check of a scheduled function against the unscheduled one on the reference
interpreter, and a round trip of the trace through JSON and through Python code."""
import json

import numpy as np

import kiln
from kiln import te, tir


# ---------------------------------------------------------------------------------------------
# Workloads: each returns a PrimFunc (small shapes, so the interpreter is quick).

def matmul(m=16, n=12, k=8, dtype="float32"):
    A = te.placeholder((m, k), dtype, name="A")
    B = te.placeholder((k, n), dtype, name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def matmul_relu(m=16, n=12, k=8):
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    D = te.compute((m, n), lambda i, j: te.max(C[i, j], 0.0), name="D")
    return te.create_prim_func([A, B, D])


def batch_matmul(b=2, m=8, n=6, k=4):
    A = te.placeholder((b, m, k), "float32", name="A")
    B = te.placeholder((b, k, n), "float32", name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((b, m, n), lambda z, i, j: te.sum(A[z, i, r] * B[z, r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def conv2d(n=1, c=3, h=8, w=8, f=4, kh=3, kw=3, pad=1):
    X = te.placeholder((n, c, h, w), "float32", name="X")
    W = te.placeholder((f, c, kh, kw), "float32", name="W")
    P = te.compute((n, c, h + 2 * pad, w + 2 * pad),
                   lambda b, ch, y, x: te.if_then_else(
                       te.all(y >= pad, y < h + pad, x >= pad, x < w + pad),
                       X[b, ch, y - pad, x - pad], 0.0), name="pad")
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    Y = te.compute((n, f, h, w),
                   lambda b, o, y, x: te.sum(P[b, rc, y + ry, x + rx] * W[o, rc, ry, rx],
                                             axis=[rc, ry, rx]), name="conv")
    return te.create_prim_func([X, W, Y])


def depthwise_conv2d(c=4, h=6, w=6, k=3):
    X = te.placeholder((c, h + k - 1, w + k - 1), "float32", name="X")
    W = te.placeholder((c, k, k), "float32", name="W")
    ry = te.reduce_axis((0, k), name="ry")
    rx = te.reduce_axis((0, k), name="rx")
    Y = te.compute((c, h, w), lambda ch, y, x: te.sum(X[ch, y + ry, x + rx] * W[ch, ry, rx],
                                                       axis=[ry, rx]), name="dwconv")
    return te.create_prim_func([X, W, Y])


def softmax(rows=4, cols=10):
    X = te.placeholder((rows, cols), "float32", name="X")
    k1 = te.reduce_axis((0, cols), name="k1")
    mx = te.compute((rows,), lambda i: te.max(X[i, k1], axis=k1), name="row_max")
    e = te.compute((rows, cols), lambda i, j: te.exp(X[i, j] - mx[i]), name="exp")
    k2 = te.reduce_axis((0, cols), name="k2")
    s = te.compute((rows,), lambda i: te.sum(e[i, k2], axis=k2), name="row_sum")
    Y = te.compute((rows, cols), lambda i, j: e[i, j] / s[i], name="Y")
    return te.create_prim_func([X, Y])


def layer_norm(rows=4, cols=12, eps=1e-5):
    X = te.placeholder((rows, cols), "float32", name="X")
    G = te.placeholder((cols,), "float32", name="gamma")
    Bt = te.placeholder((cols,), "float32", name="beta")
    k1 = te.reduce_axis((0, cols), name="k1")
    mean = te.compute((rows,), lambda i: te.sum(X[i, k1] / cols, axis=k1), name="mean")
    k2 = te.reduce_axis((0, cols), name="k2")
    var = te.compute((rows,), lambda i: te.sum((X[i, k2] - mean[i]) * (X[i, k2] - mean[i]) / cols,
                                               axis=k2), name="var")
    Y = te.compute((rows, cols),
                   lambda i, j: (X[i, j] - mean[i]) * te.rsqrt(var[i] + eps) * G[j] + Bt[j],
                   name="Y")
    return te.create_prim_func([X, G, Bt, Y])


def elementwise_chain(n=24, m=10):
    A = te.placeholder((n, m), "float32", name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + 1.0, name="C")
    D = te.compute((n, m), lambda i, j: te.sin(C[i, j]) + te.cos(C[i, j]), name="D")
    return te.create_prim_func([A, D])


def symbolic_row_sum():
    n = te.var("n")
    A = te.placeholder((n, 16), "float32", name="A")
    k = te.reduce_axis((0, 16), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return te.create_prim_func([A, B])


def matmul_u8s8s32(m=32, n=64, k=64, a_dtype="uint8", packed=True, lanes=16):
    """C[i, j] (int32) = sum_k A[i, k] * B[j, k] with A uint8 and B int8. Packed, B is laid out
    as (n // lanes, k // 4, lanes, 4), so that each lanes x 4 tile of it is contiguous (the
    layout of the x86 VNNI intrinsics: 16 lanes for AVX-512 VNNI, 8 for AVX-VNNI); otherwise B
    is (n, k)."""
    A = te.placeholder((m, k), a_dtype, name="A")
    r = te.reduce_axis((0, k), name="k")
    if packed:
        B = te.placeholder((n // lanes, k // 4, lanes, 4), "int8", name="B")
        value = lambda i, j: B[j // lanes, r // 4, j % lanes, r % 4]  # noqa: E731
    else:
        B = te.placeholder((n, k), "int8", name="B")
        value = lambda i, j: B[j, r]  # noqa: E731
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r].astype("int32") *
                                               value(i, j).astype("int32"), axis=r), name="C")
    return te.create_prim_func([A, B, C])


def matmul_bf16(m=32, n=64, k=32):
    """C[i, j] (float32) = sum_k A[i, k] * B[j, k] over bfloat16 A and B, B laid out as
    (n // 16, k // 2, 16, 2): the layout of the x86 AVX-512 BF16 intrinsic."""
    A = te.placeholder((m, k), "bfloat16", name="A")
    B = te.placeholder((n // 16, k // 2, 16, 2), "bfloat16", name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(
        A[i, r].astype("float32") * B[j // 16, r // 2, j % 16, r % 2].astype("float32"),
        axis=r), name="C")
    return te.create_prim_func([A, B, C])


WORKLOADS = {
    "matmul": matmul,
    "matmul_relu": matmul_relu,
    "batch_matmul": batch_matmul,
    "conv2d": conv2d,
    "depthwise_conv2d": depthwise_conv2d,
    "softmax": softmax,
    "layer_norm": layer_norm,
    "elementwise_chain": elementwise_chain,
    "symbolic_row_sum": symbolic_row_sum,
}

# Values of the symbolic dimensions when a workload is run.
SYMBOLIC_SIZES = {"n": 5}


# ---------------------------------------------------------------------------------------------
# Numeric check

def _shape_of(buffer, sizes):
    shape = []
    for dim in buffer.shape:
        if isinstance(dim, tir.IntImm):
            shape.append(dim.value)
        else:
            shape.append(sizes[dim.name])
    return shape


def random_args(func, seed=0, sizes=None):
    """Random arrays for every parameter of func (outputs included)."""
    sizes = sizes or SYMBOLIC_SIZES
    rng = np.random.default_rng(seed)
    args = []
    for param in func.params:
        buffer = func.buffer_map[param]
        shape = _shape_of(buffer, sizes)
        if buffer.dtype.startswith("float"):
            args.append(rng.uniform(-1, 1, size=shape).astype(buffer.dtype))
        else:
            args.append(rng.integers(-8, 8, size=shape).astype(buffer.dtype))
    return args


def assert_same_results(original, scheduled, seed=0, rtol=1e-5, atol=1e-6):
    """Runs both functions on the same random inputs and compares every array afterwards."""
    if isinstance(scheduled, kiln.IRModule):
        scheduled = scheduled["main"]
    expected = random_args(original, seed)
    actual = [a.copy() for a in expected]
    tir.interpret(original, *expected)
    tir.interpret(scheduled, *actual)
    for e, a in zip(expected, actual):
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------------
# Trace round trips

def assert_trace_roundtrip(sch, original):
    """Replays the trace as JSON (through text) and as Python code on fresh schedules; both
    must give a module structurally equal to the schedule's."""
    text = json.dumps(sch.trace.as_json())
    replayed = tir.Schedule(original)
    tir.Trace.apply_json_to_schedule(json.loads(text), replayed)
    kiln.ir.assert_structural_equal(replayed.mod, sch.mod)
    from_python = tir.Schedule(original)
    exec(sch.trace.as_python(), {"sch": from_python})  # noqa: S102 - the trace is our own
    kiln.ir.assert_structural_equal(from_python.mod, sch.mod)
