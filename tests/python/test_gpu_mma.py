"""Tensor cores on the CUDA target: the cuda.mma_* intrinsics (mma.sync m16n8k16, float16
operands, float32 accumulation) and a warp-tiled GEMM tensorized with them.

Without a GPU the tests prove what can be proved: the fragment layout of every load, fill and
store against the PTX ISA's table of which elements each lane holds; the same GEMM schedule
tensorized with cuda.mma_f16f16f32_reference (the multiply-accumulate in plain per-lane code,
over the same fragments) on the interpreter and on OpenCL (PoCL) against NumPy; the real
schedule compiled by NVRTC for sm_80 and sm_90, with mma.sync in its PTX; and the refusals of
targets and blocks that cannot take the intrinsics. The real kernel runs against NumPy where a
CUDA device is present."""
import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.tir.tensor_intrin import cuda as mma

from gpu_helpers import nvrtc_missing, opencl_missing, skip_unless
from mma_helpers import (accumulator_fragment, check_gemm_on, fragments_of, gemm_args,
                         gemm_expected, gemm_fp16, ldmatrix_addresses, ptx_fragment,
                         reference_twin, run_on_opencl, schedule_mma_gemm, sm80_device)
from schedule_helpers import assert_trace_roundtrip

MMA_PTX = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
FAMILY = [mma.LOAD_16x16_F16_A, mma.LOAD_16x16_F16_B, mma.LOAD_16x16_F16_B_TRANS,
          mma.MMA_F16F16F32, mma.MMA_F16F16F32_REFERENCE, mma.MMA_FILL_16x16_F32,
          mma.MMA_STORE_16x16_F32]
LDMATRIX = [mma.LDMATRIX_16x16_F16_A, mma.LDMATRIX_16x16_F16_B, mma.LDMATRIX_16x16_F16_B_TRANS]

# (m, n, k, trans_b, schedule options): square; a rectangle whose sides are different multiples
# of the tiles; and sides that are multiples of 16 but not of 64, with smaller thread blocks.
SHAPES = [(128, 128, 128, True, {}), (128, 128, 128, False, {}), (64, 192, 96, True, {}),
          (64, 192, 96, False, {}),
          (80, 48, 112, True, dict(block=(16, 48), warps=(1, 3), k_step=16)),
          (80, 48, 112, False, dict(block=(16, 48), warps=(1, 3), k_step=16))]


def tile_of_fragment(fragment, operand):
    """The 16x16 tile that a [32, 8] fragment of kiln's layout holds, read through the PTX
    registers: A's a0..a7 are elements 0..7; B (as [N, K]) is two m16n8k16 operands, its
    columns 0-7 of N in elements 0, 1, 4, 5 (b0..b3) and 8-15 in 2, 3, 6, 7; the accumulator's
    columns 0-7 in elements 0..3 (c0..c3) and 8-15 in 4..7."""
    tile = np.full((16, 16), np.nan, fragment.dtype)
    for lane in range(32):
        if operand == "A":
            for r in range(8):
                tile[ptx_fragment("A", lane, r)] = fragment[lane, r]
        elif operand == "B":
            for half, elements in ((0, (0, 1, 4, 5)), (1, (2, 3, 6, 7))):
                for r, e in enumerate(elements):
                    k, n = ptx_fragment("B", lane, r)
                    tile[n + 8 * half, k] = fragment[lane, e]
        else:
            for half in (0, 1):
                for r in range(4):
                    row, col = ptx_fragment("C", lane, r)
                    tile[row, col + 8 * half] = fragment[lane, 4 * half + r]
    return tile


def test_the_family_is_registered_with_its_features():
    names = tir.TensorIntrin.names()
    for name in FAMILY:
        assert name in names
    assert tir.TensorIntrin.get(mma.MMA_F16F16F32).required_features == ["sm_80"]
    for name in LDMATRIX:
        assert tir.TensorIntrin.get(name).required_features == ["sm_75"]
    for name in set(FAMILY) - {mma.MMA_F16F16F32}:
        assert tir.TensorIntrin.get(name).required_features == [], name
    impl = tir.TensorIntrin.get(mma.MMA_F16F16F32).impl.script()
    assert impl.count('T.ptx_mma("m16n8k16.row.col.f32.f16.f16.f32"') == 2
    assert 'T.thread_binding(32, thread="threadIdx.x")' in impl
    assert "ptx_mma" not in tir.TensorIntrin.get(mma.MMA_F16F16F32_REFERENCE).impl.script()
    fragment = tir.TensorIntrin.get(mma.MMA_F16F16F32).desc.buffer_map
    assert all((b.scope(), [int(d) for d in b.shape]) == ("warp", [32, 8])
               for b in fragment.values())


@pytest.mark.parametrize("name, operand", [(mma.LOAD_16x16_F16_A, "A"),
                                           (mma.LOAD_16x16_F16_B_TRANS, "B")])
def test_loads_put_each_element_where_the_ptx_isa_says(name, operand):
    # The implementation runs on the interpreter (its lanes one after the other).
    tile = np.arange(256, dtype="float16").reshape(16, 16)
    fragment = np.zeros((32, 8), "float16")
    tir.interpret(tir.TensorIntrin.get(name).impl, tile, fragment)
    np.testing.assert_array_equal(tile_of_fragment(fragment, operand), tile)


def ldmatrix_ptx(trans, addresses, memory):
    """What each lane receives from ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16, as the PTX
    ISA defines it: lane 8 m + r gives the address of row r of 8x8 matrix m (8 halves); register
    m of lane t holds row t // 4, columns 2 (t % 4) and 2 (t % 4) + 1 of matrix m, or of its
    transpose with .trans. Returns [32, 8] halves, register m's low half at 2 m."""
    out = np.zeros((32, 8), memory.dtype)
    for t in range(32):
        for m in range(4):
            for half in range(2):
                row, col = t // 4, 2 * (t % 4) + half
                if trans:
                    row, col = col, row
                r0, c0 = addresses[8 * m + row]
                out[t, 2 * m + half] = memory[r0, c0 + col]
    return out


@pytest.mark.parametrize("name, operand, transposed", [
    (mma.LDMATRIX_16x16_F16_A, "A", False), (mma.LDMATRIX_16x16_F16_B_TRANS, "B", False),
    (mma.LDMATRIX_16x16_F16_B, "B", True)])
def test_ldmatrix_loads_put_each_element_where_the_ptx_isa_says(name, operand, transposed):
    # The implementation's addresses, run through the ISA's definition of ldmatrix, fill the
    # fragment as the plain load does, and as the mma's operands need (16-byte aligned rows).
    tile = np.arange(256, dtype="float16").reshape(16, 16)
    trans, addresses = ldmatrix_addresses(name)
    assert trans == int(transposed)
    assert all(col % 8 == 0 for _, col in addresses)
    fragment = ldmatrix_ptx(trans, addresses, tile)
    expected = tile.T if transposed else tile
    np.testing.assert_array_equal(tile_of_fragment(fragment, operand), expected)
    plain = np.zeros((32, 8), "float16")
    plain_name = name.replace("ldmatrix", "load")
    tir.interpret(tir.TensorIntrin.get(plain_name).impl, tile, plain)
    np.testing.assert_array_equal(fragment, plain)


def test_ldmatrix_is_for_cuda_code_only():
    with pytest.raises(kiln.KilnValueError, match=r"ptx_ldmatrix.*only CUDA code runs"):
        tir.interpret(tir.TensorIntrin.get(mma.LDMATRIX_16x16_F16_A).impl,
                      np.zeros((16, 16), "float16"), np.zeros((32, 8), "float16"))


def test_load_of_b_stored_as_k_by_n_transposes_it():
    tile = np.arange(256, dtype="float16").reshape(16, 16)  # B[k, n]
    fragment = np.zeros((32, 8), "float16")
    tir.interpret(tir.TensorIntrin.get(mma.LOAD_16x16_F16_B).impl, tile, fragment)
    np.testing.assert_array_equal(tile_of_fragment(fragment, "B"), tile.T)


def test_store_reads_each_element_where_the_ptx_isa_puts_it():
    fragment = np.arange(256, dtype="float32").reshape(32, 8)
    tile = np.zeros((16, 16), "float32")
    tir.interpret(tir.TensorIntrin.get(mma.MMA_STORE_16x16_F32).impl, fragment, tile)
    np.testing.assert_array_equal(tile, tile_of_fragment(fragment, "C"))


def test_fill_zeroes_every_element():
    fragment = np.full((32, 8), np.nan, "float32")
    tir.interpret(tir.TensorIntrin.get(mma.MMA_FILL_16x16_F32).impl, fragment)
    np.testing.assert_array_equal(fragment, np.zeros((32, 8), "float32"))


def test_reference_multiplies_the_tiles_the_fragments_hold():
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (16, 16)).astype("float16")
    b = rng.uniform(-1, 1, (16, 16)).astype("float16")  # B as [N, K]
    c = rng.uniform(-1, 1, (16, 16)).astype("float32")
    frags = fragments_of(((a, mma.LOAD_16x16_F16_A), (b, mma.LOAD_16x16_F16_B_TRANS)), 8)
    acc = accumulator_fragment(c)
    tir.interpret(tir.TensorIntrin.get(mma.MMA_F16F16F32_REFERENCE).impl, *frags, acc)
    expected = c.astype("float64") + a.astype("float64") @ b.astype("float64").T
    np.testing.assert_allclose(tile_of_fragment(acc, "C"), expected, rtol=1e-5, atol=1e-5)


def test_targets_have_the_architecture_levels_of_their_arch():
    assert kiln.target.Target("cuda -arch=sm_90").intrinsic_features[-3:] == ["sm_87", "sm_89",
                                                                              "sm_90"]
    assert "sm_80" not in kiln.target.Target("cuda -arch=sm_75").intrinsic_features
    assert kiln.target.Target("opencl").intrinsic_features == []


def test_fragment_layout_is_a_bijection_onto_lanes_and_elements():
    places = {tuple(mma.fragment_layout(i, j)) for i in range(16) for j in range(16)}
    assert places == {(lane, e) for lane in range(32) for e in range(8)}
    assert mma.fragment_index_map(35, 18) == [2, 1] + mma.fragment_layout(3, 2)
    assert mma.fragment_index_map_trans(18, 35) == [1, 2] + mma.fragment_layout(3, 2)
    with pytest.raises(kiln.KilnTypeError, match="trans_b must be a bool"):
        mma.get_mma_intrin_group(trans_b="yes")


# ---------------------------------------------------------------------------------------------
# The GEMM schedule

def test_schedule_tensorizes_every_stage():
    sch = schedule_mma_gemm(gemm_fp16(128, 128, 128))
    text = sch.mod["main"].script()
    for name in (mma.LOAD_16x16_F16_A, mma.LOAD_16x16_F16_B_TRANS, mma.MMA_F16F16F32,
                 mma.MMA_FILL_16x16_F32, mma.MMA_STORE_16x16_F32):
        assert f'"kiln.tensor_intrin": "{name}"' in text, name
    assert 'scope="warp"' in text


@pytest.mark.parametrize("m, n, k, trans_b, options", SHAPES)
def test_reference_schedule_runs_on_the_interpreter(m, n, k, trans_b, options):
    func = gemm_fp16(m, n, k, trans_b)
    sch = schedule_mma_gemm(func, trans_b=trans_b, reference=True, **options)
    a, b, c = gemm_args(func)
    tir.interpret(sch.mod["main"], a, b, c)
    np.testing.assert_allclose(c, gemm_expected(a, b, trans_b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("options", [dict(block=(32, 64), warps=(1, 2)), {}])
def test_reference_schedule_runs_lowered_with_gpu_semantics(options):
    # The lowered kernels, threads in lock step from barrier to barrier: fragments of the
    # accumulator in registers, those of A and B (read across lanes) in shared memory, a copy
    # per warp (with 2 x 2 warps, two warps load each fragment of A and of B).
    func = gemm_fp16(64, 64, 64)
    sch = schedule_mma_gemm(func, reference=True, **options)
    lowered = tir.lower(sch.mod, target="opencl")
    text = lowered.script()
    assert 'scope="local"' in text and "storage_sync" in text
    a, b, c = gemm_args(func)
    tir.interpret(lowered, a, b, c)
    np.testing.assert_allclose(c, gemm_expected(a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m, n, k, trans_b, options", SHAPES)
def test_reference_schedule_runs_on_opencl(m, n, k, trans_b, options):
    skip_unless(opencl_missing())
    func = gemm_fp16(m, n, k, trans_b)
    sch = schedule_mma_gemm(func, trans_b=trans_b, reference=True, **options)
    run_on_opencl(sch.mod, func, trans_b)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("m, n, k, trans_b, options", SHAPES)
def test_cuda_compiles_with_mma_sync(m, n, k, trans_b, options, arch):
    skip_unless(nvrtc_missing())
    sch = schedule_mma_gemm(gemm_fp16(m, n, k, trans_b), trans_b=trans_b, **options)
    rt = kiln.build(sch.mod, target=f"cuda -arch={arch}")
    source = rt.get_source("cuda")
    # Per warp and k step of 16: 2 x 2 fragments of the accumulator, two mma.sync each.
    assert source.count(f'asm volatile("{MMA_PTX}') == 2
    assert "__shared__" in source and "__syncthreads();" in source
    ptx = rt.get_source("ptx")
    assert f".target {arch}" in ptx
    # NVVM unrolls the loop over the warp's fragments of the accumulator, two mma.sync each.
    block, warps = options.get("block", (64, 64)), options.get("warps", (2, 2))
    fragments = (block[0] // warps[0] // 16) * (block[1] // warps[1] // 16)
    assert ptx.count(MMA_PTX) >= 2 * fragments
    # The fragments are registers: nothing is spilled to local memory.
    assert ".local" not in ptx


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("trans_b", [True, False])
def test_cuda_loads_fragments_with_ldmatrix(trans_b, arch):
    skip_unless(nvrtc_missing())
    sch = schedule_mma_gemm(gemm_fp16(128, 128, 128, trans_b), trans_b=trans_b, ldmatrix=True)
    rt = kiln.build(sch.mod, target=f"cuda -arch={arch}")
    ptx = rt.get_source("ptx")
    # Per warp and k step of 16: 2 fragments of A and 2 of B, one ldmatrix.x4 each; B as
    # [K, N] with .trans. No element-wise shared loads are left, nothing spills.
    plain = ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16")
    trans = ptx.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16")
    assert (plain, trans) == ((8, 0) if trans_b else (4, 4))
    assert "ld.shared" not in ptx and ".local" not in ptx
    assert ptx.count(MMA_PTX) >= 8


@pytest.mark.parametrize("trans_b", [True, False])
def test_an_ldmatrix_schedule_computes_the_product_with_the_plain_loads(trans_b):
    # Its trace with the loads element by element and the reference update: what the
    # interpreter runs (the intrinsics have the same descriptions).
    func = gemm_fp16(64, 64, 64, trans_b)
    sch = schedule_mma_gemm(func, trans_b=trans_b, ldmatrix=True)
    plain = reference_twin(sch.trace, func)
    assert "ldmatrix" in str(sch.trace) and "ldmatrix" not in plain.script()
    a, b, c = gemm_args(func)
    tir.interpret(plain["main"], a, b, c)
    np.testing.assert_allclose(c, gemm_expected(a, b, trans_b), rtol=1e-4, atol=1e-4)


def test_build_refuses_ldmatrix_before_sm_75():
    sch = schedule_mma_gemm(gemm_fp16(64, 64, 64), ldmatrix=True, reference=True)
    with pytest.raises(kiln.KilnValueError,
                       match=r"cuda.mma_ldmatrix_16x16_f16_a.*needs the target features sm_75"):
        kiln.build(sch.mod, target="cuda -arch=sm_70")


def test_cuda_fragments_are_registers():
    skip_unless(nvrtc_missing())
    sch = schedule_mma_gemm(gemm_fp16(128, 128, 128))
    source = kiln.build(sch.mod, target="cuda -arch=sm_80").get_source("cuda")
    # Each thread holds its lane's elements: 2 x 8 halves of A and of B per k step, 2 x 2 x 8
    # floats of the accumulator; no fragment lives in shared memory.
    assert "unsigned short A_shared_warp[16];" in source
    assert "unsigned short B_shared_warp[16];" in source
    assert "float C_warp[32];" in source
    assert "__shared__ __align__(16) unsigned short A_shared[" in source
    assert "__shared__ unsigned short A_shared_warp" not in source


@pytest.mark.parametrize("ldmatrix", [False, True])
@pytest.mark.parametrize("m, n, k, trans_b, options", SHAPES)
def test_cuda_runs_like_numpy(m, n, k, trans_b, options, ldmatrix):
    device = sm80_device("float16")
    func = gemm_fp16(m, n, k, trans_b)
    sch = schedule_mma_gemm(func, trans_b=trans_b, ldmatrix=ldmatrix, **options)
    # Tensor cores accumulate in float32 in their own order.
    check_gemm_on(device, kiln.build(sch.mod, target="cuda"), func, trans_b, tolerance=1e-3)


# ---------------------------------------------------------------------------------------------
# Errors

@pytest.mark.parametrize("target, has", [
    ("cuda -arch=sm_75", r"its features: sm_50, sm_52, sm_53, sm_60, sm_61, sm_62, sm_70, sm_72, "
                         r"sm_75"),
    ("cuda -arch=sm_70", r"its features: sm_50, sm_52, sm_53, sm_60, sm_61, sm_62, sm_70"),
    ("opencl", r"it has no such features"),
    ("llvm", r"its features: [^)]*")])
def test_build_refuses_a_target_without_sm_80(target, has):
    sch = schedule_mma_gemm(gemm_fp16(128, 128, 128))
    with pytest.raises(kiln.KilnValueError,
                       match=rf"build: function main uses the tensor intrinsic "
                             rf"'cuda.mma_f16f16f32' \(block 'C_o'\), which needs the target "
                             rf"features sm_80; the target '{target.split()[0]}[^']*' lacks sm_80 "
                             rf"\({has}\)\. Build for a target that has them"):
        kiln.build(sch.mod, target=target)


def test_tensorize_with_a_target_refuses_sm_75():
    sch = schedule_mma_gemm(gemm_fp16(128, 128, 128), tensorize=False)
    i3 = sch.get_loops("C")[-3]
    mod, length = sch.mod, len(sch.trace)
    with pytest.raises(tir.schedule.TensorizeTargetError,
                       match=r"tensorize: intrinsic 'cuda.mma_f16f16f32' needs the target "
                             r"features sm_80; the target 'cuda -arch=sm_75 .*' lacks sm_80 "
                             r"\(its features: sm_50, sm_52, sm_53, sm_60, sm_61, sm_62, sm_70, "
                             r"sm_72, sm_75\)"):
        sch.tensorize(i3, mma.MMA_F16F16F32, target="cuda -arch=sm_75")
    kiln.ir.assert_structural_equal(sch.mod, mod)
    assert len(sch.trace) == length
    sch.tensorize(i3, mma.MMA_F16F16F32, target="cuda -arch=sm_90")


def test_tensorize_refuses_float32_operands():
    sch = schedule_mma_gemm(gemm_fp16(128, 128, 128, dtype="float32"), tensorize=False)
    i3 = sch.get_loops("C")[-3]
    with pytest.raises(tir.schedule.TensorizeMismatchError,
                       match=r"block 'C_o' does not match the description of intrinsic "
                             r"'cuda.mma_f16f16f32': the description computes `T.Cast\(\"float32\", "
                             r"A\[.*\]\)` where the block computes `A_shared_warp\[.*\]`"):
        sch.tensorize(i3, mma.MMA_F16F16F32)


def test_tensorize_refuses_a_float16_accumulator():
    sch = schedule_mma_gemm(gemm_fp16(128, 128, 128, acc_dtype="float16"), tensorize=False)
    i3 = sch.get_loops("C")[-3]
    with pytest.raises(tir.schedule.TensorizeMismatchError,
                       match=r"the description stores to C\[.*\] with dtype float32; the block "
                             r"stores to C_warp\[.*\] with dtype float16"):
        sch.tensorize(i3, mma.MMA_F16F16F32)


def test_tensorize_refuses_a_tile_of_another_shape():
    sch = schedule_mma_gemm(gemm_fp16(128, 128, 128), tensorize=False)
    j3 = sch.get_loops("C")[-2]  # the loops j, k of a tile, where the description has i, j, k
    with pytest.raises(tir.schedule.TensorizeMismatchError,
                       match=r"the description has a For where the block has a BlockRealize:\n"
                             r"  description: for k in range\(16\):\n"
                             r"  block:       with T.block\(\"C\"\):"):
        sch.tensorize(j3, mma.MMA_F16F16F32)


def test_fragments_need_whole_16x16_tiles():
    # 100 rows are not whole tiles: the fragment layout refuses the accumulator.
    sch = tir.Schedule(gemm_fp16(100, 128, 128))
    C_warp = sch.cache_write("C", 0, "warp")
    with pytest.raises(tir.schedule.NonBijectiveIndexMapError,
                       match=r"transform_layout: index map .* is not a bijection over the shape "
                             r"\(100, 128\) of buffer C_warp:\n  index 2 .*: in i % 8: the "
                             r"extent 100 of i is not divisible by 8"):
        sch.transform_layout(C_warp, ("read", 0), mma.fragment_index_map)


def test_schedule_trace_replays():
    func = gemm_fp16(64, 64, 64, trans_b=False)
    sch = schedule_mma_gemm(func, trans_b=False)
    assert_trace_roundtrip(sch, func)
