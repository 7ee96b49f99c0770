"""topi.default_schedule for GPU targets: for each operator family, the default schedule for
"opencl" runs on an OpenCL device (PoCL on the CPU) against NumPy, its lowered GPU program runs
on the reference interpreter with GPU semantics (thread blocks stepping between barriers), and
the schedule for "cuda -arch=sm_80" compiles with NVRTC; the schedules have their family's
structure (shared and register tiles, cross-thread reductions, thread counts and shared tiles
within the target's limits); symbolic and non-dividing shapes; the trace replays."""
import math
import re

import numpy as np
import pytest

import kiln
from kiln import te, tir, topi

from gpu_helpers import nvrtc_missing, opencl_missing, run_on_device, skip_unless
from topi_helpers import rand

CUDA = "cuda -arch=sm_80"
RNG = np.random.default_rng(0)


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_gelu(v):
    return 0.5 * v * (1.0 + np.vectorize(math.erf)(v / np.sqrt(2.0)))


def np_silu(v):
    return v / (1.0 + np.exp(-v))


def np_conv2d_nchw(x, w, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    f, _, kh, kw = w.shape
    out = np.zeros((x.shape[0], f, xp.shape[2] - kh + 1, xp.shape[3] - kw + 1))
    for dy in range(kh):
        for dx in range(kw):
            window = xp[:, :, dy:dy + out.shape[2], dx:dx + out.shape[3]]
            out += np.einsum("nchw,fc->nfhw", window, w[:, :, dy, dx])
    return out


def np_attention(q, k, v):
    """Causal grouped-query attention."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    lq, lk = s.shape[-2:]
    s = np.where(np.arange(lk)[None, :] <= np.arange(lq)[:, None] + lk - lq, s, -np.inf)
    return np_softmax(s) @ v


# --- One function per operator family: (te tensors, NumPy inputs, NumPy output, tolerance) ---

def elementwise_chain():
    x = te.placeholder((64, 96), "float32", name="x")
    b = te.placeholder((96,), "float32", name="b")
    xv, bv = rand(RNG, 64, 96), rand(RNG, 96)
    y = topi.nn.gelu(topi.multiply(topi.add(x, b), 2.0))
    return [x, b, y], [xv, bv], np_gelu((xv + bv) * 2.0), 1e-5


def broadcast():
    x = te.placeholder((6, 1, 16), "float32", name="x")
    y = te.placeholder((1, 10, 16), "float32", name="y")
    xv, yv = rand(RNG, 6, 1, 16), rand(RNG, 1, 10, 16)
    out = topi.where(topi.greater(x, y), topi.subtract(x, y), topi.maximum(x, y))
    return [x, y, out], [xv, yv], np.where(xv > yv, xv - yv, np.maximum(xv, yv)), 1e-6


def transpose_reshape():
    x = te.placeholder((12, 20), "float32", name="x")
    xv = rand(RNG, 12, 20)
    out = topi.reshape(topi.transpose(topi.exp(x)), (4, 60))
    return [x, out], [xv], np.exp(xv).T.reshape(4, 60), 1e-6


def concatenate():
    a = te.placeholder((8, 12), "float32", name="a")
    b = te.placeholder((8, 5), "float32", name="b")
    av, bv = rand(RNG, 8, 12), rand(RNG, 8, 5)
    return [a, b, topi.concatenate([a, b], axis=1)], [av, bv], np.concatenate([av, bv], 1), 0


def take():
    x = te.placeholder((20, 16), "float32", name="x")
    idx = te.placeholder((7,), "int32", name="idx")
    xv, iv = rand(RNG, 20, 16), RNG.integers(0, 20, 7).astype("int32")
    return [x, idx, topi.take(x, idx, axis=0)], [xv, iv], xv[iv], 0


def pad():
    x = te.placeholder((10, 14), "float32", name="x")
    xv = rand(RNG, 10, 14)
    return [x, topi.pad(x, (1, 2), (3, 4))], [xv], np.pad(xv, ((1, 3), (2, 4))), 0


def row_sum():
    x = te.placeholder((24, 100), "float32", name="x")
    xv = rand(RNG, 24, 100)
    return [x, topi.sum(x, axis=1)], [xv], xv.sum(axis=1), 1e-5


def column_max():
    x = te.placeholder((40, 24), "float32", name="x")
    xv = rand(RNG, 40, 24)
    return [x, topi.max(x, axis=0)], [xv], xv.max(axis=0), 0


def mean():
    """Rows of 4 x 5: several rows per thread block, the last block partly empty."""
    x = te.placeholder((13, 4, 5), "float32", name="x")
    xv = rand(RNG, 13, 4, 5)
    return [x, topi.mean(x, axis=(1, 2))], [xv], xv.mean(axis=(1, 2)), 1e-5


def sum_all_keepdims():
    x = te.placeholder((9, 30), "float32", name="x")
    xv = rand(RNG, 9, 30)
    return [x, topi.sum(x, keepdims=True)], [xv], xv.sum(keepdims=True), 1e-5


def argmax():
    x = te.placeholder((12, 50), "float32", name="x")
    xv = rand(RNG, 12, 50)
    return [x, topi.argmax(x, axis=1)], [xv], xv.argmax(axis=1).astype("int32"), 0


def softmax():
    x = te.placeholder((20, 96), "float32", name="x")
    xv = rand(RNG, 20, 96, scale=4.0)
    return [x, topi.nn.softmax(x)], [xv], np_softmax(xv), 1e-5


def log_softmax():
    x = te.placeholder((20, 96), "float32", name="x")
    xv = rand(RNG, 20, 96, scale=4.0)
    return [x, topi.nn.log_softmax(x)], [xv], np.log(np_softmax(xv.astype("float64"))), 1e-5


def layer_norm():
    x = te.placeholder((16, 80), "float32", name="x")
    g = te.placeholder((80,), "float32", name="g")
    b = te.placeholder((80,), "float32", name="b")
    xv, gv, bv = rand(RNG, 16, 80), rand(RNG, 80), rand(RNG, 80)
    mean_ = xv.mean(axis=1, keepdims=True)
    expected = (xv - mean_) / np.sqrt(xv.var(axis=1, keepdims=True) + 1e-5) * gv + bv
    return [x, g, b, topi.nn.layer_norm(x, g, b, axis=-1)], [xv, gv, bv], expected, 1e-4


def rms_norm():
    x = te.placeholder((16, 80), "float32", name="x")
    g = te.placeholder((80,), "float32", name="g")
    xv, gv = rand(RNG, 16, 80), rand(RNG, 80)
    expected = xv / np.sqrt((xv * xv).mean(axis=1, keepdims=True) + 1e-5) * gv
    return [x, g, topi.nn.rms_norm(x, g, axis=-1)], [xv, gv], expected, 1e-4


def silu_swiglu():
    x = te.placeholder((8, 64), "float32", name="x")
    xv = rand(RNG, 8, 64, scale=3.0)
    out = topi.add(topi.nn.swiglu(x), topi.nn.silu(topi.strided_slice(x, [0, 0], [8, 32])))
    gate, up = xv[:, :32], xv[:, 32:]
    return [x, out], [xv], np_silu(gate) * up + np_silu(gate), 1e-5


def rope():
    x = te.placeholder((1, 2, 16, 32), "float32", name="x")
    xv = rand(RNG, 1, 2, 16, 32)
    freq = 10000.0 ** (-np.arange(16) * 2.0 / 32)
    angle = np.arange(16)[:, None] * freq[None, :]
    cos, sin = np.cos(np.concatenate([angle] * 2, -1)), np.sin(np.concatenate([angle] * 2, -1))
    rotated = np.concatenate([-xv[..., 16:], xv[..., :16]], -1)
    return [x, topi.nn.rope(x)], [xv], xv * cos + rotated * sin, 1e-4


def dense():
    x = te.placeholder((64, 128), "float32", name="x")
    w = te.placeholder((96, 128), "float32", name="w")
    xv, wv = rand(RNG, 64, 128), rand(RNG, 96, 128)
    return [x, w, topi.nn.dense(x, w)], [xv, wv], xv @ wv.T, 1e-4


def dense_one_row_bias_relu():
    """A matrix-vector product (a decoding step): each output reduced across threads."""
    x = te.placeholder((1, 256), "float32", name="x")
    w = te.placeholder((48, 256), "float32", name="w")
    b = te.placeholder((48,), "float32", name="b")
    xv, wv, bv = rand(RNG, 1, 256), rand(RNG, 48, 256), rand(RNG, 48)
    y = topi.nn.relu(topi.nn.dense(x, w, bias=b))
    return [x, w, b, y], [xv, wv, bv], np.maximum(xv @ wv.T + bv, 0), 1e-5


def matmul_bias_relu():
    a = te.placeholder((48, 40), "float32", name="a")
    b = te.placeholder((40, 64), "float32", name="b")
    bias = te.placeholder((64,), "float32", name="bias")
    av, bv, cv = rand(RNG, 48, 40), rand(RNG, 40, 64), rand(RNG, 64)
    y = topi.nn.relu(topi.nn.matmul(a, b, bias=bias))
    return [a, b, bias, y], [av, bv, cv], np.maximum(av @ bv + cv, 0), 1e-4


def batch_matmul():
    x = te.placeholder((3, 32, 48), "float32", name="x")
    y = te.placeholder((3, 40, 48), "float32", name="y")
    xv, yv = rand(RNG, 3, 32, 48), rand(RNG, 3, 40, 48)
    return [x, y, topi.nn.batch_matmul(x, y)], [xv, yv], xv @ yv.transpose(0, 2, 1), 1e-4


def conv2d_nchw():
    x = te.placeholder((1, 8, 10, 12), "float32", name="x")
    w = te.placeholder((16, 8, 3, 3), "float32", name="w")
    xv, wv = rand(RNG, 1, 8, 10, 12), rand(RNG, 16, 8, 3, 3)
    return [x, w, topi.nn.conv2d(x, w, 1, 1, 1)], [xv, wv], np_conv2d_nchw(xv, wv, 1), 1e-4


def conv2d_nhwc():
    x = te.placeholder((1, 10, 12, 8), "float32", name="x")
    w = te.placeholder((3, 3, 8, 16), "float32", name="w")
    xv, wv = rand(RNG, 1, 10, 12, 8), rand(RNG, 3, 3, 8, 16)
    y = topi.nn.conv2d(x, w, 1, 1, 1, data_layout="NHWC", kernel_layout="HWIO")
    expected = np_conv2d_nchw(xv.transpose(0, 3, 1, 2), wv.transpose(3, 2, 0, 1), 1)
    return [x, w, y], [xv, wv], expected.transpose(0, 2, 3, 1), 1e-4


def pooling():
    x = te.placeholder((1, 4, 12, 12), "float32", name="x")
    xv = rand(RNG, 1, 4, 12, 12)
    pooled = topi.nn.pool2d(x, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), "max")
    out = topi.add(pooled, topi.nn.global_pool(x, "avg"))
    expected = xv.reshape(1, 4, 6, 2, 6, 2).max(axis=(3, 5)) + xv.mean(axis=(2, 3),
                                                                       keepdims=True)
    return [x, out], [xv], expected, 1e-5


def attention():
    q = te.placeholder((1, 4, 16, 32), "float32", name="q")
    k = te.placeholder((1, 2, 16, 32), "float32", name="k")
    v = te.placeholder((1, 2, 16, 32), "float32", name="v")
    qv, kv, vv = rand(RNG, 1, 4, 16, 32), rand(RNG, 1, 2, 16, 32), rand(RNG, 1, 2, 16, 32)
    out = topi.nn.scaled_dot_product_attention(q, k, v, is_causal=True)
    return [q, k, v, out], [qv, kv, vv], np_attention(qv, kv, vv), 1e-5


def quantize_dequantize():
    x = te.placeholder((8, 40), "float32", name="x")
    xv = rand(RNG, 8, 40)
    q = topi.nn.quantize(x, 0.05, 3, out_dtype="int8")
    out = topi.nn.dequantize(q, 0.05, 3)
    quantized = np.clip(np.round(xv / np.float32(0.05)) + 3, -128, 127)
    return [x, out], [xv], (quantized - 3) * np.float32(0.05), 1e-6


def matmul_prime_shapes():
    """No tile divides 37, 29 or 53: the last tiles and reduction step are guarded."""
    a = te.placeholder((37, 29), "float32", name="a")
    b = te.placeholder((29, 53), "float32", name="b")
    av, bv = rand(RNG, 37, 29), rand(RNG, 29, 53)
    return [a, b, topi.nn.matmul(a, b)], [av, bv], av @ bv, 1e-4


def softmax_odd_rows():
    """13 rows of 7: several rows per thread block, the last block partly empty."""
    x = te.placeholder((13, 7), "float32", name="x")
    xv = rand(RNG, 13, 7)
    return [x, topi.nn.softmax(x)], [xv], np_softmax(xv), 1e-5


CASES = {f.__name__: f for f in (
    elementwise_chain, broadcast, transpose_reshape, concatenate, take, pad, row_sum,
    column_max, mean, sum_all_keepdims, argmax, softmax, log_softmax, layer_norm, rms_norm,
    silu_swiglu, rope, dense, dense_one_row_bias_relu, matmul_bias_relu, batch_matmul,
    conv2d_nchw, conv2d_nhwc, pooling, attention, quantize_dequantize, matmul_prime_shapes,
    softmax_odd_rows)}


def scheduled(tensors, target="opencl"):
    return topi.default_schedule(te.create_prim_func(tensors), target=target)


def arguments(tensors, inputs, expected):
    return [np.array(a) for a in inputs] + [np.zeros(expected.shape, tensors[-1].dtype)]


def assert_matches(got, expected, tolerance):
    if tolerance == 0:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


def thread_extents(script, axis):
    return [int(n) for n in re.findall(r'T.thread_binding\((\d+), thread="' + re.escape(axis),
                                       script)]


# --- Every family: OpenCL on PoCL, the interpreter, NVRTC ------------------------------------

@pytest.mark.parametrize("name", sorted(CASES))
def test_opencl_runs_like_numpy(name):
    skip_unless(opencl_missing())
    tensors, inputs, expected, tolerance = CASES[name]()
    rt = kiln.build(scheduled(tensors).mod, target="opencl")
    got = run_on_device(rt, arguments(tensors, inputs, expected), kiln.opencl(0))[-1]
    assert_matches(got, expected, tolerance)


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowered_gpu_program_matches_numpy_on_the_interpreter(name):
    tensors, inputs, expected, tolerance = CASES[name]()
    lowered = tir.lower(scheduled(tensors).mod, target="opencl")
    args = arguments(tensors, inputs, expected)
    tir.interpret(lowered, *args)
    assert_matches(args[-1], expected, tolerance)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_schedule_compiles_with_nvrtc(name):
    skip_unless(nvrtc_missing())
    tensors = CASES[name]()[0]
    rt = kiln.build(scheduled(tensors, CUDA).mod, target=CUDA)
    assert "__global__ void" in rt.get_source("cuda")
    assert ".target sm_80" in rt.get_source("ptx")


# --- The structure of each family's schedule ---------------------------------------------------

def test_elementwise_stages_inline_into_one_kernel():
    tensors = elementwise_chain()[0]
    script = scheduled(tensors).mod["main"].script()
    assert script.count("T.block(") == 2  # the root and the gelu
    assert thread_extents(script, "blockIdx.x") and thread_extents(script, "threadIdx.x")


def test_contiguous_elementwise_blocks_compute_four_outputs_per_thread_with_vectors():
    """Step 5 gives a thread four neighbouring outputs, read and written as float4, where every
    access is contiguous along the last axis or broadcast along it; a transpose stays scalar."""
    skip_unless(nvrtc_missing())
    x = te.placeholder((64, 256), "float32", name="x")
    col = te.placeholder((256,), "float32", name="col")
    row = te.placeholder((64, 1), "float32", name="row")
    out = topi.add(topi.multiply(topi.exp(x), col), row)
    source = kiln.build(scheduled([x, col, row, out], CUDA).mod, target=CUDA).get_source("cuda")
    assert "*(const float4*)(x + " in source and "*(const float4*)(col + " in source
    assert "*(float4*)(T_add + " in source and "row[" in source
    xv, colv, rowv = rand(RNG, 64, 256), rand(RNG, 256), rand(RNG, 64, 1)
    expected = np.exp(xv) * colv + rowv
    args = arguments([x, col, row, out], [xv, colv, rowv], expected)
    tir.interpret(tir.lower(scheduled([x, col, row, out]).mod, target="opencl"), *args)
    assert_matches(args[-1], expected, 1e-5)
    transposed = kiln.build(scheduled(transpose_reshape()[0], CUDA).mod, target=CUDA)
    assert "float4" not in transposed.get_source("cuda")
    odd = te.placeholder((64, 254), "float32", name="odd")  # 254: no whole float4 per row
    source = kiln.build(scheduled([odd, topi.exp(odd)], CUDA).mod,
                        target=CUDA).get_source("cuda")
    assert "float4" not in source


def test_products_stage_shared_tiles_and_accumulate_register_tiles():
    tensors = dense()[0]
    script = scheduled(tensors, CUDA).mod["main"].script()
    assert script.count('scope="shared"') == 2 and 'scope="local"' in script
    assert "T.unroll" in script and thread_extents(script, "threadIdx.y")
    skip_unless(nvrtc_missing())
    source = kiln.build(scheduled(tensors, CUDA).mod, target=CUDA).get_source("cuda")
    assert "__shared__ __align__(16) float x_shared" in source and "__syncthreads();" in source
    assert "float T_dense_local[" in source


def test_product_tiles_keep_rows_16_byte_aligned_for_vector_reads():
    # Rows of 64 and 16 elements padded by 4 (not to an odd stride): each thread reads its four
    # columns of the B tile as one ld.shared.v4.
    a = te.placeholder((256, 256), "float32", name="A")
    b = te.placeholder((256, 256), "float32", name="B")
    sch = scheduled([a, b, topi.nn.matmul(a, b)], CUDA)
    skip_unless(nvrtc_missing())
    rt = kiln.build(sch.mod, target=CUDA)
    source = rt.get_source("cuda")
    shared = re.findall(r"__shared__ __align__\(16\) float (\w+)\[(\d+)\];", source)
    assert sorted(name for name, _ in shared) == ["A_shared", "B_shared"]
    for _, size in shared:
        assert int(size) % 4 == 0
    loads = set(re.findall(r"ld\.shared\.[a-z0-9.]+", rt.get_source("ptx")))
    assert "ld.shared.v4.f32" in loads and "ld.shared.f32" not in loads


def test_product_tiles_whose_rows_neighbouring_threads_read_keep_an_odd_stride():
    # dense reads W[j, k]: the threads along j read down the rows of W's tile, which a stride of
    # 4 modulo 8 would put in two banks; x's tile (rows along i) is padded by 4.
    x = te.placeholder((256, 256), "float32", name="x")
    w = te.placeholder((256, 256), "float32", name="w")
    sch = scheduled([x, w, topi.nn.dense(x, w)], CUDA)
    skip_unless(nvrtc_missing())
    source = kiln.build(sch.mod, target=CUDA).get_source("cuda")
    sizes = dict(re.findall(r"__shared__ __align__\(16\) float (\w+)\[(\d+)\];", source))
    assert int(sizes["x_shared"]) % 4 == 0 and int(sizes["w_shared"]) % 2 == 1


def test_bias_and_activation_fold_into_the_tile_write_back():
    script = scheduled(matmul_bias_relu()[0]).mod["main"].script()
    assert 'T.block("T_relu")' not in script and 'T.block("T_matmul_bias")' not in script


def test_softmax_is_one_kernel_of_cross_thread_reductions():
    x = te.placeholder((64, 32), "float32", name="x")
    sch = scheduled([x, topi.nn.softmax(x)])
    script = sch.mod["main"].script()
    assert script.count('scope="shared"') == 2  # the row max and the row sum, one per row
    source = kiln.build(sch.mod, target="opencl").get_source("opencl")
    assert source.count("__kernel void") == 1
    skip_unless(nvrtc_missing())
    # 32 threads per row: a CUDA warp combines its partial results with shuffles.
    source = kiln.build(scheduled([x, topi.nn.softmax(x)], CUDA).mod,
                        target=CUDA).get_source("cuda")
    assert "__shfl_down_sync" in source


def test_a_matrix_vector_product_reduces_each_output_across_threads():
    sch = scheduled(dense_one_row_bias_relu()[0])
    script = sch.mod["main"].script()
    assert thread_extents(script, "blockIdx.x") == [48]  # one output per thread block
    assert thread_extents(script, "threadIdx.x") == [256]  # over the reduction of 256
    # The bias and the ReLU are computed by the same kernel.
    assert kiln.build(sch.mod, target="opencl").get_source("opencl").count("__kernel") == 1


def test_reduction_over_an_outer_axis_gives_each_thread_an_output():
    script = scheduled(column_max()[0]).mod["main"].script()
    assert 'scope="local"' in script  # the accumulator of each thread
    assert thread_extents(script, "threadIdx.x") and "range(40)" in script


def test_a_reduction_threads_cannot_combine_gets_one_thread_per_row():
    """The lowering refuses a cross-thread sum that starts from 1 (not the identity of +): the
    block falls back to one row per thread."""
    x = te.placeholder((8, 64), "float32", name="x")
    k = te.reduce_axis((0, 64), name="k")
    y = te.compute((8,), lambda i: te.sum(x[i, k], axis=k, init=1.0), name="y")
    sch = scheduled([x, y])
    script = sch.mod["main"].script()
    assert 'scope="local"' in script and "range(64)" in script
    xv = rand(RNG, 8, 64)
    got = np.zeros(8, "float32")
    tir.interpret(tir.lower(sch.mod, target="opencl"), xv, got)
    np.testing.assert_allclose(got, xv.sum(axis=1) + 1, rtol=1e-5)


def test_thread_counts_follow_the_target():
    tensors = dense()[0]
    for target, limit in (("opencl -max_threads_per_block=64", 64), (CUDA, 256)):
        script = scheduled(tensors, target).mod["main"].script()
        per_block = max(thread_extents(script, "threadIdx.x")) * max(
            thread_extents(script, "threadIdx.y"))
        assert per_block <= limit
        tir.lower(scheduled(tensors, target).mod, target=target)  # verify_gpu_code


def test_shared_tiles_shrink_to_the_targets_shared_memory():
    tensors = dense()[0]
    target = "opencl -max_shared_memory_per_block=4096"
    lowered = tir.lower(scheduled(tensors, target).mod, target=target)  # within the limit
    tensors, inputs, expected, tolerance = dense()
    args = arguments(tensors, inputs, expected)
    tir.interpret(lowered, *args)
    assert_matches(args[-1], expected, tolerance)


# --- Symbolic shapes, the trace ------------------------------------------------------------------

def test_symbolic_sequence_length():
    n = te.var("n")
    x = te.placeholder((n, 64), "float32", name="x")
    g = te.placeholder((64,), "float32", name="g")
    w = te.placeholder((40, 64), "float32", name="w")
    y = topi.nn.silu(topi.nn.dense(topi.nn.rms_norm(x, g, axis=-1), w))
    func = te.create_prim_func([x, g, w, y])
    sch = topi.default_schedule(func, target="opencl")
    lowered = tir.lower(sch.mod, target="opencl")
    rt = None if opencl_missing() else kiln.build(sch.mod, target="opencl")
    gv, wv = rand(RNG, 64), rand(RNG, 40, 64)
    for rows in (1, 37):
        xv = rand(RNG, rows, 64)
        h = (xv / np.sqrt((xv * xv).mean(axis=1, keepdims=True) + 1e-5) * gv) @ wv.T
        expected = np_silu(h)
        args = [xv, gv, wv, np.zeros((rows, 40), "float32")]
        tir.interpret(lowered, *args)
        np.testing.assert_allclose(args[-1], expected, rtol=1e-4, atol=1e-4)
        if rt is not None:
            got = run_on_device(rt, args, kiln.opencl(0))[-1]
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    if not nvrtc_missing():
        kiln.build(topi.default_schedule(func, target=CUDA).mod, target=CUDA)


def test_symbolic_kv_cache_attention_on_the_interpreter():
    s = te.var("s")
    q = te.placeholder((1, 4, 1, 16), "float32", name="q")
    k = te.placeholder((1, 2, s, 16), "float32", name="k")
    v = te.placeholder((1, 2, s, 16), "float32", name="v")
    out = topi.nn.scaled_dot_product_attention(q, k, v, is_causal=True)
    lowered = tir.lower(scheduled([q, k, v, out]).mod, target="opencl")
    qv, kv, vv = rand(RNG, 1, 4, 1, 16), rand(RNG, 1, 2, 9, 16), rand(RNG, 1, 2, 9, 16)
    got = np.zeros((1, 4, 1, 16), "float32")
    tir.interpret(lowered, qv, kv, vv, got)
    np.testing.assert_allclose(got, np_attention(qv, kv, vv), rtol=1e-5, atol=1e-5)


def test_the_trace_replays_the_schedule():
    tensors = layer_norm()[0]
    func = te.create_prim_func(tensors)
    sch = topi.default_schedule(func, target=kiln.target.Target("opencl"))
    replay = tir.Schedule(func)
    sch.trace.apply_to_schedule(replay)
    assert kiln.ir.structural_equal(replay.mod, sch.mod)
