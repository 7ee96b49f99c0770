"""The tuner's tensor-core sketch (multi_level_tiling_tensor_core): a float16 matrix product
accumulated in float32 on a CUDA target of sm_80 or newer gets a sketch tensorized with the
cuda.mma_* intrinsics (fragments loaded with ldmatrix) beside the CUDA-core one. Without a GPU
the tests prove what can be proved: every sampled or mutated candidate, its mma.sync replaced by
cuda.mma_f16f16f32_reference and its ldmatrix loads by the element-wise ones in its trace,
computes the product on the interpreter (and on OpenCL where there is a device); the candidates
themselves compile with NVRTC for sm_80 and sm_90 with ldmatrix and mma.sync in their PTX and
no spilled fragment; their draws keep the thread limit with the warps' 32 lanes counted; a batch
of products shares blockIdx.x with the tiles; targets, layouts and shapes the intrinsics cannot
take get no such sketch; and the cost model counts the tensor cores' operations."""
import json

import numpy as np
import pytest

import kiln
from kiln import autotune, te, tir
from kiln.autotune import SpaceGenerator
from kiln.tir.tensor_intrin import cuda as mma

from gpu_helpers import (first_candidates, nvrtc_missing, opencl_missing, skip_unless,
                         with_sampled_annotation)
import mma_helpers
from mma_helpers import gemm_args, gemm_expected, gemm_fp16, run_on_opencl, sketch_intrinsics

SM80 = "cuda -arch=sm_80"
MMA_PTX = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
TENSOR_CORE = 1  # the sketch's index: the block as it is comes first


def candidates(space, count):
    """The first `count` candidates of the tensor-core sketch, seeds in order."""
    return first_candidates(space, count, sketch=TENSOR_CORE, seeds=range(60))


def reference_twin(candidate, func):
    """The candidate's schedule with mma.sync's update replaced by its plain-code reference and
    the ldmatrix loads by the element-wise ones (the same descriptions), which the interpreter
    and any GPU target run."""
    return mma_helpers.reference_twin(candidate.trace, func)


def decisions(candidate):
    return [i["decision"] for i in candidate.decisions.as_json()["instructions"]
            if i.get("decision") is not None]


def test_a_float16_product_gets_a_tensor_core_sketch_beside_the_cuda_core_one():
    for trans_b in (True, False):
        space = SpaceGenerator(gemm_fp16(128, 128, 128, trans_b), SM80)
        assert len(space.sketches) == 2
        text = str(space.sketches[TENSOR_CORE])
        load_b = mma.LDMATRIX_16x16_F16_B_TRANS if trans_b else mma.LDMATRIX_16x16_F16_B
        assert sketch_intrinsics(space, TENSOR_CORE) == {
            mma.LDMATRIX_16x16_F16_A, load_b, mma.MMA_F16F16F32, mma.MMA_FILL_16x16_F32,
            mma.MMA_STORE_16x16_F32}
        assert 'storage_scope="warp"' in text and 'thread_axis="threadIdx.y"' in text
        assert "mma" not in str(space.sketches[0])


@pytest.mark.parametrize("func, target, why", [
    (gemm_fp16(64, 64, 64), "cuda -arch=sm_75", "mma.sync m16n8k16 needs sm_80"),
    (gemm_fp16(64, 64, 64), "opencl", "no tensor intrinsics on OpenCL"),
    (gemm_fp16(64, 64, 64, dtype="float32"), SM80, "float32 operands"),
    (gemm_fp16(64, 64, 64, acc_dtype="float16"), SM80, "a float16 accumulator"),
    (gemm_fp16(64, 56, 64), SM80, "56 columns are no whole tiles"),
    (gemm_fp16(64, 64, 40), SM80, "a reduction of 40 is no whole steps"),
])
def test_no_tensor_core_sketch_where_the_intrinsics_do_not_fit(func, target, why):
    assert len(SpaceGenerator(func, target).sketches) == 1, why


def test_the_space_list_decides_whether_tensor_cores_are_tried():
    func = gemm_fp16(64, 64, 64)
    assert len(SpaceGenerator(func, SM80, tensor_intrinsics=[]).sketches) == 1
    assert len(SpaceGenerator(func, SM80, tensor_intrinsics=[mma.MMA_F16F16F32]).sketches) == 2


def batch_gemm_fp16(batch, m, n, k, trans_b=True, broadcast_b=False):
    """C[b] = A[b] @ B[b]^T (B as [batch, n, k]) or A[b] @ B[b] (as [batch, k, n]); with
    broadcast_b one B for the whole batch."""
    A = te.placeholder((batch, m, k), "float16", name="A")
    b_shape = (n, k) if trans_b else (k, n)
    B = te.placeholder(b_shape if broadcast_b else (batch,) + b_shape, "float16", name="B")
    r = te.reduce_axis((0, k), name="k")

    def b_at(b, j):
        at = (j, r) if trans_b else (r, j)
        return B[at] if broadcast_b else B[(b,) + at]
    C = te.compute((batch, m, n), lambda b, i, j: te.sum(
        A[b, i, r].astype("float32") * b_at(b, j).astype("float32"), axis=r), name="C")
    return te.create_prim_func([A, B, C])


@pytest.mark.parametrize("trans_b", [True, False])
def test_a_batch_of_products_shares_blockidx_with_the_tiles(trans_b):
    func = batch_gemm_fp16(3, 32, 48, 32, trans_b)
    space = SpaceGenerator(func, SM80)
    assert len(space.sketches) == 2
    for candidate in candidates(space, 2):
        a, b, c = gemm_args(func)
        tir.interpret(reference_twin(candidate, func)["main"], a, b, c)
        b64 = b.astype("float64")
        expected = a.astype("float64") @ (b64.transpose(0, 2, 1) if trans_b else b64)
        np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-4)


def test_a_batch_that_shares_one_operand_gets_no_tensor_core_sketch():
    assert len(SpaceGenerator(batch_gemm_fp16(2, 32, 32, 32, broadcast_b=True),
                              SM80).sketches) == 1


@pytest.mark.parametrize("trans_b", [True, False])
def test_sampled_candidates_compute_the_product_with_the_reference_update(trans_b):
    func = gemm_fp16(64, 128, 64, trans_b)
    space = SpaceGenerator(func, SM80)
    seen = set()
    for seed, candidate in enumerate(candidates(space, 4)):
        seen.add(json.dumps(decisions(candidate)))
        a, b, c = gemm_args(func, seed)
        tir.interpret(reference_twin(candidate, func)["main"], a, b, c)
        np.testing.assert_allclose(c, gemm_expected(a, b, trans_b), rtol=1e-4, atol=1e-4)
    assert len(seen) >= 3
    assert space.rejections == {} or all(k.startswith("sample:") for k in space.rejections)


def test_mutated_candidates_compute_the_product_with_the_reference_update():
    func = gemm_fp16(64, 64, 64)
    space = SpaceGenerator(func, SM80)
    (parent,) = candidates(space, 1)
    seen = {parent.hash}
    for seed in range(16):
        mutated = space.mutate(parent.decisions, seed=seed)
        child = space.replay(TENSOR_CORE, mutated) if mutated is not None else None
        if child is None or child.hash in seen or len(seen) >= 3:
            continue
        seen.add(child.hash)
        a, b, c = gemm_args(func, seed)
        tir.interpret(reference_twin(child, func)["main"], a, b, c)
        np.testing.assert_allclose(c, gemm_expected(a, b), rtol=1e-4, atol=1e-4)
    assert len(seen) >= 2


def test_a_candidate_with_the_reference_update_runs_on_opencl():
    skip_unless(opencl_missing())
    func = gemm_fp16(64, 128, 64, trans_b=False)
    (candidate,) = candidates(SpaceGenerator(func, SM80), 1)
    run_on_opencl(reference_twin(candidate, func), func, trans_b=False)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_candidates_compile_with_mma_sync_and_keep_their_fragments_in_registers(arch):
    skip_unless(nvrtc_missing())
    target = f"cuda -arch={arch}"
    space = SpaceGenerator(gemm_fp16(256, 256, 256), target)
    for candidate in candidates(space, 2):
        rt = kiln.build(candidate.mod, target=target)
        source, ptx = rt.get_source("cuda"), rt.get_source("ptx")
        assert f'asm volatile("{MMA_PTX}' in source and "__syncthreads();" in source
        assert MMA_PTX in ptx and "ldmatrix.sync.aligned.m8n8.x4" in ptx
        assert "ld.shared" not in ptx and ".local" not in ptx


def test_draws_count_the_warps_lanes_as_threads():
    """With at most 128 threads per block a tensor-core candidate has at most 4 warps (each
    of 32 lanes, which run inside the intrinsics); draws of more are counted and drawn again."""
    target = SM80 + " -max_threads_per_block=128"
    space = SpaceGenerator(gemm_fp16(256, 256, 64), target)
    for candidate in candidates(space, 4):
        lowered = tir.lower(candidate.mod, target=target)
        attrs = lowered["main_kernel0"].attrs
        assert int(attrs["kiln.launch.threadIdx.x"]) == 32
        assert 1 <= int(attrs["kiln.launch.threadIdx.y"]) <= 4
    assert space.rejections.get("sample: GpuThreadExtentError", 0) > 0


def test_the_cost_model_counts_the_tensor_cores_operations():
    """A tensor-core candidate does the 2 M N K operations of the product (a 32nd of each
    mma.sync's per lane), as many as a CUDA-core candidate (whose conversions do not count);
    its features count them as matrix operations, the CUDA-core one's not."""
    func = gemm_fp16(128, 128, 64)
    space = SpaceGenerator(func, SM80)
    names = autotune.feature_names()
    estimates, matrix = [], []
    for sketch in (0, TENSOR_CORE):
        candidate = next(c for c in (space.sample(sketch, seed=s) for s in range(40)) if c)
        lowered = tir.lower(candidate.mod["main"])
        estimates.append(autotune.estimate_prior(lowered, SM80))
        features = autotune.extract_features(lowered, SM80)
        matrix.append(features[names.index("arith.float_matrix")])
    cuda_core, tensor_core = estimates
    assert tensor_core.operations == cuda_core.operations == 2 * 128 * 128 * 64
    assert matrix[0] == 0 and matrix[1] > 0
    assert 0 < tensor_core.cycles < 1e9


def compact_twin(space, candidate, func):
    """The candidate with its shared copies' padding decisions at 0."""
    json_obj = with_sampled_annotation(candidate.decisions.as_json(), "kiln.pad_shared", 0)
    sch = tir.Schedule(func)
    tir.Trace.apply_json_to_schedule(json_obj, sch)
    return space.replay(TENSOR_CORE, sch.trace)


def test_padded_shared_tiles_serve_the_fragment_loads_with_fewer_conflicts():
    """Each shared copy samples a padding (pad_shared_tiles, by the bank model of the fragment
    loads' per-lane 16-byte rows): a padded candidate computes the product, keeps its ldmatrix
    loads and mma.sync, and has fewer modelled bank conflicts than its compact twin."""
    func = gemm_fp16(128, 128, 64)
    space = SpaceGenerator(func, SM80)
    names = autotune.feature_names()

    def conflicts(candidate):
        features = autotune.extract_features(tir.lower(candidate.mod["main"]), SM80)
        return features[names.index("gpu.shared_bank_conflicts")]
    padded = [c for c in candidates(space, 6) if "storage_align" in str(c.trace)]
    assert len(padded) >= 3
    for candidate in padded[:3]:
        compact = compact_twin(space, candidate, func)
        assert "storage_align" not in str(compact.trace)
        assert conflicts(candidate) < conflicts(compact)
    a, b, c = gemm_args(func)
    tir.interpret(reference_twin(padded[0], func)["main"], a, b, c)
    np.testing.assert_allclose(c, gemm_expected(a, b), rtol=1e-4, atol=1e-4)
    if not nvrtc_missing():
        ptx = kiln.build(padded[0].mod, target=SM80).get_source("ptx")
        assert MMA_PTX in ptx and "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx


def test_prefetched_stages_compute_the_product_with_gpu_semantics():
    """The sketch samples whether the next stage's tiles are loaded into registers during this
    one (kiln.prefetch_shared): the lowered kernels of candidates' reference twins (their
    fragments in shared memory, a copy per warp), run on the interpreter thread by thread
    between barriers, compute the product with and without it."""
    func = gemm_fp16(64, 64, 128)
    space = SpaceGenerator(func, SM80)
    kinds = set()
    for seed, candidate in enumerate(candidates(space, 6)):
        lowered = tir.lower(reference_twin(candidate, func), target="opencl")
        kinds.add("_prefetch" in lowered["main_kernel0"].script())
        a, b, c = gemm_args(func, seed)
        tir.interpret(lowered, a, b, c)
        np.testing.assert_allclose(c, gemm_expected(a, b), rtol=1e-4, atol=1e-4)
    assert kinds == {False, True}


@pytest.mark.parametrize("trans_b", [True, False])
def test_an_element_wise_epilogue_is_fused_into_the_write_back(trans_b):
    """relu(A @ B + bias): the fragments are stored into a shared tile of the block's outputs,
    which the block's threads copy to the output through the epilogue: one kernel, whose
    lowered reference twin computes the whole expression with GPU semantics."""
    m = n = k = 64
    A = te.placeholder((m, k), "float16", name="A")
    B = te.placeholder((n, k) if trans_b else (k, n), "float16", name="B")
    bias = te.placeholder((n,), "float32", name="bias")
    r = te.reduce_axis((0, k), name="k")

    def b_at(j):
        return B[j, r] if trans_b else B[r, j]
    C = te.compute((m, n), lambda i, j: te.sum(
        A[i, r].astype("float32") * b_at(j).astype("float32"), axis=r), name="C")
    D = te.compute((m, n), lambda i, j: te.max(C[i, j] + bias[j], 0.0), name="D")
    func = te.create_prim_func([A, B, bias, D])
    space = SpaceGenerator(func, SM80)
    assert len(space.sketches) == 2
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (m, k)).astype("float16")
    b = rng.uniform(-1, 1, (n, k) if trans_b else (k, n)).astype("float16")
    bias_np = rng.uniform(-1, 1, n).astype("float32")
    b64 = b.astype("float64")
    expected = np.maximum(a.astype("float64") @ (b64.T if trans_b else b64) + bias_np, 0)
    for candidate in candidates(space, 3):
        lowered = tir.lower(reference_twin(candidate, func), target="opencl")
        assert "main_kernel1" not in lowered.functions
        d = np.full((m, n), np.nan, "float32")
        tir.interpret(lowered, a, b, bias_np, d)
        np.testing.assert_allclose(d, expected, rtol=1e-4, atol=1e-4)
    if not nvrtc_missing():
        source = kiln.build(candidate.mod, target=SM80).get_source("cuda")
        assert source.count("__global__") == 1 and MMA_PTX in source


def test_draws_over_the_shared_memory_are_drawn_again():
    """The operands' shared tiles (and an epilogue's write-back tile) of a draw are counted
    before the candidate is finished: draws past -max_shared_memory_per_block are refused and
    drawn again, none reaches the verifier."""
    target = SM80 + " -max_shared_memory_per_block=16384"
    space = SpaceGenerator(gemm_fp16(1024, 1024, 1024), target)
    candidates(space, 8)
    assert space.rejections.get("sample: GpuSharedMemoryError", 0) > 0
    assert all(reason.startswith("sample:") for reason in space.rejections), space.rejections
