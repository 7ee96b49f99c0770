"""Vector code on the GPU targets: vectorized loops become vector memory accesses (CUDA's
float4 and friends, OpenCL's vloadn/vstoren and pointer casts) where the access is contiguous
and aligned, with the arithmetic lane by lane (CUDA) or on OpenCL's vector types; the PTX that
NVRTC makes for sm_80 shows the vector instructions. Accesses that cannot be one vector access
(misaligned, strided) and loop extents that are no lane count fall back with a warning that
says why, and still compute the right numbers on OpenCL (PoCL on the CPU). The vectorized
workloads of gpu_helpers also run through test_gpu_build.py and test_interpreter_gpu.py."""
import json
import warnings

import numpy as np
import pytest

import kiln
from kiln import te, tir

from gpu_helpers import (expected_results, gpu_vector_elementwise_fp16, gpu_vector_misaligned,
                         gpu_vector_tiled_matmul, nvrtc_missing, opencl_missing, run_on_device,
                         skip_unless)


def elementwise(fcompute, lanes, n=256, threads=32, length=None):
    """B[i] = fcompute(A, i) with A of `length` (default n) elements, the loop split into
    blocks, threads and a vectorized part of `lanes`."""
    A = te.placeholder((length or n,), "float32", name="A")
    B = te.compute((n,), lambda i: fcompute(A, i), name="B")
    func = te.create_prim_func([A, B])
    sch = tir.Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    bx, tx, vec = sch.split(i, factors=[None, threads, lanes])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    sch.vectorize(vec)
    return func, sch.mod


def build(mod, target):
    """kiln.build, returning the module and the messages of its warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rt = kiln.build(mod, target=target)
    return rt, [str(w.message) for w in caught]


def ptx_memory_instructions(rt):
    """The distinct load and store instructions of the module's PTX ("ld.global.nc.v4.f32")."""
    ops = set()
    for line in rt.get_source("ptx").splitlines():
        words = line.split()
        if words and words[0].startswith(("ld.global", "st.global", "ld.shared", "st.shared")):
            ops.add(words[0])
    return ops


def check_on_opencl(func, mod):
    rt, _ = build(mod, "opencl")
    args, expected = expected_results(func)
    for actual, want in zip(run_on_device(rt, args, kiln.opencl(0)), expected):
        np.testing.assert_allclose(np.asarray(actual, "float32"), np.asarray(want, "float32"),
                                   rtol=1e-5, atol=1e-5)
    return rt


def test_cuda_elementwise_loads_and_stores_float4():
    skip_unless(nvrtc_missing())
    _, mod = elementwise(lambda A, i: A[i] * 2.0 + 1.0, lanes=4)
    rt, messages = build(mod, "cuda -arch=sm_80")
    assert messages == []
    source = rt.get_source("cuda")
    assert "const float4 kiln_vec0 = *(const float4*)(A + " in source
    assert "*(float4*)(B + " in source and "make_float4(" in source
    assert ptx_memory_instructions(rt) == {"ld.global.nc.v4.f32", "st.global.v4.f32"}


def test_cuda_two_lanes_use_float2():
    skip_unless(nvrtc_missing())
    _, mod = elementwise(lambda A, i: A[i] + 1.0, lanes=2)
    rt, _ = build(mod, "cuda -arch=sm_80")
    assert ptx_memory_instructions(rt) == {"ld.global.nc.v2.f32", "st.global.v2.f32"}


def test_cuda_gemm_copies_to_shared_and_stores_its_register_tile_as_float4():
    skip_unless(nvrtc_missing())
    _, mod = gpu_vector_tiled_matmul()
    rt, messages = build(mod, "cuda -arch=sm_80")
    assert messages == []
    source = rt.get_source("cuda")
    assert "__shared__ __align__(16) float A_shared[" in source
    ops = ptx_memory_instructions(rt)
    # The copy moves 16 bytes at a time (as 32-bit words: it only copies bits).
    assert {"ld.global.nc.v4.u32", "st.shared.v4.u32", "st.global.v4.f32"} <= ops
    assert "= kiln_vec0;" in source
    # The register tile stays in registers: no local-memory instruction.
    assert "ld.local" not in rt.get_source("ptx") and "st.local" not in rt.get_source("ptx")


def test_opencl_gemm_uses_vector_loads_and_aligned_shared_stores():
    skip_unless(opencl_missing())
    func, mod = gpu_vector_tiled_matmul()
    rt = check_on_opencl(func, mod)
    source = rt.get_source("opencl")
    assert "__local float A_shared[128] __attribute__((aligned(16)));" in source
    assert "vload4(0, (A + " in source
    # Proven aligned in shared memory: a pointer cast, and the loaded vector stored whole.
    assert "*(__local float4*)(A_shared + " in source and "= kiln_vec0;" in source
    assert "vstore4(((float4)(C_local[" in source


def test_opencl_computes_on_vector_types():
    skip_unless(opencl_missing())
    func, mod = elementwise(lambda A, i: te.max(te.exp(A[i]) * 0.5, A[i] - 0.25), lanes=8)
    rt = check_on_opencl(func, mod)
    source = rt.get_source("opencl")
    assert "const float8 kiln_vec0 = vload8(0, (A + " in source
    assert "vstore8(fmax((exp(kiln_vec0) * ((float8)((0.5f)))), (kiln_vec0 - ((float8)((0.25f))))" \
        in source


def test_opencl_select_of_a_comparison_is_a_vector_select():
    skip_unless(opencl_missing())
    func, mod = elementwise(lambda A, i: te.if_then_else(A[i] > 0.5, A[i] * 2.0, A[i]), lanes=4)
    rt = check_on_opencl(func, mod)
    assert "select(kiln_vec0, (kiln_vec0 * ((float4)((2.0f)))), (kiln_vec0 > ((float4)((0.5f)))))" \
        in rt.get_source("opencl")


def test_misaligned_load_is_done_lane_by_lane_on_cuda_and_with_vload_on_opencl():
    func, mod = gpu_vector_misaligned()
    if not nvrtc_missing():
        rt, messages = build(mod, "cuda -arch=sm_80")
        assert messages == [
            "kernel main_kernel0: the vector load of A (2 lanes) is done lane by lane: its "
            "address is not provably a multiple of 8 bytes (the data is aligned to 16 bytes; the "
            "first index i_0 * 64 + i_1 * 2 + 1 is 2 * k + 1)"]
        assert ptx_memory_instructions(rt) == {"ld.global.nc.f32", "st.global.v2.f32"}
    skip_unless(opencl_missing())
    rt = check_on_opencl(func, mod)
    assert "vload2(0, (A + " in rt.get_source("opencl")


def test_strided_access_is_done_lane_by_lane_with_a_warning():
    skip_unless(opencl_missing())
    func, mod = elementwise(lambda A, i: A[i * 2] + 1.0, lanes=4, n=64, threads=16, length=128)
    rt, messages = build(mod, "opencl")
    assert messages == [
        "kernel main_kernel0: the vector load of A (4 lanes) is done lane by lane: its index "
        "T.Ramp(i_1 * 8, 2, 4) is not a ramp of stride 1"]
    check_on_opencl(func, mod)


@pytest.mark.parametrize("target", ["cuda", "opencl"])
def test_extent_that_is_no_lane_count_stays_a_loop(target):
    func, mod = elementwise(lambda A, i: A[i] * 3.0, lanes=3, n=96)
    if target == "cuda":
        skip_unless(nvrtc_missing())
        lanes = "2, 4"
    else:
        skip_unless(opencl_missing())
        lanes = "2, 4, 8, 16"
    rt, messages = build(mod, target)
    assert messages == [
        "function main: loop i_2 is not vectorized (it runs serially): its extent 3 is not a "
        f"lane count of the target's vector types ({lanes}); split the loop so that the "
        "vectorized part has one of them"]
    assert "#pragma unroll" in rt.get_source(target)
    if target == "opencl":
        check_on_opencl(func, mod)


def test_float16_vectors_are_loaded_as_their_bits():
    _, mod = gpu_vector_elementwise_fp16()
    if not nvrtc_missing():
        rt, messages = build(mod, "cuda -arch=sm_80")
        assert messages == []
        assert "const ushort4 kiln_vec0 = *(const ushort4*)(A + " in rt.get_source("cuda")
        assert "ld.global.nc.v4.u16" in ptx_memory_instructions(rt)
    skip_unless(opencl_missing())
    rt, _ = build(mod, "opencl")
    source = rt.get_source("opencl")
    assert "const ushort4 kiln_vec0 = vload4(0, (A + " in source
    assert "vstore4(((ushort4)(kiln_float_to_half(" in source


def test_cuda_tensors_are_required_to_be_16_byte_aligned():
    skip_unless(nvrtc_missing())
    _, mod = elementwise(lambda A, i: A[i] + 1.0, lanes=4)
    rt, _ = build(mod, "cuda")
    spec = json.loads(rt.manifest)["functions"][0]["args"]
    assert [arg["alignment"] for arg in spec] == [16, 16]
    rt, _ = build(mod, "opencl")
    spec = json.loads(rt.manifest)["functions"][0]["args"]
    assert [arg["alignment"] for arg in spec] == [1, 1]


def test_cuda_shared_tiles_are_16_byte_aligned_so_register_tile_reads_are_vectors():
    # The copies into shared memory move one element per thread; the register tile still reads
    # four consecutive elements of a B row at once, since every shared array is 16-byte aligned.
    skip_unless(nvrtc_missing())
    _, mod = gpu_vector_tiled_matmul(copy_lanes=1)
    sch = tir.Schedule(mod)
    for loop in sch.get_loops(sch.get_block("C"))[-2:]:  # the register tile's rows, columns
        sch.unroll(loop)
    rt, _ = build(sch.mod, "cuda -arch=sm_80")
    source = rt.get_source("cuda")
    assert "__shared__ __align__(16) float A_shared[" in source
    assert "__shared__ __align__(16) float B_shared[" in source
    ops = ptx_memory_instructions(rt)
    assert "st.shared.f32" in ops and "ld.shared.v4.f32" in ops
