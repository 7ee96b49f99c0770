"""int8 tensor cores: cuda.mma_s8s8s32 and cuda.mma_u8s8s32 (mma.sync m16n8k32 with .s8 / .u8
times .s8 operands, int32 accumulation, sm_80 or newer) on 16x32 tiles of A and B, with their
loads (element by element and with ldmatrix) and plain-code references, in a hand-written
schedule and in the tuner's tensor-core sketch.

Without a GPU the tests prove what can be proved: the loads put each element where the PTX
ISA's table for m16n8k32 with 8-bit operands (encoded here on its own) gives it to each lane,
and ldmatrix's addresses, run through the ISA's definition of ldmatrix, fill the same
fragments; schedules and sampled candidates with the reference update compute the exact
product on the interpreter (with GPU semantics too); the real ones compile with NVRTC for sm_80
and sm_90 with the int8 mma.sync in their PTX and no spilled fragment; targets and operand
types the intrinsics cannot take are refused. The real kernel runs against NumPy where a CUDA
device is."""
import numpy as np
import pytest

import kiln
from kiln import te, tir
from kiln.autotune import SpaceGenerator
from kiln.tir.tensor_intrin import cuda as mma

from gpu_helpers import first_candidates, nvrtc_missing, opencl_missing, skip_unless
from mma_helpers import (accumulator_fragment, check_gemm_on, fragments_of, gemm_args,
                         gemm_expected, gemm_fp16, ldmatrix_addresses, reference_twin,
                         run_on_opencl, schedule_mma_gemm, sketch_intrinsics, sm80_device)

SM80 = "cuda -arch=sm_80"
PTX = {"int8": "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
       "uint8": "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32"}
MMA = {"int8": mma.MMA_S8S8S32, "uint8": mma.MMA_U8S8S32}
TENSOR_CORE = 1  # the tensor-core sketch's index: the block as it is comes first


def gemm_int8(m, n, k, trans_b=True, dtype="int8"):
    """C (int32) = A (dtype) times B (int8), B as [n, k] (trans_b) or [k, n]."""
    return gemm_fp16(m, n, k, trans_b, dtype=dtype, acc_dtype="int32", b_dtype="int8")


def ptx_fragment_8bit(operand, lane, i):
    """(row, col) of element i of lane `lane` in the m16n8k32 operand A (16x32) or B (32x8,
    K x N) with 8-bit elements, as the PTX ISA's "Matrix Fragments for mma.m16n8k32" gives
    them (four elements per .b32 register, the first in the low byte)."""
    group, thread = lane >> 2, lane % 4
    if operand == "A":
        row = group if (i < 4 or 8 <= i < 12) else group + 8
        return row, thread * 4 + (i & 3) + (16 if i >= 8 else 0)
    return thread * 4 + (i & 3) + (16 if i >= 4 else 0), group


def tile_of_fragment_8bit(fragment, operand):
    """The tile that a [32, 16] fragment of kiln's layout holds, read through the PTX registers:
    A's a0..a15 are elements 0..15; B (as [N, K], 16x32) is the B operands of two m16n8k32, its
    columns 0-7 of N in elements 0-3 and 8-11 (b0..b7), 8-15 in 4-7 and 12-15."""
    tile = np.zeros((16, 32), fragment.dtype)
    seen = np.zeros((16, 32), bool)
    for lane in range(32):
        if operand == "A":
            for i in range(16):
                tile[ptx_fragment_8bit("A", lane, i)] = fragment[lane, i]
                seen[ptx_fragment_8bit("A", lane, i)] = True
        else:
            for half, elements in ((0, (0, 1, 2, 3, 8, 9, 10, 11)),
                                   (1, (4, 5, 6, 7, 12, 13, 14, 15))):
                for i, e in enumerate(elements):
                    k, n = ptx_fragment_8bit("B", lane, i)
                    tile[n + 8 * half, k] = fragment[lane, e]
                    seen[n + 8 * half, k] = True
    assert seen.all()
    return tile


def test_the_families_are_registered_with_their_features():
    for name in (mma.MMA_S8S8S32, mma.MMA_U8S8S32):
        intrin = tir.TensorIntrin.get(name)
        assert intrin.required_features == ["sm_80"]
        assert [b.dtype for b in intrin.desc.buffer_map.values()] == \
            [("uint8" if "u8" in name else "int8"), "int8", "int32"]
        assert [[int(d) for d in b.shape] for b in intrin.desc.buffer_map.values()] == \
            [[32, 16], [32, 16], [32, 8]]
        assert "ptx_mma" not in tir.TensorIntrin.get(name + "_reference").impl.script()
    impl = tir.TensorIntrin.get(mma.MMA_U8S8S32).impl.script()
    assert impl.count('T.ptx_mma("m16n8k32.row.col.s32.u8.s8.s32"') == 2
    for name in (mma.LDMATRIX_16x32_S8_A, mma.LDMATRIX_16x32_U8_A, mma.LDMATRIX_16x32_S8_B_TRANS):
        assert tir.TensorIntrin.get(name).required_features == ["sm_75"]
    for name in (mma.LOAD_16x32_S8_A, mma.LOAD_32x16_S8_B, mma.MMA_FILL_16x16_S32,
                 mma.MMA_STORE_16x16_S32):
        assert tir.TensorIntrin.get(name).required_features == []
    # 8-bit elements have no ldmatrix .trans: B as [K, N] loads element by element.
    assert "cuda.mma_ldmatrix_32x16_s8_b" not in tir.TensorIntrin.names()


@pytest.mark.parametrize("name, operand, dtype", [
    (mma.LOAD_16x32_S8_A, "A", "int8"), (mma.LOAD_16x32_U8_A, "A", "uint8"),
    (mma.LOAD_16x32_S8_B_TRANS, "B", "int8")])
def test_loads_put_each_element_where_the_ptx_isa_says(name, operand, dtype):
    tile = (np.arange(512) % 251).astype(dtype).reshape(16, 32)
    fragment = np.zeros((32, 16), dtype)
    tir.interpret(tir.TensorIntrin.get(name).impl, tile, fragment)
    np.testing.assert_array_equal(tile_of_fragment_8bit(fragment, operand), tile)


def test_load_of_b_stored_as_k_by_n_transposes_it():
    tile = (np.arange(512) % 127).astype("int8").reshape(32, 16)  # B[k, n]
    fragment = np.zeros((32, 16), "int8")
    tir.interpret(tir.TensorIntrin.get(mma.LOAD_32x16_S8_B).impl, tile, fragment)
    np.testing.assert_array_equal(tile_of_fragment_8bit(fragment, "B"), tile.T)


def ldmatrix_ptx_8bit(addresses, memory):
    """What each lane receives from ldmatrix.sync.aligned.m8n8.x4.shared.b16 over bytes, as the
    PTX ISA defines it: lane 8 m + r gives the address of row r of 8x8 matrix m of 16-bit words
    (16 bytes); register m of lane t holds row t // 4, words 2 (t % 4) and 2 (t % 4) + 1 of
    matrix m: bytes 4 (t % 4) .. 4 (t % 4) + 3. Returns [32, 16] bytes, register m at 4 m."""
    out = np.zeros((32, 16), memory.dtype)
    for t in range(32):
        for m in range(4):
            r0, c0 = addresses[8 * m + t // 4]
            for byte in range(4):
                out[t, 4 * m + byte] = memory[r0, c0 + 4 * (t % 4) + byte]
    return out


@pytest.mark.parametrize("name, operand, dtype", [
    (mma.LDMATRIX_16x32_S8_A, "A", "int8"), (mma.LDMATRIX_16x32_U8_A, "A", "uint8"),
    (mma.LDMATRIX_16x32_S8_B_TRANS, "B", "int8")])
def test_ldmatrix_loads_put_each_element_where_the_ptx_isa_says(name, operand, dtype):
    tile = (np.arange(512) % 253).astype(dtype).reshape(16, 32)
    trans, addresses = ldmatrix_addresses(name)
    assert trans == 0 and all(col % 16 == 0 for _, col in addresses)
    fragment = ldmatrix_ptx_8bit(addresses, tile)
    np.testing.assert_array_equal(tile_of_fragment_8bit(fragment, operand), tile)
    plain = np.zeros((32, 16), dtype)
    tir.interpret(tir.TensorIntrin.get(name.replace("ldmatrix", "load")).impl, tile, plain)
    np.testing.assert_array_equal(fragment, plain)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_reference_multiplies_the_tiles_the_fragments_hold(dtype):
    rng = np.random.default_rng(0)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (16, 32), endpoint=True, dtype=dtype)
    b = rng.integers(-128, 127, (16, 32), endpoint=True, dtype="int8")  # B as [N, K]
    c = rng.integers(-1000, 1000, (16, 16), dtype="int32")
    load_a = mma.LOAD_16x32_U8_A if dtype == "uint8" else mma.LOAD_16x32_S8_A
    frags = fragments_of(((a, load_a), (b, mma.LOAD_16x32_S8_B_TRANS)), 16)
    acc = accumulator_fragment(c)
    tir.interpret(tir.TensorIntrin.get(MMA[dtype] + "_reference").impl, *frags, acc)
    expected = c + a.astype("int64") @ b.astype("int64").T
    tile = np.zeros((16, 16), "int32")
    tir.interpret(tir.TensorIntrin.get(mma.MMA_STORE_16x16_S32).impl, acc, tile)
    np.testing.assert_array_equal(tile, expected)


def test_the_python_layout_matches_the_intrinsics():
    places = {tuple(mma.fragment_layout(i, j, "int8")) for i in range(16) for j in range(32)}
    assert places == {(lane, e) for lane in range(32) for e in range(16)}
    assert mma.fragment_index_map_8bit(35, 70) == [2, 2] + mma.fragment_layout(3, 6, "int8")
    assert mma.fragment_index_map_trans_8bit(70, 35) == \
        [2, 2] + mma.fragment_layout(3, 6, "uint8")
    group = mma.get_mma_intrin_group(trans_b=False, ldmatrix=True, dtype="uint8")
    assert group == {"init": mma.MMA_FILL_16x16_S32, "load_a": mma.LDMATRIX_16x32_U8_A,
                     "load_b": mma.LOAD_32x16_S8_B, "compute": mma.MMA_U8S8S32,
                     "store": mma.MMA_STORE_16x16_S32}
    with pytest.raises(kiln.KilnValueError, match="fragment_layout: dtype must be one of"):
        mma.fragment_layout(0, 0, "int4")


# ---------------------------------------------------------------------------------------------
# A hand-written schedule

SHAPES = [(64, 128, 96, True, {}), (64, 128, 96, False, {}),
          (80, 48, 64, True, dict(block=(16, 48), warps=(1, 3)))]


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("m, n, k, trans_b, options", SHAPES)
def test_reference_schedule_computes_the_exact_product(m, n, k, trans_b, options, dtype):
    func = gemm_int8(m, n, k, trans_b, dtype)
    sch = schedule_mma_gemm(func, trans_b=trans_b, reference=True, **options)
    a, b, c = gemm_args(func)
    tir.interpret(sch.mod["main"], a, b, c)
    np.testing.assert_array_equal(c, gemm_expected(a, b, trans_b))


def test_reference_schedule_runs_lowered_with_gpu_semantics():
    func = gemm_int8(64, 64, 64, dtype="uint8")
    lowered = tir.lower(schedule_mma_gemm(func, reference=True).mod, target="opencl")
    a, b, c = gemm_args(func)
    tir.interpret(lowered, a, b, c)
    np.testing.assert_array_equal(c, gemm_expected(a, b))


def test_reference_schedule_runs_on_opencl():
    skip_unless(opencl_missing())
    func = gemm_int8(64, 128, 64, trans_b=False)
    run_on_opencl(schedule_mma_gemm(func, trans_b=False, reference=True).mod, func, trans_b=False)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype, trans_b, ldmatrix", [
    ("int8", True, True), ("uint8", True, False), ("int8", False, True)])
def test_cuda_compiles_with_the_int8_mma_sync(dtype, trans_b, ldmatrix, arch):
    skip_unless(nvrtc_missing())
    sch = schedule_mma_gemm(gemm_int8(128, 128, 128, trans_b, dtype), trans_b=trans_b,
                            ldmatrix=ldmatrix)
    rt = kiln.build(sch.mod, target=f"cuda -arch={arch}")
    source, ptx = rt.get_source("cuda"), rt.get_source("ptx")
    assert source.count(f'asm volatile("{PTX[dtype]}') == 2
    # 2 x 2 fragments of the accumulator per warp and k step of 32, two mma.sync each.
    assert ptx.count(PTX[dtype]) >= 8 and ".local" not in ptx
    if ldmatrix:
        # A (and B as [N, K]) by ldmatrix; B as [K, N] has no 8-bit .trans: element-wise loads.
        assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx and ".trans" not in ptx
        assert ("ld.shared" in ptx) == (not trans_b)


def test_build_refuses_a_target_without_sm_80():
    sch = schedule_mma_gemm(gemm_int8(64, 64, 64))
    with pytest.raises(kiln.KilnValueError,
                       match=r"cuda.mma_s8s8s32.*needs the target features sm_80"):
        kiln.build(sch.mod, target="cuda -arch=sm_75")


def test_cuda_runs_like_numpy():
    device = sm80_device("8-bit")
    for dtype, trans_b in (("int8", True), ("uint8", False)):
        func = gemm_int8(128, 192, 96, trans_b, dtype)
        rt = kiln.build(schedule_mma_gemm(func, trans_b=trans_b, ldmatrix=True).mod,
                        target="cuda")
        check_gemm_on(device, rt, func, trans_b)


# ---------------------------------------------------------------------------------------------
# The tuner's tensor-core sketch

@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_an_int8_product_gets_a_tensor_core_sketch_with_its_family(dtype):
    for trans_b in (True, False):
        space = SpaceGenerator(gemm_int8(128, 128, 128, trans_b, dtype), SM80)
        assert len(space.sketches) == 2
        load_a = mma.LDMATRIX_16x32_U8_A if dtype == "uint8" else mma.LDMATRIX_16x32_S8_A
        load_b = mma.LDMATRIX_16x32_S8_B_TRANS if trans_b else mma.LOAD_32x16_S8_B
        assert sketch_intrinsics(space, TENSOR_CORE) == {
            load_a, load_b, MMA[dtype], mma.MMA_FILL_16x16_S32, mma.MMA_STORE_16x16_S32}


@pytest.mark.parametrize("func, why", [
    (gemm_fp16(64, 64, 64, dtype="uint8", acc_dtype="int32"), "uint8 x uint8 has no family"),
    (gemm_int8(64, 64, 48), "a reduction of 48 is no whole tiles of 32"),
    (gemm_fp16(64, 64, 64, dtype="int8", acc_dtype="float32"), "a float32 accumulator"),
])
def test_no_tensor_core_sketch_where_the_families_do_not_fit(func, why):
    assert len(SpaceGenerator(func, SM80).sketches) == 1, why


def test_the_space_list_decides_which_families_are_tried():
    func = gemm_int8(64, 64, 64)
    assert len(SpaceGenerator(func, SM80, tensor_intrinsics=[mma.MMA_F16F16F32]).sketches) == 1
    assert len(SpaceGenerator(func, SM80, tensor_intrinsics=[mma.MMA_S8S8S32]).sketches) == 2


@pytest.mark.parametrize("dtype, trans_b", [("int8", True), ("uint8", False)])
def test_sampled_candidates_compute_the_exact_product(dtype, trans_b):
    func = gemm_int8(64, 128, 128, trans_b, dtype)
    space = SpaceGenerator(func, SM80)
    for seed, candidate in enumerate(first_candidates(space, 3, sketch=TENSOR_CORE,
                                                      seeds=range(100))):
        a, b, c = gemm_args(func, seed)
        tir.interpret(reference_twin(candidate.trace, func)["main"], a, b, c)
        np.testing.assert_array_equal(c, gemm_expected(a, b, trans_b))


def test_a_candidate_with_the_reference_update_runs_on_opencl():
    skip_unless(opencl_missing())
    func = gemm_int8(64, 128, 64)
    (candidate,) = first_candidates(SpaceGenerator(func, SM80), 1, sketch=TENSOR_CORE,
                                    seeds=range(100))
    run_on_opencl(reference_twin(candidate.trace, func), func)


def test_candidates_compile_with_the_int8_mma_sync():
    skip_unless(nvrtc_missing())
    space = SpaceGenerator(gemm_int8(256, 256, 256), SM80)
    for candidate in first_candidates(space, 2, sketch=TENSOR_CORE, seeds=range(100)):
        ptx = kiln.build(candidate.mod, target=SM80).get_source("ptx")
        assert PTX["int8"] in ptx and "ldmatrix.sync.aligned.m8n8.x4" in ptx
        assert "ld.shared" not in ptx and ".local" not in ptx


def test_an_int8_epilogue_is_fused_into_the_write_back():
    # Requantization: float32(C) * scale, rounded back to int8, one kernel.
    A = te.placeholder((64, 64), "int8", name="A")
    B = te.placeholder((64, 64), "int8", name="B")
    r = te.reduce_axis((0, 64), name="k")
    C = te.compute((64, 64), lambda i, j: te.sum(
        A[i, r].astype("int32") * B[j, r].astype("int32"), axis=r), name="C")
    D = te.compute((64, 64), lambda i, j: (C[i, j].astype("float32") * 0.01).astype("int8"),
                   name="D")
    func = te.create_prim_func([A, B, D])
    space = SpaceGenerator(func, SM80)
    (candidate,) = first_candidates(space, 1, sketch=TENSOR_CORE, seeds=range(100))
    twin = reference_twin(candidate.trace, func)
    lowered = tir.lower(twin, target="opencl")
    assert len([f for f in lowered.functions if "kernel" in f]) == 1
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 127, (64, 64), endpoint=True, dtype="int8")
    b = rng.integers(-128, 127, (64, 64), endpoint=True, dtype="int8")
    d = np.zeros((64, 64), "int8")
    tir.interpret(lowered, a, b, d)
    expected = np.zeros((64, 64), "int8")
    tir.interpret(func, a, b, expected)
    np.testing.assert_array_equal(d, expected)
