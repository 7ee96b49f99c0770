"""GPU schedules for the workloads of the test corpus (schedule_helpers), vectorized ones
among them, and the three checks each one gets: the reference interpreter against the unscheduled function, NVRTC compiling the
CUDA C for sm_80 and sm_90, and OpenCL C run on an OpenCL device (PoCL on a CPU) against the
interpreter."""
import numpy as np
import pytest

import kiln
from kiln import te, tir, topi

from schedule_helpers import (batch_matmul, conv2d, depthwise_conv2d, elementwise_chain,
                              layer_norm, matmul, matmul_bf16, matmul_relu, matmul_u8s8s32,
                              random_args, softmax, symbolic_row_sum)


def nvrtc_missing():
    """Why NVRTC cannot be used here, or "" when it can."""
    available, why = kiln.target.nvrtc_available()
    return "" if available else why


def opencl_missing():
    """Why no OpenCL device can run kernels here, or "" when one can."""
    try:
        device = kiln.opencl(0)
        return "" if device.exist else "no OpenCL device found"
    except kiln.KilnRuntimeError as error:
        return str(error)


def bind_threads(sch, block, num_spatial, threads=32):
    """Fuses the first num_spatial loops of block, splits them by threads and binds the parts to
    blockIdx.x and threadIdx.x; returns (bx, tx)."""
    loops = sch.get_loops(block)
    fused = sch.fuse(*loops[:num_spatial]) if num_spatial > 1 else loops[0]
    bx, tx = sch.split(fused, factors=[None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return bx, tx


# ---------------------------------------------------------------------------------------------
# One GPU schedule per workload: name -> (unscheduled function, scheduled module).

def gpu_elementwise_chain():
    func = elementwise_chain()
    sch = tir.Schedule(func)
    sch.compute_inline(sch.get_block("B"))
    sch.compute_inline(sch.get_block("C"))
    bind_threads(sch, sch.get_block("D"), 2, threads=64)
    return func, sch.mod


def gpu_matmul():
    func = matmul(32, 24, 16)
    sch = tir.Schedule(func)
    bind_threads(sch, sch.get_block("C"), 2)
    return func, sch.mod


def gpu_matmul_relu():
    """The matmul accumulates in a thread's local register, the ReLU writes it out."""
    func = matmul_relu(16, 12, 8)
    sch = tir.Schedule(func)
    _, tx = bind_threads(sch, sch.get_block("D"), 2)
    sch.compute_at(sch.get_block("C"), tx)
    sch.set_scope(sch.get_block("C"), 0, "local")
    return func, sch.mod


def gpu_conv2d():
    func = conv2d(1, 3, 8, 8, 4)
    sch = tir.Schedule(func)
    sch.compute_inline(sch.get_block("pad"))
    bind_threads(sch, sch.get_block("conv"), 4, threads=64)
    return func, sch.mod


def gpu_softmax():
    """One thread per row; the row's max and sum live in the thread's local memory."""
    func = softmax(8, 10)
    sch = tir.Schedule(func)
    sch.compute_inline(sch.get_block("exp"))
    i, _ = sch.get_loops(sch.get_block("Y"))
    bx, tx = sch.split(i, factors=[None, 4])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    for name in ("row_sum", "row_max"):
        sch.compute_at(sch.get_block(name), tx)
        sch.set_scope(sch.get_block(name), 0, "local")
    return func, sch.mod


def gpu_softmax_cross_thread():
    """One block per row; the 32 threads of a block split each row's max and sum between them
    and combine their parts through shared memory (a cross-thread reduction). 70 columns do not
    divide by 32: the last parts are guarded."""
    func = softmax(6, 70)
    sch = tir.Schedule(func)
    sch.compute_inline(sch.get_block("exp"))
    i, j = sch.get_loops(sch.get_block("Y"))
    sch.bind(i, "blockIdx.x")
    _, ji = sch.split(j, factors=[None, 32])
    sch.bind(ji, "threadIdx.x")
    for name in ("row_sum", "row_max"):
        block = sch.get_block(name)
        sch.compute_at(block, i)
        sch.set_scope(block, 0, "shared")
        _, k = sch.get_loops(block)
        _, ki = sch.split(k, factors=[None, 32])
        sch.bind(ki, "threadIdx.x")
    return func, sch.mod


def gpu_row_sum_cross_thread():
    """Rows of 16 elements summed by 8 threads each (two elements per thread), two rows per
    block along threadIdx.y: one group of partial sums per row in shared memory."""
    func = symbolic_row_sum()
    sch = tir.Schedule(func)
    i, k = sch.get_loops(sch.get_block("B"))
    bi, ti = sch.split(i, factors=[None, 2])
    kt, _ = sch.split(k, factors=[8, None])
    sch.bind(bi, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(kt, "threadIdx.x")
    return func, sch.mod


def gpu_argmax_cross_thread():
    """One block per row; its 32 threads each keep the (index, value) of the largest element of
    their part, then combine the pairs (two values per thread: warp shuffles on CUDA, two
    shared buffers elsewhere). Integers in [-8, 8) tie many times over in 70 columns, which do
    not divide by 32."""
    x = te.placeholder((6, 70), "int32", name="x")
    func = te.create_prim_func([x, topi.argmax(x, axis=1)])
    sch = tir.Schedule(func)
    i, k = sch.get_loops(sch.get_block("T_argmax"))
    sch.bind(i, "blockIdx.x")
    _, ki = sch.split(k, factors=[None, 32])
    sch.bind(ki, "threadIdx.x")
    return func, sch.mod


def gpu_multi_kernel_chain():
    """Three kernels, one per stage: the buffers between them live in device memory that the
    host side allocates and frees."""
    func = elementwise_chain()
    sch = tir.Schedule(func)
    for name in ("B", "C", "D"):
        bind_threads(sch, sch.get_block(name), 2, threads=32)
    return func, sch.mod


def gpu_batch_matmul():
    func = batch_matmul(3, 16, 12, 8)
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    z, i, j, _ = sch.get_loops(block)
    sch.bind(z, "blockIdx.y")
    fused = sch.fuse(i, j)
    bx, tx = sch.split(fused, factors=[None, 64])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return func, sch.mod


def gpu_depthwise_conv2d():
    func = depthwise_conv2d(4, 6, 6, 3)
    sch = tir.Schedule(func)
    bind_threads(sch, sch.get_block("dwconv"), 3, threads=48)
    return func, sch.mod


def gpu_matmul_u8s8s32():
    """uint8 x int8 products summed in int32, one output per thread (no tensor intrinsic)."""
    func = matmul_u8s8s32(16, 32, 16, packed=False)
    sch = tir.Schedule(func)
    bind_threads(sch, sch.get_block("C"), 2, threads=64)
    return func, sch.mod


def gpu_matmul_bf16():
    """bfloat16 inputs, products summed in float32: 16-bit floats are stored as their bits and
    converted in the kernel."""
    func = matmul_bf16(16, 32, 16)
    sch = tir.Schedule(func)
    bind_threads(sch, sch.get_block("C"), 2, threads=64)
    return func, sch.mod


def elementwise_fp16(n=200):
    A = te.placeholder((n,), "float16", name="A")
    B = te.compute((n,), lambda i: te.exp(A[i]) * A[i] + 0.1, name="B")
    return te.create_prim_func([A, B])


def gpu_elementwise_fp16():
    """float16 in and out, each operation rounded to float16 as the IR defines (the kernel
    computes in float32)."""
    func = elementwise_fp16()
    sch = tir.Schedule(func)
    bind_threads(sch, sch.get_block("B"), 1, threads=64)
    return func, sch.mod


def gpu_layer_norm():
    func = layer_norm(8, 12)
    sch = tir.Schedule(func)
    i, _ = sch.get_loops(sch.get_block("Y"))
    bx, tx = sch.split(i, factors=[None, 4])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    for name in ("var", "mean"):
        sch.compute_at(sch.get_block(name), tx)
        sch.set_scope(sch.get_block(name), 0, "local")
    return func, sch.mod


def gpu_symbolic_row_sum():
    """A symbolic number of rows: the grid is ceil(n / 32) blocks and the last one is guarded."""
    func = symbolic_row_sum()
    sch = tir.Schedule(func)
    bind_threads(sch, sch.get_block("B"), 1)
    return func, sch.mod


def block_reverse(n=256, width=64):
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i // width * width + (width - 1) - i % width] + 1.0,
                   name="B")
    return te.create_prim_func([A, B])


def gpu_block_reverse():
    """Each block stages its slice of A in shared memory; thread t reads what thread 63 - t
    wrote, so a barrier must separate the two loops."""
    func = block_reverse()
    sch = tir.Schedule(func)
    block = sch.get_block("B")
    bx, _ = bind_threads(sch, block, 1, threads=64)
    shared = sch.cache_read(block, 0, "shared")
    sch.compute_at(shared, bx)
    (fetch,) = sch.get_loops(shared)[1:]
    sch.bind(fetch, "threadIdx.x")
    return func, sch.mod


def gpu_tiled_matmul(m=32, n=32, k=32, tile=8):
    """The classic GPU GEMM: a tile x tile block of C per thread block, one element per thread,
    A and B staged through shared memory tile by tile along k (cooperative fetch)."""
    func = matmul(m, n, k)
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    i, j, r = sch.get_loops(block)
    bi, ti = sch.split(i, factors=[None, tile])
    bj, tj = sch.split(j, factors=[None, tile])
    ko, ki = sch.split(r, factors=[None, tile])
    sch.reorder(bi, bj, ti, tj, ko, ki)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    for index in (0, 1):
        shared = sch.cache_read(block, index, "shared")
        sch.compute_at(shared, ko)
        loops = sch.get_loops(shared)[5:]
        fused = sch.fuse(*loops)
        ty, tx = sch.split(fused, factors=[None, tile])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
    return func, sch.mod


def gpu_vthread_tiled_matmul(m=32, n=32, k=16):
    """A GEMM with virtual threads: each thread block computes a 16 x 16 tile of C with 4 x 4
    threads and 2 x 2 virtual threads, each thread a 2 x 2 register tile per virtual thread
    (C_local, four copies after inject_virtual_threads, interleaved: a thread's rows are 8
    apart); the block's A and B tiles of one k step are copied into shared memory once for
    all virtual threads, by the block's threads together."""
    func = matmul(m, n, k)
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    i, j, r = sch.get_loops(block)
    bi, vi, ti, ii = sch.split(i, factors=[None, 2, 4, 2])
    bj, vj, tj, jj = sch.split(j, factors=[None, 2, 4, 2])
    ko, ki = sch.split(r, factors=[None, 4])
    sch.reorder(bi, bj, vi, vj, ti, tj, ko, ki, ii, jj)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(vi, "vthread.y")
    sch.bind(vj, "vthread.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, tj)
    for index in (0, 1):
        shared = sch.cache_read(block, index, "shared")
        sch.compute_at(shared, ko)
        fused = sch.fuse(*sch.get_loops(shared)[7:])
        _, ty, tx = sch.split(fused, factors=[None, 4, 4])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
    return func, sch.mod


def gpu_vector_tiled_matmul(m=32, n=32, k=16, func=None, scope="shared", copy_lanes=4):
    """A GEMM with vector memory accesses: each thread block computes a 16 x 16 tile of C with
    4 x 4 threads, each thread a 4 x 4 register tile (C_local) written back four elements at a
    time; the A and B tiles of one k step are copied into shared memory copy_lanes elements at
    a time by the block's threads (float4 loads of global and stores of shared memory; 1: one
    element per thread and copy step). `func` replaces the float32 matmul by another (m, k) x
    (k, n) product; `scope` is the tiles' memory ("shared.dyn": dynamic shared memory)."""
    func = func or matmul(m, n, k)
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    i, j, r = sch.get_loops(block)
    bi, ti, ii = sch.split(i, factors=[None, 4, 4])
    bj, tj, jj = sch.split(j, factors=[None, 4, 4])
    ko, ki = sch.split(r, factors=[None, 8])
    sch.reorder(bi, bj, ti, tj, ko, ki, ii, jj)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, tj)
    sch.vectorize(sch.get_loops(local)[-1])
    for index in (0, 1):
        shared = sch.cache_read(block, index, scope)
        sch.compute_at(shared, ko)
        fused = sch.fuse(*sch.get_loops(shared)[5:])
        _, ty, tx, vec = sch.split(fused, factors=[None, 4, 4, copy_lanes])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
        if copy_lanes > 1:
            sch.vectorize(vec)
    return func, sch.mod


def gpu_vector_elementwise_fp16():
    """float16 in and out, four elements per thread: 8-byte vector accesses of the 16-bit
    storage, each lane computed in float32 and rounded to float16."""
    func = elementwise_fp16(256)
    sch = tir.Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    bx, tx, vec = sch.split(i, factors=[None, 32, 4])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    sch.vectorize(vec)
    return func, sch.mod


def matmul_fp16(m=32, n=32, k=16):
    """C (float32) = A @ B of float16 A (m, k) and B (k, n), the products summed in float32."""
    A = te.placeholder((m, k), "float16", name="A")
    B = te.placeholder((k, n), "float16", name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(
        A[i, r].astype("float32") * B[r, j].astype("float32"), axis=r), name="C")
    return te.create_prim_func([A, B, C])


def gpu_matmul_fp16():
    """The vector GEMM schedule on float16 inputs accumulated in float32: the shared tiles hold
    float16 (copied as 8-byte vectors of four), each product is computed in float32."""
    return gpu_vector_tiled_matmul(func=matmul_fp16())


def matmul_mixed(m=32, n=32, k=16):
    """C (float32) = A @ B of float16 A (m, k) and float32 B (k, n)."""
    A = te.placeholder((m, k), "float16", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r].astype("float32") * B[r, j], axis=r),
                   name="C")
    return te.create_prim_func([A, B, C])


def gpu_dynamic_shared_matmul():
    """The vector GEMM schedule with its float16 A tile and float32 B tile in dynamic shared
    memory: one block of bytes per thread block, the tiles views of two dtypes into it."""
    return gpu_vector_tiled_matmul(func=matmul_mixed(), scope="shared.dyn")


def shifted_scale(n=128):
    A = te.placeholder((n + 1,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i + 1] * 2.0 - 1.0, name="B")
    return te.create_prim_func([A, B])


def gpu_vector_misaligned():
    """Two lanes per thread reading A one element past B: the stores of B are aligned, the
    loads of A are not (CUDA loads them lane by lane, OpenCL with vload2)."""
    func = shifted_scale()
    sch = tir.Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    bx, tx, vec = sch.split(i, factors=[None, 32, 2])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    sch.vectorize(vec)
    return func, sch.mod


GPU_WORKLOADS = {
    "elementwise_chain": gpu_elementwise_chain,
    "matmul": gpu_matmul,
    "matmul_relu": gpu_matmul_relu,
    "conv2d": gpu_conv2d,
    "softmax": gpu_softmax,
    "batch_matmul": gpu_batch_matmul,
    "depthwise_conv2d": gpu_depthwise_conv2d,
    "matmul_u8s8s32": gpu_matmul_u8s8s32,
    "matmul_bf16": gpu_matmul_bf16,
    "elementwise_fp16": gpu_elementwise_fp16,
    "multi_kernel_chain": gpu_multi_kernel_chain,
    "softmax_cross_thread": gpu_softmax_cross_thread,
    "row_sum_cross_thread": gpu_row_sum_cross_thread,
    "argmax_cross_thread": gpu_argmax_cross_thread,
    "layer_norm": gpu_layer_norm,
    "symbolic_row_sum": gpu_symbolic_row_sum,
    "block_reverse": gpu_block_reverse,
    "tiled_matmul": gpu_tiled_matmul,
    "vector_tiled_matmul": gpu_vector_tiled_matmul,
    "vthread_tiled_matmul": gpu_vthread_tiled_matmul,
    "vector_elementwise_fp16": gpu_vector_elementwise_fp16,
    "vector_misaligned": gpu_vector_misaligned,
    "matmul_fp16": gpu_matmul_fp16,
    "dynamic_shared_matmul": gpu_dynamic_shared_matmul,
}

SYMBOLIC_ROWS = {"n": 70}


def gpu_random_args(func, seed=0):
    """random_args, with bfloat16 buffers (which NumPy lacks) as ml_dtypes arrays."""
    if not any(func.buffer_map[p].dtype == "bfloat16" for p in func.params):
        return random_args(func, seed, sizes=SYMBOLIC_ROWS)
    import ml_dtypes
    rng = np.random.default_rng(seed)
    args = []
    for param in func.params:
        buffer = func.buffer_map[param]
        shape = [dim.value for dim in buffer.shape]
        dtype = ml_dtypes.bfloat16 if buffer.dtype == "bfloat16" else buffer.dtype
        args.append(rng.uniform(-1, 1, size=shape).astype(dtype))
    return args


def expected_results(func, seed=0):
    """Random inputs for func and every array after the unscheduled function ran on them."""
    args = gpu_random_args(func, seed)
    expected = [a.copy() for a in args]
    tir.interpret(func, *expected)
    return args, expected


def run_on_device(rt, args, device):
    """Runs rt["main"] on copies of args in device memory; returns the arrays afterwards."""
    arrays = [kiln.nd.array(a, device=device) for a in args]
    rt["main"](*arrays)
    return [a.numpy() for a in arrays]


def assert_close(actual, expected):
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


def skip_unless(reason):
    if reason:
        pytest.skip(reason)


def first_candidates(space, count, sketch=0, seeds=range(40)):
    """The first count candidates that sampling `sketch` of a kiln.autotune.SpaceGenerator
    gives with seeds in order (an assertion error naming the refusals when fewer come)."""
    out = []
    for seed in seeds:
        candidate = space.sample(sketch, seed=seed)
        if candidate is not None:
            out.append(candidate)
        if len(out) == count:
            break
    assert len(out) == count, space.rejections
    return out


def with_sampled_annotation(trace_json, key, value):
    """trace_json (Trace.as_json()) with every sample_categorical whose draw annotates `key`
    (kiln.pad_shared, kiln.prefetch_shared, ...) drawing `value` instead."""
    drawn = {inst["inputs"][1] for inst in trace_json["instructions"]
             if inst["kind"] == "annotate" and inst["attrs"].get("ann_key") == key}
    for inst in trace_json["instructions"]:
        if inst["kind"] == "sample_categorical" and inst["outputs"][0] in drawn:
            inst["decision"] = inst["attrs"]["candidates"].index(value)
    return trace_json


def padded_conv2d(ci=8, hw=14, co=16):
    """(func, expected): NCHW, a 3 x 3 window, stride 1, padding 1 (topi.nn.conv2d_nchw: a padding
    stage), and its NumPy reference of (data, weight)."""
    data = te.placeholder((1, ci, hw, hw), "float32", name="data")
    weight = te.placeholder((co, ci, 3, 3), "float32", name="weight")
    out = topi.nn.conv2d_nchw(data, weight, stride=1, padding=1, dilation=1)

    def expected(x, w):
        padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
        return np.einsum("nchwyx,kcyx->nkhw", windows, w)
    return te.create_prim_func([data, weight, out]), expected
