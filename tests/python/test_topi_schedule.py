"""topi.default_schedule: for each operator family the scheduled function, built for "llvm",
matches NumPy and the unscheduled build, with no VectorizeFallbackWarning at common shapes; the
schedule is not the identity where it should not be (parallel loops, vector loops, a register
tile, row statistics fused with their consumer, element-wise stages inlined); symbolic shapes
and bad arguments."""
import re
import warnings

import numpy as np
import pytest

import kiln
from kiln import te, tir, topi
from kiln.error import VectorizeFallbackWarning

from topi_helpers import rand

RNG = np.random.default_rng(0)


def build_both(args):
    """(default-scheduled module, unscheduled module, schedule), the first built with
    VectorizeFallbackWarning as an error."""
    func = te.create_prim_func(args)
    sch = topi.default_schedule(func, target="llvm")
    with warnings.catch_warnings():
        warnings.simplefilter("error", VectorizeFallbackWarning)
        scheduled = kiln.build(sch.mod, target="llvm")
    return scheduled, kiln.build(func, target="llvm"), sch


def run(rt, inputs, out_shape, out_dtype, scalars=()):
    out = np.zeros(out_shape, dtype=out_dtype)
    rt(*inputs, out, *scalars)
    return out


def check_family(args, inputs, expected, rtol=1e-5, atol=1e-5, scalars=()):
    scheduled, plain, sch = build_both(args)
    expected = np.asarray(expected)
    got = run(scheduled, inputs, expected.shape, args[-1 - len(scalars)].dtype, scalars)
    reference = run(plain, inputs, expected.shape, args[-1 - len(scalars)].dtype, scalars)
    if np.issubdtype(got.dtype, np.integer) or got.dtype == np.bool_:
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(got, reference)
    else:
        np.testing.assert_allclose(got.astype("float64"), expected, rtol=rtol, atol=atol)
        np.testing.assert_allclose(got, reference, rtol=rtol, atol=atol)
    return sch.mod["main"].script()


def blocks(script):
    """The names of the blocks of a scheduled function's text, the root excluded."""
    names = [part.split('"')[0] for part in script.split('T.block("')[1:]]
    return [name for name in names if name != "root"]


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# --- One test per family ---------------------------------------------------------------------

def test_elementwise_and_broadcast_inline_into_one_parallel_vector_loop():
    x = te.placeholder((256, 512), "float32", name="x")
    b = te.placeholder((512,), "float32", name="b")
    y = topi.nn.gelu(topi.multiply(topi.add(x, b), 2.0))
    xv, bv = rand(RNG, 256, 512), rand(RNG, 512)
    v = (xv + bv) * 2.0
    from math import erf
    expected = 0.5 * v * (1.0 + np.vectorize(erf)(v / np.sqrt(2.0)))
    script = check_family([x, b, y], [xv, bv], expected, rtol=1e-4)
    assert blocks(script) == ["T_gelu"]  # add and multiply inlined into the gelu
    assert "T.parallel" in script and "T.vectorized" in script


def test_reductions():
    x = te.placeholder((128, 256), "float32", name="x")
    xv = rand(RNG, 128, 256)
    script = check_family([x, topi.sum(x, axis=1)], [xv], xv.sum(axis=1), rtol=1e-4)
    assert "T.parallel" in script
    check_family([x, topi.max(x, axis=0)], [xv], xv.max(axis=0))
    script = check_family([x, topi.argmax(x, axis=1)], [xv], xv.argmax(axis=1).astype("int32"))
    # Vectors of partial (index, value) pairs; values from [-3, 3) tie across their lanes.
    assert "T_argmax_v0_rf" in script and "T.vectorized" in script
    ties = RNG.integers(-3, 3, size=(128, 256)).astype("float32")
    check_family([x, topi.argmax(x, axis=1)], [ties], ties.argmax(axis=1).astype("int32"))


def test_transforms():
    x = te.placeholder((64, 128), "float32", name="x")
    idx = te.placeholder((16,), "int32", name="idx")
    xv = rand(RNG, 64, 128)
    iv = RNG.integers(0, 64, 16).astype("int32")
    check_family([x, topi.transpose(x)], [xv], xv.T)
    check_family([x, idx, topi.take(x, idx, axis=0)], [xv, iv], xv[iv])
    check_family([x, topi.pad(x, (1, 2), (3, 4))], [xv], np.pad(xv, ((1, 3), (2, 4))))


def test_softmax_computes_its_row_statistics_under_the_parallel_row_loop():
    x = te.placeholder((256, 1024), "float32", name="x")
    xv = rand(RNG, 256, 1024, scale=4.0)
    script = check_family([x, topi.nn.softmax(x)], [xv], np_softmax(xv), rtol=1e-5)
    assert "T.parallel" in script and "T.vectorized" in script
    # The max and the sum accumulate vectors of partial results (rfactor), each row's lanes
    # reduced under the parallel row loop of the normalization.
    for stat in ("T_softmax_maxelem", "T_softmax_expsum"):
        partial = script.split(f'T.block("{stat}_rf")')[0].rsplit("for ", 1)[1]
        assert "T.vectorized" in partial, partial
    norm_loop = script.rindex("T.parallel", 0, script.index('T.block("T_softmax_norm")'))
    assert norm_loop < script.index('T.block("T_softmax_expsum")')
    # Every stage, the partial results and the exp included, computes its row under that one
    # loop: no intermediate row passes through memory whole.
    assert script.count("T.parallel") == 1
    assert norm_loop < script.index('T.block("T_softmax_maxelem_rf")')
    # The exponentials are computed once each, in their own stage, which the sum and the
    # division read.
    assert script.count("T.exp(") == 1
    assert script.index('T.block("T_softmax_exp")') < script.index('T.block("T_softmax_expsum_rf")')
    check_family([x, topi.nn.log_softmax(x)], [xv],
                 np.log(np_softmax(xv.astype("float64"))), rtol=1e-4, atol=1e-4)


def test_a_small_softmax_stays_on_one_thread():
    x = te.placeholder((4, 16), "float32", name="x")
    xv = rand(RNG, 4, 16)
    script = check_family([x, topi.nn.softmax(x)], [xv], np_softmax(xv))
    assert "T.parallel" not in script


def test_num_threads_sizes_the_parallel_loops():
    x = te.placeholder((16, 16, 4096), "float32", name="x")
    func = te.create_prim_func([x, topi.exp(x)])
    assert "T.parallel" not in topi.default_schedule(func, num_threads=1).mod["main"].script()
    assert "T.parallel(256)" in topi.default_schedule(func, num_threads=16).mod["main"].script()
    here = topi.default_schedule(func, num_threads=kiln.runtime.get_num_threads())
    assert kiln.ir.structural_equal(here.mod["main"], topi.default_schedule(func).mod["main"])


def test_norms():
    x = te.placeholder((64, 512), "float32", name="x")
    g = te.placeholder((512,), "float32", name="g")
    b = te.placeholder((512,), "float32", name="b")
    xv, gv, bv = rand(RNG, 64, 512), rand(RNG, 512), rand(RNG, 512)
    rms = xv / np.sqrt((xv * xv).mean(axis=1, keepdims=True) + 1e-5) * gv
    script = check_family([x, g, topi.nn.rms_norm(x, g, axis=-1)], [xv, gv], rms, rtol=1e-4)
    # The sum of squares accumulates vectors of partial results (rfactor), each row's under
    # the norm's parallel row loop.
    assert 'T.block("T_rms_norm_mean_square_sum_rf")' in script and "T.vectorized" in script
    assert script.count("T.parallel") == 1
    mean = xv.mean(axis=1, keepdims=True)
    ln = (xv - mean) / np.sqrt(xv.var(axis=1, keepdims=True) + 1e-5) * gv + bv
    check_family([x, g, b, topi.nn.layer_norm(x, g, b, axis=-1)], [xv, gv, bv], ln,
                 rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m", [2, 37, 128])  # one row is a matrix-vector product (below)
def test_dense_has_a_register_tile(m):
    x = te.placeholder((m, 256), "float32", name="x")
    w = te.placeholder((128, 256), "float32", name="w")
    xv, wv = rand(RNG, m, 256), rand(RNG, 128, 256)
    script = check_family([x, w, topi.nn.dense(x, w)], [xv, wv], xv @ wv.T, rtol=1e-4,
                          atol=1e-4)
    assert 'scope="local"' in script and "T.vectorized" in script
    assert "T_dense_init" in script  # the init is decomposed out of the reduction


@pytest.mark.parametrize("one_token", [False, True])
def test_a_matrix_vector_product_sums_vectors_along_the_matrix_rows(one_token):
    # y = A v, or a dense layer of one token (its weight [out, in]): the matrix is read once,
    # along its rows, in vector partial sums (rfactor), not gathered across rows by a tile.
    a = te.placeholder((96, 256), "float32", name="a")
    av = rand(RNG, 96, 256)
    if one_token:
        x = te.placeholder((1, 256), "float32", name="x")
        y = topi.nn.dense(x, a)
        xv = rand(RNG, 1, 256)
        script = check_family([x, a, y], [xv, av], xv @ av.T, rtol=1e-4, atol=1e-4)
    else:
        v = te.placeholder((256,), "float32", name="v")
        k = te.reduce_axis((0, 256), name="k")
        y = te.compute((96,), lambda i: te.sum(a[i, k] * v[k], axis=k), name="y")
        vv = rand(RNG, 256)
        script = check_family([a, v, y], [av, vv], av @ vv, rtol=1e-4, atol=1e-4)
    assert "_rf" in script and "T.vectorized" in script, script


@pytest.mark.parametrize("m, n, k, transposed", [(37, 77, 64, False), (20, 1001, 32, True)])
def test_columns_that_no_vector_divides_get_a_register_tile_with_a_partial_last_tile(
        m, n, k, transposed):
    # 77 or 1001 columns: no vector divides them; the tile's columns are whole registers and
    # the last tile is partial (its columns past the end masked), not a product left scalar
    # (a 1001^3 matmul: 0.6 s before, 12 ms after on a 2-core Zen 3).
    a = te.placeholder((m, k), "float32", name="a")
    b = te.placeholder((n, k) if transposed else (k, n), "float32", name="b")
    av, bv = rand(RNG, m, k), rand(RNG, *((n, k) if transposed else (k, n)))
    y = topi.nn.matmul(a, b, transpose_b=transposed)
    script = check_family([a, b, y], [av, bv], av @ (bv.T if transposed else bv), rtol=1e-4,
                          atol=1e-4)
    assert 'scope="local"' in script and "T.vectorized" in script


def test_a_product_of_one_reduction_step_is_scheduled():
    # An outer product (k = 1): no reduction loop to tile; another step schedules it.
    a = te.placeholder((5, 1), "float32", name="a")
    b = te.placeholder((1, 16), "float32", name="b")
    av, bv = rand(RNG, 5, 1), rand(RNG, 1, 16)
    check_family([a, b, topi.nn.matmul(a, b)], [av, bv], av @ bv)


def test_one_token_of_a_dense_layer_with_odd_outputs_sums_vectors_along_the_weight_rows():
    # 97 outputs: no vector divides them, and one row has nothing to reuse a tile for.
    x = te.placeholder((1, 256), "float32", name="x")
    w = te.placeholder((97, 256), "float32", name="w")
    xv, wv = rand(RNG, 1, 256), rand(RNG, 97, 256)
    script = check_family([x, w, topi.nn.dense(x, w)], [xv, wv], xv @ wv.T, rtol=1e-4,
                          atol=1e-4)
    assert "_rf" in script and "T.vectorized" in script, script


def test_matmul_bias_and_activation_fold_into_the_tile_write_back():
    a = te.placeholder((96, 64), "float32", name="a")
    b = te.placeholder((64, 128), "float32", name="b")
    bias = te.placeholder((128,), "float32", name="bias")
    y = topi.nn.relu(topi.nn.matmul(a, b, bias=bias))
    av, bv, cv = rand(RNG, 96, 64), rand(RNG, 64, 128), rand(RNG, 128)
    script = check_family([a, b, bias, y], [av, bv, cv], np.maximum(av @ bv + cv, 0),
                          rtol=1e-4, atol=1e-4)
    assert 'T.block("T_relu")' not in script and 'T.block("T_matmul_bias")' not in script


def test_batch_matmul():
    x = te.placeholder((4, 32, 64), "float32", name="x")
    y = te.placeholder((4, 48, 64), "float32", name="y")
    xv, yv = rand(RNG, 4, 32, 64), rand(RNG, 4, 48, 64)
    script = check_family([x, y, topi.nn.batch_matmul(x, y)], [xv, yv],
                          xv @ yv.transpose(0, 2, 1), rtol=1e-4, atol=1e-4)
    assert 'scope="local"' in script


@pytest.mark.parametrize("target", ["llvm", "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell",
                                    "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512"])
def test_a_large_product_on_two_threads_packs_its_column_operand(target):
    # On an AVX-512 host with a 2 MiB L2, the 64-column tile in passes of 4 panels left 4
    # column strips of 1024, too few for 2 threads without fusing past the packed copy, and B
    # went unpacked (half NumPy's speed): the passes take fewer panels where B does not fit
    # the L2 cache. (A named CPU has no known caches: its passes are 1 panel of 64 anyway.)
    a = te.placeholder((1024, 1024), "float32", name="a")
    b = te.placeholder((1024, 1024), "float32", name="b")
    func = te.create_prim_func([a, b, topi.nn.matmul(a, b)])
    sch = topi.default_schedule(func, target=target, num_threads=2)
    assert "b_global" in [sch.get(block).name_hint
                          for block in sch.get_child_blocks(sch.get_block("root"))]


@pytest.mark.parametrize("transposed", [False, True])
def test_the_column_operand_of_a_product_is_packed_into_panels_per_batch(transposed):
    # B (or y of batch_matmul, read [b, j, k]) is copied into panels of NR contiguous columns
    # ([b, j // NR, k, j % NR]) inside the parallel batch loop, each batch's panels packed
    # just before its row tiles read them; 45 rows leave a partial last tile. Four panels of
    # the target's NR (64 columns with AVX2's 16, 256 with AVX-512's 64).
    nr = kiln.target.gemm_blocking("llvm", "float32")[1]
    batch, m, n, k = 16, 45, 4 * nr, 32
    x = te.placeholder((batch, m, k), "float32", name="x")
    xv = rand(RNG, batch, m, k)
    if transposed:
        y = te.placeholder((batch, n, k), "float32", name="y")
        yv = rand(RNG, batch, n, k)
        out, expected = topi.nn.batch_matmul(x, y), xv @ yv.transpose(0, 2, 1)
    else:
        y = te.placeholder((batch, k, n), "float32", name="y")
        yv = rand(RNG, batch, k, n)
        r = te.reduce_axis((0, k), name="r")
        out = te.compute((batch, m, n),
                         lambda b, i, j: te.sum(x[b, i, r] * y[b, r, j], axis=r), name="bmm")
        expected = xv @ yv
    script = check_family([x, y, out], [xv, yv], expected, rtol=1e-4, atol=1e-4)
    assert "y_global" in blocks(script)
    copy = script.split('T.block("y_global")')[0]
    assert "T.parallel(" in copy and copy.count("T.parallel(") == 1
    # The product reads the panels: [batch, column // NR, reduction, column % NR].
    assert re.search(r"y_global\[v_b, v_j // (\d+), v_[rk], v_j % \1\]", script), script


def np_conv2d_nchw(x, w, pad):
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, f, h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1), "float64")
    for dy in range(kh):
        for dx in range(kw):
            window = xp[:, :, dy:dy + out.shape[2], dx:dx + out.shape[3]]
            out += np.einsum("nchw,fc->nfhw", window, w[:, :, dy, dx])
    return out


def test_conv2d_nchw_and_nhwc():
    x = te.placeholder((1, 16, 14, 16), "float32", name="x")
    w = te.placeholder((32, 16, 3, 3), "float32", name="w")
    xv, wv = rand(RNG, 1, 16, 14, 16), rand(RNG, 32, 16, 3, 3)
    expected = np_conv2d_nchw(xv, wv, 1)
    script = check_family([x, w, topi.nn.conv2d(x, w, 1, 1, 1)], [xv, wv], expected,
                          rtol=1e-4, atol=1e-4)
    assert "T.parallel" in script
    xn = te.placeholder((1, 14, 16, 16), "float32", name="xn")
    wn = te.placeholder((3, 3, 16, 32), "float32", name="wn")
    y = topi.nn.conv2d(xn, wn, 1, 1, 1, data_layout="NHWC", kernel_layout="HWIO")
    script = check_family([xn, wn, y], [np.ascontiguousarray(xv.transpose(0, 2, 3, 1)),
                                          np.ascontiguousarray(wv.transpose(2, 3, 1, 0))],
                          expected.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)
    assert 'scope="local"' in script and "T.vectorized" in script


def np_conv2d_general(x, w, stride, pad, dilation):
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, f, oh, ow), "float64")
    for dy in range(kh):
        for dx in range(kw):
            y0, x0 = dy * dilation, dx * dilation
            window = xp[:, :, y0:y0 + stride * (oh - 1) + 1:stride,
                        x0:x0 + stride * (ow - 1) + 1:stride]
            out += np.einsum("nchw,fc->nfhw", window, w[:, :, dy, dx])
    return out


@pytest.mark.parametrize("shape", [
    # n, c, h, w, f, k, stride, pad, dilation
    (1, 16, 16, 32, 32, 3, 1, 1, 1),   # columns in whole 8-lane vectors
    (2, 8, 14, 14, 12, 3, 1, 1, 1),    # 14 columns: vectors of 7; a batch of two
    (1, 8, 12, 16, 16, 5, 1, 2, 1),    # a 5x5 window
    (1, 8, 16, 16, 8, 3, 1, 2, 2),     # dilated
    (1, 4, 15, 16, 6, 3, 2, 1, 1),     # stride 2, 6 filters: a plain product
    (1, 16, 8, 8, 16, 1, 1, 0, 1),     # 1x1: a plain product
])
def test_conv2d_nchw_window_schedule(shape):
    n, c, h, wd, f, k, stride, pad, dilation = shape
    x = te.placeholder((n, c, h, wd), "float32", name="x")
    w = te.placeholder((f, c, k, k), "float32", name="w")
    xv, wv = rand(RNG, n, c, h, wd), rand(RNG, f, c, k, k)
    expected = np_conv2d_general(xv, wv, stride, pad, dilation)
    y = topi.nn.conv2d_nchw(x, w, stride, pad, dilation)
    script = check_family([x, w, y], [xv, wv], expected, rtol=1e-4, atol=1e-4)
    assert "T.vectorized" in script
    window = k > 1 and stride == 1
    assert ("pragma_auto_unroll_max_step" in script) == window, script
    if window:
        # The local tile per parallel task; the padding computed per channel block, under
        # the convolution's loops.
        assert "T.parallel" in script and 'scope="local"' in script
        sch = topi.default_schedule(te.create_prim_func([x, w, y]), target="llvm")
        pad_loops = [sch.get(loop).loop_var.name for loop in sch.get_loops(
            sch.get_block("pad_temp"))]
        assert any(name.startswith("rc") for name in pad_loops), pad_loops


@pytest.mark.parametrize("shape, dtype", [
    # n, c, h, w, f, k, stride, pad, dilation
    ((1, 8, 14, 14, 16, 3, 1, 1, 1), "float32"),   # 14 columns: not whole 8-lane vectors
    ((2, 4, 12, 10, 16, 3, 1, 1, 1), "float32"),   # a batch of two, 10 columns
    ((1, 4, 30, 30, 16, 3, 2, 1, 1), "float32"),   # stride 2
    ((1, 3, 32, 32, 16, 7, 2, 3, 1), "float32"),   # a 7x7 / 2 stem
    ((1, 4, 20, 13, 8, 3, 1, 2, 2), "float32"),    # dilated, one vector of filters
    ((1, 4, 14, 14, 24, 3, 1, 1, 1), "float32"),   # 24 filters: three vectors
    ((1, 4, 30, 30, 16, 3, 2, 1, 1), "int8"),
    ((1, 4, 14, 14, 16, 3, 1, 1, 1), "float16"),
])
def test_conv2d_nchw_filter_vector_schedule(shape, dtype):
    # Rows that are not whole vectors, or a strided window: the weight packed so that the
    # filters make the vectors, a local tile per task (filters of one output row).
    n, c, h, wd, f, k, stride, pad, dilation = shape
    out_dtype = "int32" if dtype == "int8" else "float32"
    x = te.placeholder((n, c, h, wd), dtype, name="x")
    w = te.placeholder((f, c, k, k), dtype, name="w")
    y = topi.nn.conv2d_nchw(x, w, stride, pad, dilation, out_dtype=out_dtype)
    if dtype == "int8":
        xv = RNG.integers(-8, 8, (n, c, h, wd)).astype("int8")
        wv = RNG.integers(-8, 8, (f, c, k, k)).astype("int8")
    else:
        xv, wv = rand(RNG, n, c, h, wd).astype(dtype), rand(RNG, f, c, k, k).astype(dtype)
    expected = np_conv2d_general(xv.astype("float64"), wv.astype("float64"), stride, pad,
                                 dilation)
    if dtype == "int8":
        expected = expected.astype("int64")
    tol = 1e-2 if dtype == "float16" else 1e-4
    script = check_family([x, w, y], [xv, wv], expected, rtol=tol, atol=tol)
    assert "T.vectorized" in script and "T.parallel" in script and 'scope="local"' in script
    sch = topi.default_schedule(te.create_prim_func([x, w, y]), target="llvm")
    assert "w_global" in [sch.get(b).name_hint for b in sch.get_child_blocks(
        sch.get_block("root"))]
    trace = str(sch.trace)
    assert "transform_layout" in trace and " % " in trace, trace


@pytest.mark.parametrize("seed", range(8))
def test_conv2d_default_schedule_fuzz(seed):
    # Random NCHW convolutions (strides, padding, dilation, odd widths, int8 and float16 inputs):
    # the window, filter-vector or product schedule, results as NumPy's.
    rnd = np.random.default_rng(100 + seed)
    while True:
        n, c, f = rnd.choice([1, 2]), rnd.choice([3, 4, 8]), rnd.choice([4, 8, 12])
        h, wd, k = rnd.choice([5, 7, 16]), rnd.choice([6, 12, 17]), rnd.choice([1, 2, 3, 5])
        stride, pad, dilation = rnd.choice([1, 1, 2]), rnd.choice([0, 1, 2]), rnd.choice([1, 2])
        if min(h, wd) + 2 * pad - dilation * (k - 1) - 1 >= 0:
            break
    dtype = ["float32", "int8", "float16"][seed % 3]
    out_dtype = "int32" if dtype == "int8" else "float32"
    x = te.placeholder((n, c, h, wd), dtype, name="x")
    w = te.placeholder((f, c, k, k), dtype, name="w")
    y = topi.nn.conv2d_nchw(x, w, int(stride), int(pad), int(dilation), out_dtype=out_dtype)
    if dtype == "int8":
        xv = rnd.integers(-8, 8, (n, c, h, wd)).astype("int8")
        wv = rnd.integers(-8, 8, (f, c, k, k)).astype("int8")
    else:
        xv = rnd.standard_normal((n, c, h, wd)).astype(dtype)
        wv = rnd.standard_normal((f, c, k, k)).astype(dtype)
    expected = np_conv2d_general(xv.astype("float64"), wv.astype("float64"), int(stride), int(pad),
                                 int(dilation))
    if dtype == "int8":
        expected = expected.astype("int64")
    tol = 1e-2 if dtype == "float16" else 1e-4
    check_family([x, w, y], [xv, wv], expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("h, wd, stride, marker, most_blocks", [
    (12, 16, 1, "pragma_auto_unroll_max_step", 4),  # window: pad, init, update, write-back
    (28, 28, 2, "w_global", 5),  # filter vectors: pack, pad, init, update, write-back
])
def test_conv2d_schedules_fold_bias_and_relu(h, wd, stride, marker, most_blocks):
    x = te.placeholder((1, 8, h, wd), "float32", name="x")
    w = te.placeholder((16, 8, 3, 3), "float32", name="w")
    b = te.placeholder((16, 1, 1), "float32", name="b")
    y = topi.nn.relu(topi.add(topi.nn.conv2d_nchw(x, w, stride, 1, 1), b))
    xv, wv, bv = rand(RNG, 1, 8, h, wd), rand(RNG, 16, 8, 3, 3), rand(RNG, 16, 1, 1)
    expected = np.maximum(np_conv2d_general(xv, wv, stride, 1, 1) + bv, 0.0)
    script = check_family([x, w, b, y], [xv, wv, bv], expected, rtol=1e-4, atol=1e-4)
    assert marker in script and 'scope="local"' in script
    assert len(blocks(script)) <= most_blocks, blocks(script)  # the epilogue folded


def test_conv2d_window_schedule_is_faster_than_the_product_tile_on_a_resnet_layer():
    # Not a timing: the structure that makes it faster. The filters of a task read the input
    # rows of one channel block: the channel loop is split, and the filter loop runs inside
    # the outer channel loop.
    x = te.placeholder((1, 64, 56, 56), "float32", name="x")
    w = te.placeholder((64, 64, 3, 3), "float32", name="w")
    func = te.create_prim_func([x, w, topi.nn.conv2d_nchw(x, w, 1, 1, 1)])
    sch = topi.default_schedule(func, target="llvm")
    trace = str(sch.trace)
    assert "cache_write" in trace and "decompose_reduction" in trace
    loops = sch.get_loops(sch.get_block("conv2d_nchw"))
    names = [sch.get(loop).loop_var.name for loop in loops]
    rc = [i for i, name in enumerate(names) if name.startswith("rc")]
    assert len(rc) == 2, names
    j = [i for i, name in enumerate(names) if name.startswith("j")]
    assert rc[0] < max(j) < rc[1], names


def test_pooling():
    x = te.placeholder((1, 8, 16, 16), "float32", name="x")
    xv = rand(RNG, 1, 8, 16, 16)
    expected = xv.reshape(1, 8, 8, 2, 8, 2).max(axis=(3, 5))
    check_family([x, topi.nn.pool2d(x, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), "max")], [xv],
                 expected)
    check_family([x, topi.nn.global_pool(x, "avg")], [xv], xv.mean(axis=(2, 3), keepdims=True),
                 rtol=1e-5)


def test_rope_and_quantize():
    x = te.placeholder((1, 4, 32, 64), "float32", name="x")
    xv = rand(RNG, 1, 4, 32, 64)
    half = 32
    freq = 10000.0 ** (-np.arange(half) * 2.0 / 64)
    angle = np.arange(32)[:, None] * freq[None, :]
    cos, sin = np.cos(np.concatenate([angle] * 2, -1)), np.sin(np.concatenate([angle] * 2, -1))
    rotated = np.concatenate([-xv[..., half:], xv[..., :half]], -1)
    check_family([x, topi.nn.rope(x)], [xv], xv * cos + rotated * sin, rtol=1e-4, atol=1e-4)
    q = topi.nn.quantize(x, 0.05, 0, out_dtype="int8")
    check_family([x, q], [xv], np.clip(np.round(xv / np.float32(0.05)), -128, 127)
                 .astype("int8"))


def np_attention(q, k, v, causal):
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if causal:
        lq, lk = s.shape[-2:]
        s = np.where(np.arange(lk)[None, :] <= np.arange(lq)[:, None] + lk - lq, s, -np.inf)
    return np_softmax(s) @ v


def test_grouped_query_attention_with_a_causal_mask():
    q = te.placeholder((1, 8, 32, 64), "float32", name="q")
    k = te.placeholder((1, 2, 32, 64), "float32", name="k")
    v = te.placeholder((1, 2, 32, 64), "float32", name="v")
    out = topi.nn.scaled_dot_product_attention(q, k, v, is_causal=True)
    qv, kv, vv = rand(RNG, 1, 8, 32, 64), rand(RNG, 1, 2, 32, 64), rand(RNG, 1, 2, 32, 64)
    script = check_family([q, k, v, out], [qv, kv, vv], np_attention(qv, kv, vv, True),
                          rtol=1e-4, atol=1e-5)
    assert 'scope="local"' in script and "T.parallel" in script


# --- Symbolic shapes ---------------------------------------------------------------------------

def test_symbolic_sequence_length():
    n = te.var("n")
    x = te.placeholder((n, 256), "float32", name="x")
    g = te.placeholder((256,), "float32", name="g")
    w = te.placeholder((64, 256), "float32", name="w")
    y = topi.nn.silu(topi.nn.dense(topi.nn.rms_norm(x, g, axis=-1), w))
    func = te.create_prim_func([x, g, w, y])
    sch = topi.default_schedule(func)
    with warnings.catch_warnings():
        warnings.simplefilter("error", VectorizeFallbackWarning)
        rt = kiln.build(sch.mod, target="llvm")
    gv, wv = rand(RNG, 256), rand(RNG, 64, 256)
    for rows in (1, 7, 40):
        xv = rand(RNG, rows, 256)
        out = np.zeros((rows, 64), "float32")
        rt(xv, gv, wv, out)
        h = (xv / np.sqrt((xv * xv).mean(axis=1, keepdims=True) + 1e-5) * gv) @ wv.T
        np.testing.assert_allclose(out, h / (1 + np.exp(-h)), rtol=1e-4, atol=1e-4)
    script = sch.mod["main"].script()
    assert "T.parallel" in script
    # The dense gets a register tile of unrolled rows over the symbolic n (its last partial
    # tile guarded).
    assert 'scope="local"' in script and "T.unroll" in script


def test_symbolic_kv_cache_attention():
    s = te.var("s")
    q = te.placeholder((1, 4, 1, 32), "float32", name="q")
    k = te.placeholder((1, 2, s, 32), "float32", name="k")
    v = te.placeholder((1, 2, s, 32), "float32", name="v")
    out = topi.nn.scaled_dot_product_attention(q, k, v, is_causal=True)
    sch = topi.default_schedule([q, k, v, out])
    rt = kiln.build(sch.mod, target="llvm")
    qv, kv, vv = rand(RNG, 1, 4, 1, 32), rand(RNG, 1, 2, 9, 32), rand(RNG, 1, 2, 9, 32)
    got = np.zeros((1, 4, 1, 32), "float32")
    rt(qv, kv, vv, got)
    np.testing.assert_allclose(got, np_attention(qv, kv, vv, True), rtol=1e-4, atol=1e-5)


# --- The API -----------------------------------------------------------------------------------

def test_takes_a_prim_func_or_the_tensor_list_and_replays_from_its_trace():
    x = te.placeholder((64, 64), "float32", name="x")
    y = topi.exp(x)
    func = te.create_prim_func([x, y])
    from_list = topi.default_schedule([x, y], target=kiln.target.Target("llvm"))
    from_func = topi.default_schedule(func)
    assert kiln.ir.structural_equal(from_list.mod, from_func.mod)
    replay = tir.Schedule(func)
    from_func.trace.apply_to_schedule(replay)
    assert kiln.ir.structural_equal(replay.mod, from_func.mod)


def test_bad_arguments_name_the_api():
    with pytest.raises(kiln.KilnTypeError, match="topi.default_schedule: func must be"):
        topi.default_schedule(3)
    x = te.placeholder((4,), "float32", name="x")
    with pytest.raises(kiln.KilnTypeError, match="topi.default_schedule: target must be"):
        topi.default_schedule([x, topi.exp(x)], target=1)
    with pytest.raises(kiln.KilnValueError):
        topi.default_schedule([x, topi.exp(x)], target="llvm -mcpu=nonexistent")


def test_outputs_of_a_function_larger_than_the_last_level_cache_stream():
    # 2 GiB of buffers outgrow any last-level cache (scheduled and lowered, never allocated).
    x = te.placeholder((16384, 16384), name="x")
    big = topi.nn.relu(x)
    target = kiln.target.Target("llvm")
    script = topi.default_schedule(te.create_prim_func([x, big]), target).mod["main"].script()
    expected = 0 if target.l3_cache_bytes is None else 1
    assert script.count("pragma_nontemporal") == expected
    # The same operator at a size that fits the caches is not annotated.
    small_x = te.placeholder((64, 64), name="x")
    small = te.create_prim_func([small_x, topi.nn.relu(small_x)])
    assert "pragma_nontemporal" not in topi.default_schedule(small, target).mod["main"].script()
