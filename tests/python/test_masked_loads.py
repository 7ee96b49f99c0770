"""Guarded loads in vectorized loops on the CPU: an if_then_else whose condition varies across
lanes and whose arm may load out of bounds (a padding row, a gather of a data-dependent index)
loads only on the lanes that pick the arm, as a masked load or gather, instead of running its
loop serially. Each case is compared with NumPy, on the lowered program in the interpreter
(which checks the bounds of every lane it loads) and compiled by LLVM for this machine and for
targets with other vector features (AVX2, SSE2: LLVM expands the masked loads these lack)."""
import platform
import warnings

import numpy as np
import pytest

import kiln
from kiln import te, tir
from lower_helpers import conv2d_padded

# The host, a baseline x86-64 (SSE2, no masked loads) and an AVX2 one (masked loads of 32 and
# 64 bits, no 8-bit ones): the last two only where this machine can run their code.
HOST = kiln.target.Target("llvm")
X86 = platform.machine() in ("x86_64", "AMD64")
TARGETS = (["llvm"] + (["llvm -mcpu=x86-64"] if X86 else []) +
           (["llvm -mcpu=haswell"] if X86 and HOST.has_feature("avx2") and HOST.has_fma else []))


def build_quietly(mod, target="llvm"):
    """kiln.build, failing on any warning (a loop left serial)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return kiln.build(mod, target=target)


def vectorize_inner(func, block, factor=8):
    """The innermost loop of `block` split by `factor`, its inner part vectorized."""
    sch = tir.Schedule(func)
    *_, last = sch.get_loops(sch.get_block(block))
    _, inner = sch.split(last, factors=[None, factor])
    sch.vectorize(inner)
    return sch


def run_lowered(sch, args):
    """The arguments after the lowered program ran on the interpreter."""
    out = [a.copy() for a in args]
    tir.interpret(tir.lower(sch)["main"], *out)
    return out


def shifted(n, shift, dtype, lo, hi, fill):
    """Y[i] = A[i + shift] where lo <= i + shift < hi, else fill: a guarded row of A."""
    A = te.placeholder((n,), dtype, name="A")
    Y = te.compute((n,), lambda i: te.if_then_else(te.all(i + shift >= lo, i + shift < hi),
                                                   A[i + shift], te.const(fill, dtype)),
                   name="Y")
    return te.create_prim_func([A, Y])


def expected_shifted(a, shift, lo, hi, fill):
    i = np.arange(a.size) + shift
    inside = (i >= lo) & (i < hi)
    return np.where(inside, a[np.clip(i, 0, a.size - 1)], np.array(fill, a.dtype))


@pytest.mark.parametrize("target", TARGETS)
def test_padded_convolution_row_is_one_masked_vector_load(target):
    func, shapes = conv2d_padded(n=1, ci=3, h=10, w=16, co=4)
    sch = tir.Schedule(func)
    sch.compute_inline(sch.get_block("pad"))
    *_, x, _, _, _ = sch.get_loops(sch.get_block("conv"))
    _, inner = sch.split(x, factors=[None, 8])
    sch.vectorize(inner)
    rt = build_quietly(sch.mod, target)
    assert rt.warnings == []
    if target == "llvm":
        assert "@llvm.masked.load.v8f32" in rt.get_source("ll")
    rng = np.random.default_rng(0)
    x_in, w_in, out = (rng.standard_normal(s, dtype=np.float32) for s in shapes)
    reference = [x_in, w_in, np.zeros_like(out)]
    tir.interpret(func, *reference)
    rt(x_in, w_in, out)
    np.testing.assert_allclose(out, reference[2], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(run_lowered(sch, [x_in, w_in, np.zeros_like(out)])[2],
                                  reference[2])


def data_dependent_gather(n=64):
    """Y[i] = X[Idx[i]] where Idx[i] >= 0, else 0."""
    X = te.placeholder((n,), "float32", name="X")
    Idx = te.placeholder((n,), "int32", name="Idx")
    Y = te.compute((n,), lambda i: te.if_then_else(Idx[i] >= 0, X[Idx[i]],
                                                   te.const(0.0, "float32")), name="Y")
    return te.create_prim_func([X, Idx, Y])


@pytest.mark.parametrize("target", TARGETS)
def test_data_dependent_gather_is_a_masked_gather(target):
    sch = vectorize_inner(data_dependent_gather(), "Y")
    rt = build_quietly(sch.mod, target)
    if target == "llvm":
        assert "@llvm.masked.gather.v8f32" in rt.get_source("ll")
    x = np.arange(64, dtype="float32")
    # -1 and huge indices are never loaded: their lanes take the other arm.
    idx = np.where(np.arange(64) % 3 == 0, -1, (np.arange(64) * 7) % 64).astype("int32")
    idx[5] = -(2**31)
    y = np.full(64, np.nan, "float32")
    rt(x, idx, y)
    expected = np.where(idx >= 0, x[np.maximum(idx, 0)], 0)
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(run_lowered(sch, [x, idx, np.zeros(64, "float32")])[2], expected)


@pytest.mark.parametrize("dtype,fill", [("float32", 0.5), ("float64", -2.0), ("int8", 7),
                                        ("int32", -1), ("float16", 1.5), ("bool", True)])
@pytest.mark.parametrize("target", TARGETS)
def test_each_dtype_takes_the_other_arm_on_masked_lanes(dtype, fill, target):
    func = shifted(40, -3, dtype, 0, 40, fill)
    sch = vectorize_inner(func, "Y")
    rt = build_quietly(sch.mod, target)
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(40) * 50).astype(dtype)
    y = np.zeros(40, dtype)
    rt(a, y)
    np.testing.assert_array_equal(y, expected_shifted(a, -3, 0, 40, fill))


def both_arms(n):
    """Y[i] = A[i - 1] where i is odd, else A[i + 2]: each arm loads out of bounds somewhere
    (A[-1] never: lane 0 is even; A[n], A[n + 1] at the last even lanes)."""
    A = te.placeholder((n,), "float32", name="A")
    Y = te.compute((n,), lambda i: te.if_then_else(te.all(i % 2 == 1, i >= 1), A[i - 1],
                                                   te.if_then_else(i + 2 < n, A[i + 2], 0.0)),
                   name="Y")
    return te.create_prim_func([A, Y])


def test_loads_in_both_arms_and_nested_guards():
    n = 32
    sch = vectorize_inner(both_arms(n), "Y")
    rt = build_quietly(sch.mod)
    a = np.random.default_rng(2).standard_normal(n).astype("float32")
    i = np.arange(n)
    expected = np.where(i % 2 == 1, a[np.maximum(i - 1, 0)],
                        np.where(i + 2 < n, a[np.minimum(i + 2, n - 1)], 0))
    y = np.zeros(n, "float32")
    rt(a, y)
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(run_lowered(sch, [a, np.zeros(n, "float32")])[1], expected)


def test_fuzzed_guards_agree_with_numpy():
    """Random rows, shifts, bounds, vector widths and dtypes: the vectorized guarded loads,
    compiled and interpreted, give NumPy's result."""
    rng = np.random.default_rng(3)
    for case in range(24):
        n = int(rng.integers(4, 80))
        shift = int(rng.integers(-9, 10))
        lo = int(rng.integers(-3, n // 2 + 1))
        hi = int(rng.integers(lo, n + 4))
        lanes = int(rng.choice([2, 4, 8, 16]))
        dtype = str(rng.choice(["float32", "int32", "float64"]))
        func = shifted(n, shift, dtype, max(lo, 0), min(hi, n), 3)
        sch = vectorize_inner(func, "Y", lanes)
        a = (rng.standard_normal(n) * 100).astype(dtype)
        expected = expected_shifted(a, shift, max(lo, 0), min(hi, n), 3)
        y = np.zeros(n, dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a tail of n % lanes may stay serial
            kiln.build(sch.mod)(a, y)
        context = f"case {case}: n={n} shift={shift} lo={lo} hi={hi} lanes={lanes} {dtype}"
        np.testing.assert_array_equal(y, expected, err_msg=context)
        np.testing.assert_array_equal(run_lowered(sch, [a, np.zeros(n, dtype)])[1], expected,
                                      err_msg=context)


def plus_one(shape, dtype):
    A = te.placeholder(shape, dtype, name="A")
    B = te.compute(shape, lambda *i: A[i] + te.const(1, dtype), name="B")
    return te.create_prim_func([A, B])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "float16"])
def test_split_tail_stores_only_its_lanes(target, dtype):
    # n = 8 q + r: the tail's lanes past n are neither loaded nor stored (a masked store); the
    # output is a view into a larger array whose elements past it must stay untouched.
    for n in (5, 13, 100):
        rt = build_quietly(vectorize_inner(plus_one((n,), dtype), "B").mod, target)
        a = (np.arange(n) % 50).astype(dtype)
        backing = np.full(n + 16, 77, dtype)
        rt(a, backing[:n])
        np.testing.assert_array_equal(backing[:n], a + np.array(1, dtype), err_msg=f"n={n}")
        np.testing.assert_array_equal(backing[n:], np.full(16, 77, dtype), err_msg=f"n={n}")


@pytest.mark.parametrize("target", TARGETS)
def test_split_tail_along_rows_is_a_masked_scatter(target):
    # The vectorized loop runs over the rows of a 13 x 3 array (lanes 3 elements apart): the
    # tail of 5 rows stores with a masked scatter.
    sch = tir.Schedule(plus_one((13, 3), "float32"))
    i, j = sch.get_loops(sch.get_block("B"))
    sch.reorder(j, i)
    _, inner = sch.split(i, factors=[None, 8])
    sch.vectorize(inner)
    rt = build_quietly(sch.mod, target)
    if target == "llvm":
        assert "@llvm.masked.scatter.v8f32" in rt.get_source("ll")
    a = np.random.default_rng(5).standard_normal((13, 3)).astype("float32")
    backing = np.full(13 * 3 + 8, 7.0, "float32")
    b = backing[:39].reshape(13, 3)
    rt(a, b)
    np.testing.assert_array_equal(b, a + np.float32(1))
    np.testing.assert_array_equal(backing[39:], np.full(8, 7.0, "float32"))
    np.testing.assert_array_equal(run_lowered(sch, [a, np.zeros((13, 3), "float32")])[1],
                                  a + np.float32(1))


@pytest.mark.parametrize("target", TARGETS)
def test_split_tail_of_a_reduction_that_keeps_its_init_masks_the_init_and_the_update(target):
    # A matmul's columns split by 8 (37 = 4 x 8 + 5) and vectorized inside the reduction loop,
    # its init not decomposed: the tail's init (under the scalar test of k == 0) and update are
    # each a masked store, and nothing past the output is written.
    a_t = te.placeholder((16, 32), "float32", name="A")
    b_t = te.placeholder((32, 37), "float32", name="B")
    k = te.reduce_axis((0, 32), name="k")
    c_t = te.compute((16, 37), lambda i, j: te.sum(a_t[i, k] * b_t[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_prim_func([a_t, b_t, c_t]))
    i, j, kk = sch.get_loops(sch.get_block("C"))
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i, j0, kk, j1)
    sch.vectorize(j1)
    rt = build_quietly(sch.mod, target)
    rng = np.random.default_rng(6)
    a = rng.standard_normal((16, 32)).astype("float32")
    b = rng.standard_normal((32, 37)).astype("float32")
    backing = np.full(16 * 37 + 8, 7.0, "float32")
    c = backing[:16 * 37].reshape(16, 37)
    rt(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(backing[16 * 37:], np.full(8, 7.0, "float32"))
