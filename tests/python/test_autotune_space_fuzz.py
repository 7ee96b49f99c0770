"""Design-space fuzzer: random odd-shaped workloads of the operator kinds the tuner meets
(products, packed and VNNI dense layers, SwiGLU, convolutions (int8, grouped, dilated,
depthwise), normalizations, softmax and log_softmax, attention, pooling, reductions, argmax and
argmin, int8 products, quantization, transposes, concatenation and slicing, RoPE, element-wise
chains) and random candidates of every sketch of their
design space for this machine's target. Each candidate must compute what the unscheduled
function computes twice: lowered, on the reference interpreter, which checks every access
against its buffer's bounds (a register tile's included, where compiled code only goes wrong
when LLVM exploits an overrun; not a tensorized candidate, whose LLVM intrinsic the interpreter
cannot run), and built with LLVM, on this machine.

KILN_SPACE_FUZZ=N draws N workloads (default 56); KILN_SPACE_FUZZ_SEED picks the seed.
"""
import os
import random

import numpy as np
import pytest

import kiln
from kiln import te, tir, topi
from kiln.autotune import SpaceGenerator

WORKLOADS = int(os.environ.get("KILN_SPACE_FUZZ", "56"))
SEED = int(os.environ.get("KILN_SPACE_FUZZ_SEED", "20261202"))
CANDIDATES_PER_SKETCH = 2


# ---------------------------------------------------------------------------------------------
# Workload makers: each draws its shape from `rnd` and returns (description, tensors), the
# last tensor the output.

def matmul(rnd, max_columns=60, a_transposed=False):
    """A @ B, or A.T @ B with A stored (k, m)."""
    m, n, k = rnd.randint(1, 40), rnd.randint(1, max_columns), rnd.randint(1, 40)
    a = te.placeholder((k, m) if a_transposed else (m, k), "float32", name="A")
    b = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis((0, k), name="r")
    c = te.compute((m, n), lambda i, j: te.sum((a[r, i] if a_transposed else a[i, r]) * b[r, j],
                                               axis=r), name="C")
    return f"{'A.T @ B' if a_transposed else 'matmul'} {m}x{n}x{k}", [a, b, c]


def matmul_chain(rnd):
    what, (a, b, c) = matmul(rnd, max_columns=40)
    d = te.compute(c.shape, lambda i, j: te.max(c[i, j] * 0.5 + 1.0, 0.0), name="D")
    return what + " + scale + relu", [a, b, d]


def dense_bias_relu(rnd):
    m, n, k = rnd.randint(1, 30), rnd.randint(1, 60), rnd.randint(1, 40)
    x = te.placeholder((m, k), "float32", name="x")
    w = te.placeholder((n, k), "float32", name="w")
    b = te.placeholder((n,), "float32", name="b")
    return f"dense + bias + relu {m}x{n}x{k}", [x, w, b, topi.nn.relu(topi.nn.dense(x, w, b))]


def batch_matmul_nt(rnd):
    z, m, n, k = rnd.randint(1, 3), rnd.randint(1, 24), rnd.randint(1, 24), rnd.randint(1, 24)
    x = te.placeholder((z, m, k), "float32", name="x")
    y = te.placeholder((z, n, k), "float32", name="y")
    return f"batch matmul (B transposed) {z}x{m}x{n}x{k}", [x, y, topi.nn.batch_matmul(x, y)]


def matmul_a_transposed(rnd):
    return matmul(rnd, max_columns=50, a_transposed=True)


def dense_swiglu(rnd):
    m, n, k = rnd.randint(1, 20), rnd.randint(1, 30), rnd.randint(1, 40)
    x = te.placeholder((m, k), "float32", name="x")
    w = te.placeholder((2 * n, k), "float32", name="w")
    return f"dense + SwiGLU {m}x{n}x{k}", [x, w, topi.nn.swiglu(topi.nn.dense(x, w))]


def int8_matmul(rnd):
    m, n, k = rnd.randint(1, 30), rnd.randint(1, 60), rnd.randint(1, 64)
    a = te.placeholder((m, k), "uint8", name="A")
    b = te.placeholder((n, k), "int8", name="B")
    r = te.reduce_axis((0, k), name="r")
    c = te.compute((m, n), lambda i, j: te.sum(
        a[i, r].astype("int32") * b[j, r].astype("int32"), axis=r), name="C")
    return f"u8 x s8 -> s32 matmul {m}x{n}x{k}", [a, b, c]


def int8_dense_vnni(rnd):
    # The VNNI layout (NC16n4c, NC8n4c with AVX-VNNI): tensorized where the CPU has VNNI; a depth
    # no multiple of 4 reads the data through a pad stage; units cut the last panel short.
    lanes = topi.nn.vnni_lanes("llvm") or 16
    m, blocks, k = rnd.randint(1, 20), rnd.randint(1, 4), rnd.randint(1, 70)
    x = te.placeholder((m, k), "uint8", name="x")
    w = te.placeholder((blocks, -(-k // 4), lanes, 4), "int8", name="w")
    units = rnd.randint((blocks - 1) * lanes + 1, blocks * lanes)
    return (f"dense_int8 NC{lanes}n4c {m}x{units}x{k}",
            [x, w, topi.nn.dense_int8(x, w, units=units)])


def dense_packed(rnd):
    bn = rnd.choice([4, 8, 16, 32])
    m, blocks, k = rnd.randint(1, 30), rnd.randint(1, 4), rnd.randint(1, 50)
    units = rnd.randint((blocks - 1) * bn + 1, blocks * bn)
    x = te.placeholder((m, k), "float32", name="x")
    w = te.placeholder((blocks, k, bn), "float32", name="w")
    b = te.placeholder((units,), "float32", name="b")
    return (f"dense_pack panels of {bn} {m}x{units}x{k} + bias",
            [x, w, b, topi.nn.dense_pack(x, w, b, units=units)])


def conv2d(rnd):
    c, f = rnd.randint(1, 6), rnd.randint(1, 12)
    h, w, k = rnd.randint(3, 11), rnd.randint(3, 11), rnd.choice([1, 3])
    stride, pad = rnd.choice([1, 2]), (rnd.choice([0, 1]) if k == 3 else 0)
    if rnd.random() < 0.5:
        x = te.placeholder((1, c, h, w), "float32", name="x")
        wt = te.placeholder((f, c, k, k), "float32", name="w")
        y, layout = topi.nn.conv2d_nchw(x, wt, stride, pad, 1), "NCHW"
    else:
        x = te.placeholder((1, h, w, c), "float32", name="x")
        wt = te.placeholder((k, k, c, f), "float32", name="w")
        y, layout = topi.nn.conv2d_nhwc(x, wt, stride, pad, 1), "NHWC"
    return f"conv2d {layout} {c}->{f} {h}x{w} kernel {k} stride {stride} pad {pad}", [x, wt, y]


def int8_conv2d(rnd):
    c, f = rnd.randint(1, 8), rnd.randint(1, 20)
    h, w = rnd.randint(3, 10), rnd.randint(3, 10)
    stride, pad = rnd.choice([1, 2]), rnd.choice([0, 1])
    if rnd.random() < 0.5:
        x = te.placeholder((1, c, h, w), "int8", name="x")
        k = te.placeholder((f, c, 3, 3), "int8", name="w")
        y, layout = topi.nn.conv2d_nchw(x, k, stride, pad, 1, out_dtype="int32"), "NCHW"
    else:
        x = te.placeholder((1, h, w, c), "int8", name="x")
        k = te.placeholder((3, 3, c, f), "int8", name="w")
        y, layout = topi.nn.conv2d_nhwc(x, k, stride, pad, 1, out_dtype="int32"), "NHWC"
    return f"int8 conv2d {layout} {c}->{f} {h}x{w} stride {stride} pad {pad}", [x, k, y]


def group_conv(rnd):
    groups = rnd.randint(1, 4)
    c, f = groups * rnd.randint(1, 3), groups * rnd.randint(1, 4)
    h, w = rnd.randint(5, 12), rnd.randint(5, 12)
    stride, pad, dilation = rnd.choice([1, 2]), rnd.choice([0, 1, 2]), rnd.choice([1, 2])
    x = te.placeholder((1, c, h, w), "float32", name="x")
    wt = te.placeholder((f, c // groups, 3, 3), "float32", name="w")
    return (f"group conv2d {groups} groups {c}->{f} {h}x{w} stride {stride} pad {pad} "
            f"dilation {dilation}",
            [x, wt, topi.nn.group_conv2d_nchw(x, wt, stride, pad, dilation, groups)])


def depthwise(rnd):
    c, h, w, stride = rnd.randint(1, 12), rnd.randint(3, 14), rnd.randint(3, 14), rnd.choice([1, 2])
    x = te.placeholder((1, c, h, w), "float32", name="x")
    wt = te.placeholder((c, 1, 3, 3), "float32", name="w")
    return (f"depthwise conv2d {c} {h}x{w} stride {stride}",
            [x, wt, topi.nn.depthwise_conv2d_nchw(x, wt, stride, 1, 1)])


def pool(rnd):
    c, h, w, kind = rnd.randint(1, 12), rnd.randint(3, 20), rnd.randint(3, 20), rnd.choice(
        ["max", "avg"])
    x = te.placeholder((1, c, h, w), "float32", name="x")
    return (f"{kind} pool 3x3/2 {c} {h}x{w}",
            [x, topi.nn.pool2d(x, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), kind)])


def pool_nhwc_ceil(rnd):
    c, h, w, kind = rnd.randint(1, 8), rnd.randint(4, 20), rnd.randint(4, 20), rnd.choice(
        ["max", "avg"])
    x = te.placeholder((1, h, w, c), "float32", name="x")
    return (f"{kind} pool NHWC 2x2/2 dilation 2 ceil mode {c} {h}x{w}",
            [x, topi.nn.pool2d(x, (2, 2), (2, 2), (2, 2), (0, 0, 1, 1), kind, ceil_mode=True,
                               layout="NHWC", count_include_pad=False)])


def adaptive_pool(rnd):
    c, h, w, kind = rnd.randint(1, 8), rnd.randint(1, 20), rnd.randint(1, 20), rnd.choice(
        ["max", "avg"])
    out = (rnd.randint(1, h), rnd.randint(1, w))
    x = te.placeholder((1, c, h, w), "float32", name="x")
    return f"adaptive {kind} pool {c} {h}x{w} to {out}", [x, topi.nn.adaptive_pool(x, out, kind)]


def softmax(rnd):
    rows, cols = rnd.randint(1, 16), rnd.randint(1, 200)
    x = te.placeholder((rows, cols), "float32", name="x")
    return f"softmax {rows}x{cols}", [x, topi.nn.softmax(x, axis=-1)]


def log_softmax_columns(rnd):
    rows, cols = rnd.randint(1, 60), rnd.randint(1, 40)
    x = te.placeholder((rows, cols), "float32", name="x")
    return f"log_softmax over rows {rows}x{cols}", [x, topi.nn.log_softmax(x, axis=0)]


def residual_layer_norm(rnd):
    rows, cols = rnd.randint(1, 30), rnd.randint(1, 150)
    x = te.placeholder((rows, cols), "float32", name="x")
    r = te.placeholder((rows, cols), "float32", name="r")
    g = te.placeholder((cols,), "float32", name="g")
    b = te.placeholder((cols,), "float32", name="b")
    return (f"residual + layer norm {rows}x{cols}",
            [x, r, g, b, topi.nn.layer_norm(topi.add(x, r), g, b, axis=[1])])


def layer_norm(rnd):
    rows, cols = rnd.randint(1, 16), rnd.randint(1, 200)
    x = te.placeholder((rows, cols), "float32", name="x")
    g = te.placeholder((cols,), "float32", name="g")
    b = te.placeholder((cols,), "float32", name="b")
    return f"layer norm {rows}x{cols}", [x, g, b, topi.nn.layer_norm(x, g, b, axis=[1])]


def rms_norm(rnd):
    rows, cols = rnd.randint(1, 16), rnd.randint(1, 200)
    x = te.placeholder((rows, cols), "float32", name="x")
    g = te.placeholder((cols,), "float32", name="g")
    return f"RMSNorm {rows}x{cols}", [x, g, topi.nn.rms_norm(x, g, axis=[1])]


def row_sum(rnd):
    rows, cols = rnd.randint(1, 30), rnd.randint(1, 400)
    x = te.placeholder((rows, cols), "float32", name="x")
    k = te.reduce_axis((0, cols), name="k")
    return f"row sum {rows}x{cols}", [x, te.compute((rows,), lambda i: te.sum(x[i, k], axis=k),
                                                    name="s")]


def column_mean(rnd):
    rows, cols = rnd.randint(1, 200), rnd.randint(1, 30)
    x = te.placeholder((rows, cols), "float32", name="x")
    k = te.reduce_axis((0, rows), name="k")
    total = te.compute((cols,), lambda j: te.sum(x[k, j], axis=k), name="total")
    return f"column mean {rows}x{cols}", [x, te.compute((cols,), lambda j: total[j] / rows,
                                                        name="mean")]


def bias_gelu(rnd):
    rows, cols = rnd.randint(1, 30), rnd.randint(1, 200)
    x = te.placeholder((rows, cols), "float32", name="x")
    b = te.placeholder((cols,), "float32", name="b")
    y = te.compute((rows, cols), lambda i, j: x[i, j] + b[j], name="y")
    return f"bias + GELU {rows}x{cols}", [x, b, topi.nn.gelu(y)]


def attention(rnd):
    b, h, q, kv, d = 1, rnd.randint(1, 3), rnd.randint(1, 12), rnd.randint(1, 20), rnd.randint(
        1, 20)
    causal = rnd.random() < 0.5 and q <= kv
    query = te.placeholder((b, h, q, d), "float32", name="q")
    key = te.placeholder((b, h, kv, d), "float32", name="k")
    value = te.placeholder((b, h, kv, d), "float32", name="v")
    out = topi.nn.scaled_dot_product_attention(query, key, value, is_causal=causal)
    return f"attention {h} heads {q}x{kv}x{d} causal {causal}", [query, key, value, out]


def argmax(rnd):
    rows, cols = rnd.randint(1, 20), rnd.randint(1, 300)
    x = te.placeholder((rows, cols), "float32", name="x")
    return f"argmax {rows}x{cols}", [x, topi.argmax(x, axis=1)]


def argmin_columns(rnd):
    rows, cols = rnd.randint(1, 60), rnd.randint(1, 60)
    x = te.placeholder((rows, cols), "float32", name="x")
    return f"argmin over rows {rows}x{cols}", [x, topi.argmin(x, axis=0, keepdims=True)]


def quantize_rows(rnd):
    rows, cols = rnd.randint(1, 20), rnd.randint(1, 100)
    x = te.placeholder((rows, cols), "float32", name="x")
    return f"quantize {rows}x{cols}", [x, topi.nn.quantize(x, 0.0123, 3, out_dtype="int8")]


def sum_outer_axes(rnd):
    a, b, c = rnd.randint(1, 12), rnd.randint(1, 20), rnd.randint(1, 40)
    x = te.placeholder((a, b, c), "float32", name="x")
    return f"sum over axes 0 and 2 of {a}x{b}x{c}", [x, topi.sum(x, axis=(0, 2))]


def transpose_scale(rnd):
    rows, cols = rnd.randint(1, 70), rnd.randint(1, 70)
    x = te.placeholder((rows, cols), "float32", name="x")
    t = topi.transpose(x)
    return f"transpose {rows}x{cols}", [x, te.compute(t.shape, lambda i, j: t[i, j] * 2.0,
                                                      name="y")]


def concat_slice(rnd):
    rows, c1, c2 = rnd.randint(1, 30), rnd.randint(1, 40), rnd.randint(1, 40)
    a = te.placeholder((rows, c1), "float32", name="a")
    b = te.placeholder((rows, c2), "float32", name="b")
    odd = topi.strided_slice(topi.concatenate([a, b], axis=1), [0, 1], [rows, c1 + c2], [1, 2])
    return f"concatenate + strided slice {rows}x({c1}+{c2})", [a, b, topi.multiply(odd, 2.0)]


def rope(rnd):
    seq, dim = rnd.randint(1, 20), 2 * rnd.randint(1, 16)
    x = te.placeholder((1, 2, seq, dim), "float32", name="x")
    return f"RoPE {seq}x{dim}", [x, topi.nn.rope(x, interleaved=rnd.random() < 0.5)]


MAKERS = [matmul, matmul_chain, matmul_a_transposed, dense_bias_relu, dense_swiglu,
          batch_matmul_nt, int8_matmul, int8_dense_vnni, dense_packed, conv2d, int8_conv2d,
          group_conv, depthwise, pool, pool_nhwc_ceil, adaptive_pool, softmax,
          log_softmax_columns, layer_norm, residual_layer_norm, rms_norm, row_sum, column_mean,
          bias_gelu, attention, argmax, argmin_columns, sum_outer_axes, transpose_scale,
          concat_slice, rope, quantize_rows]


def random_inputs(tensors, rng):
    """Random arrays for `tensors`; 8-bit integers over their whole range (a dot product's
    16-bit intermediate sums saturate only there)."""
    arrays = []
    for t in tensors:
        shape = [int(d) for d in t.shape]
        if t.dtype == "uint8":
            arrays.append(rng.integers(0, 256, shape).astype(np.uint8))
        elif t.dtype == "int8":
            arrays.append(rng.integers(-128, 128, shape).astype(np.int8))
        else:
            arrays.append(rng.uniform(-1, 1, shape).astype(t.dtype))
    return arrays


def assert_computes(actual, expected, what):
    if np.issubdtype(expected.dtype, np.integer):
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4, err_msg=what)


@pytest.mark.parametrize("index", range(WORKLOADS))
def test_random_candidates_of_random_workloads_compute_them(index):
    rnd = random.Random(SEED * 1000 + index)
    what, tensors = rnd.choice(MAKERS)(rnd)
    func = te.create_prim_func(tensors)
    rng = np.random.default_rng(index)
    inputs = random_inputs(tensors[:-1], rng)
    out = tensors[-1]
    out_shape = [int(d) for d in out.shape]

    def fresh_args():
        return [a.copy() for a in inputs] + [np.zeros(out_shape, out.dtype)]

    expected = fresh_args()
    tir.interpret(func, *expected)
    expected = expected[-1]

    space = SpaceGenerator(func, "llvm")
    checked = 0
    for sketch in range(len(space.sketches)):
        drawn = 0
        for _ in range(4 * CANDIDATES_PER_SKETCH):  # a postprocessor may refuse a draw
            if drawn == CANDIDATES_PER_SKETCH:
                break
            seed = rnd.randrange(1 << 30)
            candidate = space.sample(sketch, seed=seed)
            if candidate is None:
                continue
            drawn += 1
            label = f"{what}, sketch {sketch}, seed {seed}"
            if "sch.tensorize(" not in str(candidate.trace):  # the interpreter has no LLVM
                lowered = fresh_args()
                tir.interpret(tir.lower(candidate.mod)["main"], *lowered)
                assert_computes(lowered[-1], expected, label + " (lowered, interpreted)")
            built = fresh_args()
            kiln.build(candidate.mod, target="llvm")(*built)
            assert_computes(built[-1], expected, label + " (built)")
            checked += 1
    assert checked > 0, f"{what}: no candidate drawn ({space.rejections})"
