"""Tensor-core GEMMs: float16 (or bfloat16) workloads accumulated in float32, int8 (or uint8 x
int8) ones accumulated in int32, and their warp-tiled schedule tensorized with the cuda.mma_*
intrinsics (kiln.tir.tensor_intrin.cuda), with the real mma.sync or with its plain-code
reference."""
import json
import re

import numpy as np
import pytest

import kiln
from kiln import te, tir
from kiln.tir.tensor_intrin import cuda as mma

from gpu_helpers import nvrtc_missing, skip_unless


def gemm_fp16(m, n, k, trans_b=True, dtype="float16", acc_dtype="float32", b_dtype=None):
    """C (acc_dtype, m x n) = A (m x k, dtype) times B (b_dtype, else dtype), B stored as [n, k]
    (C = A B^T, as topi.nn.dense) when trans_b, else as [k, n]."""
    A = te.placeholder((m, k), dtype, name="A")
    B = te.placeholder((n, k) if trans_b else (k, n), b_dtype or dtype, name="B")
    r = te.reduce_axis((0, k), name="k")
    if trans_b:
        def product(i, j):
            return te.sum(A[i, r].astype(acc_dtype) * B[j, r].astype(acc_dtype), axis=r)
    else:
        def product(i, j):
            return te.sum(A[i, r].astype(acc_dtype) * B[r, j].astype(acc_dtype), axis=r)
    C = te.compute((m, n), product, name="C")
    return te.create_prim_func([A, B, C])


def schedule_mma_gemm(func, trans_b=True, reference=False, block=(64, 64), warps=(2, 2),
                      k_step=32, tensorize=True, ldmatrix=False, prefetch=0, copy_lanes=1):
    """The tensor-core schedule of a gemm_fp16 function: thread blocks of block[0] x block[1]
    outputs (blockIdx.x), warps[0] x warps[1] warps per block (threadIdx.y), each warp a tile of
    16x16 fragments of the accumulator in its registers; A and B staged through shared memory
    k_step columns at a time by all the block's threads, then loaded into fragments 16 columns
    at a time. Tensorized with mma.sync, or its plain-code reference when `reference`; with
    tensorize=False the schedule stops before tensorizing (the blocks the intrinsics match);
    with ldmatrix the fragments are loaded with ldmatrix.x4; a nonzero prefetch annotates the
    loop of the shared steps with kiln.prefetch_shared = prefetch (1: through registers, 2: two
    stages of the tiles, copied asynchronously on sm_80); each thread copies copy_lanes
    neighbouring elements of A and B into shared memory at a time (vectorized). The intrinsics
    are those of the operands' element type: those of bfloat16, int8 or uint8 (x int8) for
    them, else float16's (which refuse others); 8-bit tiles are 32 columns of k wide."""
    a_dtype = func.buffer_map[func.params[0]].dtype
    b_dtype = func.buffer_map[func.params[1]].dtype
    acc_dtype = func.buffer_map[func.params[2]].dtype
    group = a_dtype if a_dtype in ("bfloat16", "int8", "uint8") else "float16"
    intrins = mma.get_mma_intrin_group(trans_b=trans_b, reference=reference, ldmatrix=ldmatrix,
                                       dtype=group)
    kt = 32 if a_dtype in ("int8", "uint8") else 16  # the tiles' columns along k
    eight_bit = ("int8", "uint8")
    sch = tir.Schedule(func)
    C = sch.get_block("C")
    i, j, k = sch.get_loops(C)
    warp_m, warp_n = block[0] // warps[0], block[1] // warps[1]
    i0, i1, i2, i3 = sch.split(i, factors=[None, warps[0], warp_m // 16, 16])
    j0, j1, j2, j3 = sch.split(j, factors=[None, warps[1], warp_n // 16, 16])
    k0, k1, k2 = sch.split(k, factors=[None, max(1, k_step // kt), kt])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2, i3, j3, k2)
    sch.bind(sch.fuse(i0, j0), "blockIdx.x")
    warp = sch.fuse(i1, j1)
    sch.bind(warp, "threadIdx.y")
    if prefetch:
        sch.annotate(k0, "kiln.prefetch_shared", prefetch)
    # The accumulator in the warp's registers, stored into C after the k loop.
    C_warp = sch.cache_write(C, 0, "warp")
    sch.reverse_compute_at(C_warp, warp)
    # A and B through shared memory, one k step at a time, fetched by all the block's threads.
    for index in (0, 1):
        shared = sch.cache_read(C, index, "shared")
        sch.compute_at(shared, k0)
        fused = sch.fuse(*sch.get_loops(shared)[-2:])
        _, ty, tx, lanes = sch.split(fused, factors=[None, warps[0] * warps[1], 32, copy_lanes])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
        if copy_lanes > 1:
            sch.vectorize(lanes)
    # The fragments of A and B, 16 columns of k at a time; then the fragments' layout (after
    # the compute locations, which follow the loops through the buffers' logical indices).
    A_warp = sch.cache_read(C, 0, "warp")
    B_warp = sch.cache_read(C, 1, "warp")
    sch.compute_at(A_warp, k1)
    sch.compute_at(B_warp, k1)
    sch.transform_layout(A_warp, ("write", 0), mma.fragment_index_map_8bit
                         if a_dtype in eight_bit else mma.fragment_index_map)
    if b_dtype in eight_bit:
        b_map = mma.fragment_index_map_8bit if trans_b else mma.fragment_index_map_trans_8bit
    else:
        b_map = mma.fragment_index_map if trans_b else mma.fragment_index_map_trans
    sch.transform_layout(B_warp, ("write", 0), b_map)
    sch.transform_layout(C_warp, ("read", 0), mma.fragment_index_map)
    init = sch.decompose_reduction(C, k0)
    # The loops of 16x16 tiles that the intrinsics replace.
    a0, a1 = sch.get_loops(A_warp)[-2:]
    a_tile = sch.split(a0, factors=[None, 16])[1]
    b0, b1 = sch.get_loops(B_warp)[-2:]
    if trans_b:
        b_tile = sch.split(b0, factors=[None, 16])[1]
    else:
        b1o, _ = sch.split(b1, factors=[None, 16])
        sch.reorder(b1o, b0)
        b_tile = b0
    s0, s1 = sch.get_loops(C_warp)[-2:]
    s0o, s0i = sch.split(s0, factors=[None, 16])
    s1o, _ = sch.split(s1, factors=[None, 16])
    sch.reorder(s0o, s1o, s0i)
    init_tile = sch.get_loops(init)[-2]
    if tensorize:
        sch.tensorize(a_tile, intrins["load_a"])
        sch.tensorize(b_tile, intrins["load_b"])
        sch.tensorize(i3, intrins["compute"])
        sch.tensorize(init_tile, intrins["init"])
        sch.tensorize(s0i, intrins["store"])
    return sch


def numpy_dtype(dtype):
    """The NumPy dtype of a kiln dtype: bfloat16, which NumPy lacks, is ml_dtypes'."""
    if dtype == "bfloat16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return dtype


def gemm_args(func, seed=0):
    """Random inputs (16-bit floats in [-1, 1), bfloat16 as ml_dtypes; 8-bit integers over their
    whole range) and a C full of garbage, as NumPy arrays."""
    rng = np.random.default_rng(seed)
    args = []
    for param in func.params:
        buffer = func.buffer_map[param]
        shape = [int(d) for d in buffer.shape]
        if buffer.dtype == "float32":
            args.append(np.full(shape, np.nan, "float32"))
        elif buffer.dtype == "int32":
            args.append(np.full(shape, -123456789, "int32"))
        elif buffer.dtype in ("int8", "uint8"):
            info = np.iinfo(buffer.dtype)
            args.append(rng.integers(info.min, info.max, size=shape, endpoint=True,
                                     dtype=buffer.dtype))
        else:
            args.append(rng.uniform(-1, 1, size=shape).astype(numpy_dtype(buffer.dtype)))
    return args


def check_gemm_on(device, rt, func, trans_b=True, tolerance=1e-4):
    """Runs rt on device on gemm_args of func and checks the product against NumPy: exactly for
    integers, else within `tolerance`."""
    a, b, c = gemm_args(func)
    c_dev = kiln.nd.array(c, device=device)
    rt["main"](kiln.nd.array(a, device=device), kiln.nd.array(b, device=device), c_dev)
    expected = gemm_expected(a, b, trans_b)
    if expected.dtype.kind == "i":
        np.testing.assert_array_equal(c_dev.numpy(), expected)
    else:
        np.testing.assert_allclose(c_dev.numpy(), expected, rtol=tolerance, atol=tolerance)


def run_on_opencl(mod, func, trans_b=True):
    """Builds mod for OpenCL, runs it on the first OpenCL device on gemm_args of func and checks
    the product against NumPy."""
    check_gemm_on(kiln.opencl(0), kiln.build(mod, target="opencl"), func, trans_b)


def sm80_device(operands):
    """kiln.cuda(0) where NVRTC and a CUDA device of compute capability 8.0 or newer are; else
    the test skips, saying why (`operands`: what the kernel's mma.sync multiplies, for the
    message)."""
    skip_unless(nvrtc_missing())
    device = kiln.cuda(0)
    if not device.exist:
        pytest.skip("no CUDA device: the mma.sync kernel is compiled here but not run")
    if int(device.compute_version.split(".")[0]) < 8:
        pytest.skip(f"the CUDA device has compute capability {device.compute_version}; "
                    f"mma.sync with {operands} operands needs 8.0 or newer")
    return device


def gemm_expected(a, b, trans_b=True):
    """The product in float64 of 16-bit float inputs, as float32; of 8-bit integers, exact, as
    int32."""
    if a.dtype.kind in "iu":
        b = b.astype("int64")
        return (a.astype("int64") @ (b.T if trans_b else b)).astype("int32")
    b = b.astype("float64")
    return (a.astype("float64") @ (b.T if trans_b else b)).astype("float32")


def reference_twin(trace, func):
    """The module of `trace` (a tir.Trace) applied to func with every mma.sync update replaced by
    its plain-code reference (cuda.mma_f16f16f32 -> cuda.mma_f16f16f32_reference, the same for
    the other families) and every ldmatrix load by the element-wise one (the same descriptions),
    which the interpreter and any GPU target run."""
    text = json.dumps(trace.as_json())
    update = r'"cuda\.mma_(f16f16f32|bf16bf16f32|s8s8s32|u8s8s32)"'
    assert re.search(update, text), "no mma.sync update to replace"
    text = re.sub(update, r'"cuda.mma_\1_reference"', text)
    text = text.replace('"cuda.mma_ldmatrix_', '"cuda.mma_load_')
    sch = tir.Schedule(func)
    tir.Trace.apply_json_to_schedule(json.loads(text), sch)
    return sch.mod


def ptx_fragment(operand, lane, register):
    """(row, col) of element `register` of lane `lane` in the m16n8k16 float16 operand A (16x16),
    B (16x8, K x N) or C (16x8, float32), as the PTX ISA's "Matrix Fragments for mma.m16n8k16
    with floating point type" gives them."""
    group, thread = lane >> 2, lane % 4
    i = register
    if operand == "A":
        row = group if (i < 2 or 4 <= i < 6) else group + 8
        col = thread * 2 + (i & 1) + (8 if i >= 4 else 0)
        return row, col
    if operand == "B":
        return thread * 2 + (i & 1) + (8 if i >= 2 else 0), group
    return (group if i < 2 else group + 8), thread * 2 + (i & 1)


def fragments_of(tiles, columns):
    """The warp fragments, [32 lanes, columns], that the load intrinsics of (tile, intrinsic
    name) pairs fill from the tiles: 8 columns for 16x16 tiles of 16 bits, 16 for 16x32 tiles
    of 8 bits."""
    frags = []
    for tile, name in tiles:
        fragment = np.zeros((32, columns), tile.dtype)
        tir.interpret(tir.TensorIntrin.get(name).impl, tile, fragment)
        frags.append(fragment)
    return frags


def accumulator_fragment(c):
    """The [32, 8] accumulator fragment of the 16x16 tile c (two m16n8 halves side by side),
    element by element from the PTX ISA's C layout (ptx_fragment)."""
    acc = np.zeros((32, 8), c.dtype)
    for lane in range(32):
        for e in range(8):
            half, r = divmod(e, 4)
            row, col = ptx_fragment("C", lane, r)
            acc[lane, e] = c[row, col + 8 * half]
    return acc


def ldmatrix_addresses(name):
    """(trans, [(row, col)] of each lane): the ptx_ldmatrix call of an ldmatrix intrinsic's
    implementation, its address evaluated at each lane."""
    lane_loop = tir.TensorIntrin.get(name).impl.body.block.body
    store = lane_loop.body
    trans, row_load = store.value.args
    row, ramp = row_load.indices
    addresses = []
    for lane in range(32):
        analyzer = kiln.arith.Analyzer()
        analyzer.bind(lane_loop.loop_var, lane)
        addresses.append((int(analyzer.simplify(row)), int(analyzer.simplify(ramp.base))))
    return int(trans), addresses


def sketch_intrinsics(space, sketch=1):
    """The tensor intrinsics a sketch of a SpaceGenerator tensorizes with (the tensor-core
    sketch is the second), as a set."""
    return set(re.findall(r'tensor_intrin="([^"]+)"', str(space.sketches[sketch])))
