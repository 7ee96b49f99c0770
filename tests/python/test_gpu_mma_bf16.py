"""bfloat16 tensor cores: cuda.mma_bf16bf16f32 (mma.sync m16n8k16 with .bf16 operands, float32
accumulation, sm_80 or newer), its loads (element by element and with ldmatrix) and its plain-code
reference, in a hand-written schedule and in the tuner's tensor-core sketch.

The PTX ISA gives bfloat16 operands of m16n8k16 the layout of float16 ones, which test_gpu_mma.py
checks against its table; here each bfloat16 load is checked to put every element where its
float16 twin puts it. Without a GPU the tests prove what can be proved: schedules and sampled
candidates with the reference update compute the product on the interpreter (with GPU semantics
too) and on OpenCL against NumPy; the real ones compile with NVRTC for sm_80 and sm_90 with the
bfloat16 mma.sync (and ldmatrix) in their PTX and no spilled fragment; targets and operands the
intrinsics cannot take are refused. The real kernel runs against NumPy where a CUDA device is."""
import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.autotune import SpaceGenerator
from kiln.tir.tensor_intrin import cuda as mma

from gpu_helpers import first_candidates, nvrtc_missing, opencl_missing, skip_unless
from mma_helpers import (check_gemm_on, gemm_args, gemm_expected, gemm_fp16, numpy_dtype,
                         reference_twin, run_on_opencl, schedule_mma_gemm, sketch_intrinsics,
                         sm80_device)

ml_dtypes = pytest.importorskip("ml_dtypes")

SM80 = "cuda -arch=sm_80"
BF16_PTX = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
LOADS = [(mma.LOAD_16x16_BF16_A, mma.LOAD_16x16_F16_A),
         (mma.LOAD_16x16_BF16_B, mma.LOAD_16x16_F16_B),
         (mma.LOAD_16x16_BF16_B_TRANS, mma.LOAD_16x16_F16_B_TRANS)]
LDMATRIX = [mma.LDMATRIX_16x16_BF16_A, mma.LDMATRIX_16x16_BF16_B,
            mma.LDMATRIX_16x16_BF16_B_TRANS]
TENSOR_CORE = 1  # the tensor-core sketch's index: the block as it is comes first


def gemm_bf16(m, n, k, trans_b=True):
    return gemm_fp16(m, n, k, trans_b, dtype="bfloat16")


def test_the_family_is_registered_with_its_features():
    features = {name: tir.TensorIntrin.get(name).required_features
                for name in [n for pair in LOADS for n in pair[:1]] + LDMATRIX
                + [mma.MMA_BF16BF16F32, mma.MMA_BF16BF16F32_REFERENCE]}
    assert features[mma.MMA_BF16BF16F32] == ["sm_80"]
    assert all(features[name] == ["sm_75"] for name in LDMATRIX)
    assert all(features[name] == [] for name, _ in LOADS)
    assert features[mma.MMA_BF16BF16F32_REFERENCE] == []
    impl = tir.TensorIntrin.get(mma.MMA_BF16BF16F32).impl.script()
    assert impl.count(f'T.ptx_mma("{BF16_PTX[len("mma.sync.aligned."):]}"') == 2
    fragments = tir.TensorIntrin.get(mma.MMA_BF16BF16F32).desc.buffer_map.values()
    assert [b.dtype for b in fragments] == ["bfloat16", "bfloat16", "float32"]
    assert "ptx_mma" not in tir.TensorIntrin.get(mma.MMA_BF16BF16F32_REFERENCE).impl.script()


@pytest.mark.parametrize("bf16_name, f16_name", LOADS)
def test_bfloat16_loads_put_each_element_where_the_float16_loads_do(bf16_name, f16_name):
    # Values that both types hold exactly: the fragments must be the same numbers.
    tile = np.arange(256, dtype="float32").reshape(16, 16) / 4 - 32
    fragments = []
    for name, dtype in ((bf16_name, "bfloat16"), (f16_name, "float16")):
        fragment = np.zeros((32, 8), numpy_dtype(dtype))
        tir.interpret(tir.TensorIntrin.get(name).impl, tile.astype(numpy_dtype(dtype)), fragment)
        fragments.append(fragment.astype("float32"))
    np.testing.assert_array_equal(fragments[0], fragments[1])
    assert sorted(fragments[0].ravel()) == sorted(tile.ravel())


def test_get_mma_intrin_group_names_the_bfloat16_family():
    group = mma.get_mma_intrin_group(trans_b=False, ldmatrix=True, dtype="bfloat16")
    assert group == {"init": mma.MMA_FILL_16x16_F32, "load_a": mma.LDMATRIX_16x16_BF16_A,
                     "load_b": mma.LDMATRIX_16x16_BF16_B, "compute": mma.MMA_BF16BF16F32,
                     "store": mma.MMA_STORE_16x16_F32}
    assert mma.get_mma_intrin_group(reference=True, dtype="bfloat16")["compute"] == \
        mma.MMA_BF16BF16F32_REFERENCE
    assert mma.get_mma_intrin_group()["compute"] == mma.MMA_F16F16F32
    with pytest.raises(kiln.KilnValueError, match=r'dtype must be "float16", "bfloat16", '
                                                  r'"int8" or "uint8".*found \'float32\''):
        mma.get_mma_intrin_group(dtype="float32")
    with pytest.raises(kiln.KilnTypeError, match="dtype must be a str"):
        mma.get_mma_intrin_group(dtype=16)


# ---------------------------------------------------------------------------------------------
# A hand-written schedule

@pytest.mark.parametrize("m, n, k, trans_b, options", [
    (64, 128, 64, True, {}), (64, 128, 64, False, {}),
    (80, 48, 112, False, dict(block=(16, 48), warps=(1, 3), k_step=16))])
def test_reference_schedule_runs_on_the_interpreter(m, n, k, trans_b, options):
    func = gemm_bf16(m, n, k, trans_b)
    sch = schedule_mma_gemm(func, trans_b=trans_b, reference=True, **options)
    assert f'"kiln.tensor_intrin": "{mma.MMA_BF16BF16F32_REFERENCE}"' in sch.mod.script()
    a, b, c = gemm_args(func)
    tir.interpret(sch.mod["main"], a, b, c)
    np.testing.assert_allclose(c, gemm_expected(a, b, trans_b), rtol=1e-4, atol=1e-4)


def test_reference_schedule_runs_lowered_with_gpu_semantics():
    func = gemm_bf16(64, 64, 64)
    lowered = tir.lower(schedule_mma_gemm(func, reference=True).mod, target="opencl")
    a, b, c = gemm_args(func)
    tir.interpret(lowered, a, b, c)
    np.testing.assert_allclose(c, gemm_expected(a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("trans_b", [True, False])
def test_reference_schedule_runs_on_opencl(trans_b):
    skip_unless(opencl_missing())
    func = gemm_bf16(64, 192, 96, trans_b)
    run_on_opencl(schedule_mma_gemm(func, trans_b=trans_b, reference=True).mod, func, trans_b)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("trans_b", [True, False])
@pytest.mark.parametrize("ldmatrix", [False, True])
def test_cuda_compiles_with_the_bfloat16_mma_sync(ldmatrix, trans_b, arch):
    skip_unless(nvrtc_missing())
    sch = schedule_mma_gemm(gemm_bf16(128, 128, 128, trans_b), trans_b=trans_b,
                            ldmatrix=ldmatrix)
    rt = kiln.build(sch.mod, target=f"cuda -arch={arch}")
    source, ptx = rt.get_source("cuda"), rt.get_source("ptx")
    assert source.count(f'asm volatile("{BF16_PTX}') == 2
    # 2 x 2 fragments of the accumulator per warp and k step, two mma.sync each; no float16
    # instruction, nothing spilled.
    assert ptx.count(BF16_PTX) >= 8 and ".f16" not in ptx and ".local" not in ptx
    if ldmatrix:
        assert "ldmatrix.sync.aligned.m8n8.x4" in ptx and "ld.shared" not in ptx
        assert ("ldmatrix.sync.aligned.m8n8.x4.trans" in ptx) == (not trans_b)


def test_build_refuses_a_target_without_sm_80():
    sch = schedule_mma_gemm(gemm_bf16(64, 64, 64))
    with pytest.raises(kiln.KilnValueError,
                       match=r"cuda.mma_bf16bf16f32.*needs the target features sm_80"):
        kiln.build(sch.mod, target="cuda -arch=sm_75")


def test_tensorize_refuses_float16_fragments_with_the_bfloat16_update():
    # A float16 product's fragments are not what cuda.mma_bf16bf16f32 reads.
    sch = schedule_mma_gemm(gemm_fp16(64, 64, 64), tensorize=False)
    i3 = sch.get_loops("C")[-3]
    with pytest.raises(tir.schedule.TensorizeMismatchError,
                       match=r"'cuda.mma_bf16bf16f32'.*bfloat16.*float16"):
        sch.tensorize(i3, mma.MMA_BF16BF16F32)


def test_cuda_runs_like_numpy():
    device = sm80_device("bfloat16")
    for trans_b in (True, False):
        func = gemm_bf16(128, 192, 96, trans_b)
        rt = kiln.build(schedule_mma_gemm(func, trans_b=trans_b, ldmatrix=True).mod,
                        target="cuda")
        check_gemm_on(device, rt, func, trans_b, tolerance=1e-3)


# ---------------------------------------------------------------------------------------------
# The tuner's tensor-core sketch

def test_a_bfloat16_product_gets_a_tensor_core_sketch_with_the_bfloat16_family():
    for trans_b in (True, False):
        space = SpaceGenerator(gemm_bf16(128, 128, 128, trans_b), SM80)
        assert len(space.sketches) == 2
        load_b = mma.LDMATRIX_16x16_BF16_B_TRANS if trans_b else mma.LDMATRIX_16x16_BF16_B
        # No float16 intrinsic among them.
        assert sketch_intrinsics(space, TENSOR_CORE) == {
            mma.LDMATRIX_16x16_BF16_A, load_b, mma.MMA_BF16BF16F32, mma.MMA_FILL_16x16_F32,
            mma.MMA_STORE_16x16_F32}


def test_the_space_list_decides_which_element_types_get_tensor_cores():
    func = gemm_bf16(64, 64, 64)
    assert len(SpaceGenerator(func, SM80, tensor_intrinsics=[mma.MMA_F16F16F32]).sketches) == 1
    assert len(SpaceGenerator(func, SM80,
                              tensor_intrinsics=[mma.MMA_BF16BF16F32]).sketches) == 2
    assert len(SpaceGenerator(gemm_fp16(64, 64, 64), SM80,
                              tensor_intrinsics=[mma.MMA_BF16BF16F32]).sketches) == 1
    assert len(SpaceGenerator(func, "cuda -arch=sm_75").sketches) == 1


def test_mixed_operand_types_get_no_tensor_core_sketch():
    from kiln import te
    A = te.placeholder((64, 64), "float16", name="A")
    B = te.placeholder((64, 64), "bfloat16", name="B")
    r = te.reduce_axis((0, 64), name="k")
    C = te.compute((64, 64), lambda i, j: te.sum(
        A[i, r].astype("float32") * B[j, r].astype("float32"), axis=r), name="C")
    assert len(SpaceGenerator(te.create_prim_func([A, B, C]), SM80).sketches) == 1


@pytest.mark.parametrize("trans_b", [True, False])
def test_sampled_candidates_compute_the_product_with_the_reference_update(trans_b):
    func = gemm_bf16(64, 128, 64, trans_b)
    space = SpaceGenerator(func, SM80)
    for seed, candidate in enumerate(first_candidates(space, 3, sketch=TENSOR_CORE,
                                                      seeds=range(60))):
        a, b, c = gemm_args(func, seed)
        tir.interpret(reference_twin(candidate.trace, func)["main"], a, b, c)
        np.testing.assert_allclose(c, gemm_expected(a, b, trans_b), rtol=1e-4, atol=1e-4)


def test_a_candidate_with_the_reference_update_runs_on_opencl():
    skip_unless(opencl_missing())
    func = gemm_bf16(64, 128, 64)
    (candidate,) = first_candidates(SpaceGenerator(func, SM80), 1, sketch=TENSOR_CORE,
                                    seeds=range(60))
    run_on_opencl(reference_twin(candidate.trace, func), func)


def test_candidates_compile_with_the_bfloat16_mma_sync():
    skip_unless(nvrtc_missing())
    space = SpaceGenerator(gemm_bf16(256, 256, 256), SM80)
    for candidate in first_candidates(space, 2, sketch=TENSOR_CORE, seeds=range(60)):
        ptx = kiln.build(candidate.mod, target=SM80).get_source("ptx")
        assert BF16_PTX in ptx and "ldmatrix.sync.aligned.m8n8.x4" in ptx
        assert "ld.shared" not in ptx and ".local" not in ptx
